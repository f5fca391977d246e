// Tests of RunBatch over a committed snapshot: Subscribe of materialized
// relations (with multiplicities), Values, Filter, Project, Agg (grouped
// and global), Join, Union and TopN return exactly the expected multiset;
// a cancelled context returns context.Canceled promptly; a strict runtime
// error keeps its SQLSTATE (22012); a plan that reads a source directly is
// refused. Also the table log's EncodeLogBatch/DecodeLogBatch round trip.
package job_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"sluice/exec/job"
	"sluice/exec/ops"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

func fmtDatum(d types.Datum) string {
	switch d.K {
	case types.KNull:
		return "NULL"
	case types.KInt:
		return fmt.Sprint(d.I)
	case types.KDecimal:
		return "n" + types.DecString(d)
	case types.KString:
		return "'" + d.S + "'"
	case types.KFloat:
		return fmt.Sprintf("f%g", d.Float())
	case types.KBool:
		return fmt.Sprint(d.Bool())
	}
	return fmt.Sprintf("%+v", d)
}

func fmtRow(r types.Row) string {
	s := make([]string, len(r))
	for i, d := range r {
		s[i] = fmtDatum(d)
	}
	return "(" + strings.Join(s, ",") + ")"
}

// sorted prints rows as a sorted list: the multiset RunBatch promises.
func sorted(rows []types.Row) string {
	s := make([]string, len(rows))
	for i, r := range rows {
		s[i] = fmtRow(r)
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

func sortedStrings(s ...string) string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return strings.Join(s, " ")
}

func ival(v int64) types.Datum  { return types.NewInt(v) }
func sval(s string) types.Datum { return types.NewString(s) }

var (
	tI = types.TInt8
	tT = types.TText
)

func colRef(i int, t types.T) spec.Expr { return &spec.ColRef{Idx: i, T: t} }
func intConst(v int64) spec.Expr        { return &spec.Const{D: types.NewInt(v), T: tI} }
func call(name string, t types.T, args ...spec.Expr) spec.Expr {
	return &spec.Func{Name: name, Args: args, T: t}
}

const (
	relT     = 7 // (k BIGINT PRIMARY KEY, g TEXT, v BIGINT)
	relMulti = 8 // (x BIGINT), a multiset
)

var relTCols = []types.Column{{Name: "k", Type: tI}, {Name: "g", Type: tT}, {Name: "v", Type: tI}}

// fixture commits the two relations as a view's Materialize would.
func fixture(t *testing.T) *storage.DB {
	t.Helper()
	db, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	w := db.NewEpochWriter()
	for _, r := range []types.Row{
		{ival(1), sval("a"), ival(5)},
		{ival(2), sval("a"), ival(15)},
		{ival(3), sval("b"), ival(20)},
		{ival(4), sval("b"), ival(30)},
		{ival(5), sval("c"), ival(12)},
		{ival(6), sval("c"), types.Null},
		{ival(7), sval("d"), ival(100)},
		{ival(8), sval("e"), ival(0)},
	} {
		w.Set(storage.Key(storage.SpaceRelation, relT, ops.RelKey(nil, []int{0}, r)), ops.EncodeRelValue(1, r))
	}
	for _, x := range []struct {
		v, n int64
	}{{1, 2}, {2, 1}} {
		r := types.Row{ival(x.v)}
		w.Set(storage.Key(storage.SpaceRelation, relMulti, ops.RelKey(nil, nil, r)), ops.EncodeRelValue(x.n, r))
	}
	if err := db.Commit(w, 1); err != nil {
		t.Fatal(err)
	}
	return db
}

func runBatch(t *testing.T, db *storage.DB, p *spec.Plan) ([]types.Row, error) {
	t.Helper()
	snap := db.Snapshot()
	defer snap.Release()
	return job.RunBatch(context.Background(), p, snap, nil)
}

func subscribeT() *spec.Node {
	return &spec.Node{Kind: spec.Subscribe, Rel: relT, RelName: "t", Cols: relTCols}
}

func TestRunBatch(t *testing.T) {
	db := fixture(t)
	sumV := spec.AggCall{Func: "sum", Arg: 2, Filter: -1, T: types.TNumeric}
	countStar := spec.AggCall{Func: "count_star", Arg: -1, Filter: -1, T: tI}
	vOver10 := call(">", types.TBool, colRef(2, tI), intConst(10))

	for _, tc := range []struct {
		name  string
		nodes []*spec.Node
		want  string // sorted rows
	}{
		{
			name:  "scan",
			nodes: []*spec.Node{subscribeT()},
			want:  "(1,'a',5) (2,'a',15) (3,'b',20) (4,'b',30) (5,'c',12) (6,'c',NULL) (7,'d',100) (8,'e',0)",
		},
		{
			name: "multiset relation keeps multiplicities",
			nodes: []*spec.Node{
				{Kind: spec.Subscribe, Rel: relMulti, Cols: []types.Column{{Name: "x", Type: tI}}},
			},
			want: "(1) (1) (2)",
		},
		{
			name: "point lookup",
			nodes: []*spec.Node{
				{Kind: spec.Subscribe, Rel: relT, Cols: relTCols, Lookup: []spec.Expr{intConst(4)}},
			},
			want: "(4,'b',30)",
		},
		{
			name: "lookup of a missing key",
			nodes: []*spec.Node{
				{Kind: spec.Subscribe, Rel: relT, Cols: relTCols, Lookup: []spec.Expr{intConst(40)}},
			},
			want: "",
		},
		{
			name: "filter, aggregate, top-n",
			// SELECT g, count(*), sum(v) FROM t WHERE v > 10 GROUP BY g
			// ORDER BY count(*) DESC, g LIMIT 2
			nodes: []*spec.Node{
				subscribeT(),
				{Kind: spec.Filter, Inputs: []int{0}, Pred: vOver10, Cols: relTCols},
				{Kind: spec.Agg, Inputs: []int{1}, GroupBy: []int{1}, Aggs: []spec.AggCall{countStar, sumV}},
				{Kind: spec.TopN, Inputs: []int{2}, Order: []spec.OrderItem{{Col: 1, Desc: true, NullsFirst: true}, {Col: 0}}, Limit: 2},
			},
			want: "('a',1,n15) ('b',2,n50)",
		},
		{
			name: "global aggregate of nothing",
			nodes: []*spec.Node{
				subscribeT(),
				{Kind: spec.Filter, Inputs: []int{0}, Pred: call(">", types.TBool, colRef(2, tI), intConst(1000))},
				{Kind: spec.Agg, Inputs: []int{1}, Aggs: []spec.AggCall{countStar, sumV}},
			},
			want: "(0,NULL)",
		},
		{
			name: "values, project, union",
			nodes: []*spec.Node{
				{Kind: spec.Values, Rows: []types.Row{{ival(10)}, {ival(20)}, {ival(10)}}},
				{Kind: spec.Subscribe, Rel: relMulti},
				{Kind: spec.Union, Inputs: []int{0, 1}},
				{Kind: spec.Project, Inputs: []int{2}, Exprs: []spec.Expr{call("*", tI, colRef(0, tI), intConst(2))}},
			},
			want: "(2) (2) (20) (4) (40) (20)",
		},
		{
			name: "join",
			// SELECT t.k, l.label FROM t JOIN (VALUES ('a','alpha'), ('b','beta'), ('z','zeta')) l ON t.g = l.name
			nodes: []*spec.Node{
				subscribeT(),
				{Kind: spec.Values, Cols: []types.Column{{Name: "name", Type: tT}, {Name: "label", Type: tT}},
					Rows: []types.Row{{sval("a"), sval("alpha")}, {sval("b"), sval("beta")}, {sval("z"), sval("zeta")}}},
				{Kind: spec.Join, Inputs: []int{0, 1}, JoinKind: spec.InnerJoin, LeftKeys: []int{1}, RightKeys: []int{0}},
				{Kind: spec.Project, Inputs: []int{2}, Exprs: []spec.Expr{colRef(0, tI), colRef(4, tT)}},
			},
			want: "(1,'alpha') (2,'alpha') (3,'beta') (4,'beta')",
		},
		{
			name: "top-n with offset over nulls",
			// SELECT v FROM t ORDER BY v DESC LIMIT 3 OFFSET 1 (NULLs first)
			nodes: []*spec.Node{
				subscribeT(),
				{Kind: spec.TopN, Inputs: []int{0}, Order: []spec.OrderItem{{Col: 2, Desc: true, NullsFirst: true}}, Limit: 3, Offset: 1},
				{Kind: spec.Project, Inputs: []int{1}, Exprs: []spec.Expr{colRef(2, tI)}},
			},
			want: "(100) (20) (30)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := runBatch(t, db, &spec.Plan{Nodes: tc.nodes})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := sorted(rows), sortedStrings(strings.Fields(tc.want)...); got != want {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
		})
	}
}

