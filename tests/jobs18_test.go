package tests

import (
	"context"
	"encoding/json"
	"os/exec"
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
	root := t.TempDir()
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond, ExtraArgs: []string{"--file-root", root},
		Env: []string{"SLUICE_FAILPOINT=block:backfill:300:jobs18_s1"}})
	conn := srv.Connect(t)
	ExecAll(t, conn, `CREATE TABLE t (id BIGINT PRIMARY KEY, k BIGINT)`)
	insertRows(t, conn, "t", 2000)
	dir := filepath.Join(root, "out")
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

// TestBackgroundCreateSurvivesKill: a background CREATE MATERIALIZED
// VIEW, held mid-backfill by a failpoint, is cut off by kill -9 of the
// server. After the restart SHOW JOBS shows it creating again, its
// backfill restarted from the first row (held again, at 1200 of 2000
// rows); after a second kill -9 there and a restart without the
// failpoint it finishes, holding exactly the table's aggregate, and
// follows new rows. A background CREATE SINK cut off the same way
// (another kill -9) is resumed too and delivers every row exactly once.
// (One creation at a time: a held backfill holds every epoch, DDL too.)
func TestBackgroundCreateSurvivesKill(t *testing.T) {
	root := t.TempDir()
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond, ExtraArgs: []string{"--file-root", root},
		Env: []string{"SLUICE_FAILPOINT=block:backfill:300:jobs18_bg"}})
	conn := srv.Connect(t)
	ExecAll(t, conn, `CREATE TABLE t (id BIGINT PRIMARY KEY, k BIGINT)`)
	insertRows(t, conn, "t", 2000)
	ExecAll(t, conn, `SET background_ddl = on`,
		`CREATE MATERIALIZED VIEW jobs18_bg AS SELECT k, count(*) AS n, sum(id) AS s FROM t GROUP BY k`)
	jobs := func() string {
		return strings.Join(queryLines(t, conn, `SELECT name, kind, status, progress FROM sluice_catalog.jobs WHERE name LIKE 'jobs18%' ORDER BY name`), "\n")
	}
	waitFor(t, 20*time.Second, func() bool { return jobs() == "jobs18_bg materialized view creating 300 of 2000 rows (15%)" },
		"the backfill to be held at 300 rows")

	kill := func(env ...string) {
		t.Helper()
		conn.Close(context.Background())
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		srv.SetEnv(env...)
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		conn = srv.Connect(t)
	}
	kill("SLUICE_FAILPOINT=block:backfill:1200:jobs18_bg")
	waitFor(t, 20*time.Second, func() bool { return jobs() == "jobs18_bg materialized view creating 1200 of 2000 rows (60%)" },
		"the backfill to restart and be held at 1200 rows")
	wantCode(t, conn, `SELECT count(*) FROM jobs18_bg`, "55000", "still being created")
	if !strings.Contains(srv.Logs(), "resuming the background creation of materialized view jobs18_bg cut off by a restart") {
		t.Errorf("no log line for the resumed creation:\n%s", srv.Logs())
	}

	kill()
	waitFor(t, 20*time.Second, func() bool { return jobs() == "jobs18_bg materialized view running done" },
		"the creation to finish after the second restart")
	wantRows(t, conn, `SELECT count(*), sum(n), sum(s), min(n), max(n) FROM jobs18_bg`, "10 2000 1999000 200 200")
	ExecAll(t, conn, `INSERT INTO t VALUES (5000, 3)`, `FLUSH`)
	wantRows(t, conn, `SELECT count(*), sum(n), sum(s) FROM jobs18_bg`, "10 2001 2004000")
	if n := strings.Count(srv.Logs(), "resuming the background creation of materialized view jobs18_bg"); n != 2 {
		t.Errorf("the creation was resumed %d times, want 2 (one per kill)", n)
	}

	// A sink: held at 300 rows, killed, resumed, delivered once.
	conn.Close(context.Background())
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	srv.SetEnv("SLUICE_FAILPOINT=block:backfill:300:jobs18_bgs")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	conn = srv.Connect(t)
	dir := filepath.Join(root, "out")
	ExecAll(t, conn, `SET background_ddl = on`,
		`CREATE SINK jobs18_bgs FROM t WITH (connector = 'file', path = '`+dir+`') FORMAT DEBEZIUM ENCODE JSON`)
	waitFor(t, 20*time.Second, func() bool {
		return strings.Contains(jobs(), "jobs18_bgs sink creating 300 of 2001 rows (15%)")
	}, "the sink's backfill to be held at 300 rows")
	kill()
	waitFor(t, 20*time.Second, func() bool {
		return jobs() == "jobs18_bg materialized view running done\njobs18_bgs sink running done"
	}, "the sink's creation to finish after the restart")
	waitFor(t, 20*time.Second, func() bool { return len(fileSinkLines(t, dir)) >= 2001 }, "the sink to deliver 2001 rows")
	ExecAll(t, conn, `INSERT INTO t VALUES (5001, 4)`, `FLUSH`)
	waitFor(t, 20*time.Second, func() bool { return len(fileSinkLines(t, dir)) >= 2002 }, "the sink to deliver the new row")
	time.Sleep(300 * time.Millisecond)
	seen := map[string]int{}
	lines := fileSinkLines(t, dir)
	for _, l := range lines {
		seen[l]++
	}
	if len(seen) != 2002 || len(lines) != 2002 {
		t.Fatalf("the sink delivered %d lines, %d distinct, want 2002 once each", len(lines), len(seen))
	}
	wantRows(t, conn, `SELECT count(*), sum(n), sum(s) FROM jobs18_bg`, "10 2002 2009001")
}

