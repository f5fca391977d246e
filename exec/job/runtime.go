package job

import (
	"cmp"
	"context"
	"fmt"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"sluice/exec/connector"
	"sluice/exec/eval"
	"sluice/exec/flow"
	"sluice/exec/ops"
	"sluice/exec/sink"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// Runtime owns every running job.
type Runtime struct {
	db    *storage.DB
	coord *flow.Coordinator
	ctx   context.Context
	logf  func(string, ...any)
	wg    sync.WaitGroup
	// Policy confines the connectors' files, ports and hosts and resolves
	// their secret references; set before the first job starts.
	Policy *connector.Policy
	// NoStats runs actors and sources without their metrics figures (to
	// measure what the figures cost: sluice bench --no-metrics).
	NoStats bool
	// Sinks are sink connectors of this runtime's owner (a sink into one
	// of its tables), found before the registered ones; set before the
	// first job starts.
	Sinks map[string]connector.SinkFactory
	// OnCancelled, if set, adds to w (the epoch that was to create job
	// id) the removal of the job's catalog entry: its creation was
	// cancelled (progress.go).
	OnCancelled func(id uint64, w *storage.EpochWriter)
	// OnCreated, if set, adds to w (the epoch that creates job id, with
	// its state) what its creator records then (progress.go).
	OnCreated func(id uint64, w *storage.EpochWriter)

	mu struct {
		sync.Mutex
		started bool                    // Start was called: new actors run at once
		pending []func()                // actors created before Start
		streams map[uint64]*flow.Output // relation id -> its change stream
		tables  map[uint64]*flow.TableSource
		jobs    map[uint64]*Job
		// holds keeps a table's log from a failed (or catching up)
		// subscriber's committed position: {job, table} -> sequence.
		holds map[[2]uint64]uint64
		// tableDone is each table's position its own job committed.
		tableDone map[uint64]uint64
		// catchup holds, for a halted job about to start again, the
		// snapshot of the epoch it stopped at (see Job.haltSnap).
		catchup map[uint64]*storage.Snapshot
	}
}

// Job is one running dataflow (a table's materialization or a view).
type Job struct {
	ID     uint64
	Name   string
	Errors ops.ErrorSink
	Mat    *ops.Materialize
	// Sink and Deliverer are set for a sink's job.
	Sink      *sink.Writer
	Deliverer *sink.Deliverer
	// Readers are the job's source readers.
	Readers []*flow.ReaderSource
	// Table is a table's change source (a table's job); Actors the job's
	// operators (for metrics: each has Stats).
	Table  *flow.TableSource
	Actors []*flow.Actor
	// Edges are the dataflow's edges between its operators, by operator
	// name ("1-HashAgg"), from producer to consumer.
	Edges [][2]string

	cancel  context.CancelFunc
	wg      sync.WaitGroup
	sources []flow.SourceActor
	subs    []sub
	// edges are its actors' other inputs, each attached to the output of
	// the node it reads. Most of those outputs end with the job, but not
	// all: a view changed in place hands its Materialize's input stream
	// on to the new plan (replace.go), and an input left attached there
	// would fill and block the new Materialize at the next barriers, so
	// that no epoch completes again (stop detaches every edge).
	edges   []sub
	failure struct {
		sync.Mutex
		err      error
		halted   bool   // its shares are being discarded
		haltedAt uint64 // the last epoch it completed
	}
	shares shares
	// absorbed is the last epoch whose share was committed (guarded by
	// Runtime.mu).
	absorbed  uint64
	tableSubs []tableSub
	viewSubs  []uint64          // the views (not tables) it subscribes to
	subPos    map[uint64]uint64 // table -> committed log position
	// haltSnap is the committed snapshot of the epoch a failed job that
	// reads views stopped at: resumed, it reads what those views changed
	// since (guarded by Runtime.mu).
	haltSnap *storage.Snapshot
	// then is, while a halted job starts again, its haltSnap.
	then *storage.Snapshot
	// rebuild: the job never completed an epoch and is built from scratch.
	rebuild bool
	// bf is its creation (progress.go); committed the last epoch
	// committed with its state.
	bf backfillState
	// det is set while a job created over existing data backfills
	// outside the epochs (detached.go); done ends when the job stops.
	det       *detached
	done      <-chan struct{}
	committed atomic.Uint64
	// stateful holds the actors of the job's operators built by newOp,
	// by StateID: a view changed in place reuses the kept ones' operators
	// with the state they hold (replace.go).
	stateful map[uint64]*flow.Actor
}

type sub struct {
	out *flow.Output
	ch  chan flow.Msg
}

// Failure returns the error that stopped part of the job, if any.
func (j *Job) Failure() error {
	j.failure.Lock()
	defer j.failure.Unlock()
	return j.failure.err
}

func (j *Job) fail(err error) {
	j.failure.Lock()
	first := j.failure.err == nil
	if first {
		j.failure.err = err
	}
	j.failure.Unlock()
	if first {
		for _, rs := range j.Readers {
			rs.Halt.Store(true)
		}
	}
}

// newJob returns a job with no actors yet.
func (r *Runtime) newJob(id uint64, name string) *Job {
	j := &Job{ID: id, Name: name, subPos: map[uint64]uint64{}}
	j.shares.db = r.db
	j.absorbed = r.db.CommittedEpoch()
	return j
}

// NewRuntime returns a runtime whose actors live until ctx ends.
func NewRuntime(ctx context.Context, db *storage.DB, coord *flow.Coordinator, logf func(string, ...any)) *Runtime {
	r := &Runtime{db: db, coord: coord, ctx: ctx, logf: logf}
	r.mu.streams = map[uint64]*flow.Output{}
	r.mu.tables = map[uint64]*flow.TableSource{}
	r.mu.jobs = map[uint64]*Job{}
	r.mu.holds = map[[2]uint64]uint64{}
	r.mu.tableDone = map[uint64]uint64{}
	r.mu.catchup = map[uint64]*storage.Snapshot{}
	coord.BeforeCommit(r.beforeCommit)
	coord.CommitFailpoint = theFailpoint.hook("commit", "")
	coord.OnCommit(func(uint64) {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, j := range r.mu.jobs {
			if j.bf.creating {
				continue // nothing of it committed yet (a detached backfill)
			}
			j.committed.Store(j.absorbed)
			if j.Deliverer != nil {
				j.Deliverer.Notify()
			}
		}
	})
	return r
}

// Wait waits for every actor after ctx has ended.
func (r *Runtime) Wait() {
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, j := range r.mu.jobs {
		if j.haltSnap != nil {
			j.haltSnap.Release()
			j.haltSnap = nil
		}
	}
	for id, s := range r.mu.catchup {
		s.Release()
		delete(r.mu.catchup, id)
	}
}

// OpID returns the operator id of state id stateID of job: unique across
// jobs. A node's state id is its spec.Node.StateID (position+1 when it has
// none).
func OpID(job, stateID uint64) uint64 { return job<<16 | stateID }

// nodeOpID returns the operator id of node idx of a job's plan.
func nodeOpID(job uint64, idx int, n *spec.Node) uint64 {
	if n.StateID != 0 {
		return OpID(job, n.StateID)
	}
	return OpID(job, uint64(idx+1))
}

// Start runs every actor created so far. Until then actors are only
// created, so that at recovery every job is attached to the streams it
// reads before any source replays its log.
func (r *Runtime) Start() {
	r.mu.Lock()
	r.mu.started = true
	pending := r.mu.pending
	r.mu.pending = nil
	r.mu.Unlock()
	for _, f := range pending {
		f()
	}
}

func (r *Runtime) spawn(j *Job, ctx context.Context, name string, run func(context.Context) error) {
	r.mu.Lock()
	if !r.mu.started {
		r.mu.pending = append(r.mu.pending, func() { r.spawn(j, ctx, name, run) })
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	r.wg.Add(1)
	j.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer j.wg.Done()
		// The goroutine (and those it starts) carries its job and operator
		// as pprof labels: the stuck-barrier report picks its stack out of
		// the goroutine profile by them (barrier.go).
		pprof.Do(ctx, pprof.Labels(labelJob, j.Name, labelOperator, operatorName(j, name)), func(ctx context.Context) {
			if err := run(ctx); err != nil && ctx.Err() == nil {
				r.logf("%s: %v", name, err)
				j.fail(err)
			}
		})
	}()
}

// Job returns the running job of relation id.
func (r *Runtime) Job(id uint64) *Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.jobs[id]
}

