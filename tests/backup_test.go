package tests

// Backups and disk hygiene, against real processes: a backup taken with
// `sluice backup` while rows are being written, a second server started on
// a copy of it (views equal their recomputation, acknowledged rows are
// there, an EXACTLY_ONCE PostgreSQL sink continues with nothing lost and
// nothing doubled), a second restore of the same backup whose sink target
// has moved past it (the sink pauses with 55000, writes nothing), the
// refusals of BACKUP; then the size of a fresh data directory and the
// space a dropped view gives back.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"sluice/storage"
)

// copyTree copies a backup directory (as `cp -a` would).
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	out, err := exec.Command("cp", "-a", from, to).CombinedOutput()
	if err != nil {
		t.Fatalf("cp -a %s %s: %v\n%s", from, to, err, out)
	}
}

// sinkError returns the Last Error cell of sink name in SHOW SINKS.
func sinkError(t *testing.T, conn *pgx.Conn, name string) string {
	t.Helper()
	res, err := QueryText(context.Background(), conn, "SHOW SINKS")
	if err != nil {
		t.Fatal(err)
	}
	col := -1
	for i, c := range res.ColumnNames() {
		if c == "Last Error" {
			col = i
		}
	}
	for _, r := range res.Rows {
		if r[0] == name {
			if r[col] == "·" || r[col] == "NULL" {
				return ""
			}
			return r[col]
		}
	}
	t.Fatalf("SHOW SINKS has no %s", name)
	return ""
}

