package planner

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/exec/eval"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file binds subqueries used as expressions: (SELECT …), EXISTS,
// IN (SELECT …), op ANY/ALL (SELECT …) and ARRAY(SELECT …). Each becomes a
// spec.Subquery holding its own batch plan, which the executor runs once
// per outer row (system relations are small; user tables are read from the
// statement's snapshot). A column the subquery's scope lacks is looked up
// in the enclosing queries' scopes: it becomes a spec.OuterRef, and the
// enclosing row's value is handed to the plan (spec.Subquery.Outer).
// Dataflow jobs have no per-row plans: a materialized view's subqueries are
// decorrelated into joins instead (decorrelate.go).

// outerLevel is an enclosing query of the subquery being planned: the scope
// its expressions see and the values it hands to the subquery.
type outerLevel struct {
	sc   *scope
	refs []spec.Expr
	seen map[string]int
}

// ref registers e, an expression over the level's scope, as a value handed
// to the subquery and returns how the subquery reads it.
func (l *outerLevel) ref(e spec.Expr, name string) spec.Expr {
	k := e.String()
	if l.seen == nil {
		l.seen = map[string]int{}
	}
	n, ok := l.seen[k]
	if !ok {
		n = len(l.refs)
		l.refs = append(l.refs, e)
		l.seen[k] = n
	}
	return &spec.OuterRef{N: n, T: e.Type(), Name: name}
}

// outerColumn resolves table.name, which the current scope lacks, in the
// scopes of the enclosing queries, innermost first. ok is false when none
// has it.
func (b *binder) outerColumn(table, name string) (e spec.Expr, ok bool, err error) {
	p := b.p
	for lvl := len(p.outer) - 1; lvl >= 0; lvl-- {
		sc := p.outer[lvl].sc
		idx, err := sc.resolve(table, name)
		if err != nil {
			if pgerror.GetCode(err) == pgcode.UndefinedColumn {
				continue
			}
			return nil, false, err
		}
		var x spec.Expr = &spec.ColRef{Idx: idx, T: sc.cols[idx].t, Name: sc.cols[idx].name}
		// Hand the value down through every query in between.
		for l := lvl; l < len(p.outer); l++ {
			x = p.outer[l].ref(x, name)
		}
		return x, true, nil
	}
	return nil, false, nil
}

// planSubquery plans q as a subquery of an expression over sc.
func (b *binder) planSubquery(q ast.ResultSetNode, sc *scope) (*spec.Subquery, *Query, error) {
	p := b.p
	if p.Streaming {
		return nil, nil, errSubquery("a subquery in this position")
	}
	lvl := &outerLevel{sc: sc}
	p.outer = append(p.outer, lvl)
	plan, keys := p.plan, p.keys
	p.plan, p.keys = &spec.Plan{}, map[int][]int{}
	sub, err := p.planResultSet(q)
	inner := p.plan
	p.plan, p.keys = plan, keys
	p.outer = p.outer[:len(p.outer)-1]
	if err != nil {
		return nil, nil, err
	}
	return &spec.Subquery{
		Plan: inner, Outer: lvl.refs, Cols: len(sub.Columns),
		Order: sub.Order, Limit: sub.Limit, Offset: sub.Offset,
	}, sub, nil
}

// subqueryOf unwraps the subquery of an expression like (SELECT …).
func subqueryOf(e ast.ExprNode) (*ast.SubqueryExpr, bool) {
	for {
		switch x := e.(type) {
		case *ast.ParenthesesExpr:
			e = x.Expr
		case *ast.SubqueryExpr:
			return x, true
		default:
			return nil, false
		}
	}
}

// oneColumn checks that a subquery used as a value has one column.
func oneColumn(q *Query) error {
	if len(q.Columns) != 1 {
		return pgerror.New(pgcode.Syntax, "subquery must return only one column")
	}
	return nil
}

// castFirstColumn makes the first column of the subquery's plan of type t.
func (b *binder) castFirstColumn(s *spec.Subquery, t types.T) error {
	root := s.Plan.Root()
	cols := s.Plan.Nodes[root].Cols
	if cols[0].Type == t {
		return nil
	}
	exprs := make([]spec.Expr, len(cols))
	out := make([]types.Column, len(cols))
	for i, c := range cols {
		exprs[i] = &spec.ColRef{Idx: i, T: c.Type, Name: c.Name}
		out[i] = c
	}
	x, err := b.castTo(exprs[0], t)
	if err != nil {
		return err
	}
	exprs[0], out[0].Type = x, t
	s.Plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{root}, Exprs: exprs, Cols: out})
	return nil
}

