package ops_test

import (
	"math/rand"
	"testing"

	"sluice/exec/flow"
	"sluice/exec/spec"
	"sluice/sql/types"
)

// TestJoinLookupSpillAgainstBruteForce: a lookup join (the right side as
// of processing time) with every bucket spilled (a state cache of 0
// bytes) and checkpoints that commit only after the next batch: each left
// row joins exactly the right rows present when it is processed. The
// right side gets many keys (so its buckets are evicted and forgotten) in
// bulk first, as a lookup table's snapshot does, then changes now and
// then.
func TestJoinLookupSpillAgainstBruteForce(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		n := joinNode(spec.InnerJoin, nil)
		n.Temporal = true
		ck := newCheckpointer(t)
		ck.db.StateCache().SetLimit(0)
		j := newJoin(t, n, 9, ck.db, nil)
		c := newCollector()
		rng := rand.New(rand.NewSource(seed))
		const keys = 300
		right := map[int64]map[int64]int64{} // key -> value -> count
		want := bag{}
		var commit func()
		step := func(side int, bt *types.Batch) {
			c.step(t, process(j, side, batchChanges(bt)...))
			if commit != nil {
				commit()
				commit = nil
			}
			switch r := rng.Intn(6); {
			case r == 0 && commit == nil:
				commit = ck.begin(t, []flow.Operator{j}, []*collector{c})
			case r == 1 && commit == nil:
				ck.checkpoint(t, []flow.Operator{j}, []*collector{c})
			}
		}
		// The snapshot: every key, in batches.
		for k := int64(0); k < keys; k += 50 {
			bt := types.NewBatch(50)
			for x := k; x < k+50; x++ {
				bt.Add(types.Row{types.NewInt(x), types.NewInt(x * 10)}, 1)
				right[x] = map[int64]int64{x * 10: 1}
			}
			step(1, bt)
		}
		for i := 0; i < 400; i++ {
			if rng.Intn(10) == 0 { // a change of the table
				x := int64(rng.Intn(keys))
				v := int64(rng.Intn(1000))
				bt := types.NewBatch(1)
				bt.Add(types.Row{types.NewInt(x), types.NewInt(v)}, 1)
				right[x][v]++
				step(1, bt)
				continue
			}
			bt := types.NewBatch(16)
			hot := int64(rng.Intn(keys))
			for k := 0; k < 16; k++ {
				x := hot + int64(rng.Intn(3)) // a few keys per batch, as bids of hot auctions
				l := types.Row{types.NewInt(x), types.NewInt(int64(i))}
				bt.Add(l, 1)
				for v, cnt := range right[x] {
					want.add(types.Row{l[0], l[1], types.NewInt(x), types.NewInt(v)}, cnt)
				}
			}
			step(0, bt)
			if !c.total.equal(want) {
				t.Fatalf("seed %d, batch %d: output %v\nwant %v", seed, i, c.total, want)
			}
		}
		if ev, ld := j.Spills(); ev == 0 || ld == 0 {
			t.Fatalf("spilled %d buckets, read back %d", ev, ld)
		}
	}
}
