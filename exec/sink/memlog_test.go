package sink

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"sluice/exec/connector"
	"sluice/sql/types"
)

// TestDelivererFromMemory: epochs checkpointed while the deliverer keeps
// up are delivered from the writer's memory, not read back from the log;
// epochs logged before it started, an epoch too large to hold, and a
// restart (a deliverer with an empty memory) are read from the log; every
// epoch is delivered once, in order, with the changes it logged, and the
// log is empty afterwards. Both kinds of sink: a keyed one hands over
// its changes, an append-only one its encoded log chunks.
// A streaming sink (connector.StreamSink) takes an append-only epoch
// chunk by chunk, whether held in memory or read from the log; a wire sink (connector.WireSink) takes it
// as the bytes the writer encoded for it while the epoch ran, and the
// epochs read from the log (a restart) as changes, with the same rows.
func TestDelivererFromMemory(t *testing.T) {
	t.Run("keyed", func(t *testing.T) { testDelivererFromMemory(t, []int{0}, "") })
	t.Run("append-only", func(t *testing.T) { testDelivererFromMemory(t, nil, "") })
	t.Run("append-only-streaming", func(t *testing.T) { testDelivererFromMemory(t, nil, "stream") })
	t.Run("append-only-wire", func(t *testing.T) { testDelivererFromMemory(t, nil, "wire") })
	// Every epoch ingested (storage.DB.SetIngestBytes(0)): an append-only
	// sink's log chunks go to the store as a run that refers to the chunks
	// the MemLog holds, not copies of them; the epochs read back from the
	// log after the memory bound and the restart are still those rows.
	t.Run("append-only-ingested", func(t *testing.T) { testDelivererFromMemory(t, nil, "ingest") })
	t.Run("append-only-streaming-ingested", func(t *testing.T) { testDelivererFromMemory(t, nil, "stream+ingest") })
}

// wireMemSink is a memSink that takes epochs held in memory as the bytes
// of wireEncode, and counts the epochs it got so.
type wireMemSink struct {
	*memSink
	wired int
}

func (s *wireMemSink) Open(context.Context, connector.SinkConfig) (connector.Sink, error) {
	return s, nil
}

// wireEncode writes a change as "<key> <value>\n".
func wireEncode(buf []byte, c connector.Change) ([]byte, error) {
	if c.After == nil {
		return nil, fmt.Errorf("a retraction")
	}
	return fmt.Appendf(buf, "%d %s\n", c.After[0].I, c.After[1].S), nil
}

func (s *wireMemSink) WriteWire(ctx context.Context, e uint64, pieces [][]byte) error {
	var all []connector.Change
	for _, p := range pieces {
		for _, l := range strings.Split(strings.TrimSuffix(string(p), "\n"), "\n") {
			var k int64
			var v string
			if _, err := fmt.Sscanf(l, "%d %s", &k, &v); err != nil {
				return fmt.Errorf("line %q: %w", l, err)
			}
			all = append(all, connector.Change{After: row(k, v)})
		}
	}
	s.wired++
	return s.Write(ctx, e, all)
}

// streamMemSink is a memSink that takes epochs as streams, and counts the
// epochs it got so.
type streamMemSink struct {
	*memSink
	streamed int
}

func (s *streamMemSink) Open(context.Context, connector.SinkConfig) (connector.Sink, error) {
	return s, nil
}

func (s *streamMemSink) WriteChanges(ctx context.Context, e uint64, changes connector.Changes) error {
	var all []connector.Change
	if err := changes(func(piece []connector.Change) error {
		all = append(all, piece...) // the piece is reused, not its rows
		return nil
	}); err != nil {
		return err
	}
	s.streamed++
	return s.Write(ctx, e, all)
}

