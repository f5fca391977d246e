package types

import "unsafe"

// Batch is a set of row changes moving through the dataflow: row i is
// added Diffs[i] times (negative: retracted). Operators move batches of
// hundreds to thousands of rows, never one row per message. A batch handed
// to the next operator is immutable from then on.
type Batch struct {
	Rows  []Row
	Diffs []int64
}

// Len returns the number of changes.
func (b *Batch) Len() int { return len(b.Rows) }

// Add appends one change.
func (b *Batch) Add(r Row, diff int64) {
	b.Rows = append(b.Rows, r)
	b.Diffs = append(b.Diffs, diff)
}

// NewBatch returns an empty batch with room for n changes.
func NewBatch(n int) *Batch {
	return &Batch{Rows: make([]Row, 0, n), Diffs: make([]int64, 0, n)}
}

// RowAlloc cuts rows from slabs shared by up to SlabRows rows: one
// allocation for many rows built together. A row kept long after its
// neighbours are dropped keeps its slab alive, so slabs stay small (at
// most 16 KiB unless one row is larger).
type RowAlloc struct {
	slab []Datum
}

// SlabRows is the most rows one RowAlloc slab holds.
const SlabRows = 32

const slabBytes = 16 << 10

// Row returns a zeroed row of n values (full capacity: appending to it
// copies).
func (a *RowAlloc) Row(n int) Row {
	if len(a.slab) < n {
		if n == 0 {
			return Row{}
		}
		rows := min(SlabRows, max(1, slabBytes/(n*int(unsafe.Sizeof(Datum{})))))
		a.slab = make([]Datum, n*rows)
	}
	r := a.slab[:n:n]
	a.slab = a.slab[n:]
	return r
}
