package flow

import (
	"context"
	"fmt"
	"sync"
	"time"

	"sluice/exec/connector"
	"sluice/storage"
)

// Coordinator injects barriers into every source at the same moment and
// commits an epoch once every collector (source actors and terminal
// operators) has reported it. Epochs commit in order.
type Coordinator struct {
	db       *storage.DB
	interval time.Duration
	logf     func(string, ...any)
	// bell asks for a barrier now (RequestBarrier): a source holding its
	// reads while the state cache is over its limit needs epochs to
	// commit and a barrier after them, at whose checkpoint the operators
	// evict.
	bell chan struct{}

	ddl sync.Mutex // one graph change at a time
	// gate orders barrier injection against Atomic: inject holds it
	// exclusively, so the changes Atomic hands to several sources all land
	// in one epoch.
	gate sync.RWMutex

	mu struct {
		sync.Mutex
		sources    map[SourceActor]struct{}
		collectors int
		epoch      uint64 // last injected
		committed  uint64
		inflight   map[uint64]*epochState
		paused     bool
		next       []func(w *storage.EpochWriter)
		postCommit []func(epoch uint64)
		preCommit  []func(epoch uint64, w *storage.EpochWriter) error
		waiters    []waiter
		err        error
	}
	commitCh chan uint64
	done     chan struct{}
	history  checkpointHistory // stats.go

	// stage is what the committer is doing with the epoch it commits
	// (SetCommitStage), for the stuck-barrier report.
	stage struct {
		sync.Mutex
		epoch uint64
		what  string
		since time.Time
	}
	// CommitFailpoint, if set, is called once per epoch (rows 1) just
	// before its write to the store (tests: a call that blocks makes a
	// slow commit). Set before Run.
	CommitFailpoint func(ctx context.Context, rows int) error
}

// SetCommitStage records what the commit of the epoch being committed is
// doing now ("" when done); BeforeCommit hooks call it.
func (c *Coordinator) SetCommitStage(e uint64, what string) {
	c.stage.Lock()
	c.stage.epoch, c.stage.what, c.stage.since = e, what, time.Now()
	c.stage.Unlock()
}

type epochState struct {
	w         *storage.EpochWriter
	remaining int
	pause     bool
	started   time.Time // injected
	aligned   time.Time // every collector reported it
}

type waiter struct {
	epoch uint64
	ch    chan error
}

// maxInflight bounds the epochs injected but not yet committed.
const maxInflight = 8

// NewCoordinator returns a coordinator over db that resumes after the
// committed epoch.
func NewCoordinator(db *storage.DB, interval time.Duration, logf func(string, ...any)) *Coordinator {
	c := &Coordinator{db: db, interval: interval, logf: logf, commitCh: make(chan uint64, 1024), done: make(chan struct{}), bell: make(chan struct{}, 1)}
	c.mu.sources = map[SourceActor]struct{}{}
	c.mu.inflight = map[uint64]*epochState{}
	c.mu.epoch = db.CommittedEpoch()
	c.mu.committed = c.mu.epoch
	return c
}

// SourceActor is what the coordinator injects barriers into.
type SourceActor interface {
	InjectBarrier(b *Barrier)
	Resume()
}

// AddSource registers a source actor; it collects every epoch.
func (c *Coordinator) AddSource(s SourceActor) {
	c.mu.Lock()
	c.mu.sources[s] = struct{}{}
	c.mu.collectors++
	c.mu.Unlock()
}

// RemoveSource unregisters a source actor (graph paused).
func (c *Coordinator) RemoveSource(s SourceActor) {
	c.mu.Lock()
	if _, ok := c.mu.sources[s]; ok {
		delete(c.mu.sources, s)
		c.mu.collectors--
	}
	c.mu.Unlock()
}

// AddCollectors changes the number of terminal collectors (graph paused).
func (c *Coordinator) AddCollectors(n int) {
	c.mu.Lock()
	c.mu.collectors += n
	c.mu.Unlock()
}

// Join adds one collector from the next epoch injected on, if admit,
// called with that epoch under the coordinator's lock, agrees: a job
// created while the graph runs (its backfill read outside the epochs,
// exec/job/detached.go) joins them so. Once admit has returned, every
// barrier of that epoch or later is sent after it.
func (c *Coordinator) Join(admit func(next uint64) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if admit(c.mu.epoch + 1) {
		c.mu.collectors++
	}
}

