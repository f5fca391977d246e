package ops

import (
	"encoding/binary"
	"math"

	"sluice/exec/flow"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// WindowMaxJoin joins an append-only input with its own maximum per TUMBLE
// window (spec.WindowMaxJoin, Nexmark q7): the rows whose value equals the
// largest value of a window whose end their time is within bounds of. The
// plan it replaces reads the input twice, aggregates one copy per window
// and joins the other to the maxima on the value, storing every row until
// its window's maximum is known; this operator reads the input once and
// keeps, per open window, its maximum and the rows that can still match it
// (those at or above it: one row most of the time).
//
// The output is the join's, change by change: a row is emitted when it
// matches the window's maximum so far, and retracted when a larger value
// arrives in the window. A row with a NULL time or value matches nothing
// (MAX ignores NULLs, and NULL = NULL is not true).
//
// A watermark on the time column closes the windows no future row can
// reach (no member: end <= wm; no candidate: end + Hi < wm): their state
// is dropped, their output stays downstream. The output carries no
// watermark (as the join's, whose key is the value).
//
// State: s/<op>/<window end, 8 bytes big-endian, sign flipped> = the
// window's maximum (NULL: none yet) followed by its candidate rows, each
// encoded; written at a barrier for the windows changed since, deleted
// once closed.
type WindowMaxJoin struct {
	w      spec.WinMaxSpec
	inCols int
	opID   uint64
	db     *storage.DB // nil: a batch query
	wins   map[int64]*wmWindow
	// last caches the window of the previous row (rows come nearly in
	// time order).
	last    *wmWindow
	lastEnd int64
	dirty   map[int64]struct{} // windows changed since the last barrier
	gone    []int64            // windows closed since the last barrier
	wm      int64              // the watermark on the time column
	alloc   types.RowAlloc
	kbuf    []byte
}

type wmWindow struct {
	has   bool  // a member with a value has arrived
	max   int64 // the largest value of the members
	cands []types.Row
}

// NewWindowMaxJoin creates the operator of node n over an input of inCols
// columns; db nil: a batch query. Saved state is read back.
func NewWindowMaxJoin(n *spec.Node, inCols int, opID uint64, db *storage.DB) (*WindowMaxJoin, error) {
	j := &WindowMaxJoin{w: *n.WinMax, inCols: inCols, opID: opID, db: db,
		wins: map[int64]*wmWindow{}, dirty: map[int64]struct{}{}, wm: math.MinInt64}
	if db == nil {
		return j, nil
	}
	corrupt := pgerror.New(pgcode.DataCorrupted, "corrupt window max join state")
	err := db.Scan(storage.StatePrefix(opID), func(k, v []byte) error {
		uk := storage.StateUserKey(k)
		if len(uk) != 8 {
			return corrupt
		}
		r, err := types.DecodeRow(v)
		if err != nil || len(r) == 0 {
			return corrupt
		}
		win := &wmWindow{has: !r[0].IsNull(), max: r[0].I}
		for _, c := range r[1:] {
			row, err := types.DecodeRow([]byte(c.S))
			if err != nil || len(row) != inCols {
				return corrupt
			}
			win.cands = append(win.cands, row)
		}
		j.wins[int64(binary.BigEndian.Uint64(uk)^1<<63)] = win
		return nil
	})
	if err != nil {
		return nil, err
	}
	return j, nil
}

// errRetracted is the error of an operator planned for an append-only
// input that received a retraction: refused, never a silently wrong answer.
func errRetracted(op string) error {
	return pgerror.Newf(pgcode.Internal, "%s: its input retracted a row, but it takes an append-only input", op)
}

// window returns the state of the window ending at end, creating it.
func (j *WindowMaxJoin) window(end int64) *wmWindow {
	if j.last != nil && j.lastEnd == end {
		return j.last
	}
	win := j.wins[end]
	if win == nil {
		win = &wmWindow{}
		j.wins[end] = win
	}
	j.last, j.lastEnd = win, end
	return win
}

// bounded reports whether a row at time t is within the bounds of the
// window ending at end.
func (j *WindowMaxJoin) bounded(t, end int64) bool {
	d := t - end
	return d >= j.w.Lo && d <= j.w.Hi
}

// Process implements flow.Operator.
func (j *WindowMaxJoin) Process(_ int, b *types.Batch, out *flow.Emitter) error {
	for i, r := range b.Rows {
		d := b.Diffs[i]
		if d < 0 {
			return errRetracted("window max join")
		}
		for ; d > 0; d-- {
			if err := j.add(r, out); err != nil {
				return err
			}
		}
	}
	return nil
}

func (j *WindowMaxJoin) add(r types.Row, out *flow.Emitter) error {
	td, vd := r[j.w.Time], r[j.w.Val]
	if td.IsNull() || vd.IsNull() {
		return nil
	}
	t, v := td.I, vd.I
	start := WindowStart(t, j.w.Size, j.w.Offset)
	end := satAdd(start, j.w.Size)
	// The window that ends at the row's start (Hi = 0: a row at a
	// window's end matches it too), then the row's own.
	if j.bounded(t, start) {
		win := j.window(start)
		if !win.has || v >= win.max {
			win.cands = append(win.cands, r)
			j.dirty[start] = struct{}{}
			if win.has && v == win.max {
				if err := j.emit(out, r, start, 1); err != nil {
					return err
				}
			}
		}
	}
	win := j.window(end)
	cand := j.bounded(t, end)
	switch {
	case !win.has || v > win.max:
		// A new maximum: the rows at the old one leave, those below the
		// new one are forgotten, the rows at the new one are emitted.
		kept := win.cands[:0]
		for _, c := range win.cands {
			cv := c[j.w.Val].I
			if win.has && cv == win.max {
				if err := j.emit(out, c, end, -1); err != nil {
					return err
				}
			}
			if cv >= v {
				kept = append(kept, c)
			}
		}
		clear(win.cands[len(kept):])
		win.cands = kept
		win.has, win.max = true, v
		if cand {
			win.cands = append(win.cands, r)
		}
		for _, c := range win.cands {
			if c[j.w.Val].I == v {
				if err := j.emit(out, c, end, 1); err != nil {
					return err
				}
			}
		}
		j.dirty[end] = struct{}{}
	case v == win.max && cand:
		win.cands = append(win.cands, r)
		j.dirty[end] = struct{}{}
		return j.emit(out, r, end, 1)
	}
	return nil
}

// emit sends the output row of input row r joined with the window ending
// at end (whose maximum is r's value).
func (j *WindowMaxJoin) emit(out *flow.Emitter, r types.Row, end int64, d int64) error {
	o := j.alloc.Row(len(j.w.Out))
	for i, c := range j.w.Out {
		switch c - j.inCols {
		case 0:
			o[i] = r[j.w.Val]
		case 1, 2:
			x := r[j.w.Time] // the time column's kind, timestamp or timestamptz
			x.I = end
			if c-j.inCols == 1 {
				x.I = end - j.w.Size
			}
			o[i] = x
		default:
			o[i] = r[c]
		}
	}
	return out.Emit(o, d)
}

// OnWatermark implements flow.WatermarkOp: a watermark on the time column
// closes the windows no row to come can reach. The output gets none.
func (j *WindowMaxJoin) OnWatermark(_ int, w flow.Watermark, _ *flow.Emitter) ([]flow.Watermark, error) {
	if w.Col != j.w.Time || w.Ts <= j.wm {
		return nil, nil
	}
	j.wm = w.Ts
	for end := range j.wins {
		// Members are before end, candidates at most Hi after it; rows
		// to come are at or after the watermark.
		if end <= w.Ts && satAdd(end, j.w.Hi) < w.Ts {
			delete(j.wins, end)
			delete(j.dirty, end)
			j.gone = append(j.gone, end)
		}
	}
	j.last = nil
	return nil, nil
}

func (j *WindowMaxJoin) key(end int64) []byte {
	j.kbuf = appendWindowStateKey(j.kbuf[:0], j.opID, end)
	return j.kbuf
}

// appendWindowStateKey appends operator op's state key of the window at
// time t (its start or end): t is the distribution key, 8 bytes
// big-endian with the sign flipped, so that windows sort by time.
func appendWindowStateKey(dst []byte, op uint64, t int64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(t)^1<<63)
	return storage.AppendStateKey(dst, op, b[:])
}

// Checkpoint implements flow.Operator: the windows changed since the last
// barrier are written whole, the closed ones deleted.
func (j *WindowMaxJoin) Checkpoint(b *flow.Barrier, _ *flow.Emitter) error {
	if j.db == nil {
		clear(j.dirty)
		j.gone = j.gone[:0]
		return nil
	}
	for _, end := range j.gone {
		b.W.Delete(j.key(end))
	}
	j.gone = j.gone[:0]
	var rec types.Row
	var v, enc []byte
	for end := range j.dirty {
		win := j.wins[end]
		rec = append(rec[:0], types.Null)
		if win.has {
			rec[0] = types.NewInt(win.max)
		}
		for _, c := range win.cands {
			enc = types.EncodeRow(enc[:0], c)
			rec = append(rec, types.NewBytes(enc))
		}
		v = types.EncodeRow(v[:0], rec)
		b.W.Set(j.key(end), v)
	}
	clear(j.dirty)
	return nil
}
