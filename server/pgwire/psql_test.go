package pgwire

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

const psqlPath = "/usr/bin/psql"

func runPsql(t *testing.T, ts *testServer, args ...string) string {
	t.Helper()
	if _, err := os.Stat(psqlPath); err != nil {
		t.Skip("psql not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	args = append([]string{"-X", "-h", "127.0.0.1", "-p", strconv.Itoa(ts.port), "-U", "psqluser", "-d", "db"}, args...)
	cmd := exec.CommandContext(ctx, psqlPath, args...)
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=5", "PGSSLMODE=prefer", "PGAPPNAME=psqltest",
		"PGPASSWORD=", "PGSERVICEFILE=/nonexistent", "PAGER=", "PSQL_PAGER=", "LC_ALL=C.UTF-8")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("psql %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func TestPsql(t *testing.T) {
	ts := startServer(t, Options{}, false)

	if got, want := runPsql(t, ts, "-c", "SELECT 1"), " ?column? \n----------\n        1\n(1 row)\n\n"; got != want {
		t.Errorf("SELECT 1:\n%q\nwant\n%q", got, want)
	}
	if info := ts.h.lastInfo(); info.User != "psqluser" || info.ApplicationName != "psqltest" {
		t.Errorf("startup info %+v", info)
	}

	got := runPsql(t, ts, "-c", "SELECT 1 AS a; SELECT * FROM things; INSERT INTO t VALUES (1)")
	want := ` a 
---
 1
(1 row)

 id |   name    | active | score | note 
----+-----------+--------+-------+------
  1 | alpha     | t      |   1.5 | x
  2 | beta      | f      | -2.25 | 
  3 | gamma 'q' | t      |     0 | ünï
(3 rows)

INSERT 0 1
`
	if got != want {
		t.Errorf("multi-statement:\n%s\nwant\n%s", got, want)
	}

	got = runPsql(t, ts, "-A", "-t", "-c", "SELECT * FROM things", "-c", "SELECT 'two'; SELECT 'three'")
	if want := "1|alpha|t|1.5|x\n2|beta|f|-2.25|\n3|gamma 'q'|t|0|ünï\ntwo\nthree\n"; got != want {
		t.Errorf("unaligned:\n%q\nwant\n%q", got, want)
	}

	got = runPsql(t, ts, "-A", "-t", "-c", "SELECT * FROM typed")
	if want := `123.45|2024-02-29|2024-02-29 12:34:56.789+00|2024-02-29 12:34:56.789|12:34:56.5|1 mon 2 days 03:04:05|\xdeadbeef|{"a": [1, 2]}|1.25|abc|-3
||||||||||
`; got != want {
		t.Errorf("typed:\n%q\nwant\n%q", got, want)
	}
}

func TestPsqlError(t *testing.T) {
	ts := startServer(t, Options{}, false)
	if _, err := os.Stat(psqlPath); err != nil {
		t.Skip("psql not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, psqlPath, "-X", "-h", "127.0.0.1", "-p", strconv.Itoa(ts.port), "-U", "u", "-d", "db",
		"-c", "SELECT 1 AS a; SELECT nosuchcol")
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=5", "LC_ALL=C.UTF-8")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("psql succeeded:\n%s", out)
	}
	want := ` a 
---
 1
(1 row)

ERROR:  column "nosuchcol" does not exist
LINE 1: SELECT 1 AS a; SELECT nosuchcol
                              ^
HINT:  There is no such column.
`
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}
