package ops

import (
	"sort"

	"sluice/exec/spec"
	"sluice/sql/types"
)

// Window functions beyond ranks and running aggregates: lag, lead,
// first_value, last_value, nth_value, ntile, percent_rank, cume_dist, and
// aggregates over explicit ROWS | RANGE | GROUPS frames with EXCLUDE. A
// row's value may depend on rows after it (a FOLLOWING bound, lead, ntile,
// cume_dist, the partition's size), so a partition with any of them is
// recomputed whole when it changes; the output diff (diffMerge) still
// emits only the rows whose output changed.

// valueFuncs are the window functions computed here.
var valueFuncs = map[string]bool{"lag": true, "lead": true, "first_value": true, "last_value": true,
	"nth_value": true, "ntile": true, "percent_rank": true, "cume_dist": true}

// wholePartition reports whether a call's output may depend on rows after
// its own peers, so that a change recomputes the whole partition.
func wholePartition(f spec.WindowCall) bool { return valueFuncs[f.Func] || f.Frame != nil }

// peerGroups numbers the peer groups of rows (sorted in window order):
// grp[i] is row i's group, start[g] and end[g] the first and last row of
// group g.
type peerGroups struct {
	grp        []int
	start, end []int
	// agg: each aggregate call's accumulator of the last frame (one
	// partition's computation walks its rows in order).
	agg map[*spec.WindowCall]*frameAcc
}

func (w *Window) peers(rows []types.Row) *peerGroups {
	pg := &peerGroups{grp: make([]int, len(rows)), agg: map[*spec.WindowCall]*frameAcc{}}
	for i := range rows {
		if i == 0 || compareOrder(rows[i-1], rows[i], w.n.Order) != 0 {
			pg.start = append(pg.start, i)
			pg.end = append(pg.end, i)
		}
		g := len(pg.start) - 1
		pg.grp[i] = g
		pg.end[g] = i
	}
	return pg
}

// frameOf returns the frame [lo, hi] of row i (empty when lo > hi).
func (w *Window) frameOf(rows []types.Row, i int, fr *spec.WindowFrame, pg *peerGroups) (lo, hi int) {
	n := len(rows)
	g := pg.grp[i]
	ngroups := len(pg.start)
	switch fr.Mode {
	case spec.FrameRows:
		lo = rowsBound(fr.Start, i, n, true)
		hi = rowsBound(fr.End, i, n, false)
	case spec.FrameGroups:
		lo = groupsBound(fr.Start, g, ngroups, pg, true, n)
		hi = groupsBound(fr.End, g, ngroups, pg, false, n)
	default:
		lo = w.rangeBound(rows, i, fr.Start, pg, true)
		hi = w.rangeBound(rows, i, fr.End, pg, false)
	}
	return max(lo, 0), min(hi, n-1)
}

func rowsBound(b spec.FrameBound, i, n int, start bool) int {
	switch b.Kind {
	case spec.BoundUnboundedPreceding:
		return 0
	case spec.BoundPreceding:
		if int64(i)-b.Offset < -1 {
			return -1
		}
		return i - int(b.Offset)
	case spec.BoundCurrentRow:
		return i
	case spec.BoundFollowing:
		if int64(i)+b.Offset > int64(n) {
			return n
		}
		return i + int(b.Offset)
	}
	return n - 1
}

func groupsBound(b spec.FrameBound, g, ngroups int, pg *peerGroups, start bool, n int) int {
	at := func(h int) int { // start or end row of group h
		switch {
		case h < 0:
			if start {
				return 0
			}
			return -1
		case h >= ngroups:
			if start {
				return n
			}
			return n - 1
		case start:
			return pg.start[h]
		}
		return pg.end[h]
	}
	switch b.Kind {
	case spec.BoundUnboundedPreceding:
		return 0
	case spec.BoundPreceding:
		if int64(g)-b.Offset < 0 {
			return at(-1)
		}
		return at(g - int(b.Offset))
	case spec.BoundCurrentRow:
		return at(g)
	case spec.BoundFollowing:
		if int64(g)+b.Offset >= int64(ngroups) {
			return at(ngroups)
		}
		return at(g + int(b.Offset))
	}
	return n - 1
}

// rangeBound finds a RANGE bound of row i. An offset bound's target value
// (the order key minus or plus the offset, already in the direction of the
// order) is in column b.Col of row i; a row is inside a start bound when
// it does not sort before the target, inside an end bound when it does not
// sort after it. A NULL key's offset bounds are its peers (as PostgreSQL).
func (w *Window) rangeBound(rows []types.Row, i int, b spec.FrameBound, pg *peerGroups, start bool) int {
	g := pg.grp[i]
	switch b.Kind {
	case spec.BoundUnboundedPreceding:
		return 0
	case spec.BoundUnboundedFollowing:
		return len(rows) - 1
	case spec.BoundCurrentRow:
		if start {
			return pg.start[g]
		}
		return pg.end[g]
	}
	o := w.n.Order[0]
	target := rows[i][b.Col]
	if rows[i][o.Col].IsNull() || target.IsNull() {
		if start {
			return pg.start[g]
		}
		return pg.end[g]
	}
	// pos compares row j's key with the target in the window's order.
	pos := func(j int) int {
		v := rows[j][o.Col]
		if v.IsNull() {
			if o.NullsFirst {
				return -1
			}
			return 1
		}
		c := types.Compare(v, target)
		if o.Desc {
			c = -c
		}
		return c
	}
	// Rows are sorted in the window order: pos only grows.
	if start {
		return sort.Search(len(rows), func(j int) bool { return pos(j) >= 0 })
	}
	return sort.Search(len(rows), func(j int) bool { return pos(j) > 0 }) - 1
}

