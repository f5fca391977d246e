package planner

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/exec/eval"
	"sluice/exec/spec"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// planSelectSRF plans a set-returning function written as a select-list
// item (`SELECT generate_series(1, 3)`, `SELECT id,
// jsonb_array_elements(doc) FROM t`): a TableFunc node over the query's
// rows (ops.ProjectSet) appends the function's column to each row, once
// per row the function returns; the item then reads that column. One such
// function per select list: PostgreSQL runs several in lockstep, padding
// the shorter with NULLs, which is refused rather than approximated.
func (p *Planner) planSelectSRF(b *binder, in int, sc *scope, h hook, exprs []ast.ExprNode) (int, map[int]*spec.ColRef, error) {
	var out map[int]*spec.ColRef
	for i, e := range exprs {
		call, ok := e.(*ast.FuncCallExpr)
		if !ok || !eval.IsTableFunc(call.FnName.L) {
			continue
		}
		if out != nil {
			return 0, nil, pgerror.Unsupported("more than one set-returning function in a select list").
				WithHint("call the functions in FROM: SELECT * FROM f(...) AS a, g(...) AS b")
		}
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
		if len(cols) != 1 {
			return 0, nil, pgerror.Unsupported("set-returning function %s returning a record in a select list", call.FnName.L).
				WithHint("call it in FROM: SELECT * FROM %s(...)", call.FnName.L)
		}
		for j := range args {
			if args[j], err = b.castTo(args[j], casts[j]); err != nil {
				return 0, nil, err
			}
		}
		inCols := p.plan.Nodes[in].Cols
		all := append(append([]types.Column(nil), inCols...), cols...)
		in = p.plan.Add(&spec.Node{Kind: spec.TableFunc, Inputs: []int{in}, Func: call.FnName.L, Exprs: args, Cols: all})
		out = map[int]*spec.ColRef{i: {Idx: len(inCols), T: cols[0].Type, Name: cols[0].Name}}
	}
	return in, out, nil
}
