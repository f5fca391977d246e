package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// Changing a view in place (issue 16 item 3): ALTER MATERIALIZED VIEW …
// AS and CREATE OR REPLACE MATERIALIZED VIEW keep the state the old and
// the new plan share, and dependents see only the rows that changed.

const amvJoinAgg = `SELECT b.name, count(*) AS n, sum(a.v) AS total FROM a JOIN b ON a.k = b.k GROUP BY b.name`

// amvRows returns the sorted rows of a query, one line per row.
func amvRows(t *testing.T, srv *Server, q string) []string {
	t.Helper()
	conn := srv.Connect(t)
	defer conn.Close(context.Background())
	res, err := QueryText(context.Background(), conn, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	lines := res.Lines()
	sort.Strings(lines)
	return lines
}

// amvEqual checks that view holds what query computes. It FLUSHes first:
// the reads use new connections, which do not wait for the epoch of
// another session's acknowledged write. It still reads both again until
// they agree, for at most 10 s, since a change of the view completes at
// the first barrier after the statement.
func amvEqual(t *testing.T, srv *Server, view, query string) []string {
	t.Helper()
	amvRows(t, srv, "FLUSH")
	got := amvRows(t, srv, "SELECT * FROM "+view)
	want := amvRows(t, srv, query)
	for deadline := time.Now().Add(10 * time.Second); strings.Join(got, "\n") != strings.Join(want, "\n") && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		got = amvRows(t, srv, "SELECT * FROM "+view)
		want = amvRows(t, srv, query)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\n%s\nwant (recomputed):\n%s", view, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	return got
}

// amvSinkLines returns the lines the file sink wrote, in file order.
func amvSinkLines(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "part-*"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	var out []string
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if l != "" {
				out = append(out, l)
			}
		}
	}
	return out
}

// amvWaitSink waits until the file sink has written n lines.
func amvWaitSink(t *testing.T, dir string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		lines := amvSinkLines(t, dir)
		if len(lines) >= n || time.Now().After(deadline) {
			return lines
		}
		time.Sleep(50 * time.Millisecond) // polling, bounded by deadline
	}
}

