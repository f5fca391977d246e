package pgwire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgtype"
)

var execModes = []string{"", "simple_protocol"}

func connectPgx(t *testing.T, ts *testServer, mode string, setup func(*pgx.ConnConfig)) *pgx.Conn {
	t.Helper()
	var extra []string
	if mode != "" {
		extra = append(extra, "default_query_exec_mode="+mode)
	}
	cfg, err := pgx.ParseConfig(ts.connString("db", extra...))
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func pgErr(t *testing.T, err error, code string) *pgconn.PgError {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		t.Fatalf("got error %v (%T), want a PgError %s", err, err, code)
	}
	if pe.Code != code {
		t.Fatalf("got error code %s (%s), want %s", pe.Code, pe.Message, code)
	}
	return pe
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestPgxQueries(t *testing.T) {
	ts := startServer(t, Options{}, false)
	for _, mode := range execModes {
		t.Run("mode="+mode, func(t *testing.T) {
			ctx := testCtx(t)
			conn := connectPgx(t, ts, mode, nil)

			var one int
			if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
				t.Fatalf("SELECT 1: %v, %d", err, one)
			}

			var (
				i  int64
				s  string
				b  bool
				f  float64
				i2 int16
			)
			err := conn.QueryRow(ctx, "SELECT $1::bigint, $2::text, $3::bool, $4::float8, $5::smallint",
				int64(-42), "it's héllo", true, 2.5, int16(7)).Scan(&i, &s, &b, &f, &i2)
			if err != nil {
				t.Fatal(err)
			}
			if i != -42 || s != "it's héllo" || !b || f != 2.5 || i2 != 7 {
				t.Fatalf("echo: got %d %q %v %v %d", i, s, b, f, i2)
			}

			var np *int64
			var ns *string
			if err := conn.QueryRow(ctx, "SELECT $1::bigint, $2::text", nil, nil).Scan(&np, &ns); err != nil || np != nil || ns != nil {
				t.Fatalf("NULL params: %v %v %v", err, np, ns)
			}

			rows, err := conn.Query(ctx, "SELECT * FROM things")
			if err != nil {
				t.Fatal(err)
			}
			type thing struct {
				ID     int64
				Name   string
				Active bool
				Score  float64
				Note   *string
			}
			got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[thing])
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 3 || got[0].Name != "alpha" || got[1].Note != nil || got[1].Score != -2.25 ||
				got[2].Name != "gamma 'q'" || *got[2].Note != "ünï" || got[1].Active {
				t.Fatalf("things: %+v", got)
			}
			if fds := rows.FieldDescriptions(); len(fds) != 5 || fds[0].Name != "id" || fds[0].DataTypeOID != 20 || fds[1].DataTypeOID != 25 {
				t.Fatalf("field descriptions: %+v", fds)
			}

			tag, err := conn.Exec(ctx, "INSERT INTO t VALUES (1)")
			if err != nil || tag.String() != "INSERT 0 1" || tag.RowsAffected() != 1 {
				t.Fatalf("insert: %v %q", err, tag)
			}
			tag, err = conn.Exec(ctx, "CREATE TABLE t (a int)")
			if err != nil || tag.String() != "CREATE TABLE" {
				t.Fatalf("create: %v %q", err, tag)
			}

			err = conn.QueryRow(ctx, "SELECT nosuchcol").Scan(&one)
			pe := pgErr(t, err, "42703")
			if pe.Position != 8 || pe.Severity != "ERROR" || pe.SeverityUnlocalized != "ERROR" || pe.Hint == "" {
				t.Fatalf("error fields: %+v", pe)
			}
			// The connection is still usable after an error.
			if err := conn.QueryRow(ctx, "SELECT $1::int", 5).Scan(&one); err != nil || one != 5 {
				t.Fatalf("after error: %v %d", err, one)
			}

			var n int
			rows, err = conn.Query(ctx, "SELECT generate_series(1, 1000)")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var v int32
				if err := rows.Scan(&v); err != nil {
					t.Fatal(err)
				}
				n++
				if int(v) != n {
					t.Fatalf("row %d = %d", n, v)
				}
			}
			if rows.Err() != nil || n != 1000 {
				t.Fatalf("series: %v %d", rows.Err(), n)
			}
		})
	}
}

