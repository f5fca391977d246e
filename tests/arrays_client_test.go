package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Typed arrays over the wire: pgx sends int4[], int8[], text[] and
// float8[] parameters in binary (array_send) and reads them back in
// binary, the simple protocol in text; psycopg 3 sends and reads int[]
// and text[] in text (%s) and binary (%b, binary cursors). Each run's
// output is compared with the same run against the machine's PostgreSQL,
// and the RowDescription carries the array type OIDs (1007, 1009, …).

// arraysPgxRun runs the pgx steps against url and returns what it read.
func arraysPgxRun(t *testing.T, url, table string) string {
	t.Helper()
	ctx := context.Background()
	var out strings.Builder
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		conn := MustConnectMode(t, url, mode)
		id := 1
		if mode == pgx.QueryExecModeSimpleProtocol {
			id = 5
		}
		one := int32(1)
		if _, err := conn.Exec(ctx, "INSERT INTO "+table+" (id, a, b, g, c) VALUES ($1, $2, $3, $4, $5)",
			id, []*int32{&one, nil, &one}, []string{"a b", `c,"d`, "", "NULL"}, []int64{9000000000, -1}, []float64{1.5, 0.1}); err != nil {
			t.Fatalf("insert (mode %v): %v", mode, err)
		}
		if _, err := conn.Exec(ctx, "INSERT INTO "+table+" (id, a, m) VALUES ($1, $2, $3)",
			id+1, []int32{}, "{{1,2},{3,4}}"); err != nil {
			t.Fatalf("insert 2-D (mode %v): %v", mode, err)
		}
		rows, err := conn.Query(ctx, "SELECT id, a, b, g, c, m, a::text FROM "+table+" WHERE id >= $1 ORDER BY id", id)
		if err != nil {
			t.Fatal(err)
		}
		var oids []uint32
		for _, fd := range rows.FieldDescriptions() {
			oids = append(oids, fd.DataTypeOID)
		}
		fmt.Fprintf(&out, "mode %v oids %v\n", mode, oids)
		for rows.Next() {
			var (
				i    int32
				a    []*int32
				b    []string
				g    []int64
				c    []float64
				m    [][]int32
				text string
			)
			if err := rows.Scan(&i, &a, &b, &g, &c, &m, &text); err != nil {
				t.Fatalf("scan (mode %v): %v", mode, err)
			}
			var as []string
			for _, v := range a {
				if v == nil {
					as = append(as, "nil")
				} else {
					as = append(as, fmt.Sprint(*v))
				}
			}
			fmt.Fprintf(&out, "%d %v %q %v %v %v %s\n", i, as, b, g, c, m, text)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "DELETE FROM "+table); err != nil {
			t.Fatal(err)
		}
	}
	return out.String()
}

const arraysClientDDL = "CREATE TABLE arrays17_wire (id INT PRIMARY KEY, a INT[], b TEXT[], g BIGINT[], c DOUBLE PRECISION[], m INT[][])"

func TestArraysPgxRoundTrip(t *testing.T) {
	EnsurePostgres(t)
	srv := StartServer(t, Options{})
	ExecAll(t, srv.Connect(t), arraysClientDDL)
	got := arraysPgxRun(t, srv.ConnString(), "arrays17_wire")
	pgURL := FreshPostgresDB(t, "arrays17_wire_pgx")
	ExecAll(t, MustConnect(t, pgURL), arraysClientDDL)
	want := arraysPgxRun(t, pgURL, "arrays17_wire")
	if got != want {
		t.Fatalf("pgx read from Sluice:\n%s\nfrom PostgreSQL:\n%s", got, want)
	}
	if !strings.Contains(got, "oids [23 1007 1009 1016 1022 1007 25]") {
		t.Fatalf("RowDescription oids: %s", got)
	}
}

func TestArraysPsycopgRoundTrip(t *testing.T) {
	EnsurePostgres(t)
	probe := func(dsn string) string {
		t.Helper()
		out, err := exec.Command(debianPython, filepath.Join(clientDir(t), "arrays_probe.py"), dsn, "arrays17_wire").CombinedOutput()
		if err != nil {
			t.Fatalf("arrays_probe.py: %v\n%s", err, out)
		}
		return string(out)
	}
	srv := StartServer(t, Options{})
	ExecAll(t, srv.Connect(t), arraysClientDDL)
	got := probe(srv.ConnString())
	pgURL := FreshPostgresDB(t, "arrays17_wire_psycopg")
	ExecAll(t, MustConnect(t, pgURL), arraysClientDDL)
	want := probe(pgURL)
	if got != want {
		t.Fatalf("psycopg read from Sluice:\n%s\nfrom PostgreSQL:\n%s", got, want)
	}
	if !strings.Contains(got, "binary [23, 1007, 1009] [(10, [1, None, 3], ['a b', 'q\"', None]), (11, [4, 5], ['x', ''])]") {
		t.Fatalf("psycopg output: %s", got)
	}
}

