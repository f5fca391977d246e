// Tests of backups and disk hygiene: a fresh store is small, a backup is
// a store at one committed epoch (taken while epochs commit), and the
// space of a reclaimed range returns to the file system.
package storage

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

func usage(t *testing.T, dir string) int64 {
	t.Helper()
	n, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestFreshStoreIsSmall(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)
	w := db.NewEpochWriter()
	w.Set([]byte("c/1"), []byte("a table"))
	if err := db.Commit(w, 1); err != nil {
		t.Fatal(err)
	}
	wb := db.NewWriteBatch()
	wb.Set([]byte("w/1"), []byte("a row"))
	if err := db.WriteSync(wb); err != nil {
		t.Fatal(err)
	}
	n := usage(t, dir)
	t.Logf("fresh store with one epoch and one row: %.1f MB on disk", float64(n)/1e6)
	if n > 10<<20 {
		t.Fatalf("a fresh store takes %d bytes on disk, want under 10 MiB", n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopening (a new WAL) stays small too.
	db = openDB(t, dir)
	defer db.Close()
	if n := usage(t, dir); n > 10<<20 {
		t.Fatalf("after reopening the store takes %d bytes on disk, want under 10 MiB", n)
	}
}

func TestReclaimReturnsSpace(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)
	defer db.Close()
	base := usage(t, dir)
	// 100 MiB of incompressible values, 5 MiB an epoch: odd epochs as
	// operators write large state, in runs that are ingested; even ones
	// in the epoch's batch, through the WAL (which must not stay behind,
	// recycled, at its full size).
	const epochs, perEpoch, valSize = 20, 1280, 4 << 10
	val := make([]byte, valSize)
	keep := Key(SpaceState, 2, []byte("kept"))
	for e := uint64(1); e <= epochs; e++ {
		w := db.NewEpochWriter()
		set := w.Set
		if e%2 == 1 {
			set = w.NewRun().Set
		}
		for i := 0; i < perEpoch; i++ {
			_, _ = rand.Read(val)
			set(Key(SpaceState, 1, binary.BigEndian.AppendUint64(nil, e*perEpoch+uint64(i))), val)
		}
		if e == 1 {
			w.Set(keep, []byte("another object"))
		}
		if err := db.Commit(w, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	full := usage(t, dir)
	if full < base+epochs*perEpoch*valSize {
		t.Fatalf("the store holds %d bytes after writing %d: the test wrote less than it meant", full, epochs*perEpoch*valSize)
	}
	w := db.NewEpochWriter()
	w.Reclaim(Key(SpaceState, 1), Key(SpaceState, 2))
	start := time.Now()
	if err := db.Commit(w, epochs+1); err != nil {
		t.Fatal(err)
	}
	db.WaitReclaimed()
	// Pebble deletes the compacted files in the background.
	after := usage(t, dir)
	for deadline := time.Now().Add(10 * time.Second); after > base+5<<20 && time.Now().Before(deadline); after = usage(t, dir) {
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(start)
	t.Logf("before %.1f MB, after %d MiB written %.1f MB, %.1f MB %v after the reclaiming commit",
		float64(base)/1e6, epochs*perEpoch*valSize>>20, float64(full)/1e6, float64(after)/1e6, took.Round(time.Millisecond))
	if after > base+10<<20 {
		t.Fatalf("after reclaiming the store still takes %d bytes (it took %d before the writes)", after, base)
	}
	if v := mustGet(t, db.Get, string(keep)); string(v) != "another object" {
		t.Fatalf("the key after the reclaimed range reads %q", v)
	}
	n := 0
	if err := db.Scan(Key(SpaceState, 1), func(k, v []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d keys of the reclaimed range remain", n)
	}
}

func TestBackupIsAStore(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)
	defer db.Close()
	if err := os.WriteFile(filepath.Join(dir, "secret.key"), []byte("sealing key"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Each epoch e writes e/<e> and moves last to e; a committer runs
	// while the backups are taken.
	commit := func(e uint64) {
		w := db.NewEpochWriter()
		w.Set([]byte(fmt.Sprintf("e/%08d", e)), []byte("x"))
		w.Set([]byte("last"), binary.BigEndian.AppendUint64(nil, e))
		if err := db.Commit(w, e); err != nil {
			t.Error(err)
		}
	}
	for e := uint64(1); e <= 50; e++ {
		commit(e)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for e := uint64(51); !stop.Load(); e++ {
			commit(e)
		}
	}()
	backups := t.TempDir()
	var dirs []string
	for i := 0; i < 5; i++ {
		d := filepath.Join(backups, fmt.Sprint(i))
		if i == 0 {
			if err := os.Mkdir(d, 0o755); err != nil { // an empty directory is fine
				t.Fatal(err)
			}
		}
		m, err := db.Backup(d)
		if err != nil {
			t.Fatal(err)
		}
		if m.Epoch < 50 || len(m.Files) == 0 || m.Bytes <= 0 {
			t.Fatalf("manifest %+v", m)
		}
		dirs = append(dirs, d)
	}
	stop.Store(true)
	wg.Wait()

	for _, d := range dirs {
		m, err := VerifyBackup(d)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(d, "secret.key")); err != nil || string(b) != "sealing key" {
			t.Fatalf("secret.key in the backup: %q, %v", b, err)
		}
		bdb := openDB(t, d)
		if got := bdb.CommittedEpoch(); got != m.Epoch {
			t.Fatalf("backup %s opens at epoch %d, its manifest says %d", d, got, m.Epoch)
		}
		last := mustGet(t, bdb.Get, "last")
		if binary.BigEndian.Uint64(last) != m.Epoch {
			t.Fatalf("backup at epoch %d holds last = %d", m.Epoch, binary.BigEndian.Uint64(last))
		}
		if got := scanAll(t, bdb.Scan, "e/"); len(got) != int(m.Epoch) {
			t.Fatalf("backup at epoch %d holds %d epochs' keys", m.Epoch, len(got))
		}
		// A backup is a store: it takes the next epoch.
		w := bdb.NewEpochWriter()
		w.Set([]byte("after"), []byte("restore"))
		if err := bdb.Commit(w, m.Epoch+1); err != nil {
			t.Fatal(err)
		}
		if err := bdb.Close(); err != nil {
			t.Fatal(err)
		}
	}

	// A damaged backup file is found.
	m, _ := ReadBackupManifest(dirs[1])
	victim := filepath.Join(dirs[1], m.Files[0].Name)
	if err := os.WriteFile(victim, []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyBackup(dirs[1]); pgerror.GetCode(err) != pgcode.DataCorrupted {
		t.Fatalf("verifying a damaged backup: %v", err)
	}

	for _, c := range []struct {
		dir  string
		code pgcode.Code
	}{
		{"relative/dir", pgcode.InvalidName},
		{dirs[0], pgcode.DuplicateFile},
		{filepath.Join(dir, "inside"), pgcode.InvalidParameterValue},
	} {
		if _, err := db.Backup(c.dir); pgerror.GetCode(err) != c.code {
			t.Errorf("backup into %s: %v, want %s", c.dir, err, c.code)
		}
	}
}
