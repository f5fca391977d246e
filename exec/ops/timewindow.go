package ops

import (
	"math"

	"sluice/exec/flow"
	"sluice/exec/spec"
	"sluice/sql/types"
)

// TimeWindow is TUMBLE or HOP in FROM: it appends window_start and
// window_end to each input row, once per window the row's time column
// falls in (one for TUMBLE, Size/Slide for HOP). It keeps no state.
//
// window_start = t - ((t - offset) mod slide), the mod taken toward -inf,
// so the windows tile the time line from the offset as PostgreSQL's
// date_bin(slide, t, epoch + offset) does; HOP's windows are the Size/Slide
// ones of those starts that still contain t. A NULL time gives NULL
// window columns (TUMBLE) or no row (HOP).
type TimeWindow struct {
	w      spec.TimeWindowSpec
	inCols int
	n      int64          // windows per row
	alloc  types.RowAlloc // output rows
}

// NewTimeWindow returns the operator of TimeWindow node n over an input of
// inCols columns.
func NewTimeWindow(n *spec.Node, inCols int) *TimeWindow {
	w := *n.TimeWin
	if !w.Hop {
		w.Slide = w.Size
	}
	return &TimeWindow{w: w, inCols: inCols, n: w.Size / w.Slide}
}

// WindowStart returns the start of the last window of slide slide (and
// offset offset) that contains t: t - ((t - offset) mod slide), the mod
// rounding toward -inf.
func WindowStart(t, slide, offset int64) int64 {
	m := (t - offset) % slide
	if m < 0 {
		m += slide
	}
	return t - m
}

// firstStart returns the start of the earliest window containing t.
func (o *TimeWindow) firstStart(t int64) int64 {
	return WindowStart(t, o.w.Slide, o.w.Offset) - o.w.Size + o.w.Slide
}

// Process implements flow.Operator.
func (o *TimeWindow) Process(_ int, b *types.Batch, out *flow.Emitter) error {
	w := int(o.n) * (o.inCols + 2)
	emit := out.Emit
	for i, r := range b.Rows {
		if o.w.Hop && r[o.w.Col].IsNull() {
			continue
		}
		// The row's windows share one allocation.
		if _, err := o.expandRow(r, b.Diffs[i], o.alloc.Row(w), emit); err != nil {
			return err
		}
	}
	return nil
}

// expandRow writes the windowed rows of r into slab, which has room for
// them, calling emit with each, and returns what is left of slab: a HOP
// row without a time has none, a TUMBLE one a row with NULL windows.
func (o *TimeWindow) expandRow(r types.Row, diff int64, slab []types.Datum, emit func(types.Row, int64) error) ([]types.Datum, error) {
	w := o.inCols + 2
	t := r[o.w.Col]
	if t.IsNull() {
		if o.w.Hop {
			return slab, nil
		}
		nr := types.Row(slab[:w:w])
		copy(nr, r)
		nr[o.inCols], nr[o.inCols+1] = types.Null, types.Null
		return slab[w:], emit(nr, diff)
	}
	s := o.firstStart(t.I)
	for k := int64(0); k < o.n; k, s = k+1, s+o.w.Slide {
		nr := types.Row(slab[:w:w])
		slab = slab[w:]
		copy(nr, r)
		nr[o.inCols] = types.Datum{K: t.K, I: s}
		nr[o.inCols+1] = types.Datum{K: t.K, I: s + o.w.Size}
		if err := emit(nr, diff); err != nil {
			return slab, err
		}
	}
	return slab, nil
}

// windowChunk is how many input rows a fused window expands at a time:
// it bounds the reused rows at windowChunk × windows per row.
const windowChunk = 256

// fusedWindow is a TimeWindow run inside the operator that consumes it
// (an Agg, which keeps no input row): it expands each input batch into
// rows it reuses for the next one, instead of allocating rows that the
// collector then has to free, and saves the actor between the two.
type fusedWindow struct {
	tw   *TimeWindow
	b    types.Batch
	slab []types.Datum
	// wm is the watermark given to the consumer per window output
	// column (the actor's filter of watermarks that do not advance).
	wm map[int]int64
}

// expand calls f with the windowed rows of b, windowChunk input rows at a
// time; the rows are valid until f returns.
func (fw *fusedWindow) expand(b *types.Batch, f func(*types.Batch) error) error {
	o := fw.tw
	w := o.inCols + 2
	add := fw.add
	for lo := 0; lo < len(b.Rows); lo += windowChunk {
		hi := min(lo+windowChunk, len(b.Rows))
		if need := (hi - lo) * int(o.n) * w; cap(fw.slab) < need {
			fw.slab = make([]types.Datum, need)
		}
		slab := fw.slab[:cap(fw.slab)]
		fw.b.Rows, fw.b.Diffs = fw.b.Rows[:0], fw.b.Diffs[:0]
		for i := lo; i < hi; i++ {
			slab, _ = o.expandRow(b.Rows[i], b.Diffs[i], slab, add) // add never fails
		}
		if err := f(&fw.b); err != nil {
			return err
		}
	}
	return nil
}

func (fw *fusedWindow) add(r types.Row, diff int64) error {
	fw.b.Add(r, diff)
	return nil
}

// watermarks maps a watermark on the window's input to those of its
// output that advance.
func (fw *fusedWindow) watermarks(w flow.Watermark) []flow.Watermark {
	ws, _ := fw.tw.OnWatermark(0, w, nil)
	out := ws[:0]
	for _, x := range ws {
		if last, ok := fw.wm[x.Col]; ok && x.Ts <= last {
			continue
		}
		fw.wm[x.Col] = x.Ts
		out = append(out, x)
	}
	return out
}

// Checkpoint implements flow.Operator.
func (o *TimeWindow) Checkpoint(*flow.Barrier, *flow.Emitter) error { return nil }

// OnWatermark implements flow.WatermarkOp: input columns keep their
// watermarks; one on the time column t also bounds the windows of the
// rows to come: none starts before the earliest window containing t.
func (o *TimeWindow) OnWatermark(_ int, w flow.Watermark, _ *flow.Emitter) ([]flow.Watermark, error) {
	out := []flow.Watermark{w}
	if w.Col == o.w.Col && w.Ts > math.MinInt64+o.w.Size {
		s := o.firstStart(w.Ts)
		out = append(out, flow.Watermark{Col: o.inCols, Ts: s}, flow.Watermark{Col: o.inCols + 1, Ts: s + o.w.Size})
	}
	return out, nil
}
