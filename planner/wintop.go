package planner

import (
	"reflect"

	"sluice/exec/spec"
	"sluice/sql/types"
)

// planWindowTopCounts plans the join of a count per key and window with
// the largest of those counts per window as the one operator it is
// (spec.WindowTopCount): Nexmark q5,
//
//	SELECT AuctionBids.auction, AuctionBids.num FROM (
//	    SELECT auction, count(*) AS num, window_start AS starttime
//	    FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND)
//	    GROUP BY window_start, auction) AS AuctionBids
//	JOIN (SELECT max(num) AS maxn, starttime_c FROM (
//	    SELECT count(*) AS num, window_start AS starttime_c
//	    FROM HOP(bid, …) GROUP BY auction, window_start) AS CountBids
//	  GROUP BY starttime_c) AS MaxBids
//	ON AuctionBids.starttime = MaxBids.starttime_c AND AuctionBids.num >= MaxBids.maxn
//
// keeps per open window a count per key and the keys at the largest,
// instead of counting, keeping every count of a window to take their
// maximum, and storing every (key, window, count) row for the join. It
// matches an inner join of count(*) per one integer column and the window
// of a TUMBLE or HOP over an append-only source read, with MAX of the
// same count per window, on the window (start or end) and count >= max
// (or count = max); the output may take the key, the count, the maximum
// and the window's start and end. It runs after projection folding and
// before sharing, which drops the nodes it replaces.
func planWindowTopCounts(plan *spec.Plan) {
	uses := liveUses(plan)
	for ji, j := range plan.Nodes {
		if j == nil || j.Kind != spec.Join || j.JoinKind != spec.InnerJoin || j.AsOf || j.EOWC || j.Temporal {
			continue
		}
		for side := 0; side < 2; side++ {
			if n, chain, ok := windowTopCount(plan, j, side, uses); ok {
				plan.Nodes[ji] = n
				for _, c := range chain {
					plan.Nodes[c] = nil
				}
				break
			}
		}
	}
}

// topMax marks the maximum among a WindowTopCount's output kinds while
// matching (the output takes the count for it).
const topMax = spec.TopEnd + 1

// countAgg is a matched count(*) per key and window over a source read.
type countAgg struct {
	agg, tw, src int
	key          int // the key column of the source
	// kind maps the Agg's output columns to spec.Top*; -1: none.
	kind []int
}

// matchCountAgg matches node i as count(*) GROUP BY one source column
// and the window, of a TUMBLE or HOP over a source read.
func matchCountAgg(plan *spec.Plan, i int, uses []int) (countAgg, bool) {
	a := plan.Nodes[i]
	if a.Kind != spec.Agg || a.EOWC || len(a.Aggs) != 1 || uses[i] != 1 {
		return countAgg{}, false
	}
	if c := a.Aggs[0]; c.Func != "count_star" || c.Distinct || c.Filter >= 0 || len(c.Extra) > 0 || len(c.Order) > 0 {
		return countAgg{}, false
	}
	tw := plan.Nodes[a.Inputs[0]]
	if tw.Kind != spec.TimeWindow || uses[a.Inputs[0]] != 1 {
		return countAgg{}, false
	}
	src := plan.Nodes[tw.Inputs[0]]
	if src.Kind != spec.SourceRead {
		return countAgg{}, false
	}
	m := countAgg{agg: i, tw: a.Inputs[0], src: tw.Inputs[0], key: -1, kind: make([]int, len(a.GroupBy)+1)}
	ws, window := len(src.Cols), false
	for g, c := range a.GroupBy {
		switch {
		case c == ws:
			m.kind[g], window = spec.TopStart, true
		case c == ws+1:
			m.kind[g], window = spec.TopEnd, true
		case m.key < 0:
			m.kind[g], m.key = spec.TopKey, c
		default:
			return countAgg{}, false
		}
	}
	m.kind[len(a.GroupBy)] = spec.TopCount
	if !window || m.key < 0 {
		return countAgg{}, false
	}
	switch src.Cols[m.key].Type.Fam {
	case types.Int2, types.Int4, types.Int8:
		return m, true
	}
	return countAgg{}, false
}

// underProject returns the input of node i if i is a projection of
// columns read by one consumer (with the columns it picks), else i.
func underProject(plan *spec.Plan, i int, uses []int) (in int, picked []int, proj bool) {
	n := plan.Nodes[i]
	if n.Kind != spec.Project || uses[i] != 1 {
		return i, nil, false
	}
	cols, ok := pickedCols(n.Exprs)
	if !ok {
		return i, nil, false
	}
	return n.Inputs[0], cols, true
}

