package ops

import (
	"math"

	"sluice/exec/flow"
	"sluice/sql/types"
	"sluice/storage"
)

// A join's watermarks: which pass through (the equi-join keys both sides
// have one on), the indexes of stored buckets and rows by key and time
// that let a watermark delete what can no longer match, and EMIT ON
// WINDOW CLOSE's release of the rows a watermark closes.

// outCol returns the output column of column c of left++right (-1: not
// output).
func (j *Join) outCol(c int) int {
	if j.out == nil {
		return c
	}
	for i, x := range j.out {
		if x == c {
			return i
		}
	}
	return -1
}

// keyValue returns the value of join key i in the encoded join key jk.
func keyValue(jk string, i int) (types.Datum, bool) {
	buf := []byte(jk)
	for k := 0; ; k++ {
		d, rest, err := types.DecodeKey(buf)
		if err != nil {
			return types.Null, false
		}
		if k == i {
			return d, true
		}
		buf = rest
	}
}

// indexBucket adds (or removes) bucket jk of side to the indexes of the
// keys that have watermarks.
func (j *Join) indexBucket(side int, jk string, add bool) {
	for i, idx := range j.keyIdx[side] {
		d, ok := keyValue(jk, i)
		if !ok || d.IsNull() {
			continue
		}
		if add {
			idx.add(d.I, jk)
		} else {
			idx.remove(d.I, jk)
		}
	}
}

// OnWatermark implements flow.WatermarkOp. Watermarks pass through a
// join only on equi-join keys, where both sides have one: every output row
// to come needs a new row of one side, so its key is at least the smaller
// of the two, in both output columns of the key. The stored rows below
// that can never match or be retracted any more, and are deleted (the
// rows they produced stay downstream).
func (j *Join) OnWatermark(in int, w flow.Watermark, e *flow.Emitter) ([]flow.Watermark, error) {
	out, err := j.onWatermark(in, w)
	if err != nil || j.gate == nil {
		return out, err
	}
	// EMIT ON WINDOW CLOSE: every change to a row whose key is below the
	// watermark has come (the join emits as it processes), so the rows it
	// closes leave the gate, final, before the watermark goes on.
	noted := false
	for _, w := range out {
		if j.gate.note(w) {
			noted = true
		}
	}
	if noted {
		err = j.gate.release(e)
	}
	return out, err
}

func (j *Join) onWatermark(in int, w flow.Watermark) ([]flow.Watermark, error) {
	if j.wm == nil {
		j.wm = flow.NewWatermarkMin(2)
	}
	var out []flow.Watermark
	for i, c := range j.keys[in] {
		if c != w.Col {
			continue
		}
		ts, ok := j.wm.Advance(in, i, w.Ts)
		if !ok {
			continue
		}
		out = j.appendOutWatermarks(out, j.keys[0][i], ts)
		out = j.appendOutWatermarks(out, j.widths[0]+j.keys[1][i], ts)
		for side := 0; side < 2; side++ {
			if err := j.dropBelow(side, i, ts); err != nil {
				return nil, err
			}
		}
	}
	for _, b := range j.bounds {
		var err error
		switch {
		case in == 1 && w.Col == b.R && b.Lo != math.MinInt64:
			err = j.dropRows(0, b.L, satAdd(w.Ts, b.Lo))
		case in == 0 && w.Col == b.L && b.Hi != math.MaxInt64:
			err = j.dropRows(1, b.R, satAdd(w.Ts, -b.Hi))
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// appendOutWatermarks appends watermark ts for column c of left++right to
// wms, at each output column that carries it.
func (j *Join) appendOutWatermarks(wms []flow.Watermark, c int, ts int64) []flow.Watermark {
	if j.out == nil {
		return append(wms, flow.Watermark{Col: c, Ts: ts})
	}
	for k, oc := range j.out {
		if oc == c {
			wms = append(wms, flow.Watermark{Col: k, Ts: ts})
		}
	}
	return wms
}

// satAdd adds without overflowing.
func satAdd(a, b int64) int64 {
	c := a + b
	switch {
	case b > 0 && c < a:
		return math.MaxInt64
	case b < 0 && c > a:
		return math.MinInt64
	}
	return c
}

func (j *Join) timeIndex(side, col int) {
	if j.tidx[side] == nil {
		j.tidx[side] = map[int]*timeIndex{}
	}
	if j.tidx[side][col] == nil {
		j.tidx[side][col] = newTimeIndex(col)
	}
}

// dropRows deletes side's rows whose time column col is below ts (no
// future row of the other side can match them).
func (j *Join) dropRows(side, col int, ts int64) error {
	s := &j.s[side]
	for _, te := range j.tidx[side][col].takeBelow(ts) {
		ref := te.ref
		b, err := j.probe(side, ref.jk)
		if err != nil {
			return err
		}
		if b == nil {
			continue
		}
		i := b.rows.findString(ref.rk)
		if i < 0 {
			continue // gone already
		}
		e := &b.rows.list[i]
		b.total -= e.n
		s.bytes -= rowBytes(e.rk, j.widths[side])
		s.touch(b, e)
		b.rows.remove(i)
		if len(b.rows.list) == 0 {
			delete(s.hot, ref.jk)
			s.markGone(ref.jk)
			j.indexBucket(side, ref.jk, false)
		}
	}
	return nil
}

// dropBelow deletes side's buckets whose key i is below ts.
func (j *Join) dropBelow(side, i int, ts int64) error {
	s := &j.s[side]
	if j.keyIdx[side] == nil {
		j.keyIdx[side] = map[int]*valueIndex{}
	}
	idx := j.keyIdx[side][i]
	if idx == nil {
		idx = newValueIndex()
		j.keyIdx[side][i] = idx
		add := func(jk string) {
			if d, ok := keyValue(jk, i); ok && !d.IsNull() {
				idx.add(d.I, jk)
			}
		}
		for jk := range s.hot {
			add(jk)
		}
		for jk := range s.cold {
			add(jk)
		}
		if s.partial {
			// The keys whose counts the side forgot are in the store only.
			last := ""
			err := j.db.Scan(storage.StatePrefix(j.opID), func(k, _ []byte) error {
				sd, jk, _, err := j.splitKey(k)
				if err != nil || sd != side || string(jk) == last {
					return err
				}
				last = string(jk)
				add(last)
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	for _, jk := range idx.takeBelow(ts) {
		b := s.hot[jk]
		_, gone := s.gone[jk]
		if _, ok := s.cold[jk]; s.partial && !ok && (b == nil && !gone && s.forgotten.has(jk) || b != nil && b.unknown) {
			// Read back, to count its rows out of forgot and delete them.
			var err error
			if b, err = j.load(side, jk, b); err != nil {
				return err
			}
			if b == nil {
				j.indexBucket(side, jk, false)
				continue
			}
		}
		switch {
		case b != nil && !b.spilled:
			// Its rows are deleted at the barrier, one by one.
			for k := range b.rows.list {
				e := &b.rows.list[k]
				s.touch(b, e)
				s.bytes -= rowBytes(e.rk, j.widths[side])
			}
			b.rows = rowSet{}
			b.total = 0
			delete(s.hot, jk)
		case b != nil:
			delete(s.hot, jk)
			delete(s.flying, jk)
			b.skip = true
			s.drop[jk] = struct{}{}
		default:
			if _, ok := s.cold[jk]; !ok {
				continue
			}
			delete(s.cold, jk)
			s.bytes -= coldBytes(jk)
			s.drop[jk] = struct{}{}
		}
		s.markGone(jk)
		// Out of the other keys' indexes too.
		j.indexBucket(side, jk, false)
	}
	return nil
}
