package tests

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// ALTER TABLE … ADD COLUMN while materialized views and sinks read the
// table (issue 16 item 3): the table is widened in place; the jobs
// planned before keep reading the columns they were planned with, new
// views see the new column, and nothing changes for the sinks.

func TestAlterTableAddColumnUnderViews(t *testing.T) {
	fileRoot := t.TempDir()
	sinkDir := filepath.Join(fileRoot, "out")
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond, ExtraArgs: []string{"--file-root", fileRoot}})
	conn := srv.Connect(t)
	const (
		aggQ = `SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g`
		depQ = `SELECT g, s FROM (` + aggQ + `) x WHERE n > 10`
		evnQ = `SELECT id, g, v FROM t WHERE v % 2 = 0`
		newQ = `SELECT g, sum(w) AS sw, count(*) AS n FROM t GROUP BY g`
	)
	ExecAll(t, conn,
		`CREATE TABLE t (id BIGINT PRIMARY KEY, g TEXT, v BIGINT)`,
		`INSERT INTO t SELECT i, 'g' || (i % 4), i FROM generate_series(1, 100) AS i`,
		`CREATE MATERIALIZED VIEW agg AS `+aggQ,
		`CREATE MATERIALIZED VIEW dep AS SELECT g, s FROM agg WHERE n > 10`,
		// SELECT * keeps the columns it had when the view was created.
		`CREATE MATERIALIZED VIEW evn AS SELECT * FROM t WHERE v % 2 = 0`,
		`CREATE VIEW pv AS SELECT * FROM t WHERE id <= 3`,
		`CREATE SINK out FROM agg WITH (connector = 'file', path = '`+sinkDir+`', primary_key = 'g', delivery = 'EXACTLY_ONCE') FORMAT DEBEZIUM ENCODE JSON`,
	)
	amvEqual(t, srv, "agg", aggQ)
	if got := amvWaitSink(t, sinkDir, 4); len(got) != 4 {
		t.Fatalf("the sink wrote %d lines, want 4:\n%s", len(got), strings.Join(got, "\n"))
	}

	ExecAll(t, conn, `ALTER TABLE t ADD COLUMN w BIGINT NOT NULL DEFAULT 7`)
	if got := amvRows(t, srv, `SELECT * FROM t WHERE id IN (1, 2)`); strings.Join(got, "|") != "1 g1 1 7|2 g2 2 7" {
		t.Fatalf("old rows after ADD COLUMN: %q", got)
	}
	// New rows carry the column; a change of the new column only is no
	// change for the old views.
	ExecAll(t, conn,
		`INSERT INTO t VALUES (101, 'g1', 1000, 3), (102, 'g9', 6, 4)`,
		`UPDATE t SET w = 9 WHERE id = 5`,
		`CREATE MATERIALIZED VIEW neww AS `+newQ,
	)
	check := func() {
		t.Helper()
		amvEqual(t, srv, "agg", aggQ)
		amvEqual(t, srv, "dep", depQ)
		amvEqual(t, srv, "evn", evnQ)
		amvEqual(t, srv, "neww", newQ)
		if cols := amvRows(t, srv, `SELECT * FROM evn WHERE id = 2`); strings.Join(cols, "|") != "2 g2 2" {
			t.Fatalf("evn, created before the column: %q", cols)
		}
		// A plain view keeps its columns too, as in PostgreSQL.
		if cols := amvRows(t, srv, `SELECT * FROM pv`); strings.Join(cols, "|") != "1 g1 1|2 g2 2|3 g3 3" {
			t.Fatalf("pv, created before the column: %q", cols)
		}
	}
	check()
	if got := amvRows(t, srv, `SELECT * FROM neww WHERE g = 'g1'`); strings.Join(got, "|") != "g1 180 26" {
		t.Fatalf("neww g1: %q, want 24*7 + 9 (id 5) + 3 (id 101) = 180 over 26 rows", got)
	}

	_ = conn.Close(context.Background())
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	check()
	conn = srv.Connect(t)
	ExecAll(t, conn, `INSERT INTO t VALUES (103, 'g2', 10, 11)`, `DELETE FROM t WHERE id = 4`)
	check()

	// The sink: 4 groups at first, then g1 and g9 (the INSERT), nothing
	// for the UPDATE of w, then g2 and g0 (after the restart): each once.
	want := 8
	lines := amvWaitSink(t, sinkDir, want)
	time.Sleep(300 * time.Millisecond) // three more checkpoints: nothing else may come
	lines = amvSinkLines(t, sinkDir)
	seen := map[string]bool{}
	for _, l := range lines {
		if seen[l] {
			t.Fatalf("the sink wrote a change twice: %s", l)
		}
		seen[l] = true
	}
	if len(lines) != want {
		t.Fatalf("the sink wrote %d lines, want %d:\n%s", len(lines), want, strings.Join(lines, "\n"))
	}
	wantLines := []string{
		`{"before":null,"after":{"g":"g0","n":25,"s":1300},"op":"c"`,
		`{"before":null,"after":{"g":"g1","n":25,"s":1225},"op":"c"`,
		`{"before":null,"after":{"g":"g2","n":25,"s":1250},"op":"c"`,
		`{"before":null,"after":{"g":"g3","n":25,"s":1275},"op":"c"`,
		`{"before":{"g":"g1","n":25,"s":1225},"after":{"g":"g1","n":26,"s":2225},"op":"u"`,
		`{"before":null,"after":{"g":"g9","n":1,"s":6},"op":"c"`,
		`{"before":{"g":"g0","n":25,"s":1300},"after":{"g":"g0","n":24,"s":1296},"op":"u"`,
		`{"before":{"g":"g2","n":25,"s":1250},"after":{"g":"g2","n":26,"s":1260},"op":"u"`,
	}
	// Within an epoch the sink writes its keys in any order.
	got := make([]string, len(lines))
	for i, l := range lines {
		got[i], _, _ = strings.Cut(l, `,"source"`)
	}
	slices.Sort(got[4:6])
	slices.Sort(got[6:8])
	slices.Sort(wantLines[4:6])
	slices.Sort(wantLines[6:8])
	if strings.Join(got, "\n") != strings.Join(wantLines, "\n") {
		t.Fatalf("the sink wrote:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(wantLines, "\n"))
	}
}