// TestPgxFormats drives Bind's parameter and result formats directly.
func TestPgxFormats(t *testing.T) {
	ts := startServer(t, Options{}, false)
	ctx := testCtx(t)
	pc := connectPgx(t, ts, "", nil).PgConn()
	be := func(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

	for _, tc := range []struct {
		name          string
		sql           string
		params        [][]byte
		oids          []uint32
		pfmts, rfmts  []int16
		want          [][]byte
		wantFormats   []int16
		wantErrorCode string
	}{
		{name: "text/text", sql: "SELECT $1::bigint", params: [][]byte{[]byte("42")},
			want: [][]byte{[]byte("42")}, wantFormats: []int16{0}},
		{name: "binary/binary", sql: "SELECT $1::bigint", params: [][]byte{be(-7)}, pfmts: []int16{1}, rfmts: []int16{1},
			want: [][]byte{be(-7)}, wantFormats: []int16{1}},
		{name: "per-param and per-column", sql: "SELECT $1::bigint, $2::text, $3::int",
			params: [][]byte{be(9), []byte("abc"), []byte("12")}, pfmts: []int16{1, 0, 0}, rfmts: []int16{0, 1, 1},
			want: [][]byte{[]byte("9"), []byte("abc"), {0, 0, 0, 12}}, wantFormats: []int16{0, 1, 1}},
		{name: "one result format for all", sql: "SELECT $1::bigint, 5::int", params: [][]byte{[]byte("1")}, rfmts: []int16{1},
			want: [][]byte{be(1), {0, 0, 0, 5}}, wantFormats: []int16{1, 1}},
		{name: "null", sql: "SELECT $1::bigint, $2::text", params: [][]byte{nil, nil}, pfmts: []int16{1},
			want: [][]byte{nil, nil}, wantFormats: []int16{0, 0}},
		{name: "client param oids", sql: "SELECT $1", params: [][]byte{be(3)}, oids: []uint32{20}, pfmts: []int16{1},
			want: [][]byte{[]byte("3")}, wantFormats: []int16{0}},
		{name: "bad binary", sql: "SELECT $1::bigint", params: [][]byte{{1, 2, 3}}, pfmts: []int16{1}, wantErrorCode: "22P03"},
		{name: "bad text", sql: "SELECT $1::bigint", params: [][]byte{[]byte("abc")}, wantErrorCode: "22P02"},
		{name: "bad utf8", sql: "SELECT $1::text", params: [][]byte{{0xff, 0xfe}}, wantErrorCode: "22021"},
		{name: "too many result formats", sql: "SELECT 1", rfmts: []int16{0, 0}, wantErrorCode: "08P01"},
		{name: "bad format code", sql: "SELECT 1", rfmts: []int16{2}, wantErrorCode: "22023"},
		{name: "prepare error", sql: "SELECT nosuchcol", wantErrorCode: "42703"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := pc.ExecParams(ctx, tc.sql, tc.params, tc.oids, tc.pfmts, tc.rfmts).Read()
			if tc.wantErrorCode != "" {
				pgErr(t, res.Err, tc.wantErrorCode)
				return
			}
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if len(res.Rows) != 1 || !slices.EqualFunc(res.Rows[0], tc.want, slices.Equal) {
				t.Fatalf("rows %q, want %q", res.Rows, tc.want)
			}
			for i, fd := range res.FieldDescriptions {
				if fd.Format != tc.wantFormats[i] {
					t.Fatalf("column %d format %d, want %d", i, fd.Format, tc.wantFormats[i])
				}
			}
		})
	}
	// The connection survived all the errors.
	if res := pc.ExecParams(ctx, "SELECT 1", nil, nil, nil, nil).Read(); res.Err != nil || string(res.Rows[0][0]) != "1" {
		t.Fatalf("after errors: %v %q", res.Err, res.Rows)
	}
}

