// Tests of Actor, Output and Emitter: barrier alignment across two inputs
// (an input that delivered its barrier is not read until every input has;
// Checkpoint runs once per epoch, in order, before the barrier is
// forwarded), mismatched barriers, end of stream on one or all inputs,
// Start and Finish, a panicking or failing operator reported through
// OnError while barriers keep flowing, cancellation, fan-out of one output
// to several consumers, and the Emitter's batching.
package flow

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"sync"
	"testing"

	"sluice/sql/types"
)

type twoInputActor struct {
	op        *fakeOp
	in0, in1  chan Msg
	out       chan Msg
	collected chan uint64
	errs      chan error
	a         *Actor
}

func newTwoInputActor(t *testing.T, op Operator, fo *fakeOp) *twoInputActor {
	t.Helper()
	x := &twoInputActor{op: fo, in0: NewChan(), in1: NewChan(), out: make(chan Msg, 1024),
		collected: make(chan uint64, 100), errs: make(chan error, 100)}
	x.a = &Actor{Name: "test", Op: op, Inputs: []chan Msg{x.in0, x.in1}, Out: &Output{},
		OnCollect: func(e uint64) { x.collected <- e },
		OnError:   func(err error) { x.errs <- err }}
	x.a.Out.Attach(x.out)
	return x
}

func TestActorAlignsBarriers(t *testing.T) {
	op := &fakeOp{}
	x := newTwoInputActor(t, op, op)
	_, result := runActor(t, x.a)

	// Input 1 delivers its barrier and then more data; input 0 is behind.
	send(t, x.in1, barrier(1), data(100))
	send(t, x.in0, data(1))
	// Input 0's data before its barrier is processed; input 1's data after
	// the barrier waits.
	expect(t, x.out, "d:1")
	send(t, x.in0, barrier(1))
	expect(t, x.out, "b1", "d:100")
	if got, want := strings.Join(op.events(), " "), "d0:1 c1 d1:100"; got != want {
		t.Fatalf("operator calls %q, want %q", got, want)
	}
	if e := <-x.collected; e != 1 {
		t.Fatalf("collected %d", e)
	}

	close(x.in0)
	close(x.in1)
	expect(t, x.out, "eos")
	if err := result(); err != nil {
		t.Fatal(err)
	}
}

// sequencedOp is a fakeOp that reads input 1's start first (Sequenced).
type sequencedOp struct{ fakeOp }

func (*sequencedOp) First() int { return 1 }

