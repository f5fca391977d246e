package planner

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Window functions: each call f(…) OVER (PARTITION BY … ORDER BY … [frame])
// becomes a Window node over the select's input that appends f's column;
// the select list then refers to that column. An outer filter rn <= N on
// a ROW_NUMBER/RANK/DENSE_RANK column of a derived table is pushed into
// the Window node as its Limit (streaming Top-N and dedup).

type windowCollector struct{ found *[]*ast.WindowFuncExpr }

func (c windowCollector) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.WindowFuncExpr:
		*c.found = append(*c.found, x)
		return n, true
	case *ast.SubqueryExpr:
		return n, true
	}
	return n, false
}

func (c windowCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }

var rankFuncs = map[string]bool{"row_number": true, "rank": true, "dense_rank": true}

// planWindows adds the Window nodes of the calls in exprs over node in
// (scope sc, aggregate hook h) and returns the new top node and a hook
// that binds each call to its column.
func (p *Planner) planWindows(b *binder, in int, sc *scope, h hook, exprs []ast.ExprNode) (int, hook, error) {
	var calls []*ast.WindowFuncExpr
	for _, e := range exprs {
		if e != nil {
			e.Accept(windowCollector{found: &calls})
		}
	}
	if len(calls) == 0 {
		return in, h, nil
	}
	cols := map[*ast.WindowFuncExpr]spec.Expr{}
	for _, wf := range calls {
		if wf.Spec.Name.O != "" || wf.Spec.Ref.O != "" {
			return 0, nil, pgerror.Unsupported("named windows")
		}
		name := strings.ToLower(wf.Name)
		cur := p.plan.Nodes[in].Cols
		var extra []spec.Expr
		colOf := func(e ast.ExprNode) (int, error) {
			x, err := b.bind(e, sc, h)
			if err != nil {
				return 0, err
			}
			if r, ok := x.(*spec.ColRef); ok {
				return r.Idx, nil
			}
			extra = append(extra, x)
			return len(cur) + len(extra) - 1, nil
		}
		node := &spec.Node{Kind: spec.Window, Limit: -1}
		if pb := wf.Spec.PartitionBy; pb != nil {
			for _, it := range pb.Items {
				c, err := colOf(it.Expr)
				if err != nil {
					return 0, nil, err
				}
				node.PartitionBy = append(node.PartitionBy, c)
			}
		}
		if ob := wf.Spec.OrderBy; ob != nil {
			for _, it := range ob.Items {
				c, err := colOf(it.Expr)
				if err != nil {
					return 0, nil, err
				}
				node.Order = append(node.Order, p.orderItem(c, it))
			}
		}
		call := spec.WindowCall{Func: name, Arg: -1, Preceding: -1}
		switch {
		case rankFuncs[name]:
			if len(wf.Args) > 0 {
				return 0, nil, pgerror.New(pgcode.UndefinedFunction, "function %s takes no arguments", name)
			}
			call.T = types.TInt8
		case name == "count" || name == "sum" || name == "avg" || name == "min" || name == "max":
			if wf.Distinct {
				return 0, nil, pgerror.Unsupported("DISTINCT in a window aggregate")
			}
			if len(wf.Args) != 1 {
				return 0, nil, pgerror.New(pgcode.UndefinedFunction, "function %s needs one argument", name)
			}
			if name == "count" {
				if _, ok := wf.Args[0].(ast.ValueExpr); ok {
					call.Func = "count_star"
					call.T = types.TInt8
					break
				}
			}
			c, err := colOf(wf.Args[0])
			if err != nil {
				return 0, nil, err
			}
			call.Arg = c
			var at types.T
			if c < len(cur) {
				at = cur[c].Type
			} else {
				at = extra[c-len(cur)].Type()
			}
			if call.T, err = aggType(name, at); err != nil {
				return 0, nil, err
			}
			if f := wf.Spec.Frame; f != nil {
				if err := windowFrame(f, &call); err != nil {
					return 0, nil, err
				}
			}
		default:
			return 0, nil, pgerror.Unsupported("window function %s", name)
		}
		if len(extra) > 0 {
			pe := make([]spec.Expr, 0, len(cur)+len(extra))
			pc := append([]types.Column(nil), cur...)
			for i, c := range cur {
				pe = append(pe, &spec.ColRef{Idx: i, T: c.Type, Name: c.Name})
			}
			for _, x := range extra {
				pe = append(pe, x)
				pc = append(pc, types.Column{Name: "?window?", Type: x.Type()})
			}
			in = p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{in}, Exprs: pe, Cols: pc})
			cur = pc
		}
		node.WinFuncs = []spec.WindowCall{call}
		node.Inputs = []int{in}
		node.Cols = append(append([]types.Column(nil), cur...), types.Column{Name: name, Type: call.T})
		if p.Streaming {
			node.InputAppendOnly = p.AppendOnlyRel != nil && AppendOnly(p.plan, in, p.AppendOnlyRel)
		}
		in = p.plan.Add(node)
		cols[wf] = &spec.ColRef{Idx: len(node.Cols) - 1, T: call.T, Name: name}
	}
	return in, func(e ast.ExprNode) (spec.Expr, bool, error) {
		if wf, ok := e.(*ast.WindowFuncExpr); ok {
			if x, ok := cols[wf]; ok {
				return x, true, nil
			}
		}
		if h != nil {
			return h(e)
		}
		return nil, false, nil
	}, nil
}