// BadRecords returns how many bad records the readers of source id have
// passed by (on_error skip or dead_letter), over every job reading it.
func (r *Runtime) BadRecords(source uint64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, j := range r.mu.jobs {
		for _, rs := range j.Readers {
			if rs.SourceID == source {
				n += rs.BadRecords.Load()
			}
		}
	}
	return n
}

// SourceStatus returns the status of the readers of source id (the
// trouble they are retrying through), "" when every one is healthy.
func (r *Runtime) SourceStatus(source uint64) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, j := range r.mu.jobs {
		for _, rs := range j.Readers {
			if rs.SourceID == source {
				if st := rs.Status(); st != "" {
					return st
				}
			}
		}
	}
	return ""
}

// LateRecords returns how many rows the readers of source id have dropped
// as late (behind the source's watermark), over every job reading it.
func (r *Runtime) LateRecords(source uint64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, j := range r.mu.jobs {
		for _, rs := range j.Readers {
			if rs.SourceID == source {
				n += rs.Late.Load()
			}
		}
	}
	return n
}

// newStats returns an actor's stats (nil with NoStats).
func (r *Runtime) newStats() *flow.ActorStats {
	if r.NoStats {
		return nil
	}
	return flow.NewActorStats()
}

// Jobs returns the running jobs, ordered by id.
func (r *Runtime) Jobs() []*Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Job, 0, len(r.mu.jobs))
	for _, j := range r.mu.jobs {
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b *Job) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Table returns the change source of table id.
func (r *Runtime) Table(id uint64) *flow.TableSource {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.tables[id]
}

