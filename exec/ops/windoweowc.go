package ops

import (
	"encoding/binary"

	"sluice/exec/flow"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// EMIT ON WINDOW CLOSE for joins (spec.Node.EOWC on a Join): the join's
// changes wait in a gate over the output columns of its equi-join keys;
// when a watermark passes through the join (it does only on such keys,
// and only once both sides have one), the rows with a key below it are
// final (no row that could match them can come) and leave the gate, so
// an outer join emits its NULL-padded row only once no match can come.
//
// EMIT ON WINDOW CLOSE for window functions (spec.Node.EOWC on a Window):
// each output row is emitted once, final, when the watermark of the
// window's time column (its first ORDER BY column, ascending) has passed
// the row's time. The planner allows it only for calls whose value
// depends on the rows up to the current row's peers (row_number, rank,
// dense_rank, lag, first_value, last_value and nth_value over frames that
// end at the current row or before, aggregates over such frames:
// spec.WindowCall.Backward), so a
// row older than the watermark can take no new input: every row with a
// time before the watermark has come (a later one would be late, and the
// source drops it). Until then the window's changes to the row wait here.
//
// The gate sits at the window's output: at each flush (a barrier) the
// window's changes go into the pending rows, and the rows older than the
// watermark the window had seen by then leave as final output. The
// watermark passed on is the one of the last flush: no output row after
// it is older. Pending rows are saved at each checkpoint under the
// operator's gate namespace (eowcGateOp), so a restart neither loses nor
// repeats one. A row whose time is NULL never closes.
type eowcGate struct {
	// cols are the time columns: a row closes when one of them, not
	// NULL, is below that column's watermark (a window: its time column;
	// a join: the output columns of its watermarked equi-join keys).
	cols  []int
	opID  uint64 // state namespace
	rows  map[string]*eowcRow
	dirty map[string]struct{}
	// wm holds each column's watermark as it came; rel the ones of the
	// last release, passed on (a window passes its one column's).
	wm, rel map[int]int64
}

type eowcRow struct {
	r types.Row
	n int64
}

// eowcGateOp is the state namespace of window opID's gate: the job's
// state ids are small, so the high bit of the 16 is free.
func eowcGateOp(opID uint64) uint64 { return opID | 0x8000 }

// newEOWCGate returns the gate over time columns cols, reading its saved
// pending rows and released watermarks (db nil: none).
func newEOWCGate(cols []int, opID uint64, db *storage.DB) (*eowcGate, error) {
	g := &eowcGate{cols: cols, opID: eowcGateOp(opID), rows: map[string]*eowcRow{}, dirty: map[string]struct{}{},
		wm: map[int]int64{}, rel: map[int]int64{}}
	if db == nil {
		return g, nil
	}
	corrupt := pgerror.New(pgcode.DataCorrupted, "corrupt EMIT ON WINDOW CLOSE state")
	err := db.Scan(storage.StatePrefix(g.opID), func(k, v []byte) error {
		pk, rest, ok := storage.SplitStateKeyLen(storage.StateUserKey(k))
		x, m := binary.Varint(v)
		if !ok || len(pk) != 1 || m <= 0 {
			return corrupt
		}
		if pk[0] == 'w' {
			c, n := binary.Uvarint(rest)
			if n <= 0 {
				return corrupt
			}
			g.rel[int(c)] = x
			return nil
		}
		row, err := types.DecodeRow(rest)
		if err != nil {
			return err
		}
		g.rows[string(rest)] = &eowcRow{r: row, n: x}
		return nil
	})
	return g, err
}

// add takes the window's changes of one flush.
func (g *eowcGate) add(b *types.Batch) error {
	for i, r := range b.Rows {
		enc := string(types.EncodeRow(nil, r))
		e := g.rows[enc]
		if e == nil {
			e = &eowcRow{r: r}
			g.rows[enc] = e
		}
		e.n += b.Diffs[i]
		if e.n == 0 {
			delete(g.rows, enc)
		}
		g.dirty[enc] = struct{}{}
	}
	return nil
}

// closed reports whether row r is final: one of its time columns, not
// NULL, is below that column's watermark.
func (g *eowcGate) closed(r types.Row) bool {
	for _, c := range g.cols {
		w, ok := g.wm[c]
		if t := r[c]; ok && !t.IsNull() && t.I < w {
			return true
		}
	}
	return false
}

// release emits the pending rows the watermarks have closed, final.
func (g *eowcGate) release(out *flow.Emitter) error {
	if len(g.wm) == 0 {
		return nil
	}
	for enc, e := range g.rows {
		if !g.closed(e.r) {
			continue
		}
		if e.n < 0 {
			return pgerror.New(pgcode.Internal, "EMIT ON WINDOW CLOSE: a row older than the watermark changed after it was emitted")
		}
		for k := int64(0); k < e.n; k++ {
			if err := out.Emit(e.r, 1); err != nil {
				return err
			}
		}
		delete(g.rows, enc)
		g.dirty[enc] = struct{}{}
	}
	for c, w := range g.wm {
		g.rel[c] = w
	}
	return nil
}

// save writes the pending rows that changed and the released watermarks.
func (g *eowcGate) save(w *storage.EpochWriter) {
	var v []byte
	for enc := range g.dirty {
		k := append(storage.AppendStateKeyLen(nil, g.opID, "r"), enc...)
		if e := g.rows[enc]; e != nil {
			v = binary.AppendVarint(v[:0], e.n)
			w.Set(k, v)
		} else {
			w.Delete(k)
		}
	}
	clear(g.dirty)
	for c, x := range g.rel {
		k := binary.AppendUvarint(storage.AppendStateKeyLen(nil, g.opID, "w"), uint64(c))
		w.Set(k, binary.AppendVarint(nil, x))
	}
}

// note records watermark wm if it is on one of the time columns.
func (g *eowcGate) note(wm flow.Watermark) bool {
	for _, c := range g.cols {
		if c == wm.Col {
			if old, ok := g.wm[c]; !ok || wm.Ts > old {
				g.wm[c] = wm.Ts
			}
			return true
		}
	}
	return false
}

// CheckpointWatermarks implements flow.CheckpointWatermarker: after the
// flush of a barrier, the watermark it released is passed on at once
// (the next window of a chain closes its rows without waiting for the
// source's next watermark).
func (w *Window) CheckpointWatermarks() []flow.Watermark {
	if w.gate == nil {
		return nil
	}
	c := w.gate.cols[0]
	if ts, ok := w.gate.rel[c]; ok {
		return []flow.Watermark{{Col: c, Ts: ts}}
	}
	return nil
}

// onWatermark notes the time column's watermark and returns the one to
// pass on: the last release's (a window's rows wait for its flush).
func (g *eowcGate) onWatermark(wm flow.Watermark) []flow.Watermark {
	if !g.note(wm) {
		return nil
	}
	ts, ok := g.rel[wm.Col]
	if !ok {
		return nil
	}
	return []flow.Watermark{{Col: wm.Col, Ts: ts}}
}
