package tests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The backfill of a view or sink created over existing data runs outside
// the epochs (exec/job/detached.go): while it runs, everything else goes
// on. These tests hold a backfill with a pause failpoint, which a file
// releases.

// startHeld starts a server with the failpoints fp (pause entries, held
// until the file release is created) and a table t (id, k) of n rows.
func startHeld(t *testing.T, fp string, n int) (srv *Server, conn *pgx.Conn, release string) {
	t.Helper()
	release = filepath.Join(t.TempDir(), "release")
	srv = StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond,
		Env: []string{"SLUICE_FAILPOINT=" + fp, "SLUICE_FAILPOINT_RELEASE=" + release}})
	conn = srv.Connect(t)
	ExecAll(t, conn, `CREATE TABLE t (id BIGINT PRIMARY KEY, k BIGINT)`)
	insertRows(t, conn, "t", n)
	return srv, conn, release
}

// within runs sql on conn and fails the test unless it succeeds within d
// (the statement is cancelled then); it returns how long it took.
func within(t *testing.T, conn *pgx.Conn, d time.Duration, sql string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	if _, err := QueryText(ctx, conn, sql); err != nil {
		t.Fatalf("%s (while a backfill is held): %s", sql, describeErr(err))
	}
	return time.Since(start)
}

const detAgg = `SELECT k, count(*), sum(id) FROM t GROUP BY k`

// TestDetachedBackfill: while a foreground CREATE MATERIALIZED VIEW is
// held in its backfill, writes to the table it reads are visible at once
// in another view over it, FLUSH returns, another view is created, SHOW
// JOBS shows the held one creating, and a DROP or ALTER … AS of it, or a
// view over it, is refused. Released, it ends with exactly the table's aggregate,
// including what changed during its backfill, and keeps it after more
// writes and a restart.
func TestDetachedBackfill(t *testing.T) {
	srv, conn, release := startHeld(t, "pause:backfill:1000:det_b", 5000)
	ExecAll(t, conn, `CREATE MATERIALIZED VIEW det_a AS SELECT k, count(*) AS n, sum(id) AS s FROM t GROUP BY k`)

	p := startPsql(t, srv, `CREATE MATERIALIZED VIEW det_b AS SELECT k, count(*) AS n, sum(id) AS s FROM t GROUP BY k`)
	const note = "NOTICE:  backfill of det_b: 1000 of 5000 rows (20%)"
	waitFor(t, 20*time.Second, func() bool { return strings.Contains(p.out.String(), note) }, "psql to show "+note)

	// Writes commit and are read back at once, through another view.
	var lat []time.Duration
	for _, w := range []string{
		`INSERT INTO t SELECT g, g % 7 FROM generate_series(5000, 5299) AS g`,
		`UPDATE t SET k = 3 WHERE id < 50`,
		`DELETE FROM t WHERE id BETWEEN 100 AND 199`,
		`INSERT INTO t VALUES (9999, 42)`,
	} {
		lat = append(lat, within(t, conn, 10*time.Second, w))
		want := queryLines(t, conn, detAgg)
		if got := queryLines(t, conn, `SELECT k, n, s FROM det_a`); !equalLines(got, want) {
			t.Fatalf("det_a after %s, read at once (-want +got):\n%s", w, lineDiff(want, got))
		}
	}
	lat = append(lat, within(t, conn, 10*time.Second, `FLUSH`))
	lat = append(lat, within(t, conn, 10*time.Second, `CREATE MATERIALIZED VIEW det_c AS SELECT count(*) AS n FROM t`))
	t.Logf("while det_b's backfill is held: 4 writes, FLUSH and CREATE MATERIALIZED VIEW took %v", lat)
	wantRows(t, conn, `SELECT n FROM det_c`, queryLines(t, conn, `SELECT count(*) FROM t`)[0])

	id := jobID(t, conn, "det_b")
	got := queryLines(t, conn, `SHOW JOBS`)
	if !equalLines(filterLines(got, "det_b"), []string{id + " det_b materialized view creating 1000 of 5000 rows (20%) 0"}) {
		t.Fatalf("SHOW JOBS while det_b is held:\n%s", strings.Join(got, "\n"))
	}
	wantCode(t, conn, `SELECT * FROM det_b`, "55000", "det_b is still being created")
	wantCode(t, conn, `DROP MATERIALIZED VIEW det_b`, "55000", "being created", "CANCEL JOB "+id)
	wantCode(t, conn, `CREATE VIEW det_over AS SELECT n FROM det_b`, "55000", "det_b is still being created")
	wantCode(t, conn, `CREATE MATERIALIZED VIEW det_over AS SELECT n FROM det_b`, "55000", "det_b is still being created")
	wantCode(t, conn, `ALTER MATERIALIZED VIEW det_b AS SELECT k, count(*) AS n, sum(id) AS s FROM t WHERE id > 0 GROUP BY k`, "55000", "det_b is still being created")
	wantCode(t, conn, `ALTER MATERIALIZED VIEW det_c AS SELECT count(*) AS n FROM det_b`, "55000", "det_b is still being created")

	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err, out := p.wait(t); err != nil || !strings.Contains(out, "CREATE MATERIALIZED VIEW") {
		t.Fatalf("psql after the release: %v\n%s", err, out)
	}
	// Created by its epoch: its contents are current at once.
	want := queryLines(t, conn, detAgg)
	if got := queryLines(t, conn, `SELECT k, n, s FROM det_b`); !equalLines(got, want) {
		t.Fatalf("det_b once created (-want +got):\n%s", lineDiff(want, got))
	}
	ExecAll(t, conn, `UPDATE t SET k = k + 1 WHERE id % 3 = 0`, `DELETE FROM t WHERE id > 4900 AND id < 5100`)
	want = queryLines(t, conn, detAgg)
	waitForLines(t, conn, `SELECT k, n, s FROM det_b`, want)
	wantRows(t, conn, `SELECT name, status, progress, committed_epoch > 0 FROM sluice_catalog.jobs WHERE name = 'det_b'`, "det_b running done t")
	wantRows(t, conn, `SELECT count(*) FROM det_b`, "12")
	ExecAll(t, conn, `DROP MATERIALIZED VIEW det_c`)

	conn = srv.StopRestart(t, conn)
	for _, v := range []string{"det_a", "det_b"} {
		if got := queryLines(t, conn, `SELECT k, n, s FROM `+v); !equalLines(got, want) {
			t.Fatalf("%s after a restart (-want +got):\n%s", v, lineDiff(want, got))
		}
	}
}

