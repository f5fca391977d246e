// Tests of watermarks in the runtime: an actor hands its operator only the
// watermarks that advance, sends what the operator returns after the rows
// it emitted and only if it advances, and stops watermarks at operators
// that do not know them; WatermarkMin holds a column at -inf until every
// input has a watermark; ReaderSource drops late rows, counts them, sends
// its watermark after each batch and before each barrier, and saves the
// largest event time with its position, so that a restart drops the same
// rows and starts from the same watermark.
package flow

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"sluice/sql/types"
)

// wmOp is a fakeOp whose column-0 watermark is the minimum over its
// inputs; a watermark with Ts 99 first emits a row -99, and one with Ts
// 50 is answered with the lower watermark 1 (which the actor must drop).
type wmOp struct {
	fakeOp
	min *WatermarkMin
}

func (o *wmOp) OnWatermark(in int, w Watermark, out *Emitter) ([]Watermark, error) {
	o.logf("w%d:%d:%d", in, w.Col, w.Ts)
	if w.Ts == 99 {
		if err := out.Emit(types.Row{types.NewInt(-99)}, 1); err != nil {
			return nil, err
		}
	}
	if w.Ts == 50 {
		return []Watermark{{Col: 0, Ts: 1}}, nil
	}
	if ts, ok := o.min.Advance(in, w.Col, w.Ts); ok {
		return []Watermark{{Col: w.Col, Ts: ts}}, nil
	}
	return nil, nil
}

func wm(col int, ts int64) Msg {
	return Msg{Kind: MsgWatermark, Watermark: Watermark{Col: col, Ts: ts}}
}

func TestActorWatermarkMinOverInputs(t *testing.T) {
	op := &wmOp{min: NewWatermarkMin(2)}
	ins := []chan Msg{NewChan(), NewChan()}
	a := &Actor{Name: "union", Op: op, Inputs: ins, Out: &Output{}}
	out := NewChan()
	a.Out.Attach(out)
	_, result := runActor(t, a)

	// Input 1 has sent nothing: the minimum is -inf, nothing goes out.
	send(t, ins[0], wm(0, 10), data(1))
	expect(t, out, "d:1")
	send(t, ins[1], wm(0, 5))
	expect(t, out, "w0:5")
	send(t, ins[1], wm(0, 20))
	expect(t, out, "w0:10")
	// A watermark that does not advance its input is not even handed on.
	send(t, ins[0], wm(0, 8), wm(0, 10), data(2))
	expect(t, out, "d:2")
	send(t, ins[0], wm(0, 30))
	expect(t, out, "w0:20")
	// The rows an operator emits for a watermark go before it.
	send(t, ins[1], wm(0, 99))
	expect(t, out, "d:-99", "w0:30")
	// What the operator returns is dropped unless it advances the output.
	send(t, ins[0], wm(0, 50), data(3))
	expect(t, out, "d:3")
	close(ins[0])
	close(ins[1])
	expect(t, out, "eos")
	if err := result(); err != nil {
		t.Fatal(err)
	}
	want := []string{"w0:0:10", "d0:1", "w1:0:5", "w1:0:20", "d0:2", "w0:0:30", "w1:0:99", "w0:0:50", "d0:3"}
	if got := op.events(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("operator saw %v, want %v", got, want)
	}
}

func TestActorStopsWatermarksOfUnknowingOperators(t *testing.T) {
	in := NewChan()
	a := &Actor{Name: "plain", Op: &fakeOp{}, Inputs: []chan Msg{in}, Out: &Output{}}
	out := NewChan()
	a.Out.Attach(out)
	_, result := runActor(t, a)
	send(t, in, data(1), wm(0, 10), barrier(1), wm(0, 20), data(2))
	close(in)
	expect(t, out, "d:1", "b1", "d:2", "eos")
	if err := result(); err != nil {
		t.Fatal(err)
	}
}

