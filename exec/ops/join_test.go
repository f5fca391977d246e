// Tests of the symmetric hash join with retractions: inner, left, right
// and full outer joins with duplicate keys, NULL keys (never matching, but
// kept NULL-extended on preserved sides), a residual condition over
// left++right columns, and changes on both sides in any order. A long
// random run per join kind compares the output after every batch with a
// brute-force recomputation over the current inputs, and restores the
// join from its committed checkpoint along the way.
package ops_test

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"sluice/exec/eval"
	"sluice/exec/flow"
	"sluice/exec/ops"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// Both inputs are (k BIGINT, v BIGINT), joined on k.
func joinNode(kind spec.JoinKind, cond spec.Expr) *spec.Node {
	return &spec.Node{Kind: spec.Join, JoinKind: kind, LeftKeys: []int{0}, RightKeys: []int{0}, Cond: cond}
}

// lessCond is left.v < right.v.
func lessCond() spec.Expr {
	return fn("<", types.TBool, col(1, types.TInt8), col(3, types.TInt8))
}

func newJoin(t *testing.T, n *spec.Node, opID uint64, db *storage.DB, errs *ops.ErrorSink) *ops.Join {
	t.Helper()
	j, err := ops.NewJoin(n, 2, 2, opID, db, &eval.Context{}, errs)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

const left, right = 0, 1

func TestJoinLeftSwapsNullExtendedRow(t *testing.T) {
	j := newJoin(t, joinNode(spec.LeftJoin, nil), 1, nil, nil)
	c := newCollector()

	c.step(t, process(j, left, ins(row(1, 10))))
	c.wantDelta(t, bagOf("(1,10,NULL,NULL)"))
	c.step(t, process(j, right, ins(row(1, 20))))
	c.wantDelta(t, bagOf("-(1,10,NULL,NULL)", "(1,10,1,20)"))
	// A second match leaves the NULL-extended row gone.
	c.step(t, process(j, right, ins(row(1, 30))))
	c.wantDelta(t, bagOf("(1,10,1,30)"))
	c.step(t, process(j, right, del(row(1, 20))))
	c.wantDelta(t, bagOf("-(1,10,1,20)"))
	// The last match goes: the NULL-extended row comes back.
	c.step(t, process(j, right, del(row(1, 30))))
	c.wantDelta(t, bagOf("-(1,10,1,30)", "(1,10,NULL,NULL)"))

	// NULL keys never match, not even each other, but the left row stays.
	c.step(t, process(j, left, ins(row(nil, 5))))
	c.step(t, process(j, right, ins(row(nil, 5))))
	c.wantDelta(t, bag{})
	c.wantTotal(t, bagOf("(1,10,NULL,NULL)", "(NULL,5,NULL,NULL)"))
	c.step(t, process(j, left, del(row(nil, 5))))
	c.wantDelta(t, bagOf("-(NULL,5,NULL,NULL)"))

	// Duplicates on the preserved side: both copies swap, and every copy
	// matches every copy on the other side.
	c.step(t, process(j, left, ins(row(2, 1)), ins(row(2, 1))))
	c.wantDelta(t, bagOf("2×(2,1,NULL,NULL)"))
	c.step(t, process(j, right, change{row(2, 7), 3}))
	c.wantDelta(t, bagOf("-2×(2,1,NULL,NULL)", "6×(2,1,2,7)"))
	// Deleting a preserved row that has matches retracts only the matches.
	c.step(t, process(j, left, del(row(2, 1))))
	c.wantDelta(t, bagOf("-3×(2,1,2,7)"))
	// Deleting one that has none retracts its NULL-extended row.
	c.step(t, process(j, left, del(row(1, 10))))
	c.wantDelta(t, bagOf("-(1,10,NULL,NULL)"))
}

func TestJoinRightAndFullOrder(t *testing.T) {
	// The right side is preserved: its NULL-extended rows have NULLs first.
	j := newJoin(t, joinNode(spec.RightJoin, nil), 1, nil, nil)
	c := newCollector()
	c.step(t, process(j, right, ins(row(1, 20)), ins(row(nil, 21))))
	c.wantDelta(t, bagOf("(NULL,NULL,1,20)", "(NULL,NULL,NULL,21)"))
	c.step(t, process(j, left, ins(row(1, 10)), ins(row(3, 30))))
	c.wantDelta(t, bagOf("-(NULL,NULL,1,20)", "(1,10,1,20)"))

	j = newJoin(t, joinNode(spec.FullJoin, nil), 1, nil, nil)
	c = newCollector()
	c.step(t, process(j, left, ins(row(1, 10)), ins(row(2, 11))))
	c.step(t, process(j, right, ins(row(2, 20)), ins(row(4, 40))))
	c.wantTotal(t, bagOf("(1,10,NULL,NULL)", "(2,11,2,20)", "(NULL,NULL,4,40)"))
	// A change on the right that matches the left swaps the left's NULL row,
	// and the right's own.
	c.step(t, process(j, right, del(row(4, 40)), ins(row(1, 41))))
	c.wantDelta(t, bagOf("-(NULL,NULL,4,40)", "-(1,10,NULL,NULL)", "(1,10,1,41)"))
}

// A projection folded into the join: the join builds its rows in the
// output order (here right.v, left.k, right.v again, left.v), NULLs for the
// missing side, and a key's watermark comes out at each output column it
// is taken to.
func TestJoinOutputColumns(t *testing.T) {
	n := joinNode(spec.FullJoin, nil)
	n.JoinOut = []int{3, 0, 3, 1}
	j := newJoin(t, n, 1, nil, nil)
	c := newCollector()
	c.step(t, process(j, left, ins(row(1, 10)), ins(row(2, 11))))
	c.wantDelta(t, bagOf("(NULL,1,NULL,10)", "(NULL,2,NULL,11)"))
	c.step(t, process(j, right, ins(row(1, 20)), ins(row(4, 40))))
	c.wantDelta(t, bagOf("-(NULL,1,NULL,10)", "(20,1,20,10)", "(40,NULL,40,NULL)"))

	n = joinNode(spec.InnerJoin, nil)
	n.JoinOut = []int{1, 2, 0}
	j = newJoin(t, n, 1, nil, nil)
	if got, _ := j.OnWatermark(left, flow.Watermark{Col: 0, Ts: 5}, nil); len(got) != 0 {
		t.Fatalf("one side's watermark passed through: %v", got)
	}
	got, err := j.OnWatermark(right, flow.Watermark{Col: 0, Ts: 7}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Left key k is output column 2, right key k output column 1.
	if fmt.Sprint(got) != "[{2 5} {1 5}]" {
		t.Fatalf("watermarks = %v, want [{2 5} {1 5}]", got)
	}
}

func TestJoinResidualCondition(t *testing.T) {
	j := newJoin(t, joinNode(spec.FullJoin, lessCond()), 1, nil, nil)
	c := newCollector()
	c.step(t, process(j, left, ins(row(1, 5))))
	// Same key but the condition fails: both sides stay NULL-extended.
	c.step(t, process(j, right, ins(row(1, 3))))
	c.wantTotal(t, bagOf("(1,5,NULL,NULL)", "(NULL,NULL,1,3)"))
	c.step(t, process(j, right, ins(row(1, 9))))
	c.wantDelta(t, bagOf("-(1,5,NULL,NULL)", "(1,5,1,9)"))
	// A NULL in the condition is not a match.
	c.step(t, process(j, left, ins(row(1, nil))))
	c.wantDelta(t, bagOf("(1,NULL,NULL,NULL)"))
	c.step(t, process(j, left, ins(row(1, 0))))
	c.wantDelta(t, bagOf("-(NULL,NULL,1,3)", "(1,0,1,3)", "(1,0,1,9)"))
	c.step(t, process(j, right, del(row(1, 9))))
	c.wantDelta(t, bagOf("-(1,5,1,9)", "-(1,0,1,9)", "(1,5,NULL,NULL)"))
}

func TestJoinConditionErrors(t *testing.T) {
	// left.v / right.v > 0 fails when right.v = 0.
	cond := fn(">", types.TBool, fn("/", types.TInt8, col(1, types.TInt8), col(3, types.TInt8)), intConst(0))

	errs := &ops.ErrorSink{}
	j := newJoin(t, joinNode(spec.LeftJoin, cond), 1, nil, errs)
	c := newCollector()
	c.step(t, process(j, left, ins(row(1, 4))))
	c.step(t, process(j, right, ins(row(1, 0)), ins(row(1, 2))))
	// The failing pair is no match; the error is counted.
	c.wantTotal(t, bagOf("(1,4,1,2)"))
	if errs.Count.Load() == 0 {
		t.Fatal("condition error not counted")
	}

	strict := &ops.ErrorSink{Strict: true}
	j = newJoin(t, joinNode(spec.InnerJoin, cond), 1, nil, strict)
	out := flow.NewEmitter(func(*types.Batch) error { return nil })
	if err := j.Process(left, batchOf(ins(row(1, 4))), out); err != nil {
		t.Fatal(err)
	}
	err := j.Process(right, batchOf(ins(row(1, 0))), out)
	if c := pgerror.GetCode(err); c != pgcode.DivisionByZero {
		t.Fatalf("strict join condition error: %v (code %s), want %s", err, c, pgcode.DivisionByZero)
	}
}

// joinInput is one side's current rows: printed row -> change with the
// row's multiplicity.
type joinInput map[string]change

func (in joinInput) apply(r types.Row, d int64) {
	k := fmtRow(r)
	ch := in[k]
	ch.row, ch.diff = r, ch.diff+d
	if ch.diff == 0 {
		delete(in, k)
	} else {
		in[k] = ch
	}
}

// bruteJoin computes the join of the current inputs from its definition.
func bruteJoin(kind spec.JoinKind, withCond bool, l, r joinInput) bag {
	match := func(a, b types.Row) bool {
		if a[0].IsNull() || b[0].IsNull() || types.Compare(a[0], b[0]) != 0 {
			return false
		}
		if withCond {
			return !a[1].IsNull() && !b[1].IsNull() && a[1].I < b[1].I
		}
		return true
	}
	out := bag{}
	matchedR := map[string]bool{}
	for _, a := range l {
		matched := false
		for rk, b := range r {
			if match(a.row, b.row) {
				matched = true
				matchedR[rk] = true
				out.add(append(a.row.Copy(), b.row...), a.diff*b.diff)
			}
		}
		if !matched && (kind == spec.LeftJoin || kind == spec.FullJoin) {
			out.add(append(a.row.Copy(), types.Null, types.Null), a.diff)
		}
	}
	if kind == spec.RightJoin || kind == spec.FullJoin {
		for rk, b := range r {
			if !matchedR[rk] {
				out.add(append(types.Row{types.Null, types.Null}, b.row...), b.diff)
			}
		}
	}
	return out
}

// TestJoinRandomAgainstBruteForce runs a few thousand random inserts and
// deletes (single and duplicate) on both sides of every join kind, with
// and without a residual condition, and after every batch compares the
// accumulated output with the join recomputed from scratch. At random
// barriers the state is committed and the join is recreated from the store.
// With spill, the state cache holds nothing: every bucket is spilled at
// each barrier and read back when probed, and commits lag a batch behind
// their barriers, so that reads meet writes still in flight.
func TestJoinRandomAgainstBruteForce(t *testing.T) {
	t.Run("resident", func(t *testing.T) { testJoinRandom(t, false) })
	t.Run("spill", func(t *testing.T) { testJoinRandom(t, true) })
}

func testJoinRandom(t *testing.T, spill bool) {
	for _, kind := range []spec.JoinKind{spec.InnerJoin, spec.LeftJoin, spec.RightJoin, spec.FullJoin} {
		for _, withCond := range []bool{false, true} {
			name := kind.String()
			if withCond {
				name += " cond"
			}
			t.Run(name, func(t *testing.T) {
				var cond spec.Expr
				if withCond {
					cond = lessCond()
				}
				n := joinNode(kind, cond)
				ck := newCheckpointer(t)
				if spill {
					ck.db.StateCache().SetLimit(0)
				}
				j := newJoin(t, n, 7, ck.db, nil)
				var commit func() // a checkpoint written, not committed yet
				var evicted, loaded int
				defer func() {
					if ev, ld := j.Spills(); spill && (evicted+ev == 0 || loaded+ld == 0) {
						t.Errorf("spilled %d buckets and read back %d", evicted+ev, loaded+ld)
					}
				}()
				c := newCollector()
				rng := rand.New(rand.NewSource(int64(kind)*2 + 1))
				inputs := [2]joinInput{{}, {}}
				randRow := func() types.Row {
					r := types.Row{types.Null, types.Null}
					if rng.Intn(6) != 0 {
						r[0] = types.NewInt(int64(rng.Intn(4)))
					}
					if rng.Intn(8) != 0 {
						r[1] = types.NewInt(int64(rng.Intn(5)))
					}
					return r
				}
				const ops = 2500
				for done := 0; done < ops; {
					// A batch holds changes of one side, as an input delivers them.
					side := rng.Intn(2)
					in := inputs[side]
					bt := types.NewBatch(4)
					for k := 1 + rng.Intn(4); k > 0; k-- {
						done++
						if len(in) == 0 || (len(in) < 12 && rng.Intn(5) < 3) {
							r, d := randRow(), int64(1)
							if rng.Intn(6) == 0 {
								d = 2
							}
							in.apply(r, d)
							bt.Add(r, d)
							continue
						}
						// Delete one copy, or every copy, of a current row.
						i := rng.Intn(len(in))
						for _, ch := range in {
							if i == 0 {
								d := int64(1)
								if rng.Intn(3) == 0 {
									d = ch.diff
								}
								in.apply(ch.row, -d)
								bt.Add(ch.row, -d)
								break
							}
							i--
						}
					}
					c.step(t, process(j, side, batchChanges(bt)...))
					if commit != nil {
						commit()
						commit = nil
					}
					want := bruteJoin(kind, withCond, inputs[0], inputs[1])
					if !c.total.equal(want) {
						t.Fatalf("after %d changes (side %d batch %v):\noutput %v\n  want %v\nleft %v\nright %v",
							done, side, batchBag(bt), c.total, want, inputBag(inputs[0]), inputBag(inputs[1]))
					}
					if spill && commit == nil && rng.Intn(4) == 0 {
						commit = ck.begin(t, []flow.Operator{j}, []*collector{c})
						c.wantDelta(t, bag{})
						continue
					}
					if commit == nil && rng.Intn(15) == 0 {
						ck.checkpoint(t, []flow.Operator{j}, []*collector{c})
						c.wantDelta(t, bag{})
						if rng.Intn(2) == 0 {
							j.Release()
							ev, ld := j.Spills()
							evicted, loaded = evicted+ev, loaded+ld
							j = newJoin(t, n, 7, ck.db, nil)
						}
					}
				}
			})
		}
	}
}

func batchChanges(b *types.Batch) []change {
	out := make([]change, len(b.Rows))
	for i, r := range b.Rows {
		out[i] = change{r, b.Diffs[i]}
	}
	return out
}

func batchBag(b *types.Batch) bag {
	out := bag{}
	out.addBatch(b)
	return out
}

func inputBag(in joinInput) bag {
	out := bag{}
	for _, ch := range in {
		out.add(ch.row, ch.diff)
	}
	return out
}

// intervalCond is left.ts BETWEEN right.ts - 10 AND right.ts over rows
// (key, ts) on each side.
func intervalCond() spec.Expr {
	ts := types.TTimestamp
	ten := &spec.Const{D: types.NewInterval(0, 0, 10), T: types.T{Fam: types.Interval}}
	return fn("and", types.TBool,
		fn(">=", types.TBool, col(1, ts), fn("-", ts, col(3, ts), ten)),
		fn("<=", types.TBool, col(1, ts), col(3, ts)))
}

// TestJoinIntervalBoundsDeleteRows runs an interval join (equal keys and
// left.ts BETWEEN right.ts - 10 AND right.ts) over rows that never fall
// behind the watermarks, which both inputs advance as time goes: the
// output must equal the join of everything inserted, while the rows kept
// stay a window's worth, not the whole input. Half the runs spill every
// bucket and restore the join from the store along the way.
func TestJoinIntervalBoundsDeleteRows(t *testing.T) {
	cond := intervalCond()
	for _, spill := range []bool{false, true} {
		n := joinNode(spec.InnerJoin, cond)
		ck := newCheckpointer(t)
		if spill {
			ck.db.StateCache().SetLimit(0)
		}
		j := newJoin(t, n, 7, ck.db, nil)
		c := newCollector()
		rng := rand.New(rand.NewSource(3))
		var all [2][]types.Row
		now := int64(0)
		maxKept := 0
		for step := 0; step < 600; step++ {
			side := rng.Intn(2)
			bt := types.NewBatch(3)
			for k := 1 + rng.Intn(3); k > 0; k-- {
				r := types.Row{types.NewInt(int64(rng.Intn(3))), types.NewTimestamp(now + int64(rng.Intn(6)))}
				bt.Add(r, 1)
				all[side] = append(all[side], r)
			}
			c.step(t, process(j, side, batchChanges(bt)...))
			now += int64(rng.Intn(3))
			var fwd []flow.Watermark
			for s := 0; s < 2; s++ {
				c.step(t, watermark(j, s, flow.Watermark{Col: 1, Ts: now}, &fwd))
			}
			maxKept = max(maxKept, j.StoredRows())
			if rng.Intn(10) == 0 {
				ck.checkpoint(t, []flow.Operator{j}, []*collector{c})
				if rng.Intn(3) == 0 {
					j.Release()
					j = newJoin(t, n, 7, ck.db, nil)
				}
			}
		}
		want := bag{}
		for _, l := range all[0] {
			for _, r := range all[1] {
				if l[0].I == r[0].I && l[1].I >= r[1].I-10 && l[1].I <= r[1].I {
					want.add(append(l.Copy(), r...), 1)
				}
			}
		}
		if !c.total.equal(want) {
			t.Fatalf("spill %v: output %v\nwant %v", spill, c.total, want)
		}
		if total := len(all[0]) + len(all[1]); maxKept > total/5 {
			t.Fatalf("spill %v: kept up to %d of %d rows", spill, maxKept, total)
		}
	}
}

// TestJoinIntervalLaggingSide: one side of an interval join (left.ts
// BETWEEN right.ts - 10 AND right.ts) runs far ahead of the other, as when
// both read a stream at their own pace: the right side's rows and its
// watermark come first, to the end. The left rows, which arrive after the
// watermark has passed most of them, still match every right row (and a
// retraction among them takes its matches back), but those below the
// watermark less 10 are not kept: no right row to come can match them.
func TestJoinIntervalLaggingSide(t *testing.T) {
	cond := intervalCond()
	ck := newCheckpointer(t)
	j := newJoin(t, joinNode(spec.InnerJoin, cond), 7, ck.db, nil)
	c := newCollector()
	var right, left []change
	for tm := int64(0); tm < 100; tm++ {
		right = append(right, change{types.Row{types.NewInt(tm % 3), types.NewTimestamp(tm)}, 1})
		left = append(left, change{types.Row{types.NewInt(tm % 3), types.NewTimestamp(tm)}, 1},
			change{types.Row{types.NewInt((tm + 1) % 3), types.NewTimestamp(tm)}, 1})
	}
	left = append(left, change{left[7].row, -1}) // below the watermark
	c.step(t, process(j, 1, right...))
	var fwd []flow.Watermark
	c.step(t, watermark(j, 1, flow.Watermark{Col: 1, Ts: 100}, &fwd))
	c.step(t, process(j, 0, left...))
	want := bag{}
	for _, l := range left {
		for _, r := range right {
			if l.row[0].I == r.row[0].I && l.row[1].I >= r.row[1].I-10 && l.row[1].I <= r.row[1].I {
				want.add(append(l.row.Copy(), r.row...), l.diff)
			}
		}
	}
	if !c.total.equal(want) {
		t.Fatalf("output %v\nwant %v", c.total, want)
	}
	// Kept: the 100 right rows and the 20 left rows at 90 and later.
	if got := j.StoredRows(); got != 120 {
		t.Fatalf("kept %d rows, want 120", got)
	}
}

// The checkpoint's key sort agrees with a plain stable sort, also for keys
// that end inside the shared prefix or the 8 bytes compared as a number,
// keys with zero bytes where a shorter key is padded, duplicates, and
// enough keys for the radix sort.
func TestJoinSortsKeys(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 400; round++ {
		n := rng.Intn(40)
		if round%2 == 0 {
			n = rng.Intn(400)
		}
		ks := make([]string, n)
		for i := range ks {
			b := []byte("\x07\x03\x82\x01")[:rng.Intn(5)]
			for k := rng.Intn(12); k > 0; k-- {
				b = append(b, []byte{0, 1, 0xff}[rng.Intn(3)])
			}
			ks[i] = string(b)
		}
		for _, lenFirst := range []bool{false, true} {
			want := make([]int, n)
			for i := range want {
				want[i] = i
			}
			slices.SortStableFunc(want, func(a, b int) int {
				if lenFirst && len(ks[a]) != len(ks[b]) {
					return len(ks[a]) - len(ks[b])
				}
				return strings.Compare(ks[a], ks[b])
			})
			if got := ops.SortKeyOrder(ks, lenFirst); !slices.Equal(got, want) {
				t.Fatalf("lenFirst=%v: order %v, want %v", lenFirst, got, want)
			}
			// Same lengths: the radix sort (and the buckets' order).
			if lenFirst {
				fixed := make([]string, n)
				for i, k := range ks {
					fixed[i] = (k + "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")[:16]
				}
				want := make([]int, n)
				for i := range want {
					want[i] = i
				}
				slices.SortStableFunc(want, func(a, b int) int { return strings.Compare(fixed[a], fixed[b]) })
				if got := ops.SortKeyOrder(fixed, true); !slices.Equal(got, want) {
					t.Fatalf("fixed length: order %v, want %v", got, want)
				}
			}
		}
		want := slices.Clone(ks)
		slices.Sort(want)
		ops.SortStrings(ks)
		if !slices.Equal(ks, want) {
			t.Fatalf("sorted %q, want %q", ks, want)
		}
	}
}

// TestJoinSpilledRowsLeaveNoZeroCounts: a spilled bucket's changes are
// count deltas, and a row counted down to zero stays a key of count zero
// (the merge operator cannot delete it). Reading the bucket back deletes
// such keys, and a spilled bucket whose rows all went is deleted whole.
func TestJoinSpilledRowsLeaveNoZeroCounts(t *testing.T) {
	const opID = 9
	ck := newCheckpointer(t)
	ck.db.StateCache().SetLimit(0)
	n := joinNode(spec.InnerJoin, nil)
	j := newJoin(t, n, opID, ck.db, nil)
	c := newCollector()
	settle := func() { // written, committed, spilled
		t.Helper()
		for i := 0; i < 3; i++ {
			ck.checkpoint(t, []flow.Operator{j}, []*collector{c})
		}
	}
	stored := func() map[string]int64 { return stateCounts(t, ck.db, opID) }
	zeros := func() int {
		z := 0
		for _, n := range stored() {
			if n == 0 {
				z++
			}
		}
		return z
	}
	c.step(t, process(j, left, ins(row(1, 10)), ins(row(1, 20))))
	settle()
	if ev, _ := j.Spills(); ev == 0 {
		t.Fatal("the bucket was not spilled")
	}
	c.step(t, process(j, left, del(row(1, 10))))
	settle()
	if got := stored(); len(got) != 2 || zeros() != 1 {
		t.Fatalf("after a spilled row went: stored %v, want its key at 0 and the other row's", got)
	}
	// A probe reads the bucket back; the next barrier deletes the zero.
	c.step(t, process(j, right, ins(row(1, 5))))
	c.wantTotal(t, bagOf("(1,20,1,5)"))
	ck.checkpoint(t, []flow.Operator{j}, []*collector{c})
	if got := stored(); len(got) != 2 || zeros() != 0 {
		t.Fatalf("after the bucket was read back: stored %v, want (1,20) and (1,5) at 1", got)
	}
	// Spilled again, its last row goes: the bucket's keys go.
	settle()
	c.step(t, process(j, left, del(row(1, 20))))
	settle()
	if got := stored(); len(got) != 1 || zeros() != 0 {
		t.Fatalf("after the spilled bucket emptied: stored %v, want (1,5) only", got)
	}
	c.wantTotal(t, bag{})
	// What is stored reads back as the join's state.
	j.Release()
	j = newJoin(t, n, opID, ck.db, nil)
	c.step(t, process(j, left, ins(row(1, 30))))
	c.wantTotal(t, bagOf("(1,30,1,5)"))
}

// TestJoinForgetsSpilledCounts: past the state cache, a join spills its
// buckets and then forgets their row counts too, so that its memory does
// not grow with its distinct keys; probes, retractions and a restart
// still give the exact results.
func TestJoinForgetsSpilledCounts(t *testing.T) {
	const opID, keys = 11, 20000
	ck := newCheckpointer(t)
	ck.db.StateCache().SetLimit(100 << 10) // room for about 1,300 counts
	n := joinNode(spec.InnerJoin, nil)
	j := newJoin(t, n, opID, ck.db, nil)
	c := newCollector()
	settle := func() {
		t.Helper()
		for i := 0; i < 3; i++ {
			ck.checkpoint(t, []flow.Operator{j}, []*collector{c})
		}
	}
	for k0 := 0; k0 < keys; k0 += 1000 {
		var chs []change
		for k := k0; k < k0+1000; k++ {
			chs = append(chs, ins(row(k, k*10)))
		}
		c.step(t, process(j, left, chs...))
		settle()
	}
	if held := j.HeldCounts(); held > 2000 {
		t.Fatalf("the join holds %d counts of %d keys", held, keys)
	}
	if got := j.StoredRows(); got != keys {
		t.Fatalf("StoredRows = %d, want %d", got, keys)
	}
	// Every 7th key matches; every 14th left row is retracted, one of them
	// before its match, and a key is added and retracted within an epoch.
	want := bag{}
	var chs []change
	for k := 0; k < keys; k += 7 {
		chs = append(chs, ins(row(k, -k)))
		want.add(row(k, k*10, k, -k), 1)
	}
	c.step(t, process(j, right, chs...))
	c.wantTotal(t, want)
	settle()
	chs = nil
	for k := 0; k < keys; k += 14 {
		chs = append(chs, del(row(k, k*10)))
		want.add(row(k, k*10, k, -k), -1)
	}
	chs = append(chs, ins(row(keys+1, 1)), del(row(keys+1, 1)))
	c.step(t, process(j, left, chs...))
	c.wantTotal(t, want)
	settle()
	wantRows := keys - (keys+13)/14 + (keys+6)/7
	if got := j.StoredRows(); got != wantRows {
		t.Fatalf("StoredRows = %d, want %d", got, wantRows)
	}
	if held := j.HeldCounts(); held > 2000 {
		t.Fatalf("the join holds %d counts", held)
	}
	// Read back after a restart: the right rows of retracted keys match
	// new left rows, the others match twice.
	j.Release()
	j = newJoin(t, n, opID, ck.db, nil)
	if got := j.StoredRows(); got != wantRows || j.HeldCounts() > 2000 {
		t.Fatalf("after a restart: StoredRows = %d (want %d), %d counts held", got, wantRows, j.HeldCounts())
	}
	c.step(t, process(j, left, ins(row(14, 0)), ins(row(21, 0)), ins(row(22, 0))))
	want.add(row(14, 0, 14, -14), 1)
	want.add(row(21, 0, 21, -21), 1)
	c.wantTotal(t, want)
	settle()
	if got := j.StoredRows(); got != wantRows+3 {
		t.Fatalf("StoredRows = %d, want %d", got, wantRows+3)
	}
}
