package planner

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"sluice/exec/eval"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file decorrelates the subqueries of a materialized view: a dataflow
// has no per-row plans (subquery.go), so each subquery becomes operators
// that maintain themselves as either side changes:
//
//	WHERE [NOT] EXISTS (SELECT … WHERE s.k = o.k AND …)  → semi (anti) join on k
//	WHERE x [NOT] IN (SELECT e …)                          → semi (anti) join on x = e;
//	      NOT IN adds two anti joins for PostgreSQL's NULLs: a NULL e
//	      rejects every row, a NULL x every row with a non-empty set
//	(SELECT agg(…) FROM … WHERE s.k = o.k)  (WHERE, HAVING, select list)
//	      → HashAgg grouped by k, LEFT JOIN on k; uncorrelated: a global
//	      HashAgg (always one row) LEFT JOINed on no key
//
// Correlation is found by binding the subquery's WHERE conjuncts with the
// enclosing scope as an outer level (spec.OuterRef): equalities between
// an inner and an outer expression become join keys, other correlated
// conditions the join's residual condition (semi and anti joins only).
// What cannot be maintained this way is refused with 0A000 at CREATE.

// corrPair is an equality between an expression over the enclosing query
// (outer) and one over the subquery's FROM (inner).
type corrPair struct {
	outer, inner spec.Expr
}

// corrRel is a subquery's relation after decorrelation: node idx with
// scope sc, its correlation keys, its other correlated conditions (over
// the enclosing columns followed by sc's) and its bound select list.
type corrRel struct {
	idx      int
	sc       *scope
	pairs    []corrPair
	residual []spec.Expr
	fields   []spec.Expr
}

// errSubquery refuses a subquery form a view cannot maintain.
func errSubquery(what string) error {
	return pgerror.Unsupported("%s in a materialized view", what).
		WithHint("Correlate subqueries through equalities in their WHERE clause; use EXISTS, IN or a scalar aggregate subquery, or rewrite as a join.")
}

// splitAnd flattens the AND conjuncts of e.
func splitAnd(e ast.ExprNode) []ast.ExprNode {
	switch x := e.(type) {
	case *ast.BinaryOperationExpr:
		if x.Op == opcode.LogicAnd {
			return append(splitAnd(x.L), splitAnd(x.R)...)
		}
	case *ast.ParenthesesExpr:
		if _, ok := x.Expr.(*ast.BinaryOperationExpr); ok {
			if inner := splitAnd(x.Expr); len(inner) > 1 {
				return inner
			}
		}
	}
	return []ast.ExprNode{e}
}

// joinAnd rebuilds an AND of conjuncts (nil for none).
func joinAnd(es []ast.ExprNode) ast.ExprNode {
	var out ast.ExprNode
	for _, e := range es {
		if out == nil {
			out = e
		} else {
			out = &ast.BinaryOperationExpr{Op: opcode.LogicAnd, L: out, R: e}
		}
	}
	return out
}

// subqueryFinder collects the subqueries of an expression, not descending
// into them.
type subqueryFinder struct {
	scalars []*ast.SubqueryExpr
	other   bool // EXISTS, IN (SELECT …), op ANY/ALL
}

func (f *subqueryFinder) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.SubqueryExpr:
		f.scalars = append(f.scalars, x)
		return n, true
	case *ast.ExistsSubqueryExpr, *ast.CompareSubqueryExpr:
		f.other = true
		return n, true
	case *ast.PatternInExpr:
		if x.Sel != nil {
			f.other = true
			return n, true
		}
	}
	return n, false
}

