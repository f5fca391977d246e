package planner

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/exec/spec"
	"sluice/sql/parser"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// asofCond returns the condition of an ASOF join (its ON wrapped in the
// rewriter's marker), or nil for any other join.
func asofCond(j *ast.Join) ast.ExprNode {
	if j.On == nil {
		return nil
	}
	if f, ok := j.On.Expr.(*ast.FuncCallExpr); ok && f.FnName.L == parser.AsOfMarker && len(f.Args) == 1 {
		return f.Args[0]
	}
	return nil
}

// flipped gives the comparison with its operands swapped.
var flipped = map[string]string{">=": "<=", ">": "<", "<=": ">=", "<": ">"}

// planAsOf plans ASOF [LEFT] JOIN li, ri ON on (a spec.Join with AsOf):
// the condition must be at least one equality and exactly one inequality
// (>=, >, <=, <), each between an expression over the left input and one
// over the right. Operands that are not plain columns are computed by a
// projection on their side first, and a projection after the join restores
// the scope's columns.
func (p *Planner) planAsOf(node *spec.Node, li, ri int, lsc, rsc, sc *scope, on ast.ExprNode) (int, *scope, error) {
	const hint = "write ON a.key = b.key AND a.ts >= b.ts: at least one equality and exactly one inequality (>=, >, <=, <), each between a column of each side"
	if node.JoinKind != spec.InnerJoin && node.JoinKind != spec.LeftJoin {
		return 0, nil, pgerror.Unsupported("ASOF %s JOIN", node.JoinKind).WithHint("ASOF JOIN and ASOF LEFT JOIN are supported")
	}
	if p.plan.Nodes[li].Temporal || p.plan.Nodes[ri].Temporal {
		return 0, nil, pgerror.Unsupported("an ASOF join with a lookup table (FOR SYSTEM_TIME AS OF PROCTIME())")
	}
	b := &binder{p: p}
	cond, err := b.bind(on, sc, nil)
	if err != nil {
		return 0, nil, err
	}
	if cond, err = b.castTo(cond, types.TBool); err != nil {
		return 0, nil, err
	}
	nl, nr := len(lsc.cols), len(rsc.cols)
	var keys []keyExpr
	var ineq *keyExpr
	op := ""
	for _, c := range conjuncts(cond) {
		f, ok := c.(*spec.Func)
		if ok && len(f.Args) == 2 && (f.Name == "=" || flipped[f.Name] != "") {
			name := f.Name
			if k, ok := exprKey(f, nl); ok {
				if name == "=" {
					keys = append(keys, k)
					continue
				}
				if ineq != nil {
					return 0, nil, pgerror.Unsupported("ASOF JOIN requires exactly one inequality condition, not several").WithHint(hint)
				}
				if !sameSides(f.Args[0], nl) {
					name = flipped[name]
				}
				ineq, op = &k, name
				continue
			}
		}
		return 0, nil, pgerror.Unsupported("ASOF JOIN condition %s is not supported", c).
			WithDetail("an ASOF join's condition may hold only equalities and one inequality between the two sides").WithHint(hint)
	}
	if len(keys) == 0 {
		return 0, nil, pgerror.Unsupported("ASOF JOIN requires at least one equality condition").WithHint(hint)
	}
	if ineq == nil {
		return 0, nil, pgerror.Unsupported("ASOF JOIN requires exactly one inequality condition").WithHint(hint)
	}
	lx := make([]spec.Expr, 0, len(keys)+1)
	rx := make([]spec.Expr, 0, len(keys)+1)
	for _, k := range append(keys, *ineq) {
		lx, rx = append(lx, k.l), append(rx, k.r)
	}
	lcols, li2 := p.asofOperands(li, lx)
	rcols, ri2 := p.asofOperands(ri, rx)
	nl2 := len(p.plan.Nodes[li2].Cols)
	k := len(keys)
	t := ineq.l.Type()
	node.Inputs = []int{li2, ri2}
	node.LeftKeys, node.RightKeys = lcols[:k], rcols[:k]
	node.Cond = &spec.Func{Name: op, T: types.TBool, Args: []spec.Expr{
		&spec.ColRef{Idx: lcols[k], T: t}, &spec.ColRef{Idx: nl2 + rcols[k], T: t}}}
	node.AsOf = true
	node.Cols = append(append([]types.Column(nil), p.plan.Nodes[li2].Cols...), p.plan.Nodes[ri2].Cols...)
	j := p.plan.Add(node)
	if li2 == li && ri2 == ri {
		return j, sc, nil
	}
	out := make([]spec.Expr, 0, nl+nr)
	for i := 0; i < nl; i++ {
		out = append(out, &spec.ColRef{Idx: i, T: node.Cols[i].Type, Name: node.Cols[i].Name})
	}
	for i := 0; i < nr; i++ {
		c := node.Cols[nl2+i]
		out = append(out, &spec.ColRef{Idx: nl2 + i, T: c.Type, Name: c.Name})
	}
	return p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{j}, Exprs: out, Cols: sc.columns()}), sc, nil
}

// sameSides reports whether e reads the left input (columns below nl).
func sameSides(e spec.Expr, nl int) bool {
	lo, _, _ := colRange(e)
	return lo >= 0 && lo < nl
}

// asofOperands returns the columns of node in holding exprs: a plain column
// is itself; the others are appended by a projection, whose index is then
// returned instead of in.
func (p *Planner) asofOperands(in int, exprs []spec.Expr) ([]int, int) {
	cols := append([]types.Column(nil), p.plan.Nodes[in].Cols...)
	n := len(cols)
	idx := make([]int, len(exprs))
	var extra []spec.Expr
	for i, e := range exprs {
		if c, ok := e.(*spec.ColRef); ok {
			idx[i] = c.Idx
			continue
		}
		idx[i] = n + len(extra)
		extra = append(extra, e)
		cols = append(cols, types.Column{Name: "?asof?", Type: e.Type()})
	}
	if len(extra) == 0 {
		return idx, in
	}
	pe := make([]spec.Expr, 0, len(cols))
	for i := 0; i < n; i++ {
		pe = append(pe, &spec.ColRef{Idx: i, T: cols[i].Type, Name: cols[i].Name})
	}
	pe = append(pe, extra...)
	return idx, p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{in}, Exprs: pe, Cols: cols})
}
