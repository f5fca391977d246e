package job

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"sluice/exec/flow"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// A job created while the graph runs (CREATE MATERIALIZED VIEW or CREATE
// SINK over existing data) reads its backfill outside the epochs, so that
// a long backfill stalls nothing else: other views and sinks commit, DDL
// runs, FLUSH and read-your-writes return. The job is detached from the
// epochs while it backfills:
//
//   - each Subscribe reads its relation's committed snapshot (taken, with
//     the subscription attached, while the graph was paused), and a relay
//     between the relation's stream and the Subscribe queues what the
//     relation changes meanwhile, holding the upstream back only past
//     maxQueuedRows;
//   - the relays drop the barriers of epochs the job does not belong to:
//     the coordinator does not count it as a collector, so those epochs
//     commit without it (and without any of its state);
//   - once every backfill is read and the relays have caught up (their
//     queues are short, or catchUpWait has passed), the job joins the
//     epochs at the next one injected (flow.Coordinator.Join): from that
//     barrier on the relays pass barriers, and that epoch, the creation
//     epoch, commits the job's first state (the snapshot plus every change
//     since) with its catalog entry.
//
// Nothing of the job's state commits before the creation epoch. Its
// catalog entry commits earlier, with a pending record that the creation
// epoch deletes, so that a crash in between drops the entry at startup (a
// background creation is then run again: server/pendingddl.go).

// catchUpWait bounds how long a job whose backfill is read waits for its
// relays to catch up before it joins the epochs anyway.
const catchUpWait = 5 * time.Second

// caughtUp is the queue length (messages) under which a relay has caught up.
const caughtUp = 4

// maxQueuedRows bounds the rows a relay queues while its job backfills:
// past it the relay reads no more until the queue drains, so the upstream
// waits (and with it the epochs, as when a backfill was one epoch) rather
// than memory growing without end under heavy writes.
const maxQueuedRows = 256 << 10

// detached is a job's state while it backfills outside the epochs.
type detached struct {
	// at is the epoch from which the job's relays pass barriers (0: it
	// has not joined the epochs yet). Written under the coordinator's
	// lock (flow.Coordinator.Join).
	at      atomic.Uint64
	pending atomic.Int32 // backfills not yet read
	relays  []*relay
	// decided is closed once the creation epoch is known (Job.bf.epoch).
	decided   chan struct{}
	closeOnce sync.Once
}

// detachable reports whether a job of plan may backfill outside the
// epochs: one that reads a source directly (a connector, a clock series)
// takes part in every epoch from its start, so its backfill is one epoch.
func detachable(plan *spec.Plan) bool {
	subscribes := false
	for _, n := range plan.Nodes {
		switch n.Kind {
		case spec.SourceRead:
			return false
		case spec.Subscribe:
			subscribes = true
		}
	}
	return subscribes
}

// Detached reports whether job j is backfilling outside the epochs (it has
// not joined them yet).
func (j *Job) Detached() bool { return j.det != nil && j.det.at.Load() == 0 }

// Upstream returns the channel attached to another job's output that
// feeds in, an input of one of j's actors: in itself, or for a relay's
// output (a job created over existing data), the relay's input.
func (j *Job) Upstream(in chan flow.Msg) chan flow.Msg {
	if j.det != nil {
		for _, rl := range j.det.relays {
			if rl.out == in {
				return rl.in
			}
		}
	}
	return in
}

// relay passes a relation's stream to a detached job's Subscribe.
type relay struct {
	in     chan flow.Msg // attached to the relation's stream
	out    chan flow.Msg // the Subscribe actor's input
	queued atomic.Int64  // messages waiting for out
}

// run moves messages from in to out until ctx ends. Until the job has
// joined it never blocks on out (the queue grows instead, up to
// maxQueuedRows); once joined it
// reads nothing more until the queue is drained, then forwards one message
// at a time, so that the job's backpressure reaches its upstream again.
// Barriers of epochs before the join are dropped.
func (rl *relay) run(ctx context.Context, at *atomic.Uint64) error {
	var q []flow.Msg
	rows := 0 // rows of the data messages in q
	size := func(m flow.Msg) int {
		if m.Kind == flow.MsgData && m.Batch != nil {
			return m.Batch.Len()
		}
		return 0
	}
	pass := func(m flow.Msg) bool {
		if m.Kind != flow.MsgBarrier {
			return true
		}
		e := at.Load()
		return e != 0 && m.Barrier.Epoch >= e
	}
	for {
		in := rl.in
		if at.Load() != 0 {
			if len(q) == 0 {
				break
			}
			in = nil // joined: drain the queue, holding the upstream back
		}
		if rows >= maxQueuedRows {
			in = nil // full: the upstream waits until the queue drains
		}
		var out chan flow.Msg
		var head flow.Msg
		if len(q) > 0 {
			out, head = rl.out, q[0]
		}
		select {
		case <-ctx.Done():
			return nil
		case m := <-in:
			if pass(m) {
				q = append(q, m)
				rows += size(m)
				rl.queued.Add(1)
			}
		case out <- head:
			rows -= size(head)
			q[0] = flow.Msg{}
			q = q[1:]
			if len(q) == 0 {
				q = nil // let the backing array go
			}
			rl.queued.Add(-1)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-rl.in:
			if !pass(m) {
				continue
			}
			select {
			case rl.out <- m:
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// detach sets job j up to backfill outside the epochs.
func (j *Job) detach() {
	j.det = &detached{decided: make(chan struct{})}
}

// relayFor returns the input of a detached job's Subscribe reading from
// in (attached to the relation's stream), and registers the relay.
func (j *Job) relayFor(in chan flow.Msg) chan flow.Msg {
	rl := &relay{in: in, out: flow.NewChan()}
	j.det.relays = append(j.det.relays, rl)
	j.det.pending.Add(1)
	return rl.out
}

// backfillRead records that one of detached job j's backfills has ended;
// after the last, the job joins the epochs once its relays catch up.
func (r *Runtime) backfillRead(ctx context.Context, j *Job) {
	if j.det.pending.Add(-1) != 0 {
		return
	}
	r.spawn(j, ctx, j.Name+"/join", func(ctx context.Context) error {
		deadline := time.Now().Add(catchUpWait)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			behind := false
			for _, rl := range j.det.relays {
				if rl.queued.Load() > caughtUp {
					behind = true
				}
			}
			if !behind || time.Now().After(deadline) {
				break
			}
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
		r.coord.Join(func(next uint64) bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.mu.jobs[j.ID] != j {
				return false // stopped meanwhile
			}
			j.det.at.Store(next)
			if j.bf.epoch == 0 {
				j.bf.epoch = next
			}
			j.det.closeOnce.Do(func() { close(j.det.decided) })
			return true
		})
		if at := j.det.at.Load(); at != 0 {
			// Inject that epoch now rather than at the interval (which
			// may be long): the creation ends with its commit.
			_ = r.coord.Sync(ctx, at) //nolint:errcheck // the job stopped, or the coordinator failed: both reported elsewhere
		}
		return nil
	})
}

// CreationEpoch waits until the epoch that creates job j is known and
// returns it: for a detached job, the epoch it joins; else the one
// SetCreationEpoch recorded.
func (r *Runtime) CreationEpoch(ctx context.Context, j *Job) (uint64, error) {
	if j.det == nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		return j.bf.epoch, nil
	}
	select {
	case <-j.det.decided:
		r.mu.Lock()
		defer r.mu.Unlock()
		return j.bf.epoch, nil
	case <-j.done:
		return 0, pgerror.New(pgcode.ObjectNotInPrerequisiteState, "%s was dropped while it was being created", j.Name)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}