func (f *subqueryFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

func findSubqueries(e ast.Node) *subqueryFinder {
	f := &subqueryFinder{}
	if e != nil {
		e.Accept(f)
	}
	return f
}

// splitSubqueryConds separates the conjuncts of where that hold subqueries.
func splitSubqueryConds(where ast.ExprNode) (rest ast.ExprNode, subs []ast.ExprNode) {
	var plain []ast.ExprNode
	for _, c := range splitAnd(where) {
		f := findSubqueries(c)
		if len(f.scalars) > 0 || f.other {
			subs = append(subs, c)
		} else {
			plain = append(plain, c)
		}
	}
	return joinAnd(plain), subs
}

// applySubqueryConds filters node in (scope sc) by conditions that hold
// subqueries; h is the aggregation hook of a HAVING clause (or nil). The
// result has in's columns and key.
func (p *Planner) applySubqueryConds(in int, sc *scope, conds []ast.ExprNode, h hook) (int, error) {
	key := p.keys[in]
	for _, c := range conds {
		e, neg := c, false
		for {
			if pe, ok := e.(*ast.ParenthesesExpr); ok {
				e = pe.Expr
				continue
			}
			if u, ok := e.(*ast.UnaryOperationExpr); ok && u.Op == opcode.Not {
				e, neg = u.V, !neg
				continue
			}
			break
		}
		var err error
		switch n := e.(type) {
		case *ast.ExistsSubqueryExpr:
			sq, ok := subqueryOf(n.Sel)
			if !ok {
				return 0, errSubquery("EXISTS over an expression")
			}
			in, err = p.semiJoin(in, sc, sq.Query, nil, n.Not != neg)
		case *ast.PatternInExpr:
			if n.Sel == nil {
				in, err = p.scalarCond(in, sc, c, h)
				break
			}
			sq, ok := subqueryOf(n.Sel)
			if !ok {
				return 0, errSubquery("IN over an expression")
			}
			if findSubqueries(n.Expr).other || len(findSubqueries(n.Expr).scalars) > 0 {
				return 0, errSubquery("a subquery on the left of IN")
			}
			in, err = p.semiJoin(in, sc, sq.Query, n.Expr, n.Not != neg)
		default:
			in, err = p.scalarCond(in, sc, c, h)
		}
		if err != nil {
			return 0, err
		}
		p.keys[in] = key
	}
	return in, nil
}

// scalarCond filters in by c, a condition whose subqueries are scalar
// subqueries: each is joined on as a column, c is evaluated over them,
// and the columns are projected away.
func (p *Planner) scalarCond(in int, sc *scope, c ast.ExprNode, h hook) (int, error) {
	f := findSubqueries(c)
	if f.other {
		return 0, errSubquery("EXISTS, IN or ANY/ALL (subquery) under OR, NOT or another expression")
	}
	top, ext, err := p.joinScalars(in, sc, f.scalars)
	if err != nil {
		return 0, err
	}
	defer p.forgetScalars(f.scalars)
	b := &binder{p: p}
	pred, err := b.bind(c, ext, h)
	if err != nil {
		return 0, err
	}
	if pred, err = b.castTo(pred, types.TBool); err != nil {
		return 0, err
	}
	flt := p.plan.Add(&spec.Node{Kind: spec.Filter, Inputs: []int{top}, Pred: pred, Cols: ext.columns()})
	return p.projectPrefix(flt, sc), nil
}

// projectPrefix projects node in onto the columns of sc, a prefix of its own.
func (p *Planner) projectPrefix(in int, sc *scope) int {
	exprs := make([]spec.Expr, len(sc.cols))
	for i, c := range sc.cols {
		exprs[i] = &spec.ColRef{Idx: i, T: c.t, Name: c.name}
	}
	return p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{in}, Exprs: exprs, Cols: sc.columns()})
}

// joinScalars joins each scalar subquery onto in as a new column and
// records it in p.subCols, where the binder finds it; forgetScalars
// removes them once the expression holding them is bound.
func (p *Planner) joinScalars(in int, sc *scope, sqs []*ast.SubqueryExpr) (int, *scope, error) {
	ext := &scope{cols: append([]scopeCol{}, sc.cols...)}
	for _, sq := range sqs {
		var err error
		var col spec.Expr
		if in, col, err = p.joinScalar(in, ext, sq); err != nil {
			return 0, nil, err
		}
		ext.cols = append(ext.cols, scopeCol{name: "?column?", t: col.Type()})
		if p.subCols == nil {
			p.subCols = map[*ast.SubqueryExpr]spec.Expr{}
		}
		p.subCols[sq] = col
	}
	return in, ext, nil
}