// TestArraysFileSourceSink: a JSON source's arrays decode into integer[],
// text[], double precision[] and integer[][] columns, a materialized view
// computes over them, and a JSON sink writes the arrays out as JSON arrays.
func TestArraysFileSourceSink(t *testing.T) {
	root := t.TempDir()
	in, out := filepath.Join(root, "in"), filepath.Join(root, "out")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	lines := `{"id":1,"a":[1,2,null],"b":["x y","q\"",null],"c":[1.5,2],"m":[[1,2],[3,4]]}
{"id":2,"a":[],"b":[],"c":null,"m":[]}
{"id":3,"a":["7",8],"b":["z"],"c":[0.25],"m":[[5]]}
`
	if err := os.WriteFile(filepath.Join(in, "a.jsonl"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := StartServer(t, Options{ExtraArgs: []string{"--file-root", root}})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE SOURCE arrs (id BIGINT, a INT[], b TEXT[], c DOUBLE PRECISION[], m INT[][]) WITH (connector = 'file', path = 'in', pattern = '*.jsonl', poll.interval.ms = '50') FORMAT PLAIN ENCODE JSON`,
		`CREATE MATERIALIZED VIEW arrs_v AS SELECT id, a, b, c, m, cardinality(a) AS n, array_append(a, 0) AS a0 FROM arrs`,
		`CREATE SINK arrs_out FROM arrs_v WITH (connector = 'file', path = 'out') FORMAT PLAIN ENCODE JSON`)
	want := []string{
		`1 {1,2,NULL} {"x y","q\"",NULL} {1.5,2} {{1,2},{3,4}} 3 {1,2,NULL,0}`,
		`2 {} {} NULL {} 0 {0}`,
		`3 {7,8} {z} {0.25} {{5}} 2 {7,8,0}`,
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := QueryText(context.Background(), conn, "SELECT * FROM arrs_v ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		got := res.Lines()
		if strings.Join(got, "\n") == strings.Join(want, "\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("view:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	wantOut := []string{
		`{"id":1,"a":[1,2,null],"b":["x y","q\"",null],"c":[1.5,2],"m":[[1,2],[3,4]],"n":3,"a0":[1,2,null,0]}`,
		`{"id":2,"a":[],"b":[],"c":null,"m":[],"n":0,"a0":[0]}`,
		`{"id":3,"a":[7,8],"b":["z"],"c":[0.25],"m":[[5]],"n":2,"a0":[7,8,0]}`,
	}
	waitSinkLines(t, out, wantOut)
}

// TestArraysPostgresSink: a view's integer[], text[], numeric[] and
// boolean[] columns reach a PostgreSQL table as the same array types
// (binary COPY with the element oids), exactly as Sluice prints them.
func TestArraysPostgresSink(t *testing.T) {
	pgURL := FreshPostgresDB(t, "arrays17_sink")
	ctx := context.Background()
	pg := MustConnect(t, pgURL)
	srv := StartServer(t, Options{})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE TABLE t (id INT PRIMARY KEY, a INT[], b TEXT[], d NUMERIC[], e BOOLEAN[])`,
		`INSERT INTO t VALUES (1, '{1,NULL,3}', ARRAY['x y', NULL], '{1.50,-2}', '{t,f}'), (2, '{}', '{}', NULL, '{}')`,
		`CREATE MATERIALIZED VIEW tv AS SELECT id, a, b, d, e, array_append(a, id) AS a2 FROM t`,
		`CREATE SINK s FROM tv WITH (connector = 'postgres', url = '`+pgURL+`', table = 'arrays17_out', primary_key = 'id')`,
		`FLUSH`)
	want := "1 {1,NULL,3} {\"x y\",NULL} {1.50,-2} {t,f} {1,NULL,3,1} integer[] boolean[]\n2 {} {} NULL {} {2} integer[] boolean[]"
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := QueryText(ctx, pg, "SELECT id, a, b, d, e, a2, pg_typeof(a)::text, pg_typeof(e)::text FROM arrays17_out ORDER BY id")
		got := ""
		if err == nil {
			got = strings.Join(res.Lines(), "\n")
		}
		if got == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("PostgreSQL table (err %v):\n%s\nwant:\n%s", err, got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestArrayTypesPgxRoundTrip: real[], date[], time[], timestamp[],
// interval[], jsonb[], varchar[], uuid[] and bytea[] parameters sent by
// pgx in binary (prepared statements) and in text (simple protocol), read
// back in binary and as text; the output must equal the same run against
// PostgreSQL, and the RowDescription must carry the array type OIDs.
func TestArrayTypesPgxRoundTrip(t *testing.T) {
	EnsurePostgres(t)
	const ddl = "CREATE TABLE arrtypes_wire (id INT PRIMARY KEY, r REAL[], d DATE[], tm TIME[], ts TIMESTAMP[], iv INTERVAL[], j JSONB[], v VARCHAR(4)[], u UUID[], b BYTEA[])"
	run := func(url string) string {
		t.Helper()
		ctx := context.Background()
		var out strings.Builder
		day := time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)
		at := time.Date(2024, 1, 2, 3, 4, 5, 250000000, time.UTC)
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
			conn := MustConnectMode(t, url, mode)
			id := 1
			if mode == pgx.QueryExecModeSimpleProtocol {
				id = 5
			}
			u := [16]byte{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}
			args := []any{id, []float32{1.25, -0.5}, []time.Time{day, day.AddDate(0, 0, 1)},
				[]pgtype.Time{{Microseconds: 36000_000000 + 1500, Valid: true}, {}},
				[]time.Time{at}, []pgtype.Interval{{Months: 14, Days: 3, Microseconds: 3600_000000, Valid: true}, {Microseconds: -1, Valid: true}},
				[]map[string]any{{"k": 1.5}, {"a": []any{"x", nil}}}, []string{"ab", "c d", ""},
				[][16]byte{u}, [][]byte{{0x01, 0xff}, {}}}
			if mode == pgx.QueryExecModeSimpleProtocol {
				// The same values as text literals (pgx cannot inline
				// the Go values of every type).
				args = []any{id, "{1.25,-0.5}", "{2024-02-29,2024-03-01}", "{10:00:00.0015,NULL}",
					`{"2024-01-02 03:04:05.25"}`, `{"1 year 2 mons 3 days 01:00:00",-00:00:00.000001}`,
					`{"{\"k\": 1.5}","{\"a\": [\"x\", null]}"}`, `{ab,"c d",""}`,
					"{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}", `{"\\x01ff","\\x"}`}
			}
			if _, err := conn.Exec(ctx, "INSERT INTO arrtypes_wire VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)", args...); err != nil {
				t.Fatalf("insert (mode %v): %v", mode, err)
			}
			if _, err := conn.Exec(ctx, "INSERT INTO arrtypes_wire (id, v) VALUES ($1, $2)", id+1, []string{"abcde"}); err == nil {
				t.Fatalf("mode %v: a 5-character element in a varchar(4)[] was accepted", mode)
			} else {
				fmt.Fprintf(&out, "mode %v: long varchar element: %v\n", mode, err)
			}
			rows, err := conn.Query(ctx, "SELECT id, r, d, tm, ts, iv, j, v, u, b, r::text, d::text, iv::text, j::text, b::text FROM arrtypes_wire WHERE id >= $1 ORDER BY id", id)
			if err != nil {
				t.Fatal(err)
			}
			var oids []uint32
			for _, fd := range rows.FieldDescriptions() {
				oids = append(oids, fd.DataTypeOID)
			}
			fmt.Fprintf(&out, "mode %v oids %v\n", mode, oids)
			for rows.Next() {
				var (
					i                  int32
					r                  []float32
					d, ts              []time.Time
					tm                 []pgtype.Time
					iv                 []pgtype.Interval
					j                  []map[string]any
					v                  []string
					uu                 [][16]byte
					b                  [][]byte
					rt, dt, it, jt, bt string
				)
				if err := rows.Scan(&i, &r, &d, &tm, &ts, &iv, &j, &v, &uu, &b, &rt, &dt, &it, &jt, &bt); err != nil {
					t.Fatalf("scan (mode %v): %v", mode, err)
				}
				fmt.Fprintf(&out, "%d %v %v %v %v %v %v %q %x %x | %s %s %s %s %s\n", i, r, d, tm, ts, iv, j, v, uu, b, rt, dt, it, jt, bt)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Exec(ctx, "DELETE FROM arrtypes_wire"); err != nil {
				t.Fatal(err)
			}
		}
		return out.String()
	}
	srv := StartServer(t, Options{})
	ExecAll(t, srv.Connect(t), ddl)
	got := run(srv.ConnString())
	pgURL := FreshPostgresDB(t, "arrtypes_wire_pgx")
	ExecAll(t, MustConnect(t, pgURL), ddl)
	want := run(pgURL)
	if got != want {
		t.Fatalf("pgx read from Sluice:\n%s\nfrom PostgreSQL:\n%s", got, want)
	}
	if !strings.Contains(got, "oids [23 1021 1182 1183 1115 1187 3807 1015 2951 1001 25 25 25 25 25]") {
		t.Fatalf("RowDescription oids: %s", got)
	}
	t.Logf("\n%s", got)
}
