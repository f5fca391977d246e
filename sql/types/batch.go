package types

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
