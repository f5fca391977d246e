// Tests of Materialize: keyed relations and multisets, changes arriving out
// of order (+new before -old for one key), the contents written at
// Checkpoint (read back with DecodeRelValue), the row counter, and
// restoring the relation from the store.
package ops_test

import (
	"testing"

	"sluice/exec/flow"
	"sluice/exec/ops"
	"sluice/sql/types"
	"sluice/storage"
)

// relContents reads relation rel from the latest committed snapshot, with
// each row's multiplicity, and checks every key against the row it holds.
func relContents(t *testing.T, db *storage.DB, rel uint64, key []int) bag {
	t.Helper()
	s := db.Snapshot()
	defer s.Release()
	prefix := storage.Key(storage.SpaceRelation, rel)
	out := bag{}
	err := s.Scan(prefix, func(k, v []byte) error {
		n, r, err := ops.DecodeRelValue(v)
		if err != nil {
			return err
		}
		if n <= 0 {
			t.Errorf("stored multiplicity %d for %s", n, fmtRow(r))
		}
		if want := ops.RelKey(nil, key, r); string(k[len(prefix):]) != string(want) {
			t.Errorf("row %s stored under key %x, want %x", fmtRow(r), k[len(prefix):], want)
		}
		out.add(r, n)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func newMat(t *testing.T, rel uint64, key []int, db *storage.DB) *ops.Materialize {
	t.Helper()
	m, err := ops.NewMaterialize(rel, key, db)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMaterializeKeyed(t *testing.T) {
	ck := newCheckpointer(t)
	key := []int{0}
	m := newMat(t, 5, key, ck.db)
	c := newCollector()
	checkpoint := func() { ck.checkpoint(t, []flow.Operator{m}, []*collector{c}) }
	want := func(rows ...string) {
		t.Helper()
		if got := relContents(t, ck.db, 5, key); !got.equal(bagOf(rows...)) {
			t.Fatalf("relation = %v, want %v", got, bagOf(rows...))
		}
	}

	c.step(t, process(m, 0, ins(row(1, "a")), ins(row(2, "b")), ins(row(3, "c"))))
	// Nothing is visible before the barrier.
	want()
	checkpoint()
	want("(1,'a')", "(2,'b')", "(3,'c')")

	// An update in order, and one out of order (+new before -old).
	c.step(t, process(m, 0, del(row(1, "a")), ins(row(1, "A"))))
	c.step(t, process(m, 0, ins(row(2, "B")), del(row(2, "b"))))
	checkpoint()
	want("(1,'A')", "(2,'B')", "(3,'c')")

	// Out of order across batches of one epoch: the key is transiently
	// doubled, then back to one row.
	c.step(t, process(m, 0, ins(row(3, "C"))))
	c.step(t, process(m, 0, del(row(3, "c"))))
	// A delete and re-insert of the same key in one epoch.
	c.step(t, process(m, 0, del(row(1, "A"))))
	c.step(t, process(m, 0, ins(row(1, "a2"))))
	// An insert and delete of a new key: nothing stored.
	c.step(t, process(m, 0, ins(row(9, "x")), del(row(9, "x"))))
	c.step(t, process(m, 0, del(row(2, "B"))))
	checkpoint()
	want("(1,'a2')", "(3,'C')")
	if n := m.Rows.Load(); n != 2 {
		t.Fatalf("Rows = %d, want 2", n)
	}
	// Materialize is terminal and emits nothing.
	c.wantTotal(t, bag{})
	if !m.Terminal() {
		t.Fatal("Materialize is not terminal")
	}

	// A restored materialization carries on from the committed contents.
	m = newMat(t, 5, key, ck.db)
	if n := m.Rows.Load(); n != 2 {
		t.Fatalf("restored Rows = %d, want 2", n)
	}
	c.step(t, process(m, 0, del(row(3, "C")), ins(row(3, "c3")), ins(row(4, "d"))))
	checkpoint()
	want("(1,'a2')", "(3,'c3')", "(4,'d')")
	c.step(t, process(m, 0, del(row(1, "a2"))))
	checkpoint()
	want("(3,'c3')", "(4,'d')")
	if n := m.Rows.Load(); n != 2 {
		t.Fatalf("Rows = %d, want 2", n)
	}
}

func TestMaterializeMultiset(t *testing.T) {
	ck := newCheckpointer(t)
	m := newMat(t, 6, nil /* key: the whole row */, ck.db)
	c := newCollector()
	checkpoint := func() { ck.checkpoint(t, []flow.Operator{m}, []*collector{c}) }
	want := func(rows ...string) {
		t.Helper()
		if got := relContents(t, ck.db, 6, nil); !got.equal(bagOf(rows...)) {
			t.Fatalf("relation = %v, want %v", got, bagOf(rows...))
		}
	}

	c.step(t, process(m, 0, ins(row(1, "a")), ins(row(1, "a")), ins(row(nil, "n")), change{row(2, nil), 3}))
	checkpoint()
	want("2×(1,'a')", "(NULL,'n')", "3×(2,NULL)")
	if n := m.Rows.Load(); n != 6 {
		t.Fatalf("Rows = %d, want 6", n)
	}

	c.step(t, process(m, 0, del(row(1, "a")), change{row(2, nil), -3}))
	checkpoint()
	want("(1,'a')", "(NULL,'n')")

	m = newMat(t, 6, nil, ck.db)
	if n := m.Rows.Load(); n != 2 {
		t.Fatalf("restored Rows = %d, want 2", n)
	}
	c.step(t, process(m, 0, del(row(1, "a")), ins(row(7, "z"))))
	checkpoint()
	want("(NULL,'n')", "(7,'z')")
	// Relations do not leak into each other.
	if got := relContents(t, ck.db, 5, nil); len(got) != 0 {
		t.Fatalf("relation 5 = %v", got)
	}
}

func TestRelValueRoundTrip(t *testing.T) {
	r := types.Row{types.NewInt(-4), types.Null, types.NewString("x"), dec("12.50"), types.NewFloat(0.25), types.NewBool(true)}
	for _, n := range []int64{1, 2, 1 << 40} {
		gn, gr, err := ops.DecodeRelValue(ops.EncodeRelValue(n, r))
		if err != nil || gn != n || fmtRow(gr) != fmtRow(r) {
			t.Fatalf("round trip of %d×%s = %d×%s, %v", n, fmtRow(r), gn, fmtRow(gr), err)
		}
	}
	if _, _, err := ops.DecodeRelValue(nil); err == nil {
		t.Fatal("DecodeRelValue(nil) succeeded")
	}
	// The key of a keyed relation is its key columns only.
	if a, b := ops.RelKey(nil, []int{0}, row(1, "a")), ops.RelKey(nil, []int{0}, row(1, "b")); string(a) != string(b) {
		t.Fatal("RelKey depends on non-key columns")
	}
	if a, b := ops.RelKey(nil, nil, row(1, "a")), ops.RelKey(nil, nil, row(1, "b")); string(a) == string(b) {
		t.Fatal("RelKey of a multiset ignores columns")
	}
}
