package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// writeRows writes n acknowledged rows r/<i> in n synced batches.
func writeRows(t *testing.T, db *DB, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		w := db.NewWriteBatch()
		w.Set([]byte(fmt.Sprintf("w/row%05d", i)), []byte(strings.Repeat("x", 200)))
		if err := db.WriteSync(w); err != nil {
			t.Fatal(err)
		}
	}
}

func countRows(t *testing.T, db *DB) int {
	t.Helper()
	n := 0
	if err := db.Scan([]byte("w/row"), func(k, v []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func storeFiles(t *testing.T, dir, suffix string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), suffix) || (suffix == "MANIFEST" && strings.HasPrefix(e.Name(), "MANIFEST-")) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// largest returns the biggest of files.
func largest(t *testing.T, files []string) string {
	t.Helper()
	best, size := "", int64(-1)
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > size {
			best, size = f, st.Size()
		}
	}
	if best == "" {
		t.Fatal("no file")
	}
	return best
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[off] ^= 0x5a
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// expectCorrupt opens dir and wants a DataCorrupted error naming file.
func expectCorrupt(t *testing.T, dir, file string) {
	t.Helper()
	before := dirListing(t, dir)
	db, err := Open(dir)
	if err == nil {
		n := countRows(t, db)
		db.Close()
		t.Fatalf("opened a damaged store (%d rows)", n)
	}
	if pgerror.GetCode(err) != pgcode.DataCorrupted || !strings.Contains(err.Error(), file) {
		t.Fatalf("want XX001 naming %s, got %s: %v", file, pgerror.GetCode(err), err)
	}
	if after := dirListing(t, dir); after != before {
		t.Fatalf("a refused start changed the directory:\n%s\n->\n%s", before, after)
	}
}

func dirListing(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		info, _ := e.Info()
		fmt.Fprintf(&b, "%s %d\n", e.Name(), info.Size())
	}
	return b.String()
}

func recoverOpen(t *testing.T, dir string) (*DB, string) {
	t.Helper()
	var log strings.Builder
	db, err := OpenWith(dir, OpenOptions{Recover: true, Logf: func(f string, a ...any) { fmt.Fprintf(&log, f+"\n", a...) }})
	if err != nil {
		t.Fatalf("recover: %v\n%s", err, log.String())
	}
	return db, log.String()
}

func TestCorruptWALRecord(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	writeRows(t, db, 0, 300)
	db.Close()
	wal := largest(t, storeFiles(t, dir, ".log"))
	flipByte(t, wal, 20000) // a record in the middle of 300
	expectCorrupt(t, dir, wal)

	db, log := recoverOpen(t, dir)
	n := countRows(t, db)
	db.Close()
	if n == 0 || n >= 300 || !strings.Contains(log, "LOST") || !strings.Contains(log, wal) {
		t.Fatalf("recovered %d rows; log:\n%s", n, log)
	}
	if q, _ := filepath.Glob(filepath.Join(dir, "corrupt-*", filepath.Base(wal))); len(q) != 1 {
		t.Fatalf("the damaged WAL was not kept aside: %v", q)
	}
	// The recovered store opens normally from now on.
	db, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m := countRows(t, db); m != n {
		t.Fatalf("%d rows, then %d", n, m)
	}
	db.Close()
}

func TestTornWALTail(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	writeRows(t, db, 0, 100)
	db.Close()
	wal := largest(t, storeFiles(t, dir, ".log"))
	data, err := os.ReadFile(wal)
	if err != nil {
		t.Fatal(err)
	}
	end := len(data)
	for end > 0 && data[end-1] == 0 {
		end--
	}
	// Cut the last record short: its final 50 bytes never reached the disk.
	if err := os.WriteFile(wal, data[:end-50], 0o644); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n := countRows(t, db); n != 99 {
		t.Fatalf("%d rows after a torn last write, want 99", n)
	}
}

func TestCorruptSSTable(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	w := db.NewWriteBatch()
	w.Set([]byte("c/\x00\x00\x00\x00\x00\x00\x00\x01"), []byte("catalog"))
	if err := db.WriteSync(w); err != nil {
		t.Fatal(err)
	}
	writeRows(t, db, 0, 300)
	if err := db.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	sst := largest(t, storeFiles(t, dir, ".sst"))
	flipByte(t, sst, 3000)
	expectCorrupt(t, dir, sst)

	db, log := recoverOpen(t, dir)
	defer db.Close()
	// The rows of the damaged block are lost, the others kept.
	if n := countRows(t, db); n == 0 || n >= 300 || !strings.Contains(log, "LOST") || !strings.Contains(log, sst) {
		t.Fatalf("%d rows; log:\n%s", n, log)
	}
	if v, err := db.Get([]byte("c/\x00\x00\x00\x00\x00\x00\x00\x01")); err != nil || v != nil {
		// the catalog key was in the same table: lost too, and said so
		if !strings.Contains(log, "catalog") {
			t.Fatalf("catalog key %q %v; log:\n%s", v, err, log)
		}
	}
}

func TestCorruptManifest(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	writeRows(t, db, 0, 100)
	if err := db.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	writeRows(t, db, 100, 100)
	if err := db.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	m := storeFiles(t, dir, "MANIFEST")
	if len(m) != 1 {
		t.Fatalf("manifests %v", m)
	}
	data, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	first := int64(7 + int(data[4]) | int(data[5])<<8) // the snapshot record
	// The snapshot itself damaged: refused, even with --recover.
	flipByte(t, m[0], 12)
	expectCorrupt(t, dir, m[0])
	if _, err := OpenWith(dir, OpenOptions{Recover: true}); err == nil || !strings.Contains(err.Error(), "nothing to start from") {
		t.Fatalf("recovering from a damaged snapshot record: %v", err)
	}
	flipByte(t, m[0], 12)
	// A later record damaged (the second flush's edit).
	flipByte(t, m[0], first+12)
	expectCorrupt(t, dir, m[0])

	db, log := recoverOpen(t, dir)
	defer db.Close()
	if !strings.Contains(log, "MANIFEST") || !strings.Contains(log, "LOST") {
		t.Fatalf("log:\n%s", log)
	}
	t.Logf("rows after recovering the MANIFEST: %d\n%s", countRows(t, db), log)
}

// TestVerifyCost measures the start-up checksum verification of every
// sstable: SLUICE_VERIFY_MB=1024 go test -run TestVerifyCost -v ./storage/
func TestVerifyCost(t *testing.T) {
	mb, _ := strconv.Atoi(os.Getenv("SLUICE_VERIFY_MB"))
	if mb == 0 {
		t.Skip("SLUICE_VERIFY_MB not set")
	}
	dir := t.TempDir()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	val := make([]byte, 1000)
	for i := range val {
		val[i] = byte(i * 7919 >> 3) // compresses little
	}
	for i := 0; i < mb*1024; i++ {
		w := db.NewWriteBatch()
		for j := 0; j < 1; j++ {
			val[0], val[1], val[2] = byte(i), byte(i>>8), byte(i>>16)
			w.Set([]byte(fmt.Sprintf("s/%012d", i)), val)
		}
		if err := w.b.Commit(pebble.NoSync); err != nil {
			t.Fatal(err)
		}
		w.b.Close()
	}
	if err := db.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	var lines []string
	start := time.Now()
	db, err = OpenWith(dir, OpenOptions{Logf: func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	t.Logf("open took %v; %s", time.Since(start), strings.Join(lines, "; "))
}

// TestCleanRecordFiles checks that undamaged WALs and MANIFESTs, with
// records of every size around the 32 KiB block boundaries (padding of 0
// to 10 bytes), read clean.
func TestCleanRecordFiles(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 60000; i++ {
		w := db.NewWriteBatch()
		w.Set([]byte(fmt.Sprintf("w/%06d", i)), []byte(strings.Repeat("y", (i*37)%101)))
		if err := w.b.Commit(pebble.NoSync); err != nil { // one record each, unsynced
			t.Fatal(err)
		}
		w.b.Close()
		if i%20000 == 19999 {
			if err := db.pdb.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	db.Close()
	files := append(storeFiles(t, dir, ".log"), storeFiles(t, dir, "MANIFEST")...)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		kind, num := recordFileKind(f)
		if d := checkRecords(data, num, kind == "MANIFEST"); d != nil {
			t.Errorf("%s (%d bytes): %+v", f, len(data), *d)
		}
	}
	db, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
}
