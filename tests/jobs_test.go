package tests

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// lockedBuffer collects a child process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// psqlRunning is a psql running one command against srv.
type psqlRunning struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{} // closed when it has exited, with err set
	err  error
}

func startPsql(t *testing.T, srv *Server, sql string) *psqlRunning {
	t.Helper()
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Fatalf("psql is not installed (apt-get install postgresql-client): %v", err)
	}
	p := &psqlRunning{out: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(psql, "-X", "-v", "ON_ERROR_STOP=1", "-h", srv.Host(), "-p", srv.Port(), "-U", "sluice", "sluice", "-c", sql)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait returns psql's exit error and output once it has exited.
func (p *psqlRunning) wait(t *testing.T) (error, string) {
	t.Helper()
	select {
	case <-p.done:
		return p.err, p.out.String()
	case <-time.After(30 * time.Second):
		t.Fatalf("psql did not exit; output:\n%s", p.out.String())
	}
	return nil, ""
}

func insertRows(t *testing.T, conn *pgx.Conn, table string, n int) {
	t.Helper()
	for lo := 0; lo < n; lo += 1000 {
		var vals []string
		for i := lo; i < min(lo+1000, n); i++ {
			vals = append(vals, fmt.Sprintf("(%d, %d)", i, i%10))
		}
		ExecAll(t, conn, "INSERT INTO "+table+" VALUES "+strings.Join(vals, ", "))
	}
	ExecAll(t, conn, "FLUSH")
}

func jobID(t *testing.T, conn *pgx.Conn, name string) string {
	t.Helper()
	got := queryLines(t, conn, `SELECT id FROM sluice_catalog.jobs WHERE name = '`+name+`'`)
	if len(got) != 1 {
		t.Fatalf("job %s: %q", name, got)
	}
	return got[0]
}

// TestShowJobsAndCancel: a CREATE MATERIALIZED VIEW whose backfill is held
// after 1000 of 5000 rows (a failpoint) sends psql a NOTICE with its
// progress every second; SHOW JOBS and sluice_catalog.jobs show it
// creating with that progress; a read of it is refused; CANCEL JOB from
// another session ends the CREATE with 57014 and leaves nothing behind
// (also after a restart); a job already created cannot be cancelled. With
// background_ddl the CREATE returns at once and the view is built.
func TestShowJobsAndCancel(t *testing.T) {
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond,
		Env: []string{"SLUICE_FAILPOINT=block:backfill:1000:jobs20_v1"}})
	conn := srv.Connect(t)
	ExecAll(t, conn, `CREATE TABLE t (id BIGINT PRIMARY KEY, k BIGINT)`)
	insertRows(t, conn, "t", 5000)

	p := startPsql(t, srv, `CREATE MATERIALIZED VIEW jobs20_v1 AS SELECT id, k FROM t`)
	const note = "NOTICE:  backfill of jobs20_v1: 1000 of 5000 rows (20%)"
	waitFor(t, 20*time.Second, func() bool { return strings.Contains(p.out.String(), note) }, "psql to show "+note)
	id := jobID(t, conn, "jobs20_v1")
	tid := jobID(t, conn, "t")
	// The table's epoch moves with every checkpoint (100 ms): SHOW JOBS
	// must show one at least as new as the catalog's a moment before.
	epoch0, _ := strconv.ParseInt(queryLines(t, conn, `SELECT committed_epoch FROM sluice_catalog.jobs WHERE name = 't'`)[0], 10, 64)
	show := rowsOf(t, conn, `SHOW JOBS`)
	m := regexp.MustCompile(`^` + tid + ` t table running done (\d+)\n` + id +
		` jobs20_v1 materialized view creating 1000 of 5000 rows \(20%\) 0$`).FindStringSubmatch(show)
	if m == nil {
		t.Fatalf("SHOW JOBS:\n%s", show)
	}
	if epoch, _ := strconv.ParseInt(m[1], 10, 64); epoch < epoch0 || epoch0 <= 0 {
		t.Fatalf("SHOW JOBS shows t at epoch %d, the catalog showed %d before", epoch, epoch0)
	}
	wantRows(t, conn, `SELECT status, progress, committed_epoch, error IS NULL FROM sluice_catalog.jobs WHERE name = 'jobs20_v1'`,
		"creating 1000 of 5000 rows (20%) 0 t")
	wantCode(t, conn, `SELECT count(*) FROM jobs20_v1`, "55000", "jobs20_v1 is still being created", "SHOW JOBS")
	wantCode(t, conn, `CANCEL JOB `+tid, "55000", "is not being created")
	wantCode(t, conn, `CANCEL JOB 987654`, "42704", "job 987654 does not exist")

	wantRows(t, conn, `CANCEL JOB `+id, id)
	err, out := p.wait(t)
	if err == nil || !strings.Contains(out, "ERROR:  canceling statement due to user request") {
		t.Fatalf("psql after CANCEL JOB: %v\n%s", err, out)
	}
	if n := strings.Count(out, note); n < 1 {
		t.Fatalf("psql output has %d progress notices:\n%s", n, out)
	}
	checkGone := func() {
		t.Helper()
		wantCode(t, conn, `SELECT count(*) FROM jobs20_v1`, "42P01")
		wantRows(t, conn, `SELECT count(*) FROM sluice_catalog.jobs WHERE name = 'jobs20_v1'`, "0")
		wantRows(t, conn, `SELECT count(*) FROM pg_class WHERE relname = 'jobs20_v1'`, "0")
	}
	checkGone()

	// In the background: CREATE returns before the backfill, which then
	// completes (the failpoint fired once).
	ExecAll(t, conn, `SET background_ddl = true`,
		`CREATE MATERIALIZED VIEW jobs20_v2 AS SELECT k, count(*) AS n FROM t GROUP BY k`)
	waitFor(t, 20*time.Second, func() bool {
		got := queryLines(t, conn, `SELECT status, progress FROM sluice_catalog.jobs WHERE name = 'jobs20_v2'`)
		return len(got) == 1 && got[0] == "running done"
	}, "jobs20_v2 to be created")
	wantRows(t, conn, `SELECT count(*), sum(n), min(n), max(n) FROM jobs20_v2`, "10 5000 500 500")
	wantCode(t, conn, `CANCEL JOBS `+jobID(t, conn, "jobs20_v2"), "55000", "is not being created")
	wantCode(t, conn, `SET background_ddl = maybe`, "22023")

	// A restart finds the cancelled view gone and the other one whole.
	conn = srv.StopRestart(t, conn)
	checkGone()
	wantRows(t, conn, `SELECT count(*), sum(n) FROM jobs20_v2`, "10 5000")
	wantRows(t, conn, `SELECT name, status, progress FROM sluice_catalog.jobs ORDER BY id`, "t running done\njobs20_v2 running done")
}

