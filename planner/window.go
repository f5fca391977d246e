package planner

import (
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

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

type windowCollector struct {
	found   *[]*ast.WindowFuncExpr
	exclude map[*ast.WindowFuncExpr]string
}

func (c windowCollector) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.WindowFuncExpr:
		*c.found = append(*c.found, x)
		return n, true
	case *ast.FuncCallExpr:
		// __pg_exclude(call OVER (...), 'kind'): the dialect layer's
		// spelling of a frame's EXCLUDE clause.
		if x.FnName.L == "__pg_exclude" && len(x.Args) == 2 {
			if wf, ok := x.Args[0].(*ast.WindowFuncExpr); ok {
				*c.found = append(*c.found, wf)
				c.exclude[wf], _ = stringLiteral(x.Args[1])
				return n, true
			}
		}
	case *ast.SubqueryExpr:
		return n, true
	}
	return n, false
}

func (c windowCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }

var rankFuncs = map[string]bool{"row_number": true, "rank": true, "dense_rank": true}

// windowAggs are the aggregates allowed as window functions.
var windowAggs = map[string]bool{"count": true, "sum": true, "avg": true, "min": true, "max": true}

// resolvedWindow is a window spec with its named-window references
// resolved (PostgreSQL's rules: OVER w uses w as it is; OVER (w …) copies
// w's PARTITION BY and ORDER BY, adds an ORDER BY only if w has none, and
// may not copy a frame).
type resolvedWindow struct {
	partition *ast.PartitionByClause
	order     *ast.OrderByClause
	frame     *ast.FrameClause
}

func resolveWindow(ws ast.WindowSpec, named map[string]*ast.WindowSpec, depth int) (resolvedWindow, error) {
	if depth > len(named)+1 {
		return resolvedWindow{}, pgerror.New(pgcode.WindowingError, "window references form a cycle")
	}
	if ws.OnlyAlias {
		def, ok := named[ws.Name.L]
		if !ok {
			return resolvedWindow{}, pgerror.New(pgcode.UndefinedObject, "window %q does not exist", ws.Name.O)
		}
		return resolveWindow(*def, named, depth+1)
	}
	rw := resolvedWindow{partition: ws.PartitionBy, order: ws.OrderBy, frame: ws.Frame}
	if ws.Ref.O == "" {
		return rw, nil
	}
	def, ok := named[ws.Ref.L]
	if !ok {
		return resolvedWindow{}, pgerror.New(pgcode.UndefinedObject, "window %q does not exist", ws.Ref.O)
	}
	base, err := resolveWindow(*def, named, depth+1)
	if err != nil {
		return resolvedWindow{}, err
	}
	if ws.PartitionBy != nil {
		return resolvedWindow{}, pgerror.New(pgcode.WindowingError, "cannot override PARTITION BY clause of window %q", ws.Ref.O)
	}
	if ws.OrderBy != nil && base.order != nil {
		return resolvedWindow{}, pgerror.New(pgcode.WindowingError, "cannot override ORDER BY clause of window %q", ws.Ref.O)
	}
	if base.frame != nil {
		return resolvedWindow{}, pgerror.New(pgcode.WindowingError, "cannot copy window %q because it has a frame clause", ws.Ref.O)
	}
	rw.partition = base.partition
	if rw.order == nil {
		rw.order = base.order
	}
	return rw, nil
}

