// Tests of Runtime end to end inside one process: a table (StartTable)
// written through its durable log, a view over it and a view over a
// replayable connector source (StartJob with backfill), checkpoints by
// Flush; then a simulated crash after uncommitted work, a restart that
// restores every job from the last checkpoint (StartJob without
// backfill), and exactly-once results; StopJob deletes a job's state at
// the next epoch.
package job_test

import (
	"context"
	"encoding/binary"
	"io"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sluice/exec/connector"
	"sluice/exec/flow"
	"sluice/exec/job"
	"sluice/exec/ops"
	"sluice/exec/spec"
	"sluice/sql/types"
	"sluice/storage"
)

// genLimit is how many rows the "jobtest" source has made available.
var genLimit atomic.Int64

const genRows = 100

// genSource is a replayable source of rows (x) = 0 … genRows-1, released
// up to genLimit.
type genSource struct{ next int64 }

func (g *genSource) Read(_ context.Context, b *types.Batch, n int) (int, error) {
	if g.next >= genRows {
		return 0, io.EOF
	}
	k := max(0, min(7, int64(n), genLimit.Load()-g.next))
	for i := int64(0); i < k; i++ {
		b.Add(types.Row{types.NewInt(g.next)}, 1)
		g.next++
	}
	return int(k), nil
}

func (g *genSource) Close() error     { return nil }
func (g *genSource) Position() []byte { return binary.BigEndian.AppendUint64(nil, uint64(g.next)) }
func (g *genSource) Seek(p []byte) error {
	g.next = int64(binary.BigEndian.Uint64(p))
	return nil
}

type genFactory struct{}

func (genFactory) Validate(cfg connector.SourceConfig) ([]types.Column, error) {
	return cfg.Columns, nil
}
func (genFactory) Open(context.Context, connector.SourceConfig) (connector.Source, error) {
	return &genSource{}, nil
}

func init() { connector.RegisterSource("jobtest", genFactory{}) }

type engine struct {
	t      *testing.T
	db     *storage.DB
	coord  *flow.Coordinator
	rt     *job.Runtime
	cancel context.CancelFunc
	done   chan error
	seq    uint64 // the table's last log sequence
	ts     *flow.TableSource
}

const (
	tableID = 1
	viewID  = 2
	genID   = 3
)

func tableCols() []types.Column { return relTCols }

// viewPlan is SELECT g, count(*), sum(v) FROM t GROUP BY g.
func viewPlan() *spec.Plan {
	return &spec.Plan{Nodes: []*spec.Node{
		{Kind: spec.Subscribe, Rel: tableID, RelName: "t", Cols: tableCols()},
		{Kind: spec.Agg, Inputs: []int{0}, GroupBy: []int{1}, Aggs: []spec.AggCall{
			{Func: "count_star", Arg: -1, Filter: -1, T: tI},
			{Func: "sum", Arg: 2, Filter: -1, T: types.TNumeric},
		}},
		{Kind: spec.Materialize, Inputs: []int{1}, Rel: viewID, Key: []int{0}},
	}}
}

// genPlan is SELECT count(*), sum(x) FROM gen.
func genPlan() *spec.Plan {
	cols := []types.Column{{Name: "x", Type: tI}}
	return &spec.Plan{Nodes: []*spec.Node{
		{Kind: spec.SourceRead, Cols: cols, Source: &spec.SourceSpec{SourceID: 10, Name: "gen", Connector: "jobtest", Columns: cols}},
		{Kind: spec.Agg, Inputs: []int{0}, Aggs: []spec.AggCall{
			{Func: "count_star", Arg: -1, Filter: -1, T: tI},
			{Func: "sum", Arg: 0, Filter: -1, T: tI},
		}},
		{Kind: spec.Materialize, Inputs: []int{1}, Rel: genID},
	}}
}

// boot opens the store in dir and creates (but does not run) the table
// and both views: restored from the checkpoint when restore is set.
func boot(t *testing.T, dir string, restore bool) *engine {
	t.Helper()
	return bootWith(t, dir, restore, []bootJob{{viewID, "v", viewPlan()}, {genID, "g", genPlan()}})
}

// bootJob is a view started by bootWith.
type bootJob struct {
	id   uint64
	name string
	plan *spec.Plan
}

// bootWith opens the store in dir, creates table t and the views jobs,
// and runs them.
func bootWith(t *testing.T, dir string, restore bool, jobs []bootJob) *engine {
	t.Helper()
	db, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := &engine{t: t, db: db, coord: flow.NewCoordinator(db, time.Hour, t.Logf), done: make(chan error, 1)}
	var ctx context.Context
	ctx, e.cancel = context.WithCancel(context.Background())
	e.rt = job.NewRuntime(ctx, db, e.coord, t.Logf)
	if e.ts, err = e.rt.StartTable(tableID, "t", []int{0}); err != nil {
		t.Fatal(err)
	}
	e.seq = e.ts.LastSeq()
	for _, j := range jobs {
		if _, err := e.rt.StartJob(j.id, j.name, j.plan, !restore); err != nil {
			t.Fatal(err)
		}
	}
	e.rt.Start()
	go func() { e.done <- e.coord.Run(ctx) }()
	return e
}

