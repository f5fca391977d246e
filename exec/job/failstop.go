package job

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sluice/exec/flow"
	"sluice/exec/ops"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// A failed job never skips data. Each job writes its part of every epoch
// (operator state, source positions, its view's rows, its sink log) into
// its own share (storage.DB.NewShareWriter). Just before epoch e commits
// (Coordinator.BeforeCommit) the runtime absorbs the share of every
// healthy job into the epoch and discards the share of every failed one,
// so that a failed job stays, in storage, at the last epoch it completed:
// its readers' positions, its subscriptions' table log positions and its
// state. A job that reads a failed view fails with it (the failed view's
// stream may carry rows of epochs that will never commit), and a table's
// log is kept from the oldest position a failed subscriber has not
// committed past. A failed job is started again (ALTER … RESUME, or a
// restart of the server) from its committed state and reads again from
// its own positions, so nothing is lost or counted twice.
//
// Persisted per job (in the position space, deleted with the job):
//   - p/<job>e: the last epoch the job completed (0: created, not yet
//     completed its first epoch: it is built again from scratch);
//   - p/<op>, for each Subscribe op on a table: the last table log
//     sequence the job committed.

// epochKey is where job id's last completed epoch is kept.
func epochKey(id uint64) []byte { return storage.Key(storage.SpacePosition, id, []byte("e")) }

func encodeU64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func decodeU64(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, pgerror.New(pgcode.DataCorrupted, "corrupt job position record")
	}
	return binary.BigEndian.Uint64(b), nil
}

// tableSub is a job's subscription to a table's change stream.
type tableSub struct {
	rel uint64
	key []byte // p/<Subscribe op id>
}

// shares is a job's per-epoch barriers, each with its own share.
type shares struct {
	db *storage.DB
	mu sync.Mutex
	m  map[uint64]*flow.Barrier
}

// share implements flow.ShareFunc.
func (s *shares) share(b *flow.Barrier) *flow.Barrier {
	s.mu.Lock()
	defer s.mu.Unlock()
	if x := s.m[b.Epoch]; x != nil {
		return x
	}
	if s.m == nil {
		s.m = map[uint64]*flow.Barrier{}
	}
	x := &flow.Barrier{Epoch: b.Epoch, W: s.db.NewShareWriter(), Pause: b.Pause}
	s.m[b.Epoch] = x
	return x
}

// take removes epoch e's share (nil if the job had none).
func (s *shares) take(e uint64) *storage.EpochWriter {
	s.mu.Lock()
	defer s.mu.Unlock()
	x := s.m[e]
	delete(s.m, e)
	if x == nil {
		return nil
	}
	return x.W
}

// discardAll drops every share left (a stopped job).
func (s *shares) discardAll() {
	s.mu.Lock()
	m := s.m
	s.m = nil
	s.mu.Unlock()
	for _, b := range m {
		b.W.Discard()
	}
}

// Status returns "failed" or "running".
func (j *Job) Status() string {
	if j.Failure() != nil {
		return "failed"
	}
	return "running"
}

// HaltedAt returns the last epoch a failed job completed (its committed
// contents are of that epoch); 0 while it has not been halted yet.
func (j *Job) HaltedAt() uint64 {
	j.failure.Lock()
	defer j.failure.Unlock()
	return j.failure.haltedAt
}

