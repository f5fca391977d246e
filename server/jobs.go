package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sluice/exec/job"
	"sluice/server/pgwire"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// Jobs being created. CREATE MATERIALIZED VIEW over existing data starts
// its job with a backfill (exec/job/progress.go): the epoch that creates it
// commits once the backfill is read. In the foreground the statement waits
// for that epoch and sends a NOTICE with the backfill's progress every
// backfillNoticeEvery; a CancelRequest cancels the creation. With SET
// background_ddl = true it returns once the job is started and SHOW JOBS
// follows it. CANCEL JOB cancels a creation from any session.

// backfillNoticeEvery is how often a foreground CREATE reports progress.
const backfillNoticeEvery = time.Second

// createOpts are a session's choices for a CREATE that starts a job.
type createOpts struct {
	background bool
	// notice, if set, sends a NOTICE to the client at once.
	notice func(string) error
}

// noticeNow returns a notice function that sends msg through w and
// flushes it, so that the client shows it while the statement runs.
func noticeNow(w pgwire.ResultWriter) func(string) error {
	return func(msg string) error {
		if err := w.Notice(msg); err != nil {
			return err
		}
		if f, ok := w.(interface{ Flush() error }); ok {
			return f.Flush()
		}
		return nil
	}
}

// ddlNoWait is ddl that returns the epoch carrying the change without
// waiting for it to commit (a job's backfill delays that commit). When f
// fails it waits as ddl does and returns f's error.
func (e *Engine) ddlNoWait(ctx context.Context, f func() error) (uint64, error) {
	if err := e.coord.Pause(ctx); err != nil {
		return 0, err
	}
	e.ddlRole = roleOf(ctx)
	ferr := f()
	e.ddlRole = ""
	epoch, err := e.coord.ResumeNoWait()
	if ferr != nil {
		if err == nil {
			_ = e.coord.Wait(context.WithoutCancel(ctx), epoch)
		}
		return 0, ferr
	}
	return epoch, err
}

// awaitCreation waits until the epoch that creates job id commits,
// sending progress notices meanwhile. When ctx ends first (a
// CancelRequest, statement_timeout) the creation is cancelled: the job is
// dropped and ctx's error returned. A creation cancelled by CANCEL JOB
// ends with 57014 too.
func (e *Engine) awaitCreation(ctx context.Context, id uint64, name string, epoch uint64, notice func(string) error) error {
	j := e.rt.Job(id)
	if j == nil {
		return e.coord.Wait(context.WithoutCancel(ctx), epoch)
	}
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	done := make(chan error, 1)
	go func() { // owned: received below before returning
		err := e.coord.Wait(wctx, epoch)
		if err == nil {
			// A job backfilling outside the epochs is created by the
			// epoch it joins (exec/job/detached.go), decided later.
			var ce uint64
			if ce, err = e.rt.CreationEpoch(wctx, j); err == nil && ce > epoch {
				err = e.coord.Sync(wctx, ce)
			}
		}
		done <- err
	}()
	t := time.NewTicker(backfillNoticeEvery)
	defer t.Stop()
	cancelled := ctx.Done()
	for {
		select {
		case err := <-done:
			if err != nil {
				return err
			}
			if e.rt.Cancelled(j) {
				if err := e.dropCancelled(context.WithoutCancel(ctx), id); err != nil {
					return err
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return pgerror.New(pgcode.QueryCanceled, "canceling statement due to user request").
					WithDetail("the creation of %s was cancelled by CANCEL JOB", name)
			}
			return nil
		case <-t.C:
			if creating, p, _ := e.rt.Creating(j); creating && notice != nil {
				if err := notice(fmt.Sprintf("backfill of %s: %s", name, p)); err != nil {
					e.rt.CancelCreate(id) //nolint:errcheck // the client is gone: nothing to tell
					notice = nil
				}
			}
		case <-cancelled:
			cancelled = nil
			// Too late when the job is created already: then it stays.
			_, _ = e.rt.CancelCreate(id)
		}
	}
}

// dropCancelled drops job id, whose creation was cancelled, once the
// epoch that was to create it has committed (without its catalog entry
// and state, progress.go): its in-memory catalog entry and job go.
func (e *Engine) dropCancelled(ctx context.Context, id uint64) error {
	return e.ddl(ctx, func() error {
		if ent := e.cat.byIDGet(id); ent != nil {
			e.dropOne(ent)
		}
		return nil
	})
}

// cancelledCatalog removes the catalog entry of job id from w, the epoch
// that was to create it (job.Runtime.OnCancelled).
func cancelledCatalog(id uint64, w *storage.EpochWriter) {
	storage.DeleteCatalog(w, id)
	w.Delete(rowIDKey(id))
	w.Delete(seqKey(id))
	w.Delete(pendingKey(id))
}

// cancelJobs is CANCEL JOB | JOBS id, …: every id must be a job being
// created that the session owns (checked for all before any is
// cancelled); it returns once each is dropped, with their ids as rows.
func (s *session) cancelJobs(ctx context.Context, x *parser.CancelJobs, w pgwire.ResultWriter) error {
	if s.tx != nil {
		return pgerror.New(pgcode.ActiveSQLTransaction, "CANCEL JOBS cannot run inside a transaction block")
	}
	jobs := make([]*job.Job, len(x.IDs))
	for i, id := range x.IDs {
		j := s.e.rt.Job(id)
		ent := s.e.cat.byIDGet(id)
		if j == nil || ent == nil {
			return pgerror.New(pgcode.UndefinedObject, "job %d does not exist", id).WithHint("SHOW JOBS lists the jobs.")
		}
		if !s.ownsOrSuper(ent) {
			return pgerror.New(pgcode.InsufficientPrivilege, "must be owner of %s %s", ent.Kind, ent.Name)
		}
		if creating, _, _ := s.e.rt.Creating(j); !creating || s.e.rt.Cancelled(j) {
			return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "job %d (%s) is not being created", id, j.Name).
				WithHint("CANCEL JOB cancels a job still being created; DROP %s removes a created one.", strings.ToUpper(ent.Kind))
		}
		jobs[i] = j
	}
	for _, id := range x.IDs {
		if _, err := s.e.rt.CancelCreate(id); err != nil {
			return err
		}
	}
	// Each creation ends at its first epoch's commit, which now carries
	// the removal of its catalog entry; then it is dropped.
	for i, j := range jobs {
		for {
			creating, _, epoch := s.e.rt.Creating(j)
			if !creating {
				if err := s.e.coord.Wait(ctx, epoch); err != nil {
					return err
				}
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
		if err := s.e.dropCancelled(ctx, x.IDs[i]); err != nil {
			return err
		}
	}
	if err := w.Columns([]types.Column{{Name: "Id", Type: types.TInt8}}); err != nil {
		return err
	}
	for _, id := range x.IDs {
		if err := w.Row(types.Row{types.NewInt(int64(id))}); err != nil {
			return err
		}
	}
	return w.Complete(fmt.Sprintf("CANCEL_JOBS %d", len(x.IDs)))
}

// dropCreatingErr refuses to drop ents while one of them is being created
// (55000): CANCEL JOB ends a creation.
func (e *Engine) dropCreatingErr(ents ...*storage.CatalogEntry) error {
	for _, ent := range ents {
		j := e.rt.Job(ent.ID)
		if j == nil {
			continue
		}
		if creating, _, _ := e.rt.Creating(j); creating {
			return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "cannot drop %s %s while it is being created", ent.Kind, ent.Name).
				WithHint("CANCEL JOB %d cancels its creation; SHOW JOBS shows its progress.", ent.ID)
		}
	}
	return nil
}

// creatingErr refuses a read of a relation whose job is still being
// created (its contents are not there yet) or whose creation was
// cancelled.
func (e *Engine) creatingErr(rels []uint64) error {
	for _, id := range rels {
		j := e.rt.Job(id)
		if j == nil {
			continue
		}
		creating, p, _ := e.rt.Creating(j)
		switch {
		case e.rt.Cancelled(j):
			return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "the creation of %s was cancelled", j.Name)
		case creating:
			return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "%s is still being created (backfill: %s)", j.Name, p).
				WithHint("SHOW JOBS shows its progress.")
		}
	}
	return nil
}