// TestLogFormatJSON: with --log-format json every line the server writes
// is one JSON object (log/slog's: time, level, msg), and a DDL statement
// is logged as one line at level INFO naming the statement and its role.
func TestLogFormatJSON(t *testing.T) {
	srv := StartServer(t, Options{ExtraArgs: []string{"--log-format", "json", "--log-level", "info"}})
	conn := srv.Connect(t)
	ExecAll(t, conn, `CREATE TABLE jobs18_logged (id BIGINT PRIMARY KEY)`)
	waitFor(t, 10*time.Second, func() bool { return strings.Contains(srv.Logs(), `ddl: CREATE TABLE`) }, "the DDL's log line")
	var n, ddl int
	for _, l := range strings.Split(srv.Logs(), "\n") {
		if l == "" || strings.HasPrefix(l, "=== ") {
			continue // the harness's own lines
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("a log line is not JSON (%v): %s", err, l)
		}
		msg, _ := rec["msg"].(string)
		if _, ok := rec["time"].(string); !ok || rec["level"] == nil || msg == "" {
			t.Fatalf("a log line lacks time, level or msg: %s", l)
		}
		n++
		if strings.HasPrefix(msg, "ddl: CREATE TABLE by role ") {
			ddl++
			if rec["level"] != "INFO" {
				t.Errorf("the DDL line's level is %v: %s", rec["level"], l)
			}
		}
	}
	if ddl != 1 {
		t.Fatalf("%d DDL lines for one CREATE TABLE in:\n%s", ddl, srv.Logs())
	}
	t.Logf("%d JSON log lines", n)
}

// TestLogLevel: --log-level warn writes the warnings (a checkpoint slower
// than --slow-checkpoint) and nothing informational (a DDL line), in both
// formats; an unknown level stops the server at start with a message
// naming the flag.
func TestLogLevel(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			srv := StartServer(t, Options{ExtraArgs: []string{"--log-format", format, "--log-level", "warn", "--slow-checkpoint", "1us"}})
			conn := srv.Connect(t)
			ExecAll(t, conn, `CREATE TABLE jobs18_quiet (id BIGINT PRIMARY KEY)`, `INSERT INTO jobs18_quiet VALUES (1)`)
			waitFor(t, 20*time.Second, func() bool { return strings.Contains(srv.Logs(), "slow checkpoint") }, "a slow-checkpoint warning")
			warnings := 0
			for _, l := range strings.Split(srv.Logs(), "\n") {
				if l == "" || strings.HasPrefix(l, "=== ") {
					continue // the harness's own lines
				}
				if strings.Contains(l, "ddl: CREATE TABLE") || strings.Contains(l, "listening on") {
					t.Fatalf("an informational line at --log-level warn: %s", l)
				}
				if format == "json" {
					var rec map[string]any
					if err := json.Unmarshal([]byte(l), &rec); err != nil {
						t.Fatalf("a log line is not JSON (%v): %s", err, l)
					}
					if rec["level"] != "WARN" && rec["level"] != "ERROR" {
						t.Fatalf("a line of level %v at --log-level warn: %s", rec["level"], l)
					}
				}
				if strings.Contains(l, "slow checkpoint") {
					warnings++
				}
			}
			if warnings == 0 {
				t.Fatalf("no slow-checkpoint warning in:\n%s", srv.Logs())
			}
			t.Logf("%d slow-checkpoint warnings, no informational line", warnings)
		})
	}
	out, err := exec.Command(Binary(t), "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--log-level", "loud").CombinedOutput()
	if err == nil || !strings.Contains(string(out), `--log-level "loud"`) {
		t.Fatalf("--log-level loud: %v, output %q; want a failure naming the flag", err, out)
	}
}
