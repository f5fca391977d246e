package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// mountTmpfs mounts a tmpfs of sizeMB on a fresh directory, unmounted when
// the test ends (after the servers started later are gone).
func mountTmpfs(t *testing.T, sizeMB int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dM", sizeMB), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fill writes path until the file system is full (ENOSPC) and returns the
// bytes written.
func fill(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	var n int64
	for {
		w, err := f.Write(buf)
		n += int64(w)
		if errors.Is(err, syscall.ENOSPC) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func freeBytes(t *testing.T, dir string) uint64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return st.Bavail * uint64(st.Bsize)
}

func queryOne(t *testing.T, conn *pgx.Conn, sql string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := QueryText(ctx, conn, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return res.Rows[0][0]
}

// TestDiskFull fills the file system of a real sluice's data directory:
// inserts fail with 53100 while SELECTs, other sessions and the process
// carry on; once the filler is gone, inserts work again without a
// restart, and every acknowledged row survives a kill -9.
func TestDiskFull(t *testing.T) {
	mnt := mountTmpfs(t, 200)
	s := StartServer(t, Options{DataDir: filepath.Join(mnt, "data"), ExtraArgs: []string{"--disk-reserve-mb", "32"},
		CheckpointInterval: 200 * time.Millisecond})
	conn := s.Connect(t)
	defer conn.Close(context.Background())
	other := s.Connect(t)
	defer other.Close(context.Background())
	ExecAll(t, conn, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)",
		"CREATE MATERIALIZED VIEW n AS SELECT count(*) AS c FROM t")
	acked := 0
	insert := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err := conn.Exec(ctx, fmt.Sprintf("INSERT INTO t VALUES (%d, '%s')", acked, strings.Repeat("x", 500)))
		if err == nil {
			acked++
		}
		return err
	}
	for i := 0; i < 100; i++ {
		if err := insert(); err != nil {
			t.Fatal(err)
		}
	}
	ExecAll(t, conn, "FLUSH")

	filler := filepath.Join(mnt, "filler")
	n := fill(t, filler)
	t.Logf("filler: %d MiB; %d bytes free", n>>20, freeBytes(t, mnt))

	for i := 0; i < 5; i++ {
		err := insert()
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "53100" || !strings.HasPrefix(pgErr.Message, "could not write to file") ||
			!strings.HasSuffix(pgErr.Message, "No space left on device") {
			t.Fatalf("INSERT on a full disk: want 53100 could not write to file \"…\": No space left on device, got %v", err)
		}
		if i == 0 {
			t.Logf("INSERT on a full disk: %s (%s) DETAIL: %s HINT: %s", pgErr.Message, pgErr.Code, pgErr.Detail, pgErr.Hint)
		}
	}
	if got := queryOne(t, conn, "SELECT count(*) FROM t"); got != "100" {
		t.Fatalf("SELECT count(*) on a full disk: %s", got)
	}
	// DDL and FLUSH, which wait for a checkpoint, fail rather than hang.
	for _, stmt := range []string{"CREATE TABLE u (a INT)", "FLUSH"} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := conn.Exec(ctx, stmt)
		cancel()
		if PgCode(err) != "53100" {
			t.Fatalf("%s on a full disk: want 53100, got %v", stmt, err)
		}
	}
	if got := queryOne(t, other, "SELECT c FROM n"); got != "100" {
		t.Fatalf("another session's view read on a full disk: %s", got)
	}
	if got := queryOne(t, other, "SELECT 1 + 1"); got != "2" {
		t.Fatal(got)
	}
	// A new session connects too.
	third := s.Connect(t)
	if got := queryOne(t, third, "SELECT count(*) FROM t WHERE id < 10"); got != "10" {
		t.Fatalf("a new session on a full disk: %s", got)
	}
	third.Close(context.Background())
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(s.Logs(), "waits for disk space") {
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint stalled on the full disk:\n%s", s.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !s.Running() {
		t.Fatal("sluice died on a full disk")
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// Writes resume by themselves.
	deadline = time.Now().Add(20 * time.Second)
	for {
		err := insert()
		if err == nil {
			break
		}
		if PgCode(err) != "53100" || time.Now().After(deadline) {
			t.Fatalf("INSERT after space returned: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	ExecAll(t, conn, "CREATE TABLE u (a INT)", "INSERT INTO u VALUES (1)")
	for i := 0; i < 49; i++ {
		if err := insert(); err != nil {
			t.Fatal(err)
		}
	}
	ExecAll(t, conn, "FLUSH")
	if got := queryOne(t, other, "SELECT c FROM n"); got != "150" {
		t.Fatalf("view after space returned: %s", got)
	}
	if !strings.Contains(s.Logs(), "resumes") {
		t.Fatalf("the checkpoint did not say it resumed:\n%s", s.Logs())
	}

	// Every acknowledged row is there after a crash.
	conn.Close(context.Background())
	other.Close(context.Background())
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	c := s.Connect(t)
	defer c.Close(context.Background())
	want := fmt.Sprint(acked)
	if got := queryOne(t, c, "SELECT count(*) FROM t"); got != want || acked != 150 {
		t.Fatalf("after restart: %s rows, %d acknowledged", got, acked)
	}
	if got := queryOne(t, c, fmt.Sprintf("SELECT count(*) FROM t WHERE id >= 0 AND id < %d", acked)); got != want {
		t.Fatalf("after restart: %s of the acknowledged ids", got)
	}
	if got := queryOne(t, c, "SELECT count(*) FROM u"); got != "1" {
		t.Fatalf("after restart: table u has %s rows", got)
	}
}

// TestDiskFullByInserts fills the disk the way a user would, with the
// default reserve: bulk inserts until 53100, through memtable flushes and
// WAL rotations near the limit. Long (a 700 MiB tmpfs); run it with
// SLUICE_DISKFULL_LONG=1 go test ./tests/ -run TestDiskFullByInserts -v
func TestDiskFullByInserts(t *testing.T) {
	if os.Getenv("SLUICE_DISKFULL_LONG") == "" {
		t.Skip("set SLUICE_DISKFULL_LONG=1 to run")
	}
	mnt := mountTmpfs(t, 700)
	s := StartServer(t, Options{DataDir: filepath.Join(mnt, "data")})
	conn := s.Connect(t)
	defer conn.Close(context.Background())
	ExecAll(t, conn, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)")
	const batch = 20000
	acked := 0
	start := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		_, err := conn.Exec(ctx, fmt.Sprintf("INSERT INTO t SELECT g, repeat(md5(g::text), 32) FROM generate_series(%d, %d) g", acked, acked+batch-1))
		cancel()
		if err != nil {
			if PgCode(err) != "53100" {
				t.Fatalf("after %d rows: %v", acked, err)
			}
			t.Logf("53100 after %d rows (%v): %v; %d MiB free", acked, time.Since(start).Round(time.Second), err, freeBytes(t, mnt)>>20)
			break
		}
		acked += batch
	}
	if got := queryOne(t, conn, "SELECT count(*) FROM t"); got != fmt.Sprint(acked) {
		t.Fatalf("%s rows, %d acknowledged", got, acked)
	}
	if !s.Running() {
		t.Fatal("sluice died")
	}
	conn.Close(context.Background())
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	c := s.Connect(t)
	defer c.Close(context.Background())
	if got := queryOne(t, c, "SELECT count(*) FROM t"); got != fmt.Sprint(acked) {
		t.Fatalf("after restart: %s rows, %d acknowledged", got, acked)
	}
}
