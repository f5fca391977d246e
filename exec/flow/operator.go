package flow

import "sluice/sql/types"

// Operator is one dataflow operator. Its calls come from a single actor
// goroutine and never overlap.
type Operator interface {
	// Process handles one batch from input in, emitting changes to out.
	Process(in int, b *types.Batch, out *Emitter) error
	// Checkpoint is called once barrier b has arrived on every input
	// (aligned): the operator writes its state changes since the previous
	// barrier into b.W; it may emit before the barrier is forwarded.
	Checkpoint(b *Barrier, out *Emitter) error
}

// Finisher is an optional capability: Finish is called at end of stream
// (batch SELECTs) and may emit final results.
type Finisher interface {
	Finish(out *Emitter) error
}

// Collector is an optional capability of terminal operators: the actor
// reports the barrier to the coordinator after Checkpoint.
type Collector interface {
	Terminal() bool
}

// Starter is an optional capability: Start is called once when the actor
// starts, before any input (a subscription's backfill).
type Starter interface {
	Start(out *Emitter) error
}

// Sequenced is an optional capability of an operator of several inputs:
// First names an input (or -1 for none) whose start the operator must see
// whole before any other input's message: the actor reads only that input
// until its MsgStarted (or its end) arrives. A lookup join reads its
// stream only once its table's backfill is in, or the stream's first rows
// would find the table empty.
type Sequenced interface {
	First() int
}

// Releaser is an optional capability: Release is called once when the
// actor stops, to give back what the operator holds outside itself (its
// share of the state cache).
type Releaser interface {
	Release()
}

// WatermarkOp is an optional capability: the operator knows what a
// watermark on its input means for its output. Operators without it stop
// watermarks (their output carries none).
type WatermarkOp interface {
	// OnWatermark is called when input in's watermark on column w.Col
	// advances to w.Ts (the actor drops watermarks that do not advance).
	// It may emit rows (windows it closes) and returns the watermarks its
	// output gets, in output columns; the actor sends them after the rows
	// and drops those that would not advance.
	OnWatermark(in int, w Watermark, out *Emitter) ([]Watermark, error)
}

// CheckpointWatermarker is an optional capability of a WatermarkOp whose
// output watermark advances when it checkpoints (an operator that holds
// rows until a barrier, then emits those a watermark has closed): the
// actor sends what it returns after the barrier, dropping those that
// would not advance.
type CheckpointWatermarker interface {
	CheckpointWatermarks() []Watermark
}