// frameRows calls yield for each row index of row i's frame, in order,
// less the excluded rows.
func (w *Window) frameRows(rows []types.Row, i int, fr *spec.WindowFrame, pg *peerGroups, yield func(j int) bool) {
	lo, hi := w.frameOf(rows, i, fr, pg)
	g := pg.grp[i]
	for j := lo; j <= hi; j++ {
		switch fr.Exclude {
		case spec.ExcludeCurrentRow:
			if j == i {
				continue
			}
		case spec.ExcludeGroup:
			if pg.grp[j] == g {
				continue
			}
		case spec.ExcludeTies:
			if j != i && pg.grp[j] == g {
				continue
			}
		}
		if !yield(j) {
			return
		}
	}
}

// defaultFrame is PostgreSQL's frame when none is given: RANGE UNBOUNDED
// PRECEDING to CURRENT ROW (the current row's peers included) with ORDER
// BY, which without ORDER BY is the whole partition (all rows are peers).
var defaultFrame = spec.WindowFrame{Mode: spec.FrameRange,
	Start: spec.FrameBound{Kind: spec.BoundUnboundedPreceding}, End: spec.FrameBound{Kind: spec.BoundCurrentRow}}

// callFrame returns f's frame.
func callFrame(f *spec.WindowCall) *spec.WindowFrame {
	switch {
	case f.Frame != nil:
		return f.Frame
	case f.Rows:
		fr := &spec.WindowFrame{Mode: spec.FrameRows, Start: spec.FrameBound{Kind: spec.BoundPreceding, Offset: f.Preceding},
			End: spec.FrameBound{Kind: spec.BoundCurrentRow}}
		if f.Preceding < 0 {
			fr.Start = spec.FrameBound{Kind: spec.BoundUnboundedPreceding}
		}
		return fr
	}
	return &defaultFrame
}

// windowValue computes call f (a value function, or an aggregate over an
// explicit frame) for row i of rows.
func (w *Window) windowValue(rows []types.Row, i int, f *spec.WindowCall, pg *peerGroups) types.Datum {
	n := len(rows)
	switch f.Func {
	case "lag", "lead":
		off := int64(1)
		if len(f.Args) > 0 {
			o := rows[i][f.Args[0]]
			if o.IsNull() {
				return types.Null
			}
			off = o.I
		}
		if f.Func == "lag" {
			off = -off
		}
		j := int64(i) + off
		if j < 0 || j >= int64(n) {
			if len(f.Args) > 1 {
				return rows[i][f.Args[1]]
			}
			return types.Null
		}
		return rows[j][f.Arg]
	case "ntile":
		nb := rows[i][f.Args[0]]
		if nb.IsNull() {
			return types.Null
		}
		return types.NewInt(ntile(int64(i), int64(n), nb.I))
	case "percent_rank":
		if n <= 1 {
			return types.NewFloat(0)
		}
		rank := pg.start[pg.grp[i]]
		return types.NewFloat(float64(rank) / float64(n-1))
	case "cume_dist":
		return types.NewFloat(float64(pg.end[pg.grp[i]]+1) / float64(n))
	case "first_value", "last_value", "nth_value":
		fr := callFrame(f)
		if fr.Exclude == spec.ExcludeNoOthers {
			lo, hi := w.frameOf(rows, i, fr, pg)
			j := lo
			switch f.Func {
			case "last_value":
				j = hi
			case "nth_value":
				nv := rows[i][f.Args[0]]
				if nv.IsNull() || nv.I-1 > int64(hi-lo) {
					return types.Null
				}
				j = lo + int(nv.I-1)
			}
			if lo > hi {
				return types.Null
			}
			return rows[j][f.Arg]
		}
		want := int64(1)
		if f.Func == "nth_value" {
			nv := rows[i][f.Args[0]]
			if nv.IsNull() {
				return types.Null
			}
			want = nv.I
		}
		res, k := types.Null, int64(0)
		w.frameRows(rows, i, callFrame(f), pg, func(j int) bool {
			k++
			if f.Func == "last_value" {
				res = rows[j][f.Arg]
				return true
			}
			if k == want {
				res = rows[j][f.Arg]
				return false
			}
			return true
		})
		return res
	}
	call := spec.AggCall{Func: f.Func, Arg: f.Arg, Filter: -1, T: f.T}
	fr := callFrame(f)
	if fr.Exclude == spec.ExcludeNoOthers {
		// Consecutive frames with the same start grow at their end (the
		// running frames): add only the new rows, in order, as PostgreSQL
		// does, rather than aggregate each frame again.
		lo, hi := w.frameOf(rows, i, fr, pg)
		st := pg.agg[f]
		if st == nil || st.lo != lo || hi < st.hi {
			st = &frameAcc{lo: lo, hi: lo - 1}
			pg.agg[f] = st
		}
		for st.hi < hi {
			st.hi++
			_ = w.calc.update(&st.ac, &call, rows[st.hi], 1)
		}
		return resultOf(&st.ac, &call, nil, 0)
	}
	ac := acc{}
	w.frameRows(rows, i, fr, pg, func(j int) bool {
		_ = w.calc.update(&ac, &call, rows[j], 1)
		return true
	})
	return resultOf(&ac, &call, nil, 0)
}

// frameAcc is an aggregate's accumulator over rows lo…hi of the frame
// last computed.
type frameAcc struct {
	lo, hi int
	ac     acc
}

// ntile returns the bucket (1…nb) of row i of n: PostgreSQL's split, the
// first n%nb buckets one row larger.
func ntile(i, n, nb int64) int64 {
	if nb > n {
		return i + 1
	}
	size, extra := n/nb, n%nb
	big := extra * (size + 1) // rows in the larger buckets
	if i < big {
		return i/(size+1) + 1
	}
	return extra + (i-big)/size + 1
}
