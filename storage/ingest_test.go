package storage

// Tests of epochs committed as ingested sstables: the same random writes
// (batch Set/Delete/Merge/DeleteRange, then runs in and out of key order,
// overlapping and not) committed as batches by one store and ingested by
// another leave the two with the same contents, epoch after epoch and
// after reopening.

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// scanCounts reads every key of the store as key=count, leaving out keys
// whose count is 0 (a merged count that reached 0 is deleted by
// compactions, at a time neither path controls).
func scanCounts(t *testing.T, db *DB) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := db.Scan([]byte("s/"), func(k, v []byte) error {
		n, w := binary.Varint(v)
		if w <= 0 {
			return fmt.Errorf("key %q: bad count %x", k, v)
		}
		if n != 0 {
			out[string(k)] = n
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestIngestedEpochsMatchBatches(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	a, b := openDB(t, dirA), openDB(t, dirB)
	a.SetIngestBytes(1<<40, 0)
	b.SetIngestBytes(0, 600)
	rng := rand.New(rand.NewSource(7))
	key := func(p byte, i int) []byte { return []byte(fmt.Sprintf("s/%c/%03d", p, i)) }
	count := func(n int64) []byte { return binary.AppendVarint(nil, n) }
	for e := uint64(1); e <= 60; e++ {
		wa, wb := a.NewEpochWriter(), b.NewEpochWriter()
		// Batch writes, in random order.
		for i := rng.Intn(40); i > 0; i-- {
			p, k := byte('a'+rng.Intn(4)), rng.Intn(50)
			switch rng.Intn(10) {
			case 0, 1, 2:
				v := count(int64(rng.Intn(5) - 1))
				wa.Set(key(p, k), v)
				wb.Set(key(p, k), v)
			case 3:
				wa.Delete(key(p, k))
				wb.Delete(key(p, k))
			case 4:
				k2 := k + rng.Intn(10)
				wa.DeleteRange(key(p, k), key(p, k2))
				wb.DeleteRange(key(p, k), key(p, k2))
			default:
				d := int64(rng.Intn(5) - 2)
				wa.Merge(key(p, k), d)
				wb.Merge(key(p, k), d)
			}
		}
		// Runs: each over one prefix (sorted or not), sometimes two over
		// the same prefix.
		for r := rng.Intn(4); r > 0; r-- {
			ra, rb := wa.NewRun(), wb.NewRun()
			p := byte('a' + rng.Intn(4))
			sorted := rng.Intn(2) == 0
			k := 0
			for i := rng.Intn(60); i > 0; i-- {
				if sorted {
					k += 1 + rng.Intn(3)
				} else {
					k = rng.Intn(50)
				}
				switch rng.Intn(6) {
				case 0:
					v := count(int64(rng.Intn(5)))
					ra.Set(key(p, k), v)
					rb.Set(key(p, k), v)
				case 1: // the value referred to, not copied
					v := count(int64(rng.Intn(5)))
					ra.SetOwned(key(p, k), v)
					rb.SetOwned(key(p, k), v)
				case 2:
					ra.Delete(key(p, k))
					rb.Delete(key(p, k))
				default:
					d := int64(rng.Intn(5) - 2)
					ra.Merge(key(p, k), d)
					rb.Merge(key(p, k), d)
				}
			}
		}
		if err := a.Commit(wa, e); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(wb, e); err != nil {
			t.Fatal(err)
		}
		ca, cb := scanCounts(t, a), scanCounts(t, b)
		if fmt.Sprint(ca) != fmt.Sprint(cb) {
			t.Fatalf("epoch %d: batches give\n%v\ningests give\n%v", e, ca, cb)
		}
		if e%20 == 0 {
			if err := b.pdb.Compact([]byte("s/"), []byte("t/"), true); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := b.pdb.Metrics().Ingest.Count; n != 60 {
		t.Fatalf("the ingesting store ingested %d epochs, want 60", n)
	}
	var files uint64
	for _, l := range b.pdb.Metrics().Levels {
		files += l.TablesIngested
	}
	if files <= 60 { // 600-byte files: epochs without range deletions are several
		t.Fatalf("%d files ingested in 60 epochs: epochs were not split", files)
	}
	if n := a.pdb.Metrics().Ingest.Count; n != 0 {
		t.Fatalf("the batch store ingested %d epochs, want 0", n)
	}
	want := scanCounts(t, a)
	a.Close()
	b.Close()
	b = openDB(t, dirB)
	defer b.Close()
	if got := scanCounts(t, b); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after reopening: got\n%v\nwant\n%v", got, want)
	}
	if e := b.CommittedEpoch(); e != 60 {
		t.Fatalf("reopened at epoch %d, want 60", e)
	}
}

// TestRunOwnedValueNotPooled: a value a run refers to (SetOwned) is the
// caller's: after the commit the run's pool does not hand its memory out
// for another run to write into, even when it has a pool chunk's size.
func TestRunOwnedValueNotPooled(t *testing.T) {
	for _, ingest := range []int{0, 1 << 40} {
		db := openDB(t, t.TempDir())
		db.SetIngestBytes(ingest, 0)
		v := make([]byte, runChunk)
		for i := range v {
			v[i] = byte(i)
		}
		w := db.NewEpochWriter()
		w.NewRun().SetOwned([]byte("s/owned"), v)
		if err := db.Commit(w, 1); err != nil {
			t.Fatal(err)
		}
		got, err := db.Get([]byte("s/owned"))
		if err != nil || len(got) != len(v) || got[1000] != v[1000] {
			t.Fatalf("ingest %d: read back %d bytes, %v", ingest, len(got), err)
		}
		for i := 0; i < runPoolChunks+1; i++ {
			if c := db.runs.chunk(runChunk); cap(c) > 0 && &c[:1][0] == &v[0] {
				t.Fatalf("ingest %d: the pool handed out the owned value's memory", ingest)
			}
		}
		db.Close()
	}
}

// TestIngestLeftoverRemoved: an epoch sstable a crash left behind (its
// epoch never committed) is removed when the store opens, and its writes
// are not visible.
func TestIngestLeftoverRemoved(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)
	db.Close()
	left := filepath.Join(dir, ingestDir, "epoch-1.sst")
	if err := os.WriteFile(left, []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, dir)
	defer db.Close()
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Fatalf("leftover %s still there: %v", left, err)
	}
}
