// Tests of the source actors under a real Coordinator: TableSource replays
// the log entries after its checkpointed position when constructed, puts
// every chunk pushed before a barrier into that barrier's epoch (the FLUSH
// guarantee), saves its position and trims its log at the checkpoint;
// ReaderSource seeks a Seekable connector to its saved position, saves the
// position of exactly the rows before each barrier, keeps forwarding
// barriers after end of input or a read error, stays idle while paused,
// holds its reads while the state cache is over its limit, and saves
// nothing for a source that cannot seek.
package flow

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sluice/exec/connector"
	"sluice/sql/types"
	"sluice/storage"
)

// consumer drains an output into a list of described messages.
type consumer struct {
	mu   sync.Mutex
	msgs []Msg
}

func consume(t *testing.T, o *Output) *consumer {
	c := &consumer{}
	drain(t, o, func(m Msg) {
		c.mu.Lock()
		c.msgs = append(c.msgs, m)
		c.mu.Unlock()
	})
	return c
}

// drain attaches a consumer to o that calls f with each message until the
// test ends.
func drain(t *testing.T, o *Output, f func(Msg)) {
	ch := NewChan()
	o.Attach(ch)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for {
			select {
			case m := <-ch:
				f(m)
			case <-ctx.Done():
				return
			}
		}
	}()
}

// log describes the messages received so far: rows as their first
// column, barriers as "bN".
func (c *consumer) log() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.msgs {
		switch m.Kind {
		case MsgData:
			for _, r := range m.Batch.Rows {
				out = append(out, fmt.Sprint(r[0].I))
			}
		default:
			out = append(out, describe(m))
		}
	}
	return out
}

// upTo returns the log up to and including barrier b, waiting for the
// consumer to receive it (a source sends the barrier before reporting it,
// but the consumer may not have taken it yet).
func (c *consumer) upTo(t *testing.T, b string) []string {
	t.Helper()
	var l []string
	poll(t, b, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, m := range c.msgs {
			if m.Kind == MsgBarrier && describe(m) == b {
				return true
			}
		}
		return false
	})
	l = c.log()
	for i, s := range l {
		if s == b {
			return l[:i+1]
		}
	}
	return nil
}