// OnNextEpoch adds writes (catalog changes, state deletions) to the next
// epoch injected.
func (c *Coordinator) OnNextEpoch(f func(w *storage.EpochWriter)) {
	c.mu.Lock()
	c.mu.next = append(c.mu.next, f)
	c.mu.Unlock()
}

// OnCommit registers f to run after every commit (on the committer goroutine).
func (c *Coordinator) OnCommit(f func(epoch uint64)) {
	c.mu.Lock()
	c.mu.postCommit = append(c.mu.postCommit, f)
	c.mu.Unlock()
}

// BeforeCommit registers f to run on the committer goroutine just before
// epoch e is committed, when every collector has reported it: the job
// runtime absorbs each job's share of the epoch into w there, or discards
// the share of a job that failed. An error fails the checkpoint.
func (c *Coordinator) BeforeCommit(f func(e uint64, w *storage.EpochWriter) error) {
	c.mu.Lock()
	c.mu.preCommit = append(c.mu.preCommit, f)
	c.mu.Unlock()
}

// Run injects a barrier every interval and commits epochs until ctx ends.
func (c *Coordinator) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.committer(ctx)
	}()
	t := time.NewTicker(c.interval)
	defer t.Stop()
	var last time.Time // the last barrier injected here
	for {
		select {
		case <-ctx.Done():
			close(c.done)
			wg.Wait()
			return nil
		case <-t.C:
			c.inject(false, false)
			last = time.Now()
		case <-c.db.StateCache().Full():
			// The operators' state passed the cache's limit: checkpoint
			// now so that it can be evicted, unless an epoch is already
			// on its way (its commit lets them evict) or one started
			// very recently.
			if c.earlyBarrier(last) {
				last = time.Now()
			}
		case <-c.bell:
			if c.earlyBarrier(last) {
				last = time.Now()
			}
		}
	}
}

// earlyBarrier injects a barrier before the interval if no epoch is in
// flight and the last one was injected minEarlyBarrier ago or more.
func (c *Coordinator) earlyBarrier(last time.Time) bool {
	c.mu.Lock()
	idle := len(c.mu.inflight) == 0
	c.mu.Unlock()
	if !idle || time.Since(last) < minEarlyBarrier {
		return false
	}
	c.inject(false, false)
	return true
}

// RequestBarrier asks for a barrier as soon as no epoch is in flight
// (and minEarlyBarrier has passed since the last early one).
func (c *Coordinator) RequestBarrier() {
	select {
	case c.bell <- struct{}{}:
	default:
	}
}

// minEarlyBarrier is the least time between two barriers injected because
// the state cache is full.
const minEarlyBarrier = 50 * time.Millisecond

// inject starts a new epoch. It returns 0 if no barrier was injected
// (paused, or too many epochs in flight and force is false).
func (c *Coordinator) inject(pause, force bool) uint64 {
	c.gate.Lock()
	defer c.gate.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.paused || c.mu.err != nil {
		return 0
	}
	if !force && len(c.mu.inflight) >= maxInflight {
		return 0
	}
	c.mu.epoch++
	e := c.mu.epoch
	w := c.db.NewEpochWriter()
	for _, f := range c.mu.next {
		f(w)
	}
	c.mu.next = nil
	st := &epochState{w: w, remaining: c.mu.collectors, pause: pause, started: time.Now()}
	c.mu.inflight[e] = st
	if pause {
		c.mu.paused = true
	}
	b := &Barrier{Epoch: e, W: w, Pause: pause}
	for s := range c.mu.sources {
		s.InjectBarrier(b)
	}
	if st.remaining == 0 {
		st.aligned = st.started
		c.commitCh <- e
	}
	return e
}

// Collect reports that one collector has written its state for epoch e.
func (c *Coordinator) Collect(e uint64) {
	c.mu.Lock()
	st := c.mu.inflight[e]
	if st == nil {
		c.mu.Unlock()
		c.logf("collect of unknown epoch %d", e)
		return
	}
	st.remaining--
	ready := st.remaining == 0
	if ready {
		st.aligned = time.Now()
	}
	c.mu.Unlock()
	if ready {
		c.commitCh <- e
	}
}

