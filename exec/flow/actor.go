package flow

import (
	"context"
	"fmt"
	"reflect"
	"runtime/debug"
	"sync/atomic"
	"time"

	"sluice/sql/types"
)

// Actor runs one operator on its own goroutine: it receives from its
// inputs, aligns barriers, and sends to its output.
type Actor struct {
	Name   string
	Op     Operator
	Inputs []chan Msg
	Out    *Output
	// OnCollect, if set, is called after Checkpoint for each barrier
	// (terminal actors report to the coordinator).
	OnCollect func(epoch uint64)
	// OnError reports a failure of the operator; the actor then drops data
	// but keeps forwarding barriers so that checkpoints continue (its
	// job's shares of those epochs are discarded: see exec/job).
	OnError func(error)

	// Share, if set, gives the job's own barrier for each barrier
	// received: the actor's writes go to its job's share of the epoch.
	Share ShareFunc
	// SkipPos drops table chunks at or below it (Msg.Pos): a subscriber
	// that committed further than its table replays past them.
	SkipPos uint64
	// Failpoint, if set, is called with each batch's row count before the
	// operator sees it; a panic or error there fails the operator, and a
	// call that blocks holds the actor's barriers (tests).
	Failpoint func(ctx context.Context, rows int) error
	// Keep, set before the actor is stopped, hands its operator on
	// whole to a successor (a view changed in place): Release is not
	// called.
	Keep atomic.Bool
	// Kind names the operator (its plan node's kind) for metrics; Stats,
	// if set, receives the actor's figures (stats.go).
	Kind  string
	Stats *ActorStats

	failed  bool
	blocked int64 // nanoseconds spent in send so far (Stats only)

	// passed is the last epoch whose barrier the actor has forwarded;
	// phase is what its goroutine is doing (Phase*). Both are read by the
	// stuck-barrier report from other goroutines.
	passed atomic.Uint64
	phase  atomic.Int32
}

// The phases of an actor, for the stuck-barrier report.
const (
	PhaseReceiving  int32 = iota // waiting for input
	PhaseProcessing              // in the operator (Process, OnWatermark, Start, Finish)
	PhaseCheckpoint              // in the operator's Checkpoint
	PhaseSending                 // blocked sending downstream (backpressure)
	PhaseDone                    // Run has returned
	PhaseReading                 // a source in its connector's Read
	PhaseHeld                    // a source holding its reads: the state cache is over its limit
)

// PhaseName names phase p.
func PhaseName(p int32) string {
	switch p {
	case PhaseReceiving:
		return "receiving"
	case PhaseProcessing:
		return "processing"
	case PhaseCheckpoint:
		return "checkpointing"
	case PhaseSending:
		return "sending"
	case PhaseDone:
		return "done"
	case PhaseReading:
		return "reading"
	case PhaseHeld:
		return "held (state cache over its limit)"
	}
	return "unknown"
}

// SetPassed records that every epoch up to e is behind the actor (set
// before Run, to the last epoch injected when the actor joins the graph).
func (a *Actor) SetPassed(e uint64) { a.passed.Store(e) }

// Passed is the last epoch whose barrier the actor has forwarded.
func (a *Actor) Passed() uint64 { return a.passed.Load() }

// Phase is what the actor's goroutine is doing now (Phase*).
func (a *Actor) Phase() int32 { return a.phase.Load() }

// send sends m downstream, timing the wait and counting rows for Stats.
func (a *Actor) send(ctx context.Context, m Msg) error {
	prev := a.phase.Swap(PhaseSending)
	defer a.phase.Store(prev)
	if a.Stats == nil {
		return a.Out.Send(ctx, m)
	}
	t := time.Now()
	err := a.Out.Send(ctx, m)
	d := time.Since(t).Nanoseconds()
	a.blocked += d
	a.Stats.BlockedNanos.Add(d)
	if m.Kind == MsgData {
		a.Stats.RowsOut.Add(int64(len(m.Batch.Rows)))
	}
	return err
}

