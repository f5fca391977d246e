// Tests of the checkpoint Coordinator: epochs commit in order once every
// collector has reported them, and not before; the number of epochs in
// flight is bounded; Flush returns only once its epoch is durable; Pause
// returns at a committed pause epoch and sources stay paused (no barrier
// is injected) until Resume, which waits for the next epoch; writes
// registered with OnNextEpoch land in the next epoch injected, once; the
// ticker of Run checkpoints on its own; a new coordinator resumes after
// the committed epoch.
package flow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"sluice/storage"
)

// fakeSource is a SourceActor that, like a real source, handles barriers
// on its own goroutine: it writes a key into the epoch, reports it and, at
// a pause barrier, waits to be resumed.
type fakeSource struct {
	name     string
	c        *Coordinator
	barriers chan *Barrier
	resume   chan struct{}

	mu struct {
		sync.Mutex
		epochs []uint64
		paused bool
	}
}

func newFakeSource(t *testing.T, name string, c *Coordinator) *fakeSource {
	s := &fakeSource{name: name, c: c, barriers: make(chan *Barrier, 100), resume: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for {
			select {
			case b := <-s.barriers:
				b.W.Set([]byte(fmt.Sprintf("p/%s/%d", s.name, b.Epoch)), []byte("x"))
				s.mu.Lock()
				s.mu.epochs = append(s.mu.epochs, b.Epoch)
				s.mu.paused = b.Pause
				s.mu.Unlock()
				s.c.Collect(b.Epoch)
				if b.Pause {
					select {
					case <-s.resume:
					case <-ctx.Done():
						return
					}
					s.mu.Lock()
					s.mu.paused = false
					s.mu.Unlock()
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return s
}

func (s *fakeSource) InjectBarrier(b *Barrier) { s.barriers <- b }

func (s *fakeSource) Resume() {
	select {
	case s.resume <- struct{}{}:
	default:
	}
}

func (s *fakeSource) state() ([]uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint64(nil), s.mu.epochs...), s.mu.paused
}

// startCoordinator runs a coordinator whose ticker never fires during the
// test (unless interval is small), and records the epochs it commits.
func startCoordinator(t *testing.T, db *storage.DB, interval time.Duration) (*Coordinator, func() []uint64) {
	t.Helper()
	c := NewCoordinator(db, interval, t.Logf)
	var mu sync.Mutex
	var commits []uint64
	c.OnCommit(func(e uint64) {
		mu.Lock()
		commits = append(commits, e)
		mu.Unlock()
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	})
	return c, func() []uint64 {
		mu.Lock()
		defer mu.Unlock()
		return append([]uint64(nil), commits...)
	}
}

func visible(t *testing.T, db *storage.DB, key string) bool {
	t.Helper()
	s := db.Snapshot()
	defer s.Release()
	v, err := s.Get([]byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return v != nil
}

func TestCoordinatorCommitsInOrderWhenAllCollected(t *testing.T) {
	db := openDB(t)
	c, commits := startCoordinator(t, db, time.Hour)
	c.AddCollectors(2)

	var epochs []uint64
	for i := 0; i < 3; i++ {
		c.OnNextEpoch(func(w *storage.EpochWriter) { w.Set([]byte(fmt.Sprintf("s/%d", i)), []byte("x")) })
		e := c.inject(false, false)
		if e != uint64(i+1) {
			t.Fatalf("injected epoch %d, want %d", e, i+1)
		}
		epochs = append(epochs, e)
	}
	// Collector A reports everything; collector B lags: nothing may commit.
	for _, e := range epochs {
		c.Collect(e)
	}
	if got := c.Committed(); got != 0 {
		t.Fatalf("committed %d with a collector missing", got)
	}
	c.Collect(1)
	ctx := context.Background()
	if err := c.wait(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if db.CommittedEpoch() != 1 || !visible(t, db, "s/0") || visible(t, db, "s/1") {
		t.Fatalf("after epoch 1: committed %d", db.CommittedEpoch())
	}
	c.Collect(2)
	c.Collect(3)
	if err := c.wait(ctx, 3); err != nil {
		t.Fatal(err)
	}
	// OnCommit runs on the committer after waiters are released.
	poll(t, "OnCommit", func() bool { return len(commits()) >= 3 })
	if got := fmt.Sprint(commits()); got != "[1 2 3]" {
		t.Fatalf("commits %s", got)
	}
	if db.CommittedEpoch() != 3 || !visible(t, db, "s/2") {
		t.Fatalf("after epoch 3: committed %d", db.CommittedEpoch())
	}
	// A report of an unknown epoch is logged and ignored.
	c.Collect(99)
}

func TestCoordinatorBoundsEpochsInFlight(t *testing.T) {
	db := openDB(t)
	c, _ := startCoordinator(t, db, time.Hour)
	c.AddCollectors(1) // never reports
	for i := 1; i <= maxInflight; i++ {
		if e := c.inject(false, false); e != uint64(i) {
			t.Fatalf("inject %d = %d", i, e)
		}
	}
	if e := c.inject(false, false); e != 0 {
		t.Fatalf("injected epoch %d beyond %d in flight", e, maxInflight)
	}
	// Flush and Pause force an epoch in regardless.
	if e := c.inject(false, true); e != maxInflight+1 {
		t.Fatalf("forced inject = %d", e)
	}
}

func TestCoordinatorFlushIsDurable(t *testing.T) {
	db := openDB(t)
	c, commits := startCoordinator(t, db, time.Hour)
	srcs := []*fakeSource{newFakeSource(t, "a", c), newFakeSource(t, "b", c)}
	for _, s := range srcs {
		c.AddSource(s)
	}
	c.AddCollectors(1) // a terminal operator, played by the test below
	ctx := context.Background()

	flushed := make(chan error, 1)
	go func() { flushed <- c.Flush(ctx) }()
	// Both sources reported epoch 1, the terminal operator has not.
	poll(t, "the sources to report", func() bool {
		a, _ := srcs[0].state()
		b, _ := srcs[1].state()
		return len(a) == 1 && len(b) == 1
	})
	select {
	case err := <-flushed:
		t.Fatalf("Flush returned (%v) before every collector reported", err)
	default:
	}
	c.Collect(1)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	// Durable and visible as soon as Flush returns.
	if db.CommittedEpoch() != 1 || c.Committed() != 1 {
		t.Fatalf("committed %d/%d after Flush", db.CommittedEpoch(), c.Committed())
	}
	if !visible(t, db, "p/a/1") || !visible(t, db, "p/b/1") {
		t.Fatal("sources' writes of epoch 1 not visible after Flush")
	}

	c.AddCollectors(-1)
	for i := 2; i <= 5; i++ {
		if err := c.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if db.CommittedEpoch() != uint64(i) {
			t.Fatalf("Flush %d: committed %d", i, db.CommittedEpoch())
		}
	}
	// OnCommit runs on the committer after waiters are released.
	poll(t, "OnCommit", func() bool { return len(commits()) >= 5 })
	if got := fmt.Sprint(commits()); got != "[1 2 3 4 5]" {
		t.Fatalf("commits %s", got)
	}
	// A new coordinator over the store (as after a restart) resumes after
	// epoch 5.
	c2 := NewCoordinator(db, time.Hour, t.Logf)
	if c2.Committed() != 5 {
		t.Fatalf("new coordinator at %d", c2.Committed())
	}
	if e := c2.inject(false, false); e != 6 {
		t.Fatalf("first epoch after restart = %d", e)
	}
}

func TestCoordinatorPauseResume(t *testing.T) {
	db := openDB(t)
	c, commits := startCoordinator(t, db, time.Hour)
	srcs := []*fakeSource{newFakeSource(t, "a", c), newFakeSource(t, "b", c)}
	for _, s := range srcs {
		c.AddSource(s)
	}
	ctx := context.Background()
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	if err := c.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	// The pause epoch is committed and every source sits at it.
	if c.Committed() != 2 || db.CommittedEpoch() != 2 {
		t.Fatalf("paused at %d/%d, want 2", c.Committed(), db.CommittedEpoch())
	}
	for _, s := range srcs {
		epochs, paused := s.state()
		if !paused || fmt.Sprint(epochs) != "[1 2]" {
			t.Fatalf("source %s: epochs %v paused %v", s.name, epochs, paused)
		}
	}
	// While paused, neither the ticker nor a Flush injects a barrier.
	if e := c.inject(false, false); e != 0 {
		t.Fatalf("injected epoch %d while paused", e)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- c.Flush(ctx) }()
	select {
	case err := <-flushed:
		t.Fatalf("Flush returned (%v) while paused", err)
	default:
	}

	// The graph change's writes go into the epoch after the pause.
	c.OnNextEpoch(func(w *storage.EpochWriter) { w.Set([]byte("c/new"), []byte("x")) })
	if err := c.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Committed() < 3 || !visible(t, db, "c/new") {
		t.Fatalf("after Resume: committed %d, change visible %v", c.Committed(), visible(t, db, "c/new"))
	}
	for _, s := range srcs {
		if _, paused := s.state(); paused {
			t.Fatalf("source %s still paused after Resume", s.name)
		}
	}
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	// OnCommit runs on the committer after waiters are released.
	poll(t, "OnCommit", func() bool { return len(commits()) >= 4 })
	if got := fmt.Sprint(commits()); got != "[1 2 3 4]" {
		t.Fatalf("commits %s", got)
	}
	for _, s := range srcs {
		if epochs, _ := s.state(); fmt.Sprint(epochs) != "[1 2 3 4]" {
			t.Fatalf("source %s saw epochs %v", s.name, epochs)
		}
	}
}

func TestCoordinatorOnNextEpoch(t *testing.T) {
	db := openDB(t)
	c, _ := startCoordinator(t, db, time.Hour)
	c.AddCollectors(1)
	ctx := context.Background()

	e1 := c.inject(false, false)
	calls := 0
	c.OnNextEpoch(func(w *storage.EpochWriter) {
		calls++
		w.Set([]byte("c/x"), []byte("1"))
	})
	e2 := c.inject(false, false)
	e3 := c.inject(false, false)
	c.Collect(e1)
	if err := c.wait(ctx, e1); err != nil {
		t.Fatal(err)
	}
	if visible(t, db, "c/x") {
		t.Fatal("a write registered after epoch 1 was injected committed with it")
	}
	c.Collect(e2)
	if err := c.wait(ctx, e2); err != nil {
		t.Fatal(err)
	}
	s := db.Snapshot()
	v, _ := s.Get([]byte("c/x"))
	if string(v) != "1" || s.Epoch != e2 {
		t.Fatalf("at epoch %d c/x = %q", s.Epoch, v)
	}
	s.Release()
	c.Collect(e3)
	if err := c.wait(ctx, e3); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("OnNextEpoch function ran %d times", calls)
	}
}

func TestCoordinatorTicker(t *testing.T) {
	db := openDB(t)
	c, commits := startCoordinator(t, db, time.Millisecond)
	c.AddSource(newFakeSource(t, "a", c))
	poll(t, "five epochs", func() bool { return c.Committed() >= 5 })
	got := commits()
	for i, e := range got {
		if e != uint64(i+1) {
			t.Fatalf("commits out of order: %v", got)
		}
	}
}

func TestCoordinatorFlushCancelledAndShutdown(t *testing.T) {
	db := openDB(t)
	c := NewCoordinator(db, time.Hour, t.Logf)
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	c.AddCollectors(1) // never reports

	ctx, cancel := context.WithCancel(context.Background())
	flushed := make(chan error, 1)
	go func() { flushed <- c.Flush(ctx) }()
	cancel()
	select {
	case err := <-flushed:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Flush = %v", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("cancelled Flush did not return")
	}

	// After shutdown, a Flush fails instead of waiting forever.
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(context.Background()); err == nil {
		t.Fatal("Flush after shutdown succeeded")
	}
}

// TestCoordinatorStopsAfterFailedCommit: once an epoch fails to commit, no
// later epoch may commit on top of its lost writes (operators write only
// their changes since the previous barrier), commit hooks do not run for
// it, and waiters get the error.
func TestCoordinatorStopsAfterFailedCommit(t *testing.T) {
	db := openDB(t)
	c, commits := startCoordinator(t, db, time.Hour)
	c.AddCollectors(1)
	e1 := c.inject(false, false)
	e2 := c.inject(false, false)
	// Make epoch 1's commit fail: its writer is used up behind the
	// coordinator's back (the only failure a test can provoke).
	c.mu.Lock()
	w1 := c.mu.inflight[e1].w
	c.mu.Unlock()
	if err := db.Commit(w1, 100); err != nil {
		t.Fatal(err)
	}
	c.Collect(e1)
	ctx := context.Background()
	if err := c.wait(ctx, e1); err == nil || !strings.Contains(err.Error(), "checkpoint 1 failed") {
		t.Fatalf("wait(1) = %v", err)
	}
	c.Collect(e2)
	// Let the committer take epoch 2 (a Flush after a failure returns the
	// failure at once).
	if err := c.wait(ctx, e2); err == nil {
		t.Fatal("wait(2) succeeded after epoch 1 failed")
	}
	poll(t, "epoch 2 handled", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.mu.inflight) == 0
	})
	if got := db.CommittedEpoch(); got != 100 {
		t.Fatalf("epoch %d committed after a failed checkpoint", got)
	}
	if got := commits(); len(got) != 0 {
		t.Fatalf("commit hooks ran for %v", got)
	}
	if c.Committed() != 0 {
		t.Fatalf("Committed = %d", c.Committed())
	}
	if e := c.inject(false, true); e != 0 {
		t.Fatalf("injected epoch %d after a failure", e)
	}
	if err := c.Flush(ctx); err == nil {
		t.Fatal("Flush succeeded after a failure")
	}
}

// TestCoordinatorConcurrentFlushesStayBounded: many sessions flushing at
// once while a collector lags never put more than maxInflight epochs in
// flight (source barrier queues are bounded, and the coordinator must not
// block on them), and every Flush returns once its epoch is durable.
func TestCoordinatorConcurrentFlushesStayBounded(t *testing.T) {
	db := openDB(t)
	c, _ := startCoordinator(t, db, time.Hour)
	c.AddSource(newFakeSource(t, "a", c))
	c.AddCollectors(1) // a slow terminal operator, played below
	ctx := context.Background()
	const n = 40
	flushed := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() { flushed <- c.Flush(ctx) }()
	}
	var done int
	var collected uint64
	deadline := time.Now().Add(20 * time.Second)
	for done < n {
		c.mu.Lock()
		inflight, newest := len(c.mu.inflight), c.mu.epoch
		c.mu.Unlock()
		if inflight > maxInflight {
			t.Fatalf("%d epochs in flight, limit %d", inflight, maxInflight)
		}
		if collected < newest {
			collected++
			c.Collect(collected)
		}
		select {
		case err := <-flushed:
			if err != nil {
				t.Fatal(err)
			}
			done++
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d flushes returned", done, n)
		}
	}
	if db.CommittedEpoch() == 0 {
		t.Fatal("nothing committed")
	}
}

// TestCoordinatorBeforeCommitShares: each job writes into its own share of
// the epoch; BeforeCommit runs once per epoch, after every collector, and
// decides what of each share commits: job a's shares are absorbed, job b's
// discarded from epoch 2 on (it failed), so b's key stays at epoch 1. An
// error there fails the checkpoint and nothing later commits.
func TestCoordinatorBeforeCommitShares(t *testing.T) {
	db := openDB(t)
	c, _ := startCoordinator(t, db, time.Hour)
	c.AddCollectors(2) // one terminal per job
	var mu sync.Mutex
	shares := map[string]map[uint64]*storage.EpochWriter{"a": {}, "b": {}}
	share := func(job string, e uint64) *storage.EpochWriter {
		mu.Lock()
		defer mu.Unlock()
		if shares[job][e] == nil {
			shares[job][e] = db.NewShareWriter()
		}
		return shares[job][e]
	}
	var calls []uint64
	var fail error
	c.BeforeCommit(func(e uint64, w *storage.EpochWriter) error {
		calls = append(calls, e)
		if fail != nil {
			return fail
		}
		mu.Lock()
		defer mu.Unlock()
		if err := w.Absorb(shares["a"][e]); err != nil {
			return err
		}
		if b := shares["b"][e]; e >= 2 {
			b.Discard()
		} else if err := w.Absorb(b); err != nil {
			return err
		}
		return nil
	})
	ctx := context.Background()
	for e := uint64(1); e <= 3; e++ {
		if got := c.inject(false, false); got != e {
			t.Fatalf("inject = %d, want %d", got, e)
		}
		for _, job := range []string{"a", "b"} {
			w := share(job, e)
			w.Set([]byte("s/"+job), []byte(fmt.Sprint(e)))
			w.Merge([]byte("s/n"+job), 1)
			c.Collect(e)
		}
		if err := c.wait(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	get := func(k string) string {
		s := db.Snapshot()
		defer s.Release()
		v, err := s.Get([]byte(k))
		if err != nil {
			t.Fatal(err)
		}
		return string(v)
	}
	if a, b := get("s/a"), get("s/b"); a != "3" || b != "1" {
		t.Fatalf("s/a = %q, s/b = %q, want 3 and 1", a, b)
	}
	if na, nb := get("s/na"), get("s/nb"); na != "\x06" || nb != "\x02" { // varints 3 and 1
		t.Fatalf("counts %q %q", na, nb)
	}
	if fmt.Sprint(calls) != "[1 2 3]" {
		t.Fatalf("BeforeCommit calls %v", calls)
	}
	fail = errors.New("share lost")
	e := c.inject(false, false)
	c.Collect(e)
	c.Collect(e)
	if err := c.wait(ctx, e); err == nil || !strings.Contains(err.Error(), "share lost") {
		t.Fatalf("wait after a failing BeforeCommit = %v", err)
	}
	if db.CommittedEpoch() != 3 {
		t.Fatalf("committed %d, want 3", db.CommittedEpoch())
	}
}

// TestCoordinatorJoin: a collector that joins counts from the next epoch
// injected on (the one admit is given): the epochs before commit without
// it, that one waits for it. A join that admit refuses adds nothing.
func TestCoordinatorJoin(t *testing.T) {
	db := openDB(t)
	c, _ := startCoordinator(t, db, time.Hour)
	c.AddCollectors(1)
	ctx := context.Background()
	e1 := c.inject(false, false)
	var at uint64
	c.Join(func(next uint64) bool { at = next; return true })
	if at != e1+1 {
		t.Fatalf("join at %d, want %d", at, e1+1)
	}
	c.Join(func(uint64) bool { return false })
	c.Collect(e1)
	if err := c.wait(ctx, e1); err != nil {
		t.Fatal(err)
	}
	e2 := c.inject(false, false)
	if e2 != at {
		t.Fatalf("injected %d, want %d", e2, at)
	}
	c.Collect(e2)
	time.Sleep(20 * time.Millisecond) // it must not commit: give it the chance
	if got := c.Committed(); got != e1 {
		t.Fatalf("epoch %d committed without the collector that joined (committed %d)", e2, got)
	}
	c.Collect(e2)
	if err := c.wait(ctx, e2); err != nil {
		t.Fatal(err)
	}
}
