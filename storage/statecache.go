package storage

import (
	"encoding/binary"
	"io"
	"sync/atomic"

	"github.com/cockroachdb/pebble"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// DefaultStateCacheBytes is the memory operators may keep resident in
// front of their Pebble state unless the server is told otherwise.
const DefaultStateCacheBytes = 512 << 20

// StateCache is the memory budget shared by the operators that keep hot
// state in memory in front of Pebble and spill the rest: each reports the
// bytes it holds, and when the total passes the limit each evicts (clean,
// committed) state until its share fits.
type StateCache struct {
	limit atomic.Int64
	used  atomic.Int64
	// full is signalled (without blocking) when an addition takes the
	// total past the limit.
	full chan struct{}
}

// StateCache returns the store's shared state memory budget.
func (db *DB) StateCache() *StateCache { return &db.cache }

// SetLimit sets the budget in bytes (0: keep nothing that can be spilled).
func (c *StateCache) SetLimit(n int64) { c.limit.Store(max(n, 0)) }

// Limit returns the budget in bytes.
func (c *StateCache) Limit() int64 { return c.limit.Load() }

// Add records that an operator now holds d more bytes (d may be negative).
func (c *StateCache) Add(d int64) {
	u := c.used.Add(d)
	if d > 0 && u > c.limit.Load() && c.full != nil {
		select {
		case c.full <- struct{}{}:
		default:
		}
	}
}

// Full is signalled when the operators' state grows past the limit
// between checkpoints: their new state can be evicted only once an epoch
// has committed it, so the checkpoint coordinator starts one at once.
func (c *StateCache) Full() <-chan struct{} { return c.full }

// Used returns the bytes held by all operators.
func (c *StateCache) Used() int64 { return c.used.Load() }

// Target returns how many of its own bytes an operator holding own may
// keep: all of them while the budget holds, else its share of 90% of the
// limit (room for the next epoch's growth).
func (c *StateCache) Target(own int64) int64 {
	used, limit := c.used.Load(), c.limit.Load()
	if used <= limit || used <= 0 {
		return own
	}
	return int64(float64(own) * 0.9 * float64(limit) / float64(used))
}

// countMerger sums varint counts written with EpochWriter.Merge (or Set).
// A sum of zero stays a key of count 0, which readers skip, until the key
// is deleted: the merger is not a pebble.DeletableValueMerger, whose
// deletions Pebble v1.1's compaction gets wrong when the merge is onto a
// SET (one written, or one a compaction made of a merge onto a deletion):
// it drops the merged result and writes the old SET again, so a row
// retracted from a spilled join bucket came back.
var countMerger = &pebble.Merger{
	Name: "sluice.count",
	Merge: func(key, value []byte) (pebble.ValueMerger, error) {
		m := &countMerge{}
		return m, m.add(value)
	},
}

type countMerge struct {
	sum int64
	buf [binary.MaxVarintLen64]byte
}

func (m *countMerge) add(v []byte) error {
	d, n := binary.Varint(v)
	if n <= 0 {
		return pgerror.New(pgcode.DataCorrupted, "corrupt count operand")
	}
	m.sum += d
	return nil
}

func (m *countMerge) MergeNewer(v []byte) error { return m.add(v) }
func (m *countMerge) MergeOlder(v []byte) error { return m.add(v) }

func (m *countMerge) Finish(bool) ([]byte, io.Closer, error) {
	return binary.AppendVarint(m.buf[:0], m.sum), nil, nil
}