func TestAlterMViewKeepsStateAndSendsOnlyChanges(t *testing.T) {
	fileRoot := t.TempDir()
	sinkDir := filepath.Join(fileRoot, "out")
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond, ExtraArgs: []string{"--file-root", fileRoot}})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE TABLE a (id BIGINT PRIMARY KEY, k BIGINT, v BIGINT)`,
		`CREATE TABLE b (k BIGINT PRIMARY KEY, name TEXT)`,
		`INSERT INTO b VALUES (1, 'x'), (2, 'y'), (3, 'z')`,
		`INSERT INTO a SELECT i, i % 3 + 1, i FROM generate_series(1, 300) AS i`,
		`CREATE MATERIALIZED VIEW agg AS `+amvJoinAgg,
		`CREATE MATERIALIZED VIEW dep AS SELECT name, total FROM agg WHERE n > 1`,
		`CREATE SINK out FROM agg WITH (connector = 'file', path = '`+sinkDir+`', primary_key = 'name', delivery = 'EXACTLY_ONCE') FORMAT DEBEZIUM ENCODE JSON`,
	)
	before := amvEqual(t, srv, "agg", amvJoinAgg)
	if len(before) != 3 {
		t.Fatalf("agg has %d rows, want 3", len(before))
	}
	initial := amvWaitSink(t, sinkDir, 3)
	if len(initial) != 3 {
		t.Fatalf("the sink wrote %d lines, want 3:\n%s", len(initial), strings.Join(initial, "\n"))
	}

	// A changed projection above the join and the aggregation: only the
	// row of 'y' changes.
	changed := `SELECT b.name, count(*) AS n, CASE WHEN b.name = 'y' THEN sum(a.v) * 10 ELSE sum(a.v) END AS total FROM a JOIN b ON a.k = b.k GROUP BY b.name`
	ExecAll(t, conn, `ALTER MATERIALIZED VIEW agg AS `+changed)
	after := amvEqual(t, srv, "agg", changed)
	amvEqual(t, srv, "dep", `SELECT name, total FROM (`+changed+`) s WHERE n > 1`)
	lines := amvWaitSink(t, sinkDir, 4)
	time.Sleep(300 * time.Millisecond) // three more checkpoints: nothing else may come
	lines = amvSinkLines(t, sinkDir)
	t.Logf("before %v after %v; sink:\n%s", before, after, strings.Join(lines, "\n"))
	if len(lines) != 4 || !strings.Contains(lines[3], `"y"`) {
		t.Fatalf("after ALTER the sink wrote %d lines, want 4 (one update of y):\n%s", len(lines), strings.Join(lines, "\n"))
	}

	// The view keeps running from the kept state.
	ExecAll(t, conn, `INSERT INTO a VALUES (1001, 2, 5), (1002, 1, 7)`, `DELETE FROM a WHERE id = 3`)
	amvEqual(t, srv, "agg", changed)
	amvEqual(t, srv, "dep", `SELECT name, total FROM (`+changed+`) s WHERE n > 1`)

	// A changed filter below the aggregation rebuilds it.
	filtered := `SELECT b.name, count(*) AS n, sum(a.v) AS total FROM a JOIN b ON a.k = b.k WHERE a.v % 2 = 0 GROUP BY b.name`
	ExecAll(t, conn, `CREATE OR REPLACE MATERIALIZED VIEW agg AS `+filtered)
	amvEqual(t, srv, "agg", filtered)
	amvEqual(t, srv, "dep", `SELECT name, total FROM (`+filtered+`) s WHERE n > 1`)
	ExecAll(t, conn, `INSERT INTO a VALUES (1003, 3, 8)`)
	amvEqual(t, srv, "agg", filtered)

	// The columns a dependent reads may not change.
	_, err := conn.Exec(context.Background(), `ALTER MATERIALIZED VIEW agg AS SELECT b.name, count(*) AS cnt FROM a JOIN b ON a.k = b.k GROUP BY b.name`)
	if PgCode(err) != "0A000" {
		t.Fatalf("changing the columns under a dependent: %v, want 0A000", err)
	}
	if _, err := conn.Exec(context.Background(), `ALTER MATERIALIZED VIEW nope AS SELECT 1`); PgCode(err) != "42P01" {
		t.Fatalf("ALTER of a missing view: %v, want 42P01", err)
	}
	show := amvRows(t, srv, `SHOW CREATE MATERIALIZED VIEW agg`)
	if !strings.Contains(strings.Join(show, " "), "a.v % 2 = 0") {
		t.Fatalf("SHOW CREATE after ALTER: %v", show)
	}

	// After a restart the view runs from its new stored plan.
	_ = conn.Close(context.Background())
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	amvEqual(t, srv, "agg", filtered)
	conn = srv.Connect(t)
	ExecAll(t, conn, `INSERT INTO a VALUES (1004, 1, 100)`)
	amvEqual(t, srv, "agg", filtered)
	amvEqual(t, srv, "dep", `SELECT name, total FROM (`+filtered+`) s WHERE n > 1`)
}

// TestAlterMViewKill9 kills the server at moments during ALTER
// MATERIALIZED VIEW: after the restart the view is either the old one or
// the new one, whole (its rows are what its stored query computes), and it
// keeps running.
func TestAlterMViewKill9(t *testing.T) {
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE TABLE a (id BIGINT PRIMARY KEY, k BIGINT, v BIGINT)`,
		`CREATE TABLE b (k BIGINT PRIMARY KEY, name TEXT)`,
		`INSERT INTO b VALUES (1, 'x'), (2, 'y'), (3, 'z')`,
		`INSERT INTO a SELECT i, i % 3 + 1, i FROM generate_series(1, 3000) AS i`,
		`CREATE MATERIALIZED VIEW agg AS `+amvJoinAgg,
		`CREATE MATERIALIZED VIEW dep AS SELECT name, total FROM agg`,
	)
	_ = conn.Close(context.Background())
	queries := []string{
		amvJoinAgg,
		`SELECT b.name, count(*) AS n, sum(a.v) * 7 AS total FROM a JOIN b ON a.k = b.k GROUP BY b.name`,
		`SELECT b.name, count(*) AS n, sum(a.v) AS total FROM a JOIN b ON a.k = b.k WHERE a.v % 3 = 0 GROUP BY b.name`,
	}
	delays := []time.Duration{0, 10 * time.Millisecond, 40 * time.Millisecond, 90 * time.Millisecond, 150 * time.Millisecond, 250 * time.Millisecond}
	outcomes := map[string]int{}
	for r, d := range delays {
		target := queries[(r+1)%len(queries)]
		conn := srv.Connect(t)
		done := make(chan error, 1)
		go func() {
			_, err := conn.Exec(context.Background(), `ALTER MATERIALIZED VIEW agg AS `+target)
			done <- err
		}()
		time.Sleep(d) // a moment during the ALTER
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		<-done
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		show := strings.Join(amvRows(t, srv, `SHOW CREATE MATERIALIZED VIEW agg`), " ")
		which := -1
		for i, q := range queries {
			if strings.Contains(show, q) {
				which = i
			}
		}
		if which < 0 {
			t.Fatalf("round %d: SHOW CREATE gives %q, none of the queries", r, show)
		}
		got := amvEqual(t, srv, "agg", queries[which])
		amvEqual(t, srv, "dep", `SELECT name, total FROM (`+queries[which]+`) s`)
		if queries[which] == target {
			outcomes["new"]++
		} else {
			outcomes["old"]++
		}
		t.Logf("round %d (kill after %v): the %s view, %v", r, d, map[bool]string{true: "new", false: "old"}[queries[which] == target], got)
		// It keeps running.
		c := srv.Connect(t)
		ExecAll(t, c, fmt.Sprintf(`INSERT INTO a VALUES (%d, %d, %d)`, 10000+r, r%3+1, r))
		_ = c.Close(context.Background())
		amvEqual(t, srv, "agg", queries[which])
		// Make the next round start from the other query.
		if queries[which] != target {
			c := srv.Connect(t)
			ExecAll(t, c, `ALTER MATERIALIZED VIEW agg AS `+target)
			_ = c.Close(context.Background())
			amvEqual(t, srv, "agg", target)
		}
	}
	t.Logf("outcomes: %v", outcomes)
}

