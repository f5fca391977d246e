package planner

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"

	"sluice/exec/eval"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// srfItem recognises a select-list item that is a set-returning function
// call, `f(args)`, or a field of one, `(f(args)).field` (the dialect
// layer's __pg_field). It returns the call and the field ("" for the
// whole value).
func srfItem(e ast.ExprNode) (*ast.FuncCallExpr, string, bool) {
	field := ""
	if f, ok := e.(*ast.FuncCallExpr); ok && f.FnName.L == "__pg_field" && len(f.Args) == 2 {
		name, ok := stringLiteral(f.Args[1])
		if !ok {
			return nil, "", false
		}
		field, e = name, f.Args[0]
	}
	for {
		p, ok := e.(*ast.ParenthesesExpr)
		if !ok {
			break
		}
		e = p.Expr
	}
	call, ok := e.(*ast.FuncCallExpr)
	if !ok || !eval.IsTableFunc(call.FnName.L) {
		return nil, "", false
	}
	return call, field, true
}

// restore returns the text of an expression, to tell calls apart.
func restore(e ast.Node) string {
	var sb strings.Builder
	if err := e.Restore(format.NewRestoreCtx(format.DefaultRestoreFlags, &sb)); err != nil {
		return ""
	}
	return sb.String()
}

// planSelectSRF plans the set-returning functions written as select-list
// items (`SELECT generate_series(1, 3)`, `SELECT id,
// jsonb_array_elements(doc) FROM t`, `SELECT (jsonb_each(doc)).key`): a
// TableFunc node over the query's rows (ops.ProjectSet) appends the
// functions' columns to each row, once per row they return, different
// calls zipped in lockstep as in PostgreSQL (the shorter padded with
// NULLs); the items then read those columns. Items naming the same call
// (`(f(x)).a, (f(x)).b`) share it.
func (p *Planner) planSelectSRF(b *binder, in int, sc *scope, h hook, exprs []ast.ExprNode) (int, map[int]spec.Expr, error) {
	type callCols struct {
		base int
		cols []types.Column
	}
	var out map[int]spec.Expr
	var funcs []spec.SetFunc
	calls := map[string]callCols{}
	inCols := p.plan.Nodes[in].Cols
	all := append([]types.Column(nil), inCols...)
	for i, e := range exprs {
		call, field, ok := srfItem(e)
		if !ok {
			continue
		}
		key := restore(call)
		cc, seen := calls[key]
		if !seen || key == "" {
			args := make([]spec.Expr, len(call.Args))
			ts := make([]types.T, len(call.Args))
			for j, a := range call.Args {
				x, err := b.bind(a, sc, h)
				if err != nil {
					return 0, nil, err
				}
				args[j], ts[j] = x, x.Type()
			}
			cols, casts, err := eval.ResolveTableFunc(call.FnName.L, ts)
			if err != nil {
				return 0, nil, err
			}
			for j := range args {
				if args[j], err = b.castTo(args[j], casts[j]); err != nil {
					return 0, nil, err
				}
			}
			cc = callCols{base: len(all), cols: cols}
			calls[key] = cc
			all = append(all, cols...)
			funcs = append(funcs, spec.SetFunc{Name: call.FnName.L, Args: args, Cols: len(cols)})
		}
		if out == nil {
			out = map[int]spec.Expr{}
		}
		if field == "" && len(cc.cols) > 1 {
			// The whole row: a record of the function's columns.
			fields := make([]spec.Expr, len(cc.cols))
			for j, c := range cc.cols {
				fields[j] = &spec.ColRef{Idx: cc.base + j, T: c.Type, Name: c.Name}
			}
			out[i] = &spec.Func{Name: "__pg_record", Args: fields, T: types.RecordType(cc.cols)}
			continue
		}
		col := -1
		if field == "" {
			col = 0
		}
		for j, c := range cc.cols {
			if field != "" && c.Name == field {
				col = j
			}
		}
		if col < 0 {
			return 0, nil, pgerror.New(pgcode.UndefinedColumn, "column \"%s\" not found in data type record", field)
		}
		out[i] = &spec.ColRef{Idx: cc.base + col, T: cc.cols[col].Type, Name: cc.cols[col].Name}
	}
	if out == nil {
		return in, nil, nil
	}
	in = p.plan.Add(&spec.Node{Kind: spec.TableFunc, Inputs: []int{in}, SetFuncs: funcs, Cols: all})
	return in, out, nil
}