func TestWatermarkMin(t *testing.T) {
	m := NewWatermarkMin(3)
	step := func(in, key int, ts int64, want int64, wantOK bool) {
		t.Helper()
		got, ok := m.Advance(in, key, ts)
		if ok != wantOK || (ok && got != want) {
			t.Fatalf("Advance(%d, %d, %d) = %d, %v; want %d, %v", in, key, ts, got, ok, want, wantOK)
		}
	}
	step(0, 0, 10, 0, false)
	step(1, 0, 20, 0, false)
	step(0, 1, 7, 0, false) // another key is separate
	step(2, 0, 5, 5, true)
	step(2, 0, 30, 10, true)
	step(0, 0, 9, 0, false) // an input going back does not lower anything
	step(0, 0, 25, 20, true)
	step(1, 0, 20, 0, false) // same minimum again: not an advance
}

// tsReader is a Seekable source of one TIMESTAMP column whose rows are
// ts[0], ts[1], … (microseconds), three per Read, then io.EOF.
type tsReader struct {
	ts   []int64
	next atomic.Int64
	eof  atomic.Bool // a Read has returned io.EOF
}

func (r *tsReader) Read(_ context.Context, b *types.Batch, max int) (int, error) {
	n := r.next.Load()
	if n >= int64(len(r.ts)) {
		r.eof.Store(true)
		return 0, io.EOF
	}
	k := int64(0)
	for ; k < 3 && n+k < int64(len(r.ts)) && k < int64(max); k++ {
		b.Add(types.Row{types.NewTimestamp(r.ts[n+k])}, 1)
	}
	r.next.Store(n + k)
	return int(k), nil
}

func (r *tsReader) Close() error { return nil }

func (r *tsReader) Position() []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(r.next.Load()))
}

func (r *tsReader) Seek(pos []byte) error {
	r.next.Store(int64(binary.BigEndian.Uint64(pos)))
	return nil
}

func TestReaderSourceWatermarkAndLateRows(t *testing.T) {
	db := openDB(t)
	coord, _ := startCoordinator(t, db, time.Hour)
	// Delay 10: a row is late when it is more than 10 below the largest
	// time before it. 5 (largest 20) and 1 (largest 30) are late.
	f := &tsReader{ts: []int64{10, 20, 15, 5, 30, 1, 21, 40}}
	rs, err := NewReaderSource(db, coord, "r", readerOp, f)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.SetWatermark(db, 0, 10); err != nil {
		t.Fatal(err)
	}
	coord.AddSource(rs)
	out := consume(t, rs.Out)
	stop := run(t, "reader", rs.Run)
	// Wait for the io.EOF, not the last rows: the source sends EndOfTime
	// when it meets the end, before it takes the next barrier.
	poll(t, "end of input", func() bool { return f.eof.Load() })
	if err := coord.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Batches of three: [10 20 15] [5 30 1] [21 40]; the watermark follows
	// each batch, and at the end of the input it goes to EndOfTime, so
	// that every window still open closes.
	got := fmt.Sprint(out.upTo(t, "b1"))
	if want := fmt.Sprintf("[10 20 15 w0:10 30 w0:20 21 40 w0:30 w0:%d b1]", EndOfTime); got != want {
		t.Fatalf("source sent %s, want %s", got, want)
	}
	if n := rs.Late.Load(); n != 2 {
		t.Fatalf("Late = %d, want 2", n)
	}
	stop()
	coord.RemoveSource(rs)

	// A restart seeks to the saved position and starts from the saved
	// watermark: it goes out first, and 25 (below 40 - 10) is late.
	f2 := &tsReader{ts: append(append([]int64(nil), f.ts...), 25, 35, 50)}
	rs2, err := NewReaderSource(db, coord, "r", readerOp, f2)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs2.SetWatermark(db, 0, 10); err != nil {
		t.Fatal(err)
	}
	if n := f2.next.Load(); n != int64(len(f.ts)) {
		t.Fatalf("restart seeked to %d", n)
	}
	out2 := consume(t, rs2.Out)
	run(t, "reader2", rs2.Run)
	// (A real bounded source's end is final, connector.Reader says; this
	// one grew while stopped, and ends again at EndOfTime.)
	poll(t, "replay", func() bool { return len(out2.log()) >= 5 })
	if got, want := fmt.Sprint(out2.log()), fmt.Sprintf("[w0:30 35 50 w0:40 w0:%d]", EndOfTime); got != want {
		t.Fatalf("after restart the source sent %s, want %s", got, want)
	}
	if n := rs2.Late.Load(); n != 1 {
		t.Fatalf("Late after restart = %d, want 1", n)
	}
}