// planWindows adds the Window nodes of the calls in exprs over node in
// (scope sc, aggregate hook h; defs the query's WINDOW clause) and returns
// the new top node and a hook that binds each call to its column.
func (p *Planner) planWindows(b *binder, in int, sc *scope, h hook, exprs []ast.ExprNode, defs []ast.WindowSpec) (int, hook, error) {
	var calls []*ast.WindowFuncExpr
	exclude := map[*ast.WindowFuncExpr]string{}
	for _, e := range exprs {
		if e != nil {
			e.Accept(windowCollector{found: &calls, exclude: exclude})
		}
	}
	named := map[string]*ast.WindowSpec{}
	for i := range defs {
		if _, dup := named[defs[i].Name.L]; dup {
			return 0, nil, pgerror.New(pgcode.WindowingError, "window %q is already defined", defs[i].Name.O)
		}
		named[defs[i].Name.L] = &defs[i]
	}
	for i := range defs {
		if _, err := resolveWindow(defs[i], named, 0); err != nil {
			return 0, nil, err
		}
	}
	if len(calls) == 0 {
		return in, h, nil
	}
	cols := map[*ast.WindowFuncExpr]spec.Expr{}
	for _, wf := range calls {
		ws, err := resolveWindow(wf.Spec, named, 0)
		if err != nil {
			return 0, nil, err
		}
		name := strings.ToLower(wf.Name)
		cur := p.plan.Nodes[in].Cols
		var extra []spec.Expr
		addCol := func(x spec.Expr) int {
			if r, ok := x.(*spec.ColRef); ok {
				return r.Idx
			}
			extra = append(extra, x)
			return len(cur) + len(extra) - 1
		}
		colOf := func(e ast.ExprNode) (int, error) {
			x, err := b.bind(e, sc, h)
			if err != nil {
				return 0, err
			}
			return addCol(x), nil
		}
		typeOf := func(c int) types.T {
			if c < len(cur) {
				return cur[c].Type
			}
			return extra[c-len(cur)].Type()
		}
		node := &spec.Node{Kind: spec.Window, Limit: -1}
		if pb := ws.partition; pb != nil {
			for _, it := range pb.Items {
				c, err := colOf(it.Expr)
				if err != nil {
					return 0, nil, err
				}
				node.PartitionBy = append(node.PartitionBy, c)
			}
		}
		if ob := ws.order; ob != nil {
			for _, it := range ob.Items {
				c, err := colOf(it.Expr)
				if err != nil {
					return 0, nil, err
				}
				node.Order = append(node.Order, p.orderItem(c, it))
			}
		}
		call := spec.WindowCall{Func: name, Arg: -1, Preceding: -1}
		// constArg binds argument e, which must be a positive integer
		// constant (ntile's and nth_value's).
		constArg := func(e ast.ExprNode, code pgcode.Code) (int, error) {
			x, err := b.bind(e, sc, h)
			if err != nil {
				return 0, err
			}
			if x, err = b.castTo(x, types.TInt8); err != nil {
				return 0, err
			}
			k, ok := x.(*spec.Const)
			if !ok {
				return 0, pgerror.Unsupported("a non-constant argument of %s", name).
					WithHint("Pass a constant integer.")
			}
			if !k.D.IsNull() && k.D.I <= 0 {
				return 0, pgerror.New(code, "argument of %s must be greater than zero", name)
			}
			return addCol(x), nil
		}
		nargs := func(lo, hi int) error {
			if len(wf.Args) < lo || len(wf.Args) > hi {
				return pgerror.New(pgcode.UndefinedFunction, "function %s with %d arguments does not exist", name, len(wf.Args)).
					WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
			}
			return nil
		}
		if wf.Distinct && !windowAggs[name] {
			return 0, nil, pgerror.New(pgcode.WrongObjectType, "DISTINCT specified, but %s is not an aggregate function", name)
		}
		framed := false // the frame applies
		switch {
		case rankFuncs[name]:
			if len(wf.Args) > 0 {
				return 0, nil, pgerror.New(pgcode.UndefinedFunction, "function %s takes no arguments", name)
			}
			call.T = types.TInt8
		case name == "percent_rank" || name == "cume_dist":
			if err := nargs(0, 0); err != nil {
				return 0, nil, err
			}
			call.T = types.TFloat8
		case name == "ntile":
			if err := nargs(1, 1); err != nil {
				return 0, nil, err
			}
			c, err := constArg(wf.Args[0], pgcode.Code("22014"))
			if err != nil {
				return 0, nil, err
			}
			call.Args = []int{c}
			call.T = types.TInt4
		case name == "lag" || name == "lead":
			if err := nargs(1, 3); err != nil {
				return 0, nil, err
			}
			x, err := b.bind(wf.Args[0], sc, h)
			if err != nil {
				return 0, nil, err
			}
			var def spec.Expr
			if len(wf.Args) > 2 {
				// lag(anycompatible, int, anycompatible): the value and
				// the default take their common type.
				if def, err = b.bind(wf.Args[2], sc, h); err != nil {
					return 0, nil, err
				}
				u, err := b.call("coalesce", []spec.Expr{x, def})
				if err != nil {
					return 0, nil, err
				}
				if x, err = b.castTo(x, u.Type()); err != nil {
					return 0, nil, err
				}
				if def, err = b.castTo(def, u.Type()); err != nil {
					return 0, nil, err
				}
			}
			call.T = x.Type()
			call.Arg = addCol(x)
			if len(wf.Args) > 1 {
				off, err := b.bind(wf.Args[1], sc, h)
				if err != nil {
					return 0, nil, err
				}
				if off, err = b.castTo(off, types.TInt8); err != nil {
					return 0, nil, err
				}
				call.Args = append(call.Args, addCol(off))
			}
			if def != nil {
				call.Args = append(call.Args, addCol(def))
			}
		case name == "first_value" || name == "last_value" || name == "nth_value":
			if name == "nth_value" {
				if err := nargs(2, 2); err != nil {
					return 0, nil, err
				}
			} else if err := nargs(1, 1); err != nil {
				return 0, nil, err
			}
			x, err := b.bind(wf.Args[0], sc, h)
			if err != nil {
				return 0, nil, err
			}
			call.T = x.Type()
			call.Arg = addCol(x)
			if name == "nth_value" {
				c, err := constArg(wf.Args[1], pgcode.Code("22016"))
				if err != nil {
					return 0, nil, err
				}
				call.Args = []int{c}
			}
			framed = true
		case windowAggs[name]:
			if wf.Distinct {
				return 0, nil, pgerror.Unsupported("DISTINCT in a window aggregate")
			}
			if len(wf.Args) != 1 {
				return 0, nil, pgerror.New(pgcode.UndefinedFunction, "function %s needs one argument", name)
			}
			framed = true
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
			if call.T, err = aggType(name, typeOf(c)); err != nil {
				return 0, nil, err
			}
		default:
			return 0, nil, pgerror.Unsupported("window function %s", name).
				WithHint("Supported: row_number, rank, dense_rank, percent_rank, cume_dist, ntile, lag, lead, first_value, last_value, nth_value, count, sum, avg, min, max.")
		}
		if ws.frame != nil || exclude[wf] != "" {
			fr, err := p.windowFrame(ws, exclude[wf], node.Order, b, sc, h, addCol)
			if err != nil {
				return 0, nil, err
			}
			if framed {
				setFrame(&call, fr)
			}
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
		switch x := e.(type) {
		case *ast.WindowFuncExpr:
			if c, ok := cols[x]; ok {
				return c, true, nil
			}
		case *ast.FuncCallExpr:
			if x.FnName.L == "__pg_exclude" && len(x.Args) == 2 {
				if wf, ok := x.Args[0].(*ast.WindowFuncExpr); ok {
					if c, ok := cols[wf]; ok {
						return c, true, nil
					}
				}
			}
		}
		if h != nil {
			return h(e)
		}
		return nil, false, nil
	}, nil
}

// setFrame gives call its frame, in the legacy fields when they can hold
// it (so that plans of the frames they already served encode as before).
func setFrame(call *spec.WindowCall, fr spec.WindowFrame) {
	if fr.Exclude == spec.ExcludeNoOthers && fr.End.Kind == spec.BoundCurrentRow && !valueFunc(call.Func) {
		switch {
		case fr.Mode == spec.FrameRange && fr.Start.Kind == spec.BoundUnboundedPreceding:
			return // the default frame
		case fr.Mode == spec.FrameRows && fr.Start.Kind == spec.BoundUnboundedPreceding:
			call.Rows, call.Preceding = true, -1
			return
		case fr.Mode == spec.FrameRows && fr.Start.Kind == spec.BoundPreceding:
			call.Rows, call.Preceding = true, fr.Start.Offset
			return
		case fr.Mode == spec.FrameRows && fr.Start.Kind == spec.BoundCurrentRow:
			call.Rows, call.Preceding = true, 0
			return
		}
	}
	call.Frame = &fr
}

func valueFunc(f string) bool {
	return f == "first_value" || f == "last_value" || f == "nth_value"
}

// windowFrame reads ROWS | RANGE | GROUPS BETWEEN start AND end [EXCLUDE
// …] (a frame given only as EXCLUDE is the default frame with it). A RANGE
// offset bound becomes a column (addCol) holding the order key minus or
// plus the offset, in the order's direction.
func (p *Planner) windowFrame(ws resolvedWindow, exclude string, order []spec.OrderItem, b *binder, sc *scope, h hook, addCol func(spec.Expr) int) (spec.WindowFrame, error) {
	fr := spec.WindowFrame{Mode: spec.FrameRange, Start: spec.FrameBound{Kind: spec.BoundUnboundedPreceding},
		End: spec.FrameBound{Kind: spec.BoundCurrentRow}}
	switch exclude {
	case "current row":
		fr.Exclude = spec.ExcludeCurrentRow
	case "group":
		fr.Exclude = spec.ExcludeGroup
	case "ties":
		fr.Exclude = spec.ExcludeTies
	}
	f := ws.frame
	if f == nil {
		if len(order) == 0 {
			fr.End.Kind = spec.BoundUnboundedFollowing
		}
		return fr, nil
	}
	switch f.Type {
	case ast.Rows:
		fr.Mode = spec.FrameRows
	case ast.Ranges:
		fr.Mode = spec.FrameRange
	default:
		fr.Mode = spec.FrameGroups
		if len(order) == 0 {
			return fr, pgerror.New(pgcode.WindowingError, "GROUPS mode requires an ORDER BY clause")
		}
	}
	kind := func(fb ast.FrameBound) int {
		switch {
		case fb.Type == ast.CurrentRow:
			return spec.BoundCurrentRow
		case fb.Type == ast.Preceding && fb.UnBounded:
			return spec.BoundUnboundedPreceding
		case fb.Type == ast.Preceding:
			return spec.BoundPreceding
		case fb.UnBounded:
			return spec.BoundUnboundedFollowing
		}
		return spec.BoundFollowing
	}
	fr.Start.Kind, fr.End.Kind = kind(f.Extent.Start), kind(f.Extent.End)
	switch {
	case fr.Start.Kind == spec.BoundUnboundedFollowing:
		return fr, pgerror.New(pgcode.WindowingError, "frame start cannot be UNBOUNDED FOLLOWING")
	case fr.End.Kind == spec.BoundUnboundedPreceding:
		return fr, pgerror.New(pgcode.WindowingError, "frame end cannot be UNBOUNDED PRECEDING")
	case fr.Start.Kind == spec.BoundCurrentRow && fr.End.Kind == spec.BoundPreceding:
		return fr, pgerror.New(pgcode.WindowingError, "frame starting from current row cannot have preceding rows")
	case fr.Start.Kind == spec.BoundFollowing && (fr.End.Kind == spec.BoundPreceding || fr.End.Kind == spec.BoundCurrentRow):
		return fr, pgerror.New(pgcode.WindowingError, "frame starting from following row cannot have preceding rows")
	}
	for k, fb := range []ast.FrameBound{f.Extent.Start, f.Extent.End} {
		bd := &fr.Start
		which := "starting"
		if k == 1 {
			bd, which = &fr.End, "ending"
		}
		if bd.Kind != spec.BoundPreceding && bd.Kind != spec.BoundFollowing {
			continue
		}
		if fr.Mode != spec.FrameRange {
			x, err := b.bind(fb.Expr, sc, h)
			if err != nil {
				return fr, err
			}
			if x, err = b.castTo(x, types.TInt8); err != nil {
				return fr, err
			}
			c, ok := x.(*spec.Const)
			switch {
			case !ok:
				return fr, pgerror.Unsupported("a non-constant frame offset").WithHint("Write the offset as an integer constant.")
			case c.D.IsNull():
				return fr, pgerror.New(pgcode.Code("22004"), "frame %s offset must not be null", which)
			case c.D.I < 0:
				return fr, pgerror.New(pgcode.Code("22013"), "frame %s offset must not be negative", which)
			}
			bd.Offset = c.D.I
			continue
		}
		if len(order) != 1 {
			return fr, pgerror.New(pgcode.WindowingError, "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column")
		}
		off, err := p.frameOffset(fb, b, sc, h)
		if err != nil {
			return fr, err
		}
		key := ws.order.Items[0].Expr
		// The bound's key: key - offset before the row in ascending order.
		op := opcode.Minus
		if (bd.Kind == spec.BoundFollowing) != order[0].Desc {
			op = opcode.Plus
		}
		x, err := b.bind(&ast.BinaryOperationExpr{Op: op, L: key, R: &boundExpr{x: off}}, sc, h)
		if err != nil {
			return fr, err
		}
		kt, err := b.bind(key, sc, h)
		if err != nil {
			return fr, err
		}
		if x.Type().Fam != kt.Type().Fam {
			return fr, pgerror.Unsupported("RANGE with offset PRECEDING/FOLLOWING for column type %s and offset type %s", kt.Type(), off.Type()).
				WithHint("Use an offset of the ORDER BY column's type (an interval for timestamps).")
		}
		bd.Col = addCol(x)
	}
	return fr, nil
}

// frameOffset binds a RANGE bound's offset: a constant, not NULL and not
// negative (INTERVAL 'n' UNIT arrives as TiDB's Expr and Unit).
func (p *Planner) frameOffset(fb ast.FrameBound, b *binder, sc *scope, h hook) (spec.Expr, error) {
	var x spec.Expr
	if fb.Unit != ast.TimeUnitInvalid {
		s, ok := stringLiteral(fb.Expr)
		if !ok {
			if n, ok2 := intLiteral(fb.Expr); ok2 {
				s, ok = strconv.FormatInt(n, 10), true
			}
		}
		if !ok {
			return nil, pgerror.Unsupported("this INTERVAL as a frame offset")
		}
		d, err := types.ParseText(s+" "+strings.ToLower(fb.Unit.String()), types.TInterval)
		if err != nil {
			return nil, err
		}
		x = &spec.Const{D: d, T: types.TInterval}
	} else {
		var err error
		if x, err = b.bind(fb.Expr, sc, h); err != nil {
			return nil, err
		}
	}
	c, ok := x.(*spec.Const)
	switch {
	case !ok:
		return nil, pgerror.Unsupported("a non-constant frame offset").WithHint("Write the offset as a constant.")
	case c.D.IsNull():
		return nil, pgerror.New(pgcode.Code("22004"), "frame starting offset must not be null")
	}
	neg := false
	switch c.D.K {
	case types.KInt:
		neg = c.D.I < 0
	case types.KFloat:
		neg = c.D.Float() < 0
	case types.KDecimal:
		neg = c.D.I < 0
	case types.KInterval:
		neg = c.D.I < 0 || c.D.X < 0 || c.D.M < 0
	}
	if neg {
		return nil, pgerror.New(pgcode.Code("22013"), "invalid preceding or following size in window function")
	}
	return x, nil
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
