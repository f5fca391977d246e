package spec

import (
	"slices"
	"testing"

	"sluice/sql/types"
)

// matchPlan builds Subscribe(rel 7) [→ Filter v > lim] → Agg(sum) →
// Project(scale) → Materialize.
func matchPlan(filter bool, lim, scale int64) *Plan {
	cols := []types.Column{{Name: "k", Type: types.TInt8}, {Name: "v", Type: types.TInt8}}
	p := &Plan{}
	in := p.Add(&Node{Kind: Subscribe, Rel: 7, RelName: "t", Cols: cols})
	if filter {
		in = p.Add(&Node{Kind: Filter, Inputs: []int{in}, Cols: cols,
			Pred: &Func{Name: ">", T: types.TBool, Args: []Expr{&ColRef{Idx: 1, T: types.TInt8}, &Const{D: types.NewInt(lim), T: types.TInt8}}}})
	}
	agg := p.Add(&Node{Kind: Agg, Inputs: []int{in}, Cols: cols, GroupBy: []int{0}, Aggs: []AggCall{{Func: "sum", Arg: 1, Filter: -1, T: types.TInt8}}})
	proj := p.Add(&Node{Kind: Project, Inputs: []int{agg}, Cols: cols,
		Exprs: []Expr{&ColRef{Idx: 0, T: types.TInt8}, &Func{Name: "*", T: types.TInt8, Args: []Expr{&ColRef{Idx: 1, T: types.TInt8}, &Const{D: types.NewInt(scale), T: types.TInt8}}}}})
	p.Add(&Node{Kind: Materialize, Rel: 9, Inputs: []int{proj}, Cols: cols})
	return p
}

func canReplay(n *Node) bool { return n.Kind == Subscribe || n.Kind == Agg }

func TestMatchPlans(t *testing.T) {
	old := matchPlan(false, 0, 1)
	old.AssignStateIDs() // 1 Subscribe, 2 Agg, 3 Project, 4 Materialize

	// Only the projection changed: the subscription and the aggregation
	// keep their state ids, the aggregation replays, the old projection's
	// state id is unused, the new one is above every old id.
	nw := matchPlan(false, 0, 2)
	m := MatchPlans(old, nw, canReplay)
	if m.Same || !slices.Equal(m.Kept, []bool{true, true, false, false}) || !slices.Equal(m.Replay, []bool{false, true, false, false}) {
		t.Fatalf("projection change: %+v", m)
	}
	if ids := []uint64{nw.Nodes[0].StateID, nw.Nodes[1].StateID, nw.Nodes[2].StateID, nw.Nodes[3].StateID}; !slices.Equal(ids, []uint64{1, 2, 5, 4}) {
		t.Fatalf("state ids %v", ids)
	}
	if !slices.Equal(m.Unused, []uint64{3}) {
		t.Fatalf("unused %v", m.Unused)
	}

	// A new filter below the aggregation: only the subscription is kept
	// (and replays: it backfills); the aggregation is built again.
	nw = matchPlan(true, 5, 1)
	m = MatchPlans(old, nw, canReplay)
	if !slices.Equal(m.Kept, []bool{true, false, false, false, false}) || !slices.Equal(m.Replay, []bool{true, false, false, false, false}) {
		t.Fatalf("filter change: %+v", m)
	}
	if !slices.Equal(m.Unused, []uint64{2, 3}) {
		t.Fatalf("unused %v", m.Unused)
	}

	// The same plan (names aside) is the same.
	nw = matchPlan(false, 0, 1)
	nw.Nodes[0].RelName = "renamed"
	if m = MatchPlans(old, nw, canReplay); !m.Same || len(m.Unused) != 0 {
		t.Fatalf("same plan: %+v", m)
	}

	// A kept node that cannot replay is rebuilt, and its input replays.
	m = MatchPlans(old, matchPlan(false, 0, 3), func(n *Node) bool { return n.Kind == Subscribe })
	if !slices.Equal(m.Kept, []bool{true, false, false, false}) || !slices.Equal(m.Replay, []bool{true, false, false, false}) {
		t.Fatalf("no replay: %+v", m)
	}
}
