package planner

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// A LATERAL subquery in FROM that refers to the FROM items before it,
//
//	FROM t, LATERAL (SELECT … FROM u WHERE u.x = t.x [AND …] [ORDER BY … LIMIT n]) s
//	FROM t LEFT JOIN LATERAL (…) s ON true
//
// is decorrelated as the subqueries of decorrelate.go are: the subquery's
// FROM and its local conditions are planned once, its correlated
// equalities become join keys, and its ORDER BY … LIMIT a Top-N per key
// (correlatedTopN); an inner (or left) join on the keys then pairs every
// row of t with the subquery's rows for it. In a view every part is an
// incremental operator. A LATERAL subquery that refers to nothing before
// it is an ordinary subquery; other correlated forms (aggregates, GROUP
// BY, DISTINCT, correlation other than equalities) are refused with 0A000.

// lateralSubquery returns the LATERAL subquery on the right of j, if any.
func lateralSubquery(j *ast.Join) (*ast.TableSource, *ast.SelectStmt) {
	ts, ok := j.Right.(*ast.TableSource)
	if !ok || !ts.Lateral {
		return nil, nil
	}
	sel, _ := ts.Source.(*ast.SelectStmt)
	return ts, sel
}

// isOuterRefErr reports whether err is what planning a subquery alone
// gives when it names a column of an enclosing FROM item.
func isOuterRefErr(err error) bool {
	switch pgerror.GetCode(err) {
	case pgcode.UndefinedColumn, pgcode.UndefinedTable:
		return true
	}
	return false
}

// errLateral refuses a correlated LATERAL form the planner cannot
// decorrelate.
func errLateral(what string) error {
	return pgerror.Unsupported("%s in a LATERAL subquery that refers to preceding FROM items is not supported", what).
		WithHint("Correlate it by equalities in its WHERE clause (u.x = t.x), with at most ORDER BY … LIMIT; or join the tables and filter on row_number() OVER (PARTITION BY …).")
}

// truncatePlan drops the nodes from n on (a failed attempt's).
func (p *Planner) truncatePlan(n int) {
	for i := n; i < len(p.plan.Nodes); i++ {
		delete(p.keys, i)
	}
	clear(p.plan.Nodes[n:])
	p.plan.Nodes = p.plan.Nodes[:n]
}

// planLateral joins the left input li (scope lsc) with the correlated
// LATERAL subquery sel named alias.
func (p *Planner) planLateral(j *ast.Join, li int, lsc *scope, ts *ast.TableSource, sel *ast.SelectStmt) (int, *scope, error) {
	kind := spec.InnerJoin
	switch {
	case j.StraightJoin || j.Tp == ast.RightJoin:
		return 0, nil, errLateral("RIGHT or FULL JOIN")
	case j.Tp == ast.LeftJoin:
		kind = spec.LeftJoin
	}
	if len(j.Using) > 0 || j.NaturalJoin {
		return 0, nil, errLateral("USING or NATURAL")
	}
	if !isSimpleSelect(withoutLimit(sel)) || selectHasAggregate(sel) {
		return 0, nil, errLateral("GROUP BY, an aggregate, DISTINCT, WITH or a set operation")
	}
	rel, err := p.planCorrelated(sel, lsc, true /* bind fields */)
	if err != nil {
		return 0, nil, err
	}
	if len(rel.residual) > 0 {
		return 0, nil, errLateral("a correlated condition other than an equality")
	}
	if sel.Limit != nil {
		if err := p.correlatedTopN(sel, rel); err != nil {
			return 0, nil, err
		}
	}
	b := &binder{p: p}
	outer := make([]spec.Expr, len(rel.pairs))
	exprs := make([]spec.Expr, 0, len(rel.pairs)+len(rel.fields))
	var cols []types.Column
	for i, pr := range rel.pairs {
		o, in, err := b.unifyEq(pr.outer, pr.inner)
		if err != nil {
			return 0, nil, err
		}
		outer[i] = o
		exprs = append(exprs, in)
		cols = append(cols, types.Column{Name: "?key?", Type: in.Type()})
	}
	var names []string
	for i, f := range sel.Fields.Fields {
		if f.WildCard != nil {
			for c, sc := range rel.sc.cols {
				if f.WildCard.Table.O != "" && sc.table != f.WildCard.Table.O {
					continue
				}
				exprs = append(exprs, &spec.ColRef{Idx: c, T: sc.t, Name: sc.name})
				names = append(names, sc.name)
			}
			continue
		}
		exprs = append(exprs, rel.fields[i])
		names = append(names, outputName(f))
	}
	for k, n := range names {
		if k < len(ts.ColumnNames) {
			n = ts.ColumnNames[k].O
		}
		cols = append(cols, types.Column{Name: n, Type: exprs[len(rel.pairs)+k].Type()})
	}
	right := p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{rel.idx}, Exprs: exprs, Cols: cols})
	left, lkeys := p.keyColumns(li, lsc, outer)
	lw := len(p.plan.Nodes[left].Cols)
	nl := len(lsc.cols)
	rkeys := make([]int, len(outer))
	joinOut := make([]int, 0, nl+len(names))
	for i := range rkeys {
		rkeys[i] = i
	}
	for i := 0; i < nl; i++ {
		joinOut = append(joinOut, i)
	}
	sc := &scope{cols: append([]scopeCol{}, lsc.cols...)}
	for k := range names {
		c := cols[len(rel.pairs)+k]
		joinOut = append(joinOut, lw+len(rel.pairs)+k)
		sc.cols = append(sc.cols, scopeCol{table: ts.AsName.O, name: c.Name, t: c.Type})
	}
	node := &spec.Node{Kind: spec.Join, Inputs: []int{left, right}, JoinKind: kind, LeftKeys: lkeys, RightKeys: rkeys,
		JoinOut: joinOut, Cols: sc.columns()}
	if j.On != nil {
		on, err := b.bindBool(j.On.Expr, sc)
		if err != nil {
			return 0, nil, err
		}
		if c, ok := on.(*spec.Const); !ok || c.D.IsNull() || !c.D.Bool() {
			if kind != spec.InnerJoin {
				return 0, nil, errLateral("a LEFT JOIN condition other than ON true")
			}
			idx := p.plan.Add(node)
			return p.plan.Add(&spec.Node{Kind: spec.Filter, Inputs: []int{idx}, Pred: on, Cols: sc.columns()}), sc, nil
		}
	}
	return p.plan.Add(node), sc, nil
}
