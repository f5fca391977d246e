package planner

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"sluice/exec/eval"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Placeholder prefixes the dialect layer writes for TUMBLE and HOP in FROM.
const (
	tumblePrefix = "__pg_tumble__"
	hopPrefix    = "__pg_hop__"
)

// isTimeWindow reports whether a FROM item is TUMBLE(...) or HOP(...).
func isTimeWindow(tn *ast.TableName) bool {
	return tn.Schema.O == "" && (strings.HasPrefix(tn.Name.L, tumblePrefix) || strings.HasPrefix(tn.Name.L, hopPrefix))
}

// planTimeWindow plans TUMBLE(rel, col, size [, offset]) or HOP(rel, col,
// slide, size [, offset]): the relation's columns followed by window_start
// and window_end, of col's type. Without an alias the columns are
// qualified by the relation's name (bid.auction), as in RisingWave.
func (p *Planner) planTimeWindow(tn *ast.TableName, alias string) (int, *scope, error) {
	tf, ok := p.TableFuncs[tn.Name.O]
	if !ok {
		return 0, nil, pgerror.Unsupported("table function %s", tn.Name.O)
	}
	hop := tf.Name == "hop"
	fn := strings.ToUpper(tf.Name)
	nargs := 3
	if hop {
		nargs = 4
	}
	if len(tf.Args) != nargs && len(tf.Args) != nargs+1 {
		return 0, nil, pgerror.New(pgcode.UndefinedFunction, "function %s with %d arguments does not exist", strings.ToLower(fn), len(tf.Args)).
			WithHint("%s(relation, time column, %s[, offset])", fn, map[bool]string{false: "size", true: "slide, size"}[hop])
	}
	rel, ok := tf.Args[0].(*ast.ColumnNameExpr)
	if !ok || rel.Name.Schema.O != "" {
		return 0, nil, pgerror.New(pgcode.InvalidParameterValue, "the first argument of %s must name a relation", fn)
	}
	if alias == "" || alias == tn.Name.O {
		alias = rel.Name.Name.O
	}
	in, sc, err := p.planTable(&ast.TableName{Schema: rel.Name.Table, Name: rel.Name.Name}, alias)
	if err != nil {
		return 0, nil, err
	}
	cn, ok := tf.Args[1].(*ast.ColumnNameExpr)
	if !ok {
		return 0, nil, pgerror.New(pgcode.InvalidParameterValue, "the second argument of %s must be a column", fn)
	}
	col, err := sc.resolve(cn.Name.Table.O, cn.Name.Name.O)
	if err != nil {
		return 0, nil, err
	}
	t := sc.cols[col].t
	if t.Fam != types.Timestamp && t.Fam != types.TimestampTZ {
		return 0, nil, pgerror.New(pgcode.DatatypeMismatch, "the time column of %s must be timestamp or timestamptz, %s is %s", fn, sc.cols[col].name, t)
	}
	var ivs []int64
	for _, a := range tf.Args[2:] {
		us, err := p.constInterval(a, fn)
		if err != nil {
			return 0, nil, err
		}
		ivs = append(ivs, us)
	}
	w := &spec.TimeWindowSpec{Hop: hop, Col: col}
	if hop {
		w.Slide, w.Size = ivs[0], ivs[1]
		ivs = ivs[2:]
	} else {
		w.Size, w.Slide = ivs[0], ivs[0]
		ivs = ivs[1:]
	}
	if len(ivs) > 0 {
		w.Offset = ivs[0]
	}
	if w.Size <= 0 || w.Slide <= 0 {
		return 0, nil, pgerror.New(pgcode.InvalidParameterValue, "the window size and slide of %s must be positive", fn)
	}
	if w.Size%w.Slide != 0 {
		return 0, nil, pgerror.New(pgcode.InvalidParameterValue, "the window size of HOP must be a multiple of its slide")
	}
	if w.Offset < 0 || w.Offset >= w.Slide {
		return 0, nil, pgerror.New(pgcode.InvalidParameterValue, "the offset of %s must be at least 0 and below the window %s", fn,
			map[bool]string{false: "size", true: "slide"}[hop])
	}
	out := &scope{cols: append([]scopeCol(nil), sc.cols...)}
	nin := len(sc.cols)
	out.cols = append(out.cols, scopeCol{table: alias, name: "window_start", t: t}, scopeCol{table: alias, name: "window_end", t: t})
	idx := p.plan.Add(&spec.Node{Kind: spec.TimeWindow, Inputs: []int{in}, TimeWin: w, Cols: out.columns()})
	if key := p.keys[in]; key != nil {
		if hop {
			// A row is in several windows: its key and the window are unique.
			key = append(append([]int(nil), key...), nin)
		}
		p.keys[idx] = key
	}
	return idx, out, nil
}