// beforeCommit absorbs the share of epoch e of every healthy job into w
// and discards the share of every failed one (Coordinator.BeforeCommit).
func (r *Runtime) beforeCommit(e uint64, w *storage.EpochWriter) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Which jobs failed is decided once: a failure noticed later concerns
	// rows after epoch e (every job has passed barrier e).
	failed := map[uint64]bool{}
	for id, j := range r.mu.jobs {
		failed[id] = j.Failure() != nil
	}
	// A job reading a failed view fails with it: the view's stream may
	// carry rows of epochs it will emit again when resumed.
	for changed := true; changed; {
		changed = false
		for id, j := range r.mu.jobs {
			if failed[id] {
				continue
			}
			for _, u := range j.viewSubs {
				if failed[u] {
					j.fail(pgerror.New(pgcode.ObjectNotInPrerequisiteState, "%s reads %s, which failed", j.Name, r.mu.jobs[u].Name))
					failed[id], changed = true, true
					break
				}
			}
		}
	}
	cuts := map[uint64]uint64{}
	for id, ts := range r.mu.tables {
		if p, ok := ts.CutOf(e); ok {
			cuts[id] = p
		}
	}
	for id, j := range r.mu.jobs {
		r.coord.SetCommitStage(e, "absorbing the state of job "+j.Name)
		s := j.shares.take(e)
		if failed[id] {
			if s != nil {
				s.Discard()
				r.endCreation(j, e, w)
			}
			j.failure.Lock()
			first := !j.failure.halted
			j.failure.halted = true
			if first {
				j.failure.haltedAt = j.absorbed
			}
			j.failure.Unlock()
			if first && !j.bf.cancelled {
				r.logf("%s: failed; its state and source positions stay at epoch %d until it is resumed: %v", j.Name, j.absorbed, j.Failure())
				if len(j.viewSubs) > 0 {
					// The committed epoch is the last one the job completed
					// (this one is not committed yet): keep it, so that a
					// resume reads what the views changed since.
					if snap := r.db.Snapshot(); snap.Epoch == j.absorbed {
						j.haltSnap = snap
					} else {
						snap.Release()
					}
				}
				for _, ts := range j.tableSubs {
					r.mu.holds[[2]uint64{j.ID, ts.rel}] = j.subPos[ts.rel]
				}
			}
			continue
		}
		if s == nil {
			continue
		}
		if err := w.Absorb(s); err != nil {
			return err
		}
		r.endCreation(j, e, w)
		j.absorbed = e
		w.Set(epochKey(j.ID), encodeU64(e))
		for _, ts := range j.tableSubs {
			if p, ok := cuts[ts.rel]; ok {
				j.subPos[ts.rel] = p
				w.Set(ts.key, encodeU64(p))
			}
			delete(r.mu.holds, [2]uint64{j.ID, ts.rel})
		}
	}
	// Trim each table's log up to what its own job and every subscriber
	// have committed.
	for id, p := range cuts {
		if !failed[id] {
			r.mu.tableDone[id] = p
		}
		upto := r.mu.tableDone[id]
		for k, h := range r.mu.holds {
			if k[1] == id {
				upto = min(upto, h)
			}
		}
		w.DeleteRange(flow.LogRange(id, upto))
	}
	return nil
}

// subscribe prepares Subscribe op s of job j (operator id opID) reading relation
// rel: a new job (backfill) reads the relation's committed contents; a
// restarted one catches up from its own committed position.
func (r *Runtime) subscribe(j *Job, a *flow.Actor, s *ops.Subscribe, opID uint64, rel uint64, relName string, backfill bool, snap *storage.Snapshot) error {
	r.mu.Lock()
	ts := r.mu.tables[rel]
	up := r.mu.jobs[rel]
	r.mu.Unlock()
	if up != nil && up.Detached() && backfill {
		// Its contents are not committed yet (detached.go).
		return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "%s is still being created", relName).
			WithHint("SHOW JOBS shows its progress.")
	}
	if up != nil && up.Failure() != nil && backfill {
		err := pgerror.New(pgcode.ObjectNotInPrerequisiteState, "%s failed: its contents are not current", relName).
			WithHint("Resume it first: ALTER MATERIALIZED VIEW %s RESUME.", relName)
		if !j.rebuild {
			return err
		}
		// Built again at a start: it fails with what it reads, and is
		// built again when that resumes.
		j.fail(err)
	}
	if ts == nil {
		j.viewSubs = append(j.viewSubs, rel)
		if backfill {
			s.Backfill = j.trackBackfill(snap, rel, backfillFrom(snap, rel))
			return nil
		}
		r.mu.Lock()
		moved := up != nil && up.Failure() == nil && up.absorbed != j.absorbed
		r.mu.Unlock()
		if then := j.then; then != nil && moved && then.Epoch == j.absorbed {
			s.Backfill = changesSince(r.db, then, rel)
		}
		return nil
	}
	key := storage.Key(storage.SpacePosition, opID)
	j.tableSubs = append(j.tableSubs, tableSub{rel: rel, key: key})
	now := ts.Sent()
	if backfill {
		s.Backfill = j.trackBackfill(snap, rel, backfillFrom(snap, rel))
		j.subPos[rel] = now
		r.coord.OnNextEpoch(func(w *storage.EpochWriter) { w.Set(key, encodeU64(now)) })
		return nil
	}
	v, err := r.db.Get(key)
	if err != nil {
		return err
	}
	if v == nil { // written by a build without per-job positions
		j.subPos[rel] = now
		return nil
	}
	pos, err := decodeU64(v)
	if err != nil {
		return err
	}
	j.subPos[rel] = pos
	switch {
	case pos > now:
		// The table's own job committed less than this one: the table
		// replays chunks this job has already counted.
		a.SkipPos = pos
	case pos < now:
		// This job stopped behind its table: replay the table's log from
		// its position, and keep the log until it has committed again.
		r.mu.Lock()
		r.mu.holds[[2]uint64{j.ID, rel}] = pos
		r.mu.Unlock()
		s.Backfill = func(emit func(types.Row, int64) error) error {
			lo := storage.Key(storage.SpaceLog, rel, flow.EncodeSeq(pos+1))
			_, hi := flow.LogRange(rel, now)
			return r.db.ScanRange(lo, hi, func(_, v []byte) error {
				b, err := DecodeLogBatch(v)
				if err != nil {
					return err
				}
				for i, row := range b.Rows {
					if err := emit(row, b.Diffs[i]); err != nil {
						return err
					}
				}
				return nil
			})
		}
	}
	return nil
}

