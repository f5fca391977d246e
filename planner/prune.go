package planner

import (
	"slices"

	"sluice/exec/spec"
	"sluice/sql/types"
)

// Column pruning at sources: a source read by a chain of filters and time
// windows (TUMBLE, HOP) ending in a projection produces only the columns
// the chain uses, so the
// connector neither decodes nor generates the others (Nexmark q0–q2 read
// four of the bid's seven columns). Only connectors that read declared
// columns by name take part.
var prunable = map[string]bool{"nexmark": true, "kafka": true}

func pruneSources(plan *spec.Plan) {
	consumers := plan.Uses()
	for i, n := range plan.Nodes {
		if n.Kind != spec.SourceRead || n.Source == nil || !prunable[n.Source.Connector] || consumers[i] != 1 {
			continue
		}
		// Follow the single-consumer chain of Filters to a Project.
		var chain []*spec.Node
		cur := i
		for {
			next := -1
			for j, m := range plan.Nodes {
				if len(m.Inputs) == 1 && m.Inputs[0] == cur {
					next = j
				}
			}
			if next < 0 {
				break
			}
			m := plan.Nodes[next]
			if (m.Kind == spec.Filter || m.Kind == spec.TimeWindow) && consumers[next] == 1 {
				chain = append(chain, m)
				cur = next
				continue
			}
			if m.Kind == spec.Project {
				chain = append(chain, m)
			}
			break
		}
		if len(chain) == 0 || chain[len(chain)-1].Kind != spec.Project {
			continue
		}
		width := len(n.Cols)
		used := make([]bool, width)
		if w := n.Source.Watermark; w != nil {
			used[w.Col] = true
		}
		mark := func(e spec.Expr) {
			spec.Walk(e, func(x spec.Expr) bool {
				if c, ok := x.(*spec.ColRef); ok && c.Idx < width {
					used[c.Idx] = true
				}
				return true
			})
		}
		ok := true
		for _, m := range chain {
			if m.Kind == spec.TimeWindow {
				used[m.TimeWin.Col] = true
			}
			for _, e := range append([]spec.Expr{m.Pred}, m.Exprs...) {
				if e == nil {
					continue
				}
				if _, mapped := spec.MapCols(e, func(i int) int { return i }); !mapped {
					ok = false
				}
				mark(e)
			}
		}
		if !ok || !slices.Contains(used, false) {
			continue
		}
		if !slices.Contains(used, true) {
			used[0] = true // count(*): a source still reads one column
		}
		remap := make([]int, width)
		var cols = n.Cols[:0:0]
		for c := 0; c < width; c++ {
			if used[c] {
				remap[c] = len(cols)
				cols = append(cols, n.Cols[c])
			}
		}
		// Columns past the source's are those time windows append.
		f := func(i int) int {
			if i >= width {
				return len(cols) + i - width
			}
			return remap[i]
		}
		narrowSource(n, remap, cols)
		chainCols := cols
		for _, m := range chain {
			mapExprs(m, f)
			switch m.Kind {
			case spec.Filter:
				m.Cols = chainCols
			case spec.TimeWindow:
				tw := *m.TimeWin
				tw.Col = remap[tw.Col]
				m.TimeWin = &tw
				chainCols = append(append([]types.Column(nil), cols...), m.Cols[width:]...)
				m.Cols = chainCols
			}
		}
	}
}

