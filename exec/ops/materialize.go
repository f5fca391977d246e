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
//
// The relation lives in the store only: memory holds the changes of the
// epoch (each key's net multiplicity change and its latest inserted row)
// and the values written by epochs not yet known committed. A checkpoint
// adds each changed key's change to its multiplicity before the epoch,
// read from those in-flight values or else from the store (a point
// lookup, which the bloom filters answer for a new key).
type Materialize struct {
	rel    uint64
	key    []int
	prefix []byte
	db     *storage.DB
	// dirty: the keys changed since the last checkpoint.
	dirty map[string]*matChange
	// flying: the values written by epochs that may not be committed yet.
	flying map[string]matWrite
	kbuf   []byte
	// Rows counts the relation's rows, for SHOW and tests.
	Rows atomic.Int64
	// Forward: emit the input's changes downstream (materialize_replace.go).
	Forward bool
	// replacing: the first epoch of a new plan; fresh gathers its output.
	replacing bool
	fresh     map[string]*jrow
	// hist writes the relation's change log (changelog.go); nil without a
	// store.
	hist *histLog
	// dirtyBytes estimates the memory dirty holds; past MatSpillBytes
	// its changes go to run files (matspill.go).
	dirtyBytes int64
	// runs: the epoch's spilled changes, oldest first.
	runs []string
	// spilledEpoch: the last epoch whose values went to a sorted file
	// instead of flying, until it is known committed (0: none).
	spilledEpoch uint64
	// Done, when closed, ends a wait for a commit (the job stopped).
	Done <-chan struct{}
	// View: a view's materialization (spills past ViewSpillBytes).
	View bool
}

// matChange is one key's change in an epoch: its net multiplicity change
// and the last row inserted under it (nil if none was).
type matChange struct {
	n   int64
	row types.Row
}

// matWrite is a value written by epoch epoch: multiplicity n (0: deleted)
// and the row.
type matWrite struct {
	epoch uint64
	n     int64
	row   types.Row
}

// NewMaterialize creates the materialization of relation rel, counting
// its saved rows.
func NewMaterialize(rel uint64, key []int, db *storage.DB) (*Materialize, error) {
	m := &Materialize{rel: rel, key: key, prefix: storage.Key(storage.SpaceRelation, rel), db: db,
		dirty: map[string]*matChange{}, flying: map[string]matWrite{}}
	if db != nil {
		m.hist = newHistLog(rel, db)
		err := db.Scan(m.prefix, func(k, v []byte) error {
			n, c := binary.Varint(v)
			if c <= 0 {
				return pgerror.New(pgcode.DataCorrupted, "corrupt relation value")
			}
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
func (m *Materialize) Process(_ int, b *types.Batch, out *flow.Emitter) error {
	if m.replacing {
		m.processReplace(b)
		return nil
	}
	for i, r := range b.Rows {
		m.kbuf = RelKey(m.kbuf[:0], m.key, r)
		c := m.dirty[string(m.kbuf)]
		isNew := c == nil
		if isNew {
			c = &matChange{}
			m.dirty[string(m.kbuf)] = c
		}
		var added types.Row
		if b.Diffs[i] > 0 {
			c.row = r
			added = r
		}
		m.noteDirty(m.kbuf, isNew, added)
		c.n += b.Diffs[i]
		m.Rows.Add(b.Diffs[i])
		if m.Forward {
			if err := out.Emit(r, b.Diffs[i]); err != nil {
				return err
			}
		}
	}
	return m.maybeSpill()
}

// prior returns key k's multiplicity and row before this epoch's changes.
func (m *Materialize) prior(k string, key []byte) (int64, types.Row, error) {
	if w, ok := m.flying[k]; ok {
		return w.n, w.row, nil
	}
	if m.db == nil {
		return 0, nil, nil
	}
	v, err := m.db.Get(key)
	if err != nil || v == nil {
		return 0, nil, err
	}
	return DecodeRelValue(v)
}

// Checkpoint implements flow.Operator.
func (m *Materialize) Checkpoint(b *flow.Barrier, out *flow.Emitter) error {
	committed := uint64(0)
	if m.db != nil {
		if err := m.awaitSpilled(); err != nil {
			return err
		}
		committed = m.db.CommittedEpoch()
	}
	for k, w := range m.flying {
		if w.epoch <= committed {
			delete(m.flying, k)
		}
	}
	if m.replacing {
		if m.hist != nil {
			if _, err := m.hist.begin(b); err != nil {
				return err
			}
			m.hist.reset(b)
		}
		return m.checkpointReplace(b, out)
	}
	logging := false
	if m.hist != nil {
		var err error
		if logging, err = m.hist.begin(b); err != nil {
			return err
		}
	}
	if len(m.runs) > 0 {
		return m.checkpointSpilled(b, logging)
	}
	m.dirtyBytes = 0
	for k, c := range m.dirty {
		key := append(append(m.kbuf[:0], m.prefix...), k...)
		m.kbuf = key
		n, row, err := m.prior(k, key)
		if err != nil {
			return err
		}
		n0, row0 := n, row
		if c.row != nil {
			row = c.row
		}
		n += c.n
		if logging {
			m.hist.change(b, row0, n0, row, n)
		}
		switch {
		case n > 0 && row == nil:
			return pgerror.Newf(pgcode.Internal, "relation %d: a key holds %d rows but none was inserted", m.rel, n)
		case n > 0:
			b.W.Set(key, EncodeRelValue(n, row))
		default:
			b.W.Delete(key)
			row = nil
		}
		m.flying[k] = matWrite{epoch: b.Epoch, n: n, row: row}
	}
	clear(m.dirty)
	if logging {
		return m.hist.end(b)
	}
	return nil
}

// jrow is a row with its multiplicity.
type jrow struct {
	row types.Row
	n   int64
}
