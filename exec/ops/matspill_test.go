package ops_test

import (
	"fmt"
	"math/rand"
	"os"
	"testing"

	"sluice/exec/flow"
	"sluice/exec/ops"
)

// TestMaterializeSpillsLargeEpoch runs random changes (inserts, updates
// in and out of order, deletes, duplicates of a multiset) through a keyed
// and a keyless Materialize whose spill budget is one byte, so that every
// batch of an epoch goes to a run file and the epoch's values to a sorted
// file its commit ingests. After each epoch the stored relations must
// equal the model (the multiset of live rows), the row counters agree,
// and no run file stay behind.
func TestMaterializeSpillsLargeEpoch(t *testing.T) {
	defer func(v int64) { ops.MatSpillBytes = v }(ops.MatSpillBytes)
	ops.MatSpillBytes = 1
	ck := newCheckpointer(t)
	key := []int{0}
	keyed, multi := newMat(t, 7, key, ck.db), newMat(t, 8, nil, ck.db)
	ck1, ck2 := newCollector(), newCollector()
	rng := rand.New(rand.NewSource(3))
	live := map[int64]string{} // the keyed relation: id -> value
	mset := bag{}              // the keyless one
	val := func() string { return fmt.Sprintf("v%d", rng.Intn(1000)) }
	for epoch := 0; epoch < 6; epoch++ {
		for batch := 0; batch < 8; batch++ {
			var kc, mc []change
			for i := 0; i < 40; i++ {
				id := int64(rng.Intn(120))
				old, ok := live[id]
				switch {
				case !ok:
					v := val()
					kc = append(kc, ins(row(id, v)))
					live[id] = v
				case rng.Intn(3) == 0:
					kc = append(kc, del(row(id, old)))
					delete(live, id)
				case rng.Intn(2) == 0: // +new before -old
					v := val()
					kc = append(kc, ins(row(id, v)), del(row(id, old)))
					live[id] = v
				default:
					v := val()
					kc = append(kc, del(row(id, old)), ins(row(id, v)))
					live[id] = v
				}
				r := row(id%10, "m")
				if n := mset[fmtRow(r)]; n > 0 && rng.Intn(3) == 0 {
					mc = append(mc, del(r))
					mset.add(r, -1)
				} else {
					mc = append(mc, ins(r))
					mset.add(r, 1)
				}
			}
			ck1.step(t, process(keyed, 0, kc...))
			ck2.step(t, process(multi, 0, mc...))
		}
		ck.checkpoint(t, []flow.Operator{keyed, multi}, []*collector{ck1, ck2})
		want := bag{}
		for id, v := range live {
			want.add(row(id, v), 1)
		}
		if got := relContents(t, ck.db, 7, key); !got.equal(want) {
			t.Fatalf("epoch %d: keyed relation = %v, want %v", epoch, got, want)
		}
		wantM := bag{}
		for k, n := range mset {
			if n > 0 {
				wantM[k] = n
			}
		}
		if got := relContents(t, ck.db, 8, nil); !got.equal(wantM) {
			t.Fatalf("epoch %d: multiset relation = %v, want %v", epoch, got, wantM)
		}
		if got := keyed.Rows.Load(); got != int64(len(live)) {
			t.Fatalf("epoch %d: keyed Rows = %d, want %d", epoch, got, len(live))
		}
	}
	left, err := os.ReadDir(ck.db.BulkDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("%d files left in %s", len(left), ck.db.BulkDir())
	}
	// A restart counts the stored rows.
	if m := newMat(t, 7, key, ck.db); m.Rows.Load() != int64(len(live)) {
		t.Fatalf("restored Rows = %d, want %d", m.Rows.Load(), len(live))
	}
}
