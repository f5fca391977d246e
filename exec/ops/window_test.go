package ops_test

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"testing"

	"sluice/exec/flow"
	"sluice/exec/ops"
	"sluice/exec/spec"
	"sluice/sql/types"
	"sluice/storage"
)

// TestWindowIncrementalEqualsRecompute feeds random inserts and deletes to
// Window nodes of every kind and checks, after every batch, that what the
// operator has emitted in total (it recomputes only from the first changed
// row of each touched partition) equals a fresh operator's output over the
// current input. The operator saves its state at random barriers and is
// sometimes recreated from the store; with an append-only input (inserts
// only) a Top-N drops the rows beyond its limit, from the store too.
func TestWindowIncrementalEqualsRecompute(t *testing.T) {
	t.Run("retractions", func(t *testing.T) { testWindowRandom(t, false, false) })
	t.Run("append-only", func(t *testing.T) { testWindowRandom(t, true, false) })
	// CopyRows: the input rows are overwritten after each batch (as a
	// source's slab could be): the window must have copied what it keeps.
	t.Run("retractions, copied rows", func(t *testing.T) { testWindowRandomCopy(t, false, false, true) })
	t.Run("append-only, copied rows", func(t *testing.T) { testWindowRandomCopy(t, true, false, true) })
	// A state cache of 0 bytes: every clean partition is evicted at each
	// checkpoint and read back when a row reaches it; some epochs commit
	// only after the next batch (the store lags the operator).
	t.Run("retractions, spill", func(t *testing.T) { testWindowRandom(t, false, true) })
	t.Run("append-only, spill", func(t *testing.T) { testWindowRandom(t, true, true) })
}

func testWindowRandom(t *testing.T, appendOnly, spill bool) {
	testWindowRandomCopy(t, appendOnly, spill, false)
}

