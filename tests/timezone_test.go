package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// tzZones are the session zones of the differential test: DST in both
// hemispheres, half- and quarter-hour offsets, a 30-minute DST shift,
// negative offsets, numeric abbreviations, UTC, and the POSIX-style
// settings whose sign PostgreSQL inverts ('+05:30' is UTC-05:30,
// 'UTC+3' is UTC-3) next to a number (hours east: -7 is UTC-07).
var tzZones = []string{
	"'UTC'", "'Europe/Berlin'", "'America/New_York'", "'America/St_Johns'", "'Asia/Kolkata'",
	"'Australia/Lord_Howe'", "'Pacific/Chatham'", "'America/Sao_Paulo'", "'Asia/Kathmandu'",
	"'+05:30'", "'UTC+3'", "'-02'", "-7", "'europe/amsterdam'",
}

// tzInstants are timestamptz inputs with an explicit offset: the seconds
// around the DST changes of 2026 in Berlin (03-29 01:00 UTC, 10-25 01:00
// UTC) and New York (03-08 07:00 UTC, 11-01 06:00 UTC), Lord Howe, dates
// before the zones' first transitions (LMT) and far ahead, infinity.
var tzInstants = []string{
	"2026-03-29 00:59:59+00", "2026-03-29 01:00:00+00", "2026-03-29 01:30:00.25+00",
	"2026-10-25 00:30:00+00", "2026-10-25 01:30:00+00", "2026-10-24 23:00:00+00",
	"2026-03-08 06:59:59+00", "2026-03-08 07:00:00+00", "2026-11-01 05:30:00+00", "2026-11-01 06:30:00+00",
	"2026-04-04 15:00:00+00", "2026-10-03 15:30:00+00", "2026-12-31 23:30:00-05",
	"1890-06-01 12:00:00+00", "1950-07-15 08:00:00+00", "2061-01-01 00:00:00+00", "2026-02-28 23:00:00+00",
	"infinity", "-infinity",
}

// tzLocals are wall-clock inputs without an offset, read in the session
// zone: the gaps and overlaps of Berlin, New York and Lord Howe among them.
var tzLocals = []string{
	"2026-03-29 02:30:00", "2026-10-25 02:30:00", "2026-03-08 02:30:00", "2026-11-01 01:30:00",
	"2026-04-05 01:45:00", "2026-10-04 02:15:00", "2026-01-01 00:00:00", "2026-06-30 23:59:59.5",
	"1890-06-01 12:00:00",
}