func TestPgxPrepare(t *testing.T) {
	ts := startServer(t, Options{}, false)
	ctx := testCtx(t)
	pc := connectPgx(t, ts, "", nil).PgConn()

	sd, err := pc.Prepare(ctx, "s1", "SELECT $1::bigint AS a, $2::text AS b, 1.5::numeric(10,2) AS c, 'x'::varchar(5) AS d", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sd.ParamOIDs, []uint32{20, 25}) {
		t.Fatalf("param oids %v", sd.ParamOIDs)
	}
	type fd struct {
		name string
		oid  uint32
		size int16
		mod  int32
	}
	var got []fd
	for _, f := range sd.Fields {
		got = append(got, fd{f.Name, f.DataTypeOID, f.DataTypeSize, f.TypeModifier})
		if f.TableOID != 0 || f.TableAttributeNumber != 0 || f.Format != 0 {
			t.Fatalf("field %+v", f)
		}
	}
	want := []fd{{"a", 20, 8, -1}, {"b", 25, -1, -1}, {"c", 1700, -1, 10<<16 | 2 + 4}, {"d", 1043, -1, 9}}
	if !slices.Equal(got, want) {
		t.Fatalf("fields %v, want %v", got, want)
	}

	_, err = pc.Prepare(ctx, "s1", "SELECT 1", nil)
	pgErr(t, err, "42P05")

	// The unnamed statement may be re-parsed.
	for _, q := range []string{"SELECT 1", "SELECT $1::text"} {
		if _, err := pc.Prepare(ctx, "", q, nil); err != nil {
			t.Fatal(err)
		}
	}
	sd, err = pc.Prepare(ctx, "ins", "INSERT INTO t VALUES ($1)", nil)
	if err != nil || sd.Fields != nil {
		t.Fatalf("no-rows statement: %v %+v", err, sd)
	}

	res := pc.ExecPrepared(ctx, "s1", [][]byte{[]byte("5"), []byte("five")}, nil, nil).Read()
	if res.Err != nil || string(res.Rows[0][1]) != "five" || string(res.CommandTag.String()) != "SELECT 1" {
		t.Fatalf("exec prepared: %v %q %s", res.Err, res.Rows, res.CommandTag)
	}
	if err := pc.Deallocate(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	res = pc.ExecPrepared(ctx, "s1", [][]byte{[]byte("5"), []byte("five")}, nil, nil).Read()
	pgErr(t, res.Err, "26000")
	if _, err := pc.Prepare(ctx, "s1", "SELECT 2", nil); err != nil {
		t.Fatalf("re-prepare after deallocate: %v", err)
	}
}

func TestPgxSessionFeatures(t *testing.T) {
	ts := startServer(t, Options{}, false)
	for _, mode := range execModes {
		t.Run("mode="+mode, func(t *testing.T) {
			ctx := testCtx(t)
			notices := make(chan string, 4)
			conn := connectPgx(t, ts, mode, func(c *pgx.ConnConfig) {
				c.RuntimeParams["application_name"] = "wiretest"
				c.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices <- n.Severity + " " + n.Code + " " + n.Message }
			})
			pc := conn.PgConn()
			for k, v := range map[string]string{
				"server_version": "15.0", "server_encoding": "UTF8", "client_encoding": "UTF8",
				"DateStyle": "ISO, MDY", "integer_datetimes": "on", "standard_conforming_strings": "on",
				"TimeZone": "UTC", "IntervalStyle": "postgres", "is_superuser": "on",
				"session_authorization": "tester", "application_name": "wiretest",
			} {
				if got := pc.ParameterStatus(k); got != v {
					t.Errorf("ParameterStatus(%s) = %q, want %q", k, got, v)
				}
			}
			if info := ts.h.lastInfo(); info.User != "tester" || info.Database != "db" || info.ApplicationName != "wiretest" || info.RemoteAddr == "" {
				t.Errorf("startup info %+v", info)
			}
			if pc.PID() == 0 {
				t.Errorf("no backend pid")
			}

			if _, err := conn.Exec(ctx, "SET TimeZone = 'Europe/Paris'"); err != nil {
				t.Fatal(err)
			}
			if got := pc.ParameterStatus("TimeZone"); got != "Europe/Paris" {
				t.Errorf("TimeZone after SET = %q", got)
			}

			if _, err := conn.Exec(ctx, "NOTICE hello there"); err != nil {
				t.Fatal(err)
			}
			select {
			case n := <-notices:
				if n != "NOTICE 00000 hello there" {
					t.Errorf("notice %q", n)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no notice")
			}

			if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
				t.Fatal(err)
			}
			if pc.TxStatus() != 'T' {
				t.Errorf("tx status %c after BEGIN", pc.TxStatus())
			}
			if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
				t.Fatal(err)
			}
			if pc.TxStatus() != 'I' {
				t.Errorf("tx status %c after COMMIT", pc.TxStatus())
			}
		})
	}
}