func (c *Coordinator) committer(ctx context.Context) {
	for {
		select {
		case <-c.done:
			return
		case e := <-c.commitCh:
			c.mu.Lock()
			st := c.mu.inflight[e]
			failed := c.mu.err != nil
			pre := c.mu.preCommit
			c.mu.Unlock()
			commitStart := time.Now()
			var bytes int64
			// After a failed epoch no later one may commit: operators wrote
			// only their changes since the failed barrier.
			var err error
			if !failed {
				c.SetCommitStage(e, "running its pre-commit hooks")
				for _, f := range pre {
					if err = f(e, st.w); err != nil {
						break
					}
				}
			}
			if !failed && err == nil {
				connector.Crashpoint("checkpoint-before-commit")
				bytes = int64(st.w.Len())
				c.SetCommitStage(e, fmt.Sprintf("writing %d bytes to the store", bytes))
				if c.CommitFailpoint != nil {
					err = c.CommitFailpoint(ctx, 1)
				}
				if err == nil {
					err = c.db.CommitCtx(ctx, st.w, e)
				}
				connector.Crashpoint("checkpoint-after-commit")
			}
			c.SetCommitStage(0, "")
			c.mu.Lock()
			delete(c.mu.inflight, e)
			if err != nil {
				c.mu.err = fmt.Errorf("checkpoint %d failed: %w", e, err)
				c.logf("%v", c.mu.err)
			} else if !failed {
				c.mu.committed = e
			}
			var keep []waiter
			for _, w := range c.mu.waiters {
				if c.mu.err != nil {
					w.ch <- c.mu.err
				} else if w.epoch <= c.mu.committed {
					w.ch <- nil
				} else {
					keep = append(keep, w)
				}
			}
			c.mu.waiters = keep
			var post []func(uint64)
			if c.mu.err == nil {
				post = c.mu.postCommit
			}
			c.mu.Unlock()
			end := time.Now()
			c.history.add(CheckpointRecord{Epoch: e, Started: st.started, Aligned: st.aligned.Sub(st.started), Commit: end.Sub(commitStart),
				Duration: end.Sub(st.started), Bytes: bytes, Failed: failed || err != nil})
			for _, f := range post {
				f(e)
			}
		}
	}
}

// wait blocks until epoch e is committed.
func (c *Coordinator) wait(ctx context.Context, e uint64) error {
	ch := make(chan error, 1)
	c.mu.Lock()
	if c.mu.err != nil {
		c.mu.Unlock()
		return c.mu.err
	}
	if c.mu.committed >= e {
		c.mu.Unlock()
		return nil
	}
	c.mu.waiters = append(c.mu.waiters, waiter{epoch: e, ch: ch})
	c.mu.Unlock()
	// A commit stalled on a full disk (storage.DB.CommitCtx waits for
	// space) ends the wait with the disk's error instead of hanging.
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case err := <-ch:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-c.done:
			return fmt.Errorf("shutting down")
		case <-t.C:
			if err := c.db.WriteRefused(); err != nil {
				return err
			}
		}
	}
}

// Atomic runs push, which hands changes to source actors (a committed
// transaction's tables), with no barrier injected meanwhile, so that all
// of them belong to one epoch, which it returns. push must not wait for a
// barrier or the coordinator.
func (c *Coordinator) Atomic(push func() error) (uint64, error) {
	c.gate.RLock()
	defer c.gate.RUnlock()
	c.mu.Lock()
	e := c.mu.epoch + 1
	c.mu.Unlock()
	return e, push()
}

// Flush injects a barrier now and returns once its epoch is committed, so
// that every write acknowledged before the call is visible to reads.
func (c *Coordinator) Flush(ctx context.Context) error {
	return c.sync(ctx, 0)
}

// Sync returns once epoch e is committed, injecting a barrier at once if
// none at or after e is in flight (read-your-writes: the epoch holding a
// session's last write is asked for instead of waiting for the interval).
func (c *Coordinator) Sync(ctx context.Context, e uint64) error {
	if e == 0 {
		return nil
	}
	return c.sync(ctx, e)
}

