// Tests of the epoch protocol of DB: EpochWriter writes stay invisible
// until Commit, Commit publishes a snapshot at the committed epoch, older
// snapshots keep their view, reopening restores the committed epoch, DML
// write batches are durable on their own, key helpers (Key, PrefixEnd) and
// concurrent use of one EpochWriter and of snapshots under -race.
package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

func openDB(t *testing.T, dir string) *DB {
	t.Helper()
	db, err := Open(dir)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	return db
}

func mustGet(t *testing.T, get func([]byte) ([]byte, error), key string) []byte {
	t.Helper()
	v, err := get([]byte(key))
	if err != nil {
		t.Fatalf("get %q: %v", key, err)
	}
	return v
}

func scanAll(t *testing.T, scan func([]byte, func(k, v []byte) error) error, prefix string) []string {
	t.Helper()
	var out []string
	err := scan([]byte(prefix), func(k, v []byte) error {
		out = append(out, string(k)+"="+string(v))
		return nil
	})
	if err != nil {
		t.Fatalf("scan %q: %v", prefix, err)
	}
	return out
}

func TestEpochWritesInvisibleUntilCommit(t *testing.T) {
	db := openDB(t, t.TempDir())
	defer db.Close()

	if e := db.CommittedEpoch(); e != 0 {
		t.Fatalf("fresh CommittedEpoch = %d, want 0", e)
	}
	s0 := db.Snapshot()
	defer s0.Release()
	if s0.Epoch != 0 {
		t.Fatalf("fresh snapshot epoch = %d, want 0", s0.Epoch)
	}

	w := db.NewEpochWriter()
	w.Set([]byte("s/a"), []byte("1"))
	w.Set([]byte("s/b"), []byte("2"))

	// Neither the latest state nor any snapshot sees an uncommitted epoch.
	if v := mustGet(t, db.Get, "s/a"); v != nil {
		t.Fatalf("db.Get before commit = %q, want nil", v)
	}
	s1 := db.Snapshot()
	if v := mustGet(t, s1.Get, "s/a"); v != nil {
		t.Fatalf("snapshot.Get before commit = %q, want nil", v)
	}
	if got := scanAll(t, s1.Scan, "s/"); len(got) != 0 {
		t.Fatalf("snapshot.Scan before commit = %v, want nothing", got)
	}
	s1.Release()

	if err := db.Commit(w, 1); err != nil {
		t.Fatal(err)
	}
	if e := db.CommittedEpoch(); e != 1 {
		t.Fatalf("CommittedEpoch = %d, want 1", e)
	}
	s2 := db.Snapshot()
	defer s2.Release()
	if s2.Epoch != 1 {
		t.Fatalf("snapshot epoch after commit = %d, want 1", s2.Epoch)
	}
	if v := mustGet(t, s2.Get, "s/a"); string(v) != "1" {
		t.Fatalf("snapshot.Get after commit = %q, want 1", v)
	}
	if v := mustGet(t, db.Get, "s/b"); string(v) != "2" {
		t.Fatalf("db.Get after commit = %q, want 2", v)
	}
	// The snapshot taken before the commit keeps the old state.
	if v := mustGet(t, s0.Get, "s/a"); v != nil {
		t.Fatalf("old snapshot sees %q after commit, want nil", v)
	}

	// A writer is committed once.
	if err := db.Commit(w, 2); err == nil {
		t.Fatal("second Commit of the same writer succeeded")
	}
	if e := db.CommittedEpoch(); e != 1 {
		t.Fatalf("CommittedEpoch after failed commit = %d, want 1", e)
	}
}

