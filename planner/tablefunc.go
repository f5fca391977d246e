package planner

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/exec/eval"
	"sluice/exec/spec"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// tableFuncPrefix starts the placeholder table names the dialect layer
// writes for set-returning functions in FROM (generate_series, unnest,
// pg_options_to_table, ...); Planner.TableFuncs maps them to the calls.
const tableFuncPrefix = "__pg_func__"

// isTableFunc reports whether a FROM item names a set-returning function.
func isTableFunc(tn *ast.TableName) bool {
	return tn.Schema.O == "" && strings.HasPrefix(tn.Name.L, tableFuncPrefix)
}

// planTableFunc plans a set-returning function in FROM (batch queries
// only). Its arguments see no FROM item, but may be outer references of a
// correlated subquery. A function of one column names the column after the
// FROM item's alias, as in Postgres.
func (p *Planner) planTableFunc(tn *ast.TableName, alias string) (int, *scope, error) {
	tf, ok := p.TableFuncs[tn.Name.O]
	if !ok {
		return 0, nil, pgerror.Unsupported("table function %s", tn.Name.O)
	}
	if p.Streaming {
		return 0, nil, pgerror.Unsupported("function %s in FROM of a materialized view", tf.Name)
	}
	if alias == "" || strings.HasPrefix(alias, tableFuncPrefix) {
		alias = normFuncName(tf.Name) // Postgres names the FROM item after the function
	}
	b := &binder{p: p}
	args := make([]spec.Expr, len(tf.Args))
	ts := make([]types.T, len(tf.Args))
	for i, a := range tf.Args {
		x, err := b.bind(a, &scope{}, nil)
		if err != nil {
			return 0, nil, err
		}
		args[i], ts[i] = x, x.Type()
	}
	cols, casts, err := eval.ResolveTableFunc(tf.Name, ts)
	if err != nil {
		return 0, nil, err
	}
	for i := range args {
		if args[i], err = b.castTo(args[i], casts[i]); err != nil {
			return 0, nil, err
		}
	}
	cols = append([]types.Column(nil), cols...)
	if len(cols) == 1 && alias != "" && cols[0].Name == normFuncName(tf.Name) {
		// A function returning a scalar names its column after the FROM
		// item; one with a named OUT column (jsonb_array_elements'
		// "value") keeps that name.
		cols[0].Name = alias
	}
	sc := &scope{}
	for _, c := range cols {
		sc.cols = append(sc.cols, scopeCol{table: alias, name: c.Name, t: c.Type})
	}
	idx := p.plan.Add(&spec.Node{Kind: spec.TableFunc, Func: tf.Name, Exprs: args, Cols: cols})
	return idx, sc, nil
}

func normFuncName(n string) string {
	return strings.TrimPrefix(strings.ToLower(n), "pg_catalog.")
}
