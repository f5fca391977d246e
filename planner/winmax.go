package planner

import (
	"math"
	"reflect"

	"sluice/exec/spec"
	"sluice/sql/types"
)

// planWindowMaxJoins plans the join of a stream with its own maximum per
// TUMBLE window as the one operator it is (spec.WindowMaxJoin): Nexmark q7,
//
//	SELECT B.* FROM bid B JOIN (
//	    SELECT MAX(price) AS maxprice, window_end AS date_time
//	    FROM TUMBLE(bid, date_time, INTERVAL '10' SECOND) GROUP BY window_end
//	) B1 ON B.price = B1.maxprice
//	WHERE B.date_time BETWEEN B1.date_time - INTERVAL '10' SECOND AND B1.date_time
//
// reads the bids once and keeps per window its maximum and the bids at it,
// instead of reading them twice, aggregating one copy and storing every bid
// of the other until its window's maximum is known. It matches an inner
// join, on one integer column, of an append-only source read and the
// MAX of that column over a TUMBLE of the same source grouped by the
// window alone, whose condition is only a bound of the row's time against
// the window's start or end that keeps it within [end - size, end]; the
// join's output may take the maximum and the window's start and end. It
// runs after projection folding and before sharing, which drops the
// nodes it replaces.
func planWindowMaxJoins(plan *spec.Plan) {
	uses := liveUses(plan)
	for ji, j := range plan.Nodes {
		if j == nil || j.Kind != spec.Join || j.JoinKind != spec.InnerJoin || j.AsOf || j.EOWC || j.Temporal ||
			len(j.LeftKeys) != 1 || j.Cond == nil {
			continue
		}
		for side := 0; side < 2; side++ {
			if n, chain, ok := windowMaxJoin(plan, j, side, uses); ok {
				plan.Nodes[ji] = n
				for _, c := range chain {
					plan.Nodes[c] = nil
				}
				break
			}
		}
	}
}

// liveUses is plan.Uses() of a plan with folded (nil) nodes.
func liveUses(plan *spec.Plan) []int {
	uses := make([]int, len(plan.Nodes))
	for _, n := range plan.Nodes {
		if n != nil {
			for _, in := range n.Inputs {
				uses[in]++
			}
		}
	}
	return uses
}