// pruneJoinSources prunes the sources that feed a join (through filters)
// when the join's result is read by a chain of filters ending in a
// projection: each source produces only the columns the join's keys and
// condition, the filters and the projection use, so the join keeps and
// combines narrower rows (Nexmark q4 joins 4 of the auction's 10 columns
// with 3 of the bid's 7).
func pruneJoinSources(plan *spec.Plan) {
	consumers := make([][]int, len(plan.Nodes))
	for i, n := range plan.Nodes {
		for _, in := range n.Inputs {
			consumers[in] = append(consumers[in], i)
		}
	}
	mappable := func(e spec.Expr) bool {
		_, ok := spec.MapCols(e, func(i int) int { return i })
		return ok
	}
	for ji, j := range plan.Nodes {
		if j.Kind != spec.Join || j.JoinKind == spec.SemiJoin || j.JoinKind == spec.AntiJoin || len(consumers[ji]) != 1 || (j.Cond != nil && !mappable(j.Cond)) {
			continue
		}
		// Above: filters and window functions (which pass their input's
		// columns through), then a projection.
		var above []*spec.Node
		for cur := ji; len(consumers[cur]) == 1; {
			m := plan.Nodes[consumers[cur][0]]
			above = append(above, m)
			if m.Kind != spec.Filter && m.Kind != spec.Window {
				break
			}
			cur = consumers[cur][0]
		}
		if len(above) == 0 || above[len(above)-1].Kind != spec.Project {
			continue
		}
		widths := [2]int{len(plan.Nodes[j.Inputs[0]].Cols), len(plan.Nodes[j.Inputs[1]].Cols)}
		used := make([]bool, widths[0]+widths[1])
		markCols := func(e spec.Expr, off int) bool {
			if e == nil {
				return true
			}
			spec.Walk(e, func(x spec.Expr) bool {
				if c, ok := x.(*spec.ColRef); ok && off+c.Idx < len(used) {
					used[off+c.Idx] = true
				}
				return true
			})
			return mappable(e)
		}
		ok := markCols(j.Cond, 0)
		for _, k := range j.LeftKeys {
			used[k] = true
		}
		for _, k := range j.RightKeys {
			used[widths[0]+k] = true
		}
		for _, m := range above {
			ok = ok && markCols(m.Pred, 0)
			for _, e := range m.Exprs {
				ok = ok && markCols(e, 0)
			}
			if m.Kind == spec.Window {
				mark := func(c int) {
					if c >= 0 && c < len(used) {
						used[c] = true
					}
				}
				for _, c := range m.PartitionBy {
					mark(c)
				}
				for _, o := range m.Order {
					mark(o.Col)
				}
				for _, f := range m.WinFuncs {
					for _, c := range f.InputCols() {
						mark(c)
					}
				}
			}
		}
		if !ok {
			continue
		}
		// Below each side: filters down to a prunable source read only
		// by them.
		var remap [2][]int
		var newCols [2][]types.Column
		type sidePlan struct {
			src    *spec.Node
			chain  []*spec.Node
			remap  []int
			cols   []types.Column
			pruned bool
		}
		var sides [2]sidePlan
		for s := 0; s < 2; s++ {
			off := 0
			if s == 1 {
				off = widths[0]
			}
			sp := &sides[s]
			cur := j.Inputs[s]
			var chain []*spec.Node
			for plan.Nodes[cur].Kind == spec.Filter && len(consumers[cur]) == 1 {
				chain = append(chain, plan.Nodes[cur])
				cur = plan.Nodes[cur].Inputs[0]
			}
			src := plan.Nodes[cur]
			sideUsed := append([]bool(nil), used[off:off+widths[s]]...)
			good := src.Kind == spec.SourceRead && src.Source != nil && prunable[src.Source.Connector] && len(consumers[cur]) == 1
			for _, f := range chain {
				good = good && markColsInto(sideUsed, f.Pred) && mappable(f.Pred)
			}
			if good {
				if w := src.Source.Watermark; w != nil {
					sideUsed[w.Col] = true
				}
			}
			if !good || !slices.Contains(sideUsed, false) {
				// Unchanged side.
				sp.remap = make([]int, widths[s])
				for c := range sp.remap {
					sp.remap[c] = c
				}
				sp.cols = plan.Nodes[j.Inputs[s]].Cols
				continue
			}
			if !slices.Contains(sideUsed, true) {
				sideUsed[0] = true
			}
			sp.src, sp.chain, sp.pruned = src, chain, true
			sp.remap = make([]int, widths[s])
			for c := 0; c < widths[s]; c++ {
				if sideUsed[c] {
					sp.remap[c] = len(sp.cols)
					sp.cols = append(sp.cols, src.Cols[c])
				}
			}
		}
		if !sides[0].pruned && !sides[1].pruned {
			continue
		}
		for s := 0; s < 2; s++ {
			sp := sides[s]
			remap[s], newCols[s] = sp.remap, sp.cols
			if !sp.pruned {
				continue
			}
			narrowSource(sp.src, sp.remap, sp.cols)
			for _, m := range sp.chain {
				mapExprs(m, func(i int) int { return sp.remap[i] })
				m.Cols = sp.cols
			}
		}
		nl := len(newCols[0])
		total, newTotal := widths[0]+widths[1], nl+len(newCols[1])
		out := func(i int) int {
			switch {
			case i < widths[0]:
				return remap[0][i]
			case i < total:
				return nl + remap[1][i-widths[0]]
			}
			return newTotal + i - total // a window function's column
		}
		for k, c := range j.LeftKeys {
			j.LeftKeys[k] = remap[0][c]
		}
		for k, c := range j.RightKeys {
			j.RightKeys[k] = remap[1][c]
		}
		if j.Cond != nil {
			j.Cond, _ = spec.MapCols(j.Cond, out)
		}
		j.Cols = append(append([]types.Column(nil), newCols[0]...), newCols[1]...)
		chainCols := j.Cols
		for _, m := range above {
			mapExprs(m, out)
			switch m.Kind {
			case spec.Filter:
				m.Cols = chainCols
			case spec.Window:
				for k, c := range m.PartitionBy {
					m.PartitionBy[k] = out(c)
				}
				for k := range m.Order {
					m.Order[k].Col = out(m.Order[k].Col)
				}
				for k := range m.WinFuncs {
					m.WinFuncs[k].MapCols(out)
				}
				chainCols = append(append([]types.Column(nil), j.Cols...), m.Cols[total:]...)
				m.Cols = chainCols
			}
		}
	}
}

// markColsInto marks the columns e reads.
func markColsInto(used []bool, e spec.Expr) bool {
	if e == nil {
		return true
	}
	spec.Walk(e, func(x spec.Expr) bool {
		if c, ok := x.(*spec.ColRef); ok && c.Idx < len(used) {
			used[c.Idx] = true
		}
		return true
	})
	return true
}

// narrowSource makes source read n produce only cols, the columns its old
// column c becomes remap[c] of.
func narrowSource(n *spec.Node, remap []int, cols []types.Column) {
	src := *n.Source
	src.Columns = cols
	if w := src.Watermark; w != nil {
		w2 := *w
		w2.Col = remap[w.Col]
		src.Watermark = &w2
	}
	n.Source = &src
	n.Cols = cols
}

// mapExprs renumbers the columns node m's predicate and expressions read
// (the caller checked they can be).
func mapExprs(m *spec.Node, f func(int) int) {
	if m.Pred != nil {
		m.Pred, _ = spec.MapCols(m.Pred, f)
	}
	for k, e := range m.Exprs {
		m.Exprs[k], _ = spec.MapCols(e, f)
	}
}