func TestOldSnapshotsKeepTheirEpoch(t *testing.T) {
	db := openDB(t, t.TempDir())
	defer db.Close()

	var snaps []*Snapshot
	for e := uint64(1); e <= 5; e++ {
		w := db.NewEpochWriter()
		w.Set([]byte("s/k"), []byte(strconv.FormatUint(e, 10)))
		w.Set([]byte(fmt.Sprintf("s/e%d", e)), []byte("x"))
		if e == 3 {
			w.Delete([]byte("s/e1"))
		}
		if err := db.Commit(w, e); err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, db.Snapshot())
	}
	for i, s := range snaps {
		e := uint64(i + 1)
		if s.Epoch != e {
			t.Errorf("snapshot %d: Epoch = %d", e, s.Epoch)
		}
		if v := mustGet(t, s.Get, "s/k"); string(v) != strconv.FormatUint(e, 10) {
			t.Errorf("snapshot %d: s/k = %q", e, v)
		}
		var want []string
		for x := uint64(1); x <= e; x++ {
			if x == 1 && e >= 3 {
				continue
			}
			want = append(want, fmt.Sprintf("s/e%d=x", x))
		}
		if got := scanAll(t, s.Scan, "s/e"); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("snapshot %d: scan = %v, want %v", e, got, want)
		}
		s.Release()
	}
}

func TestReopenRestoresCommittedEpoch(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)
	for e := uint64(1); e <= 3; e++ {
		w := db.NewEpochWriter()
		w.Set([]byte(fmt.Sprintf("s/%d", e)), []byte("v"))
		if err := db.Commit(w, e); err != nil {
			t.Fatal(err)
		}
	}
	// An epoch still being collected at shutdown is lost.
	pending := db.NewEpochWriter()
	pending.Set([]byte("s/4"), []byte("v"))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openDB(t, dir)
	defer db.Close()
	if e := db.CommittedEpoch(); e != 3 {
		t.Fatalf("CommittedEpoch after reopen = %d, want 3", e)
	}
	s := db.Snapshot()
	defer s.Release()
	if s.Epoch != 3 {
		t.Fatalf("snapshot epoch after reopen = %d, want 3", s.Epoch)
	}
	want := []string{"s/1=v", "s/2=v", "s/3=v"}
	if got := scanAll(t, s.Scan, "s/"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after reopen: %v, want %v", got, want)
	}
}

func TestOpenCorruptEpochRecord(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)
	wb := db.NewWriteBatch()
	wb.Set([]byte("m/epoch"), []byte{}) // not a uvarint
	if err := db.WriteSync(wb); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir)
	if err == nil {
		t.Fatal("Open with a corrupt epoch record succeeded")
	}
	if c := pgerror.GetCode(err); c != pgcode.DataCorrupted {
		t.Fatalf("code = %s, want %s (%v)", c, pgcode.DataCorrupted, err)
	}
	// The store was closed on the error path: Pebble holds a lock on the
	// directory while open, so a second attempt fails the same way rather
	// than on the lock.
	if _, err := Open(dir); pgerror.GetCode(err) != pgcode.DataCorrupted {
		t.Fatalf("second Open: %v", err)
	}
}

func TestWriteSyncDurable(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)
	wb := db.NewWriteBatch()
	wb.Set([]byte("l/1"), []byte("a"))
	wb.Set([]byte("l/2"), []byte("b"))
	wb.Set([]byte("l/3"), []byte("c"))
	if err := db.WriteSync(wb); err != nil {
		t.Fatal(err)
	}
	wb = db.NewWriteBatch()
	wb.Delete([]byte("l/2"))
	if err := db.WriteSync(wb); err != nil {
		t.Fatal(err)
	}
	// DML is visible to the latest state at once, but not to the committed
	// snapshot, which changes only at an epoch commit.
	if v := mustGet(t, db.Get, "l/1"); string(v) != "a" {
		t.Fatalf("db.Get = %q", v)
	}
	s := db.Snapshot()
	if v := mustGet(t, s.Get, "l/1"); v != nil {
		t.Fatalf("snapshot sees DML before any commit: %q", v)
	}
	s.Release()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openDB(t, dir)
	defer db.Close()
	want := []string{"l/1=a", "l/3=c"}
	if got := scanAll(t, db.Scan, "l/"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after reopen: %v, want %v", got, want)
	}
	if e := db.CommittedEpoch(); e != 0 {
		t.Fatalf("DML moved the committed epoch to %d", e)
	}
}