// bindSubqueryExpr binds the expression forms that contain a subquery.
func (b *binder) bindSubqueryExpr(e ast.ExprNode, sc *scope, h hook) (spec.Expr, error) {
	switch n := e.(type) {
	case *ast.SubqueryExpr:
		if x, ok := b.p.subCols[n]; ok {
			return x, nil
		}
		s, q, err := b.planSubquery(n.Query, sc)
		if err != nil {
			return nil, err
		}
		if err := oneColumn(q); err != nil {
			return nil, err
		}
		s.Mode, s.T = spec.ScalarSubquery, q.Columns[0].Type
		return s, nil
	case *ast.ExistsSubqueryExpr:
		sq, ok := subqueryOf(n.Sel)
		if !ok {
			return nil, pgerror.Unsupported("EXISTS over %T", n.Sel)
		}
		s, _, err := b.planSubquery(sq.Query, sc)
		if err != nil {
			return nil, err
		}
		s.Mode, s.T = spec.ExistsSubquery, types.TBool
		if n.Not {
			return &spec.Func{Name: "not", Args: []spec.Expr{s}, T: types.TBool}, nil
		}
		return s, nil
	case *ast.CompareSubqueryExpr:
		op, ok := binaryOps[n.Op]
		if !ok {
			return nil, pgerror.Unsupported("operator %s with a subquery", n.Op)
		}
		return b.bindQuantified(n.L, op, n.All, n.R, sc, h)
	case *ast.PatternInExpr:
		x, err := b.bindQuantified(n.Expr, "=", false, n.Sel, sc, h)
		if err != nil || !n.Not {
			return x, err
		}
		return &spec.Func{Name: "not", Args: []spec.Expr{x}, T: types.TBool}, nil
	}
	return nil, pgerror.Unsupported("expression %T is not supported", e)
}

// bindQuantified binds left op ANY|ALL (subquery), and IN (subquery).
func (b *binder) bindQuantified(leftAST ast.ExprNode, op string, all bool, sel ast.ExprNode, sc *scope, h hook) (spec.Expr, error) {
	sq, ok := subqueryOf(sel)
	if !ok {
		return nil, pgerror.Unsupported("%s over %T", op, sel)
	}
	left, err := b.bind(leftAST, sc, h)
	if err != nil {
		return nil, err
	}
	s, q, err := b.planSubquery(sq.Query, sc)
	if err != nil {
		return nil, err
	}
	if err := oneColumn(q); err != nil {
		return nil, err
	}
	ret, casts, err := eval.ResolveFunc(op, []types.T{left.Type(), q.Columns[0].Type})
	if err != nil {
		return nil, err
	}
	if ret.Fam != types.Bool {
		return nil, pgerror.New(pgcode.DatatypeMismatch, "op ANY/ALL (subquery) requires operator to yield boolean")
	}
	if left, err = b.castTo(left, casts[0]); err != nil {
		return nil, err
	}
	if err := b.castFirstColumn(s, casts[1]); err != nil {
		return nil, err
	}
	s.Mode, s.Left, s.Op, s.T = spec.AnySubquery, left, op, types.TBool
	if all {
		s.Mode = spec.AllSubquery
	}
	return s, nil
}

// bindArraySubquery binds ARRAY(SELECT …): text[] is Sluice's only array
// type, so the column is converted to text.
func (b *binder) bindArraySubquery(n *ast.FuncCallExpr, sc *scope) (spec.Expr, error) {
	var sq *ast.SubqueryExpr
	if len(n.Args) == 1 {
		sq, _ = subqueryOf(n.Args[0])
	}
	if sq == nil {
		return nil, pgerror.New(pgcode.Syntax, "ARRAY() needs a subquery")
	}
	s, q, err := b.planSubquery(sq.Query, sc)
	if err != nil {
		return nil, err
	}
	if err := oneColumn(q); err != nil {
		return nil, err
	}
	t := q.Columns[0].Type
	if t.Fam != types.TextArray && !t.IsString() {
		t = types.TText
	}
	if err := b.castFirstColumn(s, t); err != nil {
		return nil, err
	}
	s.Mode, s.T = spec.ArraySubquery, types.TTextArray
	return s, nil
}

