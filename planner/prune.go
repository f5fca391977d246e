package planner

import (
	"slices"

	"sluice/exec/spec"
)

// Column pruning at sources: a source read by a chain of filters ending
// in a projection produces only the columns the chain uses, so the
// connector neither decodes nor generates the others (Nexmark q0–q2 read
// four of the bid's seven columns). Only connectors that read declared
// columns by name take part.
var prunable = map[string]bool{"nexmark": true, "kafka": true}

func pruneSources(plan *spec.Plan) {
	consumers := make([]int, len(plan.Nodes))
	for _, n := range plan.Nodes {
		for _, in := range n.Inputs {
			consumers[in]++
		}
	}
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
			if m.Kind == spec.Filter && consumers[next] == 1 {
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
		f := func(i int) int { return remap[i] }
		src := *n.Source
		src.Columns = cols
		if w := src.Watermark; w != nil {
			w2 := *w
			w2.Col = remap[w.Col]
			src.Watermark = &w2
		}
		n.Source = &src
		n.Cols = cols
		for _, m := range chain {
			if m.Pred != nil {
				m.Pred, _ = spec.MapCols(m.Pred, f)
			}
			for k, e := range m.Exprs {
				m.Exprs[k], _ = spec.MapCols(e, f)
			}
			if m.Kind == spec.Filter {
				m.Cols = cols
			}
		}
	}
}