func (p *Planner) forgetScalars(sqs []*ast.SubqueryExpr) {
	for _, sq := range sqs {
		delete(p.subCols, sq)
	}
}

// joinScalar LEFT JOINs the value of scalar subquery sq onto node in
// (scope sc) as a last column, returned as a reference.
func (p *Planner) joinScalar(in int, sc *scope, sq *ast.SubqueryExpr) (int, spec.Expr, error) {
	sel, ok := sq.Query.(*ast.SelectStmt)
	if !ok || !isSimpleSelect(sel) || sel.Fields == nil || len(sel.Fields.Fields) != 1 || sel.Fields.Fields[0].WildCard != nil {
		return 0, nil, errSubquery("a scalar subquery other than one aggregate without GROUP BY (which may return more than one row)")
	}
	var aggs []*ast.AggregateFuncExpr
	var filters []ast.ExprNode
	field := sel.Fields.Fields[0].Expr
	field.Accept(&aggCollector{aggs: &aggs, filters: &filters})
	if len(aggs) == 0 {
		return 0, nil, errSubquery("a scalar subquery without an aggregate (which may return more than one row)")
	}
	rel, err := p.planCorrelated(sel, sc, false)
	if err != nil {
		return 0, nil, err
	}
	if len(rel.residual) > 0 {
		return 0, nil, errSubquery("a scalar subquery correlated by a condition other than equality")
	}
	if len(rel.pairs) > 0 {
		for _, a := range aggs {
			if f := lower(a.F); f == "count" {
				// An outer row without a group would read NULL, not 0.
				return 0, nil, errSubquery("count() in a correlated scalar subquery")
			}
		}
	}
	b := &binder{p: p}
	// The correlation keys become the aggregation's groups, in the
	// outer expression's type.
	var gb *ast.GroupByClause
	inner := make([]spec.Expr, len(rel.pairs))
	outer := make([]spec.Expr, len(rel.pairs))
	for i, pr := range rel.pairs {
		o, in2, err := b.unifyEq(pr.outer, pr.inner)
		if err != nil {
			return 0, nil, err
		}
		outer[i], inner[i] = o, in2
		if gb == nil {
			gb = &ast.GroupByClause{}
		}
		gb.Items = append(gb.Items, &ast.ByItem{Expr: &boundExpr{x: in2}})
	}
	agg, out, ah, _, err := p.planAgg(b, rel.idx, rel.sc, gb, nil /* grouping sets */, aggs, filters)
	if err != nil {
		return 0, nil, err
	}
	val, err := b.bind(field, out, ah)
	if err != nil {
		return 0, nil, err
	}
	if val.Type().Fam == types.Unknown {
		if val, err = b.castTo(val, types.TText); err != nil {
			return 0, nil, err
		}
	}
	// Find each key among the aggregation's group columns (planAgg may
	// reorder them).
	pre := p.plan.Nodes[p.plan.Nodes[agg].Inputs[0]].Exprs
	exprs := make([]spec.Expr, 0, len(inner)+1)
	cols := make([]types.Column, 0, len(inner)+1)
	for _, k := range inner {
		g := -1
		for i := range inner {
			if pre[i].String() == k.String() {
				g = i
				break
			}
		}
		if g < 0 {
			return 0, nil, errSubquery("this correlated scalar subquery")
		}
		exprs = append(exprs, &spec.ColRef{Idx: g, T: k.Type(), Name: out.cols[g].name})
		cols = append(cols, types.Column{Name: out.cols[g].name, Type: k.Type()})
	}
	exprs = append(exprs, val)
	cols = append(cols, types.Column{Name: "?column?", Type: val.Type()})
	right := p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{agg}, Exprs: exprs, Cols: cols})
	left, lkeys := p.keyColumns(in, sc, outer)
	nl := len(sc.cols)
	lw := len(p.plan.Nodes[left].Cols)
	joinOut := make([]int, nl+1)
	for i := 0; i < nl; i++ {
		joinOut[i] = i
	}
	joinOut[nl] = lw + len(inner)
	rkeys := make([]int, len(inner))
	for i := range rkeys {
		rkeys[i] = i
	}
	allCols := append(sc.columns(), cols[len(cols)-1])
	j := p.plan.Add(&spec.Node{Kind: spec.Join, Inputs: []int{left, right}, JoinKind: spec.LeftJoin,
		LeftKeys: lkeys, RightKeys: rkeys, JoinOut: joinOut, Cols: allCols})
	p.keys[j] = p.keys[in]
	return j, &spec.ColRef{Idx: nl, T: val.Type(), Name: "?column?"}, nil
}