// catchUp checks, for a job started from its committed state, that every
// view it reads is at the same epoch (a view that resumes with it replays
// what came after), and fails the job otherwise: rows it missed cannot be
// read again.
func (r *Runtime) catchUp(j *Job) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	then := j.then
	for _, u := range j.viewSubs {
		uj := r.mu.jobs[u]
		if uj == nil || uj.absorbed == j.absorbed || (then != nil && then.Epoch == j.absorbed && uj.Failure() == nil) {
			continue
		}
		return pgerror.New(pgcode.ObjectNotInPrerequisiteState,
			"%s stopped at epoch %d and %s has committed epoch %d since: the changes in between cannot be read again", j.Name, j.absorbed, uj.Name, uj.absorbed).
			WithHint("Drop and create %s again to rebuild it.", j.Name)
	}
	return nil
}

// ResumeSet returns the jobs ALTER … RESUME of id starts again, id first,
// then every failed job that reads it (directly or not), each after what
// it reads. It refuses (55000) when id has not failed, or when a job of
// the set cannot catch up.
func (r *Runtime) ResumeSet(id uint64, name string) ([]uint64, error) {
	r.mu.Lock()
	j := r.mu.jobs[id]
	r.mu.Unlock()
	if j == nil || j.Failure() == nil {
		return nil, pgerror.New(pgcode.ObjectNotInPrerequisiteState, "%s has not failed", name).
			WithHint("RESUME starts a failed materialized view or sink again; SHOW MATERIALIZED VIEWS and SHOW SINKS give the Status of each.")
	}
	in := map[uint64]bool{id: true}
	set := []uint64{id}
	r.mu.Lock()
	for changed := true; changed; {
		changed = false
		for _, d := range r.mu.jobs {
			if in[d.ID] || d.Failure() == nil {
				continue
			}
			for _, u := range d.viewSubs {
				if in[u] {
					in[d.ID] = true
					set = append(set, d.ID)
					changed = true
					break
				}
			}
		}
	}
	// A job reading a view outside the set that committed since cannot
	// catch up.
	for _, x := range set {
		d := r.mu.jobs[x]
		for _, u := range d.viewSubs {
			if uj := r.mu.jobs[u]; uj != nil && !in[u] && uj.Failure() != nil {
				r.mu.Unlock()
				return nil, pgerror.New(pgcode.ObjectNotInPrerequisiteState, "%s reads %s, which has failed", d.Name, uj.Name).
					WithHint("ALTER MATERIALIZED VIEW %s RESUME resumes both.", uj.Name)
			}
			if d.haltSnap != nil && d.haltSnap.Epoch == d.absorbed {
				continue // reads what u changed since (changesSince)
			}
			if uj := r.mu.jobs[u]; uj != nil && !in[u] && uj.absorbed != d.absorbed {
				r.mu.Unlock()
				return nil, pgerror.New(pgcode.ObjectNotInPrerequisiteState,
					"%s stopped at epoch %d and %s, which it reads, has committed epoch %d since: the changes in between cannot be read again", d.Name, d.absorbed, uj.Name, uj.absorbed).
					WithHint("Drop and create %s again to rebuild it.", d.Name)
			}
		}
	}
	r.mu.Unlock()
	return set, nil
}

// Halt stops job id without deleting anything, so that it can be started
// again from its committed state (the graph must be paused).
func (r *Runtime) Halt(id uint64) {
	r.mu.Lock()
	j := r.mu.jobs[id]
	delete(r.mu.jobs, id)
	delete(r.mu.streams, id)
	if j != nil && j.haltSnap != nil {
		if old := r.mu.catchup[id]; old != nil {
			old.Release()
		}
		r.mu.catchup[id], j.haltSnap = j.haltSnap, nil
	}
	r.mu.Unlock()
	if j != nil {
		r.stop(j)
	}
}

