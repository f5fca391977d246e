// Helpers shared by the flow tests: a scripted fake operator that logs its
// calls and passes its input through, message constructors and receives
// that fail instead of hanging.
package flow

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"sluice/sql/types"
	"sluice/storage"
)

// waitLimit bounds every wait of these tests: reaching it is a failure
// (a hang), never the expected path.
const waitLimit = 10 * time.Second

// fakeOp passes every input row through (with its diff) and logs its calls.
// A row whose first column is panicOn makes Process panic.
type fakeOp struct {
	mu struct {
		sync.Mutex
		log []string
	}
	panicOn int64
}

func (f *fakeOp) logf(format string, args ...any) {
	f.mu.Lock()
	f.mu.log = append(f.mu.log, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

func (f *fakeOp) events() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.mu.log...)
}

func (f *fakeOp) Process(in int, b *types.Batch, out *Emitter) error {
	for i, r := range b.Rows {
		if f.panicOn != 0 && r[0].I == f.panicOn {
			panic(fmt.Sprintf("bad row %d", r[0].I))
		}
		f.logf("d%d:%d", in, r[0].I)
		if err := out.Emit(r, b.Diffs[i]); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeOp) Checkpoint(b *Barrier, _ *Emitter) error {
	f.logf("c%d", b.Epoch)
	return nil
}

// finishingOp is a fakeOp with Finish.
type finishingOp struct{ fakeOp }

func (f *finishingOp) Finish(out *Emitter) error {
	f.logf("finish")
	return out.Emit(types.Row{types.NewInt(-100)}, 1)
}

// startingOp is a fakeOp with Start.
type startingOp struct{ fakeOp }

func (f *startingOp) Start(out *Emitter) error {
	f.logf("start")
	return out.Emit(types.Row{types.NewInt(-200)}, 1)
}

func data(vals ...int64) Msg {
	b := types.NewBatch(len(vals))
	for _, v := range vals {
		b.Add(types.Row{types.NewInt(v)}, 1)
	}
	return Msg{Kind: MsgData, Batch: b}
}

func barrier(e uint64) Msg { return Msg{Kind: MsgBarrier, Barrier: &Barrier{Epoch: e}} }

// describe prints a message: "d:1,2" for data, "b3" for a barrier, "eos".
func describe(m Msg) string {
	switch m.Kind {
	case MsgData:
		s := make([]string, len(m.Batch.Rows))
		for i, r := range m.Batch.Rows {
			s[i] = fmt.Sprint(r[0].I)
			if m.Batch.Diffs[i] != 1 {
				s[i] += fmt.Sprintf("x%d", m.Batch.Diffs[i])
			}
		}
		return "d:" + strings.Join(s, ",")
	case MsgBarrier:
		s := fmt.Sprintf("b%d", m.Barrier.Epoch)
		if m.Barrier.Pause {
			s += "p"
		}
		return s
	case MsgEOS:
		return "eos"
	case MsgWatermark:
		return fmt.Sprintf("w%d:%d", m.Watermark.Col, m.Watermark.Ts)
	case MsgStarted:
		return "started"
	}
	return "?"
}

// recv receives one message or fails the test after waitLimit.
func recv(t *testing.T, c chan Msg) Msg {
	t.Helper()
	select {
	case m, ok := <-c:
		if !ok {
			t.Fatal("channel closed")
		}
		return m
	case <-time.After(waitLimit):
		t.Fatal("timed out waiting for a message")
	}
	return Msg{}
}

// expect receives len(want) messages and compares their descriptions.
func expect(t *testing.T, c chan Msg, want ...string) {
	t.Helper()
	for i, w := range want {
		if got := describe(recv(t, c)); got != w {
			t.Fatalf("message %d: got %s, want %s (expecting %v)", i, got, w, want)
		}
	}
}

func send(t *testing.T, c chan Msg, ms ...Msg) {
	t.Helper()
	for _, m := range ms {
		select {
		case c <- m:
		case <-time.After(waitLimit):
			t.Fatal("timed out sending")
		}
	}
}

// runActor runs a in the background; the returned function cancels it (if
// still running) and returns Run's result.
func runActor(t *testing.T, a *Actor) (cancel func(), result func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	var once sync.Once
	var err error
	result = func() error {
		t.Helper()
		once.Do(func() {
			select {
			case err = <-errc:
			case <-time.After(waitLimit):
				cancel()
				err = fmt.Errorf("actor did not stop")
				<-errc
			}
		})
		return err
	}
	t.Cleanup(func() { cancel(); _ = result() })
	return cancel, result
}

// openDB opens a store in a new directory, closed at cleanup after
// whatever the test started later (a coordinator, sources) has stopped.
func openDB(t *testing.T) *storage.DB {
	t.Helper()
	db, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// poll calls cond until it is true, failing after waitLimit.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
