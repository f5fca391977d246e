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
func (p *Planner) planTopN(q *Query) { p.planTopNPartitioned(q, nil) }

// planTopNPartitioned is planTopN per partition of the columns part.
func (p *Planner) planTopNPartitioned(q *Query, part []int) {
	if !p.Streaming && !q.ties {
		return // batch: the TopN operator or the result's shape cuts
	}
	if q.Limit < 0 && q.Offset == 0 {
		return
	}
	in := p.plan.Root()
	cols := p.plan.Nodes[in].Cols
	node := &spec.Node{Kind: spec.Window, Inputs: []int{in}, PartitionBy: part, Order: q.Order, Limit: -1}
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

// withoutLimit returns sel without its LIMIT (a shallow copy when it has
// one).
func withoutLimit(sel *ast.SelectStmt) *ast.SelectStmt {
	if sel.Limit == nil {
		return sel
	}
	c := *sel
	c.Limit, c.OrderBy = nil, nil
	return &c
}

// correlatedTopN applies the ORDER BY … LIMIT of an [NOT] EXISTS or IN
// subquery correlated by equalities to its decorrelated relation rel: the
// subquery runs once per value of the outer columns, which select the
// rows whose inner correlation columns equal them, so its LIMIT is a
// Top-N partitioned by those inner columns (row_number() per partition,
// as planTopN), applied before the semi join.
func (p *Planner) correlatedTopN(sel *ast.SelectStmt, rel *corrRel) error {
	if len(rel.residual) > 0 {
		return errSubquery("a subquery with LIMIT correlated by conditions other than equalities")
	}
	b := &binder{p: p}
	base := p.plan.Nodes[rel.idx].Cols
	exprs := make([]spec.Expr, len(base))
	for i, c := range base {
		exprs[i] = &spec.ColRef{Idx: i, T: c.Type, Name: c.Name}
	}
	colOf := func(x spec.Expr) int {
		if r, ok := x.(*spec.ColRef); ok {
			return r.Idx
		}
		for i, y := range exprs {
			if y.String() == x.String() {
				return i
			}
		}
		exprs = append(exprs, x)
		return len(exprs) - 1
	}
	var part []int
	for _, pr := range rel.pairs {
		part = append(part, colOf(pr.inner))
	}
	q := &Query{Limit: -1}
	if sel.OrderBy != nil {
		for _, o := range sel.OrderBy.Items {
			e := o.Expr
			if n, ok := intLiteral(e); ok && sel.Fields != nil && n >= 1 && int(n) <= len(sel.Fields.Fields) && sel.Fields.Fields[n-1].WildCard == nil {
				e = sel.Fields.Fields[n-1].Expr
			} else if pe, ok := e.(*ast.PositionExpr); ok && pe.P == nil && sel.Fields != nil && pe.N >= 1 && pe.N <= len(sel.Fields.Fields) && sel.Fields.Fields[pe.N-1].WildCard == nil {
				e = sel.Fields.Fields[pe.N-1].Expr
			} else if cn, ok := e.(*ast.ColumnNameExpr); ok && cn.Name.Table.O == "" && sel.Fields != nil {
				for _, f := range sel.Fields.Fields {
					if f.AsName.O == cn.Name.Name.O && f.Expr != nil {
						e = f.Expr
						break
					}
				}
			}
			x, err := b.bind(e, rel.sc, nil)
			if err != nil {
				return err
			}
			q.Order = append(q.Order, p.orderItem(colOf(x), o))
		}
	}
	if err := p.limit(sel.Limit, q); err != nil {
		return err
	}
	in := rel.idx
	if len(exprs) > len(base) {
		cols := append([]types.Column(nil), base...)
		for _, x := range exprs[len(base):] {
			cols = append(cols, types.Column{Name: "?order?", Type: x.Type()})
		}
		in = p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{in}, Exprs: exprs, Cols: cols})
	}
	streaming := p.Streaming
	p.Streaming = true // planTopN works over the root: in is the last node
	if in != p.plan.Root() {
		cols := p.plan.Nodes[in].Cols
		ids := make([]spec.Expr, len(cols))
		for i, c := range cols {
			ids[i] = &spec.ColRef{Idx: i, T: c.Type, Name: c.Name}
		}
		in = p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{in}, Exprs: ids, Cols: cols})
	}
	p.planTopNPartitioned(q, part)
	p.Streaming = streaming
	out := p.plan.Root()
	if len(exprs) > len(base) {
		ids := make([]spec.Expr, len(base))
		for i, c := range base {
			ids[i] = &spec.ColRef{Idx: i, T: c.Type, Name: c.Name}
		}
		out = p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{out}, Exprs: ids, Cols: base})
	}
	rel.idx = out
	return nil
}