// TestAlterMViewStreamKeepsFlowing: after changes of a view that rebuild
// part of it under a dependent view and an EXACTLY_ONCE sink, every later
// epoch still commits. (The old plan's Materialize input stayed attached
// to the view's stream, which the new plan's Materialize writes: once its
// 16 slots filled, no barrier passed and FLUSH waited forever.)
func TestAlterMViewStreamKeepsFlowing(t *testing.T) {
	fileRoot := t.TempDir()
	sinkDir := filepath.Join(fileRoot, "out")
	srv := StartServer(t, Options{CheckpointInterval: 50 * time.Millisecond, ExtraArgs: []string{"--file-root", fileRoot}})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE TABLE a (id BIGINT PRIMARY KEY, k BIGINT, v BIGINT)`,
		`CREATE TABLE b (k BIGINT PRIMARY KEY, name TEXT)`,
		`INSERT INTO b VALUES (1, 'x'), (2, 'y'), (3, 'z')`,
		`INSERT INTO a SELECT i, i % 3 + 1, i FROM generate_series(1, 300) AS i`,
		`CREATE MATERIALIZED VIEW agg AS `+amvJoinAgg,
		`CREATE MATERIALIZED VIEW dep AS SELECT name, total FROM agg WHERE n > 1`,
		`CREATE SINK out FROM agg WITH (connector = 'file', path = '`+sinkDir+`', primary_key = 'name', delivery = 'EXACTLY_ONCE') FORMAT DEBEZIUM ENCODE JSON`,
	)
	changed := `SELECT b.name, count(*) AS n, sum(a.v) * 2 AS total FROM a JOIN b ON a.k = b.k GROUP BY b.name`
	filtered := `SELECT b.name, count(*) AS n, sum(a.v) AS total FROM a JOIN b ON a.k = b.k WHERE a.v % 2 = 0 GROUP BY b.name`
	ExecAll(t, conn, `ALTER MATERIALIZED VIEW agg AS `+changed)
	amvEqual(t, srv, "agg", changed)
	ExecAll(t, conn, `CREATE OR REPLACE MATERIALIZED VIEW agg AS `+filtered)
	amvEqual(t, srv, "agg", filtered)
	var slowest time.Duration
	for i := 0; i < 20; i++ {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := conn.Exec(ctx, fmt.Sprintf(`INSERT INTO a VALUES (%d, %d, %d)`, 2000+i, i%3+1, 2*i))
		if err == nil {
			_, err = conn.Exec(ctx, `FLUSH`)
		}
		cancel()
		if err != nil {
			t.Fatalf("round %d: INSERT + FLUSH: %v after %v", i, err, time.Since(start))
		}
		slowest = max(slowest, time.Since(start))
		amvEqual(t, srv, "agg", filtered)
	}
	amvEqual(t, srv, "dep", `SELECT name, total FROM (`+filtered+`) s WHERE n > 1`)
	t.Logf("20 rounds of INSERT + FLUSH after the rebuild, the slowest %v", slowest)
}