// windowFrame reads ROWS BETWEEN n PRECEDING AND CURRENT ROW (or the
// default RANGE frame).
func windowFrame(f *ast.FrameClause, call *spec.WindowCall) error {
	start, end := f.Extent.Start, f.Extent.End
	if end.Type != ast.CurrentRow {
		return pgerror.Unsupported("window frames ending after the current row")
	}
	if f.Type == ast.Ranges {
		if start.Type == ast.Preceding && start.UnBounded {
			return nil // the default frame
		}
		return pgerror.Unsupported("RANGE frames other than UNBOUNDED PRECEDING")
	}
	if f.Type != ast.Rows {
		return pgerror.Unsupported("GROUPS frames")
	}
	call.Rows = true
	switch {
	case start.Type == ast.CurrentRow:
		call.Preceding = 0
	case start.Type == ast.Preceding && start.UnBounded:
		call.Preceding = -1
	case start.Type == ast.Preceding:
		n, ok := intLiteral(start.Expr)
		if !ok || n < 0 {
			return pgerror.New(pgcode.InvalidParameterValue, "frame offset must be a non-negative integer constant")
		}
		call.Preceding = n
	default:
		return pgerror.Unsupported("window frames starting after the current row")
	}
	return nil
}

// pushTopN pushes conjuncts rn <= N of pred, over node in, into the Window
// node computing rn.
func (p *Planner) pushTopN(in int, pred spec.Expr) {
	proj := p.plan.Nodes[in]
	if proj.Kind != spec.Project || len(proj.Inputs) != 1 {
		return
	}
	win := p.plan.Nodes[proj.Inputs[0]]
	if win.Kind != spec.Window || win.Limit >= 0 || !rankFuncs[win.WinFuncs[0].Func] {
		return
	}
	for _, c := range conjuncts(pred) {
		f, ok := c.(*spec.Func)
		if !ok || len(f.Args) != 2 {
			continue
		}
		op := f.Name
		l, r := f.Args[0], f.Args[1]
		if _, ok := l.(*spec.Const); ok {
			l, r = r, l
			op = map[string]string{"<=": ">=", ">=": "<=", "<": ">", ">": "<", "=": "="}[op]
		}
		ref, ok := l.(*spec.ColRef)
		k, ok2 := r.(*spec.Const)
		if !ok || !ok2 || k.D.K != types.KInt || ref.Idx >= len(proj.Exprs) {
			continue
		}
		src, ok := proj.Exprs[ref.Idx].(*spec.ColRef)
		if !ok || src.Idx != len(win.Cols)-1 {
			continue
		}
		n := k.D.I
		switch op {
		case "<=":
		case "<":
			n--
		case "=":
			if n != 1 {
				continue
			}
		default:
			continue
		}
		if n < 0 {
			n = 0
		}
		win.Limit, win.LimitFunc = n, 0
		return
	}
}
