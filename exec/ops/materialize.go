package ops

import (
	"encoding/binary"
	"sync/atomic"

	"sluice/exec/flow"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// Materialize keeps its input's accumulated contents as a relation that
// SELECT reads: under v/<rel>/<key> the value is the row's multiplicity
// followed by the row. With a unique key the multiplicity is 1; without
// one the whole row is the key.
type Materialize struct {
	rel    uint64
	key    []int
	prefix []byte
	rows   map[string]*jrow
	dirty  map[string]struct{}
	// Rows counts the relation's rows, for SHOW and tests.
	Rows atomic.Int64
}

// NewMaterialize creates the materialization of relation rel, loading its
// saved contents.
func NewMaterialize(rel uint64, key []int, db *storage.DB) (*Materialize, error) {
	m := &Materialize{rel: rel, key: key, prefix: storage.Key(storage.SpaceRelation, rel),
		rows: map[string]*jrow{}, dirty: map[string]struct{}{}}
	if db != nil {
		err := db.Scan(m.prefix, func(k, v []byte) error {
			n, row, err := DecodeRelValue(v)
			if err != nil {
				return err
			}
			m.rows[string(k[len(m.prefix):])] = &jrow{row: row, n: n}
			m.Rows.Add(n)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return m, nil
}

// DecodeRelValue decodes a materialized value: multiplicity and row.
func DecodeRelValue(v []byte) (int64, types.Row, error) {
	n, m := binary.Varint(v)
	if m <= 0 {
		return 0, nil, pgerror.New(pgcode.DataCorrupted, "corrupt relation value")
	}
	row, err := types.DecodeRow(v[m:])
	return n, row, err
}

// EncodeRelValue encodes a materialized value.
func EncodeRelValue(n int64, r types.Row) []byte {
	return types.EncodeRow(binary.AppendVarint(nil, n), r)
}

// RelKey returns the key of row r in a relation with key columns key (nil:
// the whole row).
func RelKey(buf []byte, key []int, r types.Row) []byte {
	if key == nil {
		for _, d := range r {
			buf = types.AppendKey(buf, d)
		}
		return buf
	}
	for _, c := range key {
		buf = types.AppendKey(buf, r[c])
	}
	return buf
}

// Terminal implements flow.Collector.
func (m *Materialize) Terminal() bool { return true }

// Process implements flow.Operator.
func (m *Materialize) Process(_ int, b *types.Batch, _ *flow.Emitter) error {
	var kbuf []byte
	for i, r := range b.Rows {
		kbuf = RelKey(kbuf[:0], m.key, r)
		e := m.rows[string(kbuf)]
		if e == nil {
			e = &jrow{}
			m.rows[string(kbuf)] = e
		}
		if b.Diffs[i] > 0 {
			e.row = r
		}
		e.n += b.Diffs[i]
		m.Rows.Add(b.Diffs[i])
		if e.n == 0 {
			delete(m.rows, string(kbuf))
		}
		m.dirty[string(kbuf)] = struct{}{}
	}
	return nil
}

// Checkpoint implements flow.Operator.
func (m *Materialize) Checkpoint(b *flow.Barrier, _ *flow.Emitter) error {
	for k := range m.dirty {
		key := append(append([]byte(nil), m.prefix...), k...)
		if e := m.rows[k]; e != nil && e.n > 0 {
			b.W.Set(key, EncodeRelValue(e.n, e.row))
		} else {
			b.W.Delete(key)
		}
	}
	clear(m.dirty)
	return nil
}

// jrow is a row with its multiplicity.
type jrow struct {
	row types.Row
	n   int64
}