// TestTimeZoneDifferential runs the same timestamptz expressions in Sluice
// and in the machine's PostgreSQL in each zone of tzZones and compares
// every result as text: output, casts to text/timestamp/date/time,
// date_trunc, extract, to_char, interval arithmetic across DST changes,
// AT TIME ZONE both ways, and text without an offset read in the zone.
func TestTimeZoneDifferential(t *testing.T) {
	EnsurePostgres(t)
	srv := StartServer(t, Options{})
	var inst, loc []string
	for i, s := range tzInstants {
		inst = append(inst, fmt.Sprintf("(%d, '%s'::timestamptz)", i, s))
	}
	for i, s := range tzLocals {
		loc = append(loc, fmt.Sprintf("(%d, '%s')", i, s))
	}
	ts := "(VALUES " + strings.Join(inst, ", ") + ") AS v(i, ts)"
	lt := "(VALUES " + strings.Join(loc, ", ") + ") AS v(i, lt)"
	queries := []string{
		"SELECT i, ts, ts::text, ts::timestamp, ts::date, ts::time FROM " + ts + " ORDER BY i",
		"SELECT i, date_trunc('hour', ts), date_trunc('day', ts), date_trunc('week', ts), date_trunc('month', ts), date_trunc('year', ts), date_trunc('minute', ts) FROM " + ts + " ORDER BY i",
		"SELECT i, extract(hour FROM ts), extract(day FROM ts), extract(dow FROM ts), extract(epoch FROM ts), extract(timezone FROM ts), extract(timezone_hour FROM ts), extract(timezone_minute FROM ts), date_part('doy', ts) FROM " + ts + " ORDER BY i",
		"SELECT i, to_char(ts, 'YYYY-MM-DD HH24:MI:SS.US OF TZH:TZM'), to_char(ts, 'FMHH12:MI am Dy TZ tz') FROM " + ts + " ORDER BY i",
		"SELECT i, ts + interval '1 day', ts + interval '1 month', ts - interval '1 day 2 hours', ts + interval '24 hours', ts - interval '1 year' FROM " + ts + " ORDER BY i",
		"SELECT i, ts AT TIME ZONE 'America/New_York', ts AT TIME ZONE '+05:30', ts AT TIME ZONE 'UTC', timezone('Asia/Kolkata', ts), ts AT TIME ZONE 'EST', ts AT TIME ZONE INTERVAL '-03:30' FROM " + ts + " ORDER BY i",
		"SELECT i, (ts AT TIME ZONE 'UTC') AT TIME ZONE 'Europe/Berlin', ts::timestamp::timestamptz, ts::date::timestamptz, date_trunc('day', ts, 'Asia/Kathmandu') FROM " + ts + " ORDER BY i",
		"SELECT a.i, b.i, age(a.ts, b.ts), a.ts - b.ts FROM " + strings.Replace(ts, "AS v(i, ts)", "AS a(i, ts)", 1) + ", (VALUES (0, '2026-01-15 12:00:00+00'::timestamptz)) AS b(i, ts) WHERE isfinite(a.ts) ORDER BY 1",
		"SELECT i, lt::timestamptz, lt::timestamp::timestamptz, lt::timestamp AT TIME ZONE 'Europe/Berlin', lt::timestamp AT TIME ZONE 'America/New_York', lt::date::timestamptz, (lt || ' Europe/Berlin')::timestamptz FROM " + lt + " ORDER BY i",
		"SELECT i, lt::timestamptz::date, date_trunc('day', lt::timestamptz), extract(hour FROM lt::timestamptz) FROM " + lt + " ORDER BY i",
		"SELECT '2026-03-29 02:30'::timestamptz, timestamptz '2026-10-25 02:30', '2026-03-29T02:30:00'::timestamptz = '2026-03-29 03:30'::timestamptz",
		"SHOW TimeZone",
	}
	run := func(connString string) []string {
		conn := MustConnect(t, connString)
		defer conn.Close(context.Background())
		var out []string
		for _, z := range tzZones {
			if _, err := conn.Exec(context.Background(), "SET TIME ZONE "+z, pgx.QueryExecModeSimpleProtocol); err != nil {
				t.Fatalf("SET TIME ZONE %s: %v", z, err)
			}
			for _, q := range queries {
				rows, err := conn.Query(context.Background(), q, pgx.QueryExecModeSimpleProtocol)
				if err != nil {
					t.Fatalf("zone %s, %.80s…: %v", z, q, err)
				}
				for rows.Next() {
					var vals []string
					for _, v := range rows.RawValues() {
						vals = append(vals, string(v))
					}
					out = append(out, z+" | "+strings.Join(vals, " | "))
				}
				if err := rows.Err(); err != nil {
					t.Fatalf("zone %s, %.80s…: %v", z, q, err)
				}
				out = append(out, "--")
			}
		}
		return out
	}
	got := run(srv.ConnString())
	want := run(FreshPostgresDB(t, "types20_tz_diff"))
	if len(got) != len(want) {
		t.Fatalf("%d result lines, PostgreSQL %d", len(got), len(want))
	}
	bad := 0
	for i := range got {
		if got[i] != want[i] {
			bad++
			if bad <= 20 {
				t.Errorf("sluice:   %s\npostgres: %s", got[i], want[i])
			}
		}
	}
	t.Logf("%d zones, %d queries, %d result lines, %d differ", len(tzZones), len(queries), len(got), bad)
}