// unifyEq casts the two sides of an equality to their common type.
func (b *binder) unifyEq(l, r spec.Expr) (spec.Expr, spec.Expr, error) {
	_, casts, err := eval.ResolveFunc("=", []types.T{l.Type(), r.Type()})
	if err != nil {
		return nil, nil, err
	}
	if l, err = b.castTo(l, casts[0]); err != nil {
		return nil, nil, err
	}
	if r, err = b.castTo(r, casts[1]); err != nil {
		return nil, nil, err
	}
	return l, r, nil
}

// keyColumns returns node in (scope sc) with the expressions es as
// columns: in itself when they are all its columns, else a projection
// that appends those that are not.
func (p *Planner) keyColumns(in int, sc *scope, es []spec.Expr) (int, []int) {
	keys := make([]int, len(es))
	var extra []spec.Expr
	for i, e := range es {
		if r, ok := e.(*spec.ColRef); ok && r.Idx < len(sc.cols) && r.T == sc.cols[r.Idx].t {
			keys[i] = r.Idx
			continue
		}
		keys[i] = len(sc.cols) + len(extra)
		extra = append(extra, e)
	}
	if len(extra) == 0 {
		return in, keys
	}
	exprs := make([]spec.Expr, 0, len(sc.cols)+len(extra))
	cols := sc.columns()
	for i, c := range sc.cols {
		exprs = append(exprs, &spec.ColRef{Idx: i, T: c.t, Name: c.name})
	}
	for _, e := range extra {
		exprs = append(exprs, e)
		cols = append(cols, types.Column{Name: "?key?", Type: e.Type()})
	}
	return p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{in}, Exprs: exprs, Cols: cols}), keys
}

// isSimpleSelect reports whether sel is a plain SELECT … FROM … WHERE,
// whose WHERE conjuncts may be correlated.
func isSimpleSelect(sel *ast.SelectStmt) bool {
	return sel.Kind == ast.SelectStmtKindSelect && sel.From != nil && sel.From.TableRefs != nil &&
		sel.GroupBy == nil && sel.Having == nil && !sel.Distinct && sel.Limit == nil &&
		sel.With == nil && sel.WindowSpecs == nil && !isDistinctOn(sel)
}

// isDistinctOn reports whether sel is SELECT DISTINCT ON (…) (see
// sql/parser: the expressions come as a first item __pg_distinct_on(…)).
func isDistinctOn(sel *ast.SelectStmt) bool {
	if sel.Fields == nil || len(sel.Fields.Fields) == 0 {
		return false
	}
	fc, ok := sel.Fields.Fields[0].Expr.(*ast.FuncCallExpr)
	return ok && fc.FnName.L == "__pg_distinct_on"
}

