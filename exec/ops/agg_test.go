// Tests of the hash aggregation with retractions: count, count(*), sum over
// int/numeric/float, avg, min, max, count(DISTINCT), sum(DISTINCT) and
// FILTER under inserts, updates and deletes; min/max after the current
// extreme is deleted; a group retracted when it empties; the global
// aggregate's row at its first Checkpoint and at Finish; and state saved
// at Checkpoint into a real store, restored with NewAgg, continuing exactly
// as an uninterrupted aggregation (checked against a from-scratch
// recomputation after every batch of a long random run).
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

// Input columns of the aggregation tests.
const (
	cG    = iota // TEXT group
	cI           // BIGINT
	cN           // NUMERIC (scale 2)
	cF           // DOUBLE PRECISION (multiples of 0.5)
	cFlag        // BOOLEAN, for FILTER
	cS           // TEXT
)

func agg(f string, arg int, t types.T) spec.AggCall {
	return spec.AggCall{Func: f, Arg: arg, Filter: -1, T: t}
}

// distinct makes a an aggregate of DISTINCT values.
func distinct(a spec.AggCall) spec.AggCall { a.Distinct = true; return a }

// filter gives a the FILTER (WHERE flag).
func filter(a spec.AggCall) spec.AggCall { a.Filter = cFlag; return a }

// allAggs covers every streaming aggregate over every input kind.
func allAggs() []spec.AggCall {
	return []spec.AggCall{
		agg("count_star", -1, types.TInt8),
		agg("count", cI, types.TInt8),
		agg("count", cS, types.TInt8),
		agg("sum", cI, types.TNumeric), // sum(bigint) is numeric
		agg("sum", cI, types.TInt8),    // sum(int) is bigint
		agg("sum", cN, types.TNumeric),
		agg("sum", cF, types.TFloat8),
		agg("avg", cI, types.TNumeric),
		agg("avg", cN, types.TNumeric),
		agg("avg", cF, types.TFloat8),
		agg("min", cI, types.TInt8),
		agg("max", cI, types.TInt8),
		agg("min", cN, types.TNumeric),
		agg("max", cF, types.TFloat8),
		agg("min", cS, types.TText),
		agg("max", cS, types.TText),
		distinct(agg("count", cI, types.TInt8)),
		distinct(agg("sum", cI, types.TNumeric)),
		distinct(agg("count", cS, types.TInt8)),
		filter(agg("count_star", -1, types.TInt8)),
		filter(agg("sum", cI, types.TNumeric)),
		filter(agg("max", cI, types.TInt8)),
		filter(distinct(agg("count", cI, types.TInt8))),
	}
}

// distinctCountAggs are count(DISTINCT) aggregates only (with and without
// a FILTER, two arguments) besides count(*): their multisets keep counts
// alone, so their entries are evicted one by one.
func distinctCountAggs() []spec.AggCall {
	return []spec.AggCall{
		agg("count_star", -1, types.TInt8),
		distinct(agg("count", cI, types.TInt8)),
		filter(distinct(agg("count", cI, types.TInt8))),
		distinct(agg("count", cS, types.TInt8)),
		distinct(agg("count", cN, types.TInt8)),
		distinct(agg("sum", cI, types.TNumeric)), // sum(DISTINCT bigint)
		distinct(agg("sum", cI, types.TInt8)),    // sum(DISTINCT int)
		filter(distinct(agg("avg", cI, types.TNumeric))),
		distinct(agg("avg", cN, types.TNumeric)),
		distinct(agg("sum", cN, types.TNumeric)),
		agg("sum", cN, types.TNumeric), // its scales, not counted by older builds
	}
}

// extremeAggs are min and max over types whose sets spill entry by entry
// (with a count(DISTINCT) and FILTERs sharing their sets), and a numeric
// min whose set is held whole.
func extremeAggs() []spec.AggCall {
	return []spec.AggCall{
		agg("count_star", -1, types.TInt8),
		agg("min", cI, types.TInt8),
		agg("max", cI, types.TInt8),
		filter(agg("max", cI, types.TInt8)),
		distinct(agg("count", cI, types.TInt8)),
		distinct(agg("max", cI, types.TInt8)),
		agg("min", cS, types.TText),
		agg("max", cS, types.TText),
		filter(agg("min", cF, types.TFloat8)),
		agg("max", cF, types.TFloat8),
		agg("min", cN, types.TNumeric),
	}
}

