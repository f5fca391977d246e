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

// distinctOnCols binds the expressions of SELECT DISTINCT ON (…) as the
// ORDER BY items are bound (an output column by position or name, else an
// expression appended to exprs as a hidden column) and checks, as
// PostgreSQL does, that they match the leftmost ORDER BY items.
func (p *Planner) distinctOnCols(b *binder, sc *scope, h hook, on []ast.ExprNode, cols []types.Column, exprs []spec.Expr, order []spec.OrderItem) ([]spec.Expr, []int, error) {
	var onCols []int
	for _, e := range on {
		col := -1
		if v, ok := intLiteral(e); ok {
			if v < 1 || int(v) > len(cols) {
				return nil, nil, pgerror.New(pgcode.InvalidColumnReference, "SELECT DISTINCT ON position %d is not in select list", v)
			}
			col = int(v) - 1
		} else if pe, ok := e.(*ast.PositionExpr); ok && pe.P == nil {
			if pe.N < 1 || pe.N > len(cols) {
				return nil, nil, pgerror.New(pgcode.InvalidColumnReference, "SELECT DISTINCT ON position %d is not in select list", pe.N)
			}
			col = pe.N - 1
		} else if cn, ok := e.(*ast.ColumnNameExpr); ok && cn.Name.Table.O == "" {
			for i, c := range cols {
				if c.Name == cn.Name.Name.O {
					col = i
					break
				}
			}
		}
		if col < 0 {
			x, err := b.bind(e, sc, h)
			if err != nil {
				return nil, nil, err
			}
			for i, y := range exprs {
				if y.String() == x.String() {
					col = i
					break
				}
			}
			if col < 0 {
				exprs = append(exprs, x)
				col = len(exprs) - 1
			}
		}
		onCols = append(onCols, col)
	}
	// PostgreSQL's rule (transformDistinctOnClause): an ORDER BY item
	// that is a DISTINCT ON expression may not follow one that is not,
	// and when one is not, every DISTINCT ON expression must be in ORDER BY.
	same := func(a, b int) bool { return a == b || exprs[a].String() == exprs[b].String() }
	in := func(c int, set []int) bool {
		for _, x := range set {
			if same(c, x) {
				return true
			}
		}
		return false
	}
	skipped := false
	var ordered []int
	for _, o := range order {
		if !in(o.Col, onCols) {
			skipped = true
			continue
		}
		if skipped {
			return nil, nil, errDistinctOnOrder()
		}
		ordered = append(ordered, o.Col)
	}
	for _, c := range onCols {
		if skipped && !in(c, ordered) {
			return nil, nil, errDistinctOnOrder()
		}
	}
	return exprs, onCols, nil
}

func errDistinctOnOrder() error {
	return pgerror.New(pgcode.InvalidColumnReference, "SELECT DISTINCT ON expressions must match initial ORDER BY expressions")
}

// planDistinctOn keeps, of the rows of node in, the first of each
// distinct value of the columns on in the query's order: row_number()
// over PARTITION BY on ORDER BY order, kept at 1, then dropped.
func (p *Planner) planDistinctOn(in int, on []int, order []spec.OrderItem) int {
	cols := p.plan.Nodes[in].Cols
	node := &spec.Node{Kind: spec.Window, Inputs: []int{in}, PartitionBy: on, Order: order, Limit: 1,
		WinFuncs: []spec.WindowCall{{Func: "row_number", Arg: -1, Preceding: -1, T: types.TInt8}}}
	node.Cols = append(append([]types.Column(nil), cols...), types.Column{Name: "row_number", Type: types.TInt8})
	if p.Streaming {
		node.InputAppendOnly = p.AppendOnlyRel != nil && AppendOnly(p.plan, in, p.AppendOnlyRel)
	}
	key := p.keys[in]
	out := p.plan.Add(node)
	exprs := make([]spec.Expr, len(cols))
	for i, c := range cols {
		exprs[i] = &spec.ColRef{Idx: i, T: c.Type, Name: c.Name}
	}
	out = p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{out}, Exprs: exprs, Cols: cols})
	p.keys[out] = key
	return out
}