func TestPgxMultiStatement(t *testing.T) {
	ts := startServer(t, Options{}, false)
	ctx := testCtx(t)
	pc := connectPgx(t, ts, "", nil).PgConn()

	results, err := pc.Exec(ctx, "SELECT 1; SELECT * FROM things; INSERT INTO t VALUES (2);").ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 || string(results[0].Rows[0][0]) != "1" || len(results[1].Rows) != 3 ||
		string(results[1].Rows[0][2]) != "t" || string(results[1].Rows[1][3]) != "-2.25" || results[1].Rows[1][4] != nil ||
		results[2].CommandTag.String() != "INSERT 0 1" {
		t.Fatalf("results %+v", results)
	}

	results, err = pc.Exec(ctx, "SELECT 1; SELECT nosuchcol; SELECT 3").ReadAll()
	pe := pgErr(t, err, "42703")
	if pe.Position != 18 {
		t.Errorf("position %d, want 18", pe.Position)
	}
	if len(results) < 1 || string(results[0].Rows[0][0]) != "1" {
		t.Fatalf("results before the error: %+v", results)
	}

	for _, q := range []string{"", "  ", " ; ;; "} {
		results, err = pc.Exec(ctx, q).ReadAll()
		if err != nil || len(results) != 1 || len(results[0].Rows) != 0 || results[0].CommandTag.String() != "" {
			t.Fatalf("empty query %q: %v %+v", q, err, results)
		}
	}
}

func TestPgxCancel(t *testing.T) {
	ts := startServer(t, Options{}, false)
	for _, mode := range execModes {
		t.Run("mode="+mode, func(t *testing.T) {
			conn := connectPgx(t, ts, mode, func(c *pgx.ConnConfig) {
				c.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
					return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: 5 * time.Second}
				}
			})
			ctx, cancel := context.WithCancel(context.Background())
			canceller := make(chan struct{})
			go func() {
				defer close(canceller)
				select {
				case <-ts.h.sleeping:
				case <-time.After(5 * time.Second):
				}
				cancel()
			}()
			defer func() { <-canceller }()
			start := time.Now()
			_, err := conn.Exec(ctx, "SELECT pg_sleep_forever()")
			pe := pgErr(t, err, "57014")
			if pe.Message != "canceling statement due to user request" {
				t.Errorf("message %q", pe.Message)
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("cancel took %v", d)
			}
			var one int
			if err := conn.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
				t.Fatalf("after cancel: %v", err)
			}
		})
	}
}

func TestPgxConnectError(t *testing.T) {
	ts := startServer(t, Options{}, false)
	_, err := pgx.Connect(testCtx(t), ts.connString("nodb"))
	pe := pgErr(t, err, "3D000")
	if pe.Severity != "FATAL" {
		t.Errorf("severity %q", pe.Severity)
	}
}

func TestPgxTypes(t *testing.T) {
	ts := startServer(t, Options{}, false)
	for _, mode := range execModes {
		t.Run("mode="+mode, func(t *testing.T) {
			ctx := testCtx(t)
			conn := connectPgx(t, ts, mode, nil)

			rows, err := conn.Query(ctx, "SELECT * FROM typed")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for rows.Next() {
				vals, err := rows.Values()
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, fmt.Sprintf("%v", vals))
			}
			if rows.Err() != nil {
				t.Fatal(rows.Err())
			}
			want := []string{
				"[{12345 -2 false finite true} 2024-02-29 00:00:00 +0000 UTC " + typedTime.Local().String() +
					" 2024-02-29 12:34:56.789 +0000 UTC {45296500000 true} {11045000000 2 1 true} [222 173 190 239] map[a:[1 2]] 1.25 abc -3]",
				"[<nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil>]",
			}
			if !slices.Equal(got, want) {
				t.Fatalf("typed rows:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}

			var (
				n   pgtype.Numeric
				d   time.Time
				tz  time.Time
				b   []byte
				j   map[string]any
				iv  pgtype.Interval
				tsv time.Time
				f4  float32
				vc  string
			)
			err = conn.QueryRow(ctx, "SELECT $1::numeric, $2::date, $3::timestamptz, $4::bytea, $5::jsonb, $6::interval, $7::timestamp, $8::float4, $9::varchar(5)",
				"-9876.5432", time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC), typedTime, []byte{0, 1, 255},
				`{"k": "v"}`, pgtype.Interval{Microseconds: 90 * 60 * 1e6, Valid: true}, typedTime, float32(0.5), "xyz").
				Scan(&n, &d, &tz, &b, &j, &iv, &tsv, &f4, &vc)
			if err != nil {
				t.Fatal(err)
			}
			nv, _ := n.Value()
			if nv != "-9876.5432" || !d.Equal(time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC)) || !tz.Equal(typedTime) ||
				!slices.Equal(b, []byte{0, 1, 255}) || j["k"] != "v" || iv.Microseconds != 90*60*1e6 || !tsv.Equal(typedTime) ||
				f4 != 0.5 || vc != "xyz" {
				t.Fatalf("echo: %v %v %v %v %v %+v %v %v %q", nv, d, tz, b, j, iv, tsv, f4, vc)
			}
		})
	}
}
