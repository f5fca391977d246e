package tests

// psql's session of the client matrix: a script per step through psql 15
// (simple query protocol, text results), its describe family (\d, \dt, \dm
// or \dv, \di, \dn, \df), \copy both ways, \watch, a transaction that
// commits and one that rolls back, and the SQLSTATEs psql prints with
// VERBOSITY verbose.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

var psqlCase = clientCase{
	name:    "psql",
	steps:   []string{"ddl", "describe", "dml", "read_your_writes", "commit", "view", "rollback", "errors", "failed_tx", "df", "copy_from", "copy_to", "watch"},
	pending: map[string]string{},
	run:     runPsqlSession,
}

// TestClientPsql runs psql's session.
func TestClientPsql(t *testing.T) { runClientCase(t, psqlCase) }

// psqlRun runs script through psql (unaligned, tuples only unless the
// script says otherwise, stopping at the first error) and returns its
// stdout; an error carries stderr.
func psqlRun(tg clientTarget, script string, extra ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	args := append([]string{"-X", "-q", "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose"}, extra...)
	cmd := exec.CommandContext(ctx, "psql", append(args, "-f", "-")...)
	cmd.Env = tg.env()
	cmd.Stdin = strings.NewReader(script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("psql: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// psqlExpect runs script with -At and compares its output lines.
func psqlExpect(tg clientTarget, script string, want ...string) error {
	out, err := psqlRun(tg, script, "-At")
	if err != nil {
		return err
	}
	got := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if out == "" {
		got = nil
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("output %q, want %q (script %q)", got, want, strings.TrimSpace(script))
	}
	return nil
}

// psqlSync is the FLUSH that makes writes visible on Sluice (see
// clients_test.go).
func psqlSync(tg clientTarget) string {
	if tg.sluice() {
		return "FLUSH;\n"
	}
	return ""
}

func runPsqlSession(t *testing.T, tg clientTarget) []stepResult {
	mustHave(t, "psql", "postgresql-client")
	r := &stepRunner{}
	sync := psqlSync(tg)
	view := "VIEW" // Sluice's views are materialized (streaming)
	if tg.sluice() {
		view = "MATERIALIZED VIEW"
	}
	r.step("ddl", func() error {
		_, err := psqlRun(tg, `CREATE TABLE items (id bigint PRIMARY KEY, name text NOT NULL, qty int, price numeric(10,2));
CREATE TABLE notes (id int PRIMARY KEY, body text);
CREATE `+view+` items_summary AS SELECT count(*) AS n, sum(qty) AS total_qty FROM items;`)
		return err
	})
	r.step("describe", func() error {
		out, err := psqlRun(tg, `\d items`)
		if err != nil {
			return err
		}
		want := `                  Table "public.items"
 Column |     Type      | Collation | Nullable | Default 
--------+---------------+-----------+----------+---------
 id     | bigint        |           | not null | 
 name   | text          |           | not null | 
 qty    | integer       |           |          | 
 price  | numeric(10,2) |           |          | 
Indexes:
    "items_pkey" PRIMARY KEY, btree (id)

`
		if out != want {
			return fmt.Errorf(`\d items: got %q, want %q`, out, want)
		}
		// \dn: the schema (its owner is pg_database_owner on PostgreSQL 15,
		// the user on Sluice: not checked).
		if out, err := psqlRun(tg, `\dn`, "-At"); err != nil || !strings.HasPrefix(out, "public|") {
			return fmt.Errorf(`\dn: %q, %v`, out, err)
		}
		kind, meta := "view", `\dv`
		if tg.sluice() {
			kind, meta = "materialized view", `\dm`
		}
		for _, c := range []struct{ script, want string }{
			{`\dt`, "public|items|table|" + tg.user + "\npublic|notes|table|" + tg.user},
			{meta, "public|items_summary|" + kind + "|" + tg.user},
			{`\di`, "public|items_pkey|index|" + tg.user + "|items\npublic|notes_pkey|index|" + tg.user + "|notes"},
			{`\d items_summary`, "n|bigint|||\ntotal_qty|bigint|||"},
		} {
			if err := psqlExpect(tg, c.script, strings.Split(c.want, "\n")...); err != nil {
				return err
			}
		}
		return nil
	})
	r.step("dml", func() error {
		return psqlExpect(tg, `INSERT INTO items VALUES (1, 'apple', 10, 1.25), (2, 'pear', 20, 2.50), (3, 'fig', 30, 3.75);
\set id 2
\set fruit fig
UPDATE items SET qty = qty + 5 WHERE id = :id;
DELETE FROM items WHERE name = :'fruit';
`+sync+`SELECT id, name, qty, price FROM items ORDER BY id;`,
			"1|apple|10|1.25", "2|pear|25|2.50")
	})
	r.step("read_your_writes", func() error {
		return psqlExpect(tg, `INSERT INTO notes VALUES (1, 'first');
SELECT body FROM notes WHERE id = 1;`, "first")
	})
	r.step("commit", func() error {
		return psqlExpect(tg, `BEGIN;
INSERT INTO items VALUES (4, 'plum', 40, 4.00);
INSERT INTO items VALUES (5, 'lime', 50, 5.00);
COMMIT;
`+sync+`SELECT id FROM items ORDER BY id;`, "1", "2", "4", "5")
	})
	r.step("view", func() error {
		return psqlExpect(tg, sync+`SELECT n, total_qty FROM items_summary;`, "4|125")
	})
	r.step("rollback", func() error {
		return psqlExpect(tg, `BEGIN;
INSERT INTO items VALUES (6, 'date', 60, 6.00);
UPDATE items SET qty = 0 WHERE id = 1;
ROLLBACK;
`+sync+`SELECT id, qty FROM items ORDER BY id;`, "1|10", "2|25", "4|40", "5|50")
	})
	r.step("errors", func() error {
		for _, e := range clientErrors {
			_, err := psqlRun(tg, e[0]+";")
			if err == nil || !strings.Contains(err.Error(), "ERROR:  "+e[1]+":") {
				return fmt.Errorf("%s: got %v, want ERROR:  %s:", e[0], err, e[1])
			}
		}
		return nil
	})
	r.step("failed_tx", func() error {
		out, err := psqlRun(tg, `\set ON_ERROR_STOP 0
BEGIN;
SELECT * FROM no_such_table;
SELECT 1;
ROLLBACK;
SELECT 2;`, "-At")
		if err != nil {
			return err
		}
		if out != "2\n" {
			return fmt.Errorf("output %q, want only 2 (SELECT 1 must fail with 25P02)", out)
		}
		_, err = psqlRun(tg, "\\set ON_ERROR_STOP 0\nBEGIN;\nSELECT * FROM no_such_table;\n\\set ON_ERROR_STOP 1\nSELECT 1;")
		if err == nil {
			return fmt.Errorf("SELECT after an error in a block succeeded")
		}
		if !strings.Contains(err.Error(), "ERROR:  25P02:") {
			return fmt.Errorf("SELECT after an error in a block: %v, want 25P02", err)
		}
		return nil
	})
	r.step("df", func() error {
		out, err := psqlRun(tg, `\df`)
		if err != nil {
			return err
		}
		if !strings.Contains(out, "List of functions") || !strings.Contains(out, "(0 rows)") {
			return fmt.Errorf(`\df: %q`, out)
		}
		return nil
	})
	dir := t.TempDir()
	r.step("copy_from", func() error {
		in := filepath.Join(dir, "in.csv")
		if err := os.WriteFile(in, []byte("id,name,qty,price\n100,\"comma, quoted\",7,7.70\n101,\"\",8,\n"), 0o644); err != nil {
			return err
		}
		return psqlExpect(tg, `\copy items FROM '`+in+`' WITH (FORMAT csv, HEADER)
`+sync+`SELECT id, name, qty, price IS NULL FROM items WHERE id >= 100 ORDER BY id;`, "100|comma, quoted|7|f", "101||8|t")
	})
	r.step("copy_to", func() error {
		out := filepath.Join(dir, "out.csv")
		if _, err := psqlRun(tg, `\copy (SELECT id, name, qty, price FROM items WHERE id IN (2, 4, 5) ORDER BY id) TO '`+out+`' WITH (FORMAT csv, HEADER)`); err != nil {
			return err
		}
		got, err := os.ReadFile(out)
		if err != nil {
			return err
		}
		return expectEq(string(got), "id,name,qty,price\n2,pear,25,2.50\n4,plum,40,4.00\n5,lime,50,5.00\n", `\copy TO`)
	})
	r.step("watch", func() error { return psqlWatch(tg) })
	return r.results
}

// psqlWatch runs `SELECT … \watch 0.1` (psql 15 has no iteration count: it
// stops at SIGINT), reads three iterations, interrupts it and checks that it
// exits cleanly.
func psqlWatch(tg clientTarget) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Without ON_ERROR_STOP: the SIGINT may land while psql still holds
	// the query's cancel handle (on PostgreSQL too), and the cancelled
	// query then ends the loop with an error rather than the script.
	cmd := exec.CommandContext(ctx, "psql", "-X", "-At", "-v", "VERBOSITY=verbose")
	cmd.Env = tg.env()
	cmd.Stdin = strings.NewReader("SELECT count(*) FROM items WHERE id < 6 \\watch 0.1\n")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(stdout)
	var counts []string
	for len(counts) < 3 && sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.Contains(line, "(every 0.1s)") {
			continue
		}
		counts = append(counts, line)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	_, _ = io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	if len(counts) < 3 {
		return fmt.Errorf(`\watch printed %q before ending (%v): %s`, counts, err, stderr.String())
	}
	// psql exits with 0 when the SIGINT cuts its sleep short, and with 3
	// (EXIT_USER: "you stopped a script with Ctrl-C") when it lands while
	// a query runs: both are a user stopping \watch.
	var exitErr *exec.ExitError
	if err != nil && !(errors.As(err, &exitErr) && exitErr.ExitCode() == 3) {
		return fmt.Errorf(`psql after SIGINT during \watch: %v: %s`, err, stderr.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if line != "" && line != "Cancel request sent" && !strings.Contains(line, "ERROR:  57014: canceling statement due to user request") &&
			!strings.HasPrefix(line, "LOCATION:") {
			return fmt.Errorf(`psql after SIGINT during \watch: %s`, stderr.String())
		}
	}
	return expectEq(counts, []string{"4", "4", "4"}, `\watch iterations`)
}