// planCorrelated plans sel's FROM and WHERE with sc as its enclosing
// scope: local conjuncts filter, nested subqueries are decorrelated
// against sel's own FROM, and correlated conjuncts are returned as join
// keys and residual conditions. bindFields binds the select list too.
func (p *Planner) planCorrelated(sel *ast.SelectStmt, sc *scope, bindFields bool) (*corrRel, error) {
	idx, ssc, err := p.planFrom(sel.From.TableRefs)
	if err != nil {
		return nil, err
	}
	rel := &corrRel{sc: ssc}
	var local []spec.Expr
	var nested []ast.ExprNode
	lvl := &outerLevel{sc: sc}
	p.outer = append(p.outer, lvl)
	defer func() { p.outer = p.outer[:len(p.outer)-1] }()
	b := &binder{p: p}
	nl := len(sc.cols)
	var conds []ast.ExprNode
	if sel.Where != nil {
		conds = splitAnd(sel.Where)
	}
	for _, c := range conds {
		if f := findSubqueries(c); f.other || len(f.scalars) > 0 {
			nested = append(nested, c)
			continue
		}
		x, err := b.bind(c, ssc, nil)
		if err != nil {
			return nil, err
		}
		if x, err = b.castTo(x, types.TBool); err != nil {
			return nil, err
		}
		if !hasOuterRef(x) {
			local = append(local, x)
			continue
		}
		if f, ok := x.(*spec.Func); ok && f.Name == "=" && len(f.Args) == 2 {
			for s := 0; s < 2; s++ {
				o, i := f.Args[s], f.Args[1-s]
				if hasOuterRef(i) || hasColRef(o) || !hasOuterRef(o) {
					continue
				}
				oe, ok := substOuter(o, lvl.refs, 0, false)
				if !ok {
					return nil, errSubquery("a subquery correlated with a query two levels out")
				}
				rel.pairs = append(rel.pairs, corrPair{outer: oe, inner: i})
				x = nil
				break
			}
			if x == nil {
				continue
			}
		}
		r, ok := substOuter(x, lvl.refs, nl, true)
		if !ok {
			return nil, errSubquery("a subquery correlated with a query two levels out")
		}
		rel.residual = append(rel.residual, r)
	}
	if len(local) > 0 {
		// As in planSelect: equalities over a comma join become its keys.
		top := p.plan.Nodes[idx]
		rest := p.pushJoinConds(idx, local)
		for i, n := range p.plan.Nodes {
			if n == top {
				idx = i
			}
		}
		if len(rest) > 0 {
			idx = p.plan.Add(&spec.Node{Kind: spec.Filter, Inputs: []int{idx}, Pred: andAll(rest), Cols: ssc.columns()})
		}
	}
	if len(nested) > 0 {
		if idx, err = p.applySubqueryConds(idx, ssc, nested, nil); err != nil {
			return nil, err
		}
	}
	rel.idx = idx
	if bindFields {
		for _, f := range sel.Fields.Fields {
			if f.WildCard != nil {
				rel.fields = append(rel.fields, nil)
				continue
			}
			x, err := b.bind(f.Expr, ssc, nil)
			if err != nil {
				return nil, err
			}
			if hasOuterRef(x) {
				return nil, errSubquery("an outer column in a subquery's select list")
			}
			rel.fields = append(rel.fields, x)
		}
	}
	return rel, nil
}

func hasOuterRef(e spec.Expr) bool {
	found := false
	spec.Walk(e, func(x spec.Expr) bool {
		if _, ok := x.(*spec.OuterRef); ok {
			found = true
		}
		return !found
	})
	return found
}

func hasColRef(e spec.Expr) bool {
	found := false
	spec.Walk(e, func(x spec.Expr) bool {
		if _, ok := x.(*spec.ColRef); ok {
			found = true
		}
		return !found
	})
	return found
}

