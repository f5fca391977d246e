package tests

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

// TestCursorPsycopg2 runs psycopg2 named cursors (server-side cursors:
// DECLARE, FETCH FORWARD n, MOVE, CLOSE) with the script in
// testdata/clients, against Sluice and against the machine's PostgreSQL:
// both must print the same.
func TestCursorPsycopg2(t *testing.T) {
	const python = "/usr/bin/python3" // Debian's, with python3-psycopg2
	if err := exec.Command(python, "-c", "import psycopg2").Run(); err != nil {
		t.Skipf("psycopg2 is not installed for %s: %v", python, err)
	}
	setup := []string{
		`CREATE TABLE nc (id BIGINT PRIMARY KEY, v TEXT)`,
		`INSERT INTO nc SELECT g, 'v' || g FROM generate_series(1, 2000) AS g`,
	}
	run := func(dsn string) string {
		out, err := exec.Command(python, "testdata/clients/psycopg2_named_cursor.py", dsn).CombinedOutput()
		if err != nil {
			t.Fatalf("psycopg2 on %s: %v\n%s", dsn, err, out)
		}
		return string(out)
	}

	pgURL := FreshPostgresDB(t, "sluice_cursor_psycopg2")
	pg := MustConnect(t, pgURL)
	ExecAll(t, pg, setup...)
	pg.Close(context.Background())
	checkPsycopg2(t, "PostgreSQL", run(pgURL))

	s := StartServer(t, Options{})
	conn := s.ConnectSimple(t)
	ExecAll(t, conn, append(setup, `FLUSH`)...)
	conn.Close(context.Background())
	checkPsycopg2(t, "Sluice", run("host="+s.Host()+" port="+s.Port()+" user=sluice dbname=sluice"))
}

func checkPsycopg2(t *testing.T, server, out string) {
	t.Helper()
	want := strings.Join([]string{
		"first (1, 'v1')",
		"many [(2, 'v2'), (3, 'v3'), (4, 'v4')]",
		"iterated 2000 True",
		"description ['id', 'v']",
		"fetchmany [1, 2, 3, 4, 5]",
		"after scroll -3 3",
		"after absolute 10 11",
		"rest 9",
		"no scroll 55000",
		"held after commit [1996, 1997, 1998, 1999, 2000]",
		"autocommit 25P01 DECLARE CURSOR can only be used in transaction blocks",
		"hold in autocommit [(1,)] FETCH 1",
		"CLOSE CURSOR",
	}, "\n") + "\n"
	if out != want {
		t.Errorf("psycopg2 named cursors on %s:\n got: %s\nwant: %s", server, out, want)
	}
}