// TestDetachedBackfillKill: a server killed while a foreground and a
// background creation are held in their backfills (their catalog entries
// committed by the epochs since) comes back without the foreground one
// (its name is free) and with the background one built again from the
// start, holding exactly the table's aggregate.
func TestDetachedBackfillKill(t *testing.T) {
	srv, conn, _ := startHeld(t, "pause:backfill:500:det_f,pause:backfill:700:det_g", 2000)

	p := startPsql(t, srv, `CREATE MATERIALIZED VIEW det_f AS SELECT k, count(*) AS n, sum(id) AS s FROM t GROUP BY k`)
	ExecAll(t, conn, `SET background_ddl = on`, `CREATE MATERIALIZED VIEW det_g AS SELECT k, count(*) AS n, sum(id) AS s FROM t GROUP BY k`)
	waitFor(t, 20*time.Second, func() bool {
		got := strings.Join(queryLines(t, conn, `SELECT name, progress FROM sluice_catalog.jobs`), "\n")
		return strings.Contains(got, "det_f 500 of 2000") && strings.Contains(got, "det_g 700 of 2000")
	}, "both backfills to be held")
	// More epochs commit meanwhile (their catalog entries with them).
	ExecAll(t, conn, `SET background_ddl = off`, `INSERT INTO t VALUES (7000, 1), (7001, 2)`, `FLUSH`,
		`CREATE MATERIALIZED VIEW det_h AS SELECT count(*) AS n FROM t`)
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err, out := p.wait(t); err == nil {
		t.Fatalf("psql succeeded although the server was killed:\n%s", out)
	}
	srv.SetEnv()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	conn = srv.Connect(t)
	wantCode(t, conn, `SELECT * FROM det_f`, "42P01")
	waitFor(t, 30*time.Second, func() bool {
		got := queryLines(t, conn, `SELECT name, status, progress FROM sluice_catalog.jobs WHERE name LIKE 'det_%'`)
		return equalLines(got, []string{"det_g running done", "det_h running done"})
	}, "det_g to be built again")
	want := queryLines(t, conn, detAgg)
	if got := queryLines(t, conn, `SELECT k, n, s FROM det_g`); !equalLines(got, want) {
		t.Fatalf("det_g after the restart (-want +got):\n%s", lineDiff(want, got))
	}
	wantRows(t, conn, `SELECT n FROM det_h`, "2002")
	ExecAll(t, conn, `CREATE MATERIALIZED VIEW det_f AS SELECT k, count(*) AS n, sum(id) AS s FROM t GROUP BY k`)
	if got := queryLines(t, conn, `SELECT k, n, s FROM det_f`); !equalLines(got, want) {
		t.Fatalf("det_f created again (-want +got):\n%s", lineDiff(want, got))
	}
	wantRows(t, conn, `SELECT count(*) FROM pg_class WHERE relname LIKE 'det_%'`, "3")
}

// filterLines returns the lines that contain s.
func filterLines(lines []string, s string) []string {
	var out []string
	for _, l := range lines {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}