// TestTimeZoneSession checks the session side over the wire: the
// timezone startup parameter and SET TIME ZONE are reported to the client
// in ParameterStatus, an unknown zone is 22023 and refuses the
// connection, text follows the zone while the binary format stays UTC
// microseconds, and parameters and COPY read text in the zone.
func TestTimeZoneSession(t *testing.T) {
	srv := StartServer(t, Options{})
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(srv.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["timezone"] = "Europe/Berlin"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if got := conn.PgConn().ParameterStatus("TimeZone"); got != "Europe/Berlin" {
		t.Fatalf("ParameterStatus TimeZone after startup = %q, want Europe/Berlin", got)
	}
	text := func(q string, args ...any) string {
		t.Helper()
		var s string
		if err := conn.QueryRow(ctx, q, args...).Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return s
	}
	if got := text("SELECT '2026-03-29 01:30:00+00'::timestamptz::text"); got != "2026-03-29 03:30:00+02" {
		t.Fatalf("text in Berlin = %q", got)
	}
	// Binary format (pgx's extended protocol reads timestamptz in binary):
	// the instant, whatever the zone.
	var inst time.Time
	if err := conn.QueryRow(ctx, "SELECT '2026-03-29 03:30:00+02'::timestamptz").Scan(&inst); err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC); !inst.Equal(want) {
		t.Fatalf("binary timestamptz = %v, want %v", inst, want)
	}
	// A text parameter without an offset is read in the session zone.
	if got := text("SELECT ($1::timestamptz)::text", "2026-10-25 02:30:00"); got != "2026-10-25 02:30:00+01" {
		t.Fatalf("text parameter = %q", got)
	}
	if _, err := conn.Exec(ctx, "SET TIME ZONE 'America/New_York'"); err != nil {
		t.Fatal(err)
	}
	if got := conn.PgConn().ParameterStatus("TimeZone"); got != "America/New_York" {
		t.Fatalf("ParameterStatus TimeZone after SET = %q", got)
	}
	if got := text("SHOW TIME ZONE"); got != "America/New_York" {
		t.Fatalf("SHOW TIME ZONE = %q", got)
	}
	if _, err := conn.Exec(ctx, "SET TIME ZONE 'Mars/Olympus'"); err == nil || !strings.Contains(err.Error(), "22023") {
		t.Fatalf("unknown zone: %v, want 22023", err)
	}
	if _, err := conn.Exec(ctx, "SET TIME ZONE DEFAULT"); err != nil {
		t.Fatal(err)
	}
	if got := conn.PgConn().ParameterStatus("TimeZone"); got != "UTC" {
		t.Fatalf("ParameterStatus TimeZone after DEFAULT = %q", got)
	}
	// COPY reads and writes text in the zone.
	if _, err := conn.Exec(ctx, "SET TimeZone = 'Asia/Kolkata'"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE types20_tz_copy (id INT PRIMARY KEY, ts TIMESTAMPTZ)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.PgConn().CopyFrom(ctx, strings.NewReader("1\t2026-01-01 05:30:00\n2\t2026-01-01 00:00:00+00\n"),
		"COPY types20_tz_copy FROM STDIN"); err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	if _, err := conn.PgConn().CopyTo(ctx, &buf, "COPY (SELECT id, ts FROM types20_tz_copy ORDER BY id) TO STDOUT"); err != nil {
		t.Fatal(err)
	}
	if want := "1\t2026-01-01 05:30:00+05:30\n2\t2026-01-01 05:30:00+05:30\n"; buf.String() != want {
		t.Fatalf("COPY TO = %q, want %q", buf.String(), want)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(DISTINCT ts)::int FROM types20_tz_copy").Scan(&n); err != nil || n != 1 {
		t.Fatalf("distinct instants = %d, %v; want 1", n, err)
	}

	cfg.RuntimeParams["timezone"] = "Nowhere/Else"
	if c, err := pgx.ConnectConfig(ctx, cfg); err == nil || !strings.Contains(err.Error(), "22023") {
		if c != nil {
			c.Close(ctx)
		}
		t.Fatalf("startup with an unknown zone: %v, want 22023", err)
	}
}

// TestTimeZoneView checks that a materialized view keeps the TimeZone of
// the session that created it: its text casts, date_trunc and extract on
// timestamptz are computed in that zone for rows written by a session in
// another zone, read by a third, and again after a restart.
func TestTimeZoneView(t *testing.T) {
	srv := StartServer(t, Options{})
	ctx := context.Background()
	exec := func(conn *pgx.Conn, q string) {
		t.Helper()
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	creator := srv.Connect(t)
	exec(creator, "SET TIME ZONE 'Europe/Berlin'")
	exec(creator, "CREATE TABLE types20_tz_t (id INT PRIMARY KEY, ts TIMESTAMPTZ)")
	exec(creator, `CREATE MATERIALIZED VIEW types20_tz_v AS SELECT id, ts::text AS s, date_trunc('day', ts) AS d,
		extract(hour FROM ts) AS h, ts::timestamp AS l FROM types20_tz_t`)
	creator.Close(ctx)

	writer := srv.Connect(t)
	exec(writer, "SET TIME ZONE 'UTC'")
	exec(writer, "INSERT INTO types20_tz_t VALUES (1, '2026-03-29 12:00:00'), (2, '2026-10-24 23:30:00')")
	exec(writer, "FLUSH")
	writer.Close(ctx)

	want := []string{
		// 12:00 UTC is 14:00 CEST; the Berlin day began at 00:00 CET,
		// 2026-03-28 23:00 UTC, which New York (EDT) prints at 19:00.
		"1|2026-03-29 14:00:00+02|2026-03-28 19:00:00-04|14|2026-03-29 14:00:00",
		// 23:30 UTC on 10-24 is 01:30 CEST on 10-25 (a 25-hour day that
		// began at 00:00 CEST, 2026-10-24 22:00 UTC).
		"2|2026-10-25 01:30:00+02|2026-10-24 18:00:00-04|1|2026-10-25 01:30:00",
		// Written after the restart.
		"3|2026-07-01 00:00:00+02|2026-06-30 18:00:00-04|0|2026-07-01 00:00:00",
	}
	check := func(n int) {
		t.Helper()
		reader := srv.ConnectSimple(t)
		defer reader.Close(ctx)
		exec(reader, "SET TIME ZONE 'America/New_York'")
		rows, err := reader.Query(ctx, "SELECT id, s, d, h, l FROM types20_tz_v ORDER BY id", pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var vals []string
			for _, v := range rows.RawValues() {
				vals = append(vals, string(v))
			}
			got = append(got, strings.Join(vals, "|"))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "\n") != strings.Join(want[:n], "\n") {
			t.Fatalf("view rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want[:n], "\n"))
		}
	}
	check(2)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	w := srv.Connect(t)
	exec(w, "SET TIME ZONE 'Asia/Tokyo'")
	exec(w, "INSERT INTO types20_tz_t VALUES (3, '2026-07-01 07:00:00')") // 07:00 JST = 22:00 UTC on 06-30
	exec(w, "FLUSH")
	// Replacing the view from another zone would keep state computed in
	// the old one: refused.
	_, err := w.Exec(ctx, "CREATE OR REPLACE MATERIALIZED VIEW types20_tz_v AS SELECT id, ts::text AS s, date_trunc('day', ts) AS d, extract(hour FROM ts) AS h, ts::timestamp AS l FROM types20_tz_t")
	if err == nil || !strings.Contains(err.Error(), "0A000") || !strings.Contains(err.Error(), "Europe/Berlin") {
		t.Fatalf("CREATE OR REPLACE from Asia/Tokyo: %v, want 0A000 naming Europe/Berlin", err)
	}
	w.Close(ctx)
	check(3)
}