func TestRunBatchSeesItsSnapshot(t *testing.T) {
	db := fixture(t)
	snap := db.Snapshot()
	defer snap.Release()
	// A later epoch deletes a row; the older snapshot still has it.
	w := db.NewEpochWriter()
	w.Delete(storage.Key(storage.SpaceRelation, relT, ops.RelKey(nil, []int{0}, types.Row{ival(1)})))
	if err := db.Commit(w, 2); err != nil {
		t.Fatal(err)
	}
	p := &spec.Plan{Nodes: []*spec.Node{subscribeT()}}
	old, err := job.RunBatch(context.Background(), p, snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	now, err := runBatch(t, db, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(old) != 8 || len(now) != 7 {
		t.Fatalf("old snapshot %d rows, new %d", len(old), len(now))
	}
}

func TestRunBatchStrictError(t *testing.T) {
	db := fixture(t)
	// SELECT 100 / v FROM t: v = 0 in one row.
	p := &spec.Plan{Nodes: []*spec.Node{
		subscribeT(),
		{Kind: spec.Project, Inputs: []int{0}, Exprs: []spec.Expr{call("/", tI, intConst(100), colRef(2, tI))}},
		{Kind: spec.Agg, Inputs: []int{1}, Aggs: []spec.AggCall{{Func: "count_star", Arg: -1, Filter: -1, T: tI}}},
	}}
	rows, err := runBatch(t, db, p)
	if c := pgerror.GetCode(err); c != pgcode.DivisionByZero {
		t.Fatalf("RunBatch = %v, %v (code %s), want %s", sorted(rows), err, c, pgcode.DivisionByZero)
	}
	if rows != nil {
		t.Fatalf("rows returned with the error: %s", sorted(rows))
	}
	// The same in a filter.
	for name, n := range map[string]*spec.Node{
		"filter": {Kind: spec.Filter, Inputs: []int{0}, Pred: call(">", types.TBool, call("/", tI, intConst(100), colRef(2, tI)), intConst(0))},
	} {
		p := &spec.Plan{Nodes: []*spec.Node{subscribeT(), n}}
		if _, err := runBatch(t, db, p); pgerror.GetCode(err) != pgcode.DivisionByZero {
			t.Fatalf("%s: %v", name, err)
		}
	}

	p = &spec.Plan{Nodes: []*spec.Node{{Kind: spec.SourceRead, Source: &spec.SourceSpec{Name: "s", Connector: "datagen"}}}}
	if _, err := runBatch(t, db, p); pgerror.GetCode(err) != pgcode.FeatureNotSupported {
		t.Fatalf("reading a source directly: %v", err)
	}
}

func TestRunBatchCancelled(t *testing.T) {
	db := fixture(t)
	snap := db.Snapshot()
	defer snap.Release()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := &spec.Plan{Nodes: []*spec.Node{subscribeT()}}
	if _, err := job.RunBatch(ctx, p, snap, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("RunBatch with a cancelled context = %v", err)
	}

	// Cancelled while running a large query: it stops promptly (or had
	// finished, correctly).
	const n = 200000
	rows := make([]types.Row, n)
	for i := range rows {
		rows[i] = types.Row{ival(int64(i))}
	}
	big := &spec.Plan{Nodes: []*spec.Node{
		{Kind: spec.Values, Rows: rows},
		{Kind: spec.Agg, Inputs: []int{0}, GroupBy: []int{0}, Aggs: []spec.AggCall{{Func: "count_star", Arg: -1, Filter: -1, T: tI}}},
	}}
	ctx, cancel = context.WithCancel(context.Background())
	type result struct {
		rows []types.Row
		err  error
	}
	done := make(chan result, 1)
	go func() {
		r, err := job.RunBatch(ctx, big, snap, nil)
		done <- result{r, err}
	}()
	cancel()
	select {
	case r := <-done:
		if r.err != nil && !errors.Is(r.err, context.Canceled) {
			t.Fatalf("cancelled RunBatch = %v", r.err)
		}
		if r.err == nil && len(r.rows) != n {
			t.Fatalf("finished with %d rows", len(r.rows))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled RunBatch did not return")
	}
}

func TestLogBatchRoundTrip(t *testing.T) {
	d, _ := types.DecFromString("-12.340")
	b := types.NewBatch(4)
	b.Add(types.Row{ival(1), sval("x"), types.Null, d, types.NewFloat(0.5), types.NewBool(true), types.NewBytes([]byte{0, 255})}, 1)
	b.Add(types.Row{ival(-7), sval(""), sval("quote'd"), types.NewTimestamp(1700000000000000), types.NewDate(19000), types.NewInterval(1, 2, 3), types.NewJSON(`{"a":1}`)}, -1)
	b.Add(types.Row{}, 3)
	got, err := job.DecodeLogBatch(job.EncodeLogBatch(b))
	if err != nil {
		t.Fatal(err)
	}
	if got.Len() != b.Len() {
		t.Fatalf("%d changes, want %d", got.Len(), b.Len())
	}
	for i := range b.Rows {
		if got.Diffs[i] != b.Diffs[i] || fmt.Sprintf("%+v", got.Rows[i]) != fmt.Sprintf("%+v", b.Rows[i]) {
			t.Fatalf("change %d: %d×%+v, want %d×%+v", i, got.Diffs[i], got.Rows[i], b.Diffs[i], b.Rows[i])
		}
	}
	empty, err := job.DecodeLogBatch(job.EncodeLogBatch(types.NewBatch(0)))
	if err != nil || empty.Len() != 0 {
		t.Fatalf("empty batch: %v, %v", empty, err)
	}

	// Corrupt entries are errors, not panics.
	odd := types.EncodeRow(nil, types.Row{ival(1), types.NewBytes(types.EncodeRow(nil, types.Row{ival(1)})), ival(2)})
	if _, err := job.DecodeLogBatch(odd); pgerror.GetCode(err) != pgcode.DataCorrupted {
		t.Fatalf("odd entry: %v", err)
	}
	for _, bad := range [][]byte{{0xff, 0xff, 0xff}, types.EncodeRow(nil, types.Row{ival(1), types.NewBytes([]byte{0xff, 0x01})})} {
		if _, err := job.DecodeLogBatch(bad); err == nil {
			t.Fatalf("DecodeLogBatch(%x) succeeded", bad)
		}
	}
}