// Run processes messages until ctx is done or every input has ended.
func (a *Actor) Run(ctx context.Context) (err error) {
	defer a.phase.Store(PhaseDone)
	if r, ok := a.Op.(Releaser); ok {
		defer func() {
			if !a.Keep.Load() {
				r.Release()
			}
		}()
	}
	out := NewEmitter(func(b *types.Batch) error {
		return a.send(ctx, Msg{Kind: MsgData, Batch: b})
	})
	st := a.Stats
	// busy accounting: the time from receiving a message to the next
	// receive, less the time blocked sending, is busy.
	var t0 time.Time
	var b0 int64
	n := len(a.Inputs)
	blocked := make([]bool, n) // input has delivered the pending barrier
	ended := make([]bool, n)
	var pending *Barrier
	nblocked, nended := 0, 0
	inWM, outWM := wmTracker{}, wmTracker{}
	wop, _ := a.Op.(WatermarkOp)

	cases := make([]reflect.SelectCase, n+1)
	cases[n] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())}

	a.phase.Store(PhaseProcessing)
	starter, starts := a.Op.(Starter)
	if starts {
		if err := a.safe(func() error { return starter.Start(out) }); err != nil {
			a.fail(err)
		} else if err := out.Flush(); err != nil {
			return err
		}
		if err := a.send(ctx, Msg{Kind: MsgStarted}); err != nil {
			return err
		}
	}
	// first: the input read alone until its start is in (Sequenced).
	first := -1
	if sq, ok := a.Op.(Sequenced); ok && n > 1 {
		first = sq.First()
	}
	for nended < n {
		if st != nil && !t0.IsZero() {
			st.BusyNanos.Add(time.Since(t0).Nanoseconds() - (a.blocked - b0))
		}
		var in int
		var m Msg
		a.phase.Store(PhaseReceiving)
		if n == 1 {
			var ok bool
			select {
			case m, ok = <-a.Inputs[0]:
				if !ok {
					m = Msg{Kind: MsgEOS}
				}
			case <-ctx.Done():
				return ctx.Err()
			}
		} else {
			for i := 0; i < n; i++ {
				if blocked[i] || ended[i] || (first >= 0 && i != first) {
					cases[i] = reflect.SelectCase{Dir: reflect.SelectRecv}
				} else {
					cases[i] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(a.Inputs[i])}
				}
			}
			chosen, v, ok := reflect.Select(cases)
			if chosen == n {
				return ctx.Err()
			}
			if !ok {
				m = Msg{Kind: MsgEOS}
			} else {
				m = v.Interface().(Msg)
			}
			in = chosen
		}
		a.phase.Store(PhaseProcessing)
		if st != nil {
			t0, b0 = time.Now(), a.blocked
			if m.Kind == MsgData {
				st.RowsIn.Add(int64(len(m.Batch.Rows)))
				st.BatchesIn.Add(1)
			}
		}
		switch m.Kind {
		case MsgData:
			if a.failed || (m.Pos != 0 && m.Pos <= a.SkipPos) {
				continue
			}
			if err := a.safe(func() error {
				if a.Failpoint != nil {
					if err := a.Failpoint(ctx, len(m.Batch.Rows)); err != nil {
						return err
					}
				}
				return a.Op.Process(in, m.Batch, out)
			}); err != nil {
				a.fail(err)
				continue
			}
			if err := out.Flush(); err != nil {
				return err
			}
		case MsgWatermark:
			if a.failed || wop == nil || !inWM.advance(in, m.Watermark.Col, m.Watermark.Ts) {
				continue
			}
			var fwd []Watermark
			if err := a.safe(func() (err error) { fwd, err = wop.OnWatermark(in, m.Watermark, out); return err }); err != nil {
				a.fail(err)
				continue
			}
			if err := out.Flush(); err != nil {
				return err
			}
			for _, w := range fwd {
				if !outWM.advance(0, w.Col, w.Ts) {
					continue
				}
				if err := a.send(ctx, Msg{Kind: MsgWatermark, Watermark: w}); err != nil {
					return err
				}
			}
		case MsgBarrier:
			if a.Share != nil {
				m.Barrier = a.Share(m.Barrier)
			}
			if pending != nil && pending.Epoch != m.Barrier.Epoch {
				return fmt.Errorf("%s: barrier %d while aligning %d", a.Name, m.Barrier.Epoch, pending.Epoch)
			}
			if in == first {
				// Its start (if any) came before the barrier.
				first = -1
			}
			pending = m.Barrier
			blocked[in] = true
			nblocked++
			if nblocked+nended < n {
				continue
			}
			if err := a.barrier(ctx, pending, out); err != nil {
				return err
			}
			if cw, ok := a.Op.(CheckpointWatermarker); ok && !a.failed {
				for _, w := range cw.CheckpointWatermarks() {
					if !outWM.advance(0, w.Col, w.Ts) {
						continue
					}
					if err := a.send(ctx, Msg{Kind: MsgWatermark, Watermark: w}); err != nil {
						return err
					}
				}
			}
			for i := range blocked {
				blocked[i] = false
			}
			nblocked = 0
			pending = nil
		case MsgStarted:
			switch {
			case in == first:
				first = -1
			case n == 1 && !starts:
				if err := a.send(ctx, m); err != nil {
					return err
				}
			}
		case MsgEOS:
			if in == first {
				first = -1
			}
			ended[in] = true
			nended++
			if pending != nil && nblocked+nended == n {
				if err := a.barrier(ctx, pending, out); err != nil {
					return err
				}
				// The inputs that were waiting at the barrier are read again.
				for i := range blocked {
					blocked[i] = false
				}
				nblocked = 0
				pending = nil
			}
		}
	}
	if f, ok := a.Op.(Finisher); ok && !a.failed {
		if err := a.safe(func() error { return f.Finish(out) }); err != nil {
			return err
		}
		if err := out.Flush(); err != nil {
			return err
		}
	}
	return a.send(ctx, Msg{Kind: MsgEOS})
}

func (a *Actor) barrier(ctx context.Context, b *Barrier, out *Emitter) error {
	a.phase.Store(PhaseCheckpoint)
	if !a.failed {
		if err := a.safe(func() error { return a.Op.Checkpoint(b, out) }); err != nil {
			a.fail(err)
		} else if err := out.Flush(); err != nil {
			return err
		}
		if sr, ok := a.Op.(StateReporter); ok && a.Stats != nil {
			ss := sr.StateStats()
			a.Stats.StateBytes.Store(ss.Bytes)
			a.Stats.StateKeys.Store(ss.Keys)
			a.Stats.CacheLookups.Store(ss.Lookups)
			a.Stats.CacheMisses.Store(ss.Misses)
			a.Stats.HasState.Store(true)
		}
	}
	if a.OnCollect != nil {
		a.OnCollect(b.Epoch)
	}
	if err := a.send(ctx, Msg{Kind: MsgBarrier, Barrier: b}); err != nil {
		return err
	}
	a.passed.Store(b.Epoch)
	return nil
}

func (a *Actor) fail(err error) {
	a.failed = true
	if a.OnError != nil {
		a.OnError(fmt.Errorf("%s: %w", a.Name, err))
	}
}

// safe runs f, turning a panic into an error of this actor's job.
func (a *Actor) safe(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic in %s: %v\n%s", a.Name, r, debug.Stack())
		}
	}()
	return f()
}
