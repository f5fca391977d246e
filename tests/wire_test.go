package tests

// The Postgres wire contract (issue 2, acceptance 1, 2 and 9): pgx in its
// default (extended, binary results) and simple-protocol modes with every
// supported type; several statements in one simple query; psql 15 with its
// meta-commands; CancelRequest; SSLRequest; garbage and oversized messages
// closing only their own connection.
//
// The checks that make sense against any Postgres server also run against
// the machine's PostgreSQL (TestWireReferencePostgres), to show that they
// expect what PostgreSQL does.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
)

// wireTarget is a Postgres-speaking server to run wire checks against.
type wireTarget struct {
	name       string // "sluice" or "postgres"
	addr       string
	user, db   string
	connString string
}

func sluiceWireTarget(srv *Server) wireTarget {
	return wireTarget{name: "sluice", addr: srv.Addr, user: "sluice", db: "sluice", connString: srv.ConnString()}
}

func postgresWireTarget(t *testing.T, db string) wireTarget {
	url := FreshPostgresDB(t, db)
	return wireTarget{name: "postgres", addr: PostgresAddr, user: "postgres", db: db, connString: url}
}

// flush makes acknowledged writes visible to SELECT: Sluice reads see the
// last committed epoch; PostgreSQL needs nothing.
func (tg wireTarget) flush(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	if tg.name == "sluice" {
		ExecAll(t, conn, "FLUSH")
	}
}

func (tg wireTarget) simpleConnString() string {
	return tg.connString + "&default_query_exec_mode=simple_protocol"
}

// ---------------------------------------------------------------------------
// pgx, both modes, every type.

// TestWirePgxModes round-trips a value of every supported type, and NULL,
// through $n parameters and results: binary formats in pgx's default mode,
// text in simple-protocol mode.
func TestWirePgxModes(t *testing.T) {
	srv := StartServer(t, Options{})
	tg := sluiceWireTarget(srv)
	t.Run("default", func(t *testing.T) { checkTypesRoundTrip(t, tg, MustConnect(t, tg.connString), "types_default") })
	t.Run("simple", func(t *testing.T) { checkTypesRoundTrip(t, tg, MustConnect(t, tg.simpleConnString()), "types_simple") })
	t.Run("parameters", func(t *testing.T) { checkParameterStatus(t, MustConnect(t, tg.connString)) })
	t.Run("multi-statement", func(t *testing.T) { checkMultiStatement(t, tg, MustConnect(t, tg.connString)) })
	t.Run("prepared", func(t *testing.T) { checkPrepared(t, tg, MustConnect(t, tg.connString)) })
}

type typesRow struct {
	b   *bool
	i2  *int16
	i4  *int32
	i8  *int64
	f4  *float32
	f8  *float64
	n   pgtype.Numeric
	t   *string
	vc  *string
	bt  []byte
	d   pgtype.Date
	tm  pgtype.Time
	ts  pgtype.Timestamp
	tz  pgtype.Timestamptz
	iv  pgtype.Interval
	j   *string
	id  int64
	any bool
}