// StartTable starts table id: its change source (replaying its log after
// the checkpoint) and its materialization keyed by key (nil: no primary
// key). The graph must be paused or not yet running.
func (r *Runtime) StartTable(id uint64, name string, key []int) (*flow.TableSource, error) {
	ts, err := flow.NewTableSource(r.db, r.coord, name, id, DecodeLogBatch)
	if err != nil {
		return nil, err
	}
	mat, err := ops.NewMaterialize(id, key, r.db)
	if err != nil {
		return nil, err
	}
	j := r.newJob(id, name)
	j.Mat = mat
	ctx, cancel := context.WithCancel(r.ctx)
	j.cancel = cancel
	mat.Done = ctx.Done()
	in := flow.NewChan()
	ts.Out.Attach(in)
	ts.OnError = j.fail
	ts.Share = j.shares.share
	ts.KeepLog = true
	act := &flow.Actor{Name: name + "/materialize", Op: mat, Inputs: []chan flow.Msg{in}, Out: &flow.Output{},
		OnCollect: r.coord.Collect, OnError: j.fail, Share: j.shares.share, Failpoint: theFailpoint.hook("materialize", name),
		Kind: spec.Materialize.String(), Stats: r.newStats()}
	if r.NoStats {
		ts.Stats = nil
	}
	j.sources = []flow.SourceActor{ts}
	j.Table = ts
	j.Actors = []*flow.Actor{act}
	r.coord.AddSource(ts)
	r.coord.AddCollectors(1)
	r.mu.Lock()
	r.mu.streams[id] = ts.Out
	r.mu.tables[id] = ts
	r.mu.jobs[id] = j
	r.mu.tableDone[id] = ts.Sent()
	r.mu.Unlock()
	act.SetPassed(r.coord.Injected())
	ts.SetPassed(r.coord.Injected())
	r.spawn(j, ctx, name+"/source", ts.Run)
	r.spawn(j, ctx, name+"/materialize", act.Run)
	return ts, nil
}

// StartJob starts the dataflow of relation id from plan, whose root is a
// Materialize node. With backfill, each Subscribe first emits its
// relation's committed contents (a new view); without, state is restored
// from the last checkpoint (recovery). The graph must be paused or not yet
// running.
func (r *Runtime) StartJob(id uint64, name string, plan *spec.Plan, backfill bool) (*Job, error) {
	return r.startJob(id, name, plan, backfill, nil)
}

