// Tests of failed jobs inside one process: a view over a table whose
// aggregation fails stops at its last completed epoch (its relation, its
// position in the table's log), a view over it fails with it, the other
// jobs go on committing, the table's log is kept from the failed view's
// position, and ResumeSet / Halt / StartJob (what ALTER … RESUME runs)
// bring both views to what a recomputation gives; a restart does the same.
package job_test

import (
	"context"
	"strings"
	"testing"

	"sluice/exec/job"
	"sluice/exec/spec"
	"sluice/storage"
)

const overID = 4

// overPlan is SELECT * FROM v (a view over the view).
func overPlan() *spec.Plan {
	cols := viewPlan().Nodes[1].Cols
	return &spec.Plan{Nodes: []*spec.Node{
		{Kind: spec.Subscribe, Rel: viewID, RelName: "v", Cols: cols},
		{Kind: spec.Materialize, Inputs: []int{0}, Rel: overID, Key: []int{0}},
	}}
}

func bootOver(t *testing.T, dir string, restore bool) *engine {
	t.Helper()
	return bootWith(t, dir, restore, []bootJob{{viewID, "v", viewPlan()}, {genID, "g", genPlan()}, {overID, "over", overPlan()}})
}

// bootFailing boots a fresh engine with SLUICE_FAILPOINT fp (cleared
// when the test ends) and gen rows of the generator released.
func bootFailing(t *testing.T, dir, fp string, gen int64) *engine {
	t.Helper()
	job.SetFailpoint(fp)
	t.Cleanup(func() { job.SetFailpoint("") })
	genLimit.Store(gen)
	return bootOver(t, dir, false)
}

// settle checkpoints twice (a failure shows at the commit after it) and
// checks the Status of v and over.
func (e *engine) settle(v, over string) {
	e.t.Helper()
	e.flush()
	e.flush()
	if gv, gover := e.status(viewID), e.status(overID); gv != v || gover != over {
		e.t.Fatalf("status v=%s over=%s, want %s and %s", gv, gover, v, over)
	}
}

func (e *engine) status(id uint64) string {
	if j := e.rt.Job(id); j != nil {
		return j.Status()
	}
	return "none"
}

