package cdc

import (
	"context"

	"sluice/sql/types"
)

// Txn gathers the rows a session streams into chunks. A position names a
// point between transactions plus the rows of the next transaction
// already emitted (skip): a session resumed from it passes those rows by
// in its first transaction.
type Txn[P any] struct {
	w       *Worker[P]
	skip    uint64 // rows of the first transaction already emitted
	first   bool
	emitted uint64 // rows of the current transaction so far
	cur     *Chunk[P]
}

// NewTxn starts gathering for w, resuming after skip rows of the first
// transaction.
func NewTxn[P any](w *Worker[P], skip uint64) *Txn[P] {
	return &Txn[P]{w: w, skip: skip, first: true, cur: &Chunk[P]{}}
}

// Begin starts a transaction.
func (t *Txn[P]) Begin() { t.emitted = 0 }

// Add adds the rows of a change of the current transaction, sending a
// chunk whenever ChunkRows gather; at gives the position of a chunk that
// ends after the transaction's emitted-th row.
func (t *Txn[P]) Add(ctx context.Context, rows []types.Row, diffs []int64, at func(emitted uint64) P) error {
	for i := range rows {
		t.emitted++
		if t.first && t.emitted <= t.skip {
			continue // emitted before the checkpoint we resumed from
		}
		t.cur.Rows = append(t.cur.Rows, rows[i])
		t.cur.Diffs = append(t.cur.Diffs, diffs[i])
		if len(t.cur.Rows) >= ChunkRows {
			if err := t.Flush(ctx, at(t.emitted)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Commit ends the current transaction: the rows gathered go with p, the
// position after it.
func (t *Txn[P]) Commit(ctx context.Context, p P) error {
	t.first, t.skip, t.emitted = false, 0, 0
	return t.Flush(ctx, p)
}

// Flush sends the rows gathered (perhaps none) with position p.
func (t *Txn[P]) Flush(ctx context.Context, p P) error {
	c := t.cur
	c.Pos = p
	t.cur = &Chunk[P]{}
	return t.w.Send(ctx, c)
}

// Resuming reports whether the first transaction, part of which was
// emitted before, is not yet over: no position between transactions may
// be sent meanwhile.
func (t *Txn[P]) Resuming() bool { return t.first && t.skip > 0 }

// Pending is the number of rows gathered and not yet sent.
func (t *Txn[P]) Pending() int { return len(t.cur.Rows) }
