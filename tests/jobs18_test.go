package tests

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCancelSinkBackfillCtrlC: Ctrl-C in psql (a CancelRequest) cancels a
// CREATE SINK during its backfill, as it does CREATE MATERIALIZED VIEW
// (TestCancelBackfillCtrlC): psql shows the progress NOTICE, then 57014;
// the sink is gone from the catalog and wrote nothing; created again with
// the same name and path, it delivers every row of the table exactly once.
func TestCancelSinkBackfillCtrlC(t *testing.T) {
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond,
		Env: []string{"SLUICE_FAILPOINT=block:backfill:300:jobs18_s1"}})
	conn := srv.Connect(t)
	ExecAll(t, conn, `CREATE TABLE t (id BIGINT PRIMARY KEY, k BIGINT)`)
	insertRows(t, conn, "t", 2000)
	dir := filepath.Join(t.TempDir(), "out")
	create := `CREATE SINK jobs18_s1 FROM t WITH (connector = 'file', path = '` + dir + `') FORMAT DEBEZIUM ENCODE JSON`

	p := startPsql(t, srv, create)
	const note = "NOTICE:  backfill of jobs18_s1: 300 of 2000 rows (15%)"
	waitFor(t, 20*time.Second, func() bool { return strings.Contains(p.out.String(), note) }, "psql to show "+note)
	wantRows(t, conn, `SELECT name, status, progress FROM sluice_catalog.jobs WHERE name = 'jobs18_s1'`,
		"jobs18_s1 creating 300 of 2000 rows (15%)")
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err, out := p.wait(t)
	if err == nil || !strings.Contains(out, "ERROR:  canceling statement due to user request") {
		t.Fatalf("psql after SIGINT: %v\n%s", err, out)
	}
	wantRows(t, conn, `SELECT name FROM sluice_catalog.jobs`, "t")
	if got := queryLines(t, conn, `SHOW SINKS`); len(got) != 0 {
		t.Fatalf("SHOW SINKS after the cancel: %q", got)
	}
	// Nothing delivered, after a few more epochs.
	time.Sleep(500 * time.Millisecond)
	if lines := fileSinkLines(t, dir); len(lines) != 0 {
		t.Fatalf("the cancelled sink wrote %d lines", len(lines))
	}

	// Created again (the failpoint fired once): every row, once.
	ExecAll(t, conn, create)
	waitFor(t, 20*time.Second, func() bool { return len(fileSinkLines(t, dir)) >= 2000 }, "the sink to deliver 2000 rows")
	time.Sleep(500 * time.Millisecond)
	seen := map[string]int{}
	for _, l := range fileSinkLines(t, dir) {
		seen[l]++
	}
	if len(seen) != 2000 {
		t.Fatalf("the sink delivered %d distinct lines, want 2000", len(seen))
	}
	for l, n := range seen {
		if n != 1 {
			t.Fatalf("line delivered %d times: %s", n, l)
		}
	}
}