func (r *Runtime) startJob(id uint64, name string, plan *spec.Plan, backfill bool, rp *replace) (*Job, error) {
	ctx, cancel := context.WithCancel(r.ctx)
	j := r.newJob(id, name)
	j.cancel = cancel
	resumed := false // started from a committed epoch recorded by this build
	if !backfill && rp == nil {
		v, err := r.db.Get(epochKey(id))
		if err != nil {
			cancel()
			return nil, err
		}
		if v != nil {
			e, err := decodeU64(v)
			if err != nil {
				cancel()
				return nil, err
			}
			// 0: created but never completed an epoch: build it again.
			if e == 0 {
				backfill, j.rebuild = true, true
			} else {
				resumed, j.absorbed = true, e
			}
		}
	}
	if backfill {
		r.coord.OnNextEpoch(func(w *storage.EpochWriter) { w.Set(epochKey(id), encodeU64(0)) })
		if rp == nil {
			j.bf.creating = true
			j.bf.ctx, j.bf.cancel = context.WithCancel(ctx)
		}
	}
	j.done = ctx.Done()
	r.mu.Lock()
	if j.bf.creating && r.mu.started && !j.rebuild && detachable(plan) {
		j.detach() // detached.go: created while the graph runs
	}
	j.then = r.mu.catchup[id]
	delete(r.mu.catchup, id)
	r.mu.Unlock()
	ectx := &eval.Context{}
	if plan.TimeZone != "" {
		// The zone the view was created in: its results never depend on
		// the session reading them.
		loc, _, ok := types.ParseZone(plan.TimeZone)
		if !ok {
			cancel()
			return nil, pgerror.Newf(pgcode.InvalidParameterValue, "job %q: time zone %q of its plan is not known to this build", name, plan.TimeZone)
		}
		ectx.Loc = loc
	}
	outs := make([]*flow.Output, len(plan.Nodes))
	var actors []*flow.Actor
	var readers []*flow.ReaderSource
	var snap *storage.Snapshot
	if backfill || rp.backfills(plan) {
		snap = r.db.Snapshot()
	}
	fail := func(err error) (*Job, error) {
		cancel()
		if snap != nil {
			snap.Release()
		}
		if j.then != nil {
			j.then.Release()
		}
		for _, s := range j.subs {
			s.out.Detach(s.ch)
		}
		for _, s := range j.edges {
			s.out.Detach(s.ch)
		}
		for _, rd := range readers {
			rd.Close()
		}
		r.mu.Lock()
		for _, ts := range j.tableSubs {
			delete(r.mu.holds, [2]uint64{id, ts.rel})
		}
		r.mu.Unlock()
		return nil, err
	}
	var stream *flow.Output
	fused := fusedWindows(plan)
	owned := ownedRows(plan)
	from := func(in int) int { // the node whose actor feeds input in
		for fused[in] {
			in = plan.Nodes[in].Inputs[0]
		}
		return in
	}
	for idx, n := range plan.Nodes {
		if fused[idx] {
			outs[idx] = outs[n.Inputs[0]] // its Agg reads that itself
			continue
		}
		opID := nodeOpID(id, idx, n)
		backfill := backfill
		if rp != nil {
			backfill = !rp.match.Kept[idx] || rp.match.Replay[idx]
		}
		inputs := make([]chan flow.Msg, len(n.Inputs))
		for i, in := range n.Inputs {
			c := flow.NewChan()
			outs[in].Attach(c)
			j.edges = append(j.edges, sub{out: outs[in], ch: c})
			inputs[i] = c
			j.Edges = append(j.Edges, [2]string{fmt.Sprintf("%d-%s", from(in), plan.Nodes[from(in)].Kind), fmt.Sprintf("%d-%s", idx, n.Kind)})
		}
		var op flow.Operator
		var err error
		switch n.Kind {
		case spec.SourceRead:
			var src connector.Source
			if n.Source.Connector == spec.ClockSeriesConnector {
				if src, err = newClockSeries(n.Source, nil /* wall clock */); err != nil {
					return fail(err)
				}
			} else {
				f, err := connector.LookupSource(n.Source.Connector)
				if err != nil {
					return fail(err)
				}
				opts, err := r.Policy.ResolveOptions(n.Source.Options)
				if err != nil {
					return fail(err)
				}
				if src, err = f.Open(ctx, connector.SourceConfig{Name: n.Source.Name, Columns: n.Source.Columns, Key: n.Source.Key,
					Options: opts, Policy: r.Policy}); err != nil {
					return fail(err)
				}
			}
			rs, err := flow.NewReaderSource(r.db, r.coord, name+"/"+n.Source.Name, opID, src)
			if err != nil {
				src.Close()
				return fail(err)
			}
			rs.OnError = j.fail
			rs.Share = j.shares.share
			rs.Failpoint = theFailpoint.hook("source", name)
			if r.NoStats {
				rs.Stats = nil
			}
			rs.SourceID, rs.SourceName = n.Source.SourceID, n.Source.Name
			rs.KeepDeadLetters = strings.EqualFold(n.Source.Options["on_error"], "dead_letter")
			readers = append(readers, rs)
			if wm := n.Source.Watermark; wm != nil {
				if err := rs.SetWatermark(r.db, wm.Col, wm.Delay); err != nil {
					return fail(err)
				}
			}
			outs[idx] = rs.Out
			continue
		case spec.Subscribe:
			r.mu.Lock()
			up := r.mu.streams[n.Rel]
			r.mu.Unlock()
			if up == nil {
				return fail(pgerror.New(pgcode.UndefinedTable, "relation %s is not running", n.RelName))
			}
			c := flow.NewChan()
			up.Attach(c)
			j.subs = append(j.subs, sub{out: up, ch: c})
			inputs = []chan flow.Msg{c}
			if j.det != nil && backfill {
				inputs = []chan flow.Msg{j.relayFor(c)}
			}
			op = &ops.Subscribe{Width: len(n.Cols)}
		case spec.Materialize:
			m, err2 := ops.NewMaterialize(id, n.Key, r.db)
			if m != nil {
				m.Done, m.View = ctx.Done(), true
			}
			op, err = m, err2
			j.Mat = m
			stream = outs[n.Inputs[0]]
			if rp != nil && m != nil {
				// The view's dependents stay attached to its stream, which
				// is from now on the Materialize's output.
				if rp.swap {
					m.Replace()
				}
				m.Forward = true
			}
		case spec.Sink:
			var d *sink.Deliverer
			if d, err = r.deliverer(n); err == nil {
				j.Sink = sink.NewWriter(id, n.Key, n.Sink.Discard)
				if !n.Sink.Discard {
					d.Mem = &sink.MemLog{}
					j.Sink.Mem = d.Mem
					if we, ok := d.Factory.(connector.WireEncoder); ok {
						j.Sink.Wire = we.WireEncoder(d.Config) // nil unless the format allows
					}
				}
				j.Deliverer = d
				op = j.Sink
			}
		case spec.UpsertKey:
			op, err = ops.NewUpsertKey(n.Key, opID, r.db)
		default:
			if rp != nil && rp.match.Kept[idx] && rp.ops[n.StateID] != nil {
				op = rp.ops[n.StateID]
				break
			}
			var ok bool
			if op, ok, err = newOp(plan, n, opID, r.db, ectx, &j.Errors); !ok && err == nil {
				err = pgerror.Unsupported("%s in a streaming job", n.Kind)
			}
			if p, ok := op.(*ops.Project); ok && owned[n.Inputs[0]] {
				p.Owned = true
			}
			if w, ok := op.(*ops.Window); ok && slabRows(plan, n.Inputs[0]) {
				w.CopyRows = true
			}
		}
		if err != nil {
			return fail(err)
		}
		if ag, ok := op.(*ops.Agg); ok && n.Kind == spec.Agg {
			var tw *ops.TimeWindow
			if in := n.Inputs[0]; fused[in] {
				w := plan.Nodes[in]
				tw = ops.NewTimeWindow(w, len(plan.Nodes[w.Inputs[0]].Cols))
			}
			ag.FuseWindow(tw)
		}
		a := &flow.Actor{Name: fmt.Sprintf("%s/%d-%s", name, idx, n.Kind), Op: op, Inputs: inputs, Out: &flow.Output{}, OnError: j.fail,
			Share: j.shares.share, Failpoint: theFailpoint.hook(n.Kind.String(), name), Kind: n.Kind.String(), Stats: r.newStats()}
		if rp != nil && n.Kind == spec.Materialize {
			a.Out, stream = rp.stream, rp.stream
		}
		if _, ok := op.(*ops.Subscribe); !ok && n.Kind != spec.Materialize && n.Kind != spec.Sink && n.Kind != spec.UpsertKey {
			if j.stateful == nil {
				j.stateful = map[uint64]*flow.Actor{}
			}
			j.stateful[n.StateID] = a
		}
		if ag, ok := op.(*ops.Agg); ok && rp != nil && rp.match.Replay[idx] {
			ag.Replay = true
		}
		if s, ok := op.(*ops.Subscribe); ok {
			if err := r.subscribe(j, a, s, opID, n.Rel, n.RelName, backfill, snap); err != nil {
				return fail(err)
			}
			if f := s.Backfill; j.det != nil && backfill && f != nil {
				s.Backfill = func(emit func(types.Row, int64) error) error {
					defer r.backfillRead(ctx, j)
					return f(emit)
				}
			}
		}
		if n.Kind == spec.Materialize || n.Kind == spec.Sink {
			a.OnCollect = r.coord.Collect
		}
		outs[idx] = a.Out
		actors = append(actors, a)
	}
	if j.Mat == nil && j.Sink == nil {
		return fail(fmt.Errorf("plan of %s has no Materialize or Sink root", name))
	}
	j.Readers = readers
	j.Actors = actors
	if resumed {
		if err := r.catchUp(j); err != nil {
			r.logf("%s: %v", name, err)
			j.fail(err)
		}
	}
	for _, rs := range readers {
		j.sources = append(j.sources, rs)
		r.coord.AddSource(rs)
	}
	if j.det == nil {
		r.coord.AddCollectors(1)
	}
	r.mu.Lock()
	if stream != nil {
		r.mu.streams[id] = stream
	}
	r.mu.jobs[id] = j
	r.mu.Unlock()
	injected := r.coord.Injected()
	for _, rs := range readers {
		rs.SetPassed(injected)
	}
	for _, a := range actors {
		a.SetPassed(injected)
		r.spawn(j, ctx, a.Name, a.Run)
	}
	if j.Deliverer != nil && !plan.Nodes[plan.Root()].Sink.Discard {
		run := j.Deliverer.Run
		if j.bf.creating {
			// A sink being created connects to its destination once its
			// creation ends (bf.ctx ends then): a cancelled one never
			// touches it (a file sink's directory is not even made).
			created := j.bf.ctx
			run = func(ctx context.Context) error {
				select {
				case <-ctx.Done():
					return nil
				case <-created.Done():
				}
				if r.Cancelled(j) || ctx.Err() != nil {
					return nil
				}
				return j.Deliverer.Run(ctx)
			}
		}
		r.spawn(j, ctx, name+"/deliver", run)
	}
	for _, rs := range readers {
		r.spawn(j, ctx, rs.Name, rs.Run)
	}
	if j.det != nil {
		for _, rl := range j.det.relays {
			r.spawn(j, ctx, name+"/relay", func(ctx context.Context) error { return rl.run(ctx, &j.det.at) })
		}
	}
	if then := j.then; then != nil {
		// The Subscribe ops' catch-ups (changesSince) read it in Start;
		// like snap below, it is held until the job ends.
		j.then = nil
		r.spawn(j, ctx, name+"/catch-up", func(ctx context.Context) error {
			<-ctx.Done()
			then.Release()
			return nil
		})
	}
	if snap != nil {
		// Backfills read the snapshot from their actors; release it once
		// every Subscribe has started. Holding it until the job ends is
		// simpler and cheap: release when the job stops (an owned
		// goroutine, so Wait and StopJob return only after the release).
		r.spawn(j, ctx, name+"/snapshot", func(ctx context.Context) error {
			<-ctx.Done()
			snap.Release()
			return nil
		})
	}
	return j, nil
}

