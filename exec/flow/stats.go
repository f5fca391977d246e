package flow

import (
	"sync"
	"sync/atomic"
	"time"
)

// ActorStats are the figures of one actor that metrics and system
// relations read while it runs. The actor updates them once per message
// (a batch, a barrier), never per row; readers load them from any
// goroutine.
type ActorStats struct {
	// Started is when the actor was created: idle time is the wall time
	// since then that was neither busy nor blocked.
	Started time.Time
	// RowsIn and RowsOut count the rows of the batches received and sent
	// (a batch sent to several consumers counts once); BatchesIn the
	// batches received.
	RowsIn, RowsOut, BatchesIn atomic.Int64
	// BusyNanos is the time spent handling messages, BlockedNanos the time
	// spent waiting for a consumer to take a message (backpressure).
	BusyNanos, BlockedNanos atomic.Int64
	// State is the operator's state as of its last barrier (operators that
	// implement StateReporter).
	HasState                                         atomic.Bool
	StateBytes, StateKeys, CacheLookups, CacheMisses atomic.Int64
}

// NewActorStats returns the stats of an actor created now.
func NewActorStats() *ActorStats { return &ActorStats{Started: time.Now()} }

// IdleNanos is the wall time since Started neither busy nor blocked.
func (s *ActorStats) IdleNanos() int64 {
	return max(0, time.Since(s.Started).Nanoseconds()-s.BusyNanos.Load()-s.BlockedNanos.Load())
}

// StateStats is what an operator reports about its state.
type StateStats struct {
	// Bytes and Keys estimate the state held in memory (groups, join
	// buckets); Lookups counts the state lookups since the operator
	// started, Misses those that had to read the store (spilled state).
	Bytes, Keys, Lookups, Misses int64
}

// StateReporter is an optional capability of operators that keep state:
// the actor calls StateStats after each checkpoint, on its own goroutine.
type StateReporter interface {
	StateStats() StateStats
}

// SourceStats are the figures of one source actor, read by metrics from
// any goroutine.
type SourceStats struct {
	Started time.Time
	// Rows and Batches count what the source sent downstream; Bytes is the
	// connector's count of bytes read (sources that report it).
	Rows, Batches, Bytes atomic.Int64
	// BlockedNanos is the time spent waiting for consumers.
	BlockedNanos atomic.Int64

	mu  sync.Mutex
	lag []Lag
}

// Lag is how far a source's reader is behind its input, per partition
// ("" for sources without partitions): offsets behind the high watermark
// (Kafka) or events due but not generated yet (generators).
type Lag struct {
	Partition string
	Behind    int64
}

// Lag returns the lag reported at the last barrier (nil: not reported).
func (s *SourceStats) Lag() []Lag {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lag
}

func (s *SourceStats) setLag(l []Lag) {
	s.mu.Lock()
	s.lag = l
	s.mu.Unlock()
}

// CheckpointRecord is one epoch's checkpoint as the coordinator saw it.
type CheckpointRecord struct {
	Epoch   uint64
	Started time.Time // barrier injected
	// Aligned is how long the barrier took to reach every collector;
	// Commit how long the commit (state absorption and the synced write)
	// took after that; Duration from injection to the end of the commit.
	Aligned, Commit, Duration time.Duration
	Bytes                     int64 // the size of the epoch's write batch
	Failed                    bool
}

// historyLen is how many checkpoint records the coordinator keeps.
const historyLen = 128

// checkpointHistory is a ring of the latest checkpoint records.
type checkpointHistory struct {
	mu      sync.Mutex
	ring    [historyLen]CheckpointRecord
	n       int // records ever added
	failed  int64
	observe []func(CheckpointRecord)
}

func (h *checkpointHistory) add(r CheckpointRecord) {
	h.mu.Lock()
	h.ring[h.n%historyLen] = r
	h.n++
	if r.Failed {
		h.failed++
	}
	obs := h.observe
	h.mu.Unlock()
	for _, f := range obs {
		f(r)
	}
}

// History returns up to n of the latest checkpoint records, oldest first.
func (c *Coordinator) History(n int) []CheckpointRecord {
	h := &c.history
	h.mu.Lock()
	defer h.mu.Unlock()
	n = min(n, h.n, historyLen)
	out := make([]CheckpointRecord, 0, n)
	for i := h.n - n; i < h.n; i++ {
		out = append(out, h.ring[i%historyLen])
	}
	return out
}

// FailedCheckpoints returns how many checkpoints failed since start.
func (c *Coordinator) FailedCheckpoints() int64 {
	c.history.mu.Lock()
	defer c.history.mu.Unlock()
	return c.history.failed
}

// OnCheckpoint registers f to run on the committer goroutine after each
// checkpoint, committed or failed (metrics).
func (c *Coordinator) OnCheckpoint(f func(CheckpointRecord)) {
	c.history.mu.Lock()
	c.history.observe = append(c.history.observe, f)
	c.history.mu.Unlock()
}

// InFlight returns the epochs injected and not yet committed.
func (c *Coordinator) InFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.inflight)
}