func testDelivererFromMemory(t *testing.T, key []int, kind string) {
	db := openDB(t)
	if k, ok := strings.CutSuffix(kind, "+ingest"); ok || kind == "ingest" {
		db.SetIngestBytes(0, 0)
		kind = k
		if kind == "ingest" {
			kind = ""
		}
	}
	mem := &MemLog{}
	w := NewWriter(21, key, false)
	w.Mem = mem
	if kind == "wire" {
		w.Wire = wireEncode
	}
	epoch := uint64(0)
	step := func(rows ...int64) {
		t.Helper()
		epoch++
		for _, k := range rows {
			_ = w.Process(0, batch([]types.Row{row(k, fmt.Sprint("e", epoch))}, []int64{1}), nil)
		}
		checkpoint(t, db, w, epoch)
	}
	step(1) // epochs 1 and 2 come before the deliverer starts
	step(2)
	ms := &memSink{}
	var factory connector.SinkFactory = ms
	sms := &streamMemSink{memSink: ms}
	wms := &wireMemSink{memSink: ms}
	switch kind {
	case "stream":
		factory = sms
	case "wire":
		factory = wms
	}
	d := &Deliverer{ID: 21, Name: "s", Factory: factory, DB: db, Mem: mem, MinBackoff: time.Millisecond}
	stop := run(t, d)
	waitFor(t, "delivery of epoch 2", func() bool { return d.Status().Delivered == 2 })
	if n := d.FromMemory(); n != 0 {
		t.Fatalf("%d epochs from memory before the deliverer had read the log", n)
	}
	// Wait until the deliverer has seen the log empty.
	waitFor(t, "the deliverer to find the log empty", func() bool { return d.Status().Pending == 0 })
	time.Sleep(20 * time.Millisecond)
	step(3)
	d.Notify()
	waitFor(t, "delivery of epoch 3", func() bool { return d.Status().Delivered == 3 })
	step() // epoch 4: empty
	step(5, 6)
	d.Notify()
	waitFor(t, "delivery of epoch 5", func() bool { return d.Status().Delivered == 5 })
	if n := d.FromMemory(); n != 2 {
		t.Fatalf("%d epochs from memory, want 2 (3 and 5)", n)
	}
	// SHOW SINKS's pending counts what is left, not the epoch just written.
	if p := d.Status().Pending; p != 0 {
		t.Fatalf("pending %d after every committed epoch was delivered from memory, want 0", p)
	}
	// An epoch larger than the memory bound goes through the log.
	old := memLogBytes.Load()
	memLogBytes.Store(10)
	step(7, 8, 9)
	memLogBytes.Store(old)
	step(10)
	d.Notify()
	waitFor(t, "delivery of epoch 7", func() bool { return d.Status().Delivered == 7 })
	if n := d.FromMemory(); n != 2 {
		t.Fatalf("%d epochs from memory, want still 2 (epoch 6 was not held, so 7 came from the log too)", n)
	}
	step(11)
	d.Notify()
	waitFor(t, "delivery of epoch 8", func() bool { return d.Status().Delivered == 8 })
	if n := d.FromMemory(); n != 3 {
		t.Fatalf("%d epochs from memory, want 3 once the log had caught up", n)
	}
	stop()
	// A restart: epoch 9 is in the log only.
	step(12)
	d2 := &Deliverer{ID: 21, Name: "s", Factory: factory, DB: db, Mem: &MemLog{}, MinBackoff: time.Millisecond}
	stop = run(t, d2)
	waitFor(t, "delivery of epoch 9 after the restart", func() bool { return d2.Status().Delivered == 9 })
	stop()
	if n := d2.FromMemory(); n != 0 {
		t.Fatalf("a restarted deliverer took %d epochs from memory", n)
	}
	// Epochs 3, 5 and 8 came from memory, the others from the log.
	// A streaming sink takes every epoch chunk by chunk, from the log too.
	if want := map[string]int{"stream": 8}[kind]; sms.streamed != want {
		t.Fatalf("%d epochs streamed, want %d", sms.streamed, want)
	}
	if want := map[string]int{"wire": 3}[kind]; wms.wired != want {
		t.Fatalf("%d epochs taken as wire bytes, want %d", wms.wired, want)
	}
	if want := []uint64{1, 2, 3, 5, 6, 7, 8, 9}; !reflect.DeepEqual(ms.epochs, want) {
		t.Fatalf("delivered epochs %v, want %v", ms.epochs, want)
	}
	for e, want := range map[uint64][]int64{1: {1}, 3: {3}, 5: {5, 6}, 6: {7, 8, 9}, 9: {12}} {
		var got []int64
		for _, c := range ms.changes[e] {
			got = append(got, c.After[0].I)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("epoch %d delivered keys %v, want %v", e, got, want)
		}
	}
	n := 0
	_ = db.Scan(LogPrefix(21), func(_, _ []byte) error { n++; return nil })
	if n != 0 {
		t.Fatalf("%d log entries left after delivery", n)
	}
}

