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

// planSelectSRF plans a set-returning function written as a select-list
// item (`SELECT generate_series(1, 3)`, `SELECT id,
// jsonb_array_elements(doc) FROM t`, `SELECT (jsonb_each(doc)).key`): a
// TableFunc node over the query's rows (ops.ProjectSet) appends the
// function's columns to each row, once per row the function returns; the
// items then read those columns. One function call per select list (it
// may be named by several items, as `(f(x)).a, (f(x)).b`): PostgreSQL
// runs different calls in lockstep, padding the shorter with NULLs, which
// is refused rather than approximated.
func (p *Planner) planSelectSRF(b *binder, in int, sc *scope, h hook, exprs []ast.ExprNode) (int, map[int]*spec.ColRef, error) {
	var out map[int]*spec.ColRef
	var callText string
	var cols []types.Column
	base := 0
	for i, e := range exprs {
		call, field, ok := srfItem(e)
		if !ok {
			continue
		}
		if out == nil {
			callText = restore(call)
			args := make([]spec.Expr, len(call.Args))
			ts := make([]types.T, len(call.Args))
			for j, a := range call.Args {
				x, err := b.bind(a, sc, h)
				if err != nil {
					return 0, nil, err
				}
				args[j], ts[j] = x, x.Type()
			}
			var casts []types.T
			var err error
			if cols, casts, err = eval.ResolveTableFunc(call.FnName.L, ts); err != nil {
				return 0, nil, err
			}
			for j := range args {
				if args[j], err = b.castTo(args[j], casts[j]); err != nil {
					return 0, nil, err
				}
			}
			inCols := p.plan.Nodes[in].Cols
			base = len(inCols)
			all := append(append([]types.Column(nil), inCols...), cols...)
			in = p.plan.Add(&spec.Node{Kind: spec.TableFunc, Inputs: []int{in}, Func: call.FnName.L, Exprs: args, Cols: all})
			out = map[int]*spec.ColRef{}
		} else if restore(call) != callText || callText == "" {
			return 0, nil, pgerror.Unsupported("more than one set-returning function call in a select list").
				WithHint("call the functions in FROM: SELECT * FROM f(...) AS a, g(...) AS b")
		}
		col := -1
		switch {
		case field == "" && len(cols) == 1:
			col = 0
		case field == "":
			return 0, nil, pgerror.Unsupported("set-returning function %s returning a record in a select list", call.FnName.L).
				WithHint("call it in FROM: SELECT * FROM %s(...), or name a field: (%s(...)).%s", call.FnName.L, call.FnName.L, cols[0].Name)
		default:
			for j, c := range cols {
				if c.Name == field {
					col = j
				}
			}
			if col < 0 {
				return 0, nil, pgerror.New(pgcode.UndefinedColumn, "column \"%s\" not found in data type record", field)
			}
		}
		out[i] = &spec.ColRef{Idx: base + col, T: cols[col].Type, Name: cols[col].Name}
	}
	return in, out, nil
}

// bindField binds (expr).field outside the select-list forms planSelectSRF
// takes: a field of ROW(…) (f1, f2, … as PostgreSQL names them); Sluice has
// no other composite values.
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
	return nil, pgerror.New(pgcode.WrongObjectType, "column notation .%s applied to type %s, which is not a composite type", field, x.Type())
}
