// Tests of event time in the operators: TUMBLE and HOP rows (window
// arithmetic rounding toward -inf as PostgreSQL's date_bin does, offsets,
// NULL times, retractions) and the watermarks they derive for
// window_start/window_end; watermark mapping through Project (dropped when
// the column is projected away), Filter and Union (minimum over inputs);
// EMIT ON WINDOW CLOSE (nothing before the watermark passes, final rows
// once, state gone from memory and store afterwards, also after a
// restore); window state deletion without EOWC (the rows emitted stay);
// and Join (watermarks only on key pairs, minimum of both sides, state
// below it deleted).
package ops_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"sluice/exec/flow"
	"sluice/exec/ops"
	"sluice/exec/spec"
	"sluice/sql/types"
	"sluice/storage"
)

func ts(us int64) types.Datum { return types.NewTimestamp(us) }

// winRows runs a TimeWindow over rows (an id and a time, NULL for -1<<62)
// and returns "id:start-end" per output row, in order.
func winRows(t *testing.T, w spec.TimeWindowSpec, diff int64, times ...int64) []string {
	t.Helper()
	op := ops.NewTimeWindow(&spec.Node{Kind: spec.TimeWindow, TimeWin: &w}, 2)
	b := types.NewBatch(len(times))
	for i, x := range times {
		d := ts(x)
		if x == -1<<62 {
			d = types.Null
		}
		b.Add(types.Row{types.NewInt(int64(i)), d}, diff)
	}
	var out []string
	em := flow.NewEmitter(func(b *types.Batch) error {
		for i, r := range b.Rows {
			if len(r) != 4 || b.Diffs[i] != diff {
				t.Fatalf("row %v diff %d", r, b.Diffs[i])
			}
			if r[2].IsNull() {
				out = append(out, fmt.Sprintf("%d:NULL", r[0].I))
				continue
			}
			if r[2].K != types.KTimestamp || r[3].K != types.KTimestamp || r[1].I != times[r[0].I] {
				t.Fatalf("row %v", r)
			}
			out = append(out, fmt.Sprintf("%d:%d-%d", r[0].I, r[2].I, r[3].I))
		}
		return nil
	})
	if err := op.Process(0, b, em); err != nil {
		t.Fatal(err)
	}
	if err := em.Flush(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTimeWindowTumble(t *testing.T) {
	tumble := spec.TimeWindowSpec{Col: 1, Size: 10}
	// window_start = t - ((t - offset) mod size), the mod toward -inf:
	// before the epoch too.
	got := fmt.Sprint(winRows(t, tumble, 1, 0, 9, 10, -1, -10, -11, 25, -1<<62))
	want := "[0:0-10 1:0-10 2:10-20 3:-10-0 4:-10-0 5:-20--10 6:20-30 7:NULL]"
	if got != want {
		t.Fatalf("TUMBLE: %s, want %s", got, want)
	}
	// Retractions keep their diff.
	if got := fmt.Sprint(winRows(t, tumble, -1, 12)); got != "[0:10-20]" {
		t.Fatalf("retraction: %s", got)
	}
	tumble.Offset = 3
	if got := fmt.Sprint(winRows(t, tumble, 1, 2, 3, 12, 13)); got != "[0:-7-3 1:3-13 2:3-13 3:13-23]" {
		t.Fatalf("TUMBLE with offset: %s", got)
	}
}

func TestTimeWindowHop(t *testing.T) {
	hop := spec.TimeWindowSpec{Hop: true, Col: 1, Slide: 2, Size: 6}
	// Each time is in size/slide = 3 windows; NULL is in none.
	got := fmt.Sprint(winRows(t, hop, 1, 5, 4, -1, -1<<62))
	want := "[0:0-6 0:2-8 0:4-10 1:0-6 1:2-8 1:4-10 2:-6-0 2:-4-2 2:-2-4]"
	if got != want {
		t.Fatalf("HOP: %s, want %s", got, want)
	}
	hop.Offset = 1
	if got := fmt.Sprint(winRows(t, hop, 1, 5)); got != "[0:1-7 0:3-9 0:5-11]" {
		t.Fatalf("HOP with offset: %s", got)
	}
}

func TestTimeWindowWatermarks(t *testing.T) {
	for _, c := range []struct {
		w    spec.TimeWindowSpec
		in   flow.Watermark
		want string
	}{
		// TUMBLE: rows at 25 or later are in windows from [20, 30) on.
		{spec.TimeWindowSpec{Col: 1, Size: 10}, flow.Watermark{Col: 1, Ts: 25}, "[{1 25} {2 20} {3 30}]"},
		{spec.TimeWindowSpec{Col: 1, Size: 10}, flow.Watermark{Col: 1, Ts: -5}, "[{1 -5} {2 -10} {3 0}]"},
		// HOP 2/6: rows at 5 or later are in windows from [0, 6) on.
		{spec.TimeWindowSpec{Hop: true, Col: 1, Slide: 2, Size: 6}, flow.Watermark{Col: 1, Ts: 5}, "[{1 5} {2 0} {3 6}]"},
		// Another column's watermark passes through alone.
		{spec.TimeWindowSpec{Col: 1, Size: 10}, flow.Watermark{Col: 0, Ts: 7}, "[{0 7}]"},
	} {
		op := ops.NewTimeWindow(&spec.Node{Kind: spec.TimeWindow, TimeWin: &c.w}, 2)
		got, err := op.OnWatermark(0, c.in, nil)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != c.want {
			t.Errorf("%+v after %v: %v, want %s", c.w, c.in, got, c.want)
		}
	}
}

func TestProjectFilterUnionWatermarks(t *testing.T) {
	p, err := ops.NewProject([]spec.Expr{col(1, types.TTimestamp), col(0, types.TInt8), col(1, types.TTimestamp),
		fn("+", types.TInt8, col(0, types.TInt8), intConst(1))}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in   int
		want string
	}{
		{1, "[{0 9} {2 9}]"}, // passed through twice
		{0, "[{1 9}]"},       // passed through (an expression over it does not count)
		{2, "[]"},            // projected away
	} {
		got, err := p.OnWatermark(0, flow.Watermark{Col: c.in, Ts: 9}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != c.want {
			t.Errorf("Project: watermark on column %d gave %v, want %s", c.in, got, c.want)
		}
	}
	f, err := ops.NewFilter(fn(">", types.TBool, col(0, types.TInt8), intConst(1)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := f.OnWatermark(0, flow.Watermark{Col: 3, Ts: 4}, nil); fmt.Sprint(got) != "[{3 4}]" {
		t.Errorf("Filter: %v", got)
	}
	u := ops.NewUnion(2)
	steps := []struct {
		in   int
		ts   int64
		want string
	}{{0, 10, "[]"}, {1, 4, "[{0 4}]"}, {1, 12, "[{0 10}]"}, {0, 20, "[{0 12}]"}}
	for _, s := range steps {
		got, _ := u.OnWatermark(s.in, flow.Watermark{Col: 0, Ts: s.ts}, nil)
		if fmt.Sprint(got) != s.want {
			t.Errorf("Union: input %d at %d gave %v, want %s", s.in, s.ts, got, s.want)
		}
	}
}

// stateKeys counts the keys operator opID has in the store.
func stateKeys(t *testing.T, db *storage.DB, opID uint64) int {
	t.Helper()
	n := 0
	if err := db.Scan(storage.Key(storage.SpaceState, opID), func(_, _ []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func watermark(op flow.WatermarkOp, in int, w flow.Watermark, fwd *[]flow.Watermark) func(*flow.Emitter) error {
	return func(out *flow.Emitter) error {
		f, err := op.OnWatermark(in, w, out)
		*fwd = f
		return err
	}
}

// Input of the window aggregations: window start (an integer stands for
// the timestamp's microseconds), group, value.
func windowAggNode(eowc bool) *spec.Node {
	n := aggNode([]int{0, 1}, []spec.AggCall{agg("count_star", -1, types.TInt8), agg("sum", 2, types.TInt8)})
	n.EOWC = eowc
	return n
}

func TestAggEmitOnWindowClose(t *testing.T) {
	const opID = 7
	cp := newCheckpointer(t)
	a, err := ops.NewAgg(windowAggNode(true), opID, cp.db)
	if err != nil {
		t.Fatal(err)
	}
	c := newCollector()
	c.step(t, process(a, 0, ins(row(10, "a", 1)), ins(row(10, "a", 2)), ins(row(10, "b", 5)), ins(row(20, "a", 7)),
		ins(row(30, "c", 1)), del(row(30, "c", 1))))
	c.wantDelta(t, bagOf()) // nothing before the window closes
	cp.checkpoint(t, []flow.Operator{a}, []*collector{c})
	if n := stateKeys(t, cp.db, opID); n != 3 {
		t.Fatalf("%d groups stored, want 3", n)
	}

	// A watermark on a column that is not grouped on closes nothing.
	var fwd []flow.Watermark
	c.step(t, watermark(a, 0, flow.Watermark{Col: 2, Ts: 100}, &fwd))
	c.wantDelta(t, bagOf())
	if len(fwd) != 0 {
		t.Fatalf("forwarded %v", fwd)
	}
	// Window 10 closes at 15: its rows come out, final, and its state goes.
	c.step(t, watermark(a, 0, flow.Watermark{Col: 0, Ts: 15}, &fwd))
	c.wantDelta(t, bagOf("(10,'a',2,3)", "(10,'b',1,5)"))
	if fmt.Sprint(fwd) != "[{0 15}]" {
		t.Fatalf("forwarded %v", fwd)
	}
	if a.Groups() != 1 {
		t.Fatalf("%d groups in memory, want 1", a.Groups())
	}
	c.step(t, process(a, 0, ins(row(20, "a", 1)), ins(row(25, "b", 1))))
	c.wantDelta(t, bagOf())
	cp.checkpoint(t, []flow.Operator{a}, []*collector{c})
	if n := stateKeys(t, cp.db, opID); n != 2 {
		t.Fatalf("%d groups stored, want 2", n)
	}

	// A restored aggregation closes what was saved.
	a2, err := ops.NewAgg(windowAggNode(true), opID, cp.db)
	if err != nil {
		t.Fatal(err)
	}
	c.step(t, watermark(a2, 0, flow.Watermark{Col: 0, Ts: 21}, &fwd))
	c.wantDelta(t, bagOf("(20,'a',2,8)"))
	c.step(t, watermark(a2, 0, flow.Watermark{Col: 0, Ts: 40}, &fwd))
	c.wantDelta(t, bagOf("(25,'b',1,1)"))
	c.wantTotal(t, bagOf("(10,'a',2,3)", "(10,'b',1,5)", "(20,'a',2,8)", "(25,'b',1,1)"))
	cp.checkpoint(t, []flow.Operator{a2}, []*collector{c})
	if a2.Groups() != 0 || stateKeys(t, cp.db, opID) != 0 {
		t.Fatalf("state left after every window closed: %d groups, %d keys", a2.Groups(), stateKeys(t, cp.db, opID))
	}
}

func TestAggDeletesClosedWindowsWithoutEOWC(t *testing.T) {
	const opID = 8
	cp := newCheckpointer(t)
	a, err := ops.NewAgg(windowAggNode(false), opID, cp.db)
	if err != nil {
		t.Fatal(err)
	}
	c := newCollector()
	c.step(t, aggStep(a, ins(row(10, "a", 1)), ins(row(20, "a", 2))))
	c.step(t, aggStep(a, ins(row(10, "a", 3))))
	c.wantDelta(t, bagOf("-(10,'a',1,1)", "(10,'a',2,4)"))
	cp.checkpoint(t, []flow.Operator{a}, []*collector{c})
	var fwd []flow.Watermark
	c.step(t, watermark(a, 0, flow.Watermark{Col: 0, Ts: 15}, &fwd))
	c.wantDelta(t, bagOf()) // the view keeps its rows
	c.wantTotal(t, bagOf("(10,'a',2,4)", "(20,'a',1,2)"))
	cp.checkpoint(t, []flow.Operator{a}, []*collector{c})
	if a.Groups() != 1 || stateKeys(t, cp.db, opID) != 1 {
		t.Fatalf("after the watermark: %d groups, %d keys; want 1, 1", a.Groups(), stateKeys(t, cp.db, opID))
	}
	if fmt.Sprint(fwd) != "[{0 15}]" {
		t.Fatalf("forwarded %v", fwd)
	}
}

func TestJoinWatermarksOnKeys(t *testing.T) {
	const opID = 9
	cp := newCheckpointer(t)
	// left (window, x) JOIN right (window, y) ON left.window = right.window
	n := &spec.Node{Kind: spec.Join, JoinKind: spec.InnerJoin, LeftKeys: []int{0}, RightKeys: []int{0}}
	j, err := ops.NewJoin(n, 2, 2, opID, cp.db, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := newCollector()
	c.step(t, process(j, 0, ins(row(10, "x")), ins(row(20, "x"))))
	c.step(t, process(j, 1, ins(row(10, "y")), ins(row(30, "y"))))
	c.wantTotal(t, bagOf("(10,'x',10,'y')"))
	cp.checkpoint(t, []flow.Operator{j}, []*collector{c})
	var fwd []flow.Watermark
	// One side alone: the other still holds the key at -inf.
	c.step(t, watermark(j, 0, flow.Watermark{Col: 0, Ts: 25}, &fwd))
	if len(fwd) != 0 || j.StoredRows() != 4 {
		t.Fatalf("forwarded %v, %d rows kept", fwd, j.StoredRows())
	}
	// A non-key column never passes.
	c.step(t, watermark(j, 1, flow.Watermark{Col: 1, Ts: 25}, &fwd))
	if len(fwd) != 0 {
		t.Fatalf("forwarded %v", fwd)
	}
	// Both sides: the minimum, on both output columns of the key; rows
	// below it can never match again and are deleted.
	c.step(t, watermark(j, 1, flow.Watermark{Col: 0, Ts: 15}, &fwd))
	if fmt.Sprint(fwd) != "[{0 15} {2 15}]" {
		t.Fatalf("forwarded %v", fwd)
	}
	if j.StoredRows() != 2 {
		t.Fatalf("%d rows kept, want 2", j.StoredRows())
	}
	cp.checkpoint(t, []flow.Operator{j}, []*collector{c})
	if n := stateKeys(t, cp.db, opID); n != 2 {
		t.Fatalf("%d rows stored, want 2", n)
	}
	// The join goes on with the rows it kept.
	c.step(t, process(j, 1, ins(row(20, "z"))))
	c.wantDelta(t, bagOf("(20,'x',20,'z')"))
	c.wantTotal(t, bagOf("(10,'x',10,'y')", "(20,'x',20,'z')"))
}

// TestAggWatermarkFlushesClosingGroups: changes wait for a flush, but a
// watermark that closes a group first emits the group's pending change, so
// nothing below the watermark follows it; the groups at or above it stay
// pending until the flush.
func TestAggWatermarkFlushesClosingGroups(t *testing.T) {
	a := newAgg(t, windowAggNode(false))
	c := newCollector()
	c.step(t, process(a, 0, ins(row(10, "a", 1)), ins(row(20, "a", 2))))
	c.step(t, process(a, 0, ins(row(10, "a", 3)), ins(row(20, "b", 4))))
	c.wantDelta(t, bag{})
	var fwd []flow.Watermark
	c.step(t, watermark(a, 0, flow.Watermark{Col: 0, Ts: 15}, &fwd))
	c.wantDelta(t, bagOf("(10,'a',2,4)"))
	if fmt.Sprint(fwd) != "[{0 15}]" || a.Groups() != 2 {
		t.Fatalf("forwarded %v, %d groups left; want [{0 15}], 2", fwd, a.Groups())
	}
	c.step(t, process(a, 0, ins(row(20, "a", 5))))
	c.step(t, func(out *flow.Emitter) error { return a.Flush(out) })
	c.wantDelta(t, bagOf("(20,'a',2,7)", "(20,'b',1,4)"))
	c.step(t, aggStep(a, del(row(20, "b", 4))))
	c.wantDelta(t, bagOf("-(20,'b',1,4)"))
	c.wantTotal(t, bagOf("(10,'a',2,4)", "(20,'a',2,7)"))
}

// TestAggFusedWindow checks that an Agg expanding the windows itself
// (FuseWindow, as the runtime runs an Agg whose only input is a TimeWindow)
// emits exactly what TimeWindow followed by Agg does: random inserts and
// deletes (NULL times among them) over TUMBLE and HOP windows, more rows
// per batch than one expansion chunk, watermarks closing windows, and
// checkpoints; after each step the two emitted the same changes and
// forwarded the same watermarks. Over an append-only input (no deletes)
// the fused Agg is also an append-only one (its window index a list that
// keeps keys until they close) and the plain one is not.
func TestAggFusedWindow(t *testing.T) {
	const size, slide = 10, 4
	for _, v := range []struct{ hop, appendOnly bool }{{false, false}, {true, false}, {true, true}} {
		hop := v.hop
		t.Run(fmt.Sprintf("hop=%v,appendOnly=%v", hop, v.appendOnly), func(t *testing.T) {
			w := spec.TimeWindowSpec{Col: 1, Size: size, Slide: slide, Hop: hop}
			if !hop {
				w.Slide = size
			}
			twNode := &spec.Node{Kind: spec.TimeWindow, TimeWin: &w}
			// Input: key, time, value; after the window: + start, end.
			n := aggNode([]int{3, 0}, []spec.AggCall{agg("count_star", -1, types.TInt8), agg("sum", 2, types.TInt8),
				agg("max", 2, types.TInt8), agg("min", 4, types.TTimestamp)})
			cp := newCheckpointer(t)
			plain, err := ops.NewAgg(n, 1, cp.db)
			if err != nil {
				t.Fatal(err)
			}
			fn := *n
			fn.InputAppendOnly = v.appendOnly
			fused, err := ops.NewAgg(&fn, 2, cp.db)
			if err != nil {
				t.Fatal(err)
			}
			tw := ops.NewTimeWindow(twNode, 3)
			fused.FuseWindow(ops.NewTimeWindow(twNode, 3))
			cPlain, cFused := newCollector(), newCollector()
			twWM := map[int]int64{} // the actors' filter between tw and plain
			rng := rand.New(rand.NewPCG(7, uint64(w.Slide)))
			var live []types.Row
			low := int64(0) // times below the last watermark are still sent (late rows)
			for step := 0; step < 60; step++ {
				b := types.NewBatch(0)
				for i := rng.IntN(700); i > 0; i-- {
					if len(live) > 0 && rng.IntN(4) == 0 && !v.appendOnly {
						k := rng.IntN(len(live))
						b.Add(live[k], -1)
						live = append(live[:k], live[k+1:]...)
						continue
					}
					tm := types.NewTimestamp(low - 8 + rng.Int64N(40))
					if rng.IntN(30) == 0 {
						tm = types.Null
					}
					r := types.Row{types.NewInt(rng.Int64N(5)), tm, types.NewInt(rng.Int64N(100))}
					b.Add(r, 1)
					live = append(live, r)
				}
				// plain: the TimeWindow's output, then the Agg.
				wb := types.NewBatch(0)
				em := flow.NewEmitter(func(x *types.Batch) error {
					for i, r := range x.Rows {
						wb.Add(r, x.Diffs[i])
					}
					return nil
				})
				if err := tw.Process(0, b, em); err != nil {
					t.Fatal(err)
				}
				if err := em.Flush(); err != nil {
					t.Fatal(err)
				}
				cPlain.step(t, aggStep(plain, changesOf(wb)...))
				cFused.step(t, aggStep(fused, changesOf(b)...))
				if !cPlain.delta.equal(cFused.delta) {
					t.Fatalf("step %d: fused emitted %v, plain %v", step, cFused.delta, cPlain.delta)
				}
				if rng.IntN(3) == 0 {
					low += rng.Int64N(12)
					wm := flow.Watermark{Col: 1, Ts: low}
					var fwdPlain, fwdFused []flow.Watermark
					ws, _ := tw.OnWatermark(0, wm, nil)
					cPlain.step(t, func(out *flow.Emitter) error {
						for _, x := range ws {
							if last, ok := twWM[x.Col]; ok && x.Ts <= last {
								continue
							}
							twWM[x.Col] = x.Ts
							f, err := plain.OnWatermark(0, x, out)
							fwdPlain = append(fwdPlain, f...)
							if err != nil {
								return err
							}
						}
						return nil
					})
					cFused.step(t, watermark(fused, 0, wm, &fwdFused))
					if !cPlain.delta.equal(cFused.delta) || fmt.Sprint(fwdPlain) != fmt.Sprint(fwdFused) {
						t.Fatalf("watermark %d: fused emitted %v and forwarded %v, plain %v and %v",
							low, cFused.delta, fwdFused, cPlain.delta, fwdPlain)
					}
				}
				if step%7 == 6 {
					cp.checkpoint(t, []flow.Operator{plain, fused}, []*collector{cPlain, cFused})
				}
			}
			if !cPlain.total.equal(cFused.total) || len(cPlain.total) == 0 {
				t.Fatalf("fused output %v, plain %v", cFused.total, cPlain.total)
			}
			if plain.Groups() != fused.Groups() {
				t.Fatalf("fused keeps %d groups, plain %d", fused.Groups(), plain.Groups())
			}
		})
	}
}

func changesOf(b *types.Batch) []change {
	cs := make([]change, len(b.Rows))
	for i, r := range b.Rows {
		cs[i] = change{r, b.Diffs[i]}
	}
	return cs
}

// TestAggGroupsClosedBeforeTheCheckpointNotStored: a group created and
// closed by a watermark between two checkpoints writes nothing to the
// store; one still open at the checkpoint is stored, and when a later
// watermark closes it, deleted; a key closed and opened again in one
// epoch is stored as the new group.
func TestAggGroupsClosedBeforeTheCheckpointNotStored(t *testing.T) {
	const opID = 11
	cp := newCheckpointer(t)
	a, err := ops.NewAgg(windowAggNode(false), opID, cp.db)
	if err != nil {
		t.Fatal(err)
	}
	c := newCollector()
	var fwd []flow.Watermark
	c.step(t, aggStep(a, ins(row(10, "a", 1)), ins(row(10, "b", 2)), ins(row(20, "a", 3))))
	c.step(t, watermark(a, 0, flow.Watermark{Col: 0, Ts: 15}, &fwd))
	cp.checkpoint(t, []flow.Operator{a}, []*collector{c})
	if a.Groups() != 1 || stateKeys(t, cp.db, opID) != 1 {
		t.Fatalf("first checkpoint: %d groups, %d keys; want 1, 1", a.Groups(), stateKeys(t, cp.db, opID))
	}
	c.step(t, aggStep(a, ins(row(20, "a", 4)), ins(row(30, "c", 5))))
	c.step(t, watermark(a, 0, flow.Watermark{Col: 0, Ts: 25}, &fwd))
	// Window 30 of "c" closes and opens again: the second group is stored.
	c.step(t, aggStep(a, ins(row(40, "d", 6))))
	c.step(t, watermark(a, 0, flow.Watermark{Col: 0, Ts: 35}, &fwd))
	c.step(t, aggStep(a, ins(row(40, "d", 7))))
	cp.checkpoint(t, []flow.Operator{a}, []*collector{c})
	if a.Groups() != 1 || stateKeys(t, cp.db, opID) != 1 {
		t.Fatalf("second checkpoint: %d groups, %d keys; want 1, 1", a.Groups(), stateKeys(t, cp.db, opID))
	}
	c.wantTotal(t, bagOf("(10,'a',1,1)", "(10,'b',1,2)", "(20,'a',2,7)", "(30,'c',1,5)", "(40,'d',2,13)"))
	// What was stored is the open group: a restored Agg goes on from it.
	b, err := ops.NewAgg(windowAggNode(false), opID, cp.db)
	if err != nil {
		t.Fatal(err)
	}
	c.step(t, aggStep(b, ins(row(40, "d", 1))))
	c.wantDelta(t, bagOf("-(40,'d',2,13)", "(40,'d',3,14)"))
}