// consumerCounts returns how many nodes read each node of plan.
func consumerCounts(plan *spec.Plan) []int {
	consumers := make([]int, len(plan.Nodes))
	for _, n := range plan.Nodes {
		for _, in := range n.Inputs {
			consumers[in]++
		}
	}
	return consumers
}

// ownedRows reports the nodes whose output rows only their one consumer
// holds: a source read (a connector builds new rows for every read and
// keeps none) with one consumer, and a filter with one consumer over
// such a node (it passes the same rows on). The consumer may write over
// them (ops.Project.Owned).
func ownedRows(plan *spec.Plan) []bool {
	consumers := consumerCounts(plan)
	owned := make([]bool, len(plan.Nodes))
	for i, n := range plan.Nodes {
		if consumers[i] != 1 || i == plan.Root() {
			continue
		}
		switch n.Kind {
		case spec.SourceRead:
			owned[i] = true
		case spec.Filter:
			owned[i] = owned[n.Inputs[0]]
		}
	}
	return owned
}

// slabRows reports whether node in's output rows are cut from slabs
// shared by many rows (types.RowAlloc): a source read's, or a
// projection's or filter's over one. An operator that keeps a few of them
// for long copies those, or it would keep their slabs.
func slabRows(plan *spec.Plan, in int) bool {
	for {
		n := plan.Nodes[in]
		switch n.Kind {
		case spec.SourceRead:
			return true
		case spec.Project, spec.Filter:
			in = n.Inputs[0]
		default:
			return false
		}
	}
}

