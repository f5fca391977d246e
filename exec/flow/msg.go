package flow

import (
	"context"
	"sync"

	"sluice/sql/types"
	"sluice/storage"
)

// MsgKind says what a Msg carries.
type MsgKind uint8

// Message kinds.
const (
	MsgData MsgKind = iota
	MsgBarrier
	MsgEOS // end of a bounded stream (batch SELECTs)
	// MsgWatermark carries a Watermark: a promise about the rows that
	// follow on the same channel.
	MsgWatermark
	// MsgStarted follows the rows an operator emits when it starts (a
	// Subscribe's backfill: the relation's contents when the job began).
	// An actor whose operator starts sends its own after its Start; an
	// actor of one input passes its input's on; other actors drop it once
	// read (an operator may wait for it: Sequenced).
	MsgStarted
)

// Msg travels on the channels between actors.
type Msg struct {
	Kind      MsgKind
	Batch     *types.Batch
	Barrier   *Barrier
	Watermark Watermark
	// Pos is a table source's log sequence: of the chunk a data message
	// carries, or of the last chunk before a barrier (0 elsewhere).
	Pos uint64
}

// Watermark says that no row sent after it on the same channel has a value
// below Ts in column Col of the sender's output (NULLs excepted). Ts is
// the column's microseconds (timestamps). A sender's watermarks never go
// back: each one for a column is above the previous one.
type Watermark struct {
	Col int
	Ts  int64
}

// Barrier separates epoch N's input from epoch N+1's; W collects epoch N's
// writes.
type Barrier struct {
	Epoch uint64
	W     *storage.EpochWriter
	Pause bool // sources wait for Resume after emitting it
}

// ShareFunc maps a barrier entering a job to the job's own barrier of the
// same epoch, whose W is the job's share of the epoch (see
// storage.DB.NewShareWriter).
type ShareFunc func(*Barrier) *Barrier

// chanCap is the capacity of every channel between actors: enough to keep
// both cores busy, small enough to bound memory and barrier latency.
const chanCap = 16

// NewChan returns a channel between two actors.
func NewChan() chan Msg { return make(chan Msg, chanCap) }

// Output fans one actor's messages out to every consumer. Consumers are
// added and removed only while the graph is paused.
type Output struct {
	mu    sync.Mutex
	chans []chan Msg
}

// Attach adds a consumer.
func (o *Output) Attach(c chan Msg) {
	o.mu.Lock()
	o.chans = append(o.chans, c)
	o.mu.Unlock()
}

// Consumers returns the channels attached to o (a copy), so that a
// reader of the running graph (the dashboard) can tell which actor
// consumes which output.
func (o *Output) Consumers() []chan Msg {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]chan Msg(nil), o.chans...)
}

// Detach removes a consumer.
func (o *Output) Detach(c chan Msg) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, x := range o.chans {
		if x == c {
			o.chans = append(o.chans[:i], o.chans[i+1:]...)
			return
		}
	}
}

// Send delivers m to every consumer.
func (o *Output) Send(ctx context.Context, m Msg) error {
	o.mu.Lock()
	chans := o.chans
	o.mu.Unlock()
	// A cancelled run stops here even when its consumer keeps up (select
	// picks at random among ready cases).
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, c := range chans {
		select {
		case c <- m:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Emitter collects an operator's output rows into batches.
type Emitter struct {
	b    *types.Batch
	full func(*types.Batch) error
	// hint is the size of the last batch handed on: the next one starts
	// with that room, so a steady flow does not regrow its slices.
	hint int
}

// maxBatch is the size at which an Emitter hands a batch on.
const maxBatch = 4096

// Emit adds one change to the output.
func (e *Emitter) Emit(r types.Row, diff int64) error {
	if e.b == nil {
		e.b = types.NewBatch(min(max(e.hint, 64), maxBatch))
	}
	e.b.Add(r, diff)
	if len(e.b.Rows) >= maxBatch {
		return e.Flush()
	}
	return nil
}

// Flush hands the pending batch on.
func (e *Emitter) Flush() error {
	if e.b == nil || len(e.b.Rows) == 0 {
		return nil
	}
	b := e.b
	e.b = nil
	e.hint = len(b.Rows)
	return e.full(b)
}

// NewEmitter returns an emitter that hands full batches to f.
func NewEmitter(f func(*types.Batch) error) *Emitter { return &Emitter{full: f} }
