package ops

import (
	"encoding/binary"

	"sluice/exec/eval"
	"sluice/exec/flow"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// Join is a symmetric hash equi-join with retractions. Both inputs are
// kept, bucketed by join key; a change on one side probes the other. Outer
// joins track, per preserved row, whether it has matches, and swap the
// NULL-extended row in and out as matches come and go.
type Join struct {
	kind     spec.JoinKind
	keys     [2][]int
	widths   [2]int
	cond     func(types.Row) (bool, error)
	errs     *ErrorSink
	prefix   []byte
	sides    [2]map[string]*bucket
	dirty    [2]map[string]map[string]struct{} // join key -> row keys
	preserve [2]bool
	scratch  types.Row
	// lookup: the right side is a lookup table (FOR SYSTEM_TIME AS OF
	// PROCTIME()): its changes update the state but not results already
	// emitted, and left rows are not kept.
	lookup bool
	// wm combines the two sides' watermarks on each pair of join keys;
	// keyIdx indexes each side's buckets by the value of key i once that
	// key has a watermark: side -> i -> index.
	wm     *flow.WatermarkMin
	keyIdx [2]map[int]*valueIndex
}

type bucket struct {
	rows  map[string]*jrow
	total int64
}

type jrow struct {
	row types.Row
	n   int64
}

// NewJoin creates the join of node n (inputs of widths lw and rw) with
// state under opID, loading saved state from db (nil: batch query).
func NewJoin(n *spec.Node, lw, rw int, opID uint64, db *storage.DB, ctx *eval.Context, errs *ErrorSink) (*Join, error) {
	j := &Join{
		kind: n.JoinKind, keys: [2][]int{n.LeftKeys, n.RightKeys}, widths: [2]int{lw, rw},
		errs: errs, prefix: storage.Key(storage.SpaceState, opID), lookup: n.Temporal,
	}
	for s := 0; s < 2; s++ {
		j.sides[s] = map[string]*bucket{}
		j.dirty[s] = map[string]map[string]struct{}{}
	}
	j.preserve[0] = n.JoinKind == spec.LeftJoin || n.JoinKind == spec.FullJoin
	j.preserve[1] = n.JoinKind == spec.RightJoin || n.JoinKind == spec.FullJoin
	if n.Cond != nil {
		c, err := eval.CompilePredicate(n.Cond, ctx)
		if err != nil {
			return nil, err
		}
		j.cond = c
	}
	if db != nil {
		err := db.Scan(j.prefix, func(k, v []byte) error {
			rest := k[len(j.prefix):]
			if len(rest) < 1 {
				return pgerror.New(pgcode.DataCorrupted, "corrupt join state")
			}
			side := int(rest[0])
			rest = rest[1:]
			kl, m := binary.Uvarint(rest)
			if m <= 0 || uint64(len(rest)-m) < kl || side > 1 {
				return pgerror.New(pgcode.DataCorrupted, "corrupt join state")
			}
			jk := string(rest[m : m+int(kl)])
			rk := rest[m+int(kl):]
			row, err := types.DecodeRow(rk)
			if err != nil {
				return err
			}
			cnt, m2 := binary.Varint(v)
			if m2 <= 0 {
				return pgerror.New(pgcode.DataCorrupted, "corrupt join state")
			}
			b := j.sides[side][jk]
			if b == nil {
				b = &bucket{rows: map[string]*jrow{}}
				j.sides[side][jk] = b
			}
			b.rows[string(rk)] = &jrow{row: row, n: cnt}
			b.total += cnt
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return j, nil
}

func (j *Join) combine(side int, r, o types.Row) types.Row {
	out := make(types.Row, j.widths[0]+j.widths[1])
	if side == 0 {
		copy(out, r)
		if o != nil {
			copy(out[j.widths[0]:], o)
		}
	} else {
		if o != nil {
			copy(out, o)
		}
		copy(out[j.widths[0]:], r)
	}
	return out
}

// matches reports whether left row l and right row r satisfy the residual condition.
func (j *Join) matches(side int, r, o types.Row) (bool, error) {
	if j.cond == nil {
		return true, nil
	}
	var row types.Row
	if side == 0 {
		row = j.combineInto(r, o)
	} else {
		row = j.combineInto(o, r)
	}
	ok, err := j.cond(row)
	if err != nil {
		if err := j.errs.handle(err); err != nil {
			return false, err
		}
		return false, nil
	}
	return ok, nil
}

func (j *Join) combineInto(l, r types.Row) types.Row {
	if j.scratch == nil {
		j.scratch = make(types.Row, j.widths[0]+j.widths[1])
	}
	copy(j.scratch, l)
	copy(j.scratch[j.widths[0]:], r)
	return j.scratch
}

// degree returns how many rows of side `other` match row r of side `side`.
func (j *Join) degree(side int, r types.Row, b *bucket) (int64, error) {
	if b == nil {
		return 0, nil
	}
	if j.cond == nil {
		return b.total, nil
	}
	var d int64
	for _, o := range b.rows {
		ok, err := j.matches(side, r, o.row)
		if err != nil {
			return 0, err
		}
		if ok {
			d += o.n
		}
	}
	return d, nil
}

// Process implements flow.Operator.
func (j *Join) Process(side int, b *types.Batch, out *flow.Emitter) error {
	other := 1 - side
	var kbuf []byte
	for i, r := range b.Rows {
		diff := b.Diffs[i]
		kbuf = kbuf[:0]
		null := false
		if j.lookup && side == 1 {
			for _, c := range j.keys[side] {
				kbuf = types.AppendKey(kbuf, r[c])
			}
			j.store(side, string(kbuf), r, diff)
			continue
		}
		for _, c := range j.keys[side] {
			if r[c].IsNull() {
				null = true
			}
			kbuf = types.AppendKey(kbuf, r[c])
		}
		jk := string(kbuf)
		var ob *bucket
		if !null {
			ob = j.sides[other][jk]
		}
		// Matches of r on the other side.
		var deg int64
		if ob != nil {
			for _, o := range ob.rows {
				ok, err := j.matches(side, r, o.row)
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
				deg += o.n
				if j.preserve[other] {
					// o's degree changes by diff: swap its NULL-extended row.
					before, err := j.degree(other, o.row, j.bucketOf(side, jk, null))
					if err != nil {
						return err
					}
					after := before + diff
					if before == 0 && after > 0 {
						if err := out.Emit(j.combine(other, o.row, nil), -o.n); err != nil {
							return err
						}
					} else if before > 0 && after == 0 {
						if err := out.Emit(j.combine(other, o.row, nil), o.n); err != nil {
							return err
						}
					}
				}
				if err := out.Emit(j.combine(side, r, o.row), diff*o.n); err != nil {
					return err
				}
			}
		}
		if j.preserve[side] && deg == 0 {
			if err := out.Emit(j.combine(side, r, nil), diff); err != nil {
				return err
			}
		}
		if !j.lookup {
			j.store(side, jk, r, diff)
		}
	}
	return nil
}

func (j *Join) bucketOf(side int, jk string, null bool) *bucket {
	if null {
		return nil
	}
	return j.sides[side][jk]
}

func (j *Join) store(side int, jk string, r types.Row, diff int64) {
	rk := string(types.EncodeRow(nil, r))
	b := j.sides[side][jk]
	if b == nil {
		b = &bucket{rows: map[string]*jrow{}}
		j.sides[side][jk] = b
	}
	e := b.rows[rk]
	if e == nil {
		e = &jrow{row: r}
		b.rows[rk] = e
		if len(b.rows) == 1 {
			j.indexBucket(side, jk, r, true)
		}
	}
	e.n += diff
	b.total += diff
	if e.n == 0 {
		delete(b.rows, rk)
	}
	if len(b.rows) == 0 {
		delete(j.sides[side], jk)
		j.indexBucket(side, jk, r, false)
	}
	d := j.dirty[side][jk]
	if d == nil {
		d = map[string]struct{}{}
		j.dirty[side][jk] = d
	}
	d[rk] = struct{}{}
}

// Checkpoint implements flow.Operator.
func (j *Join) Checkpoint(b *flow.Barrier, _ *flow.Emitter) error {
	for side := 0; side < 2; side++ {
		for jk, rks := range j.dirty[side] {
			bk := j.sides[side][jk]
			for rk := range rks {
				key := append([]byte(nil), j.prefix...)
				key = append(key, byte(side))
				key = binary.AppendUvarint(key, uint64(len(jk)))
				key = append(key, jk...)
				key = append(key, rk...)
				var e *jrow
				if bk != nil {
					e = bk.rows[rk]
				}
				if e == nil {
					b.W.Delete(key)
				} else {
					b.W.Set(key, binary.AppendVarint(nil, e.n))
				}
			}
		}
		clear(j.dirty[side])
	}
	return nil
}

// indexBucket adds (or removes) bucket jk of side, whose rows have r's
// join key, to the indexes of the keys that have watermarks.
func (j *Join) indexBucket(side int, jk string, r types.Row, add bool) {
	for i, idx := range j.keyIdx[side] {
		d := r[j.keys[side][i]]
		if d.IsNull() {
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
func (j *Join) OnWatermark(in int, w flow.Watermark, _ *flow.Emitter) ([]flow.Watermark, error) {
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
		out = append(out, flow.Watermark{Col: j.keys[0][i], Ts: ts}, flow.Watermark{Col: j.widths[0] + j.keys[1][i], Ts: ts})
		for side := 0; side < 2; side++ {
			j.dropBelow(side, i, ts)
		}
	}
	return out, nil
}

// dropBelow deletes side's buckets whose key i is below ts.
func (j *Join) dropBelow(side, i int, ts int64) {
	if j.keyIdx[side] == nil {
		j.keyIdx[side] = map[int]*valueIndex{}
	}
	idx := j.keyIdx[side][i]
	if idx == nil {
		idx = newValueIndex()
		j.keyIdx[side][i] = idx
		for jk, b := range j.sides[side] {
			for _, e := range b.rows {
				if d := e.row[j.keys[side][i]]; !d.IsNull() {
					idx.add(d.I, jk)
				}
				break
			}
		}
	}
	for _, jk := range idx.takeBelow(ts) {
		b := j.sides[side][jk]
		if b == nil {
			continue
		}
		d := j.dirty[side][jk]
		if d == nil {
			d = map[string]struct{}{}
			j.dirty[side][jk] = d
		}
		var any types.Row
		for rk, e := range b.rows {
			d[rk] = struct{}{}
			any = e.row
		}
		delete(j.sides[side], jk)
		if any != nil {
			// Out of the other keys' indexes too.
			j.indexBucket(side, jk, any, false)
		}
	}
}

// StoredRows returns the number of distinct rows the join keeps.
func (j *Join) StoredRows() int {
	n := 0
	for side := 0; side < 2; side++ {
		for _, b := range j.sides[side] {
			n += len(b.rows)
		}
	}
	return n
}