func aggNode(groupBy []int, aggs []spec.AggCall) *spec.Node {
	return &spec.Node{Kind: spec.Agg, GroupBy: groupBy, Aggs: aggs}
}

func newAgg(t *testing.T, n *spec.Node) *ops.Agg {
	t.Helper()
	a, err := ops.NewAgg(n, 1, nil /* db: no saved state */)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func process(op flow.Operator, in int, changes ...change) func(*flow.Emitter) error {
	return func(out *flow.Emitter) error { return op.Process(in, batchOf(changes...), out) }
}

// aggStep processes one batch and flushes the aggregation's pending
// changes, as a barrier would.
func aggStep(a *ops.Agg, changes ...change) func(*flow.Emitter) error {
	return func(out *flow.Emitter) error {
		if err := a.Process(0, batchOf(changes...), out); err != nil {
			return err
		}
		return a.Flush(out)
	}
}

func TestAggInsertUpdateDelete(t *testing.T) {
	n := aggNode([]int{cG}, []spec.AggCall{
		agg("count_star", -1, types.TInt8),
		agg("count", cI, types.TInt8),
		agg("sum", cI, types.TInt8),
		agg("sum", cN, types.TNumeric),
		agg("sum", cF, types.TFloat8),
		agg("avg", cI, types.TNumeric),
	})
	a := newAgg(t, n)
	c := newCollector()
	r := func(g string, i any, nm any, f any) types.Row { return row(g, i, nm, f, nil, nil) }

	c.step(t, aggStep(a,
		ins(r("a", 1, dec("1.50"), 0.5)),
		ins(r("a", 2, dec("2.25"), 1.5)),
		ins(r("b", nil, nil, nil)),
	))
	c.wantDelta(t, bagOf("('a',2,2,3,n3.75,f2,n1.5)", "('b',1,0,NULL,NULL,NULL,NULL)"))

	// An update is -old +new in one batch: one retraction and one new row
	// per touched group.
	c.step(t, aggStep(a,
		del(r("a", 2, dec("2.25"), 1.5)),
		ins(r("a", 5, dec("-0.75"), -2.0)),
	))
	c.wantDelta(t, bagOf("-('a',2,2,3,n3.75,f2,n1.5)", "('a',2,2,6,n0.75,f-1.5,n3)"))

	// An update that changes no aggregate emits nothing.
	c.step(t, aggStep(a, del(r("b", nil, nil, nil)), ins(r("b", nil, nil, nil))))
	c.wantDelta(t, bag{})

	// A change moving a row between groups touches both.
	c.step(t, aggStep(a, del(r("a", 1, dec("1.50"), 0.5)), ins(r("b", 1, dec("1.50"), 0.5))))
	c.wantDelta(t, bagOf(
		"-('a',2,2,6,n0.75,f-1.5,n3)", "('a',1,1,5,n-0.75,f-2,n5)",
		"-('b',1,0,NULL,NULL,NULL,NULL)", "('b',2,1,1,n1.5,f0.5,n1)",
	))

	// A group whose rows are all deleted is retracted, not shown as zero.
	c.step(t, aggStep(a, del(r("a", 5, dec("-0.75"), -2.0))))
	c.wantDelta(t, bagOf("-('a',1,1,5,n-0.75,f-2,n5)"))
	c.wantTotal(t, bagOf("('b',2,1,1,n1.5,f0.5,n1)"))

	// The group comes back from scratch.
	c.step(t, aggStep(a, ins(r("a", 7, dec("7"), 7.0))))
	c.wantDelta(t, bagOf("('a',1,1,7,n7,f7,n7)"))
	// Duplicates count with their multiplicity (diff 2 and -2).
	c.step(t, aggStep(a, change{r("a", 7, dec("7"), 7.0), 2}))
	c.wantDelta(t, bagOf("-('a',1,1,7,n7,f7,n7)", "('a',3,3,21,n21,f21,n7)"))
	c.step(t, aggStep(a, change{r("a", 7, dec("7"), 7.0), -2}))
	c.wantDelta(t, bagOf("-('a',3,3,21,n21,f21,n7)", "('a',1,1,7,n7,f7,n7)"))
}

func TestAggMinMaxAfterDeletingExtreme(t *testing.T) {
	n := aggNode([]int{cG}, []spec.AggCall{
		agg("min", cI, types.TInt8), agg("max", cI, types.TInt8),
		agg("min", cS, types.TText), agg("max", cS, types.TText),
	})
	a := newAgg(t, n)
	c := newCollector()
	r := func(i any, s any) types.Row { return row("g", i, nil, nil, nil, s) }

	c.step(t, aggStep(a, ins(r(5, "m")), ins(r(1, "z")), ins(r(9, "a")), ins(r(1, "z")), ins(r(nil, nil))))
	c.wantTotal(t, bagOf("('g',1,9,'a','z')"))
	// One of two copies of the minimum goes: the minimum stays.
	c.step(t, aggStep(a, del(r(1, "z"))))
	c.wantDelta(t, bag{})
	// The last copy goes: the next smallest takes over.
	c.step(t, aggStep(a, del(r(1, "z"))))
	c.wantDelta(t, bagOf("-('g',1,9,'a','z')", "('g',5,9,'a','m')"))
	c.step(t, aggStep(a, del(r(9, "a"))))
	c.wantDelta(t, bagOf("-('g',5,9,'a','m')", "('g',5,5,'m','m')"))
	// Only NULLs left: min and max are NULL but the group exists.
	c.step(t, aggStep(a, del(r(5, "m"))))
	c.wantDelta(t, bagOf("-('g',5,5,'m','m')", "('g',NULL,NULL,NULL,NULL)"))
	c.step(t, aggStep(a, del(r(nil, nil))))
	c.wantDelta(t, bagOf("-('g',NULL,NULL,NULL,NULL)"))
	c.wantTotal(t, bag{})
}

func TestAggDistinctAndFilter(t *testing.T) {
	cnt := agg("count", cI, types.TInt8)
	cnt.Distinct = true
	sum := agg("sum", cI, types.TNumeric)
	sum.Distinct = true
	fc := agg("count_star", -1, types.TInt8)
	fc.Filter = cFlag
	fs := agg("sum", cI, types.TNumeric)
	fs.Filter = cFlag
	a := newAgg(t, aggNode([]int{cG}, []spec.AggCall{cnt, sum, fc, fs}))
	c := newCollector()
	r := func(i any, flag any) types.Row { return row("g", i, nil, nil, flag, nil) }

	c.step(t, aggStep(a, ins(r(3, true)), ins(r(3, false)), ins(r(4, nil)), ins(r(nil, true))))
	c.wantTotal(t, bagOf("('g',2,n7,2,n3)"))
	c.step(t, aggStep(a, del(r(3, true))))
	c.wantTotal(t, bagOf("('g',2,n7,1,NULL)"))
	c.step(t, aggStep(a, del(r(3, false))))
	c.wantTotal(t, bagOf("('g',1,n4,1,NULL)"))
}

func TestAggGlobalEmptyRow(t *testing.T) {
	aggs := []spec.AggCall{agg("count_star", -1, types.TInt8), agg("sum", cI, types.TNumeric), agg("max", cI, types.TInt8)}
	ck := newCheckpointer(t)

	// Streaming: the empty row appears at the first barrier, once.
	a := newAgg(t, aggNode(nil, aggs))
	c := newCollector()
	ck.checkpoint(t, []flow.Operator{a}, []*collector{c})
	c.wantDelta(t, bagOf("(0,NULL,NULL)"))
	ck.checkpoint(t, []flow.Operator{a}, []*collector{c})
	c.wantDelta(t, bag{})
	c.step(t, aggStep(a, ins(row("g", 4, nil, nil, nil, nil))))
	c.wantDelta(t, bagOf("-(0,NULL,NULL)", "(1,n4,4)"))
	// Emptied again, the global row stays, back to count 0 and NULL sum.
	c.step(t, aggStep(a, del(row("g", 4, nil, nil, nil, nil))))
	c.wantDelta(t, bagOf("-(1,n4,4)", "(0,NULL,NULL)"))
	c.step(t, func(out *flow.Emitter) error { return a.Finish(out) })
	c.wantDelta(t, bag{})

	// Batch: an empty input still yields one row, at Finish.
	b := newAgg(t, aggNode(nil, aggs))
	c = newCollector()
	c.step(t, func(out *flow.Emitter) error { return b.Finish(out) })
	c.wantDelta(t, bagOf("(0,NULL,NULL)"))

	// Batch with input: the row comes at Finish, once.
	b = newAgg(t, aggNode(nil, aggs))
	c = newCollector()
	c.step(t, process(b, 0, ins(row("g", 4, nil, nil, nil, nil)), ins(row("g", 6, nil, nil, nil, nil))))
	c.wantDelta(t, bag{})
	c.step(t, func(out *flow.Emitter) error { return b.Finish(out) })
	c.wantDelta(t, bagOf("(2,n10,6)"))

	// A grouped aggregate over no input emits nothing at all.
	g := newAgg(t, aggNode([]int{cG}, aggs))
	c = newCollector()
	ck.checkpoint(t, []flow.Operator{g}, []*collector{c})
	c.step(t, func(out *flow.Emitter) error { return g.Finish(out) })
	c.wantTotal(t, bag{})
}

// TestAggGlobalRestoreDoesNotReemit: the global row emitted before a
// checkpoint is not emitted again by the restored operator.
func TestAggGlobalRestoreDoesNotReemit(t *testing.T) {
	n := aggNode(nil, []spec.AggCall{agg("count_star", -1, types.TInt8)})
	ck := newCheckpointer(t)
	a, err := ops.NewAgg(n, 9, ck.db)
	if err != nil {
		t.Fatal(err)
	}
	c := newCollector()
	ck.checkpoint(t, []flow.Operator{a}, []*collector{c})
	c.step(t, aggStep(a, ins(row("g", 1, nil, nil, nil, nil))))
	ck.checkpoint(t, []flow.Operator{a}, []*collector{c})
	c.wantTotal(t, bagOf("(1)"))

	b, err := ops.NewAgg(n, 9, ck.db)
	if err != nil {
		t.Fatal(err)
	}
	ck.checkpoint(t, []flow.Operator{b}, []*collector{c})
	c.wantDelta(t, bag{})
	c.step(t, aggStep(b, ins(row("g", 1, nil, nil, nil, nil))))
	c.wantDelta(t, bagOf("-(1)", "(2)"))
}

// refAgg recomputes the aggregation of the input multiset from scratch.
func refAgg(t *testing.T, input map[string]change, groupBy []int, aggs []spec.AggCall, global bool) bag {
	t.Helper()
	type grp struct {
		key  types.Row
		rows []change
	}
	groups := map[string]*grp{}
	var order []string
	for _, ch := range input {
		var key types.Row
		for _, c := range groupBy {
			key = append(key, ch.row[c])
		}
		k := fmtRow(key)
		if groups[k] == nil {
			groups[k] = &grp{key: key}
			order = append(order, k)
		}
		groups[k].rows = append(groups[k].rows, ch)
	}
	if global && len(groups) == 0 {
		groups[""] = &grp{}
		order = append(order, "")
	}
	out := bag{}
	for _, k := range order {
		g := groups[k]
		r := append(types.Row{}, g.key...)
		for _, ag := range aggs {
			r = append(r, refResult(t, g.rows, ag))
		}
		out.add(r, 1)
	}
	return out
}

func refResult(t *testing.T, rows []change, ag spec.AggCall) types.Datum {
	var vals []types.Datum // one per copy of a row
	var count int64
	seen := map[string]bool{}
	for _, ch := range rows {
		if ag.Filter >= 0 && !ch.row[ag.Filter].Bool() {
			continue
		}
		for i := int64(0); i < ch.diff; i++ {
			if ag.Func == "count_star" {
				count++
				continue
			}
			v := ch.row[ag.Arg]
			if v.IsNull() {
				continue
			}
			if ag.Distinct {
				if seen[fmtDatum(v)] {
					continue
				}
				seen[fmtDatum(v)] = true
			}
			vals = append(vals, v)
		}
	}
	switch ag.Func {
	case "count_star":
		return types.NewInt(count)
	case "count":
		return types.NewInt(int64(len(vals)))
	case "min", "max":
		if len(vals) == 0 {
			return types.Null
		}
		best := vals[0]
		for _, v := range vals[1:] {
			c := types.Compare(v, best)
			if (ag.Func == "min" && c < 0) || (ag.Func == "max" && c > 0) {
				best = v
			}
		}
		return best
	}
	if len(vals) == 0 {
		return types.Null
	}
	var sum types.Datum
	switch ag.T.Fam {
	case types.Float8:
		s := 0.0
		for _, v := range vals {
			s += v.Float()
		}
		sum = types.NewFloat(s)
	case types.Numeric:
		sum = types.DecFromInt(0)
		for _, v := range vals {
			if v.K == types.KInt {
				v = types.DecFromInt(v.I)
			}
			var err error
			if sum, err = types.DecAdd(sum, v); err != nil {
				t.Fatal(err)
			}
		}
	default:
		var s int64
		for _, v := range vals {
			s += v.I
		}
		sum = types.NewInt(s)
	}
	if ag.Func == "sum" {
		return sum
	}
	if sum.K == types.KFloat {
		return types.NewFloat(sum.Float() / float64(len(vals)))
	}
	q, err := types.DecDiv(sum, types.DecFromInt(int64(len(vals))))
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// randomAggRow draws a row from a small domain, so that groups, duplicates
// and extremes collide often. Floats are multiples of 0.5 and numerics have
// scale 2, so sums are exact in any order.
func randomAggRow(rng *rand.Rand) types.Row {
	pick := func(null int, f func() types.Datum) types.Datum {
		if rng.Intn(null) == 0 {
			return types.Null
		}
		return f()
	}
	return types.Row{
		types.NewString(string(rune('a' + rng.Intn(3)))),
		pick(6, func() types.Datum { return types.NewInt(int64(rng.Intn(10) - 3)) }),
		pick(6, func() types.Datum { return types.NewDecimal(int64(rng.Intn(40)*25-250), 2) }),
		pick(6, func() types.Datum { return types.NewFloat(float64(rng.Intn(12)-4) / 2) }),
		pick(4, func() types.Datum { return types.NewBool(rng.Intn(2) == 0) }),
		pick(5, func() types.Datum { return types.NewString([]string{"x", "y", "zz", "ab"}[rng.Intn(4)]) }),
	}
}

// TestAggRandomWithRestore feeds a long random stream of inserts, updates
// and deletes to two aggregations: one runs uninterrupted, the other is
// recreated from the committed store after every checkpoint. Both must emit
// exactly the same changes, and their output must always equal a
// from-scratch recomputation.
func TestAggRandomWithRestore(t *testing.T) {
	for _, tc := range []struct {
		name    string
		groupBy []int
		split   int // store multisets entry by entry from this size (0: default)
		// appendOnly: inserts only, into an aggregation planned for an
		// append-only input (min/max keep only the extreme).
		appendOnly bool
		// spill: a state cache of 0 bytes, so that every clean group is
		// evicted at each checkpoint and read back from the store.
		spill bool
		// distinct: count(DISTINCT) aggregates only (distinctCountAggs),
		// whose set entries are evicted and read back one by one.
		distinct bool
		// extremes: min and max (extremeAggs), whose sets keep one entry
		// at each end and spill the others.
		extremes bool
	}{
		{"grouped", []int{cG}, 0, false, false, false, false},
		{"two keys", []int{cG, cFlag}, 0, false, false, false, false},
		{"global", nil, 0, false, false, false, false},
		{"grouped, split sets", []int{cG}, 4, false, false, false, false},
		{"global, split sets", nil, 3, false, false, false, false},
		{"grouped, append-only", []int{cG}, 0, true, false, false, false},
		{"global, append-only", nil, 0, true, false, false, false},
		{"grouped, spill", []int{cG}, 0, false, true, false, false},
		{"two keys, spill", []int{cG, cFlag}, 0, false, true, false, false},
		{"grouped, split sets, spill", []int{cG}, 4, false, true, false, false},
		{"grouped, append-only, spill", []int{cG}, 0, true, true, false, false},
		{"distinct counts, split sets, spill", []int{cG}, 4, false, true, true, false},
		{"global distinct counts, split sets, spill", nil, 4, false, true, true, false},
		{"distinct counts, append-only, split sets, spill", []int{cG}, 4, true, true, true, false},
		{"extremes, split sets, spill", []int{cG}, 3, false, true, false, true},
		{"two keys, extremes, split sets, spill", []int{cG, cFlag}, 3, false, true, false, true},
		{"global extremes, split sets, spill", nil, 3, false, true, false, true},
		{"extremes, split sets", []int{cG}, 3, false, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.split > 0 {
				defer ops.SetSplitSetAt(tc.split)()
			}
			rng := rand.New(rand.NewSource(42))
			aggs := allAggs()
			if tc.distinct {
				aggs = distinctCountAggs()
			}
			if tc.extremes {
				aggs = extremeAggs()
				defer ops.SetExtremeKeep(1)()
			}
			n := aggNode(tc.groupBy, aggs)
			n.InputAppendOnly = tc.appendOnly
			ck := newCheckpointer(t)
			if tc.spill {
				ck.db.StateCache().SetLimit(0)
			}
			a, err := ops.NewAgg(n, 1, ck.db)
			if err != nil {
				t.Fatal(err)
			}
			b, err := ops.NewAgg(n, 2, ck.db)
			if err != nil {
				t.Fatal(err)
			}
			if tc.spill {
				// Read back: by a, groups it evicted; by b, also those it
				// left in the store when recreated. Append-only groups are
				// few and all touched at every epoch: they are never clean
				// at a checkpoint, and only b reads them back.
				defer func() {
					ev, ld := a.Spills()
					_, bld := b.Spills()
					if tc.groupBy != nil && ((ev == 0 && !tc.appendOnly) || ld+bld == 0) {
						t.Errorf("spilled %d groups and read back %d (restored: %d)", ev, ld, bld)
					}
					if tc.distinct || tc.extremes {
						eo, ei, er := a.EntrySpills()
						_, bei, ber := b.EntrySpills()
						t.Logf("entries: evicted %d, read back %d by the uninterrupted, %d by the restored; store reads %d, %d", eo, ei, bei, er, ber)
						if eo == 0 || ei == 0 || bei == 0 {
							t.Errorf("set entries evicted %d, read back %d and %d (restored)", eo, ei, bei)
						}
					}
				}()
			}
			ca, cb := newCollector(), newCollector()
			input := map[string]change{} // current input: row -> multiplicity
			var live []string
			started := false   // the global row exists after the first output
			var pending func() // the commit of an epoch in flight
			steps := 1000
			if tc.appendOnly { // the input only grows: fewer steps keep the recomputation cheap
				steps = 300
			}
			for stepNo := 0; stepNo < steps; stepNo++ {
				bt := types.NewBatch(8)
				for k := rng.Intn(6) + 1; k > 0; k-- {
					mod := func(r types.Row, d int64) {
						key := fmtRow(r)
						ch := input[key]
						ch.row, ch.diff = r, ch.diff+d
						if ch.diff == 0 {
							delete(input, key)
						} else {
							if _, ok := input[key]; !ok {
								live = append(live, key)
							}
							input[key] = ch
						}
						bt.Add(r, d)
					}
					pickLive := func() (change, bool) {
						for len(live) > 0 {
							i := rng.Intn(len(live))
							if ch, ok := input[live[i]]; ok {
								return ch, true
							}
							live[i] = live[len(live)-1]
							live = live[:len(live)-1]
						}
						return change{}, false
					}
					// Keep about 10-30 distinct rows: enough for every group to
					// gain and lose its extremes, small enough to recompute.
					op := rng.Intn(10)
					if tc.appendOnly {
						op = 0
					}
					switch {
					case tc.appendOnly:
						mod(randomAggRow(rng), int64(1+rng.Intn(2)))
					case len(input) > 30 || (op >= 4 && op < 7): // delete one copy or all of them
						if ch, ok := pickLive(); ok {
							d := int64(1)
							if rng.Intn(3) == 0 {
								d = ch.diff
							}
							mod(ch.row, -d)
						}
					case op < 4 || len(input) < 10: // insert, sometimes twice
						mod(randomAggRow(rng), int64(1+rng.Intn(2)))
					default: // update: -old +new
						if ch, ok := pickLive(); ok {
							mod(ch.row, -1)
							nr := ch.row.Copy()
							c := 1 + rng.Intn(5)
							nr[c] = randomAggRow(rng)[c]
							mod(nr, 1)
						}
					}
				}
				// Changes are pending until a flush or a barrier: flush after
				// some batches only, so that changes of several batches to one
				// group are netted.
				flush := rng.Intn(3) == 0
				step := func(op *ops.Agg) func(out *flow.Emitter) error {
					return func(out *flow.Emitter) error {
						if err := op.Process(0, bt, out); err != nil || !flush {
							return err
						}
						return op.Flush(out)
					}
				}
				ca.step(t, step(a))
				cb.step(t, step(b))
				if rng.Intn(15) == 0 {
					flush = true
					if pending != nil {
						pending()
						pending = nil
					}
					commit := ck.begin(t, []flow.Operator{a, b}, []*collector{ca, cb})
					if !ca.delta.equal(cb.delta) {
						t.Fatalf("step %d: checkpoint of the restored aggregation emitted %v, the uninterrupted %v", stepNo, cb.delta, ca.delta)
					}
					started = true
					if tc.spill && rng.Intn(2) == 0 {
						// The epoch commits after the next batches, as in a
						// pipeline with epochs in flight: what a spilled set
						// reads from the store must not be the state before it.
						pending = commit
					} else if commit(); rng.Intn(2) == 0 {
						b.Release()
						if b, err = ops.NewAgg(n, 2, ck.db); err != nil {
							t.Fatal(err)
						}
					}
				}
				if !ca.delta.equal(cb.delta) {
					t.Fatalf("step %d: restored aggregation emitted %v, uninterrupted %v", stepNo, cb.delta, ca.delta)
				}
				if len(ca.delta) > 0 {
					started = true
				}
				if !flush {
					if len(ca.delta) > 0 {
						t.Fatalf("step %d: emitted %v before a flush", stepNo, ca.delta)
					}
					continue
				}
				want := refAgg(t, input, tc.groupBy, aggs, tc.groupBy == nil && started)
				if !ca.total.equal(want) {
					t.Fatalf("step %d: output\n%v\nwant\n%v", stepNo, ca.total, want)
				}
			}
		})
	}
}

// TestAggDistinctSumsFromOlderState: the builds before exactDistinctSum
// did not keep DISTINCT sums in their accumulators, and wrote group
// headers without the marker. An aggregation that meets such state
// computes the sums from the stored sets (resum), inline or split, in
// memory or read back later, and goes on exactly.
func TestAggDistinctSumsFromOlderState(t *testing.T) {
	for _, spill := range []bool{false, true} {
		t.Run(fmt.Sprintf("spill=%v", spill), func(t *testing.T) {
			defer ops.SetSplitSetAt(4)()
			aggs := distinctCountAggs()
			n := aggNode([]int{cG}, aggs)
			ck := newCheckpointer(t)
			if spill {
				ck.db.StateCache().SetLimit(0)
			}
			rng := rand.New(rand.NewSource(7))
			input := map[string]change{}
			var live []types.Row
			c := newCollector()
			run := func(a *ops.Agg, steps int) {
				for i := 0; i < steps; i++ {
					bt := types.NewBatch(4)
					for k := 0; k < 3; k++ {
						r, d := randomAggRow(rng), int64(1)
						if len(live) > 20 && rng.Intn(2) == 0 {
							j := rng.Intn(len(live))
							r, d = live[j], -1
							live[j] = live[len(live)-1]
							live = live[:len(live)-1]
						} else {
							live = append(live, r)
						}
						key := fmtRow(r)
						ch := input[key]
						ch.row, ch.diff = r, ch.diff+d
						if ch.diff == 0 {
							delete(input, key)
						} else {
							input[key] = ch
						}
						bt.Add(r, d)
					}
					c.step(t, aggStep(a, batchChanges(bt)...))
					if rng.Intn(5) == 0 {
						ck.checkpoint(t, []flow.Operator{a}, []*collector{c})
					}
				}
				ck.checkpoint(t, []flow.Operator{a}, []*collector{c})
				if want := refAgg(t, input, []int{cG}, aggs, false); !c.total.equal(want) {
					t.Fatalf("output\n%v\nwant\n%v", c.total, want)
				}
			}
			undo := ops.SetLegacyDistinctSums(true)
			old, err := ops.NewAgg(n, 1, ck.db)
			if err != nil {
				t.Fatal(err)
			}
			run(old, 200)
			old.Release()
			undo()
			a, err := ops.NewAgg(n, 1, ck.db)
			if err != nil {
				t.Fatal(err)
			}
			run(a, 200)
			if spill {
				if _, ld := a.Spills(); ld == 0 {
					t.Errorf("no group read back")
				}
			}
		})
	}
}