// substOuter rewrites e, bound over a subquery with outer references
// refs, over the enclosing query's columns followed by the subquery's:
// an outer reference becomes the enclosing column it reads, and (when
// shift) a subquery column c becomes column off+c. ok is false when a
// reference reads anything but an enclosing column.
func substOuter(e spec.Expr, refs []spec.Expr, off int, shift bool) (spec.Expr, bool) {
	switch x := e.(type) {
	case nil:
		return nil, true
	case *spec.OuterRef:
		if x.N >= len(refs) {
			return nil, false
		}
		r, ok := refs[x.N].(*spec.ColRef)
		return r, ok
	case *spec.ColRef:
		if !shift {
			return nil, false
		}
		c := *x
		c.Idx += off
		return &c, true
	case *spec.Const, *spec.Param:
		return e, true
	case *spec.Cast:
		in, ok := substOuter(x.E, refs, off, shift)
		return &spec.Cast{E: in, T: x.T}, ok
	case *spec.Func:
		c := *x
		c.Args = make([]spec.Expr, len(x.Args))
		for i, a := range x.Args {
			m, ok := substOuter(a, refs, off, shift)
			if !ok {
				return nil, false
			}
			c.Args[i] = m
		}
		return &c, true
	case *spec.Case:
		c := *x
		var ok1, ok2 bool
		c.Operand, ok1 = substOuter(x.Operand, refs, off, shift)
		c.Else, ok2 = substOuter(x.Else, refs, off, shift)
		if !ok1 || !ok2 {
			return nil, false
		}
		c.Whens = make([]spec.When, len(x.Whens))
		for i, w := range x.Whens {
			cw, ok1 := substOuter(w.Cond, refs, off, shift)
			th, ok2 := substOuter(w.Then, refs, off, shift)
			if !ok1 || !ok2 {
				return nil, false
			}
			c.Whens[i] = spec.When{Cond: cw, Then: th}
		}
		return &c, true
	}
	return nil, false
}

// semiJoin filters node in (scope sc) by [NOT] EXISTS (q), or by
// left [NOT] IN (q) when left is not nil.
func (p *Planner) semiJoin(in int, sc *scope, q ast.ResultSetNode, left ast.ExprNode, anti bool) (int, error) {
	b := &binder{p: p}
	var leftVal spec.Expr
	if left != nil {
		var err error
		if leftVal, err = b.bind(left, sc, nil); err != nil {
			return 0, err
		}
	}
	var rel *corrRel
	sel, ok := q.(*ast.SelectStmt)
	if ok && isSimpleSelect(withoutLimit(sel)) && !selectHasAggregate(sel) {
		var err error
		if rel, err = p.planCorrelated(sel, sc, left != nil); err != nil {
			return 0, err
		}
		if sel.Limit != nil {
			// ORDER BY … LIMIT: a Top-N per correlation key (topn.go).
			if err := p.correlatedTopN(sel, rel); err != nil {
				return 0, err
			}
		}
	} else {
		lvl := &outerLevel{sc: sc}
		p.outer = append(p.outer, lvl)
		idx, ssc, err := p.planDerived(q, "", nil)
		p.outer = p.outer[:len(p.outer)-1]
		if err != nil {
			return 0, err
		}
		if len(lvl.refs) > 0 {
			return 0, errSubquery("a correlated subquery with GROUP BY, an aggregate, DISTINCT, LIMIT, WITH or UNION")
		}
		rel = &corrRel{idx: idx, sc: ssc}
		for i, c := range ssc.cols {
			rel.fields = append(rel.fields, &spec.ColRef{Idx: i, T: c.t, Name: c.name})
		}
	}
	kind := spec.SemiJoin
	if anti {
		kind = spec.AntiJoin
	}
	if left == nil {
		return p.filterJoin(in, sc, kind, rel, rel.pairs, nil, nil)
	}
	if len(rel.fields) != 1 || rel.fields[0] == nil {
		return 0, pgerror.New(pgcode.Syntax, "subquery has too many columns")
	}
	l, r, err := b.unifyEq(leftVal, rel.fields[0])
	if err != nil {
		return 0, err
	}
	pairs := append(append([]corrPair{}, rel.pairs...), corrPair{outer: l, inner: r})
	if in, err = p.filterJoin(in, sc, kind, rel, pairs, nil, nil); err != nil || !anti {
		return in, err
	}
	// NOT IN is NULL, so false in WHERE, when the set holds a NULL, or
	// when the left value is NULL and the set is not empty.
	if in, err = p.filterJoin(in, sc, kind, rel, rel.pairs, &spec.Func{Name: "is null", Args: []spec.Expr{r}, T: types.TBool}, nil); err != nil {
		return 0, err
	}
	if c, ok := l.(*spec.Const); ok && !c.D.IsNull() {
		return in, nil
	}
	return p.filterJoin(in, sc, kind, rel, rel.pairs, nil, &spec.Func{Name: "is null", Args: []spec.Expr{l}, T: types.TBool})
}