// fusedWindows reports the TimeWindow nodes of plan whose only consumer is
// an Agg of one input: the Agg expands the windows itself (Agg.FuseWindow),
// and the node gets no actor of its own.
func fusedWindows(plan *spec.Plan) []bool {
	consumers := consumerCounts(plan)
	fused := make([]bool, len(plan.Nodes))
	for _, n := range plan.Nodes {
		if n.Kind != spec.Agg || len(n.Inputs) != 1 {
			continue
		}
		if in := n.Inputs[0]; plan.Nodes[in].Kind == spec.TimeWindow && consumers[in] == 1 && in != plan.Root() {
			fused[in] = true
		}
	}
	return fused
}

func backfillFrom(snap *storage.Snapshot, rel uint64) func(func(types.Row, int64) error) error {
	return func(emit func(types.Row, int64) error) error {
		return snap.Scan(storage.Key(storage.SpaceRelation, rel), func(_, v []byte) error {
			n, row, err := ops.DecodeRelValue(v)
			if err != nil {
				return err
			}
			return emit(row, n)
		})
	}
}

// StopJob stops relation id's job and schedules the deletion of its state
// with the next epoch, and the return of its disk space after it. The
// graph must be paused.
func (r *Runtime) StopJob(id uint64, nodes int) {
	r.mu.Lock()
	j := r.mu.jobs[id]
	delete(r.mu.jobs, id)
	delete(r.mu.streams, id)
	delete(r.mu.tables, id)
	delete(r.mu.tableDone, id)
	if j != nil && j.haltSnap != nil {
		j.haltSnap.Release()
		j.haltSnap = nil
	}
	for k := range r.mu.holds {
		if k[0] == id || k[1] == id {
			delete(r.mu.holds, k)
		}
	}
	r.mu.Unlock()
	if j == nil {
		return
	}
	r.stop(j)
	r.DropState(id)
}

