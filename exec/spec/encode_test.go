package spec_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

var update = flag.Bool("update", false, "rewrite testdata/plan-v1.json")

// samplePlan is a job using every node kind a stored plan holds, with
// every kind of expression and awkward constants (NaN, a big decimal,
// quotes, an interval).
func samplePlan() *spec.Plan {
	i8, txt, ts := types.TInt8, types.TText, types.TTimestamp
	cols := func(names ...string) []types.Column {
		out := make([]types.Column, len(names))
		for i, n := range names {
			out[i] = types.Column{Name: n, Type: i8}
		}
		return out
	}
	p := &spec.Plan{}
	src := p.Add(&spec.Node{Kind: spec.SourceRead, Cols: []types.Column{{Name: "a", Type: i8}, {Name: "b", Type: txt}, {Name: "t", Type: ts}},
		Source: &spec.SourceSpec{SourceID: 3, Name: "s", Connector: "datagen", Options: map[string]string{"fields.a.kind": "sequence", "connector": "datagen"},
			Columns: []types.Column{{Name: "a", Type: i8}, {Name: "b", Type: txt}, {Name: "t", Type: ts}}, Key: []int{0},
			Watermark: &spec.WatermarkSpec{Col: 2, Delay: 4_000_000}}})
	tw := p.Add(&spec.Node{Kind: spec.TimeWindow, Inputs: []int{src}, Cols: cols("a", "b", "t", "window_start", "window_end"),
		TimeWin: &spec.TimeWindowSpec{Hop: true, Col: 2, Size: 10_000_000, Slide: 5_000_000}})
	sub := p.Add(&spec.Node{Kind: spec.Subscribe, Rel: 7, RelName: "t", Cols: cols("k", "v")})
	up := p.Add(&spec.Node{Kind: spec.UpsertKey, Inputs: []int{sub}, Cols: cols("k", "v"), Key: []int{0}})
	vals := p.Add(&spec.Node{Kind: spec.Values, Cols: cols("x", "y"), Rows: []types.Row{
		{types.NewFloat(math.NaN()), types.NewString("it's")}, {types.Null, types.NewDecimal(-123456789, 4)}}})
	un := p.Add(&spec.Node{Kind: spec.Union, Inputs: []int{up, vals}, Cols: cols("k", "v")})
	flt := p.Add(&spec.Node{Kind: spec.Filter, Inputs: []int{tw}, Cols: cols("a", "b", "t", "window_start", "window_end"),
		Pred: &spec.Func{Name: "and", T: types.TBool, Args: []spec.Expr{
			&spec.Func{Name: ">", T: types.TBool, Args: []spec.Expr{&spec.ColRef{Idx: 0, T: i8, Name: "a"}, &spec.Const{D: types.NewInt(5), T: i8}}},
			&spec.Func{Name: "like", T: types.TBool, Args: []spec.Expr{&spec.ColRef{Idx: 1, T: txt}, &spec.Const{D: types.NewString("a'%"), T: txt}}}}}})
	join := p.Add(&spec.Node{Kind: spec.Join, Inputs: []int{flt, un}, Cols: cols("a", "v"), JoinKind: spec.LeftJoin,
		LeftKeys: []int{0}, RightKeys: []int{0}, JoinOut: []int{0, 6},
		Cond: &spec.Func{Name: "<>", T: types.TBool, Args: []spec.Expr{&spec.ColRef{Idx: 1, T: txt}, &spec.Cast{E: &spec.ColRef{Idx: 6, T: i8}, T: txt}}}})
	proj := p.Add(&spec.Node{Kind: spec.Project, Inputs: []int{join}, Cols: cols("a", "c", "iv"), Exprs: []spec.Expr{
		&spec.ColRef{Idx: 0, T: i8},
		&spec.Case{T: i8, Operand: &spec.ColRef{Idx: 1, T: i8}, Whens: []spec.When{{Cond: &spec.Const{D: types.NewInt(1), T: i8}, Then: &spec.Const{D: types.NewInt(10), T: i8}}}},
		&spec.Const{D: types.NewInterval(1, 2, 3), T: types.TInterval},
	}})
	agg := p.Add(&spec.Node{Kind: spec.Agg, Inputs: []int{proj}, Cols: cols("a", "n", "d", "m"), GroupBy: []int{0}, Aggs: []spec.AggCall{
		{Func: "count_star", Arg: -1, Filter: -1, T: i8}, {Func: "count", Arg: 1, Distinct: true, Filter: -1, T: i8}, {Func: "max", Arg: 1, Filter: 2, T: i8}},
		InputAppendOnly: false})
	win := p.Add(&spec.Node{Kind: spec.Window, Inputs: []int{agg}, Cols: cols("a", "n", "d", "m", "rn", "s"), PartitionBy: []int{0},
		Order: []spec.OrderItem{{Col: 1, Desc: true, NullsFirst: true}}, Limit: 3, LimitFunc: 0,
		WinFuncs: []spec.WindowCall{{Func: "row_number", Arg: -1, T: i8}, {Func: "sum", Arg: 2, Rows: true, Preceding: 2, T: i8}}})
	sf := p.Add(&spec.Node{Kind: spec.TableFunc, Inputs: []int{win}, Cols: cols("a", "n", "d", "m", "rn", "s", "g"),
		SetFuncs: []spec.SetFunc{{Name: "generate_series", Args: []spec.Expr{&spec.Const{D: types.NewInt(1), T: i8}, &spec.ColRef{Idx: 4, T: i8}}, Cols: 1}}})
	mat := p.Add(&spec.Node{Kind: spec.Materialize, Inputs: []int{sf}, Cols: cols("a", "n", "d", "m", "rn", "s", "g"), Rel: 42, RelName: "mv", Key: []int{0, 6}})
	p.Add(&spec.Node{Kind: spec.Sink, Inputs: []int{mat}, Cols: cols("a", "n", "d", "m", "rn", "s", "g"), RelName: "out", Key: []int{0},
		Sink: &spec.SinkSpec{SinkID: 43, Name: "out", Connector: "kafka", Options: map[string]string{"topic": "o"}, Format: "UPSERT", Encode: "JSON",
			FormatOpts: map[string]string{}, WriteMode: "upsert"}})
	p.AssignStateIDs()
	return p
}