func checkTypesRoundTrip(t *testing.T, tg wireTarget, conn *pgx.Conn, table string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ExecAll(t, conn, `CREATE TABLE `+table+` (id BIGINT PRIMARY KEY, b BOOLEAN, i2 SMALLINT, i4 INT, i8 BIGINT,
		f4 REAL, f8 DOUBLE PRECISION, n NUMERIC(12,2), t TEXT, vc VARCHAR(20), bt BYTEA, d DATE, tm TIME,
		ts TIMESTAMP, tz TIMESTAMPTZ, iv INTERVAL, j JSONB)`)

	ts := time.Date(2024, 3, 5, 10, 20, 30, 123456000, time.UTC)
	tz := time.Date(2024, 3, 5, 10, 20, 30, 0, time.FixedZone("UTC+2", 2*3600))
	tm := pgtype.Time{Microseconds: (13*3600+14*60+15)*1_000_000 + 500_000, Valid: true}
	iv := pgtype.Interval{Months: 14, Days: 3, Microseconds: 4 * 3600 * 1_000_000, Valid: true}
	jsonText := `{"a": 1, "b": [true, null, "x"], "c": {"d": "é"}}`
	_, err := conn.Exec(ctx, `INSERT INTO `+table+` VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
		int64(1), true, int16(-12), int32(123456), int64(-9007199254740993), float32(1.5), float64(-2.25e10),
		"12345.67", "héllo\tworld 'quoted' \\ back", "varchar", []byte{0, 1, 2, 0xff, '\\'},
		pgtype.Date{Time: time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), Valid: true},
		tm, pgtype.Timestamp{Time: ts, Valid: true}, tz, iv, jsonText)
	if err != nil {
		t.Fatalf("INSERT with parameters: %s", describeErr(err))
	}
	if _, err := conn.Exec(ctx, `INSERT INTO `+table+` (id) VALUES ($1)`, int64(2)); err != nil {
		t.Fatalf("INSERT of NULLs: %s", describeErr(err))
	}
	tg.flush(t, conn)

	rows, err := conn.Query(ctx, `SELECT id, b, i2, i4, i8, f4, f8, n, t, vc, bt, d, tm, ts, tz, iv, j FROM `+table+` ORDER BY id`)
	if err != nil {
		t.Fatalf("SELECT: %s", describeErr(err))
	}
	var got []typesRow
	for rows.Next() {
		var r typesRow
		if err := rows.Scan(&r.id, &r.b, &r.i2, &r.i4, &r.i8, &r.f4, &r.f8, &r.n, &r.t, &r.vc, &r.bt, &r.d, &r.tm,
			&r.ts, &r.tz, &r.iv, &r.j); err != nil {
			t.Fatalf("scanning: %v", err)
		}
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("SELECT: %s", describeErr(err))
	}
	if len(got) != 2 {
		t.Fatalf("got %d rows, want 2", len(got))
	}
	r := got[0]
	check := func(name string, ok bool, gotV any) {
		t.Helper()
		if !ok {
			t.Errorf("%s: got %v", name, gotV)
		}
	}
	check("boolean", r.b != nil && *r.b, deref(r.b))
	check("smallint", r.i2 != nil && *r.i2 == -12, deref(r.i2))
	check("int", r.i4 != nil && *r.i4 == 123456, deref(r.i4))
	check("bigint", r.i8 != nil && *r.i8 == -9007199254740993, deref(r.i8))
	check("real", r.f4 != nil && *r.f4 == 1.5, deref(r.f4))
	check("double precision", r.f8 != nil && *r.f8 == -2.25e10, deref(r.f8))
	nv, _ := r.n.Value()
	check("numeric(12,2)", nv == "12345.67", nv)
	check("text", r.t != nil && *r.t == "héllo\tworld 'quoted' \\ back", deref(r.t))
	check("varchar", r.vc != nil && *r.vc == "varchar", deref(r.vc))
	check("bytea", reflect.DeepEqual(r.bt, []byte{0, 1, 2, 0xff, '\\'}), r.bt)
	check("date", r.d.Valid && r.d.Time.Equal(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)), r.d)
	check("time", r.tm == tm, r.tm)
	check("timestamp", r.ts.Valid && r.ts.Time.Equal(ts), r.ts)
	check("timestamptz", r.tz.Valid && r.tz.Time.Equal(tz), r.tz)
	check("interval", r.iv == iv, r.iv)
	var wantJSON, gotJSON any
	_ = json.Unmarshal([]byte(jsonText), &wantJSON)
	jsonOK := r.j != nil && json.Unmarshal([]byte(*r.j), &gotJSON) == nil && reflect.DeepEqual(gotJSON, wantJSON)
	check("jsonb", jsonOK, deref(r.j))

	n := got[1]
	allNull := n.b == nil && n.i2 == nil && n.i4 == nil && n.i8 == nil && n.f4 == nil && n.f8 == nil && !n.n.Valid &&
		n.t == nil && n.vc == nil && n.bt == nil && !n.d.Valid && !n.tm.Valid && !n.ts.Valid && !n.tz.Valid &&
		!n.iv.Valid && n.j == nil
	check("NULLs", allNull, fmt.Sprintf("%+v", n))

	// Parameters in a WHERE clause, and a parameter whose type comes from
	// the context.
	var v string
	if err := conn.QueryRow(ctx, `SELECT vc FROM `+table+` WHERE id = $1 AND i4 > $2`, int64(1), 100).Scan(&v); err != nil || v != "varchar" {
		t.Errorf("SELECT with parameters: %q, %s", v, errText(err))
	}
	var sum int64
	if err := conn.QueryRow(ctx, `SELECT $1::bigint + 1`, int64(41)).Scan(&sum); err != nil || sum != 42 {
		t.Errorf("SELECT $1::bigint + 1: %d, %s", sum, errText(err))
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return "NULL"
	}
	return *p
}

func errText(err error) string {
	if err == nil {
		return "no error"
	}
	return describeErr(err)
}

// checkParameterStatus checks the ParameterStatus values drivers rely on.
func checkParameterStatus(t *testing.T, conn *pgx.Conn) {
	pc := conn.PgConn()
	want := map[string]*regexp.Regexp{
		"server_version":              regexp.MustCompile(`^\d+(\.\d+)*`),
		"client_encoding":             regexp.MustCompile(`^UTF8$`),
		"DateStyle":                   regexp.MustCompile(`^ISO`),
		"integer_datetimes":           regexp.MustCompile(`^on$`),
		"standard_conforming_strings": regexp.MustCompile(`^on$`),
		"TimeZone":                    regexp.MustCompile(`.`),
	}
	for name, re := range want {
		if v := pc.ParameterStatus(name); !re.MatchString(v) {
			t.Errorf("ParameterStatus %s = %q, want %s", name, v, re)
		}
	}
	if pc.PID() == 0 && len(pc.SecretKey()) == 0 {
		t.Errorf("no BackendKeyData: CancelRequest is impossible")
	}
}

// checkMultiStatement sends several statements in one simple Query message.
func checkMultiStatement(t *testing.T, tg wireTarget, conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// PostgreSQL has no FLUSH; a SELECT stands in for it so that the
	// results line up.
	flush := "SELECT 'flush'"
	if tg.name == "sluice" {
		flush = "FLUSH"
	}
	sql := "CREATE TABLE multi (a INT); INSERT INTO multi VALUES (1), (2); " + flush + "; SELECT count(*) FROM multi; SELECT 'x' AS y"
	results, err := conn.PgConn().Exec(ctx, sql).ReadAll()
	if err != nil {
		t.Fatalf("multi-statement query: %s", describeErr(err))
	}
	if len(results) != 5 {
		t.Fatalf("got %d results, want 5", len(results))
	}
	if tag := results[1].CommandTag.String(); tag != "INSERT 0 2" {
		t.Errorf("INSERT command tag %q, want INSERT 0 2", tag)
	}
	if rows := results[3].Rows; len(rows) != 1 || string(rows[0][0]) != "2" {
		t.Errorf("SELECT count(*) gave %q", rows)
	}
	if rows := results[4].Rows; len(rows) != 1 || string(rows[0][0]) != "x" {
		t.Errorf("SELECT 'x' gave %q", rows)
	}
	// An error stops the rest of the query string; the session goes on.
	_, err = conn.PgConn().Exec(ctx, "SELECT 1; SELECT * FROM nope; SELECT 2").ReadAll()
	if PgCode(err) != "42P01" {
		t.Errorf("error in a multi-statement query: %s, want 42P01", errText(err))
	}
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("session after an error: %s", errText(err))
	}
}

// checkPrepared runs a named prepared statement several times, as pgx does
// for a repeated query in its default mode, and closes it.
func checkPrepared(t *testing.T, tg wireTarget, conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ExecAll(t, conn, "CREATE TABLE prep (id BIGINT PRIMARY KEY, v TEXT)")
	if _, err := conn.Prepare(ctx, "ins", "INSERT INTO prep VALUES ($1, $2)"); err != nil {
		t.Fatalf("Prepare: %s", describeErr(err))
	}
	for i := int64(1); i <= 5; i++ {
		if _, err := conn.Exec(ctx, "ins", i, fmt.Sprint("v", i)); err != nil {
			t.Fatalf("Exec of a prepared statement: %s", describeErr(err))
		}
	}
	if err := conn.Deallocate(ctx, "ins"); err != nil {
		t.Errorf("Deallocate: %s", describeErr(err))
	}
	tg.flush(t, conn)
	for i := 0; i < 3; i++ {
		var n int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM prep WHERE id >= $1", int64(2)).Scan(&n); err != nil || n != 4 {
			t.Errorf("repeated query: %d, %s", n, errText(err))
		}
	}
}

// ---------------------------------------------------------------------------
// psql.

// TestWirePsql runs psql 15: -c commands, and a script with statements and
// the meta-commands \d, \dt, \dm, \d NAME, \l and \dn.
func TestWirePsql(t *testing.T) {
	srv := StartServer(t, Options{})
	checkPsql(t, sluiceWireTarget(srv))
}

// runPsql runs psql with args; unless keepGoing, the first error stops it.
func runPsql(t *testing.T, tg wireTarget, keepGoing bool, args ...string) (string, error) {
	t.Helper()
	host, port, _ := net.SplitHostPort(tg.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	full := []string{"-X", "-h", host, "-p", port, "-U", tg.user, "-d", tg.db, "-P", "pager=off"}
	if !keepGoing {
		full = append(full, "-v", "ON_ERROR_STOP=1")
	}
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, "/usr/bin/psql", full...)
	// The default sslmode (prefer) makes psql start with an SSLRequest.
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=10", "PGSSLMODE=prefer", "PGPASSWORD=", "PSQLRC=/dev/null")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func checkPsql(t *testing.T, tg wireTarget) {
	out, err := runPsql(t, tg, false, "-c", "SELECT 1 AS one", "-c", "SELECT 'a' || 'b' AS ab, 2 + 3 AS five")
	if err != nil {
		t.Fatalf("psql -c: %v\n%s", err, out)
	}
	expectMatches(t, "psql -c", out, `(?m)^\s*one\s*$`, `(?m)^\s*1\s*$`, `ab\s*\|\s*five`, `ab\s*\|\s*5`)

	out, err = runPsql(t, tg, false, "-c", "SELECT * FROM nope")
	if err == nil || !strings.Contains(out, "ERROR:") || !strings.Contains(out, "nope") {
		t.Errorf("psql -c on an unknown relation: %v\n%s", err, out)
	}

	refresh := "FLUSH;"
	if tg.name == "postgres" {
		refresh = "REFRESH MATERIALIZED VIEW revenue;"
	}
	script := `CREATE TABLE orders (id BIGINT PRIMARY KEY, customer TEXT, amount NUMERIC(12,2), ts TIMESTAMP);
CREATE TABLE customers (name TEXT PRIMARY KEY, region TEXT);
CREATE MATERIALIZED VIEW revenue AS
  SELECT c.region, count(*) AS orders, sum(o.amount) AS total, max(o.amount) AS biggest
  FROM orders o JOIN customers c ON o.customer = c.name GROUP BY c.region;
INSERT INTO customers VALUES ('ann', 'north'), ('bob', 'south');
INSERT INTO orders VALUES (1, 'ann', 10.50, now()), (2, 'bob', 7, now());
` + refresh + `
SELECT * FROM revenue ORDER BY region;
\echo ==== d
\d
\echo ==== dt
\dt
\echo ==== dm
\dm
\echo ==== d orders
\d orders
\echo ==== d revenue
\d revenue
\echo ==== l
\l
\echo ==== dn
\dn
\echo ==== end
`
	path := filepath.Join(t.TempDir(), "script.sql")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	// Every meta-command runs even if one fails, so that one missing
	// catalog query does not hide the others.
	out, err = runPsql(t, tg, true, "-f", path)
	if err != nil {
		t.Fatalf("psql -f script: %v\n%s", err, out)
	}
	sections := splitPsqlSections(out)
	section := func(name string, patterns ...string) string {
		t.Helper()
		out := sections[name]
		if strings.Contains(out, "ERROR:") {
			t.Errorf("psql: %s failed:\n%s", name, indent(out))
			return ""
		}
		expectMatches(t, name, out, patterns...)
		return out
	}
	section("start",
		`region\s*\|\s*orders\s*\|\s*total\s*\|\s*biggest`,
		`north\s*\|\s*1\s*\|\s*10\.50\s*\|\s*10\.50`,
		`south\s*\|\s*1\s*\|\s*7\.00\s*\|\s*7\.00`)
	section("d", `orders\s*\|\s*table`, `customers\s*\|\s*table`, `revenue\s*\|\s*materialized view`)
	if out := section("dt", `orders\s*\|\s*table`, `customers\s*\|\s*table`); out != "" {
		expectNoMatch(t, `\dt`, out, `revenue`)
	}
	if out := section("dm", `revenue\s*\|\s*materialized view`); out != "" {
		expectNoMatch(t, `\dm`, out, `orders`)
	}
	section("d orders",
		`Table "public\.orders"`,
		`(?m)^\s*id\s*\|\s*bigint\s*\|`,
		`(?m)^\s*customer\s*\|\s*text\s*\|`,
		`(?m)^\s*amount\s*\|\s*numeric\(12,2\)\s*\|`,
		`(?m)^\s*ts\s*\|\s*timestamp without time zone\s*\|`)
	section("d revenue",
		`Materialized view "public\.revenue"`,
		`(?m)^\s*region\s*\|\s*text\s*\|`,
		`(?m)^\s*orders\s*\|\s*bigint\s*\|`,
		`(?m)^\s*total\s*\|\s*numeric\s*\|`,
		`(?m)^\s*biggest\s*\|\s*numeric\s*\|`)
	section("l", `(?m)^\s*`+regexp.QuoteMeta(tg.db)+`\s*\|`)
	section("dn", `(?m)^\s*public\s*\|`)

	if tg.name == "sluice" {
		// Sources are relations too.
		ExecAll(t, MustConnect(t, tg.connString), `CREATE SOURCE g (id BIGINT, v DOUBLE PRECISION) WITH (
			connector = 'datagen', fields.id.kind = 'sequence', fields.id.start = '1',
			fields.v.kind = 'random', fields.v.seed = '7', datagen.rows.per.second = '10')`)
		out, err = runPsql(t, tg, false, "-c", `\d`, "-c", `\d g`)
		if err != nil {
			t.Fatalf("psql \\d with a source: %v\n%s", err, out)
		}
		expectMatches(t, `\d and \d g with a source`, out,
			`(?m)^\s*public\s*\|\s*g\s*\|`, `(?m)^\s*id\s*\|\s*bigint\s*\|`, `(?m)^\s*v\s*\|\s*double precision\s*\|`)
	}
}

// splitPsqlSections splits script output at the "==== name" lines it echoes.
func splitPsqlSections(out string) map[string]string {
	sections := map[string]string{}
	name := "start"
	var cur strings.Builder
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "==== "); ok {
			sections[name] = cur.String()
			cur.Reset()
			name = rest
			continue
		}
		cur.WriteString(line + "\n")
	}
	sections[name] = cur.String()
	return sections
}

func expectMatches(t *testing.T, what, out string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		if !regexp.MustCompile(p).MatchString(out) {
			t.Errorf("%s: output does not match %s:\n%s", what, p, indent(out))
		}
	}
}

func expectNoMatch(t *testing.T, what, out, pattern string) {
	t.Helper()
	if regexp.MustCompile(pattern).MatchString(out) {
		t.Errorf("%s: output matches %s but should not:\n%s", what, pattern, indent(out))
	}
}

// ---------------------------------------------------------------------------
// CancelRequest.

// TestWireCancel cancels a long SELECT (a self-join of a datagen-fed view
// with a billion pairs) through pgx's context cancellation, which sends a
// CancelRequest: the statement ends with 57014 and the session goes on.
func TestWireCancel(t *testing.T) {
	srv := StartServer(t, Options{})
	tg := sluiceWireTarget(srv)
	conn := MustConnect(t, tg.connString)
	ExecAll(t, conn,
		`CREATE SOURCE big (id BIGINT, k BIGINT) WITH (connector = 'datagen',
			fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '50000',
			fields.k.kind = 'random', fields.k.min = '1', fields.k.max = '2', fields.k.seed = '1',
			datagen.rows.per.second = '100000')`,
		`CREATE MATERIALIZED VIEW bigv AS SELECT id, k FROM big`)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ExecAll(t, conn, "FLUSH")
		res, err := QueryText(context.Background(), conn, "SELECT count(*) FROM bigv")
		if err != nil {
			t.Fatalf("SELECT count(*) FROM bigv: %s", describeErr(err))
		}
		if res.Rows[0][0] == "50000" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bigv has %s rows after 60s, want 50000", res.Rows[0][0])
		}
		time.Sleep(100 * time.Millisecond) // polling, bounded by deadline
	}
	checkCancel(t, tg, "SELECT count(*) FROM bigv a JOIN bigv b ON a.k = b.k")
}

func checkCancel(t *testing.T, tg wireTarget, slowSQL string) {
	for _, mode := range []string{"extended", "simple"} {
		t.Run(mode, func(t *testing.T) {
			cfg, err := pgx.ParseConfig(tg.connString)
			if err != nil {
				t.Fatal(err)
			}
			// pgx's default reaction to a cancelled context is to break the
			// connection; this one sends a CancelRequest and waits for the
			// server's answer.
			cfg.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
				return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: 15 * time.Second}
			}
			conn, err := pgx.ConnectConfig(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			bystander := MustConnect(t, tg.connString)

			ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
			defer cancel()
			start := time.Now()
			if mode == "simple" {
				_, err = conn.Exec(ctx, slowSQL) // no arguments: a simple Query message
			} else {
				_, err = QueryText(ctx, conn, slowSQL, pgx.QueryExecModeDescribeExec)
			}
			elapsed := time.Since(start)
			switch {
			case err == nil:
				t.Fatalf("the slow statement finished in %v before it was cancelled: make it slower", elapsed)
			case PgCode(err) != "57014":
				t.Fatalf("cancelled statement: %s, want SQLSTATE 57014", describeErr(err))
			case elapsed > 10*time.Second:
				t.Errorf("the cancel took %v to take effect", elapsed)
			}
			// The session survives, and so does everyone else's.
			for name, c := range map[string]*pgx.Conn{"cancelled session": conn, "other session": bystander} {
				var one int
				if err := c.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil {
					t.Errorf("%s after the cancel: %s", name, describeErr(err))
				}
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Bad bytes on the socket.

// TestWireBadInput sends garbage, an HTTP request, absurd lengths and an
// oversized message; each closes its own connection (an oversized message
// after startup with 08P01) and nothing else.
func TestWireBadInput(t *testing.T) {
	srv := StartServer(t, Options{})
	tg := sluiceWireTarget(srv)
	checkBadInput(t, tg)
	if exited, err := srv.Exited(); exited {
		t.Fatalf("the server exited: %v", err)
	}
}

// TestWireSSLRequest checks that SSLRequest is answered N (no TLS yet) and
// the connection then starts up in the clear.
func TestWireSSLRequest(t *testing.T) {
	srv := StartServer(t, Options{})
	tg := sluiceWireTarget(srv)
	c, err := net.DialTimeout("tcp", tg.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var req [8]byte
	binary.BigEndian.PutUint32(req[0:4], 8)
	binary.BigEndian.PutUint32(req[4:8], 80877103)
	if _, err := c.Write(req[:]); err != nil {
		t.Fatal(err)
	}
	var answer [1]byte
	if _, err := io.ReadFull(c, answer[:]); err != nil || answer[0] != 'N' {
		t.Fatalf("SSLRequest answered %q (%v), want N", answer[:], err)
	}
	if err := startup(c, tg); err != nil {
		t.Fatalf("startup after SSLRequest: %v", err)
	}
}

func checkBadInput(t *testing.T, tg wireTarget) {
	bystander := MustConnect(t, tg.connString)
	rng := rand.New(rand.NewSource(1))
	garbage := make([]byte, 4096)
	rng.Read(garbage)
	hugeStartup := make([]byte, 8)
	binary.BigEndian.PutUint32(hugeStartup[0:4], 0x7fffffff)
	binary.BigEndian.PutUint32(hugeStartup[4:8], 196608)
	tinyStartup := []byte{0, 0, 0, 3, 0}

	cases := []struct {
		name     string
		startup  bool   // complete a normal startup first
		payload  []byte // then send this
		wantCode string // Sluice must send an ErrorResponse with this code before the close
	}{
		{name: "random bytes", payload: garbage},
		{name: "HTTP request", payload: []byte("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")},
		{name: "startup length 2^31-1", payload: hugeStartup},
		{name: "startup length 3", payload: tinyStartup},
		{name: "unknown message type", startup: true, payload: []byte{'Z', 0, 0, 0, 4}},
		{name: "message length 2^30", startup: true, payload: []byte{'Q', 0x40, 0, 0, 0, 'S', 'E', 'L'}, wantCode: "08P01"},
		{name: "message length below 4", startup: true, payload: []byte{'Q', 0, 0, 0, 2}},
		{name: "random bytes after startup", startup: true, payload: garbage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.DialTimeout("tcp", tg.addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(15 * time.Second))
			if tc.startup {
				if err := startup(c, tg); err != nil {
					t.Fatalf("startup: %v", err)
				}
			}
			if _, err := c.Write(tc.payload); err != nil && !isConnClosed(err) {
				t.Fatalf("write: %v", err)
			}
			codes, err := readUntilClosed(c)
			if err != nil {
				t.Fatalf("the server did not close the connection: %v", err)
			}
			// PostgreSQL only logs these; Sluice must say why it hangs up.
			if tc.wantCode != "" && tg.name == "sluice" && !contains(codes, tc.wantCode) {
				t.Errorf("error codes before the close: %v, want %s", codes, tc.wantCode)
			}
			for name, connString := range map[string]string{"existing session": "", "new session": tg.connString} {
				c := bystander
				if connString != "" {
					c = MustConnect(t, connString)
				}
				var one int
				if err := c.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil {
					t.Fatalf("%s after %s: %s", name, tc.name, describeErr(err))
				}
			}
		})
	}
}

// startup sends a StartupMessage and reads until ReadyForQuery.
func startup(c net.Conn, tg wireTarget) error {
	fe := pgproto3.NewFrontend(c, c)
	fe.Send(&pgproto3.StartupMessage{
		ProtocolVersion: pgproto3.ProtocolVersionNumber,
		Parameters:      map[string]string{"user": tg.user, "database": tg.db},
	})
	if err := fe.Flush(); err != nil {
		return err
	}
	for {
		msg, err := fe.Receive()
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *pgproto3.ErrorResponse:
			return fmt.Errorf("ErrorResponse %s: %s", m.Code, m.Message)
		case *pgproto3.ReadyForQuery:
			return nil
		}
	}
}

// readUntilClosed reads backend messages until the server closes the
// connection, returning the SQLSTATEs of the ErrorResponses it sent. It
// fails if the connection stays open until the deadline.
func readUntilClosed(c net.Conn) ([]string, error) {
	var codes []string
	var buf []byte
	tmp := make([]byte, 4096)
	for {
		n, err := c.Read(tmp)
		buf = append(buf, tmp[:n]...)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return codes, fmt.Errorf("still open after the deadline (%d bytes received)", len(buf))
			}
			break // EOF or reset: closed
		}
	}
	// Pick the ErrorResponses out of whatever arrived.
	for len(buf) >= 5 {
		typ, size := buf[0], int(binary.BigEndian.Uint32(buf[1:5]))
		if size < 4 || len(buf) < 1+size {
			break
		}
		if typ == 'E' {
			var e pgproto3.ErrorResponse
			if e.Decode(buf[5:1+size]) == nil {
				codes = append(codes, e.Code)
			}
		}
		buf = buf[1+size:]
	}
	return codes, nil
}

func isConnClosed(err error) bool {
	return errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "reset by peer") ||
		strings.Contains(err.Error(), "broken pipe")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ---------------------------------------------------------------------------
// The same checks against PostgreSQL.

// TestWireReferencePostgres runs the protocol-level checks against the
// machine's PostgreSQL 15: if one fails there, the check is wrong.
func TestWireReferencePostgres(t *testing.T) {
	EnsurePostgres(t)
	t.Run("pgx-default", func(t *testing.T) {
		tg := postgresWireTarget(t, "sluice_wire_default")
		checkTypesRoundTrip(t, tg, MustConnect(t, tg.connString), "types_default")
		checkParameterStatus(t, MustConnect(t, tg.connString))
		checkMultiStatement(t, tg, MustConnect(t, tg.connString))
		checkPrepared(t, tg, MustConnect(t, tg.connString))
	})
	t.Run("pgx-simple", func(t *testing.T) {
		tg := postgresWireTarget(t, "sluice_wire_simple")
		checkTypesRoundTrip(t, tg, MustConnect(t, tg.simpleConnString()), "types_simple")
	})
	t.Run("psql", func(t *testing.T) { checkPsql(t, postgresWireTarget(t, "sluice_wire_psql")) })
	t.Run("cancel", func(t *testing.T) { checkCancel(t, postgresWireTarget(t, "sluice_wire_cancel"), "SELECT pg_sleep(60)") })
	t.Run("bad-input", func(t *testing.T) { checkBadInput(t, postgresWireTarget(t, "sluice_wire_bad")) })
}
