package planner

import (
	"math"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/exec/eval"
	"sluice/exec/spec"
	"sluice/sql/parser"
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
	if alias == "" || strings.HasPrefix(alias, tableFuncPrefix) {
		alias = normFuncName(tf.Name) // Postgres names the FROM item after the function
	}
	if p.Streaming {
		if normFuncName(tf.Name) == "generate_series" && len(tf.Args) == 3 {
			return p.planClockSeries(tf, alias)
		}
		return 0, nil, pgerror.Unsupported("function %s in FROM of a materialized view", tf.Name).
			WithHint("a set-returning function plans in a view after a table (FROM t, unnest(t.a)), and generate_series(start, now(), step) alone")
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

// planClockSeries plans generate_series(start, now() [± INTERVAL], step)
// alone in FROM of a view, as RisingWave does: a series that grows as
// time passes, its points start + k*step each entering the view once the
// clock reaches it, never leaving (a temporal filter in WHERE, ts >
// now() - INTERVAL '1 hour', makes the window slide). start must be a
// constant timestamp and step a constant interval without months; the
// points are the source's (spec.ClockSeriesConnector), replayed from the
// last checkpoint after a restart. The series column carries a watermark
// (its points only grow), so TUMBLE windows and EMIT ON WINDOW CLOSE close
// over it as time passes. Any other use of the clock is refused.
func (p *Planner) planClockSeries(tf parser.TableFunc, alias string) (int, *scope, error) {
	defer func(ok bool) { p.clockOK = ok }(p.clockOK)
	p.clockOK = true
	args, cols, err := (&binder{p: p}).bindTableFunc(tf.Name, tf.Args, &scope{})
	if err != nil {
		return 0, nil, err
	}
	refuse := func(what string) error {
		return pgerror.Unsupported("generate_series in FROM of a materialized view %s", what).
			WithHint("write generate_series(TIMESTAMPTZ '…', now(), INTERVAL '…'): a constant start, now() (plus or minus a constant interval) as the stop, a constant step without months")
	}
	if len(cols) != 1 || !isTime(cols[0].Type) {
		return 0, nil, refuse("is supported only over timestamps up to now()")
	}
	off, ok := nowOffset(args[1])
	if !ok || hasClock(args[0]) || hasClock(args[2]) {
		return 0, nil, refuse("needs a constant start and step, and now() as its stop")
	}
	loc := p.loc()
	start, ok, err := foldValuesExpr(args[0], loc)
	if err != nil {
		return 0, nil, err
	}
	if !ok || (start.D.K != types.KTimestamp && start.D.K != types.KTimestampTZ) ||
		start.D.I == math.MinInt64 || start.D.I == math.MaxInt64 {
		return 0, nil, refuse("needs a constant, finite start")
	}
	stepC, ok, err := foldValuesExpr(args[2], loc)
	if err != nil {
		return 0, nil, err
	}
	var step int64
	if ok {
		step, ok = intervalConst(stepC)
	}
	if !ok {
		return 0, nil, refuse("needs a constant step without months")
	}
	if step <= 0 {
		return 0, nil, pgerror.New(pgcode.InvalidParameterValue, "step size must be greater than zero in a view's generate_series")
	}
	if cols[0].Name == normFuncName(tf.Name) {
		cols[0].Name = alias
	}
	src := &spec.SourceSpec{Name: alias, Connector: spec.ClockSeriesConnector, Columns: cols,
		Options: map[string]string{
			"start":  strconv.FormatInt(start.D.I, 10),
			"step":   strconv.FormatInt(step, 10),
			"offset": strconv.FormatInt(off, 10),
		},
		Watermark: &spec.WatermarkSpec{Col: 0}}
	idx := p.plan.Add(&spec.Node{Kind: spec.SourceRead, Source: src, Cols: cols})
	sc := &scope{cols: []scopeCol{{table: alias, name: cols[0].Name, t: cols[0].Type}}}
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