// DropState schedules the deletion, with the next epoch, of everything
// relation or job id keeps in the store: its operators' state, source
// positions, rows, logs, sink log, dead letters and change log (SUBSCRIBE's
// history). StopJob calls it; so
// does dropping an object this build refused to start (its state is not
// understood, but it can be deleted).
func (r *Runtime) DropState(id uint64) {
	// Reclaim: the ranges are compacted once the epoch commits, so that
	// the object's space returns to the file system (storage/reclaim.go).
	r.coord.OnNextEpoch(func(w *storage.EpochWriter) {
		w.Reclaim(storage.Key(storage.SpaceState, OpID(id, 0)), storage.Key(storage.SpaceState, OpID(id+1, 0)))
		w.Reclaim(storage.Key(storage.SpacePosition, id), storage.Key(storage.SpacePosition, id+1))
		w.Reclaim(storage.Key(storage.SpacePosition, OpID(id, 0)), storage.Key(storage.SpacePosition, OpID(id+1, 0)))
		w.Reclaim(storage.Key(storage.SpaceRelation, id), storage.Key(storage.SpaceRelation, id+1))
		w.Reclaim(storage.Key(storage.SpaceLog, id), storage.Key(storage.SpaceLog, id+1))
		w.Reclaim(storage.Key(storage.SpaceWrite, id), storage.Key(storage.SpaceWrite, id+1))
		w.Reclaim(storage.Key(storage.SpaceSinkLog, id), storage.Key(storage.SpaceSinkLog, id+1))
		w.Reclaim(storage.Key(storage.SpaceDeadLetter, OpID(id, 0)), storage.Key(storage.SpaceDeadLetter, OpID(id+1, 0)))
		w.Reclaim(storage.Key(storage.SpaceHist, id), storage.Key(storage.SpaceHist, id+1))
	})
	r.db.ForgetHist(id)
}

// stop ends job j's actors (unregistered already; the graph paused) and
// drops the shares it left.
func (r *Runtime) stop(j *Job) {
	for _, s := range j.subs {
		s.out.Detach(s.ch)
	}
	for _, s := range j.edges {
		s.out.Detach(s.ch)
	}
	for _, s := range j.sources {
		r.coord.RemoveSource(s)
	}
	if j.det == nil || j.det.at.Load() != 0 {
		r.coord.AddCollectors(-1) // a job still detached never joined
	}
	j.cancel()
	j.wg.Wait()
	j.shares.discardAll()
}