// logEntries counts the table's log entries left.
func (e *engine) logEntries() int {
	n := 0
	if err := e.db.Scan(storage.Key(storage.SpaceLog, tableID), func(_, _ []byte) error { n++; return nil }); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func TestRuntimeFailedJobHaltsAndResumes(t *testing.T) {
	dir := t.TempDir()
	e := bootFailing(t, dir, "op:HashAgg:3:v", 20)
	e.write(1, trow(1, "a", 10), 1, trow(2, "a", 20))
	e.flush()
	const two = "('a',2,n30)"
	e.flushUntil(overID, two)
	// The aggregation fails on its 4th row: v and the view over it stop.
	e.write(1, trow(3, "b", 5), 1, trow(4, "b", 7))
	e.settle("failed", "failed")
	if g := e.status(genID); g != "running" {
		t.Fatalf("status g=%s", g)
	}
	if err := e.rt.Job(viewID).Failure(); !strings.Contains(err.Error(), "failpoint: HashAgg of v after 3 rows") {
		t.Fatalf("failure: %v", err)
	}
	// More changes while it is failed; the other jobs keep committing.
	e.write(-1, trow(1, "a", 10), 1, trow(1, "c", 1))
	genLimit.Store(60)
	e.flushUntil(genID, "(60,1770)")
	e.write(1, trow(5, "c", 2))
	e.flush()
	if got, want := e.rel(tableID), "(1,'c',1) (2,'a',20) (3,'b',5) (4,'b',7) (5,'c',2)"; got != want {
		t.Fatalf("table = %s, want %s", got, want)
	}
	if got := e.rel(viewID); got != two {
		t.Fatalf("failed view = %s, want its contents at the failure %s", got, two)
	}
	if got := e.rel(overID); got != two {
		t.Fatalf("view over the failed view = %s, want %s", got, two)
	}
	if n := e.logEntries(); n != 3 {
		t.Fatalf("%d table log entries kept, want the 3 after v's position", n)
	}
	if _, err := e.rt.ResumeSet(genID, "g"); err == nil || !strings.Contains(err.Error(), "g has not failed") {
		t.Fatalf("ResumeSet of a running job = %v", err)
	}

	// A restart starts v again from its committed state (the failpoint
	// has fired in this process: it stays quiet).
	e.stop()
	e = bootOver(t, dir, true)
	const all = "('a',1,n20) ('b',2,n12) ('c',2,n3)"
	e.flushUntil(viewID, all)
	e.flushUntil(overID, all)
	if n := e.logEntries(); n != 0 {
		t.Fatalf("%d table log entries left once v caught up", n)
	}

	// A failure again, then what ALTER … RESUME runs.
	job.SetFailpoint("op:HashAgg:0:v")
	e.pause()
	e.restart(viewID, overID)
	e.unpause()
	e.write(1, trow(6, "d", 1))
	e.settle("failed", "failed")
	e.write(-1, trow(2, "a", 20), 1, trow(7, "d", 3))
	e.flush()
	e.pause()
	set, err := e.rt.ResumeSet(viewID, "v")
	if err != nil || len(set) != 2 || set[0] != viewID || set[1] != overID {
		t.Fatalf("ResumeSet = %v, %v", set, err)
	}
	e.restart(set...)
	e.unpause()
	const last = "('b',2,n12) ('c',2,n3) ('d',2,n4)"
	e.flushUntil(viewID, last)
	e.flushUntil(overID, last)
	if v, o := e.status(viewID), e.status(overID); v != "running" || o != "running" {
		t.Fatalf("after resume: v=%s over=%s", v, o)
	}
	e.stop()
}

// resume runs what ALTER … RESUME of id runs.
func (e *engine) resume(id uint64) error {
	e.t.Helper()
	names := map[uint64]string{viewID: "v", overID: "over"}
	e.pause()
	set, err := e.rt.ResumeSet(id, names[id])
	if err == nil {
		e.restart(set...)
	}
	e.unpause()
	return err
}

func (e *engine) pause() {
	e.t.Helper()
	if err := e.coord.Pause(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

func (e *engine) unpause() {
	e.t.Helper()
	if err := e.coord.Resume(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

// restart halts jobs ids (views v and over) and starts them again from
// their committed state, with the graph paused.
func (e *engine) restart(ids ...uint64) {
	e.t.Helper()
	plans := map[uint64]*spec.Plan{viewID: viewPlan(), overID: overPlan()}
	names := map[uint64]string{viewID: "v", overID: "over"}
	for i := len(ids) - 1; i >= 0; i-- {
		e.rt.Halt(ids[i])
	}
	for _, x := range ids {
		if _, err := e.rt.StartJob(x, names[x], plans[x], false); err != nil {
			e.t.Fatal(err)
		}
	}
}

// TestRuntimeViewOverViewCatchesUp: a view over a view fails alone; the
// view it reads goes on. Resumed, it reads what that view changed since
// it stopped (from the snapshot of that epoch, kept in memory). After a
// restart that snapshot is gone: the job stays failed and says why.
func TestRuntimeViewOverViewCatchesUp(t *testing.T) {
	dir := t.TempDir()
	e := bootFailing(t, dir, "op:Materialize:1:over", 0)
	e.write(1, trow(1, "a", 10))
	e.flushUntil(overID, "('a',1,n10)")
	e.write(1, trow(2, "b", 20))
	e.settle("running", "failed")
	e.write(-1, trow(1, "a", 10), 1, trow(3, "c", 30))
	e.flush()
	const want = "('b',1,n20) ('c',1,n30)"
	if got := e.rel(viewID); got != want {
		t.Fatalf("v = %s", got)
	}
	if got := e.rel(overID); got != "('a',1,n10)" {
		t.Fatalf("failed over = %s", got)
	}
	if err := e.resume(overID); err != nil {
		t.Fatal(err)
	}
	e.flushUntil(overID, want)
	e.write(1, trow(4, "c", 1))
	e.flushUntil(overID, "('b',1,n20) ('c',2,n31)")

	// Failed again, then a restart: the changes of v in between cannot be
	// read again, and over says so instead of skipping them.
	if err := e.resume(overID); err == nil || !strings.Contains(err.Error(), "has not failed") {
		t.Fatalf("resume of a running view = %v", err)
	}
	job.SetFailpoint("op:Materialize:0:over")
	e.pause()
	e.restart(overID)
	e.unpause()
	e.write(1, trow(5, "d", 1))
	e.settle("running", "failed")
	e.write(1, trow(6, "d", 2))
	e.flush()
	e.stop()
	e = bootOver(t, dir, true)
	defer e.stop()
	e.settle("running", "failed")
	if err := e.rt.Job(overID).Failure(); !strings.Contains(err.Error(), "cannot be read again") {
		t.Fatalf("over's failure: %v", err)
	}
	if err := e.resume(overID); err == nil || !strings.Contains(err.Error(), "cannot be read again") {
		t.Fatalf("resume after restart = %v", err)
	}
	if got := e.rel(overID); got != "('b',1,n20) ('c',2,n31)" {
		t.Fatalf("over = %s, want its contents where it stopped", got)
	}
}

// TestRuntimeFirstEpochFailureRebuilds: a view that fails in its very
// first epoch has no committed state at all; a restart builds it again
// from the relation it reads instead of starting it empty.
func TestRuntimeFirstEpochFailureRebuilds(t *testing.T) {
	dir := t.TempDir()
	e := bootWith(t, dir, false, []bootJob{{viewID, "v", viewPlan()}})
	e.write(1, trow(1, "a", 10), 1, trow(2, "b", 20))
	const want = "('a',1,n10) ('b',1,n20)"
	e.flushUntil(viewID, want)
	job.SetFailpoint("op:Materialize:0:over")
	t.Cleanup(func() { job.SetFailpoint("") })
	e.pause()
	if _, err := e.rt.StartJob(overID, "over", overPlan(), true); err != nil {
		t.Fatal(err)
	}
	e.unpause()
	e.settle("running", "failed")
	if got := e.rel(overID); got != "" {
		t.Fatalf("over = %s, want nothing committed", got)
	}
	e.stop()
	e = bootOver(t, dir, true)
	defer e.stop()
	e.flushUntil(overID, want)
}
