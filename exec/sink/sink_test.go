package sink

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"sluice/exec/connector"
	"sluice/exec/flow"
	"sluice/sql/types"
	"sluice/storage"
)

func row(k int64, v string) types.Row { return types.Row{types.NewInt(k), types.NewString(v)} }

func batch(rows []types.Row, diffs []int64) *types.Batch {
	b := types.NewBatch(len(rows))
	for i, r := range rows {
		b.Add(r, diffs[i])
	}
	return b
}

func openDB(t *testing.T) *storage.DB {
	db, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// logged reads back what the writer put in the sink log for epoch.
func logged(t *testing.T, db *storage.DB, id, epoch uint64) []connector.Change {
	var out []connector.Change
	err := db.Scan(LogPrefix(id), func(k, v []byte) error {
		if e, _ := epochOf(id, k); e != epoch {
			return nil
		}
		var err error
		out, err = decodeChanges(v, out)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func checkpoint(t *testing.T, db *storage.DB, w *Writer, epoch uint64) {
	ew := db.NewEpochWriter()
	if err := w.Checkpoint(&flow.Barrier{Epoch: epoch, W: ew}, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Commit(ew, epoch); err != nil {
		t.Fatal(err)
	}
}

func TestWriterNetsChangesPerKey(t *testing.T) {
	db := openDB(t)
	w := NewWriter(7, []int{0}, false)
	// key 1: updated twice (-a +b -b +c) -> before a, after c
	// key 2: inserted then deleted in the epoch -> nothing
	// key 3: deleted -> before only
	// key 4: inserted -> after only
	// key 5: updated to the same value -> nothing
	_ = w.Process(0, batch(
		[]types.Row{row(1, "a"), row(1, "b"), row(2, "x"), row(1, "b"), row(3, "d"), row(1, "c"), row(2, "x"), row(4, "n"), row(5, "s"), row(5, "s")},
		[]int64{-1, 1, 1, -1, -1, 1, -1, 1, -1, 1}), nil)
	checkpoint(t, db, w, 1)
	got := logged(t, db, 7, 1)
	want := []connector.Change{
		{Before: row(1, "a"), After: row(1, "c")},
		{Before: row(3, "d")},
		{After: row(4, "n")},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("logged %v\nwant %v", got, want)
	}
	// The next epoch starts empty.
	checkpoint(t, db, w, 2)
	if got := logged(t, db, 7, 2); len(got) != 0 {
		t.Fatalf("epoch 2 logged %v", got)
	}
}

// TestWriterUpdateInsertFirst: a key whose new row arrives before the
// retraction of its old one (two rows of the input that share the sink's
// key, as when a sink's key is its target table's and not the view's) is
// an update from the old row to the new, not a delete.
func TestWriterUpdateInsertFirst(t *testing.T) {
	db := openDB(t)
	w := NewWriter(10, []int{0}, false)
	_ = w.Process(0, batch([]types.Row{row(1, "new"), row(1, "old"), row(2, "n"), row(2, "n")}, []int64{1, -1, 1, -1}), nil)
	checkpoint(t, db, w, 4)
	want := []connector.Change{{Before: row(1, "old"), After: row(1, "new")}}
	if got := logged(t, db, 10, 4); !reflect.DeepEqual(got, want) {
		t.Fatalf("logged %v, want %v", got, want)
	}
}

func TestWriterUnkeyedKeepsMultiplicity(t *testing.T) {
	db := openDB(t)
	w := NewWriter(8, nil, false)
	_ = w.Process(0, batch([]types.Row{row(1, "a"), row(2, "b")}, []int64{2, -1}), nil)
	checkpoint(t, db, w, 3)
	want := []connector.Change{{After: row(1, "a")}, {After: row(1, "a")}, {Before: row(2, "b")}}
	if got := logged(t, db, 8, 3); !reflect.DeepEqual(got, want) {
		t.Fatalf("logged %v, want %v", got, want)
	}
}

func TestWriterChunksLargeEpochs(t *testing.T) {
	db := openDB(t)
	w := NewWriter(9, nil, false)
	n := 3*chunkChanges + 5
	b := types.NewBatch(n)
	for i := 0; i < n; i++ {
		b.Add(row(int64(i), "v"), 1)
	}
	_ = w.Process(0, b, nil)
	checkpoint(t, db, w, 4)
	got := logged(t, db, 9, 4)
	if len(got) != n {
		t.Fatalf("logged %d changes, want %d", len(got), n)
	}
	for i, c := range got {
		if c.After[0].I != int64(i) {
			t.Fatalf("change %d is %v: order lost", i, c)
		}
	}
}

// memSink records what it is given and fails while down.
type memSink struct {
	mu       sync.Mutex
	epochs   []uint64
	changes  map[uint64][]connector.Change
	failNext int
	progress uint64
}

func (m *memSink) Validate(connector.SinkConfig) (connector.SinkPlan, error) {
	return connector.SinkPlan{WriteMode: "append", Guarantee: connector.ExactlyOnce}, nil
}
func (m *memSink) Open(context.Context, connector.SinkConfig) (connector.Sink, error) { return m, nil }
func (m *memSink) Write(_ context.Context, e uint64, ch []connector.Change) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failNext > 0 {
		m.failNext--
		return errors.New("connection refused")
	}
	m.epochs = append(m.epochs, e)
	if m.changes == nil {
		m.changes = map[uint64][]connector.Change{}
	}
	m.changes[e] = ch
	m.progress = e
	return nil
}
func (m *memSink) Close() error { return nil }

type progressSink struct{ *memSink }

func (p progressSink) Open(context.Context, connector.SinkConfig) (connector.Sink, error) {
	return p, nil
}
func (p progressSink) LastEpoch(context.Context) (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.progress, nil
}

func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func run(t *testing.T, d *Deliverer) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(ctx) }()
	return func() { cancel(); <-done }
}

func TestDelivererRetriesInOrderAndClearsTheLog(t *testing.T) {
	db := openDB(t)
	w := NewWriter(11, nil, false)
	for e := uint64(1); e <= 3; e++ {
		_ = w.Process(0, batch([]types.Row{row(int64(e), fmt.Sprint("e", e))}, []int64{1}), nil)
		checkpoint(t, db, w, e)
	}
	ms := &memSink{failNext: 3}
	d := &Deliverer{ID: 11, Name: "s", Factory: ms, DB: db, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
	stop := run(t, d)
	waitFor(t, "delivery of epoch 3", func() bool { return d.Status().Delivered == 3 })
	stop()
	if !reflect.DeepEqual(ms.epochs, []uint64{1, 2, 3}) {
		t.Fatalf("delivered epochs %v, want [1 2 3] once each in order", ms.epochs)
	}
	if st := d.Status(); st.Pending != 0 || st.Written != 3 {
		t.Fatalf("status %+v", st)
	}
	n := 0
	_ = db.Scan(LogPrefix(11), func(_, _ []byte) error { n++; return nil })
	if n != 0 {
		t.Fatalf("%d log entries left after delivery", n)
	}
	// A new deliverer (a restart) writes nothing again, and then new epochs.
	_ = w.Process(0, batch([]types.Row{row(4, "e4")}, []int64{1}), nil)
	checkpoint(t, db, w, 4)
	d2 := &Deliverer{ID: 11, Name: "s", Factory: ms, DB: db, MinBackoff: time.Millisecond}
	stop = run(t, d2)
	waitFor(t, "delivery of epoch 4", func() bool { return d2.Status().Delivered == 4 })
	stop()
	if !reflect.DeepEqual(ms.epochs, []uint64{1, 2, 3, 4}) {
		t.Fatalf("after restart delivered %v", ms.epochs)
	}
}

// TestDelivererSkipsEpochsTheSinkConfirmed: an epoch the external system
// committed, whose confirmation never reached the log (a crash between
// the external commit and the log deletion), is not written again.
func TestDelivererSkipsEpochsTheSinkConfirmed(t *testing.T) {
	db := openDB(t)
	w := NewWriter(12, nil, false)
	for e := uint64(1); e <= 3; e++ {
		_ = w.Process(0, batch([]types.Row{row(int64(e), "v")}, []int64{1}), nil)
		checkpoint(t, db, w, e)
	}
	// Epochs 1 and 2 were committed outside in one transaction and not
	// recorded here (a crash between the external commit and Sluice's
	// record of it): both are still in the log, and are skipped.
	ms := &memSink{progress: 2}
	d := &Deliverer{ID: 12, Name: "s", Factory: progressSink{ms}, DB: db, MinBackoff: time.Millisecond}
	stop := run(t, d)
	waitFor(t, "delivery of epoch 3", func() bool { return d.Status().Delivered == 3 })
	stop()
	if !reflect.DeepEqual(ms.epochs, []uint64{3}) {
		t.Fatalf("wrote epochs %v, want only 3", ms.epochs)
	}
}

// TestDelivererPausesWhenTheSinkIsAhead: an external system that has
// confirmed epochs this data directory did not deliver nor log (a
// restored backup) pauses the sink with 55000, and it stays paused across
// restarts even once the directory's epochs pass the external one.
func TestDelivererPausesWhenTheSinkIsAhead(t *testing.T) {
	for _, c := range []struct {
		name     string
		progress uint64
	}{
		{"beyond the committed epoch", 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := openDB(t)
			w := NewWriter(14, nil, false)
			for e := uint64(1); e <= 3; e++ {
				_ = w.Process(0, batch([]types.Row{row(int64(e), "v")}, []int64{1}), nil)
				checkpoint(t, db, w, e)
			}
			ms := &memSink{progress: c.progress}
			d := &Deliverer{ID: 14, Name: "s", Factory: progressSink{ms}, DB: db, MinBackoff: time.Millisecond}
			stop := run(t, d)
			waitFor(t, "the pause", func() bool { return d.Status().Paused != "" })
			stop()
			if st := d.Status(); !strings.HasPrefix(st.Paused, "SQLSTATE 55000: sink s is paused") || st.Delivered != 0 {
				t.Fatalf("status %+v", st)
			}
			for e := uint64(4); e <= 7; e++ {
				_ = w.Process(0, batch([]types.Row{row(int64(e), "v")}, []int64{1}), nil)
				checkpoint(t, db, w, e)
			}
			d2 := &Deliverer{ID: 14, Name: "s", Factory: progressSink{ms}, DB: db, MinBackoff: time.Millisecond}
			stop = run(t, d2)
			waitFor(t, "the pause after a restart", func() bool { return d2.Status().Paused != "" })
			stop()
			if len(ms.epochs) != 0 {
				t.Fatalf("a paused sink wrote epochs %v", ms.epochs)
			}
			n := 0
			_ = db.Scan(LogPrefix(14), func(_, _ []byte) error { n++; return nil })
			if n != 7 {
				t.Fatalf("the sink log holds %d epochs, want all 7 kept", n)
			}
		})
	}
}

func TestDelivererReportsOutage(t *testing.T) {
	db := openDB(t)
	w := NewWriter(13, nil, false)
	_ = w.Process(0, batch([]types.Row{row(1, "v")}, []int64{1}), nil)
	checkpoint(t, db, w, 1)
	ms := &memSink{failNext: 1 << 30}
	d := &Deliverer{ID: 13, Name: "s", Factory: ms, DB: db, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}
	stop := run(t, d)
	waitFor(t, "failures", func() bool { return d.Status().Failures >= 3 })
	st := d.Status()
	if st.Pending != 1 || st.Delivered != 0 || st.LastError == "" {
		t.Fatalf("status during outage %+v", st)
	}
	ms.mu.Lock()
	ms.failNext = 0
	ms.mu.Unlock()
	waitFor(t, "recovery", func() bool { return d.Status().Delivered == 1 })
	stop()
	if len(ms.epochs) != 1 {
		t.Fatalf("epochs %v", ms.epochs)
	}
}
