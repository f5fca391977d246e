package job

import (
	"sluice/exec/flow"
	"sluice/exec/limit"
	"sluice/sql/types"
)

// heldInputs wraps a batch query's operator that keeps every input row in
// memory (a join's hash tables, a window's partitions): it charges each
// input batch to the statement's memory budget before the operator sees
// it, so that a runaway join ends with 53200 rather than growing the
// process. The charge is given back when the run ends (Release).
type heldInputs struct {
	op    flow.Operator
	guard *limit.Guard
	held  int64
}

// Process implements flow.Operator.
func (h *heldInputs) Process(in int, b *types.Batch, out *flow.Emitter) error {
	if err := h.guard.Err(); err != nil {
		return err
	}
	var n int64
	for _, r := range b.Rows {
		n += limit.RowBytes(r) + 48 // the row and its index entry
	}
	if err := h.guard.Grow(n); err != nil {
		return err
	}
	h.held += n
	return h.op.Process(in, b, out)
}

// Checkpoint implements flow.Operator.
func (h *heldInputs) Checkpoint(b *flow.Barrier, out *flow.Emitter) error {
	return h.op.Checkpoint(b, out)
}

// Finish implements flow.Finisher.
func (h *heldInputs) Finish(out *flow.Emitter) error {
	if f, ok := h.op.(flow.Finisher); ok {
		return f.Finish(out)
	}
	return nil
}

// Release implements flow.Releaser.
func (h *heldInputs) Release() {
	if r, ok := h.op.(flow.Releaser); ok {
		r.Release()
	}
	h.guard.Shrink(h.held)
	h.held = 0
}