// TestActorSequencedInput: an operator that names a first input (a lookup
// join: its table) sees none of the other input until that input's start
// (MsgStarted) or end, or a barrier on it, has arrived, even when the other
// input's data is there first; the start message goes no further.
func TestActorSequencedInput(t *testing.T) {
	t.Run("started", func(t *testing.T) {
		op := &sequencedOp{}
		x := newTwoInputActor(t, op, &op.fakeOp)
		_, result := runActor(t, x.a)
		send(t, x.in0, data(1), data(2))
		send(t, x.in1, data(100))
		expect(t, x.out, "d:100")
		send(t, x.in1, data(101), Msg{Kind: MsgStarted})
		expect(t, x.out, "d:101", "d:1", "d:2")
		send(t, x.in0, barrier(1))
		send(t, x.in1, barrier(1))
		expect(t, x.out, "b1")
		if got, want := strings.Join(op.events(), " "), "d1:100 d1:101 d0:1 d0:2 c1"; got != want {
			t.Fatalf("operator calls %q, want %q", got, want)
		}
		close(x.in0)
		close(x.in1)
		expect(t, x.out, "eos")
		if err := result(); err != nil {
			t.Fatal(err)
		}
	})
	for _, end := range []string{"barrier", "eos"} {
		t.Run("opened by "+end, func(t *testing.T) {
			// An input that never starts opens the others at its first
			// barrier or its end (not a deadlock).
			op := &sequencedOp{}
			x := newTwoInputActor(t, op, &op.fakeOp)
			_, result := runActor(t, x.a)
			send(t, x.in0, data(1))
			send(t, x.in1, data(100))
			expect(t, x.out, "d:100")
			if end == "barrier" {
				send(t, x.in1, barrier(1))
				expect(t, x.out, "d:1")
				send(t, x.in0, barrier(1))
				expect(t, x.out, "b1")
				close(x.in1)
			} else {
				close(x.in1)
				expect(t, x.out, "d:1")
			}
			close(x.in0)
			expect(t, x.out, "eos")
			if err := result(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestActorAlignmentRandom interleaves data and barriers of both inputs in
// random orders: every data message comes out between the barriers that
// enclose it on its input, and Checkpoint runs once per epoch in order.
func TestActorAlignmentRandom(t *testing.T) {
	const epochs = 30
	rng := rand.New(rand.NewSource(3))
	op := &fakeOp{}
	x := newTwoInputActor(t, op, op)
	_, result := runActor(t, x.a)

	// Scripts per input: data values encode their epoch (epoch*1000+i).
	var scripts [2][]Msg
	for e := uint64(1); e <= epochs; e++ {
		for in := 0; in < 2; in++ {
			for i := rng.Intn(4); i > 0; i-- {
				scripts[in] = append(scripts[in], data(int64(e)*1000+int64(in*100+i)))
			}
			scripts[in] = append(scripts[in], barrier(e))
		}
	}
	scripts[0] = append(scripts[0], Msg{Kind: MsgEOS})
	scripts[1] = append(scripts[1], Msg{Kind: MsgEOS})
	// Feed both inputs concurrently, each at its own random pace.
	var wg sync.WaitGroup
	for in, c := range []chan Msg{x.in0, x.in1} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(in)))
			for _, m := range scripts[in] {
				if r.Intn(3) == 0 {
					runtime.Gosched()
				}
				c <- m
			}
		}()
	}

	epoch := uint64(1)
	seen := 0
	for {
		m := recv(t, x.out)
		if m.Kind == MsgEOS {
			break
		}
		switch m.Kind {
		case MsgData:
			v := m.Batch.Rows[0][0].I
			if uint64(v/1000) != epoch {
				t.Fatalf("data %d of epoch %d came out in epoch %d", v, v/1000, epoch)
			}
			seen++
		case MsgBarrier:
			if m.Barrier.Epoch != epoch {
				t.Fatalf("barrier %d, want %d", m.Barrier.Epoch, epoch)
			}
			epoch++
		}
	}
	wg.Wait()
	if err := result(); err != nil {
		t.Fatal(err)
	}
	if epoch != epochs+1 {
		t.Fatalf("saw %d barriers", epoch-1)
	}
	want := len(scripts[0]) + len(scripts[1]) - 2*epochs - 2
	if seen != want {
		t.Fatalf("saw %d data messages, want %d", seen, want)
	}
	var cps []string
	for _, ev := range op.events() {
		if strings.HasPrefix(ev, "c") {
			cps = append(cps, ev)
		}
	}
	var wantCps []string
	for e := 1; e <= epochs; e++ {
		wantCps = append(wantCps, fmt.Sprintf("c%d", e))
	}
	if strings.Join(cps, " ") != strings.Join(wantCps, " ") {
		t.Fatalf("checkpoints %v, want %v", cps, wantCps)
	}
	for e := uint64(1); e <= epochs; e++ {
		if got := <-x.collected; got != e {
			t.Fatalf("collected %d, want %d", got, e)
		}
	}
}

func TestActorMismatchedBarriers(t *testing.T) {
	op := &fakeOp{}
	x := newTwoInputActor(t, op, op)
	_, result := runActor(t, x.a)
	send(t, x.in0, barrier(1))
	send(t, x.in1, barrier(2))
	// Which barrier is read first is up to the scheduler.
	err := result()
	if err == nil || !strings.Contains(err.Error(), "while aligning") {
		t.Fatalf("Run = %v, want a misalignment error", err)
	}
}

// TestActorEndOfStream: an input that ends no longer holds up alignment;
// when every input has ended, Finish runs and end of stream is forwarded.
func TestActorEndOfStream(t *testing.T) {
	for _, how := range []string{"close", "message"} {
		t.Run(how, func(t *testing.T) {
			op := &finishingOp{}
			x := newTwoInputActor(t, op, &op.fakeOp)
			_, result := runActor(t, x.a)
			end := func(c chan Msg) {
				if how == "close" {
					close(c)
				} else {
					send(t, c, Msg{Kind: MsgEOS})
				}
			}

			// Input 0 is waiting at barrier 1 when input 1 ends: the barrier
			// completes.
			send(t, x.in0, data(1), barrier(1))
			expect(t, x.out, "d:1")
			poll(t, "the actor to take barrier 1", func() bool { return len(x.in0) == 0 })
			end(x.in1)
			expect(t, x.out, "b1")
			// Input 0 alone is read again and aligns by itself.
			send(t, x.in0, data(2), barrier(2), data(3), barrier(3))
			expect(t, x.out, "d:2", "b2", "d:3", "b3")
			end(x.in0)
			expect(t, x.out, "d:-100", "eos")
			if err := result(); err != nil {
				t.Fatal(err)
			}
			if got, want := strings.Join(op.events(), " "), "d0:1 c1 d0:2 c2 d0:3 c3 finish"; got != want {
				t.Fatalf("calls %q, want %q", got, want)
			}
		})
	}
}

// TestActorEndOfStreamBeforeBarrier: one input ends while the other is
// anywhere (the actor may see the end before or after the barrier).
func TestActorEndOfStreamBeforeBarrier(t *testing.T) {
	op := &fakeOp{}
	x := newTwoInputActor(t, op, op)
	_, result := runActor(t, x.a)
	close(x.in0)
	send(t, x.in1, data(5), barrier(1), data(6))
	expect(t, x.out, "d:5", "b1", "d:6")
	close(x.in1)
	expect(t, x.out, "eos")
	if err := result(); err != nil {
		t.Fatal(err)
	}
}

func TestActorStartAndSingleInput(t *testing.T) {
	op := &startingOp{}
	in, out := NewChan(), NewChan()
	a := &Actor{Name: "single", Op: op, Inputs: []chan Msg{in}, Out: &Output{}}
	a.Out.Attach(out)
	_, result := runActor(t, a)
	expect(t, out, "d:-200", "started")
	// An upstream's start goes no further than a starting actor.
	send(t, in, Msg{Kind: MsgStarted}, data(1, 2), barrier(1), data(3))
	expect(t, out, "d:1,2", "b1", "d:3")
	close(in)
	expect(t, out, "eos")
	if err := result(); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(op.events(), " "), "start d0:1 d0:2 c1 d0:3"; got != want {
		t.Fatalf("calls %q, want %q", got, want)
	}
}

// errOp fails in the call named by failIn.
type errOp struct {
	fakeOp
	failIn string
}

func (e *errOp) Process(in int, b *types.Batch, out *Emitter) error {
	if e.failIn == "process" {
		return errors.New("process failed")
	}
	return e.fakeOp.Process(in, b, out)
}

func (e *errOp) Checkpoint(b *Barrier, out *Emitter) error {
	e.fakeOp.Checkpoint(b, out)
	if e.failIn == "checkpoint" {
		panic("checkpoint exploded")
	}
	return nil
}

func (e *errOp) Finish(*Emitter) error {
	e.logf("finish")
	return nil
}

// TestActorOperatorFailure: a panic (or error) in the operator is reported
// once through OnError; the actor then drops data and stops calling the
// operator, but still forwards and collects every barrier and the end of
// stream, so that checkpoints of the other jobs continue.
func TestActorOperatorFailure(t *testing.T) {
	for _, tc := range []struct {
		name    string
		op      *errOp
		wantErr string
		before  []string // messages out before barrier 1
	}{
		{"panic in process", &errOp{fakeOp: fakeOp{panicOn: 13}}, "panic in test: bad row 13", []string{"d:1"}},
		{"error in process", &errOp{failIn: "process"}, "test: process failed", nil},
		{"panic in checkpoint", &errOp{failIn: "checkpoint"}, "panic in test: checkpoint exploded", []string{"d:1", "d:13"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newTwoInputActor(t, tc.op, &tc.op.fakeOp)
			_, result := runActor(t, x.a)
			send(t, x.in0, data(1), data(13), barrier(1))
			send(t, x.in1, barrier(1))
			expect(t, x.out, append(tc.before, "b1")...)
			var err error
			select {
			case err = <-x.errs:
			default:
				t.Fatal("no error reported before the barrier was forwarded")
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("OnError(%v), want %q", err, tc.wantErr)
			}
			// Later data is dropped; barriers still flow and are collected.
			send(t, x.in0, data(2), barrier(2))
			send(t, x.in1, data(3), barrier(2))
			expect(t, x.out, "b2")
			close(x.in0)
			close(x.in1)
			expect(t, x.out, "eos")
			if err := result(); err != nil {
				t.Fatal(err)
			}
			if got := []uint64{<-x.collected, <-x.collected}; got[0] != 1 || got[1] != 2 {
				t.Fatalf("collected %v", got)
			}
			select {
			case err := <-x.errs:
				t.Fatalf("second error reported: %v", err)
			default:
			}
			for _, ev := range tc.op.events() {
				if ev == "c2" || ev == "finish" || ev == "d0:2" || ev == "d1:3" {
					t.Fatalf("operator called after failing: %v", tc.op.events())
				}
			}
		})
	}
}

func TestActorCancel(t *testing.T) {
	for _, inputs := range []int{1, 2} {
		t.Run(fmt.Sprint(inputs), func(t *testing.T) {
			op := &fakeOp{}
			a := &Actor{Name: "c", Op: op, Out: &Output{}}
			for i := 0; i < inputs; i++ {
				a.Inputs = append(a.Inputs, NewChan())
			}
			cancel, result := runActor(t, a)
			cancel()
			if err := result(); !errors.Is(err, context.Canceled) {
				t.Fatalf("Run after cancel = %v", err)
			}
		})
	}

	// An actor blocked sending to a consumer that does not read stops too.
	op := &fakeOp{}
	in := NewChan()
	a := &Actor{Name: "blocked", Op: op, Inputs: []chan Msg{in}, Out: &Output{}}
	a.Out.Attach(make(chan Msg)) // never read
	cancel, result := runActor(t, a)
	send(t, in, data(1))
	cancel()
	if err := result(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel = %v", err)
	}
}

func TestOutputFanOut(t *testing.T) {
	o := &Output{}
	cs := []chan Msg{NewChan(), NewChan(), NewChan()}
	for _, c := range cs {
		o.Attach(c)
	}
	ctx := context.Background()
	msgs := []Msg{data(1), barrier(1), data(2, 3), {Kind: MsgEOS}}
	for _, m := range msgs {
		if err := o.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cs {
		for j, m := range msgs {
			got := recv(t, c)
			if describe(got) != describe(m) || got.Batch != m.Batch || got.Barrier != m.Barrier {
				t.Fatalf("consumer %d message %d: %s, want %s", i, j, describe(got), describe(m))
			}
		}
	}

	o.Detach(cs[1])
	o.Detach(make(chan Msg)) // not attached: no effect
	if err := o.Send(ctx, data(9)); err != nil {
		t.Fatal(err)
	}
	expect(t, cs[0], "d:9")
	expect(t, cs[2], "d:9")
	if len(cs[1]) != 0 {
		t.Fatal("detached consumer received a message")
	}

	// A full consumer blocks Send until the context ends.
	full := make(chan Msg)
	o.Attach(full)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := o.Send(cctx, data(10)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send to a full consumer = %v", err)
	}
	// An output with no consumer drops its messages.
	if err := (&Output{}).Send(ctx, data(1)); err != nil {
		t.Fatal(err)
	}
}

func TestActorFanOutToConsumers(t *testing.T) {
	op := &fakeOp{}
	in := NewChan()
	a := &Actor{Name: "fan", Op: op, Inputs: []chan Msg{in}, Out: &Output{}}
	outs := []chan Msg{NewChan(), NewChan()}
	for _, c := range outs {
		a.Out.Attach(c)
	}
	_, result := runActor(t, a)
	send(t, in, data(1), barrier(1), data(2))
	close(in)
	for _, c := range outs {
		expect(t, c, "d:1", "b1", "d:2", "eos")
	}
	if err := result(); err != nil {
		t.Fatal(err)
	}
}

func TestEmitterBatches(t *testing.T) {
	var sizes []int
	total := 0
	e := NewEmitter(func(b *types.Batch) error {
		sizes = append(sizes, b.Len())
		for i, r := range b.Rows {
			if r[0].I != int64(total) || b.Diffs[i] != -1 {
				return fmt.Errorf("row %d out of order", total)
			}
			total++
		}
		return nil
	})
	if err := e.Flush(); err != nil || len(sizes) != 0 {
		t.Fatalf("empty Flush handed on %v, %v", sizes, err)
	}
	n := 2*maxBatch + 5
	for i := 0; i < n; i++ {
		if err := e.Emit(types.Row{types.NewInt(int64(i))}, -1); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(sizes) != fmt.Sprint([]int{maxBatch, maxBatch}) {
		t.Fatalf("full batches %v", sizes)
	}
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sizes) != fmt.Sprint([]int{maxBatch, maxBatch, 5}) || total != n {
		t.Fatalf("batches %v, %d rows", sizes, total)
	}

	boom := errors.New("boom")
	e = NewEmitter(func(*types.Batch) error { return boom })
	e.Emit(types.Row{types.NewInt(1)}, 1)
	if err := e.Flush(); err != boom {
		t.Fatalf("Flush = %v, want the consumer's error", err)
	}
}