func TestEpochWriterDeleteRangeAndApply(t *testing.T) {
	db := openDB(t, t.TempDir())
	defer db.Close()
	w := db.NewEpochWriter()
	for i := 0; i < 6; i++ {
		w.Set([]byte(fmt.Sprintf("s/%d", i)), []byte("v"))
	}
	if err := db.Commit(w, 1); err != nil {
		t.Fatal(err)
	}

	w = db.NewEpochWriter()
	w.DeleteRange([]byte("s/1"), []byte("s/4")) // 1, 2, 3
	local := db.pdb.NewBatch()
	if err := local.Set([]byte("s/9"), []byte("applied"), nil); err != nil {
		t.Fatal(err)
	}
	if err := local.Delete([]byte("s/5"), nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Apply(local); err != nil {
		t.Fatal(err)
	}
	if err := db.Commit(w, 2); err != nil {
		t.Fatal(err)
	}
	s := db.Snapshot()
	defer s.Release()
	want := []string{"s/0=v", "s/4=v", "s/9=applied"}
	if got := scanAll(t, s.Scan, "s/"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestScanBounds(t *testing.T) {
	db := openDB(t, t.TempDir())
	defer db.Close()
	w := db.NewEpochWriter()
	for _, k := range []string{"a", "s", "s/", "s/1", "s/2", "s/3", "s0", "t"} {
		w.Set([]byte(k), []byte("v"))
	}
	w.Set([]byte("s/\xff"), []byte("v"))
	w.Set([]byte("s/\xff\xff"), []byte("v"))
	if err := db.Commit(w, 1); err != nil {
		t.Fatal(err)
	}
	s := db.Snapshot()
	defer s.Release()

	want := []string{"s/=v", "s/1=v", "s/2=v", "s/3=v", "s/\xff=v", "s/\xff\xff=v"}
	for name, scan := range map[string]func([]byte, func(k, v []byte) error) error{"db": db.Scan, "snapshot": s.Scan} {
		if got := scanAll(t, scan, "s/"); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
			t.Errorf("%s.Scan(s/) = %q, want %q", name, got, want)
		}
		if got := scanAll(t, scan, "s/\xff"); len(got) != 2 {
			t.Errorf("%s.Scan(s/\\xff) = %q, want 2 keys", name, got)
		}
	}

	var got []string
	err := s.ScanRange([]byte("s/1"), []byte("s/3"), func(k, _ []byte) error {
		got = append(got, string(k))
		return nil
	})
	if err != nil || fmt.Sprint(got) != "[s/1 s/2]" {
		t.Fatalf("ScanRange = %v, %v", got, err)
	}

	// An error from f stops the scan and is returned as is.
	stop := errors.New("stop")
	n := 0
	err = s.Scan([]byte("s/"), func(_, _ []byte) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	})
	if err != stop || n != 2 {
		t.Fatalf("Scan with error: err=%v after %d keys", err, n)
	}
	n = 0
	err = s.ScanRange([]byte("a"), []byte("z"), func(_, _ []byte) error { n++; return stop })
	if err != stop || n != 1 {
		t.Fatalf("ScanRange with error: err=%v after %d keys", err, n)
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		none     bool // no upper bound
	}{
		{in: "a", want: "b"},
		{in: "s/", want: "s0"},
		{in: "a\x00", want: "a\x01"},
		{in: "a\xff", want: "b"},
		{in: "ab\xff\xff", want: "ac"},
		{in: "a\xfe\xff", want: "a\xff"},
		{in: "\xff", none: true},
		{in: "\xff\xff\xff", none: true},
		{in: "", none: true},
	} {
		in := []byte(tc.in)
		got := PrefixEnd(in)
		if string(in) != tc.in {
			t.Errorf("PrefixEnd(%q) modified its argument to %q", tc.in, in)
		}
		if tc.none {
			if got != nil {
				t.Errorf("PrefixEnd(%q) = %q, want nil", tc.in, got)
			}
			continue
		}
		if string(got) != tc.want {
			t.Errorf("PrefixEnd(%q) = %q, want %q", tc.in, got, tc.want)
		}
		// Every key with the prefix sorts below the end; the end itself does not
		// have the prefix.
		for _, suffix := range []string{"", "\x00", "\xff", "\xff\xff\xff\xff"} {
			if k := tc.in + suffix; bytes.Compare([]byte(k), got) >= 0 {
				t.Errorf("PrefixEnd(%q) = %q is not above %q", tc.in, got, k)
			}
		}
		if bytes.HasPrefix(got, in) {
			t.Errorf("PrefixEnd(%q) = %q has the prefix", tc.in, got)
		}
	}
}

func TestKey(t *testing.T) {
	k := Key(SpaceState, 0x0102030405060708, []byte("ab"), []byte("c"))
	want := []byte{'s', '/', 1, 2, 3, 4, 5, 6, 7, 8, 'a', 'b', 'c'}
	if !bytes.Equal(k, want) {
		t.Fatalf("Key = %q, want %q", k, want)
	}
	if cap(k) != len(k) {
		t.Errorf("Key allocated %d bytes for %d", cap(k), len(k))
	}
	// Ids order numerically, so one id's keys never interleave with another's.
	a, b := Key(SpaceState, 255), Key(SpaceState, 256)
	if bytes.Compare(a, b) >= 0 || bytes.Compare(PrefixEnd(a), b) > 0 {
		t.Fatalf("Key(255)=%x, Key(256)=%x out of order", a, b)
	}
}

// TestEpochWriterConcurrentSet writes one epoch from several goroutines, as
// the operators of a job do at a barrier.
func TestEpochWriterConcurrentSet(t *testing.T) {
	db := openDB(t, t.TempDir())
	defer db.Close()
	const writers, perWriter = 8, 300
	w := db.NewEpochWriter()
	var wg sync.WaitGroup
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				k := Key(SpaceState, uint64(g), binary.BigEndian.AppendUint32(nil, uint32(i)))
				w.Set(k, []byte(strconv.Itoa(g*perWriter+i)))
				if i%10 == 0 {
					// A key written and deleted in the same epoch stays deleted.
					d := Key(SpaceState, uint64(g), []byte("tmp"))
					w.Set(d, []byte("x"))
					w.Delete(d)
				}
			}
		}()
	}
	wg.Wait()
	if err := db.Commit(w, 1); err != nil {
		t.Fatal(err)
	}
	s := db.Snapshot()
	defer s.Release()
	for g := 0; g < writers; g++ {
		n := 0
		err := s.Scan(Key(SpaceState, uint64(g)), func(k, v []byte) error {
			if bytes.HasSuffix(k, []byte("tmp")) {
				return fmt.Errorf("deleted key %q is visible", k)
			}
			i := int(binary.BigEndian.Uint32(k[10:]))
			if string(v) != strconv.Itoa(g*perWriter+i) {
				return fmt.Errorf("key %x = %q", k, v)
			}
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n != perWriter {
			t.Fatalf("writer %d: %d keys, want %d", g, n, perWriter)
		}
	}
}

// TestSnapshotsAtomicUnderCommits reads while epochs commit: every
// snapshot's contents belong to exactly its epoch.
func TestSnapshotsAtomicUnderCommits(t *testing.T) {
	db := openDB(t, t.TempDir())
	defer db.Close()
	const epochs = 40
	done := make(chan struct{})
	errc := make(chan error, 4)
	var wg sync.WaitGroup
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				s := db.Snapshot()
				a, err1 := s.Get([]byte("s/a"))
				b, err2 := s.Get([]byte("s/b"))
				e := s.Epoch
				s.Release()
				if err := errors.Join(err1, err2); err != nil {
					errc <- err
					return
				}
				want := ""
				if e > 0 {
					want = strconv.FormatUint(e, 10)
				}
				if string(a) != want || string(b) != want {
					errc <- fmt.Errorf("snapshot of epoch %d sees a=%q b=%q", e, a, b)
					return
				}
			}
		}()
	}
	for e := uint64(1); e <= epochs; e++ {
		w := db.NewEpochWriter()
		v := []byte(strconv.FormatUint(e, 10))
		w.Set([]byte("s/a"), v)
		w.Set([]byte("s/b"), v)
		if err := db.Commit(w, e); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	if e := db.CommittedEpoch(); e != epochs {
		t.Fatalf("CommittedEpoch = %d", e)
	}
}