// changesSince returns a Subscribe backfill that emits what relation rel
// changed between snapshot then and the latest committed state: the rows
// of then retracted, the current ones inserted, those equal in both left
// out. It holds then's rows of rel in memory while it runs.
func changesSince(db *storage.DB, then *storage.Snapshot, rel uint64) func(func(types.Row, int64) error) error {
	return func(emit func(types.Row, int64) error) error {
		now := db.Snapshot()
		defer now.Release()
		prefix := storage.Key(storage.SpaceRelation, rel)
		old := map[string][]byte{}
		if err := then.Scan(prefix, func(k, v []byte) error {
			old[string(k)] = bytes.Clone(v)
			return nil
		}); err != nil {
			return err
		}
		emitRel := func(v []byte, sign int64) error {
			n, row, err := ops.DecodeRelValue(v)
			if err != nil {
				return err
			}
			return emit(row, sign*n)
		}
		if err := now.Scan(prefix, func(k, v []byte) error {
			ov, ok := old[string(k)]
			delete(old, string(k))
			if ok && bytes.Equal(ov, v) {
				return nil
			}
			if ok {
				if err := emitRel(ov, -1); err != nil {
					return err
				}
			}
			return emitRel(v, 1)
		}); err != nil {
			return err
		}
		for _, v := range old {
			if err := emitRel(v, -1); err != nil {
				return err
			}
		}
		return nil
	}
}

// failpoint is one entry of SLUICE_FAILPOINT=op:<kind>:<rows>[:<job>][,…]:
// the first operator of that kind (of that job, if named) fails with a
// panic after it has seen that many rows. Each fires once per process, so
// that a resumed job runs. An entry block:<kind>:<rows>[:<job>] instead
// blocks that operator for good (until its job stops) once it has seen
// that many rows, holding every later barrier: the stuck-barrier report's
// test. An entry pause:<kind>:<rows>[:<job>] blocks the same way until
// the file named by SLUICE_FAILPOINT_RELEASE exists (or its job stops).
// Kinds beyond the plan's operators: source (a job's source
// reader, after a read), backfill (a job's backfill, per row: progress.go)
// and commit (the store write of the epochs, one per epoch; no job). For
// tests.
type failpoint struct {
	block     bool
	release   string // pause: the file whose creation ends the block
	kind, job string
	rows      int64
	fired     atomic.Bool
	seen      atomic.Int64
}

type failpoints []*failpoint

var theFailpoint = parseFailpoint(os.Getenv("SLUICE_FAILPOINT"))

func parseFailpoint(s string) failpoints {
	var fps failpoints
	for _, e := range strings.Split(s, ",") {
		f := strings.Split(strings.TrimSpace(e), ":")
		if len(f) < 3 || (f[0] != "op" && f[0] != "block" && f[0] != "pause") {
			continue
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			continue
		}
		fp := &failpoint{block: f[0] != "op", kind: strings.ToLower(f[1]), rows: n}
		if f[0] == "pause" {
			fp.release = os.Getenv("SLUICE_FAILPOINT_RELEASE")
		}
		if len(f) > 3 {
			fp.job = strings.ToLower(f[3])
		}
		fps = append(fps, fp)
	}
	return fps
}

// pause blocks until ctx ends or the release file exists.
func (fp *failpoint) pause(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if _, err := os.Stat(fp.release); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// hook returns the Actor.Failpoint of an operator of kind in job, or nil.
func (fps failpoints) hook(kind, job string) func(context.Context, int) error {
	for _, fp := range fps {
		if fp.kind != strings.ToLower(kind) || (fp.job != "" && fp.job != strings.ToLower(job)) {
			continue
		}
		return func(ctx context.Context, rows int) error {
			if fp.fired.Load() {
				return nil
			}
			if fp.seen.Add(int64(rows)) > fp.rows && fp.fired.CompareAndSwap(false, true) {
				if fp.block && fp.release == "" {
					<-ctx.Done()
					return ctx.Err()
				}
				if fp.block {
					return fp.pause(ctx)
				}
				panic(fmt.Sprintf("failpoint: %s of %s after %d rows", kind, job, fp.rows))
			}
			return nil
		}
	}
	return nil
}
