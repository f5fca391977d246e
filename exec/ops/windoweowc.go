package ops

import (
	"encoding/binary"

	"sluice/exec/flow"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

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
	col   int    // the time column (input and output)
	opID  uint64 // state namespace
	rows  map[string]*eowcRow
	dirty map[string]struct{}
	// wm is the time column's watermark (hasWm: one came); relWm the
	// one of the last flush, passed on (hasRel).
	wm, relWm     int64
	hasWm, hasRel bool
}

type eowcRow struct {
	r types.Row
	n int64
}

// eowcGateOp is the state namespace of window opID's gate: the job's
// state ids are small, so the high bit of the 16 is free.
func eowcGateOp(opID uint64) uint64 { return opID | 0x8000 }

// newEOWCGate returns the gate of a window whose time column is col,
// reading its saved pending rows (db nil: none).
func newEOWCGate(col int, opID uint64, db *storage.DB) (*eowcGate, error) {
	g := &eowcGate{col: col, opID: eowcGateOp(opID), rows: map[string]*eowcRow{}, dirty: map[string]struct{}{}}
	if db == nil {
		return g, nil
	}
	corrupt := pgerror.New(pgcode.DataCorrupted, "corrupt EMIT ON WINDOW CLOSE state")
	err := db.Scan(storage.StatePrefix(g.opID), func(k, v []byte) error {
		pk, rowb, ok := storage.SplitStateKeyLen(storage.StateUserKey(k))
		x, m := binary.Varint(v)
		if !ok || len(pk) != 1 || m <= 0 {
			return corrupt
		}
		if pk[0] == 'w' {
			g.relWm, g.hasRel = x, true
			return nil
		}
		row, err := types.DecodeRow(rowb)
		if err != nil {
			return err
		}
		g.rows[string(rowb)] = &eowcRow{r: row, n: x}
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

// release emits the pending rows older than the watermark, final.
func (g *eowcGate) release(out *flow.Emitter) error {
	if !g.hasWm {
		return nil
	}
	for enc, e := range g.rows {
		t := e.r[g.col]
		if t.IsNull() || t.I >= g.wm {
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
	g.relWm, g.hasRel = g.wm, true
	return nil
}

// save writes the pending rows that changed and the released watermark.
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
	if g.hasRel {
		w.Set(storage.AppendStateKeyLen(nil, g.opID, "w"), binary.AppendVarint(nil, g.relWm))
	}
}

// CheckpointWatermarks implements flow.CheckpointWatermarker: after the
// flush of a barrier, the watermark it released is passed on at once
// (the next window of a chain closes its rows without waiting for the
// source's next watermark).
func (w *Window) CheckpointWatermarks() []flow.Watermark {
	if w.gate == nil || !w.gate.hasRel {
		return nil
	}
	return []flow.Watermark{{Col: w.gate.col, Ts: w.gate.relWm}}
}

// onWatermark notes the time column's watermark and returns the one to
// pass on: the last flush's.
func (g *eowcGate) onWatermark(wm flow.Watermark) []flow.Watermark {
	if wm.Col != g.col {
		return nil
	}
	g.wm, g.hasWm = wm.Ts, true
	if !g.hasRel {
		return nil
	}
	return []flow.Watermark{{Col: g.col, Ts: g.relWm}}
}
