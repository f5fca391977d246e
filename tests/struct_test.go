package tests

import (
	"context"
	"strings"
	"testing"
)

// TestRowViewRestart: a view's ROW(…) column keeps its fields across a
// restart (record shapes are interned per process, so the catalog stores
// them): (r).f2 reads the same field, of the same type, before and after,
// even when the new process interns other shapes first.
func TestRowViewRestart(t *testing.T) {
	srv := StartServer(t, Options{})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE TABLE tr (a INT PRIMARY KEY, b TEXT)`,
		`INSERT INTO tr VALUES (1, 'x'), (2, NULL)`,
		`CREATE MATERIALIZED VIEW tr_v AS SELECT a, ROW(a, b) AS r FROM tr`,
		`CREATE MATERIALIZED VIEW tr_g AS SELECT ROW(b, a) AS k, count(*) AS n FROM tr GROUP BY ROW(b, a)`,
		`FLUSH`)
	query := func(sql, want string) {
		t.Helper()
		res, err := QueryText(context.Background(), conn, sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if got := strings.Join(res.Lines(), "|"); got != want {
			t.Fatalf("%s: %q, want %q", sql, got, want)
		}
	}
	query(`SELECT (r).f2, (r).f1 + 1, r FROM tr_v ORDER BY a`, "x 2 (1,x)|NULL 3 (2,)")
	conn.Close(context.Background())
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	conn = srv.Connect(t)
	// Other shapes interned first in the new process.
	query(`SELECT ROW(1.5, 'q', 3), ROW(true, 1)`, "(1.5,q,3) (t,1)")
	query(`SELECT (r).f2, (r).f1 + 1, r FROM tr_v ORDER BY a`, "x 2 (1,x)|NULL 3 (2,)")
	ExecAll(t, conn, `INSERT INTO tr VALUES (3, 'z')`, `DELETE FROM tr WHERE a = 1`, `FLUSH`)
	query(`SELECT r::text FROM tr_v ORDER BY a`, "(2,)|(3,z)")
	query(`SELECT (k).f1, (k).f2, n FROM tr_g ORDER BY (k).f2`, "NULL 2 1|z 3 1")
}
