package spec

import (
	"math"

	"sluice/sql/types"
)

// IntervalBound is a bound, in a join condition, on the distance between a
// time column of each side: Lo <= L - R <= Hi in microseconds, L a column
// of the left input and R one of the right (math.MinInt64 / MaxInt64: no
// bound on that side).
type IntervalBound struct {
	L, R   int
	Lo, Hi int64
}

// IntervalBounds finds the bounds in cond, a join condition over the
// concatenation of a left row of width lw and a right row: its top-level
// conjuncts that compare a timestamp column of one side with one of the
// other, give or take a constant interval of fixed length. all reports
// whether every conjunct is such a bound (the condition is the bounds and
// nothing else).
func IntervalBounds(cond Expr, lw int) (out []IntervalBound, all bool) {
	all = true
	set := func(l, r int, lo, hi *int64) {
		for i := range out {
			if out[i].L == l && out[i].R == r {
				if lo != nil {
					out[i].Lo = max(out[i].Lo, *lo)
				}
				if hi != nil {
					out[i].Hi = min(out[i].Hi, *hi)
				}
				return
			}
		}
		b := IntervalBound{L: l, R: r, Lo: math.MinInt64, Hi: math.MaxInt64}
		if lo != nil {
			b.Lo = *lo
		}
		if hi != nil {
			b.Hi = *hi
		}
		out = append(out, b)
	}
	var walk func(e Expr)
	walk = func(e Expr) {
		f, ok := e.(*Func)
		if ok && f.Name == "and" {
			for _, a := range f.Args {
				walk(a)
			}
			return
		}
		if !ok || len(f.Args) != 2 {
			all = false
			return
		}
		greater := f.Name == ">=" || f.Name == ">"
		if !greater && f.Name != "<=" && f.Name != "<" {
			all = false
			return
		}
		ca, oa, ok1 := timeTerm(f.Args[0])
		cb, ob, ok2 := timeTerm(f.Args[1])
		if !ok1 || !ok2 || (ca < lw) == (cb < lw) {
			all = false
			return
		}
		// (ca + oa) op (cb + ob), i.e. ca - cb op ob - oa; a strict
		// inequality is the inclusive one a microsecond further.
		v := ob - oa
		switch f.Name {
		case ">":
			v++
		case "<":
			v--
		}
		if ca < lw { // L - R op v
			if greater {
				set(ca, cb-lw, &v, nil)
			} else {
				set(ca, cb-lw, nil, &v)
			}
		} else { // R - L op v: L - R op' -v
			v = -v
			if greater {
				set(cb, ca-lw, nil, &v)
			} else {
				set(cb, ca-lw, &v, nil)
			}
		}
	}
	walk(cond)
	return out, all
}

// timeTerm matches a timestamp column, or a timestamp column plus or
// minus a constant interval of fixed length (no months): col + off.
func timeTerm(e Expr) (col int, off int64, ok bool) {
	isTime := func(t types.T) bool { return t.Fam == types.Timestamp || t.Fam == types.TimestampTZ }
	switch x := e.(type) {
	case *ColRef:
		return x.Idx, 0, isTime(x.T)
	case *Func:
		if (x.Name != "+" && x.Name != "-") || len(x.Args) != 2 {
			return 0, 0, false
		}
		c, ok1 := x.Args[0].(*ColRef)
		k, ok2 := x.Args[1].(*Const)
		if !ok1 || !ok2 || !isTime(c.T) || k.D.K != types.KInterval || k.D.M != 0 {
			return 0, 0, false
		}
		us := k.D.I + int64(k.D.X)*86_400_000_000
		if x.Name == "-" {
			us = -us
		}
		return c.Idx, us, true
	}
	return 0, 0, false
}
