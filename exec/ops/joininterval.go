package ops

import (
	"math"
	"sort"

	"sluice/sql/types"
)

// An interval join bounds, in its condition, the distance between a time
// column of each side (spec.IntervalBound): lo <= L.a - R.b <= hi. With a
// watermark on the other side's column, stored rows that no future row can
// match are deleted: a left row whose a < wmR + lo, a right row whose
// b < wmL - hi. (Inner joins only; their output rows stay downstream.)

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
