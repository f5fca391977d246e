package planner

import (
	"fmt"
	"reflect"

	"sluice/exec/spec"
)

// shareCommon computes common parts of a plan once: a node of the same
// kind and parameters as an earlier one, over the same inputs, is dropped
// and its consumers read the earlier node's output (a fan-out). A source
// read twice (a self-join) is read once, and a subquery that appears twice
// (Nexmark q5 counts bids per auction and window on both sides of its
// join) is computed once. Flink's planner reuses sub-plans in the same way.
// Column names do not take part: they only label the output.
//
// It runs last, after column pruning, so the plan's node order (the
// operators' state ids) is a pure function of the query.
func shareCommon(plan *spec.Plan) {
	n := len(plan.Nodes)
	canon := make([]int, n) // node -> the node that computes it
	byShape := map[string][]int{}
	for i, nd := range plan.Nodes {
		canon[i] = i
		if nd == nil { // folded away
			continue
		}
		for k, in := range nd.Inputs {
			nd.Inputs[k] = canon[in]
		}
		if nd.Kind == spec.Materialize || nd.Kind == spec.Sink {
			continue
		}
		shape := fmt.Sprint(nd.Kind, nd.Inputs)
		for _, j := range byShape[shape] {
			if sameNode(plan.Nodes[j], nd) {
				canon[i] = j
				break
			}
		}
		if canon[i] == i {
			byShape[shape] = append(byShape[shape], i)
		}
	}
	// Drop the merged nodes, keeping the order (inputs before consumers).
	pos := make([]int, n)
	kept := plan.Nodes[:0]
	for i, nd := range plan.Nodes {
		if canon[i] != i || nd == nil {
			continue
		}
		pos[i] = len(kept)
		for k, in := range nd.Inputs {
			nd.Inputs[k] = pos[in]
		}
		kept = append(kept, nd)
	}
	clear(plan.Nodes[len(kept):])
	plan.Nodes = kept
}

// sameNode reports whether a and b (over the same inputs) compute the same
// rows: everything but their column names is equal.
func sameNode(a, b *spec.Node) bool {
	if len(a.Cols) != len(b.Cols) {
		return false
	}
	for i := range a.Cols {
		if a.Cols[i].Type != b.Cols[i].Type {
			return false
		}
	}
	x, y := *a, *b
	x.Cols, y.Cols = nil, nil
	x.RelName, y.RelName = "", ""
	return reflect.DeepEqual(&x, &y)
}

// foldProjects removes projections that only pick columns, where their one
// consumer can take the columns itself: a projection of columns over
// another projection is the two composed, and an aggregation reads its
// group and argument columns from the projection's input (the rows of a
// HOP window are not copied once more to feed Nexmark q5's counts). The
// mirror case: a projection of columns over a join read by it alone is
// folded into the join, which builds its rows in the projected order
// (Nexmark q20 built each 17-column row to copy 16 of its columns). The
// folded nodes become nil; shareCommon drops them.
func foldProjects(plan *spec.Plan) {
	uses := plan.Uses()
	for i, nd := range plan.Nodes {
		if nd == nil || len(nd.Inputs) != 1 || (nd.Kind != spec.Project && nd.Kind != spec.Agg) {
			continue
		}
		in := nd.Inputs[0]
		p := plan.Nodes[in]
		if nd.Kind == spec.Project && p.Kind == spec.Join && uses[in] == 1 {
			if foldIntoJoin(plan, i, in) {
				continue
			}
		}
		if p.Kind != spec.Project || uses[in] != 1 {
			continue
		}
		switch nd.Kind {
		case spec.Project:
			// nd's columns, read from p's input.
			exprs := make([]spec.Expr, len(nd.Exprs))
			for i, e := range nd.Exprs {
				r, ok := e.(*spec.ColRef)
				if !ok {
					exprs = nil
					break
				}
				exprs[i] = p.Exprs[r.Idx]
			}
			if exprs == nil {
				continue
			}
			nd.Exprs = exprs
		case spec.Agg:
			cols, ok := pickedCols(p.Exprs)
			if !ok {
				continue
			}
			// Fresh slices: planning may still hold the old ones.
			gb := make([]int, len(nd.GroupBy))
			for i, c := range nd.GroupBy {
				gb[i] = cols[c]
			}
			nd.GroupBy = gb
			nd.Aggs = append([]spec.AggCall(nil), nd.Aggs...)
			for i := range nd.Aggs {
				a := &nd.Aggs[i]
				if a.Arg >= 0 {
					a.Arg = cols[a.Arg]
				}
				if a.Filter >= 0 {
					a.Filter = cols[a.Filter]
				}
				if a.Extra != nil {
					extra := make([]int, len(a.Extra))
					for k, c := range a.Extra {
						extra[k] = cols[c]
					}
					a.Extra = extra
				}
			}
		}
		nd.Inputs[0] = p.Inputs[0]
		plan.Nodes[in] = nil
	}
}

// foldIntoJoin folds projection pi into its input, join ji, if the
// projection only picks columns: the join takes the projection's place
// (after its inputs, before the projection's consumers) and ji becomes nil.
func foldIntoJoin(plan *spec.Plan, pi, ji int) bool {
	p, j := plan.Nodes[pi], plan.Nodes[ji]
	cols, ok := pickedCols(p.Exprs)
	if !ok {
		return false
	}
	width := len(plan.Nodes[j.Inputs[0]].Cols) + len(plan.Nodes[j.Inputs[1]].Cols)
	identity := len(cols) == width
	for k, c := range cols {
		if j.JoinOut != nil {
			cols[k] = j.JoinOut[c]
		}
		identity = identity && cols[k] == k
	}
	nj := *j
	nj.JoinOut = cols
	if identity {
		nj.JoinOut = nil
	}
	nj.Cols = p.Cols
	plan.Nodes[pi] = &nj
	plan.Nodes[ji] = nil
	return true
}

// pickedCols returns the input columns of a projection made only of
// column references.
func pickedCols(exprs []spec.Expr) ([]int, bool) {
	cols := make([]int, len(exprs))
	for i, e := range exprs {
		r, ok := e.(*spec.ColRef)
		if !ok {
			return nil, false
		}
		cols[i] = r.Idx
	}
	return cols, true
}
