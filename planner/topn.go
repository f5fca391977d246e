package planner

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Top-N: ORDER BY … LIMIT n OFFSET m of a materialized view (or of a
// subquery in one) is planned as the Window operator computing
// row_number() over the ORDER BY, with no partition, keeping the rows
// numbered up to m+n (the Window node's Limit), then a filter rn > m and a
// projection that drops rn. The Window operator maintains the numbering
// under inserts and deletes, so a row that leaves the top lets the next
// one in; a row keeps its number's tie-break by the whole row, so the
// choice among peers at the boundary is deterministic. FETCH FIRST n ROWS
// WITH TIES numbers with rank() as well: a row is kept when its
// row_number is past the offset and its rank is at most m+n (the n rows
// after the offset and the peers of the last of them), which batch
// queries use too. The rows of a view are unordered: a SELECT on it
// orders them only with an ORDER BY of its own.

// planTopN applies q's Limit and Offset over the plan's root when the
// query is streaming or WITH TIES, and clears them from q (q.Order stays:
// a batch query still sorts its output by it).
func (p *Planner) planTopN(q *Query) {
	if !p.Streaming && !q.ties {
		return // batch: the TopN operator or the result's shape cuts
	}
	if q.Limit < 0 && q.Offset == 0 {
		return
	}
	in := p.plan.Root()
	cols := p.plan.Nodes[in].Cols
	node := &spec.Node{Kind: spec.Window, Inputs: []int{in}, Order: q.Order, Limit: -1}
	if q.Limit >= 0 {
		node.Limit = q.Offset + q.Limit
	}
	if q.ties {
		node.WinFuncs = append(node.WinFuncs, spec.WindowCall{Func: "rank", Arg: -1, Preceding: -1, T: types.TInt8})
	}
	node.WinFuncs = append(node.WinFuncs, spec.WindowCall{Func: "row_number", Arg: -1, Preceding: -1, T: types.TInt8})
	node.Cols = append([]types.Column(nil), cols...)
	for _, f := range node.WinFuncs {
		node.Cols = append(node.Cols, types.Column{Name: f.Func, Type: types.TInt8})
	}
	if p.Streaming {
		node.InputAppendOnly = p.AppendOnlyRel != nil && AppendOnly(p.plan, in, p.AppendOnlyRel)
	}
	key := p.keys[in]
	out := p.plan.Add(node)
	if q.Offset > 0 {
		rn := &spec.ColRef{Idx: len(node.Cols) - 1, T: types.TInt8, Name: "row_number"}
		pred := &spec.Func{Name: ">", Args: []spec.Expr{rn, &spec.Const{D: types.NewInt(q.Offset), T: types.TInt8}}, T: types.TBool}
		out = p.plan.Add(&spec.Node{Kind: spec.Filter, Inputs: []int{out}, Pred: pred, Cols: node.Cols})
	}
	exprs := make([]spec.Expr, len(cols))
	for i, c := range cols {
		exprs[i] = &spec.ColRef{Idx: i, T: c.Type, Name: c.Name}
	}
	out = p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{out}, Exprs: exprs, Cols: cols})
	p.keys[out] = key
	q.Limit, q.Offset, q.ties = -1, 0, false
}

// groupByOutputs returns gb with its items that name select-list items
// replaced by those items' expressions, as PostgreSQL reads GROUP BY: a
// position (GROUP BY 2), or an output alias that is not also a column of
// the input (an input column wins, unlike in ORDER BY).
func groupByOutputs(gb *ast.GroupByClause, sc *scope, exprs []ast.ExprNode, names []string) (*ast.GroupByClause, error) {
	var out *ast.GroupByClause
	for i, it := range gb.Items {
		var x ast.ExprNode
		switch e := it.Expr.(type) {
		case *ast.PositionExpr:
			if e.P != nil {
				continue
			}
			if e.N < 1 || e.N > len(exprs) {
				return nil, pgerror.New(pgcode.InvalidColumnReference, "GROUP BY position %d is not in select list", e.N)
			}
			x = exprs[e.N-1]
		case *ast.ColumnNameExpr:
			if e.Name.Table.O != "" || e.Name.Schema.O != "" {
				continue
			}
			if _, err := sc.resolve("", e.Name.Name.O); err == nil {
				continue
			}
			for j, n := range names {
				if n == e.Name.Name.O && exprs[j] != nil {
					if x != nil {
						return nil, pgerror.New(pgcode.AmbiguousColumn, "GROUP BY %q is ambiguous", n)
					}
					x = exprs[j]
				}
			}
		}
		if x == nil {
			continue
		}
		if out == nil {
			c := *gb
			c.Items = append([]*ast.ByItem(nil), gb.Items...)
			out = &c
		}
		item := *it
		item.Expr = x
		out.Items[i] = &item
	}
	if out == nil {
		return gb, nil
	}
	return out, nil
}

// shallowWithGroupBy returns s with GROUP BY gb, without changing s (a
// view's statement may be planned again).
func shallowWithGroupBy(s *ast.SelectStmt, gb *ast.GroupByClause) *ast.SelectStmt {
	if gb == s.GroupBy {
		return s
	}
	c := *s
	c.GroupBy = gb
	return &c
}
