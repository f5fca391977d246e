package ops

import (
	"math"
	"sort"

	"sluice/exec/spec"
	"sluice/sql/types"
)

// An interval join bounds, in its condition, the distance between a time
// column of each side: lo <= L.a - R.b <= hi (microseconds). With a
// watermark on the other side's column, stored rows that no future row can
// match are deleted: a left row whose a < wmR + lo, a right row whose
// b < wmL - hi. (Inner joins only; their output rows stay downstream.)
type joinBound struct {
	l, r   int // time column of the left and of the right input
	lo, hi int64
}

// timeIndex finds a side's stored rows by the value of one time column:
// entries sorted by time (rows arrive almost in time order, so adding is
// nearly always an append), taken from the front as watermarks pass.
type timeIndex struct {
	col  int
	ents []timeEntry
	head int // ents[:head] are taken
	// floor is the highest time takeBelow was given: a row below it
	// arriving later can match no future row of the other side either.
	floor int64
}

type timeEntry struct {
	t   int64
	ref rowRef
}

type rowRef struct{ jk, rk string }

func newTimeIndex(col int) *timeIndex { return &timeIndex{col: col, floor: math.MinInt64} }

// expired reports whether row r is below the floor: the next takeBelow
// would delete it at once.
func (x *timeIndex) expired(r types.Row) bool {
	d := r[x.col]
	return !d.IsNull() && d.I < x.floor
}

func (x *timeIndex) add(r types.Row, jk, rk string) {
	d := r[x.col]
	if d.IsNull() {
		return
	}
	e := timeEntry{d.I, rowRef{jk, rk}}
	n := len(x.ents)
	if n == x.head || x.ents[n-1].t <= d.I {
		x.ents = append(x.ents, e)
		return
	}
	live := x.ents[x.head:]
	i := x.head + sort.Search(len(live), func(i int) bool { return live[i].t > d.I })
	x.ents = append(x.ents, timeEntry{})
	copy(x.ents[i+1:], x.ents[i:])
	x.ents[i] = e
}

// takeBelow removes and returns the rows whose time is below ts; the
// slice is valid until the next call.
func (x *timeIndex) takeBelow(ts int64) []timeEntry {
	x.floor = max(x.floor, ts)
	k := x.head
	for k < len(x.ents) && x.ents[k].t < ts {
		k++
	}
	out := x.ents[x.head:k]
	x.head = k
	if x.head > 1024 && x.head > len(x.ents)/2 {
		// Reclaim the taken front (out stays valid: it is copied first).
		out = append([]timeEntry(nil), out...)
		n := copy(x.ents, x.ents[x.head:])
		clear(x.ents[n:])
		x.ents = x.ents[:n]
		x.head = 0
	}
	return out
}

// intervalBounds finds the bounds in cond, a join condition over the
// concatenation of a left row of width lw and a right row: its top-level
// conjuncts that compare a timestamp column of one side with one of the
// other, give or take a constant interval of fixed length.
func intervalBounds(cond spec.Expr, lw int) []joinBound {
	var out []joinBound
	set := func(l, r int, lo, hi *int64) {
		for i := range out {
			if out[i].l == l && out[i].r == r {
				if lo != nil {
					out[i].lo = max(out[i].lo, *lo)
				}
				if hi != nil {
					out[i].hi = min(out[i].hi, *hi)
				}
				return
			}
		}
		b := joinBound{l: l, r: r, lo: math.MinInt64, hi: math.MaxInt64}
		if lo != nil {
			b.lo = *lo
		}
		if hi != nil {
			b.hi = *hi
		}
		out = append(out, b)
	}
	var walk func(e spec.Expr)
	walk = func(e spec.Expr) {
		f, ok := e.(*spec.Func)
		if !ok {
			return
		}
		if f.Name == "and" {
			for _, a := range f.Args {
				walk(a)
			}
			return
		}
		if len(f.Args) != 2 {
			return
		}
		greater := f.Name == ">=" || f.Name == ">"
		if !greater && f.Name != "<=" && f.Name != "<" {
			return
		}
		ca, oa, ok1 := timeTerm(f.Args[0])
		cb, ob, ok2 := timeTerm(f.Args[1])
		if !ok1 || !ok2 || (ca < lw) == (cb < lw) {
			return
		}
		// (ca + oa) op (cb + ob), i.e. ca - cb op ob - oa.
		v := ob - oa
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
	return out
}

// timeTerm matches a timestamp column, or a timestamp column plus or
// minus a constant interval of fixed length (no months): col + off.
func timeTerm(e spec.Expr) (col int, off int64, ok bool) {
	isTime := func(t types.T) bool { return t.Fam == types.Timestamp || t.Fam == types.TimestampTZ }
	switch x := e.(type) {
	case *spec.ColRef:
		return x.Idx, 0, isTime(x.T)
	case *spec.Func:
		if (x.Name != "+" && x.Name != "-") || len(x.Args) != 2 {
			return 0, 0, false
		}
		c, ok1 := x.Args[0].(*spec.ColRef)
		k, ok2 := x.Args[1].(*spec.Const)
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
