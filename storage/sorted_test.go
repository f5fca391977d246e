package storage

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestSortedFilesMatchBatches commits the same random epochs to two
// stores: one takes every write in its batch, the other takes some of them
// in sorted files (after the batch's, as a file's writes apply). The two
// must hold the same contents after every epoch and after reopening, and
// no file may be left in the ingest directory.
func TestSortedFilesMatchBatches(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	a, b := openDB(t, dirA), openDB(t, dirB)
	rng := rand.New(rand.NewSource(11))
	key := func(p byte, i int) []byte { return []byte(fmt.Sprintf("s/%c/%03d", p, i)) }
	count := func(n int64) []byte { return binary.AppendVarint(nil, n) }
	for e := uint64(1); e <= 40; e++ {
		wa, wb := a.NewEpochWriter(), b.NewEpochWriter()
		for i := rng.Intn(30); i > 0; i-- {
			p, k := byte('a'+rng.Intn(3)), rng.Intn(50)
			switch rng.Intn(6) {
			case 0, 1, 2:
				v := count(int64(rng.Intn(5) + 1))
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
				d := int64(rng.Intn(3) + 1)
				wa.Merge(key(p, k), d)
				wb.Merge(key(p, k), d)
			}
		}
		// Files, each over one prefix in key order, some keys also
		// written by the batch: the file's write wins.
		for f := rng.Intn(3); f > 0; f-- {
			sf, err := wb.NewSortedFile()
			if err != nil {
				t.Fatal(err)
			}
			p := byte('a' + rng.Intn(3))
			for k := rng.Intn(5); k < 50; k += 1 + rng.Intn(6) {
				if rng.Intn(4) == 0 {
					wa.Delete(key(p, k))
					sf.Delete(key(p, k))
				} else {
					v := count(int64(rng.Intn(9) + 1))
					wa.Set(key(p, k), v)
					sf.Set(key(p, k), v)
				}
			}
			if err := sf.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Commit(wa, e); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(wb, e); err != nil {
			t.Fatal(err)
		}
		if ca, cb := scanCounts(t, a), scanCounts(t, b); !reflect.DeepEqual(ca, cb) {
			t.Fatalf("epoch %d: batch store %v\nsorted-file store %v", e, ca, cb)
		}
	}
	left, err := os.ReadDir(filepath.Join(dirB, ingestDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("ingest directory holds %d files after the commits", len(left))
	}
	want := scanCounts(t, a)
	b.Close()
	b = openDB(t, dirB)
	defer b.Close()
	defer a.Close()
	if got := scanCounts(t, b); !reflect.DeepEqual(got, want) {
		t.Fatalf("after reopening: %v, want %v", got, want)
	}

	// A discarded share removes its file; keys out of order are refused.
	s := b.NewShareWriter()
	sf, err := s.NewSortedFile()
	if err != nil {
		t.Fatal(err)
	}
	sf.Set([]byte("s/z/2"), count(1))
	sf.Set([]byte("s/z/1"), count(1))
	if err := sf.Close(); err == nil {
		t.Fatal("a key out of order was accepted")
	}
	s.Discard()
	if _, err := os.Stat(sf.path); !os.IsNotExist(err) {
		t.Fatalf("discarded share's file: %v", err)
	}
}