func testWindowRandomCopy(t *testing.T, appendOnly, spill, copyRows bool) {
	// Input columns: partition, order value (few distinct: many peers),
	// time in µs for sessions, value.
	cols := []types.Column{{Name: "p", Type: types.TInt8}, {Name: "o", Type: types.TInt8}, {Name: "ts", Type: types.TTimestamp}, {Name: "v", Type: types.TInt8}}
	order := []spec.OrderItem{{Col: 1}}
	cases := map[string]*spec.Node{
		"row_number top 3": {WinFuncs: []spec.WindowCall{{Func: "row_number", Arg: -1, T: types.TInt8}}, Order: order, Limit: 3},
		"rank":             {WinFuncs: []spec.WindowCall{{Func: "rank", Arg: -1, T: types.TInt8}}, Order: order, Limit: -1},
		"rank top 2":       {WinFuncs: []spec.WindowCall{{Func: "rank", Arg: -1, T: types.TInt8}}, Order: order, Limit: 2},
		"dense_rank top 2": {WinFuncs: []spec.WindowCall{{Func: "dense_rank", Arg: -1, T: types.TInt8}}, Order: order, Limit: 2},
		"sum rows 2 preceding": {WinFuncs: []spec.WindowCall{{Func: "sum", Arg: 3, Rows: true, Preceding: 2, T: types.TNumeric}},
			Order: order, Limit: -1},
		"sum range (peers)":   {WinFuncs: []spec.WindowCall{{Func: "sum", Arg: 3, Preceding: -1, T: types.TNumeric}}, Order: order, Limit: -1},
		"max whole partition": {WinFuncs: []spec.WindowCall{{Func: "max", Arg: 3, Preceding: -1, T: types.TInt8}}, Limit: -1},
		"sessions": {WinFuncs: []spec.WindowCall{{Func: "session_start", Arg: 2, Gap: 10, T: types.TTimestamp},
			{Func: "session_end", Arg: 2, Gap: 10, T: types.TTimestamp}}, Order: []spec.OrderItem{{Col: 2}}, Limit: -1},
	}
	for name, n := range cases {
		t.Run(name, func(t *testing.T) {
			n.Kind = spec.Window
			n.PartitionBy = []int{0}
			n.Cols = cols
			rng := rand.New(rand.NewSource(7))
			ck := newCheckpointer(t)
			if spill {
				ck.db.StateCache().SetLimit(0)
			}
			w, err := ops.NewWindow(n, len(cols), appendOnly, 1, ck.db)
			if err != nil {
				t.Fatal(err)
			}
			w.CopyRows = copyRows
			// evicted and loaded count the partitions spilled and read back
			// (by restarts too) over every instance of the operator.
			evicted, loaded := 0, 0
			if spill {
				defer func() {
					ev, ld := w.Spills()
					t.Logf("spilled %d partitions and read back %d", evicted+ev, loaded+ld)
					if evicted+ev == 0 || loaded+ld == 0 {
						t.Errorf("spilled %d partitions and read back %d", evicted+ev, loaded+ld)
					}
				}()
			}
			parts := 3
			if spill {
				parts = 12 // some stay untouched for an epoch: clean, evicted
			}
			var commit func() // an epoch that commits after the next batch
			c := newCollector()
			var live []types.Row
			steps := 400
			if appendOnly { // the input only grows: fewer steps keep the recomputation cheap
				steps = 150
			}
			for step := 0; step < steps; step++ {
				b := types.NewBatch(4)
				for k := rng.Intn(4) + 1; k > 0; k-- {
					if !appendOnly && len(live) > 0 && rng.Intn(3) == 0 {
						i := rng.Intn(len(live))
						b.Add(live[i], -1)
						live = append(live[:i], live[i+1:]...)
						continue
					}
					if len(live) > 0 && rng.Intn(4) == 0 {
						// An equal row again: stored rows count copies.
						r := slices.Clone(live[rng.Intn(len(live))])
						b.Add(r, 1)
						live = append(live, r)
						continue
					}
					r := types.Row{types.NewInt(int64(rng.Intn(parts))), types.NewInt(int64(rng.Intn(6))),
						types.NewTimestamp(int64(rng.Intn(200))), types.NewInt(int64(rng.Intn(100)))}
					b.Add(r, 1)
					live = append(live, r)
				}
				// Changes wait for a flush or a barrier (an append-only Top-N
				// emits them at once).
				flush := rng.Intn(3) == 0
				if copyRows {
					for i, r := range b.Rows {
						b.Rows[i] = slices.Clone(r) // live keeps the originals
					}
				}
				c.step(t, func(out *flow.Emitter) error {
					if err := w.Process(0, b, out); err != nil || !flush {
						return err
					}
					return w.Flush(out)
				})
				if copyRows {
					for _, r := range b.Rows {
						for j := range r {
							r[j] = types.NewInt(-999)
						}
					}
				}
				if commit != nil {
					commit()
					commit = nil
				}
				if spill && rng.Intn(8) == 0 {
					flush = true
					commit = ck.begin(t, []flow.Operator{w}, []*collector{c})
				} else if rng.Intn(10) == 0 {
					flush = true
					ck.checkpoint(t, []flow.Operator{w}, []*collector{c})
					if !(appendOnly && n.Limit >= 0) {
						// The store holds the live rows, each once with its
						// count, and no key for a row that went.
						wantStored(t, ck.db, 1, live)
					}
					if rng.Intn(2) == 0 {
						ev, ld := w.Spills()
						evicted, loaded = evicted+ev, loaded+ld
						if w, err = ops.NewWindow(n, len(cols), appendOnly, 1, ck.db); err != nil {
							t.Fatal(err)
						}
						w.CopyRows = copyRows
					}
				}
				if !flush && !(appendOnly && n.Limit >= 0) {
					if len(c.delta) > 0 {
						t.Fatalf("step %d: emitted %v before a flush", step, c.delta)
					}
					continue
				}
				fresh, err := ops.NewWindow(n, len(cols), appendOnly, 2, nil)
				if err != nil {
					t.Fatal(err)
				}
				all := types.NewBatch(len(live))
				for _, r := range live {
					all.Add(r, 1)
				}
				want := newCollector()
				want.step(t, func(out *flow.Emitter) error {
					if err := fresh.Process(0, all, out); err != nil {
						return err
					}
					return fresh.Finish(out)
				})
				if !c.total.equal(want.total) {
					t.Fatalf("step %d: incremental output %v\nrecomputed %v", step, c.total, want.total)
				}
			}
			if appendOnly && n.Limit >= 0 {
				// Rows beyond the limit left the store too.
				ck.checkpoint(t, []flow.Operator{w}, []*collector{c})
				if keys := len(stateCounts(t, ck.db, 1)); keys > len(c.total) {
					t.Fatalf("%d rows stored for %d rows output", keys, len(c.total))
				}
			}
		})
	}
}

