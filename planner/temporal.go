package planner

import (
	"sluice/exec/spec"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// A view's WHERE may filter on the clock with temporal filters (as
// RisingWave and Materialize do): conjuncts of the form
//
//	col > | >= | < | <= now() [± INTERVAL '…']     (either way round)
//
// where col is a timestamp or timestamptz column and the interval has no
// months (a fixed length: sessions run in UTC). They become a
// TemporalFilter node (exec/ops.TemporalFilter), which expires rows, or
// lets them in, as time passes. Any other use of the clock in a view is
// refused (refuseClockInView).

// clockFuncs are the functions that read the statement clock and that a
// temporal filter may compare with.
var clockFuncs = map[string]bool{"now": true, "current_timestamp": true, "localtimestamp": true,
	"transaction_timestamp": true, "statement_timestamp": true}

// hasClock reports whether e calls a clock function.
func hasClock(e spec.Expr) bool {
	found := false
	spec.Walk(e, func(x spec.Expr) bool {
		if f, ok := x.(*spec.Func); ok && clockFuncs[f.Name] {
			found = true
		}
		return !found
	})
	return found
}

func errTemporal(c spec.Expr) error {
	return pgerror.Unsupported("%s in a materialized view is not supported", c).
		WithDetail("a view uses now() only in temporal filters: conjuncts of WHERE such as ts > now() - INTERVAL '1 hour', where ts is a timestamp column").
		WithHint("compare a timestamp column with now() plus or minus a constant interval (without months), or filter on the clock in the SELECT that reads the view")
}

// temporalBounds takes the temporal filters out of pred's conjuncts: it
// returns them as bounds and the other conjuncts as rest. A conjunct that
// reads the clock in any other way is refused.
func temporalBounds(pred spec.Expr) (bounds []spec.TimeBound, rest []spec.Expr, err error) {
	for _, c := range conjuncts(pred) {
		if !hasClock(c) {
			rest = append(rest, c)
			continue
		}
		f, ok := c.(*spec.Func)
		if !ok || len(f.Args) != 2 || flipped[f.Name] == "" {
			return nil, nil, errTemporal(c)
		}
		// col + co op now() + no  <=>  col op now() + (no - co)
		op := f.Name
		col, co, okc := boundCol(f.Args[0])
		no, okn := nowOffset(f.Args[1])
		if !okc || !okn {
			op = flipped[op]
			col, co, okc = boundCol(f.Args[1])
			no, okn = nowOffset(f.Args[0])
		}
		if !okc || !okn {
			return nil, nil, errTemporal(c)
		}
		bounds = append(bounds, spec.TimeBound{Col: col, Op: op, Offset: no - co})
	}
	return bounds, rest, nil
}

// isTime reports whether t is timestamp or timestamptz (their values are
// the same microseconds in a UTC session).
func isTime(t types.T) bool { return t.Fam == types.Timestamp || t.Fam == types.TimestampTZ }

// stripTimeCasts removes casts between timestamp and timestamptz.
func stripTimeCasts(e spec.Expr) spec.Expr {
	for {
		c, ok := e.(*spec.Cast)
		if !ok || !isTime(c.T) || !isTime(c.E.Type()) {
			return e
		}
		e = c.E
	}
}

// boundCol returns the column a temporal filter compares, when e is that
// column plus off microseconds (a constant interval added or subtracted).
func boundCol(e spec.Expr) (col int, off int64, ok bool) {
	e = stripTimeCasts(e)
	if c, ok := e.(*spec.ColRef); ok {
		return c.Idx, 0, isTime(c.T)
	}
	x, d, ok := plusInterval(e)
	if !ok {
		return 0, 0, false
	}
	col, off, ok = boundCol(x)
	return col, off + d, ok
}

// plusInterval splits e = x ± interval into x and the interval's signed
// length in microseconds.
func plusInterval(e spec.Expr) (spec.Expr, int64, bool) {
	f, ok := e.(*spec.Func)
	if !ok || (f.Name != "+" && f.Name != "-") || len(f.Args) != 2 {
		return nil, 0, false
	}
	x, iv := f.Args[0], f.Args[1]
	if f.Name == "+" {
		if _, ok := intervalConst(x); ok {
			x, iv = iv, x
		}
	}
	d, ok := intervalConst(iv)
	if !ok {
		return nil, 0, false
	}
	if f.Name == "-" {
		d = -d
	}
	return x, d, true
}

// nowOffset returns off if e is now() + off microseconds.
func nowOffset(e spec.Expr) (int64, bool) {
	e = stripTimeCasts(e)
	if f, ok := e.(*spec.Func); ok && clockFuncs[f.Name] && len(f.Args) == 0 {
		return 0, true
	}
	x, d, ok := plusInterval(e)
	if !ok {
		return 0, false
	}
	off, ok := nowOffset(x)
	return off + d, ok
}

// intervalConst returns the length in microseconds of a constant interval
// without months.
func intervalConst(e spec.Expr) (int64, bool) {
	c, ok := e.(*spec.Const)
	if !ok || c.D.K != types.KInterval || c.D.M != 0 {
		return 0, false
	}
	return int64(c.D.X)*86_400_000_000 + c.D.I, true
}

// addTemporalFilter adds a TemporalFilter of bounds over node in (whose
// columns are cols) and returns its index.
func (p *Planner) addTemporalFilter(in int, cols []types.Column, bounds []spec.TimeBound) int {
	idx := p.plan.Add(&spec.Node{Kind: spec.TemporalFilter, Inputs: []int{in}, Cols: cols, TimeBounds: bounds})
	p.keys[idx] = p.keys[in]
	return idx
}
