package tests

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
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