// selectHasAggregate reports whether sel's select list holds an aggregate.
func selectHasAggregate(sel *ast.SelectStmt) bool {
	if sel.Fields != nil {
		for _, f := range sel.Fields.Fields {
			if f.Expr != nil && hasAggregate(f.Expr) {
				return true
			}
		}
	}
	return false
}

// filterJoin joins node in (scope sc) with rel as a semi or anti join on
// pairs and rel's residual conditions; rightCond filters rel's rows first
// and leftCond (over sc) joins the residual condition.
func (p *Planner) filterJoin(in int, sc *scope, kind spec.JoinKind, rel *corrRel, pairs []corrPair, rightCond, leftCond spec.Expr) (int, error) {
	b := &binder{p: p}
	outer := make([]spec.Expr, len(pairs))
	inner := make([]spec.Expr, len(pairs))
	for i, pr := range pairs {
		o, r, err := b.unifyEq(pr.outer, pr.inner)
		if err != nil {
			return 0, err
		}
		outer[i], inner[i] = o, r
	}
	left, lkeys := p.keyColumns(in, sc, outer)
	lw := len(p.plan.Nodes[left].Cols)
	nl := len(sc.cols)
	right := rel.idx
	if rightCond != nil {
		right = p.plan.Add(&spec.Node{Kind: spec.Filter, Inputs: []int{right}, Pred: rightCond, Cols: rel.sc.columns()})
	}
	// The right side: the keys, then (for a residual condition) all of
	// rel's columns; without one, its distinct keys (a row per key).
	var exprs []spec.Expr
	var cols []types.Column
	for _, k := range inner {
		exprs = append(exprs, k)
		cols = append(cols, types.Column{Name: "?key?", Type: k.Type()})
	}
	var cond []spec.Expr
	if len(rel.residual) > 0 {
		for i, c := range rel.sc.cols {
			exprs = append(exprs, &spec.ColRef{Idx: i, T: c.t, Name: c.name})
			cols = append(cols, types.Column{Name: c.name, Type: c.t})
		}
		for _, r := range rel.residual {
			// Over sc ++ rel: outer columns stay, rel's column c moves to
			// lw + len(inner) + c - nl.
			m, ok := spec.MapCols(r, func(i int) int {
				if i < nl {
					return i
				}
				return lw + len(inner) + i - nl
			})
			if !ok {
				return 0, errSubquery("this correlated condition")
			}
			cond = append(cond, m)
		}
	} else if len(inner) == 0 {
		exprs = append(exprs, &spec.Const{D: types.NewBool(true), T: types.TBool})
		cols = append(cols, types.Column{Name: "?exists?", Type: types.TBool})
	}
	right = p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{right}, Exprs: exprs, Cols: cols})
	if len(rel.residual) == 0 {
		g := make([]int, len(cols))
		for i := range g {
			g[i] = i
		}
		right = p.plan.Add(&spec.Node{Kind: spec.Agg, Inputs: []int{right}, GroupBy: g, Cols: cols})
	}
	if leftCond != nil {
		cond = append(cond, leftCond)
	}
	rkeys := make([]int, len(inner))
	for i := range rkeys {
		rkeys[i] = i
	}
	joinOut := make([]int, nl)
	for i := range joinOut {
		joinOut[i] = i
	}
	j := p.plan.Add(&spec.Node{Kind: spec.Join, Inputs: []int{left, right}, JoinKind: kind,
		LeftKeys: lkeys, RightKeys: rkeys, Cond: andAll(cond), JoinOut: joinOut, Cols: sc.columns()})
	p.keys[j] = p.keys[in]
	return j, nil
}