// windowTopCount returns the WindowTopCount for join j with the maxima on
// input side (0 left, 1 right), and the nodes it replaces.
func windowTopCount(plan *spec.Plan, j *spec.Node, side int, uses []int) (*spec.Node, []int, bool) {
	lw := len(plan.Nodes[j.Inputs[0]].Cols)
	var chain []int
	// The counts' side.
	cIn, cPick, cProj := underProject(plan, j.Inputs[1-side], uses)
	if cProj {
		chain = append(chain, j.Inputs[1-side])
	}
	cnt, ok := matchCountAgg(plan, cIn, uses)
	if !ok || !AppendOnly(plan, cnt.src, func(uint64) bool { return false }) {
		return nil, nil, false
	}
	chain = append(chain, cnt.agg, cnt.tw)
	cKind := func(c int) int { return pickKind(cnt.kind, cPick, c) }
	// The maxima's side: MAX(count) GROUP BY the window over the same
	// counts, computed again (sharing has not run).
	mIn, mPick, mProj := underProject(plan, j.Inputs[side], uses)
	if mProj {
		chain = append(chain, j.Inputs[side])
	}
	m := plan.Nodes[mIn]
	if m.Kind != spec.Agg || m.EOWC || len(m.Aggs) != 1 || uses[mIn] != 1 {
		return nil, nil, false
	}
	cnt2, ok := matchCountAgg(plan, m.Inputs[0], uses)
	if !ok || !sameChain(plan, cnt.agg, cnt2.agg) || uses[cnt2.src] != 1 {
		return nil, nil, false
	}
	chain = append(chain, mIn, cnt2.agg, cnt2.tw, cnt2.src)
	if a := m.Aggs[0]; a.Func != "max" || a.Distinct || a.Filter >= 0 || a.Arg < 0 || a.Arg >= len(cnt2.kind) || cnt2.kind[a.Arg] != spec.TopCount {
		return nil, nil, false
	}
	mKinds := make([]int, len(m.GroupBy)+1)
	for g, c := range m.GroupBy {
		if k := cnt2.kind[c]; k == spec.TopStart || k == spec.TopEnd {
			mKinds[g] = k
		} else {
			return nil, nil, false
		}
	}
	mKinds[len(m.GroupBy)] = topMax
	mKind := func(c int) int { return pickKind(mKinds, mPick, c) }
	// kindOf classifies a column of left++right.
	offs := [2]int{0, lw}
	kindOf := func(c int) (int, bool) { // kind, on the maxima's side
		if (c >= lw) == (side == 1) {
			return mKind(c - offs[side]), true
		}
		return cKind(c - offs[1-side]), false
	}
	// The join: on the window, and count = max or count >= max.
	window, counted := false, false
	keys := [2][]int{j.LeftKeys, j.RightKeys}
	for i := range j.LeftKeys {
		ck, mk := cKind(keys[1-side][i]), mKind(keys[side][i])
		switch {
		case (ck == spec.TopStart || ck == spec.TopEnd) && ck == mk:
			window = true
		case ck == spec.TopCount && mk == topMax:
			counted = true
		default:
			return nil, nil, false
		}
	}
	if j.Cond != nil {
		f, ok := j.Cond.(*spec.Func)
		if !ok || len(f.Args) != 2 {
			return nil, nil, false
		}
		a, ok1 := f.Args[0].(*spec.ColRef)
		b, ok2 := f.Args[1].(*spec.ColRef)
		if !ok1 || !ok2 {
			return nil, nil, false
		}
		ak, aMax := kindOf(a.Idx)
		bk, bMax := kindOf(b.Idx)
		switch {
		case f.Name == ">=" && ak == spec.TopCount && !aMax && bk == topMax && bMax,
			f.Name == "<=" && ak == topMax && aMax && bk == spec.TopCount && !bMax,
			f.Name == "=" && ((ak == spec.TopCount && !aMax && bk == topMax) || (ak == topMax && bk == spec.TopCount && !bMax)):
			counted = true
		default:
			return nil, nil, false
		}
	}
	if !window || !counted {
		return nil, nil, false
	}
	out := j.JoinOut
	if out == nil {
		out = make([]int, len(j.Cols))
		for i := range out {
			out[i] = i
		}
	}
	tw := plan.Nodes[cnt.tw].TimeWin
	w := &spec.WinTopSpec{Win: *tw, Time: tw.Col, Key: cnt.key, Out: make([]int, len(out))}
	for i, c := range out {
		k, _ := kindOf(c)
		switch k {
		case topMax:
			k = spec.TopCount
		case -1:
			return nil, nil, false
		}
		w.Out[i] = k
	}
	return &spec.Node{Kind: spec.WindowTopCount, Inputs: []int{cnt.src}, Cols: j.Cols, WinTop: w}, chain, true
}

// pickKind returns kinds[picked[c]] (kinds[c] if picked is nil), -1 if
// out of range.
func pickKind(kinds, picked []int, c int) int {
	if picked != nil {
		if c < 0 || c >= len(picked) {
			return -1
		}
		c = picked[c]
	}
	if c < 0 || c >= len(kinds) {
		return -1
	}
	return kinds[c]
}

// sameChain reports whether nodes a and b compute the same rows from
// inputs that do, their column names aside.
func sameChain(plan *spec.Plan, a, b int) bool {
	x, y := plan.Nodes[a], plan.Nodes[b]
	if a == b {
		return true
	}
	if len(x.Inputs) != len(y.Inputs) || len(x.Cols) != len(y.Cols) {
		return false
	}
	for i := range x.Inputs {
		if !sameChain(plan, x.Inputs[i], y.Inputs[i]) {
			return false
		}
	}
	for i := range x.Cols {
		if x.Cols[i].Type != y.Cols[i].Type {
			return false
		}
	}
	p, q := *x, *y
	p.Cols, q.Cols, p.Inputs, q.Inputs = nil, nil, nil, nil
	p.RelName, q.RelName = "", ""
	return reflect.DeepEqual(&p, &q)
}