// planGroupedSRF plans, below the aggregation, the set-returning
// select-list items that GROUP BY names by their alias (`SELECT
// regexp_split_to_table(s, ' ') AS word, count(*) … GROUP BY word`): the
// function's column joins the input scope under the alias, and the item
// (exprs[i], rewritten in place) reads it, as in PostgreSQL.
func (p *Planner) planGroupedSRF(b *binder, in int, sc *scope, gb *ast.GroupByClause, exprs []ast.ExprNode, names []string) (int, error) {
	grouped := map[string]bool{}
	for _, g := range gb.Items {
		if c, ok := g.Expr.(*ast.ColumnNameExpr); ok && c.Name.Table.O == "" {
			grouped[c.Name.Name.O] = true
		}
	}
	pick := make([]ast.ExprNode, len(exprs))
	found := false
	for i, e := range exprs {
		if _, _, ok := srfItem(e); !ok || !grouped[names[i]] {
			continue
		}
		if _, err := sc.resolve("", names[i]); err == nil {
			continue // GROUP BY prefers an input column of that name
		}
		pick[i], found = e, true
	}
	if !found {
		return in, nil
	}
	before := len(p.plan.Nodes[in].Cols)
	in, refs, err := p.planSelectSRF(b, in, sc, nil, pick)
	if err != nil {
		return 0, err
	}
	cols := p.plan.Nodes[in].Cols
	for j := before; j < len(cols); j++ {
		sc.cols = append(sc.cols, scopeCol{name: "?" + cols[j].Name + "?", t: cols[j].Type})
	}
	for i, x := range refs {
		r, ok := x.(*spec.ColRef)
		if !ok {
			return 0, pgerror.Unsupported("grouping by a record").WithHint("group by its fields: (%s).field", names[i])
		}
		sc.cols[r.Idx].name = names[i]
		exprs[i] = &ast.ColumnNameExpr{Name: &ast.ColumnName{Name: ast.NewCIStr(names[i])}}
	}
	return in, nil
}

// bindField binds (expr).field outside the select-list forms planSelectSRF
// takes: a field of ROW(…) (f1, f2, … as PostgreSQL names them) or of a
// record a set-returning function made (planSelectSRF).
func (b *binder) bindField(n *ast.FuncCallExpr, sc *scope, h hook) (spec.Expr, error) {
	field, ok := stringLiteral(n.Args[1])
	if !ok {
		return nil, pgerror.New(pgcode.Syntax, "bad field reference")
	}
	e := n.Args[0]
	for {
		p, ok := e.(*ast.ParenthesesExpr)
		if !ok {
			break
		}
		e = p.Expr
	}
	if row, ok := e.(*ast.RowExpr); ok {
		for i, v := range row.Values {
			if field == "f"+itoa(i+1) {
				return b.bind(v, sc, h)
			}
		}
		return nil, pgerror.New(pgcode.UndefinedColumn, "could not identify column \"%s\" in record data type", field)
	}
	if call, _, ok := srfItem(e); ok {
		return nil, pgerror.Unsupported("set-returning function %s here", call.FnName.L).
			WithHint("a field of a set-returning function is available as a select-list item")
	}
	x, err := b.bind(e, sc, h)
	if err != nil {
		return nil, err
	}
	if t := x.Type(); t.Fam == types.Record {
		for i, c := range t.RecordFields() {
			if c.Name == field {
				return &spec.Func{Name: "__pg_record_field", Args: []spec.Expr{x, &spec.Const{D: types.NewInt(int64(i)), T: types.TInt4}}, T: c.Type}, nil
			}
		}
		return nil, pgerror.New(pgcode.UndefinedColumn, "could not identify column \"%s\" in record data type", field)
	}
	return nil, pgerror.New(pgcode.WrongObjectType, "column notation .%s applied to type %s, which is not a composite type", field, x.Type())
}

// srfFinder collects the set-returning calls of an expression (not those
// inside subqueries), outermost only.
type srfFinder struct {
	found []ast.ExprNode
}

func (f *srfFinder) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr, *ast.AggregateFuncExpr, *ast.WindowFuncExpr:
		return n, true
	case ast.ExprNode:
		if _, _, ok := srfItem(x); ok {
			f.found = append(f.found, x)
			return n, true
		}
	}
	return n, false
}

func (f *srfFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// planNestedSRF plans the set-returning calls inside select-list items
// (`SELECT unnest(a)::text`, `SELECT 1 + generate_series(1, 3)`): they run
// in one ProjectSet (planSelectSRF) whose columns join the scope, and the
// returned hook binds each call to its column. The statement's AST is
// not changed (a prepared statement is planned more than once).
func (p *Planner) planNestedSRF(b *binder, in int, sc *scope, h hook, exprs []ast.ExprNode) (int, hook, bool, error) {
	var calls []ast.ExprNode
	for _, e := range exprs {
		if e == nil {
			continue
		}
		f := &srfFinder{}
		e.Accept(f)
		calls = append(calls, f.found...)
	}
	if len(calls) == 0 {
		return in, h, false, nil
	}
	before := len(p.plan.Nodes[in].Cols)
	in, refs, err := p.planSelectSRF(b, in, sc, h, calls)
	if err != nil {
		return 0, nil, false, err
	}
	cols := p.plan.Nodes[in].Cols
	for j := before; j < len(cols); j++ {
		sc.cols = append(sc.cols, scopeCol{name: "?" + cols[j].Name + "?", t: cols[j].Type})
	}
	byNode := map[ast.ExprNode]spec.Expr{}
	for i, c := range calls {
		byNode[c] = refs[i]
	}
	inner := h
	return in, func(e ast.ExprNode) (spec.Expr, bool, error) {
		if r, ok := byNode[e]; ok {
			return r, true, nil
		}
		if inner != nil {
			return inner(e)
		}
		return nil, false, nil
	}, true, nil
}