// TestAlterTableAddColumnUnderViewsKill kills the server right after ADD
// COLUMN under a view is acknowledged: after the restart the table has the
// column with its default in every row, and the view is exact and runs on.
func TestAlterTableAddColumnUnderViewsKill(t *testing.T) {
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond})
	conn := srv.Connect(t)
	const aggQ = `SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g`
	ExecAll(t, conn,
		`CREATE TABLE t (v BIGINT, g TEXT)`, // no key: rows are keyed by the whole row
		`INSERT INTO t SELECT i, 'g' || (i % 3) FROM generate_series(1, 500) AS i`,
		`CREATE MATERIALIZED VIEW agg AS `+aggQ,
		`INSERT INTO t VALUES (7, 'g1')`,
		`ALTER TABLE t ADD COLUMN w INT NOT NULL DEFAULT 7`)
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	if got := amvRows(t, srv, `SELECT count(*), count(*) FILTER (WHERE w = 7) FROM t`); strings.Join(got, "|") != "501 501" {
		t.Fatalf("after ADD COLUMN and kill: %q, want 501 rows, all with the default", got)
	}
	amvEqual(t, srv, "agg", aggQ)
	conn = srv.Connect(t)
	ExecAll(t, conn, `INSERT INTO t VALUES (1, 'g2', 1)`, `DELETE FROM t WHERE v = 7`)
	amvEqual(t, srv, "agg", aggQ)
	if got := amvRows(t, srv, `SELECT count(*) FROM t`); strings.Join(got, "|") != "500" {
		t.Fatalf("rows: %q, want 500", got)
	}
}