// jobInfo is one job as SHOW JOBS and sluice_catalog.jobs show it.
type jobInfo struct {
	id                 uint64
	name, kind, status string
	err                types.Datum
	progress           string
	committed          uint64
}

// jobInfos describes every running job.
func (e *Engine) jobInfos() []jobInfo {
	var out []jobInfo
	for _, j := range e.rt.Jobs() {
		ji := jobInfo{id: j.ID, name: j.Name, kind: "materialized view", status: "running", err: types.Null,
			progress: "done", committed: j.CommittedEpoch()}
		switch {
		case j.Table != nil:
			ji.kind = "table"
		case j.Sink != nil:
			ji.kind = "sink"
		}
		creating, p, _ := e.rt.Creating(j)
		if creating {
			ji.status, ji.progress = "creating", p.String()
		}
		if err := j.Failure(); err != nil {
			ji.status, ji.err = "failed", types.NewString(e.redactText(err.Error()))
			if e.rt.Cancelled(j) {
				ji.status = "cancelling"
			}
		}
		out = append(out, ji)
	}
	return out
}

func showJobsCols() []types.Column {
	return []types.Column{{Name: "Id", Type: types.TInt8}, {Name: "Name", Type: types.TText}, {Name: "Kind", Type: types.TText},
		{Name: "Status", Type: types.TText}, {Name: "Progress", Type: types.TText}, {Name: "Committed Epoch", Type: types.TInt8}}
}

// showJobs is SHOW JOBS: every job with its creation's progress.
func (s *session) showJobs(w pgwire.ResultWriter) error {
	var rows []types.Row
	for _, ji := range s.e.jobInfos() {
		rows = append(rows, types.Row{types.NewInt(int64(ji.id)), types.NewString(ji.name), types.NewString(ji.kind),
			types.NewString(ji.status), types.NewString(ji.progress), types.NewInt(int64(ji.committed))})
	}
	return s.writeRows(w, showJobsCols(), rows, "SHOW")
}