// constInterval evaluates a constant INTERVAL argument of fn into
// microseconds (a day is 24 hours; months are refused: their length
// varies).
func (p *Planner) constInterval(e ast.ExprNode, fn string) (int64, error) {
	b := &binder{p: p}
	x, err := b.bind(e, &scope{}, nil)
	if err != nil {
		return 0, err
	}
	if x, err = b.castTo(x, types.TInterval); err != nil {
		return 0, err
	}
	f, err := eval.Compile(x, nil)
	if err != nil {
		return 0, err
	}
	d, err := f(nil)
	if err != nil {
		return 0, err
	}
	if d.K != types.KInterval {
		return 0, pgerror.New(pgcode.InvalidParameterValue, "the window arguments of %s must be intervals", fn)
	}
	if d.M != 0 {
		return 0, pgerror.Unsupported("%s with an interval in months (their length varies)", fn)
	}
	return int64(d.X)*86_400_000_000 + d.I, nil
}

// BindWatermark binds a source's `WATERMARK FOR col AS expr`, where expr
// is col or col - <constant interval>, over the source's columns.
func (p *Planner) BindWatermark(cols []types.Column, col string, e ast.ExprNode) (*spec.WatermarkSpec, error) {
	sc := &scope{}
	for _, c := range cols {
		sc.cols = append(sc.cols, scopeCol{name: c.Name, t: c.Type})
	}
	idx, err := sc.resolve("", col)
	if err != nil {
		return nil, err
	}
	if t := cols[idx].Type; t.Fam != types.Timestamp && t.Fam != types.TimestampTZ {
		return nil, pgerror.New(pgcode.DatatypeMismatch, "the watermark column %q must be timestamp or timestamptz, not %s", col, t)
	}
	for {
		pe, ok := e.(*ast.ParenthesesExpr)
		if !ok {
			break
		}
		e = pe.Expr
	}
	isCol := func(x ast.ExprNode) bool {
		b := &binder{p: p}
		r, err := b.bind(x, sc, nil)
		if err != nil {
			return false
		}
		ref, ok := r.(*spec.ColRef)
		return ok && ref.Idx == idx
	}
	w := &spec.WatermarkSpec{Col: idx}
	switch x := e.(type) {
	case *ast.ColumnNameExpr:
		if isCol(x) {
			return w, nil
		}
	case *ast.BinaryOperationExpr:
		if x.Op == opcode.Minus && isCol(x.L) {
			d, err := p.constInterval(x.R, "WATERMARK")
			if err != nil {
				return nil, err
			}
			if d < 0 {
				return nil, pgerror.New(pgcode.InvalidParameterValue, "the watermark delay must not be negative")
			}
			w.Delay = d
			return w, nil
		}
	}
	return nil, pgerror.Unsupported("WATERMARK expression other than %s - INTERVAL '…'", col)
}

// watermarkCols returns the output columns of node i that carry a
// watermark at run time: the same rules as the operators' OnWatermark.
func watermarkCols(plan *spec.Plan, i int) map[int]bool {
	n := plan.Nodes[i]
	out := map[int]bool{}
	input := func(k int) map[int]bool { return watermarkCols(plan, n.Inputs[k]) }
	switch n.Kind {
	case spec.SourceRead:
		if n.Source != nil && n.Source.Watermark != nil {
			out[n.Source.Watermark.Col] = true
		}
	case spec.Filter:
		return input(0)
	case spec.Project:
		in := input(0)
		for j, e := range n.Exprs {
			if r, ok := e.(*spec.ColRef); ok && in[r.Idx] {
				out[j] = true
			}
		}
	case spec.TimeWindow:
		out = input(0)
		if out[n.TimeWin.Col] {
			nin := len(plan.Nodes[n.Inputs[0]].Cols)
			out[nin], out[nin+1] = true, true
		}
	case spec.Agg:
		in := input(0)
		for gi, c := range n.GroupBy {
			if in[c] {
				out[gi] = true
			}
		}
	case spec.Join:
		if n.AsOf {
			break // the ASOF join passes no watermark on
		}
		l, r := input(0), input(1)
		nl := len(plan.Nodes[n.Inputs[0]].Cols)
		for k := range n.LeftKeys {
			if l[n.LeftKeys[k]] && r[n.RightKeys[k]] {
				out[n.LeftKeys[k]], out[nl+n.RightKeys[k]] = true, true
			}
		}
		if n.JoinOut != nil {
			all := out
			out = map[int]bool{}
			for j, c := range n.JoinOut {
				if all[c] {
					out[j] = true
				}
			}
		}
	case spec.Window:
		// A window that emits on window close passes its time column's
		// watermark on (ops.eowcGate).
		if n.EOWC && len(n.Order) > 0 && input(0)[n.Order[0].Col] {
			out[n.Order[0].Col] = true
		}
	case spec.Union:
		out = input(0)
		for k := 1; k < len(n.Inputs); k++ {
			in := input(k)
			for c := range out {
				if !in[c] {
					delete(out, c)
				}
			}
		}
	}
	return out
}