// bindQuantifiedArray binds "__pg_any"(left, 'op', array) and "__pg_all":
// left op ANY|ALL (array expression).
func (b *binder) bindQuantifiedArray(n *ast.FuncCallExpr, sc *scope, h hook) (spec.Expr, error) {
	if len(n.Args) != 3 {
		return nil, pgerror.New(pgcode.Syntax, "bad ANY/ALL")
	}
	op, ok := stringLiteral(n.Args[1])
	if !ok {
		return nil, pgerror.New(pgcode.Syntax, "bad ANY/ALL operator")
	}
	left, err := b.bind(n.Args[0], sc, h)
	if err != nil {
		return nil, err
	}
	arr, err := b.bind(n.Args[2], sc, h)
	if err != nil {
		return nil, err
	}
	if types.IsElemArray(arr.Type().Fam) {
		// x op ANY (int[] …): compared with the element type.
		et, _ := types.ArrayElem(arr.Type().Fam)
		if left.Type().Fam == types.Unknown {
			if left, err = b.castTo(left, et); err != nil {
				return nil, err
			}
		}
		return &spec.Func{Name: n.FnName.L, Args: []spec.Expr{left, &spec.Const{D: types.NewString(op), T: types.TText}, arr}, T: types.TBool}, nil
	}
	if arr, err = b.castTo(arr, types.TTextArray); err != nil {
		return nil, err
	}
	elem, err := eval.ArrayElemType(op, left.Type())
	if err != nil {
		return nil, err
	}
	if left.Type().Fam == types.Unknown && elem.Fam != types.Unknown {
		if left, err = b.castTo(left, elem); err != nil {
			return nil, err
		}
	}
	return &spec.Func{Name: n.FnName.L, Args: []spec.Expr{left, &spec.Const{D: types.NewString(op), T: types.TText}, arr}, T: types.TBool}, nil
}

// isBatchAgg reports whether the aggregate f exists only in batch queries.
func isBatchAgg(f string) bool {
	switch f {
	case "string_agg", "array_agg", "bool_and", "bool_or", "every", "jsonb_agg", "jsonb_object_agg":
		return true
	}
	return false
}

// bindBatchAgg binds the arguments and FILTER of a batch-only aggregate,
// appending them to the aggregation's input columns pre.
func (p *Planner) bindBatchAgg(b *binder, a *ast.AggregateFuncExpr, filter ast.ExprNode, sc *scope, call *spec.AggCall, pre *[]spec.Expr) error {
	want, argT, ret := 1, types.TText, types.TText
	switch call.Func {
	case "string_agg":
		want = 2
	case "array_agg":
		ret = types.TTextArray
	case "bool_and", "bool_or", "every":
		argT, ret = types.TBool, types.TBool
	case "jsonb_agg":
		argT, ret = types.TJSONB, types.TJSONB
	case "jsonb_object_agg":
		want, ret = 2, types.TJSONB
	}
	if len(a.Args) != want {
		return pgerror.New(pgcode.UndefinedFunction, "function %s with %d arguments does not exist", call.Func, len(a.Args))
	}
	for i, arg := range a.Args {
		x, err := b.bind(arg, sc, nil)
		if err != nil {
			return err
		}
		t := argT
		if call.Func == "array_agg" && x.Type().IsString() {
			t = x.Type()
		}
		if at, ok := types.ArrayOf(x.Type()); ok && call.Func == "array_agg" && types.IsElemArray(at.Fam) {
			t, _ = types.ArrayElem(at.Fam)
			ret = at // integer[], bigint[], … (sql/types/elemarray.go)
		}
		if call.Func == "array_agg" && x.Type().Fam == types.Bool {
			t, ret = types.TBool, types.TBoolArray // elements made "t"/"f" (exec/job)
		}
		if (call.Func == "jsonb_agg" || (call.Func == "jsonb_object_agg" && i == 1)) && x.Type().Fam != types.JSONB {
			// Values become JSON as to_jsonb makes them; NULL is JSON null.
			if x.Type().Fam == types.Unknown {
				if x, err = b.castTo(x, types.TText); err != nil {
					return err
				}
			}
			x = &spec.Func{Name: "to_jsonb", Args: []spec.Expr{x}, T: types.TJSONB}
			t = types.TJSONB
		}
		if x, err = b.castTo(x, t); err != nil {
			return err
		}
		if i == 0 {
			call.Arg = len(*pre)
		} else {
			call.Extra = append(call.Extra, len(*pre))
		}
		*pre = append(*pre, x)
	}
	call.T = ret
	if a.Order != nil {
		for _, it := range a.Order.Items {
			k, err := b.bind(it.Expr, sc, nil)
			if err != nil {
				return err
			}
			call.Order = append(call.Order, spec.OrderItem{Col: 1 + len(call.Extra), Desc: it.Desc, NullsFirst: it.NullOrder})
			call.Extra = append(call.Extra, len(*pre))
			*pre = append(*pre, k)
		}
	}
	if filter != nil {
		f, err := b.bind(filter, sc, nil)
		if err != nil {
			return err
		}
		if f, err = b.castTo(f, types.TBool); err != nil {
			return err
		}
		call.Filter = len(*pre)
		*pre = append(*pre, f)
	}
	if p.Streaming {
		// A view's aggregation keeps the multiset of each group's
		// inputs (exec/ops' FoldAgg): one column holding the argument
		// values as a tuple, which order keys index as before.
		cols := append([]int{call.Arg}, call.Extra...)
		fields := make([]spec.Expr, len(cols))
		for i, c := range cols {
			fields[i] = (*pre)[c]
		}
		call.Arg, call.Extra = len(*pre), nil
		*pre = append(*pre, &spec.Func{Name: "__pg_tuple", Args: fields, T: types.T{Fam: types.Record}})
	}
	return nil
}