// SinkConfig returns the connector configuration of a Sink node, its
// secret references resolved.
func (r *Runtime) SinkConfig(n *spec.Node) (connector.SinkConfig, error) {
	opts, err := r.Policy.ResolveOptions(n.Sink.Options)
	if err != nil {
		return connector.SinkConfig{}, err
	}
	return connector.SinkConfig{Name: n.Sink.Name, ID: n.Sink.SinkID, Columns: n.Cols, Key: n.Key, AppendOnly: n.Sink.AppendOnly,
		Options: opts, Format: n.Sink.Format, Encode: n.Sink.Encode, FormatOptions: n.Sink.FormatOpts, WriteMode: n.Sink.WriteMode,
		Policy: r.Policy}, nil
}

// LookupSink returns the factory of the sink connector name: the
// runtime's own (Sinks), else the registered one.
func (r *Runtime) LookupSink(name string) (connector.SinkFactory, error) {
	if f := r.Sinks[name]; f != nil {
		return f, nil
	}
	return connector.LookupSink(name)
}

func (r *Runtime) deliverer(n *spec.Node) (*sink.Deliverer, error) {
	f, err := r.LookupSink(n.Sink.Connector)
	if err != nil {
		return nil, err
	}
	cfg, err := r.SinkConfig(n)
	if err != nil {
		return nil, err
	}
	return &sink.Deliverer{ID: n.Sink.SinkID, Name: n.Sink.Name, Factory: f, Config: cfg, DB: r.db, Logf: r.logf}, nil
}

// EncodeLogBatch encodes a DML chunk for the table log.
func EncodeLogBatch(b *types.Batch) []byte {
	r := make(types.Row, 0, 2*len(b.Rows))
	var buf []byte
	for i, row := range b.Rows {
		r = append(r, types.NewInt(b.Diffs[i]), types.NewBytes(types.EncodeRow(nil, row)))
	}
	buf = types.EncodeRow(buf, r)
	return buf
}

// DecodeLogBatch decodes what EncodeLogBatch wrote.
func DecodeLogBatch(v []byte) (*types.Batch, error) {
	r, err := types.DecodeRow(v)
	if err != nil {
		return nil, err
	}
	if len(r)%2 != 0 {
		return nil, pgerror.New(pgcode.DataCorrupted, "corrupt table log entry")
	}
	b := types.NewBatch(len(r) / 2)
	for i := 0; i < len(r); i += 2 {
		row, err := types.DecodeRow([]byte(r[i+1].S))
		if err != nil {
			return nil, err
		}
		b.Add(row, r[i].I)
	}
	return b, nil
}

// newOp builds the operators that streaming jobs and batch queries share;
// db is nil for a batch query (no saved state). ok is false for kinds it
// does not build.
func newOp(plan *spec.Plan, n *spec.Node, opID uint64, db *storage.DB, ectx *eval.Context, errs *ops.ErrorSink) (op flow.Operator, ok bool, err error) {
	switch n.Kind {
	case spec.Filter:
		op, err = ops.NewFilter(n.Pred, ectx, errs)
	case spec.Project:
		op, err = ops.NewProject(n.Exprs, ectx, errs)
	case spec.Agg:
		if db == nil {
			op, err = newAggOp(n, ectx.Guard)
		} else {
			op, err = ops.NewAgg(n, opID, db)
		}
	case spec.Join:
		if n.AsOf {
			op, err = ops.NewAsOfJoin(n, len(plan.Nodes[n.Inputs[0]].Cols), len(plan.Nodes[n.Inputs[1]].Cols), opID, db)
			break
		}
		op, err = ops.NewJoin(n, len(plan.Nodes[n.Inputs[0]].Cols), len(plan.Nodes[n.Inputs[1]].Cols), opID, db, ectx, errs)
	case spec.WindowTopCount:
		op, err = ops.NewWindowTopCount(n, opID, db)
	case spec.WindowMaxJoin:
		op, err = ops.NewWindowMaxJoin(n, len(plan.Nodes[n.Inputs[0]].Cols), opID, db)
	case spec.Union:
		op = ops.NewUnion(len(n.Inputs))
	case spec.TemporalFilter:
		op, err = ops.NewTemporalFilter(n, opID, db, nil /* wall clock */)
	case spec.TimeWindow:
		op = ops.NewTimeWindow(n, len(plan.Nodes[n.Inputs[0]].Cols))
	case spec.Window:
		op, err = ops.NewWindow(n, len(plan.Nodes[n.Inputs[0]].Cols), n.InputAppendOnly, opID, db)
	case spec.TableFunc:
		if len(n.Inputs) == 0 {
			return nil, false, nil
		}
		op, err = ops.NewProjectSet(n, ectx, errs)
	default:
		return nil, false, nil
	}
	return op, true, err
}