// TestWindowSessionsCloseBehindWatermark: a watermark on the time column
// lets the sessions that ended more than their gap before it leave the
// state at the next barrier (their output stays), and the session_end
// column carries the watermark of the last flush on, below which no output
// row comes any more.
func TestWindowSessionsCloseBehindWatermark(t *testing.T) {
	const opID = 5
	cols := []types.Column{{Name: "p", Type: types.TInt8}, {Name: "ts", Type: types.TTimestamp}}
	n := &spec.Node{Kind: spec.Window, PartitionBy: []int{0}, Cols: cols, Limit: -1,
		Order: []spec.OrderItem{{Col: 1}},
		WinFuncs: []spec.WindowCall{{Func: "session_start", Arg: 1, Gap: 10, T: types.TTimestamp},
			{Func: "session_end", Arg: 1, Gap: 10, T: types.TTimestamp}}}
	ck := newCheckpointer(t)
	w, err := ops.NewWindow(n, len(cols), false, opID, ck.db)
	if err != nil {
		t.Fatal(err)
	}
	c := newCollector()
	r := func(p, ts int) types.Row { return types.Row{types.NewInt(int64(p)), types.NewTimestamp(int64(ts))} }
	c.step(t, process(w, 0, ins(r(1, 0)), ins(r(1, 5)), ins(r(2, 100))))
	ck.checkpoint(t, []flow.Operator{w}, []*collector{c})
	var fwd []flow.Watermark
	c.step(t, watermark(w, 0, flow.Watermark{Col: 1, Ts: 20}, &fwd))
	if fwd != nil {
		t.Fatalf("forwarded %v before a flush after a watermark", fwd)
	}
	ck.checkpoint(t, []flow.Operator{w}, []*collector{c})
	if keys := len(stateCounts(t, ck.db, opID)); keys != 1 {
		t.Fatalf("%d rows stored after partition 1's session closed, want 1", keys)
	}
	c.step(t, watermark(w, 0, flow.Watermark{Col: 1, Ts: 30}, &fwd))
	if fmt.Sprint(fwd) != "[{3 20}]" {
		t.Fatalf("forwarded %v, want [{3 20}] (session_end, the flush's watermark)", fwd)
	}
	// A row extends the open session; a new session starts where the
	// closed one was, without retracting its rows.
	c.step(t, process(w, 0, ins(r(2, 105)), ins(r(1, 35))))
	ck.checkpoint(t, []flow.Operator{w}, []*collector{c})
	ts := func(v int) string { return fmtDatum(types.NewTimestamp(int64(v))) }
	out := func(p, t, s, e int) string { return fmt.Sprintf("(%d,%s,%s,%s)", p, ts(t), ts(s), ts(e)) }
	c.wantTotal(t, bagOf(out(1, 0, 0, 15), out(1, 5, 0, 15), out(2, 100, 100, 115), out(2, 105, 100, 115), out(1, 35, 35, 45)))
	// Restored, the operator holds the open sessions only.
	if w, err = ops.NewWindow(n, len(cols), false, opID, ck.db); err != nil {
		t.Fatal(err)
	}
	c.step(t, watermark(w, 0, flow.Watermark{Col: 1, Ts: 200}, &fwd))
	ck.checkpoint(t, []flow.Operator{w}, []*collector{c})
	if keys := len(stateCounts(t, ck.db, opID)); keys != 0 {
		t.Fatalf("%d rows stored after every session closed", keys)
	}
}

// wantStored fails unless window opID's state keys are exactly the
// distinct rows of live (partitioned by column 0), each with its count.
func wantStored(t *testing.T, db *storage.DB, opID uint64, live []types.Row) {
	t.Helper()
	want := map[string]int64{}
	for _, r := range live {
		want[string(types.EncodeRow(nil, r))]++
	}
	got := map[string]int64{}
	for k, c := range stateCounts(t, db, opID) {
		kl, m := binary.Uvarint([]byte(k))
		got[k[m+int(kl):]] = c // the row, after its partition key
	}
	if !maps.Equal(got, want) {
		t.Fatalf("stored %d keys, want %d: %v\nwant %v", len(got), len(want), got, want)
	}
}
