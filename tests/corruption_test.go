package tests

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Flipped bytes in each kind of store file, against a real sluice process:
// a damaged WAL record before the tail, MANIFEST or sstable makes sluice
// refuse to start, naming the file, exit non-zero and change nothing;
// --recover starts and logs what it did. A torn final WAL record (a crash
// mid-write) is a normal start with every acknowledged row.

const corruptRows = 200

// corruptSetup starts a server, writes corruptRows acknowledged rows, one
// statement each, and returns the server (running) and its data dir.
func corruptSetup(t *testing.T) *Server {
	t.Helper()
	s := StartServer(t, Options{})
	conn := s.Connect(t)
	defer conn.Close(context.Background())
	ExecAll(t, conn, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)")
	for i := 0; i < corruptRows; i++ {
		ExecAll(t, conn, fmt.Sprintf("INSERT INTO t VALUES (%d, '%s')", i, strings.Repeat("v", 100)))
	}
	return s
}

// rowCount returns SELECT count(*) FROM t.
func rowCount(t *testing.T, s *Server) int {
	t.Helper()
	conn := s.Connect(t)
	defer conn.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := QueryText(ctx, conn, "SELECT count(*) FROM t")
	if err != nil {
		t.Fatalf("SELECT count(*): %v", err)
	}
	n, _ := strconv.Atoi(res.Rows[0][0])
	return n
}

// storeFile returns the data directory's file matching pattern with the
// highest number (the newest).
func storeFile(t *testing.T, dir, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(m) == 0 {
		t.Fatalf("no %s in %s: %v", pattern, dir, err)
	}
	sort.Strings(m)
	return m[len(m)-1]
}

func flip(t *testing.T, path string, off int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if off >= int64(len(data)) {
		t.Fatalf("offset %d beyond %s (%d bytes)", off, path, len(data))
	}
	data[off] ^= 0x40
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func listing(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		if e.Name() == "LOCK" { // flock(2)ed by every start: its time changes
			continue
		}
		info, _ := e.Info()
		fmt.Fprintf(&b, "%s %d %v\n", e.Name(), info.Size(), info.ModTime().UnixNano())
	}
	return b.String()
}

// expectRefused runs sluice on s's data directory and wants it to exit
// non-zero naming file, leaving the directory as it was.
func expectRefused(t *testing.T, s *Server, file string) {
	t.Helper()
	before := listing(t, s.DataDir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, Binary(t), "--listen", s.Addr, "--data-dir", s.DataDir).CombinedOutput()
	if err == nil {
		t.Fatalf("sluice started on a damaged store and exited 0:\n%s", out)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("want exit status 1, got %v:\n%s", err, out)
	}
	if !strings.Contains(string(out), file) || !strings.Contains(string(out), "--recover") {
		t.Fatalf("the refusal does not name %s or --recover:\n%s", file, out)
	}
	if after := listing(t, s.DataDir); after != before {
		t.Fatalf("a refused start changed the data directory:\n%s->\n%s", before, after)
	}
	t.Logf("refused: %s", lastLines(string(out), 2))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// startRecover starts sluice with --recover on s's directory and returns
// the server (up) and its log.
func startRecover(t *testing.T, s *Server) *Server {
	t.Helper()
	r := StartServer(t, Options{DataDir: s.DataDir, Addr: s.Addr, ExtraArgs: []string{"--recover"}})
	if !strings.Contains(r.Logs(), "RECOVER") || !strings.Contains(r.Logs(), "LOST") {
		t.Fatalf("--recover did not say what it did:\n%s", r.Logs())
	}
	if q, _ := filepath.Glob(filepath.Join(s.DataDir, "corrupt-*")); len(q) != 1 {
		t.Fatalf("no corrupt-<time> folder: %v", q)
	}
	return r
}

func TestCorruptionWAL(t *testing.T) {
	s := corruptSetup(t)
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	wal := storeFile(t, s.DataDir, "*.log")
	st, err := os.Stat(wal)
	if err != nil {
		t.Fatal(err)
	}
	flip(t, wal, st.Size()/2)
	expectRefused(t, s, wal)

	r := startRecover(t, s)
	n := rowCount(t, r)
	if n >= corruptRows {
		t.Fatalf("%d rows after recovering a WAL damaged halfway", n)
	}
	t.Logf("--recover: %d of %d rows kept; %s", n, corruptRows, grepLines(r.Logs(), "RECOVER"))
}

func TestCorruptionSSTable(t *testing.T) {
	s := corruptSetup(t)
	// A restart replays the WAL and flushes it into an sstable.
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if n := rowCount(t, s); n != corruptRows {
		t.Fatalf("%d rows", n)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	sst := storeFile(t, s.DataDir, "*.sst")
	st, err := os.Stat(sst)
	if err != nil {
		t.Fatal(err)
	}
	flip(t, sst, st.Size()/3)
	expectRefused(t, s, sst)

	r := startRecover(t, s)
	// The damaged block held some of t's rows: the catalog and
	// the table survive.
	t.Logf("--recover: SELECT count(*) FROM t = %d; %s", rowCount(t, r), grepLines(r.Logs(), "RECOVER"))
}

func TestCorruptionManifest(t *testing.T) {
	s := corruptSetup(t)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	m := storeFile(t, s.DataDir, "MANIFEST-*")
	data, err := os.ReadFile(m)
	if err != nil {
		t.Fatal(err)
	}
	// The first chunk is the snapshot of the store's files; damage the
	// record after it.
	first := 7 + int64(binary.LittleEndian.Uint16(data[4:6]))
	if first+10 >= int64(len(data)) {
		t.Fatalf("MANIFEST %s has one record (%d bytes)", m, len(data))
	}
	flip(t, m, first+9)
	expectRefused(t, s, m)

	r := startRecover(t, s)
	t.Logf("--recover: %d rows; %s", rowCount(t, r), grepLines(r.Logs(), "RECOVER"))
}

func TestCorruptionTornWALTail(t *testing.T) {
	s := corruptSetup(t)
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	// The write the crash interrupted: the first 40 bytes of a 600-byte
	// record, appended to the newest WAL.
	wal := storeFile(t, s.DataDir, "*.log")
	num, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(wal), ".log"), 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	torn := make([]byte, 11+40)
	binary.LittleEndian.PutUint32(torn[0:], 0xdeadbeef)
	binary.LittleEndian.PutUint16(torn[4:], 600)
	torn[6] = 5 // a recyclable full chunk
	binary.LittleEndian.PutUint32(torn[7:], uint32(num))
	for i := 11; i < len(torn); i++ {
		torn[i] = byte(i)
	}
	f, err := os.OpenFile(wal, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(torn); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if n := rowCount(t, s); n != corruptRows {
		t.Fatalf("%d rows after a torn final WAL record, want every acknowledged one (%d)", n, corruptRows)
	}
	if !strings.Contains(s.Logs(), "torn record") {
		t.Fatalf("the torn record was not logged:\n%s", s.Logs())
	}
}

func grepLines(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
