package job

import (
	"sluice/exec/flow"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/storage"
)

// Changing a view in place (ALTER MATERIALIZED VIEW … AS): the job stops
// and starts again from the new plan without its state being dropped.
// The new plan's nodes that the old one has too (spec.MatchPlans) carry
// the old StateIDs and run from their state; the kept nodes that feed a
// new part replay their contents into it; new nodes start empty and
// their subscriptions backfill; the view's Materialize swaps its rows at
// the first barrier (ops.Materialize.Replace). The old plan's state that
// the new one does not use is deleted with that epoch, which also commits
// the new plan in the catalog: a crash before it leaves the old view, one
// after it the new.

// replace is how a job starts in place of its previous plan.
type replace struct {
	match *spec.Match
	// stream is the view's change stream, which its dependents stay
	// attached to: the new Materialize's output.
	stream *flow.Output
	// swap: the new plan computes other rows (the Materialize replaces
	// them); false when the old plan is started again after a failure.
	swap bool
	// ops are the old job's operators by StateID: a kept node runs on with
	// its operator and the state in its memory, which equals the committed
	// state (the graph is paused at a committed epoch), instead of loading
	// it from the store again.
	ops map[uint64]flow.Operator
}

// backfills reports whether a replace starts a subscription that reads
// its relation's committed rows.
func (rp *replace) backfills(p *spec.Plan) bool {
	if rp == nil {
		return false
	}
	for i, n := range p.Nodes {
		if n.Kind == spec.Subscribe && (!rp.match.Kept[i] || rp.match.Replay[i]) {
			return true
		}
	}
	return false
}

// CanReplay reports whether a kept node of a changed view can emit its
// current contents to a new consumer: a subscription (its relation's
// committed rows) and an aggregation that emits its groups as they change
// (not EMIT ON WINDOW CLOSE).
func CanReplay(n *spec.Node) bool {
	switch n.Kind {
	case spec.Subscribe:
		return true
	case spec.Agg:
		return !n.EOWC
	}
	return false
}

// ReplaceJob runs view id from plan nw instead of old, keeping the state
// of the nodes m marks kept, and schedules the deletion of the state of
// the old nodes nw no longer has with the next epoch. The graph must be
// paused. If nw cannot start, the old plan runs again and nothing
// changes.
func (r *Runtime) ReplaceJob(id uint64, name string, old, nw *spec.Plan, m *spec.Match) error {
	r.mu.Lock()
	j := r.mu.jobs[id]
	stream := r.mu.streams[id]
	if j == nil || stream == nil || j.Mat == nil {
		r.mu.Unlock()
		return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "materialized view %q is not running", name)
	}
	if err := j.Failure(); err != nil {
		r.mu.Unlock()
		return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "materialized view %q failed: %v", name, err).
			WithHint("Resume it first: ALTER MATERIALIZED VIEW %s RESUME.", name)
	}
	delete(r.mu.jobs, id)
	delete(r.mu.streams, id)
	for k := range r.mu.holds {
		if k[0] == id {
			delete(r.mu.holds, k)
		}
	}
	absorbed := j.absorbed
	r.mu.Unlock()
	kept := map[uint64]flow.Operator{}
	for i, n := range nw.Nodes {
		if a := j.stateful[n.StateID]; a != nil && m.Kept[i] && n.StateID != 0 {
			a.Keep.Store(true)
			kept[n.StateID] = a.Op
		}
	}
	r.stop(j)
	nj, err := r.startJob(id, name, nw, false, &replace{match: m, stream: stream, swap: true, ops: kept})
	if err != nil {
		all := &spec.Match{Kept: make([]bool, len(old.Nodes)), Replay: make([]bool, len(old.Nodes))}
		for i := range all.Kept {
			all.Kept[i] = true
		}
		// The kept operators may have been handed to the failed start, and
		// replayed; the old plan loads its state from the store again.
		for _, op := range kept {
			if rl, ok := op.(flow.Releaser); ok {
				rl.Release()
			}
		}
		if oj, err2 := r.startJob(id, name, old, false, &replace{match: all, stream: stream}); err2 != nil {
			r.logf("%s: the old plan did not start again after a failed change: %v", name, err2)
		} else {
			r.mu.Lock()
			oj.absorbed = absorbed
			r.mu.Unlock()
		}
		return err
	}
	r.mu.Lock()
	nj.absorbed = absorbed
	r.mu.Unlock()
	unused := m.Unused
	r.coord.OnNextEpoch(func(w *storage.EpochWriter) {
		for _, sid := range unused {
			lo, hi := OpID(id, sid), OpID(id, sid+1)
			w.Reclaim(storage.Key(storage.SpaceState, lo), storage.Key(storage.SpaceState, hi))
			w.Reclaim(storage.Key(storage.SpacePosition, lo), storage.Key(storage.SpacePosition, hi))
			w.Reclaim(storage.Key(storage.SpaceDeadLetter, lo), storage.Key(storage.SpaceDeadLetter, hi))
		}
	})
	return nil
}
