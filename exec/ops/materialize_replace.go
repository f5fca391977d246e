package ops

import (
	"bytes"
	"slices"

	"sluice/exec/flow"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// A view changed in place (ALTER MATERIALIZED VIEW … AS) keeps its
// relation: its Materialize runs in replace mode for the first epoch of
// the new plan. It gathers the new plan's output of that epoch (the
// replayed contents of the kept operators, as built again by the new
// part, plus the epoch's own changes) and, at the barrier, turns the
// relation from its old rows into the new ones: it writes only the rows
// that differ and emits, downstream to dependent views and sinks,
// retractions of the old rows that went, then insertions of the new rows
// that came, in that one epoch. Rows the old and the new query both give
// are neither written nor emitted.
//
// The new contents and the old are held in memory for that one epoch.

// Replace puts m in replace mode for the first epoch of a new plan.
// Forward makes m emit its input changes downstream from then on: the
// view's change stream (which dependents subscribe to) is m's output for
// the rest of the job's run, instead of its input.
func (m *Materialize) Replace() {
	m.replacing = true
	m.Forward = true
	m.fresh = map[string]*jrow{}
}

func (m *Materialize) processReplace(b *types.Batch) {
	for i, r := range b.Rows {
		k := string(types.EncodeRow(nil, r))
		j := m.fresh[k]
		if j == nil {
			j = &jrow{row: r}
			m.fresh[k] = j
		}
		j.n += b.Diffs[i]
	}
}

// checkpointReplace swaps the relation's contents at the first barrier of
// a replace.
func (m *Materialize) checkpointReplace(b *flow.Barrier, out *flow.Emitter) error {
	m.replacing = false
	fresh := m.fresh
	m.fresh = nil
	type stored struct {
		k string // relation key, without the prefix
		v []byte
	}
	var oldKV []stored
	old := map[string]*jrow{}
	err := m.db.Scan(m.prefix, func(k, v []byte) error {
		n, row, err := DecodeRelValue(v)
		if err != nil {
			return err
		}
		oldKV = append(oldKV, stored{k: string(k[len(m.prefix):]), v: bytes.Clone(v)})
		rk := string(types.EncodeRow(nil, row))
		if j := old[rk]; j != nil {
			j.n += n
		} else {
			old[rk] = &jrow{row: row, n: n}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Retractions first, then insertions, each in row order: an upsert
	// sink sees a changed row's new value last.
	keys := make([]string, 0, len(old))
	for k := range old {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		o := old[k]
		var nn int64
		if f := fresh[k]; f != nil && f.n > 0 {
			nn = f.n
		}
		if o.n > nn {
			if err := out.Emit(o.row, nn-o.n); err != nil {
				return err
			}
		}
	}
	keys = keys[:0]
	for k, f := range fresh {
		if f.n > 0 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var total int64
	newKV := map[string]*jrow{}
	for _, k := range keys {
		f := fresh[k]
		var on int64
		if o := old[k]; o != nil {
			on = o.n
		}
		if f.n > on {
			if err := out.Emit(f.row, f.n-on); err != nil {
				return err
			}
		}
		total += f.n
		m.kbuf = RelKey(m.kbuf[:0], m.key, f.row)
		if j := newKV[string(m.kbuf)]; j != nil {
			if m.key != nil {
				return pgerror.New(pgcode.UniqueViolation, "the new query of the materialized view gives two rows with the same key")
			}
			j.n += f.n
		} else {
			newKV[string(m.kbuf)] = &jrow{row: f.row, n: f.n}
		}
	}
	for _, o := range oldKV {
		j := newKV[o.k]
		if j == nil {
			b.W.Delete(append(bytes.Clone(m.prefix), o.k...))
			m.flying[o.k] = matWrite{epoch: b.Epoch}
			continue
		}
		if bytes.Equal(o.v, EncodeRelValue(j.n, j.row)) {
			delete(newKV, o.k) // unchanged
		}
	}
	for k, j := range newKV {
		b.W.Set(append(bytes.Clone(m.prefix), k...), EncodeRelValue(j.n, j.row))
		m.flying[k] = matWrite{epoch: b.Epoch, n: j.n, row: j.row}
	}
	m.Rows.Store(total)
	return nil
}

// OnWatermark implements flow.WatermarkOp: watermarks pass through, for
// the dependents that read m's output (Forward).
func (m *Materialize) OnWatermark(_ int, w flow.Watermark, _ *flow.Emitter) ([]flow.Watermark, error) {
	return []flow.Watermark{w}, nil
}