// markEOWC makes the aggregation that computes the view's rows (below
// projections and HAVING filters only) EMIT ON WINDOW CLOSE. It needs a
// group column with a watermark, which closes the groups.
func (p *Planner) markEOWC(root int) error {
	i := root
	for p.plan.Nodes[i].Kind == spec.Project || p.plan.Nodes[i].Kind == spec.Filter {
		i = p.plan.Nodes[i].Inputs[0]
	}
	n := p.plan.Nodes[i]
	if n.Kind == spec.Agg && len(n.GroupBy) > 0 {
		wm := watermarkCols(p.plan, n.Inputs[0])
		for _, c := range n.GroupBy {
			if wm[c] {
				n.EOWC = true
				return nil
			}
		}
	}
	if n.Kind == spec.Join {
		return p.markJoinEOWC(i)
	}
	if n.Kind == spec.Window {
		// Each window specification is one Window node: the chain of
		// them (and the projections between) closes bottom-up, each
		// passing its final rows and the watermark up to the next.
		var chain []*spec.Node
		for j := i; p.plan.Nodes[j].Kind == spec.Window || p.plan.Nodes[j].Kind == spec.Project; j = p.plan.Nodes[j].Inputs[0] {
			if p.plan.Nodes[j].Kind == spec.Window {
				chain = append(chain, p.plan.Nodes[j])
			}
		}
		for k := len(chain) - 1; k >= 0; k-- {
			if err := p.markWindowEOWC(chain[k]); err != nil {
				return err
			}
		}
		return nil
	}
	return pgerror.Unsupported("EMIT ON WINDOW CLOSE needs the query to be a GROUP BY on a column with a watermark, or window functions ordered by one").
		WithHint("group by window_start or window_end of TUMBLE or HOP over a source with a WATERMARK")
}

// markWindowEOWC makes window node n EMIT ON WINDOW CLOSE (ops.eowcGate):
// its first ORDER BY column, ascending, carries a watermark, its input is
// append-only, and every call's value depends on no row after the
// current row's peers (spec.WindowCall.Backward), so a row the watermark has
// passed is final.
func (p *Planner) markWindowEOWC(n *spec.Node) error {
	hint := "order the window by a column with a WATERMARK (ORDER BY ts), over an append-only source"
	if len(n.Order) == 0 || n.Order[0].Desc || !watermarkCols(p.plan, n.Inputs[0])[n.Order[0].Col] {
		return pgerror.Unsupported("EMIT ON WINDOW CLOSE with window functions needs their first ORDER BY column, ascending, to have a watermark").WithHint("%s", hint)
	}
	rels := p.AppendOnlyRel
	if rels == nil {
		rels = func(uint64) bool { return false } // no catalog: no relation is known append-only
	}
	if !AppendOnly(p.plan, n.Inputs[0], rels) {
		return pgerror.Unsupported("EMIT ON WINDOW CLOSE with window functions needs an append-only input").WithHint("%s", hint)
	}
	if n.Limit >= 0 {
		return pgerror.Unsupported("EMIT ON WINDOW CLOSE with a window Top-N (a filter on row_number or rank) is not supported")
	}
	for _, f := range n.WinFuncs {
		if !f.Backward() {
			return pgerror.Unsupported("EMIT ON WINDOW CLOSE with %s is not supported: its value depends on rows after the current one", windowCallName(f)).
				WithHint("use functions whose frame ends at the current row (row_number, rank, lag, first_value, sum(…) OVER (… ROWS BETWEEN n PRECEDING AND CURRENT ROW))")
		}
	}
	n.EOWC = true
	return nil
}

// markJoinEOWC makes join node i EMIT ON WINDOW CLOSE (the gate of
// ops.Join): an equi-join key has a watermark on both sides (window_start
// = window_start of two TUMBLEs, or two watermarked time columns) and both
// inputs are append-only, so an output row whose key is below the
// watermark is final (an outer join's NULL-padded row included: no row
// that could match it can come any more).
func (p *Planner) markJoinEOWC(i int) error {
	n := p.plan.Nodes[i]
	if n.AsOf || n.Temporal || len(watermarkCols(p.plan, i)) == 0 {
		return pgerror.Unsupported("EMIT ON WINDOW CLOSE with a join needs an equality on columns with a watermark on both sides").
			WithHint("join on window_start (or window_end) of TUMBLE or HOP over sources with a WATERMARK")
	}
	rels := p.AppendOnlyRel
	if rels == nil {
		rels = func(uint64) bool { return false }
	}
	if !AppendOnly(p.plan, n.Inputs[0], rels) || !AppendOnly(p.plan, n.Inputs[1], rels) {
		return pgerror.Unsupported("EMIT ON WINDOW CLOSE with a join needs append-only inputs").
			WithHint("join sources (or views over them without retractions)")
	}
	n.EOWC = true
	return nil
}

// windowCallName names a window call in a message.
func windowCallName(f spec.WindowCall) string {
	if f.Frame != nil && f.Func != "lead" && f.Func != "ntile" && f.Func != "percent_rank" && f.Func != "cume_dist" {
		return f.Func + "() over a frame that ends after the current row"
	}
	return f.Func + "()"
}
