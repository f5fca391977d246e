package ops_test

import (
	"fmt"
	"math/rand"
	"testing"

	"sluice/exec/flow"
	"sluice/exec/ops"
	"sluice/exec/spec"
	"sluice/sql/types"
)

// TestWindowMaxJoinAgainstBruteForce feeds seeded random rows (id, value,
// time; values from a small range so that maxima tie, times often on a
// window's boundary, some NULLs) with a rising watermark to window max
// joins of several bounds and offsets, and after every batch compares
// the output so far with the join recomputed from all rows so far: per
// TUMBLE window the largest value, and every row with that value whose
// time is within the bounds of the window's end. Along the way the
// operator is checkpointed into a real store and now and then restored
// from it; the windows the watermark closed are dropped from its state.
func TestWindowMaxJoinAgainstBruteForce(t *testing.T) {
	const size = 10
	for _, tc := range []struct{ lo, hi, offset int64 }{
		{-size, 0, 0}, // Nexmark q7: BETWEEN end - size AND end
		{-size, -1, 0},
		{-size, -1, 3},
		{-5, 0, 0},
		{-size, -4, 7},
	} {
		t.Run(fmt.Sprintf("lo%d_hi%d_offset%d", tc.lo, tc.hi, tc.offset), func(t *testing.T) {
			n := &spec.Node{Kind: spec.WindowMaxJoin, WinMax: &spec.WinMaxSpec{Time: 2, Val: 1, Size: size, Offset: tc.offset,
				Lo: tc.lo, Hi: tc.hi, Out: []int{0, 1, 2, 3, 4, 5}}}
			ck := newCheckpointer(t)
			open := func() *ops.WindowMaxJoin {
				j, err := ops.NewWindowMaxJoin(n, 3, 11, ck.db)
				if err != nil {
					t.Fatal(err)
				}
				return j
			}
			j := open()
			c := newCollector()
			rng := rand.New(rand.NewSource(tc.offset*100 + tc.lo*10 + tc.hi))
			var all []types.Row
			now, wm, id := int64(1000), int64(0), 0
			maxWins, maxRows, restores, matched := 0, 0, 0, 0
			for step := 0; step < 800; step++ {
				bt := types.NewBatch(4)
				for k := 1 + rng.Intn(4); k > 0; k-- {
					id++
					v, ts := types.NewInt(int64(rng.Intn(6))), types.NewTimestamp(max(wm, now+int64(rng.Intn(6))-4))
					if rng.Intn(7) == 0 { // on a window's boundary
						ts.I -= ((ts.I-tc.offset)%size + size) % size
						if ts.I < wm {
							ts.I += size
						}
					}
					switch rng.Intn(25) {
					case 0:
						v = types.Null
					case 1:
						ts = types.Null
					}
					r := types.Row{types.NewInt(int64(id)), v, ts}
					bt.Add(r, 1)
					all = append(all, r)
				}
				c.step(t, process(j, 0, batchChanges(bt)...))
				want := windowMaxJoinOf(all, size, tc.offset, tc.lo, tc.hi)
				c.wantTotal(t, want)
				matched = len(want)
				now += int64(rng.Intn(3))
				if rng.Intn(3) == 0 {
					wm = max(wm, now-1-int64(rng.Intn(3)))
					var fwd []flow.Watermark
					c.step(t, watermark(j, 0, flow.Watermark{Col: 2, Ts: wm}, &fwd))
					if len(fwd) != 0 {
						t.Fatalf("watermarks passed on: %v", fwd)
					}
				}
				w, r := j.StoredWindows()
				maxWins, maxRows = max(maxWins, w), max(maxRows, r)
				if checkpointMaybeRestore(t, rng, ck, j, c) {
					j = open()
					restores++
				}
			}
			if restores < 10 || matched < 100 {
				t.Fatalf("%d restores, %d rows matched: the run exercises too little", restores, matched)
			}
			// Open windows only: the watermark trails the rows by a few
			// windows' worth, never the run's ~100.
			if maxWins > 6 || maxRows > 40 {
				t.Fatalf("state held up to %d windows and %d rows of %d", maxWins, maxRows, len(all))
			}
		})
	}
}

// windowMaxJoinOf is the join recomputed: rows (id, value, time) with the
// maximum of each TUMBLE(size, offset) window whose end e has lo <= time -
// e <= hi, as (id, value, time, max, window_start, window_end).
func windowMaxJoinOf(rows []types.Row, size, offset, lo, hi int64) bag {
	maxOf := map[int64]int64{}
	for _, r := range rows {
		if r[1].IsNull() || r[2].IsNull() {
			continue
		}
		e := ops.WindowStart(r[2].I, size, offset) + size
		if m, ok := maxOf[e]; !ok || r[1].I > m {
			maxOf[e] = r[1].I
		}
	}
	out := bag{}
	for _, r := range rows {
		if r[1].IsNull() || r[2].IsNull() {
			continue
		}
		for e, m := range maxOf {
			if d := r[2].I - e; r[1].I == m && d >= lo && d <= hi {
				out.add(types.Row{r[0], r[1], r[2], types.NewInt(m), types.NewTimestamp(e - size), types.NewTimestamp(e)}, 1)
			}
		}
	}
	return out
}

// TestWindowMaxJoinRefusesRetractions: the operator takes an append-only
// input; a retraction is an error, not a silently wrong answer.
func TestWindowMaxJoinRefusesRetractions(t *testing.T) {
	n := &spec.Node{Kind: spec.WindowMaxJoin, WinMax: &spec.WinMaxSpec{Time: 1, Val: 0, Size: 10, Lo: -10, Hi: 0, Out: []int{0, 1}}}
	j, err := ops.NewWindowMaxJoin(n, 2, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	em := flow.NewEmitter(func(*types.Batch) error { return nil })
	if err := j.Process(0, batchOf(del(types.Row{types.NewInt(1), types.NewTimestamp(5)})), em); err == nil {
		t.Fatal("a retraction was accepted")
	}
}

// checkpointMaybeRestore checkpoints op one time in eight, and reports
// whether the caller should then restore it from the store (half of
// those times).
func checkpointMaybeRestore(t *testing.T, rng *rand.Rand, ck *checkpointer, op flow.Operator, c *collector) bool {
	t.Helper()
	if rng.Intn(8) != 0 {
		return false
	}
	ck.checkpoint(t, []flow.Operator{op}, []*collector{c})
	return rng.Intn(2) == 0
}