// sync waits for epoch e to commit (e == 0: a barrier injected now).
func (c *Coordinator) sync(ctx context.Context, e uint64) error {
	for {
		if e != 0 {
			c.mu.Lock()
			committed, injected, err := c.mu.committed, c.mu.epoch, c.mu.err
			c.mu.Unlock()
			if err != nil {
				return err
			}
			if committed >= e {
				return nil
			}
			if injected >= e {
				return c.wait(ctx, e)
			}
		}
		// Never exceed maxInflight: sources' barrier queues are bounded and
		// the coordinator must not block on them. When the limit is reached,
		// wait for the newest epoch in flight, then inject our own.
		if inj := c.inject(false, false); inj != 0 {
			return c.wait(ctx, inj)
		}
		c.mu.Lock()
		full := !c.mu.paused && c.mu.err == nil && len(c.mu.inflight) >= maxInflight
		newest := c.mu.epoch
		c.mu.Unlock()
		if full {
			if err := c.wait(ctx, newest); err != nil {
				return err
			}
			continue
		}
		// Paused by a graph change: wait for it to finish.
		c.ddl.Lock()
		c.ddl.Unlock() //nolint:staticcheck // a barrier to wait for the DDL
		if err := ctx.Err(); err != nil {
			return err
		}
		c.mu.Lock()
		err := c.mu.err
		c.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// Pause stops the sources at a committed epoch: when it returns, every
// actor is idle and the graph may be changed. Resume must follow.
func (c *Coordinator) Pause(ctx context.Context) error {
	c.ddl.Lock()
	e := c.inject(true, true)
	if e == 0 {
		c.ddl.Unlock()
		c.mu.Lock()
		err := c.mu.err
		c.mu.Unlock()
		return fmt.Errorf("cannot pause: %v", err)
	}
	if err := c.wait(ctx, e); err != nil {
		// The sources are paused; resume them before giving up.
		c.resume()
		c.ddl.Unlock()
		return err
	}
	return nil
}

func (c *Coordinator) resume() {
	c.mu.Lock()
	c.mu.paused = false
	for s := range c.mu.sources {
		s.Resume()
	}
	c.mu.Unlock()
}

// Resume restarts the sources after Pause and waits until the next epoch
// (holding the graph change's writes) is committed.
func (c *Coordinator) Resume(ctx context.Context) error {
	e, err := c.ResumeNoWait()
	if err != nil {
		return err
	}
	return c.wait(ctx, e)
}

// ResumeNoWait restarts the sources after Pause and returns the epoch it
// injected, which holds the graph change's writes (a job being created
// commits it only after its backfill): Wait for it.
func (c *Coordinator) ResumeNoWait() (uint64, error) {
	c.resume()
	e := c.inject(false, true)
	c.ddl.Unlock()
	if e == 0 {
		return 0, fmt.Errorf("checkpointing stopped")
	}
	return e, nil
}

// Wait blocks until epoch e is committed (or ctx ends).
func (c *Coordinator) Wait(ctx context.Context, e uint64) error { return c.wait(ctx, e) }

// Committed returns the last committed epoch.
func (c *Coordinator) Committed() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.committed
}

// InFlight describes the oldest epoch injected but not yet committed.
type InFlight struct {
	Epoch   uint64
	Started time.Time // injected
	// Remaining is how many collectors have not reported the epoch; 0
	// means every operator has passed it and the commit itself is slow.
	Remaining int
	// Commit, when the epoch is being committed, is what its commit is
	// doing (SetCommitStage) and since when.
	Commit      string
	CommitSince time.Time
}

// Oldest returns the oldest epoch in flight; ok is false when every
// injected epoch has committed.
func (c *Coordinator) Oldest() (f InFlight, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e, st := range c.mu.inflight {
		if !ok || e < f.Epoch {
			f, ok = InFlight{Epoch: e, Started: st.started, Remaining: st.remaining}, true
		}
	}
	c.stage.Lock()
	if ok && c.stage.epoch == f.Epoch {
		f.Commit, f.CommitSince = c.stage.what, c.stage.since
	}
	c.stage.Unlock()
	return f, ok
}

// Injected returns the last epoch injected.
func (c *Coordinator) Injected() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.epoch
}