// TestWriterWireOnlyWhatFits: an epoch whose wire bytes pass the MemLog's
// budget is handed over as its log chunks (decoded at delivery), and the
// epoch after one whose size foretells that is not encoded for the wire at
// all; once epochs are small again they go as wire bytes. Every epoch's
// log entries are written either way.
func TestWriterWireOnlyWhatFits(t *testing.T) {
	old := memLogBytes.Load()
	t.Cleanup(func() { memLogBytes.Store(old) })
	memLogBytes.Store(16 << 10)
	db := openDB(t)
	mem := &MemLog{}
	w := NewWriter(22, nil, false)
	w.Mem, w.Wire = mem, wireEncode
	calls := 0
	// Wire bytes several times the log's, as JSON lines are.
	pad := strings.Repeat("x", 40)
	w.Wire = func(buf []byte, c connector.Change) ([]byte, error) {
		calls++
		return fmt.Appendf(buf, "%d %s %s\n", c.After[0].I, c.After[1].S, pad), nil
	}
	epoch := uint64(0)
	step := func(n int) (wire bool, encoded int) {
		t.Helper()
		epoch++
		calls = 0
		mem.takeHeld(epoch) // the deliverer is done with the epochs before
		for i := range n {
			if err := w.Process(0, batch([]types.Row{row(int64(i), "some-value")}, []int64{1}), nil); err != nil {
				t.Fatal(err)
			}
		}
		checkpoint(t, db, w, epoch)
		if got := len(logged(t, db, 22, epoch)); got != n {
			t.Fatalf("epoch %d: %d changes logged, want %d", epoch, got, n)
		}
		h, ok := mem.takeHeld(epoch)
		if !ok || h.count != int64(n) {
			t.Fatalf("epoch %d: held %v, %d changes, want %d", epoch, ok, h.count, n)
		}
		return h.wire, calls
	}
	if wire, _ := step(10); !wire {
		t.Fatal("a small epoch was not held as wire bytes")
	}
	if wire, calls := step(400); wire || calls == 0 || calls >= 400 {
		t.Fatalf("a large epoch: wire %v after %d encodings, want log chunks after stopping within the budget", wire, calls)
	}
	if wire, calls := step(400); wire || calls != 0 {
		t.Fatalf("after a large epoch: wire %v, %d encodings, want none", wire, calls)
	}
	if wire, _ := step(10); wire {
		t.Fatal("the epoch after a large one was encoded for the wire")
	}
	if wire, _ := step(10); !wire {
		t.Fatal("small epochs again, but not held as wire bytes")
	}
}

// TestMemLogReleaseFreesBudget: an epoch released once delivered leaves
// the budget, so the next epoch of the same size is held, where with the
// delivered one still counted it would not fit and go to the log.
func TestMemLogReleaseFreesBudget(t *testing.T) {
	old := memLogBytes.Load()
	t.Cleanup(func() { memLogBytes.Store(old) })
	memLogBytes.Store(1000)
	chunk := func() [][]byte { return [][]byte{make([]byte, 0, 600)} }
	for _, release := range []bool{false, true} {
		m := &MemLog{}
		m.addEncoded(1, chunk(), 600, 10)
		if _, ok := m.takeHeld(1); !ok {
			t.Fatal("epoch 1 not held")
		}
		if release {
			m.release(1)
		}
		m.addEncoded(2, chunk(), 600, 10)
		if _, ok := m.takeHeld(2); ok != release {
			t.Fatalf("release %v: epoch 2 held %v", release, ok)
		}
	}
}