// batchAggRewriter turns calls of the batch-only aggregates, which the TiDB
// parser reads as plain functions, into aggregate expressions.
type batchAggRewriter struct{}

func (batchAggRewriter) Enter(n ast.Node) (ast.Node, bool) { return n, false }

func (batchAggRewriter) Leave(n ast.Node) (ast.Node, bool) {
	f, ok := n.(*ast.FuncCallExpr)
	if !ok {
		return n, true
	}
	if a, ok := extAggCall(f); ok {
		return a, true
	}
	switch {
	case isBatchAgg(f.FnName.L):
		return &ast.AggregateFuncExpr{F: f.FnName.L, Args: f.Args}, true
	case f.FnName.L == "__pg_agg_order" && len(f.Args) >= 1:
		// agg(x ORDER BY k [DESC] [NULLS …]): __pg_agg_order(agg(x), k, 'dir', …).
		a, ok := f.Args[0].(*ast.AggregateFuncExpr)
		if !ok {
			return n, true
		}
		if lf := strings.ToLower(a.F); !isBatchAgg(lf) && lf != "percentile_cont" && lf != "percentile_disc" && lf != "mode" {
			return a, true // count, sum, avg, min, max, stddev…: the order changes nothing
		}
		order := &ast.OrderByClause{}
		for i := 1; i+1 < len(f.Args); i += 2 {
			dir, _ := stringLiteral(f.Args[i+1])
			item := &ast.ByItem{Expr: f.Args[i], Desc: strings.HasPrefix(dir, "desc")}
			// NullOrder true: NULLS FIRST asked; the default follows the direction.
			item.NullOrder = strings.HasSuffix(dir, "nulls first") || (item.Desc && !strings.HasSuffix(dir, "nulls last"))
			order.Items = append(order.Items, item)
		}
		a.Order = order
		return a, true
	case f.FnName.L == "__pg_agg_distinct" && len(f.Args) == 1:
		if a, ok := f.Args[0].(*ast.AggregateFuncExpr); ok && (isBatchAgg(strings.ToLower(a.F)) || isExtAgg(strings.ToLower(a.F))) {
			a.Distinct = true
			return a, true
		}
	}
	return n, true
}

// rewriteBatchAggs applies batchAggRewriter to a statement.
func rewriteBatchAggs(stmt ast.StmtNode) ast.StmtNode {
	if out, ok := stmt.Accept(batchAggRewriter{}); ok {
		if s, ok := out.(ast.StmtNode); ok {
			return s
		}
	}
	return stmt
}
