package job

import (
	"math/big"
	"strings"

	"sluice/exec/eval"
	"sluice/exec/spec"
	"sluice/sql/types"
)

// This file pushes a filter's constant bounds into generate_series: for
// SELECT … FROM generate_series(a, b) g WHERE g < 10 the series starts
// and stops where the filter lets rows through, so that a series of 9e18
// rows with a narrow filter returns at once. The filter still runs over
// the narrowed series (the bounds only skip rows it would reject).

// span is the closed range of values a filter admits; has* say whether a
// side is bounded.
type span struct {
	lo, hi       int64
	hasLo, hasHi bool
	empty        bool
}

// seriesSpans returns, for each integer generate_series node of plan
// whose only consumer is a Filter with constant bounds on its column, the
// range that filter admits.
func seriesSpans(plan *spec.Plan, ectx *eval.Context) map[int]span {
	var out map[int]span
	for _, n := range plan.Nodes {
		if n.Kind != spec.Filter || len(n.Inputs) != 1 {
			continue
		}
		in := plan.Nodes[n.Inputs[0]]
		if in.Kind != spec.TableFunc || len(in.Inputs) != 0 || !isSeries(in.Func) || consumers(plan, n.Inputs[0]) != 1 {
			continue
		}
		if len(in.Cols) != 1 || in.Cols[0].Type.Fam != types.Int4 && in.Cols[0].Type.Fam != types.Int8 {
			continue
		}
		sp := span{}
		conjuncts(n.Pred, func(e spec.Expr) { narrow(&sp, e, ectx) })
		if sp.hasLo || sp.hasHi || sp.empty {
			if out == nil {
				out = map[int]span{}
			}
			out[n.Inputs[0]] = sp
		}
	}
	return out
}

func isSeries(name string) bool {
	name = strings.ToLower(name)
	return name == "generate_series" || name == "pg_catalog.generate_series"
}

func consumers(plan *spec.Plan, idx int) int {
	c := 0
	for _, n := range plan.Nodes {
		for _, in := range n.Inputs {
			if in == idx {
				c++
			}
		}
	}
	return c
}

func conjuncts(e spec.Expr, f func(spec.Expr)) {
	if fn, ok := e.(*spec.Func); ok && fn.Name == "and" {
		for _, a := range fn.Args {
			conjuncts(a, f)
		}
		return
	}
	f(e)
}

// narrow tightens sp by one conjunct of the form col OP constant or
// constant OP col (OP one of < <= > >= =); other conjuncts leave it.
func narrow(sp *span, e spec.Expr, ectx *eval.Context) {
	fn, ok := e.(*spec.Func)
	if !ok || len(fn.Args) != 2 {
		return
	}
	op := fn.Name
	flip := map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}
	if _, ok := flip[op]; !ok {
		return
	}
	l, r := fn.Args[0], fn.Args[1]
	if !isSeriesCol(l) {
		if !isSeriesCol(r) {
			return
		}
		l, r, op = r, l, flip[op]
	}
	if hasColRef(r) {
		return
	}
	c, err := eval.Compile(r, ectx)
	if err != nil {
		return
	}
	d, err := c(nil)
	if err != nil {
		return
	}
	if d.K == types.KNull {
		sp.empty = true // a comparison with NULL admits nothing
		return
	}
	if d.K != types.KInt {
		return
	}
	v := d.I
	lower := func(x int64) {
		if !sp.hasLo || x > sp.lo {
			sp.lo, sp.hasLo = x, true
		}
	}
	upper := func(x int64) {
		if !sp.hasHi || x < sp.hi {
			sp.hi, sp.hasHi = x, true
		}
	}
	switch op {
	case "<":
		if v == -1<<63 {
			sp.empty = true
			return
		}
		upper(v - 1)
	case "<=":
		upper(v)
	case ">":
		if v == 1<<63-1 {
			sp.empty = true
			return
		}
		lower(v + 1)
	case ">=":
		lower(v)
	case "=":
		lower(v)
		upper(v)
	}
}

// isSeriesCol reports whether e is the series' column, possibly widened
// to another integer type.
func isSeriesCol(e spec.Expr) bool {
	switch x := e.(type) {
	case *spec.ColRef:
		return x.Idx == 0
	case *spec.Cast:
		if x.T.Fam == types.Int4 || x.T.Fam == types.Int8 {
			return isSeriesCol(x.E)
		}
	}
	return false
}

func hasColRef(e spec.Expr) bool {
	switch x := e.(type) {
	case *spec.ColRef:
		return true
	case *spec.Func:
		for _, a := range x.Args {
			if hasColRef(a) {
				return true
			}
		}
	case *spec.Cast:
		return hasColRef(x.E)
	case *spec.Case:
		return true // not worth walking: no narrowing
	case *spec.Const, *spec.Param:
		return false
	}
	return true // an unknown form (a subquery): do not evaluate it here
}

// clip narrows the integer generate_series arguments args (start, stop[,
// step], already evaluated) to sp, keeping the series' values on its
// step grid. It reports false when no value is left.
func clip(args []types.Datum, sp span) ([]types.Datum, bool) {
	for _, a := range args {
		if a.K != types.KInt {
			return args, true // NULLs and the like: the function decides
		}
	}
	if sp.empty || sp.hasLo && sp.hasHi && sp.lo > sp.hi {
		return nil, false
	}
	start, stop, step := big.NewInt(args[0].I), big.NewInt(args[1].I), big.NewInt(1)
	if len(args) > 2 {
		step = big.NewInt(args[2].I)
	}
	if step.Sign() == 0 {
		return args, true // the function reports the error
	}
	lo, hi := sp.lo, sp.hi
	up := step.Sign() > 0
	// first: the first value of the series on the admitted side.
	var edgeFirst, edgeLast *big.Int
	if up {
		if sp.hasLo {
			edgeFirst = big.NewInt(lo)
		}
		if sp.hasHi {
			edgeLast = big.NewInt(hi)
		}
	} else {
		if sp.hasHi {
			edgeFirst = big.NewInt(hi)
		}
		if sp.hasLo {
			edgeLast = big.NewInt(lo)
		}
	}
	if edgeFirst != nil {
		// Values are start + k*step, k >= 0; the first k that reaches the
		// edge is ceil((edge - start) / step) when positive.
		d := new(big.Int).Sub(edgeFirst, start)
		if d.Sign() != 0 && d.Sign() == step.Sign() {
			k := new(big.Int).Quo(d, step) // truncates toward zero
			if new(big.Int).Mul(k, step).Cmp(d) != 0 {
				k.Add(k, big.NewInt(1))
			}
			start.Add(start, k.Mul(k, step))
		}
	}
	if edgeLast != nil {
		if (up && edgeLast.Cmp(stop) < 0) || (!up && edgeLast.Cmp(stop) > 0) {
			stop.Set(edgeLast)
		}
	}
	if (up && start.Cmp(stop) > 0) || (!up && start.Cmp(stop) < 0) || !start.IsInt64() {
		return nil, false
	}
	out := append([]types.Datum(nil), args...)
	out[0] = types.Datum{K: types.KInt, I: start.Int64()}
	out[1] = types.Datum{K: types.KInt, I: stop.Int64()}
	return out, true
}