// checkViews compares agg with the recomputation from t's rows, on the
// server of conn, and returns t's row count.
func checkViews(t *testing.T, conn *pgx.Conn, what string) int {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err1 := QueryText(ctx, conn, "SELECT k, n, s FROM agg ORDER BY k")
		want, err2 := QueryText(ctx, conn, "SELECT k, count(*), sum(v) FROM t GROUP BY k ORDER BY k")
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", what, err1, err2)
		}
		if strings.Join(got.Lines(), "\n") == strings.Join(want.Lines(), "\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: agg is\n%s\nrecomputed from t\n%s", what, strings.Join(got.Lines(), "\n"), strings.Join(want.Lines(), "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// sinkRows returns (count, distinct ids, min, max) of the sink target.
func sinkRows(t *testing.T, pg *pgx.Conn) (n, distinct, lo, hi int64) {
	t.Helper()
	err := pg.QueryRow(context.Background(), "SELECT count(*), count(DISTINCT id), coalesce(min(id), 0), coalesce(max(id), 0) FROM g_out").Scan(&n, &distinct, &lo, &hi)
	if err != nil {
		t.Fatal(err)
	}
	return
}

func TestBackupRestore(t *testing.T) {
	pgURL := FreshPostgresDB(t, "sluice_backup")
	ctx := context.Background()
	pg, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(ctx)

	// Epochs happen only when asked (FLUSH, BACKUP), so that nothing is
	// delivered between the backup and the kill below.
	a := StartServer(t, Options{CheckpointInterval: time.Hour})
	conn := a.Connect(t)
	ExecAll(t, conn,
		`CREATE TABLE t (id BIGINT PRIMARY KEY, k BIGINT, v BIGINT)`,
		`CREATE MATERIALIZED VIEW agg AS SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k`,
		`CREATE SOURCE g (id BIGINT) WITH (connector = 'datagen', fields.id.kind = 'sequence', fields.id.start = '1', datagen.rows.per.second = '400')`,
		`CREATE SINK s FROM g WITH (connector = 'postgres', url = '`+pgURL+`', table = 'g_out', write_mode = 'transactional', delivery = 'EXACTLY_ONCE')`,
	)
	// A writer inserts rows before, during and after the backup.
	var acked atomic.Int64
	stopWriting := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		wc, err := pgx.Connect(ctx, a.ConnString())
		if err != nil {
			t.Error(err)
			return
		}
		defer wc.Close(ctx)
		for i := int64(1); ; i++ {
			select {
			case <-stopWriting:
				return
			default:
			}
			if _, err := wc.Exec(ctx, "INSERT INTO t VALUES ($1, $2, $3)", i, i%7, i*3); err != nil {
				return // the server was killed
			}
			acked.Store(i)
		}
	}()
	for i := 0; i < 5; i++ {
		time.Sleep(200 * time.Millisecond)
		if _, err := conn.Exec(ctx, "FLUSH"); err != nil {
			t.Fatal(err)
		}
	}
	if n, _, _, _ := sinkRows(t, pg); n == 0 {
		t.Fatal("the sink delivered nothing before the backup")
	}
	backup := filepath.Join(t.TempDir(), "backup")
	before := acked.Load()
	start := time.Now()
	out, err := exec.Command(Binary(t), "backup", "--data-dir", a.DataDir, "--to", backup).CombinedOutput()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("sluice backup: %v\n%s", err, out)
	}
	if err := a.Kill(); err != nil { // at once: no epoch after the backup's
		t.Fatal(err)
	}
	close(stopWriting)
	wg.Wait()
	t.Logf("sluice backup (%v, %d rows acknowledged before it, %d by the kill): %s", took.Round(time.Millisecond), before, acked.Load(), strings.TrimSpace(string(out)))
	m, err := storage.VerifyBackup(backup)
	if err != nil {
		t.Fatal(err)
	}
	delivered, _, _, _ := sinkRows(t, pg)

	// Restore: a server on a copy of the backup.
	restored := filepath.Join(t.TempDir(), "restored")
	copyTree(t, backup, restored)
	b := StartServer(t, Options{DataDir: restored, CheckpointInterval: 200 * time.Millisecond})
	bc := b.Connect(t)
	n := checkViews(t, bc, "restored server")
	if int64(n) < before {
		t.Fatalf("the restored t holds %d rows; %d were acknowledged before the backup started", n, before)
	}
	var kept int64
	if err := bc.QueryRow(ctx, "SELECT count(*) FROM t WHERE id <= $1", before).Scan(&kept); err != nil || kept != before {
		t.Fatalf("the restored t holds %d of the %d rows acknowledged before the backup (%v)", kept, before, err)
	}
	// New writes on the restored server, then the sink must have moved on
	// with every id exactly once.
	for i := int64(n) + 1; i <= int64(n)+100; i++ {
		if _, err := bc.Exec(ctx, "INSERT INTO t VALUES ($1, $2, $3)", i+1_000_000, i%5, i); err != nil {
			t.Fatal(err)
		}
	}
	checkViews(t, bc, "restored server after new writes")
	deadline := time.Now().Add(30 * time.Second)
	for {
		cnt, distinct, lo, hi := sinkRows(t, pg)
		if cnt != distinct || (cnt > 0 && (lo != 1 || hi != cnt)) {
			t.Fatalf("g_out after the restore: %d rows, %d distinct ids, from %d to %d: lost or doubled", cnt, distinct, lo, hi)
		}
		if cnt >= delivered+400 {
			t.Logf("sink: %d rows delivered before the backup's server was killed, %d after the restore, ids 1..%d each once", delivered, cnt, hi)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restored sink did not continue: %d rows (was %d); SHOW SINKS says %q", cnt, delivered, sinkError(t, bc, "s"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if e := sinkError(t, bc, "s"); e != "" {
		t.Fatalf("SHOW SINKS on the restored server: %q", e)
	}

	// BACKUP's refusals.
	ExecAll(t, bc, `CREATE ROLE bob LOGIN`)
	for _, c := range []struct{ sql, code string }{
		{`BACKUP TO 'relative/dir'`, "42602"},
		{`BACKUP TO '` + backup + `'`, "58P02"},
	} {
		if _, err := bc.Exec(ctx, c.sql); PgCode(err) != c.code {
			t.Errorf("%s: %v, want %s", c.sql, err, c.code)
		}
	}
	ExecAll(t, bc, "BEGIN")
	if _, err := bc.Exec(ctx, `BACKUP TO '/tmp/never'`); PgCode(err) != "25001" {
		t.Errorf("BACKUP in a transaction block: %v, want 25001", err)
	}
	ExecAll(t, bc, "ROLLBACK")
	bob := MustConnect(t, strings.Replace(b.ConnString(), "//sluice@", "//bob@", 1))
	if _, err := bob.Exec(ctx, `BACKUP TO '/tmp/never'`); PgCode(err) != "42501" {
		t.Errorf("BACKUP as bob: %v, want 42501", err)
	}
	if _, err := os.Stat("/tmp/never"); err == nil {
		t.Errorf("a refused BACKUP created /tmp/never")
	}
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}

	// A second restore of the same backup: its sink's target has moved past
	// the backup's epoch, so the sink pauses, visibly, and writes nothing,
	// also after a restart.
	after, _, _, _ := sinkRows(t, pg)
	again := filepath.Join(t.TempDir(), "again")
	copyTree(t, backup, again)
	c := StartServer(t, Options{DataDir: again, CheckpointInterval: 200 * time.Millisecond})
	for round := 0; round < 2; round++ {
		cc := c.Connect(t)
		deadline = time.Now().Add(30 * time.Second)
		var e string
		for e = sinkError(t, cc, "s"); !strings.HasPrefix(e, "SQLSTATE 55000: sink s is paused"); e = sinkError(t, cc, "s") {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: SHOW SINKS on a second restore says %q, want a pause with 55000", round, e)
			}
			time.Sleep(50 * time.Millisecond)
		}
		checkViews(t, cc, "second restore")
		if _, err := cc.Exec(ctx, "FLUSH"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond) // a paused sink would have had time to write
		if now, _, _, _ := sinkRows(t, pg); now != after {
			t.Fatalf("round %d: a paused sink wrote: g_out went from %d to %d rows", round, after, now)
		}
		if round == 0 {
			t.Logf("second restore: %s", e)
			if err := c.Stop(); err != nil {
				t.Fatal(err)
			}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("backup of epoch %d: %d files, %.1f MiB", m.Epoch, len(m.Files), float64(m.Bytes)/(1<<20))
}

func TestDiskFreshAndDropReclaims(t *testing.T) {
	// 100 MB; 30 MB in a race build (CI), where building 100 MB took 2m43s.
	mb := 100
	if strings.Contains(os.Getenv(envBuildFlags), "-race") {
		mb = 30
	}
	if v := os.Getenv("SLUICE_DISK_DROP_MB"); v != "" {
		var err error
		if mb, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	srv := StartServer(t, Options{CheckpointInterval: 200 * time.Millisecond})
	conn := srv.Connect(t)
	ExecAll(t, conn, `CREATE TABLE ids (id BIGINT PRIMARY KEY)`, `INSERT INTO ids VALUES (1)`, `FLUSH`)
	du := func() int64 {
		n, err := storage.DiskUsage(srv.DataDir)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	fresh := du()
	t.Logf("a fresh server with one table and one row: %.1f MB on disk", float64(fresh)/1e6)
	if fresh > 10<<20 {
		t.Fatalf("a fresh data directory takes %d bytes, want under 10 MiB", fresh)
	}
	// A view of about mb MB: 256 bytes of md5 hex (which does not compress)
	// for each id.
	rows := mb << 20 / 300
	// Building 100 MB takes 13-40 s on two shared cores: longer than
	// ExecAll waits.
	cctx, cancel := context.WithTimeout(context.Background(), time.Duration(10+mb/10)*time.Minute)
	defer cancel()
	run := func(q string) {
		t.Helper()
		if _, err := conn.Exec(cctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for lo := 2; lo <= rows; lo += 200_000 {
		run(fmt.Sprintf(`INSERT INTO ids SELECT g FROM generate_series(%d, %d) g`, lo, min(lo+200_000-1, rows)))
	}
	run(`FLUSH`)
	base := du()
	var pad []string
	for i := 0; i < 8; i++ {
		pad = append(pad, fmt.Sprintf("md5(id::text || '%d')", i))
	}
	start := time.Now()
	run(`CREATE MATERIALIZED VIEW big AS SELECT id, ` + strings.Join(pad, " || ") + ` AS pad FROM ids`)
	run(`FLUSH`)
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM big").Scan(&n); err != nil || n != rows {
		t.Fatalf("big has %d rows, want %d (%v)", n, rows, err)
	}
	full := du()
	t.Logf("the view of %d rows took %v; data directory %.1f MB without it, %.1f MB with it", rows, time.Since(start).Round(time.Millisecond), float64(base)/1e6, float64(full)/1e6)
	if full-base < int64(mb)<<20*7/10 {
		t.Fatalf("the view added only %d bytes: the test meant about %d MiB", full-base, mb)
	}
	start = time.Now()
	ExecAll(t, conn, `DROP MATERIALIZED VIEW big`, `FLUSH`)
	deadline := time.Now().Add(time.Duration(30+mb/10) * time.Second)
	// At least three quarters of the view's space returns (what stays is
	// the new WAL, range tombstones and the table's own flushes).
	slack := max(16<<20, (full-base)/4)
	after := du()
	for ; after > base+slack; after = du() {
		if time.Now().After(deadline) {
			t.Fatalf("%v after DROP the data directory takes %.1f MB; it took %.1f MB before the view", time.Since(start).Round(time.Millisecond), float64(after)/1e6, float64(base)/1e6)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("DROP: %.1f MB -> %.1f MB in %v", float64(full)/1e6, float64(after)/1e6, time.Since(start).Round(time.Millisecond))
}
