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
	args, cols, err := (&binder{p: p}).bindTableFunc(tf.Name, tf.Args, &scope{})
	if err != nil {
		return 0, nil, err
	}
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

// lateralFunc returns the set-returning function on the right of join j
// (`FROM t, unnest(t.a)`, `CROSS JOIN LATERAL unnest(t.a) WITH ORDINALITY
// AS u(x, n)`), if it is one.
func lateralFunc(j *ast.Join) (*ast.TableSource, *ast.TableName) {
	ts, ok := j.Right.(*ast.TableSource)
	if !ok {
		return nil, nil
	}
	tn, ok := ts.Source.(*ast.TableName)
	if !ok || !isTableFunc(tn) {
		return nil, nil
	}
	return ts, tn
}

// planLateralFunc plans the set-returning function on the right of join
// j, whose arguments may name the FROM items on its left (li, lsc), as the
// select-list form does (ops.ProjectSet): each left row followed by each
// row the function returns for it, a row without any giving none, as
// PostgreSQL's inner lateral join. In a view this maintains itself (the
// function's rows are a function of the left row: a retraction retracts
// them), so it plans there too, where a function alone in FROM does not.
// An inner join's ON condition filters the pairs; an outer join is
// refused.
func (p *Planner) planLateralFunc(j *ast.Join, li int, lsc *scope, ts *ast.TableSource, tn *ast.TableName) (int, *scope, error) {
	tf, ok := p.TableFuncs[tn.Name.O]
	if !ok {
		return 0, nil, pgerror.Unsupported("table function %s", tn.Name.O)
	}
	if j.Tp == ast.LeftJoin || j.Tp == ast.RightJoin || j.StraightJoin || j.NaturalJoin || len(j.Using) > 0 {
		return 0, nil, pgerror.Unsupported("an outer or USING join with the set-returning function %s", tf.Name).
			WithHint("Write it as an inner join: FROM t CROSS JOIN LATERAL f(t.x), or f(t.x) in the select list.")
	}
	alias := ts.AsName.O
	if alias == "" || strings.HasPrefix(alias, tableFuncPrefix) {
		alias = normFuncName(tf.Name)
	}
	b := &binder{p: p}
	args, cols, err := b.bindTableFunc(tf.Name, tf.Args, lsc)
	if err != nil {
		return 0, nil, err
	}
	if len(cols) == 1 && cols[0].Name == normFuncName(tf.Name) {
		cols[0].Name = alias
	}
	if names, ok := p.ColumnAliases[ts]; ok {
		if len(names) > len(cols) {
			return 0, nil, pgerror.New(pgcode.InvalidColumnReference,
				"table \"%s\" has %d columns available but %d columns specified", alias, len(cols), len(names))
		}
		for i, n := range names {
			cols[i].Name = n
		}
	}
	sc := &scope{cols: append([]scopeCol{}, lsc.cols...)}
	for _, c := range cols {
		sc.cols = append(sc.cols, scopeCol{table: alias, name: c.Name, t: c.Type})
	}
	all := append(append([]types.Column(nil), p.plan.Nodes[li].Cols...), cols...)
	idx := p.plan.Add(&spec.Node{Kind: spec.TableFunc, Inputs: []int{li},
		SetFuncs: []spec.SetFunc{{Name: tf.Name, Args: args, Cols: len(cols)}}, Cols: all})
	if j.On != nil {
		on, err := b.bindBool(j.On.Expr, sc)
		if err != nil {
			return 0, nil, err
		}
		idx = p.plan.Add(&spec.Node{Kind: spec.Filter, Inputs: []int{idx}, Pred: on, Cols: all})
	}
	return idx, sc, nil
}

// bindTableFunc binds the arguments of set-returning function name in sc
// and resolves it: the arguments, cast to its parameters, and a copy of
// its columns.
func (b *binder) bindTableFunc(name string, argv []ast.ExprNode, sc *scope) ([]spec.Expr, []types.Column, error) {
	args := make([]spec.Expr, len(argv))
	ts := make([]types.T, len(argv))
	for i, a := range argv {
		x, err := b.bind(a, sc, nil)
		if err != nil {
			return nil, nil, err
		}
		args[i], ts[i] = x, x.Type()
	}
	cols, casts, err := eval.ResolveTableFunc(name, ts)
	if err != nil {
		return nil, nil, err
	}
	for i := range args {
		if args[i], err = b.castTo(args[i], casts[i]); err != nil {
			return nil, nil, err
		}
	}
	return args, append([]types.Column(nil), cols...), nil
}

// bindBool binds e in sc as a condition (a join's ON): cast to boolean.
func (b *binder) bindBool(e ast.ExprNode, sc *scope) (spec.Expr, error) {
	x, err := b.bind(e, sc, nil)
	if err != nil {
		return nil, err
	}
	return b.castTo(x, types.TBool)
}
