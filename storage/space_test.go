package storage

import (
	"io/fs"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/vfs"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// fullFS fails writes to WAL files with ENOSPC while full is set: the
// disk filling between the free-space check and Pebble's write.
type fullFS struct {
	vfs.FS
	full *atomic.Bool
}

type fullFile struct {
	vfs.File
	name string
	full *atomic.Bool
}

func (f fullFile) Write(p []byte) (int, error) {

	if f.full.Load() {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}

func (f fullFile) WriteAt(p []byte, off int64) (int, error) {
	if f.full.Load() {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
	}
	return f.File.WriteAt(p, off)
}

func (fs fullFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {

	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return fullFile{File: f, name: name, full: fs.full}, nil
}

func (fs fullFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	return fs.wrap(name, f, err)
}

func (fs fullFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname)
	return fs.wrap(newname, f, err)
}

// TestWALWriteFailsOnFullDisk: when Pebble's WAL write meets ENOSPC after
// all, the write fails with 53100, the store refuses later writes (Pebble's
// WAL writer keeps the error), reads go on, nothing panics, and a restart
// has every acknowledged write.
func TestWALWriteFailsOnFullDisk(t *testing.T) {
	var full atomic.Bool
	wrapFS = func(base vfs.FS) vfs.FS { return fullFS{FS: base, full: &full} }
	defer func() { wrapFS = nil }()
	dir := t.TempDir()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	writeRows(t, db, 0, 10)
	full.Store(true)
	w := db.NewWriteBatch()
	w.Set([]byte("w/row99999"), []byte("x"))
	err = db.WriteSync(w)
	if pgerror.GetCode(err) != pgcode.DiskFull || !strings.Contains(err.Error(), "No space left on device") && !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("WAL write on a full disk: %v (%s)", err, pgerror.GetCode(err))
	}
	full.Store(false)
	w = db.NewWriteBatch()
	w.Set([]byte("w/row99998"), []byte("x"))
	if err := db.WriteSync(w); pgerror.GetCode(err) != pgcode.DiskFull || !strings.Contains(err.Error(), "restarts") {
		t.Fatalf("write after the WAL failed: %v", err)
	}
	if err := db.WriteRefused(); err == nil {
		t.Fatal("WriteRefused is nil on a failed store")
	}
	if n := countRows(t, db); n < 10 {
		t.Fatalf("reads after the failure: %d rows", n)
	}
	db.Close()
	wrapFS = nil
	db, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n := countRows(t, db); n < 10 {
		t.Fatalf("after restart: %d of the 10 acknowledged rows", n)
	}
}

// TestPebbleFatalOnIOError: Pebble's Fatalf for a failed MANIFEST write
// (an I/O error) marks the store failed instead of ending the process.
func TestPebbleFatalOnIOError(t *testing.T) {
	var logged []string
	g := newSpaceGuard(t.TempDir(), 0, func(f string, a ...any) { logged = append(logged, f) })
	l := pebbleLogger{g}
	l.Fatalf("%s", &fs.PathError{Op: "write", Path: "MANIFEST-000007", Err: syscall.ENOSPC})
	err := g.check(0)
	if pgerror.GetCode(err) != pgcode.DiskFull || len(logged) != 1 {
		t.Fatalf("after a MANIFEST write failed: %v (%s), logged %v", err, pgerror.GetCode(err), logged)
	}
}