func run(t *testing.T, name string, f func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

const tableID = 42

func logKey(seq uint64) []byte { return storage.Key(storage.SpaceLog, tableID, EncodeSeq(seq)) }

// writeLog durably logs chunk seq (one row holding seq), as DML does
// before acknowledging.
func writeLog(t *testing.T, db *storage.DB, seqs ...uint64) {
	t.Helper()
	wb := db.NewWriteBatch()
	for _, s := range seqs {
		wb.Set(logKey(s), types.EncodeRow(nil, types.Row{types.NewInt(int64(s))}))
	}
	if err := db.WriteSync(wb); err != nil {
		t.Fatal(err)
	}
}

func decodeChunk(v []byte) (*types.Batch, error) {
	r, err := types.DecodeRow(v)
	if err != nil {
		return nil, err
	}
	b := types.NewBatch(1)
	b.Add(r, 1)
	return b, nil
}

func chunk(seq uint64) TableChunk {
	b := types.NewBatch(1)
	b.Add(types.Row{types.NewInt(int64(seq))}, 1)
	return TableChunk{Seq: seq, Batch: b}
}

func logSeqs(t *testing.T, db *storage.DB) []uint64 {
	t.Helper()
	var out []uint64
	prefix := storage.Key(storage.SpaceLog, tableID)
	err := db.Scan(prefix, func(k, _ []byte) error {
		out = append(out, binary.BigEndian.Uint64(k[len(prefix):]))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func savedPos(t *testing.T, db *storage.DB, opID uint64) []byte {
	t.Helper()
	s := db.Snapshot()
	defer s.Release()
	v, err := s.Get(storage.Key(storage.SpacePosition, opID))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestTableSourceReplayAndFlush(t *testing.T) {
	db := openDB(t)
	// A previous run checkpointed position 2; chunks 1..5 are logged.
	w := db.NewEpochWriter()
	w.Set(storage.Key(storage.SpacePosition, tableID), EncodeSeq(2))
	if err := db.Commit(w, 1); err != nil {
		t.Fatal(err)
	}
	writeLog(t, db, 1, 2, 3, 4, 5)

	coord, _ := startCoordinator(t, db, time.Hour)
	ts, err := NewTableSource(db, coord, "t", tableID, decodeChunk)
	if err != nil {
		t.Fatal(err)
	}
	if ts.LastSeq() != 5 {
		t.Fatalf("LastSeq = %d, want 5", ts.LastSeq())
	}
	coord.AddSource(ts)
	out := consume(t, ts.Out)
	stop := run(t, "table source", ts.Run)
	ctx := context.Background()

	// Acknowledged DML: logged, then pushed; FLUSH must include it.
	writeLog(t, db, 6, 7)
	for _, s := range []uint64{6, 7} {
		if err := ts.Push(ctx, chunk(s)); err != nil {
			t.Fatal(err)
		}
	}
	if err := coord.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(out.upTo(t, "b2"), " "); got != "3 4 5 6 7 b2" {
		t.Fatalf("before the barrier: %s", got)
	}
	if pos := savedPos(t, db, tableID); binary.BigEndian.Uint64(pos) != 7 {
		t.Fatalf("saved position %x, want 7", pos)
	}
	if seqs := logSeqs(t, db); len(seqs) != 0 {
		t.Fatalf("log entries %v left after their checkpoint", seqs)
	}

	// The next statement; then a crash before its checkpoint.
	writeLog(t, db, 8)
	if err := ts.Push(ctx, chunk(8)); err != nil {
		t.Fatal(err)
	}
	if err := coord.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	writeLog(t, db, 9) // acknowledged, never checkpointed
	stop()
	coord.RemoveSource(ts)

	ts, err = NewTableSource(db, coord, "t", tableID, decodeChunk)
	if err != nil {
		t.Fatal(err)
	}
	if ts.LastSeq() != 9 {
		t.Fatalf("LastSeq after restart = %d, want 9", ts.LastSeq())
	}
	coord.AddSource(ts)
	out = consume(t, ts.Out)
	run(t, "table source", ts.Run)
	if err := ts.Push(ctx, chunk(10)); err != nil {
		t.Fatal(err)
	}
	if err := coord.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(out.upTo(t, "b4"), " "); got != "9 10 b4" {
		t.Fatalf("after restart: %s", got)
	}
}

// TestTableSourceFlushUnderLoad pushes chunks concurrently with Flushes:
// every chunk pushed before a Flush started is before that Flush's barrier.
func TestTableSourceFlushUnderLoad(t *testing.T) {
	db := openDB(t)
	coord, _ := startCoordinator(t, db, time.Hour)
	ts, err := NewTableSource(db, coord, "t", tableID, decodeChunk)
	if err != nil {
		t.Fatal(err)
	}
	coord.AddSource(ts)
	out := consume(t, ts.Out)
	run(t, "table source", ts.Run)
	ctx := context.Background()

	var pushed atomic.Uint64
	stopPush := make(chan struct{})
	pushDone := make(chan struct{})
	go func() {
		defer close(pushDone)
		for s := uint64(1); s <= 3000; s++ {
			select {
			case <-stopPush:
				return
			default:
			}
			runtime.Gosched() // spread the pushes over the flushes
			if err := ts.Push(ctx, chunk(s)); err != nil {
				return
			}
			pushed.Store(s)
		}
	}()
	for e := 1; e <= 20; e++ {
		before := pushed.Load()
		if err := coord.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		l := out.upTo(t, fmt.Sprintf("b%d", e))
		var last uint64
		for i := len(l) - 1; i >= 0; i-- {
			if !strings.HasPrefix(l[i], "b") {
				fmt.Sscan(l[i], &last)
				break
			}
		}
		if last < before {
			t.Fatalf("epoch %d: chunk %d was pushed before Flush but is not before its barrier (last %d)", e, before, last)
		}
	}
	close(stopPush)
	<-pushDone
}

// fakeReader is a Seekable connector source producing rows 0, 1, 2, … up
// to limit (then io.EOF), a few per Read.
type fakeReader struct {
	next   atomic.Int64
	limit  int64 // -1: unbounded
	failAt int64 // Read fails once next reaches it (0: never)
	reads  atomic.Int64
	seeked atomic.Int64
	closed atomic.Bool
	// cache, if set, is charged 10 bytes a row read (as an operator whose
	// state cannot be evicted would charge it).
	cache *storage.StateCache
}

func (f *fakeReader) Read(_ context.Context, b *types.Batch, max int) (int, error) {
	f.reads.Add(1)
	n := f.next.Load()
	if f.failAt > 0 && n >= f.failAt {
		return 0, errors.New("connection reset")
	}
	if f.limit >= 0 && n >= f.limit {
		return 0, io.EOF
	}
	k := int64(3)
	if int64(max) < k {
		k = int64(max)
	}
	if f.limit >= 0 && f.limit-n < k {
		k = f.limit - n
	}
	for i := int64(0); i < k; i++ {
		b.Add(types.Row{types.NewInt(n + i)}, 1)
	}
	f.next.Store(n + k)
	if f.cache != nil {
		f.cache.Add(10 * k)
	}
	return int(k), nil
}

func (f *fakeReader) Close() error { f.closed.Store(true); return nil }

func (f *fakeReader) Position() []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(f.next.Load()))
}

func (f *fakeReader) Seek(pos []byte) error {
	f.seeked.Store(int64(binary.BigEndian.Uint64(pos)))
	f.next.Store(int64(binary.BigEndian.Uint64(pos)))
	return nil
}

// plainReader hides fakeReader's Seekable methods.
type plainReader struct{ f *fakeReader }

func (p plainReader) Read(ctx context.Context, b *types.Batch, max int) (int, error) {
	return p.f.Read(ctx, b, max)
}
func (p plainReader) Close() error { return p.f.Close() }

var _ connector.Seekable = (*fakeReader)(nil)

const readerOp = 77

func TestReaderSourceSeeksAndSavesPosition(t *testing.T) {
	db := openDB(t)
	w := db.NewEpochWriter()
	w.Set(storage.Key(storage.SpacePosition, readerOp), binary.BigEndian.AppendUint64(nil, 10))
	if err := db.Commit(w, 1); err != nil {
		t.Fatal(err)
	}
	coord, _ := startCoordinator(t, db, time.Hour)
	f := &fakeReader{limit: 40}
	rs, err := NewReaderSource(db, coord, "r", readerOp, f)
	if err != nil {
		t.Fatal(err)
	}
	if f.seeked.Load() != 10 {
		t.Fatalf("seeked to %d, want 10", f.seeked.Load())
	}
	coord.AddSource(rs)
	out := consume(t, rs.Out)
	stop := run(t, "reader", rs.Run)
	ctx := context.Background()

	// The position saved with each barrier is just after the rows before it.
	next := int64(10)
	for e := 2; e <= 6; e++ {
		if err := coord.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		l := out.upTo(t, fmt.Sprintf("b%d", e))
		pos := int64(binary.BigEndian.Uint64(savedPos(t, db, readerOp)))
		var rows []string
		for _, s := range l {
			if !strings.HasPrefix(s, "b") {
				rows = append(rows, s)
			}
		}
		if int64(len(rows)) != pos-10 {
			t.Fatalf("epoch %d: %d rows before the barrier, saved position %d", e, len(rows), pos)
		}
		for i, s := range rows {
			if s != fmt.Sprint(10+int64(i)) {
				t.Fatalf("row %d is %s: rows %v", i, s, rows)
			}
		}
		if pos < next {
			t.Fatalf("position went back from %d to %d", next, pos)
		}
		next = pos
	}
	// The bounded input ends; barriers still flow and the position stays
	// at the end.
	poll(t, "end of input", func() bool { return f.next.Load() == 40 })
	if err := coord.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if pos := binary.BigEndian.Uint64(savedPos(t, db, readerOp)); pos != 40 {
		t.Fatalf("position at end = %d", pos)
	}
	stop()
	if !f.closed.Load() {
		t.Fatal("Run did not close the connector")
	}
}

func TestReaderSourceNotSeekable(t *testing.T) {
	db := openDB(t)
	coord, _ := startCoordinator(t, db, time.Hour)
	f := &fakeReader{limit: 5}
	rs, err := NewReaderSource(db, coord, "r", readerOp, plainReader{f})
	if err != nil {
		t.Fatal(err)
	}
	coord.AddSource(rs)
	out := consume(t, rs.Out)
	run(t, "reader", rs.Run)
	poll(t, "end of input", func() bool { return f.next.Load() == 5 })
	if err := coord.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(out.upTo(t, "b1"), " "); got != "0 1 2 3 4 b1" {
		t.Fatalf("output %s", got)
	}
	if pos := savedPos(t, db, readerOp); pos != nil {
		t.Fatalf("position %x saved for a source that cannot seek", pos)
	}
}

func TestReaderSourceReadError(t *testing.T) {
	db := openDB(t)
	coord, _ := startCoordinator(t, db, time.Hour)
	f := &fakeReader{limit: -1, failAt: 6}
	rs, err := NewReaderSource(db, coord, "r", readerOp, f)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 10)
	rs.OnError = func(err error) { errs <- err }
	coord.AddSource(rs)
	consume(t, rs.Out)
	run(t, "reader", rs.Run)
	select {
	case err := <-errs:
		if !strings.Contains(err.Error(), "connection reset") {
			t.Fatalf("OnError(%v)", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("read error not reported")
	}
	// The source stops reading but checkpoints continue.
	reads := f.reads.Load()
	for i := 0; i < 3; i++ {
		if err := coord.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if f.reads.Load() != reads {
		t.Fatal("source kept reading after an error")
	}
	if pos := binary.BigEndian.Uint64(savedPos(t, db, readerOp)); pos != 6 {
		t.Fatalf("position %d, want 6", pos)
	}
}

func TestReaderSourcePause(t *testing.T) {
	db := openDB(t)
	coord, _ := startCoordinator(t, db, time.Hour)
	f := &fakeReader{limit: -1}
	rs, err := NewReaderSource(db, coord, "r", readerOp, f)
	if err != nil {
		t.Fatal(err)
	}
	coord.AddSource(rs)
	out := consume(t, rs.Out)
	run(t, "reader", rs.Run)
	ctx := context.Background()
	poll(t, "some rows", func() bool { return f.next.Load() > 30 })
	if err := coord.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	// Paused at the pause barrier: its saved position is the end of the
	// rows before it, and nothing is read until Resume. (The window below
	// only makes a missed pause likely to show; it never delays a pass.)
	pos := int64(binary.BigEndian.Uint64(savedPos(t, db, readerOp)))
	reads := f.reads.Load()
	deadline := time.Now().Add(30 * time.Millisecond)
	for time.Now().Before(deadline) {
		if f.reads.Load() != reads || f.next.Load() != pos {
			t.Fatalf("source read while paused (position %d, next %d)", pos, f.next.Load())
		}
		time.Sleep(time.Millisecond)
	}
	if err := coord.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	poll(t, "reading again", func() bool { return f.next.Load() > pos })
	l := out.upTo(t, "b1p")
	if int64(len(l)-1) != pos {
		t.Fatalf("%d rows before the pause barrier, position %d", len(l)-1, pos)
	}
}

// TestReaderSourceHoldsWhileStateCacheOver: while the operators' state is
// over the state cache's limit, a reader source reads a batch only once
// the epoch of its last rows has committed and a later barrier has too
// (the checkpoint at which operators evict what that epoch made clean),
// asking the coordinator for those barriers (its ticker never fires
// here). State that a checkpoint does not evict makes the hold futile: the
// source then reads on without holding until the cache is under its limit
// again; state that checkpoints evict is held for again and again.
func TestReaderSourceHoldsWhileStateCacheOver(t *testing.T) {
	for _, evicts := range []bool{false, true} {
		t.Run(fmt.Sprintf("evicts=%v", evicts), func(t *testing.T) {
			db := openDB(t)
			cache := db.StateCache()
			cache.SetLimit(100)
			coord, _ := startCoordinator(t, db, time.Hour)
			const rows = 90
			f := &fakeReader{limit: rows, cache: cache}
			rs, err := NewReaderSource(db, coord, "r", readerOp, f)
			if err != nil {
				t.Fatal(err)
			}
			coord.AddSource(rs)
			out := consume(t, rs.Out)
			if evicts {
				// An operator whose checkpoints evict all it holds.
				drain(t, rs.Out, func(m Msg) {
					if m.Kind == MsgBarrier {
						cache.Add(-cache.Used())
					}
				})
			}
			stop := run(t, "reader", rs.Run)
			poll(t, "every row read", func() bool { return f.next.Load() == rows })
			var l []string
			poll(t, "the last row", func() bool { l = out.log(); return slices.Contains(l, fmt.Sprint(rows-1)) })
			stop()
			// Reads of 3 rows, 10 bytes each: the cache is past its 100
			// bytes after the fourth read (rows 0-11); without eviction the
			// read of row 12 waits for two barriers (with it, for the
			// barrier that empties the cache).
			barriers := 0
			for _, s := range l {
				if strings.HasPrefix(s, "b") {
					barriers++
					continue
				}
				if s == "12" && (barriers < 2 && !evicts || barriers < 1) {
					t.Fatalf("row 12 was read %d barriers after row 11: %v", barriers, l)
				}
				barriers = 0
			}
			if evicts && rs.holds < 2 {
				t.Fatalf("%d reads held; state evicted at each checkpoint should be held for again: %v", rs.holds, l)
			}
			if !evicts && rs.holds != 1 {
				t.Fatalf("%d reads held, want 1 (then the hold is futile): %v", rs.holds, l)
			}
			if rs.Stats.BlockedNanos.Load() == 0 {
				t.Fatal("the time held is not counted as backpressure")
			}
		})
	}
}