// stop ends every actor without a checkpoint, as a crash would, and
// closes the store.
func (e *engine) stop() {
	e.cancel()
	e.rt.Wait()
	if err := <-e.done; err != nil {
		e.t.Fatal(err)
	}
	if err := e.db.Close(); err != nil {
		e.t.Fatal(err)
	}
}

// write runs one acknowledged DML statement: the chunk is logged durably,
// then handed to the table's source.
func (e *engine) write(changes ...any) {
	e.t.Helper()
	b := types.NewBatch(len(changes))
	for i := 0; i < len(changes); i += 2 {
		b.Add(changes[i+1].(types.Row), int64(changes[i].(int)))
	}
	e.seq++
	wb := e.db.NewWriteBatch()
	wb.Set(storage.Key(storage.SpaceLog, tableID, flow.EncodeSeq(e.seq)), job.EncodeLogBatch(b))
	if err := e.db.WriteSync(wb); err != nil {
		e.t.Fatal(err)
	}
	if err := e.ts.Push(context.Background(), flow.TableChunk{Seq: e.seq, Batch: b}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *engine) flush() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.coord.Flush(ctx); err != nil {
		e.t.Fatal(err)
	}
}

// rel returns relation rel's committed rows, sorted, with multiplicities.
func (e *engine) rel(rel uint64) string {
	e.t.Helper()
	s := e.db.Snapshot()
	defer s.Release()
	var out []string
	err := s.Scan(storage.Key(storage.SpaceRelation, rel), func(_, v []byte) error {
		n, r, err := ops.DecodeRelValue(v)
		if err != nil {
			return err
		}
		for i := int64(0); i < n; i++ {
			out = append(out, fmtRow(r))
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// flushUntil checkpoints until relation rel holds want.
func (e *engine) flushUntil(rel uint64, want string) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.flush()
		got := e.rel(rel)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("relation %d = %s, want %s", rel, got, want)
		}
	}
}

func trow(k int64, g string, v int64) types.Row { return types.Row{ival(k), sval(g), ival(v)} }

func TestRuntimeRecoveryExactlyOnce(t *testing.T) {
	dir := t.TempDir()
	genLimit.Store(40)

	e := boot(t, dir, false)
	e.write(1, trow(1, "a", 10), 1, trow(2, "a", 20), 1, trow(3, "b", 5))
	e.flush()
	if got, want := e.rel(tableID), "(1,'a',10) (2,'a',20) (3,'b',5)"; got != want {
		t.Fatalf("table = %s, want %s", got, want)
	}
	if got, want := e.rel(viewID), "('a',2,n30) ('b',1,n5)"; got != want {
		t.Fatalf("view = %s, want %s", got, want)
	}
	// An update and an insert.
	e.write(-1, trow(1, "a", 10), 1, trow(1, "b", 11), 1, trow(4, "b", 7))
	e.flush()
	if got, want := e.rel(viewID), "('a',1,n20) ('b',3,n23)"; got != want {
		t.Fatalf("view = %s, want %s", got, want)
	}
	e.flushUntil(genID, "(40,780)")

	// Work that is never checkpointed: a logged statement and more source
	// rows. Then the process dies.
	e.write(1, trow(5, "c", 1))
	genLimit.Store(60)
	e.stop()

	e = boot(t, dir, true)
	defer e.stop()
	// The table replays the statement after its checkpoint, once.
	e.flush()
	if got, want := e.rel(viewID), "('a',1,n20) ('b',3,n23) ('c',1,n1)"; got != want {
		t.Fatalf("view after recovery = %s, want %s", got, want)
	}
	if got, want := e.rel(tableID), "(1,'b',11) (2,'a',20) (3,'b',5) (4,'b',7) (5,'c',1)"; got != want {
		t.Fatalf("table after recovery = %s, want %s", got, want)
	}
	// The source resumes at its checkpointed position: every row counts once.
	genLimit.Store(genRows)
	e.flushUntil(genID, "(100,4950)")
	e.write(-1, trow(2, "a", 20))
	e.flush()
	if got, want := e.rel(viewID), "('b',3,n23) ('c',1,n1)"; got != want {
		t.Fatalf("view = %s, want %s", got, want)
	}
	for _, id := range []uint64{tableID, viewID, genID} {
		if err := e.rt.Job(id).Failure(); err != nil {
			t.Fatalf("job %d failed: %v", id, err)
		}
	}

	// Dropping the generator's view deletes its relation, operator state
	// and source position with the next epoch.
	ctx := context.Background()
	if err := e.coord.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	e.rt.StopJob(genID, len(genPlan().Nodes))
	if err := e.coord.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	e.flush()
	if e.rt.Job(genID) != nil {
		t.Fatal("stopped job still registered")
	}
	s := e.db.Snapshot()
	defer s.Release()
	for _, p := range [][]byte{
		storage.Key(storage.SpaceRelation, genID),
		storage.Key(storage.SpaceState, job.OpID(genID, 2)),
		storage.Key(storage.SpacePosition, job.OpID(genID, 1)),
	} {
		err := s.Scan(p, func(k, _ []byte) error {
			t.Errorf("key %x left after StopJob", k)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The other jobs keep running.
	e.write(1, trow(6, "d", 4))
	e.flush()
	if got, want := e.rel(viewID), "('b',3,n23) ('c',1,n1) ('d',1,n4)"; got != want {
		t.Fatalf("view = %s, want %s", got, want)
	}
}