// TestEncodeGolden: the stored form of the sample plan is exactly
// testdata/plan-v1.json, so that an encoding change is seen (and needs a
// new format version, README "Upgrades and formats"), and the golden file
// decodes to a plan that explains and encodes the same.
func TestEncodeGolden(t *testing.T) {
	p := samplePlan()
	b, err := spec.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "plan-v1.json")
	if *update {
		var ind bytes.Buffer
		if err := json.Indent(&ind, b, "", " "); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, append(ind.Bytes(), '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	indented, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer // the golden file is indented to be read
	if err := json.Compact(&compact, indented); err != nil {
		t.Fatal(err)
	}
	want := compact.Bytes()
	if string(b) != string(want) {
		t.Fatalf("Encode changed the plan-v1 encoding:\n got %s\nwant %s", b, want)
	}
	back, err := spec.Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	if got, exp := back.Explain(), p.Explain(); got != exp {
		t.Fatalf("decoded plan explains\n%s\nwant\n%s", got, exp)
	}
	if !reflect.DeepEqual(back.Nodes[4].Rows[1], p.Nodes[4].Rows[1]) || !math.IsNaN(back.Nodes[4].Rows[0][0].Float()) {
		t.Fatalf("Values rows decoded as %v", back.Nodes[4].Rows)
	}
	for i, n := range back.Nodes {
		if n.StateID != uint64(i+1) {
			t.Fatalf("node %d has StateID %d, want %d", i, n.StateID, i+1)
		}
	}
	if spec.PlanVersion(want) != 1 {
		t.Fatalf("golden plan version %d", spec.PlanVersion(want))
	}
}

// TestEncodeKeepsStateIDs: state ids stay with their nodes; a node added
// later gets a fresh id, never one a node already has.
func TestEncodeKeepsStateIDs(t *testing.T) {
	p := samplePlan()
	p.Nodes[3].StateID = 99
	b, err := spec.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := spec.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if back.Nodes[3].StateID != 99 {
		t.Fatalf("StateID %d after a round trip, want 99", back.Nodes[3].StateID)
	}
	back.Add(&spec.Node{Kind: spec.Filter, Inputs: []int{len(back.Nodes) - 1}})
	back.AssignStateIDs()
	if got := back.Nodes[len(back.Nodes)-1].StateID; got != 100 {
		t.Fatalf("new node got StateID %d, want 100", got)
	}
}

// TestEncodeRefusesVersions: a stored plan of a format this build does not
// read is 55000 naming both versions; damage is XX001; a subquery (batch
// only) cannot be stored (0A000).
func TestEncodeRefusesVersions(t *testing.T) {
	b, err := spec.Encode(samplePlan())
	if err != nil {
		t.Fatal(err)
	}
	newer := strings.Replace(string(b), `"version":1`, `"version":2`, 1)
	_, err = spec.Decode([]byte(newer))
	if e := pgerror.Flatten(err); e == nil || e.Code != pgcode.ObjectNotInPrerequisiteState || !strings.Contains(e.Message, "stored plan has format 2; this build reads plan formats 1 to 1") {
		t.Fatalf("newer plan: %v", err)
	}
	// A field a newer build added within format 1 is refused, not ignored.
	added := strings.Replace(string(b), `"version":1,`, `"version":1,"from_a_newer_build":true,`, 1)
	if added == string(b) {
		t.Fatalf("the sample plan does not start with its version: %s", b)
	}
	if e := pgerror.Flatten(mustErr(spec.Decode([]byte(added)))); e == nil || e.Code != pgcode.ObjectNotInPrerequisiteState || !strings.Contains(e.Message, "from_a_newer_build") {
		t.Fatalf("a plan with an unknown field: %v", e)
	}
	if _, err := spec.Decode([]byte(`{"version":1,"nodes":[{"Kind":4,"Inputs":[3]}]}`)); pgerror.Flatten(err).Code != pgcode.DataCorrupted {
		t.Fatalf("a node reading a later node: %v", err)
	}
	if _, err := spec.Decode(b[:len(b)/2]); pgerror.Flatten(err).Code != pgcode.DataCorrupted {
		t.Fatalf("truncated plan: %v", err)
	}
	p := &spec.Plan{}
	p.Add(&spec.Node{Kind: spec.Filter, Pred: &spec.Subquery{Mode: spec.ExistsSubquery, Plan: &spec.Plan{}}})
	if _, err := spec.Encode(p); pgerror.Flatten(err).Code != pgcode.FeatureNotSupported {
		t.Fatalf("subquery: %v", err)
	}
	if spec.PlanFormat != storage.PlanFormat || spec.ReadPlanFormat != storage.ReadFormat.Plan {
		t.Fatalf("spec plan formats %d..%d differ from storage's %d..%d", spec.ReadPlanFormat, spec.PlanFormat, storage.ReadFormat.Plan, storage.PlanFormat)
	}
}

func mustErr(_ *spec.Plan, err error) error { return err }

// TestEncodeWindowMaxJoin: a window max join and a window top count
// (kinds and fields added within plan format 1, omitted from the plans
// that do not use them) survive the stored form whole, and a build that does not know the
// field refuses the plan rather than run it as something else.
func TestEncodeWindowMaxJoin(t *testing.T) {
	cols := []types.Column{{Name: "auction", Type: types.TInt8}, {Name: "price", Type: types.TInt8}, {Name: "date_time", Type: types.TTimestamp}}
	p := &spec.Plan{}
	src := p.Add(&spec.Node{Kind: spec.SourceRead, Cols: cols, Source: &spec.SourceSpec{SourceID: 3, Name: "bid", Connector: "nexmark", Columns: cols,
		Watermark: &spec.WatermarkSpec{Col: 2, Delay: 4_000_000}}})
	p.Add(&spec.Node{Kind: spec.WindowMaxJoin, Inputs: []int{src}, Cols: cols[:2], WinMax: &spec.WinMaxSpec{Time: 2, Val: 1,
		Size: 10_000_000, Offset: 3, Lo: -10_000_000, Hi: 0, Out: []int{0, 3}}})
	p.Add(&spec.Node{Kind: spec.WindowTopCount, Inputs: []int{src}, Cols: cols[:2], WinTop: &spec.WinTopSpec{
		Win: spec.TimeWindowSpec{Hop: true, Col: 2, Size: 10_000_000, Slide: 2_000_000}, Time: 2, Key: 0, Out: []int{spec.TopKey, spec.TopCount}}})
	p.Add(&spec.Node{Kind: spec.Union, Inputs: []int{1, 2}, Cols: cols[:2]})
	p.AssignStateIDs()
	b, err := spec.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := spec.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Nodes[1].WinMax, p.Nodes[1].WinMax) || !reflect.DeepEqual(back.Nodes[2].WinTop, p.Nodes[2].WinTop) ||
		back.Explain() != p.Explain() {
		t.Fatalf("decoded %+v, %+v, want %+v, %+v", back.Nodes[1].WinMax, back.Nodes[2].WinTop, p.Nodes[1].WinMax, p.Nodes[2].WinTop)
	}
	if !strings.Contains(p.Explain(), "WindowTopCount the most count(*) per [$0] in each HopWindow $2 slide 2s size 10s") {
		t.Fatalf("explain: %s", p.Explain())
	}
	if !strings.Contains(p.Explain(), "WindowMaxJoin $1 = max($1) per tumble($2, 10s, offset 3µs) where $2 - window_end in [-10s, 0s]") {
		t.Fatalf("explain: %s", p.Explain())
	}
	unknown := strings.Replace(string(b), `"WinMax":`, `"WinMaxV2":`, 1)
	if _, err := spec.Decode([]byte(unknown)); pgerror.Flatten(err).Code != pgcode.ObjectNotInPrerequisiteState {
		t.Fatalf("a plan with an unknown field: %v", err)
	}
}