// windowMaxJoin returns the WindowMaxJoin for join j with the maximum on
// input side (0 left, 1 right), and the nodes of that side it replaces.
func windowMaxJoin(plan *spec.Plan, j *spec.Node, side int, uses []int) (*spec.Node, []int, bool) {
	rowIdx, aggIdx := j.Inputs[1-side], j.Inputs[side]
	rows := plan.Nodes[rowIdx]
	lw := len(plan.Nodes[j.Inputs[0]].Cols)
	var chain []int
	// The maximum's side: [Project of columns] → Agg → TimeWindow → source.
	top := plan.Nodes[aggIdx]
	proj := func(c int) int { return c }
	if top.Kind == spec.Project {
		picked, ok := pickedCols(top.Exprs)
		if !ok || uses[aggIdx] != 1 {
			return nil, nil, false
		}
		chain = append(chain, aggIdx)
		proj = func(c int) int { return picked[c] }
		aggIdx = top.Inputs[0]
	}
	agg := plan.Nodes[aggIdx]
	if agg.Kind != spec.Agg || agg.EOWC || len(agg.Aggs) != 1 || len(agg.GroupBy) == 0 || uses[aggIdx] != 1 {
		return nil, nil, false
	}
	a := agg.Aggs[0]
	if a.Func != "max" || a.Distinct || a.Filter >= 0 || len(a.Extra) > 0 || len(a.Order) > 0 {
		return nil, nil, false
	}
	twIdx := agg.Inputs[0]
	tw := plan.Nodes[twIdx]
	if tw.Kind != spec.TimeWindow || tw.TimeWin.Hop || uses[twIdx] != 1 {
		return nil, nil, false
	}
	srcIdx := tw.Inputs[0]
	src := plan.Nodes[srcIdx]
	ws := len(src.Cols) // window_start; window_end is ws+1
	for _, g := range agg.GroupBy {
		if g != ws && g != ws+1 {
			return nil, nil, false
		}
	}
	chain = append(chain, aggIdx, twIdx)
	if srcIdx != rowIdx {
		if uses[srcIdx] != 1 || !sameSourceRead(src, rows) {
			return nil, nil, false
		}
		chain = append(chain, srcIdx)
	}
	if !AppendOnly(plan, rowIdx, func(uint64) bool { return false }) {
		return nil, nil, false
	}
	// rowCol maps a column of the source under the window to the row side.
	rowCol := func(c int) int {
		if srcIdx == rowIdx {
			return c
		}
		for k, rc := range rows.Cols {
			if rc.Name == src.Cols[c].Name {
				return k
			}
		}
		return -1
	}
	if a.Arg < 0 || a.Arg >= len(src.Cols) { // MAX(window_end) and the like
		return nil, nil, false
	}
	switch src.Cols[a.Arg].Type.Fam {
	case types.Int2, types.Int4, types.Int8:
	default:
		return nil, nil, false
	}
	// aggOut maps a column of the maximum's side to the maximum (0),
	// window_start (1) or window_end (2); -1: none of them.
	aggOut := func(c int) int {
		c = proj(c)
		if c == len(agg.GroupBy) {
			return 0
		}
		if c < len(agg.GroupBy) {
			return agg.GroupBy[c] - ws + 1
		}
		return -1
	}
	keys := [2][]int{j.LeftKeys, j.RightKeys}
	val := rowCol(a.Arg)
	if aggOut(keys[side][0]) != 0 || val < 0 || keys[1-side][0] != val {
		return nil, nil, false
	}
	bounds, all := spec.IntervalBounds(j.Cond, lw)
	if !all || len(bounds) != 1 {
		return nil, nil, false
	}
	b := bounds[0]
	if b.Lo == math.MinInt64 || b.Hi == math.MaxInt64 {
		return nil, nil, false
	}
	rt, wc, lo, hi := b.L, b.R, b.Lo, b.Hi // row time - window column in [lo, hi]
	if side == 0 {
		rt, wc, lo, hi = b.R, b.L, -b.Hi, -b.Lo
	}
	size := tw.TimeWin.Size
	switch aggOut(wc) {
	case 1: // against window_start = window_end - size
		lo, hi = lo-size, hi-size
	case 2:
	default:
		return nil, nil, false
	}
	if rt != rowCol(tw.TimeWin.Col) || rt < 0 || lo < -size || hi > 0 || lo > hi {
		return nil, nil, false
	}
	// The join's output columns, over the row's and the three more.
	inCols := len(rows.Cols)
	out := j.JoinOut
	if out == nil {
		out = make([]int, len(j.Cols))
		for i := range out {
			out[i] = i
		}
	}
	offs := [2]int{0, lw}
	w := &spec.WinMaxSpec{Time: rt, Val: val, Size: size, Offset: tw.TimeWin.Offset, Lo: lo, Hi: hi, Out: make([]int, len(out))}
	for i, c := range out {
		if (c >= lw) == (side == 1) { // the maximum's side
			k := aggOut(c - offs[side])
			if k < 0 {
				return nil, nil, false
			}
			w.Out[i] = inCols + k
		} else {
			w.Out[i] = c - offs[1-side]
		}
	}
	return &spec.Node{Kind: spec.WindowMaxJoin, Inputs: []int{rowIdx}, Cols: j.Cols, WinMax: w}, chain, true
}

// sameSourceRead reports whether a and b read the same source in the same
// way (watermark and options), whatever columns each keeps, and b has all
// of a's.
func sameSourceRead(a, b *spec.Node) bool {
	if a.Kind != spec.SourceRead || b.Kind != spec.SourceRead || a.Source == nil || b.Source == nil {
		return false
	}
	x, y := a.Source, b.Source
	if x.SourceID != y.SourceID || x.Name != y.Name || x.Connector != y.Connector || !reflect.DeepEqual(x.Options, y.Options) ||
		(x.Watermark == nil) != (y.Watermark == nil) {
		return false
	}
	name := func(cols []types.Column, c int) string { return cols[c].Name }
	if x.Watermark != nil && (x.Watermark.Delay != y.Watermark.Delay ||
		name(x.Columns, x.Watermark.Col) != name(y.Columns, y.Watermark.Col)) {
		return false
	}
	for _, c := range x.Columns {
		found := false
		for _, d := range y.Columns {
			if c.Name == d.Name && c.Type == d.Type {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
