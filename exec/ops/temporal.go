package ops

import (
	"encoding/binary"
	"math"
	"time"

	"sluice/exec/flow"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// TemporalFilter maintains a view's filter on the clock (spec.TemporalFilter:
// WHERE ts > now() - INTERVAL '1 hour'). Each row's bounds give the span of
// times [from, until) at which it passes; the output is the input rows whose
// span holds the operator's time cur. cur is the clock read when the
// operator starts and at each barrier, so a row leaves (or enters) the view
// at the first barrier at or after its boundary: with a barrier every
// second, within a second of it. Between barriers cur stands still, so a
// retraction always finds the row as it was output.
//
// State: the rows whose span has not ended (a row whose span ended can
// never pass again and is forgotten; so is its later retraction), under
// s/<op>/<len 1>r<row> = count, and cur under s/<op>/<len 1>c.
type TemporalFilter struct {
	bounds []spec.TimeBound
	opID   uint64
	db     *storage.DB // nil: a batch query
	// clock returns the time in microseconds since the Unix epoch.
	clock func() int64
	cur   int64
	// next is the earliest start or end of a stored row's span after cur
	// (math.MaxInt64: none): a barrier before it changes nothing.
	next  int64
	rows  map[string]*tfEntry
	dirty map[string]*tfEntry
}

type tfEntry struct {
	r           types.Row
	n           int64
	from, until int64
	gone        bool // expired: deleted from the state at the barrier
}

func wallClock() int64 { return time.Now().UnixMicro() }

// NewTemporalFilter creates the operator of node n; db nil: a batch query.
// Saved state is read back, with the time the view's rows are as of. clock
// gives the time in microseconds since the Unix epoch (nil: the wall
// clock; tests drive their own).
func NewTemporalFilter(n *spec.Node, opID uint64, db *storage.DB, clock func() int64) (*TemporalFilter, error) {
	if clock == nil {
		clock = wallClock
	}
	f := &TemporalFilter{bounds: n.TimeBounds, opID: opID, db: db, clock: clock,
		next: math.MaxInt64, rows: map[string]*tfEntry{}, dirty: map[string]*tfEntry{}}
	f.cur = f.clock()
	if db == nil {
		return f, nil
	}
	corrupt := pgerror.New(pgcode.DataCorrupted, "corrupt temporal filter state")
	err := db.Scan(storage.StatePrefix(opID), func(k, v []byte) error {
		pk, rowb, ok := storage.SplitStateKeyLen(storage.StateUserKey(k))
		x, m := binary.Varint(v)
		if !ok || len(pk) != 1 || m <= 0 {
			return corrupt
		}
		if pk[0] == 'c' {
			f.cur = x
			return nil
		}
		row, err := types.DecodeRow(rowb)
		if err != nil {
			return err
		}
		from, until, ok := f.span(row)
		if !ok || x <= 0 {
			return corrupt
		}
		f.rows[string(rowb)] = &tfEntry{r: row, n: x, from: from, until: until}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, e := range f.rows {
		f.noteNext(e)
	}
	return f, nil
}

// span returns the times [from, until) at which row r passes; ok is false
// if it never does (a NULL bound column, or bounds that exclude each
// other).
func (f *TemporalFilter) span(r types.Row) (from, until int64, ok bool) {
	from, until = math.MinInt64, math.MaxInt64
	for _, b := range f.bounds {
		v := r[b.Col]
		if v.IsNull() {
			return 0, 0, false
		}
		x := satAdd(v.I, -b.Offset) // v op now + off  <=>  now op' v - off
		switch b.Op {
		case ">": // now < x
			until = min(until, x)
		case ">=": // now <= x
			until = min(until, satAdd(x, 1))
		case "<": // now > x
			from = max(from, satAdd(x, 1))
		case "<=": // now >= x
			from = max(from, x)
		}
	}
	return from, until, from < until
}

func (e *tfEntry) passes(t int64) bool { return e.from <= t && t < e.until }

func (f *TemporalFilter) noteNext(e *tfEntry) {
	if e.from > f.cur {
		f.next = min(f.next, e.from)
	}
	if e.until > f.cur {
		f.next = min(f.next, e.until)
	}
}

// Process implements flow.Operator.
func (f *TemporalFilter) Process(_ int, b *types.Batch, out *flow.Emitter) error {
	for i, r := range b.Rows {
		d := b.Diffs[i]
		from, until, ok := f.span(r)
		if !ok || until <= f.cur {
			continue // never passes from now on, and never did since it came
		}
		enc := string(types.EncodeRow(nil, r))
		e := f.rows[enc]
		if e == nil {
			e = &tfEntry{r: r, from: from, until: until}
			f.rows[enc] = e
		}
		e.n += d
		if e.n < 0 {
			return pgerror.New(pgcode.Internal, "temporal filter: retraction of a row it does not hold")
		}
		if e.n == 0 {
			delete(f.rows, enc)
		}
		if f.db != nil {
			f.dirty[enc] = e
		}
		f.noteNext(e)
		if e.passes(f.cur) {
			if err := out.Emit(r, d); err != nil {
				return err
			}
		}
	}
	return nil
}

// advance moves the operator's time to t, emitting the rows whose span
// starts and retracting those whose span ends by then.
func (f *TemporalFilter) advance(t int64, out *flow.Emitter) error {
	if t <= f.cur {
		return nil // the clock went back: keep the later time
	}
	if t < f.next {
		f.cur = t
		return nil
	}
	was := f.cur
	f.cur, f.next = t, math.MaxInt64
	for enc, e := range f.rows {
		if a, b := e.passes(was), e.passes(t); a != b {
			d := e.n
			if a {
				d = -d
			}
			if err := out.Emit(e.r, d); err != nil {
				return err
			}
		}
		if e.until <= t {
			delete(f.rows, enc)
			if f.db != nil {
				e.gone = true
				f.dirty[enc] = e
			}
			continue
		}
		f.noteNext(e)
	}
	return nil
}

// Checkpoint implements flow.Operator: the clock is read and the output
// brought up to it before the barrier goes on; the rows that changed and
// the time are saved.
func (f *TemporalFilter) Checkpoint(b *flow.Barrier, out *flow.Emitter) error {
	if err := f.advance(f.clock(), out); err != nil {
		return err
	}
	if f.db == nil {
		return nil
	}
	var v []byte
	for enc, e := range f.dirty {
		k := append(storage.AppendStateKeyLen(nil, f.opID, "r"), enc...)
		if e.n == 0 || e.gone {
			b.W.Delete(k)
			continue
		}
		v = binary.AppendVarint(v[:0], e.n)
		b.W.Set(k, v)
	}
	clear(f.dirty)
	b.W.Set(storage.AppendStateKeyLen(nil, f.opID, "c"), binary.AppendVarint(nil, f.cur))
	return nil
}
