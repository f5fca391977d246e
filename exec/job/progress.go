package job

import (
	"context"
	"fmt"
	"sync/atomic"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// A job being created (a new view or sink over existing data) reads the
// committed contents of what it subscribes to (its backfill) before the
// first barrier passes it, so the epoch that creates it commits only once
// the backfill is done. Until then the job is "creating": Progress counts
// the rows read, and CancelCreate may still cancel it. The decision is
// taken under Runtime.mu against beforeCommit, which ends the creation
// when it absorbs the job's first epoch: a job is either cancelled, and
// its first epoch commits without its state and with its catalog entry
// removed (OnCancelled), or created, never half of each.

// Progress is a job's backfill progress.
type Progress struct {
	// Read is the rows of the snapshot emitted so far; Total the rows of
	// the snapshot (counted before each subscription emits its rows).
	Read, Total atomic.Int64
}

// backfillState is a job's creation: guarded by Runtime.mu but for the
// atomics.
type backfillState struct {
	creating  bool   // the first epoch has not committed yet
	cancelled bool   // CancelCreate was called while creating
	epoch     uint64 // the epoch that creates the job (0: unknown yet)
	progress  Progress
	// stop is set once the creation is cancelled: a backfill in progress
	// stops at its next row.
	stop atomic.Bool
	// ctx ends when the creation is cancelled (or the job stops): a
	// backfill blocked by a failpoint waits on it.
	ctx    context.Context
	cancel context.CancelFunc
}

// errCancelled is the failure of a job whose creation was cancelled.
func errCancelled(name string) error {
	return pgerror.New(pgcode.QueryCanceled, "canceling statement due to user request").
		WithDetail("the creation of %s was cancelled", name)
}

// Creating reports whether job j is still being created (its first
// epoch has not committed: it may be decided but still being written),
// its backfill progress and, once known, the epoch that creates it.
func (r *Runtime) Creating(j *Job) (creating bool, p *Progress, epoch uint64) {
	r.mu.Lock()
	creating, epoch = j.bf.creating, j.bf.epoch
	r.mu.Unlock()
	return creating || epoch > r.coord.Committed(), &j.bf.progress, epoch
}

// CommittedEpoch is the last epoch committed with job j's state (for a
// failed job, the last one it completed).
func (j *Job) CommittedEpoch() uint64 { return j.committed.Load() }

// CancelCreate cancels the creation of job id: its backfill stops, the
// job fails, and the epoch that was to create it commits without its
// state and without its catalog entry. It returns the epoch to wait for
// before the job is stopped and its catalog entry dropped in memory. A job
// that is not being created is refused (55000).
func (r *Runtime) CancelCreate(id uint64) (uint64, error) {
	r.mu.Lock()
	j := r.mu.jobs[id]
	if j == nil {
		r.mu.Unlock()
		return 0, pgerror.New(pgcode.UndefinedObject, "job %d does not exist", id).WithHint("SHOW JOBS lists the jobs.")
	}
	if !j.bf.creating || j.bf.cancelled {
		r.mu.Unlock()
		what := "has been created already"
		if j.bf.cancelled {
			what = "is being cancelled already"
		}
		return 0, pgerror.New(pgcode.ObjectNotInPrerequisiteState, "job %d (%s) %s", id, j.Name, what).
			WithHint("CANCEL JOB cancels a job still being created; DROP removes a created one.")
	}
	j.bf.cancelled = true
	e := j.bf.epoch
	r.mu.Unlock()
	j.bf.stop.Store(true)
	j.fail(errCancelled(j.Name))
	if j.bf.cancel != nil {
		j.bf.cancel()
	}
	return e, nil
}

// Cancelled reports whether job j's creation was cancelled.
func (r *Runtime) Cancelled(j *Job) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return j.bf.cancelled
}

// SetCreationEpoch records e, the epoch injected to create job id (the
// server calls it after resuming the graph it was added to).
func (r *Runtime) SetCreationEpoch(id, e uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if j := r.mu.jobs[id]; j != nil && j.bf.creating && j.bf.epoch == 0 && j.det == nil {
		j.bf.epoch = e
	}
}

// endCreation ends the creation of job j at epoch e (beforeCommit, r.mu held)
// or, if it was cancelled, removes its catalog entry and position from w.
func (r *Runtime) endCreation(j *Job, e uint64, w *storage.EpochWriter) {
	if !j.bf.creating {
		return
	}
	j.bf.creating = false
	if j.bf.epoch == 0 {
		j.bf.epoch = e
	}
	if j.det != nil {
		j.det.closeOnce.Do(func() { close(j.det.decided) })
	}
	if j.bf.cancel != nil {
		j.bf.cancel()
	}
	if !j.bf.cancelled && r.OnCreated != nil {
		r.OnCreated(j.ID, w)
	}
	if j.bf.cancelled {
		w.Delete(epochKey(j.ID))
		if r.OnCancelled != nil {
			r.OnCancelled(j.ID, w)
		}
		r.logf("%s: creation cancelled at epoch %d after %d of %d rows", j.Name, e, j.bf.progress.Read.Load(), j.bf.progress.Total.Load())
	}
}

// trackBackfill wraps backfill f of a job being created, which reads
// relation rel of snap: it counts the relation's rows first (Total), then
// the rows emitted (Read), and stops when the creation is cancelled.
func (j *Job) trackBackfill(snap *storage.Snapshot, rel uint64, f func(func(types.Row, int64) error) error) func(func(types.Row, int64) error) error {
	return func(emit func(types.Row, int64) error) error {
		var n int64
		if err := snap.Scan(storage.Key(storage.SpaceRelation, rel), func(_, _ []byte) error {
			n++
			if n&1023 == 0 && j.bf.stop.Load() {
				return errCancelled(j.Name)
			}
			return nil
		}); err != nil {
			return err
		}
		j.bf.progress.Total.Add(n)
		hook := theFailpoint.hook("backfill", j.Name)
		return f(func(row types.Row, d int64) error {
			if j.bf.stop.Load() {
				return errCancelled(j.Name)
			}
			if hook != nil {
				if err := hook(j.bf.ctx, 1); err != nil {
					if j.bf.stop.Load() {
						return errCancelled(j.Name)
					}
					return err
				}
			}
			if err := emit(row, d); err != nil {
				return err
			}
			j.bf.progress.Read.Add(1)
			return nil
		})
	}
}

// String describes a backfill's progress: "1200 of 4000 rows (30%)";
// once every row is read, the job still processes them and commits its
// first epoch: "4000 of 4000 rows (100%), committing".
func (p *Progress) String() string {
	read, total := p.Read.Load(), p.Total.Load()
	if read >= total && total > 0 {
		return fmt.Sprintf("%d of %d rows (100%%), committing", read, total)
	}
	pct := 100.0
	if total > 0 {
		pct = float64(read) * 100 / float64(total)
	}
	return fmt.Sprintf("%d of %d rows (%.0f%%)", read, total, pct)
}