// TestMergedCountToZeroStaysZero: a count Set in one epoch and brought to
// 0 by a Merge in a later one reads as 0 after compactions and a reopen:
// it does not come back as the old count (see countMerger).
func TestMergedCountToZeroStaysZero(t *testing.T) {
	for _, ingest := range []bool{false, true} {
		dir := t.TempDir()
		db := openDB(t, dir)
		if ingest {
			db.SetIngestBytes(0, 600)
		}
		k := []byte("s/x/row")
		for e, write := range []func(w *EpochWriter){
			func(w *EpochWriter) {
				w.Set([]byte("s/x/a"), binary.AppendVarint(nil, 1))
				w.Set(k, binary.AppendVarint(nil, 1))
			},
			func(w *EpochWriter) { w.NewRun().Merge(k, -1) },
			func(w *EpochWriter) { w.NewRun().Set([]byte("s/x/z"), binary.AppendVarint(nil, 1)) },
		} {
			w := db.NewEpochWriter()
			write(w)
			if err := db.Commit(w, uint64(e+1)); err != nil {
				t.Fatal(err)
			}
			if err := db.pdb.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.pdb.Compact([]byte("s/"), []byte("t/"), true); err != nil {
			t.Fatal(err)
		}
		db.Close()
		db = openDB(t, dir)
		if v := mustGet(t, db.Get, string(k)); len(v) != 1 || v[0] != 0 {
			t.Errorf("ingest=%v: count after compaction %x, want 0", ingest, v)
		}
		if v := mustGet(t, db.Get, "s/x/a"); len(v) != 1 || v[0] != 2 {
			t.Errorf("ingest=%v: s/x/a = %x, want count 1", ingest, v)
		}
		db.Close()
	}
}

// TestShareAbsorbDiscard: a share's writes (a batch and a run) reach the
// epoch only when absorbed, after the epoch's own writes; a discarded
// share leaves no trace; a share absorbed twice is an error.
func TestShareAbsorbDiscard(t *testing.T) {
	db := openDB(t, t.TempDir())
	defer db.Close()
	w := db.NewEpochWriter()
	w.Set([]byte("s/x"), []byte("epoch"))
	keep, drop := db.NewShareWriter(), db.NewShareWriter()
	keep.Set([]byte("s/x"), []byte("share")) // after the epoch's own write
	keep.Merge([]byte("s/n"), 2)
	keep.NewRun().Set([]byte("s/r"), []byte("run"))
	drop.Set([]byte("s/d"), []byte("dropped"))
	drop.NewRun().Set([]byte("s/dr"), []byte("dropped"))
	if err := w.Absorb(keep); err != nil {
		t.Fatal(err)
	}
	drop.Discard()
	if err := w.Absorb(keep); err == nil {
		t.Fatal("a share absorbed twice was accepted")
	}
	if err := db.Commit(w, 1); err != nil {
		t.Fatal(err)
	}
	s := db.Snapshot()
	defer s.Release()
	if got := scanAll(t, s.Scan, "s/"); fmt.Sprint(got) != "[s/n=\x04 s/r=run s/x=share]" {
		t.Fatalf("committed %q", got)
	}
}