// TestCancelBackfillCtrlC: Ctrl-C in psql (a CancelRequest) cancels a
// foreground CREATE MATERIALIZED VIEW during its backfill; a background
// one is cancelled by CANCEL JOBS. Both leave nothing: the same names are
// created again with every row.
func TestCancelBackfillCtrlC(t *testing.T) {
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond,
		Env: []string{"SLUICE_FAILPOINT=block:backfill:300:jobs20_c1,block:backfill:700:jobs20_c2"}})
	conn := srv.Connect(t)
	ExecAll(t, conn, `CREATE TABLE t (id BIGINT PRIMARY KEY, k BIGINT)`)
	insertRows(t, conn, "t", 2000)

	p := startPsql(t, srv, `CREATE MATERIALIZED VIEW jobs20_c1 AS SELECT k, sum(id) AS s FROM t GROUP BY k`)
	const note = "NOTICE:  backfill of jobs20_c1: 300 of 2000 rows (15%)"
	waitFor(t, 20*time.Second, func() bool { return strings.Contains(p.out.String(), note) }, "psql to show "+note)
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err, out := p.wait(t)
	if err == nil || !strings.Contains(out, "ERROR:  canceling statement due to user request") {
		t.Fatalf("psql after SIGINT: %v\n%s", err, out)
	}
	wantCode(t, conn, `SELECT * FROM jobs20_c1`, "42P01")

	ExecAll(t, conn, `SET background_ddl = on`, `CREATE MATERIALIZED VIEW jobs20_c2 AS SELECT id FROM t`)
	waitFor(t, 20*time.Second, func() bool {
		got := queryLines(t, conn, `SHOW JOBS`)
		return len(got) == 2 && strings.HasSuffix(got[1], "jobs20_c2 materialized view creating 700 of 2000 rows (35%) 0")
	}, "SHOW JOBS to show jobs20_c2 at 700 of 2000 rows")
	wantRows(t, conn, `CANCEL JOBS `+jobID(t, conn, "jobs20_c2"), jobID(t, conn, "jobs20_c2"))
	wantCode(t, conn, `SELECT * FROM jobs20_c2`, "42P01")
	wantRows(t, conn, `SELECT name FROM sluice_catalog.jobs`, "t")

	// Nothing of either is left: created again, both hold exactly t's rows.
	ExecAll(t, conn, `SET background_ddl = off`,
		`CREATE MATERIALIZED VIEW jobs20_c1 AS SELECT k, sum(id) AS s FROM t GROUP BY k`,
		`CREATE MATERIALIZED VIEW jobs20_c2 AS SELECT id FROM t`)
	wantRows(t, conn, `SELECT count(*), sum(s) FROM jobs20_c1`, "10 1999000")
	wantRows(t, conn, `SELECT count(*), sum(id) FROM jobs20_c2`, "2000 1999000")
}
