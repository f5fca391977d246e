package ops_test

import (
	"testing"

	"sluice/exec/flow"
	"sluice/exec/ops"
	"sluice/exec/spec"
	"sluice/sql/types"
)

// TestTemporalFilterBoundaries drives a temporal filter with a fake clock:
// WHERE ts > now() - 10 AND ts <= now() + 5 (microseconds), so a row of
// time v is in the view exactly while now is in [v-5, v+10). Rows enter and
// leave at the first barrier at or after their boundary, not one
// microsecond early or late; a row that expired is forgotten, and so is its
// retraction; after a restart from the saved state the filter goes on from
// the saved time.
func TestTemporalFilterBoundaries(t *testing.T) {
	n := &spec.Node{Kind: spec.TemporalFilter, TimeBounds: []spec.TimeBound{
		{Col: 1, Op: ">", Offset: -10}, {Col: 1, Op: "<=", Offset: 5}}}
	now := int64(90)
	clock := func() int64 { return now }
	cp := newCheckpointer(t)
	f, err := ops.NewTemporalFilter(n, 7, cp.db, clock)
	if err != nil {
		t.Fatal(err)
	}
	out := newCollector()
	// The operator reads the microseconds of the bound column; integers
	// print more plainly in the bags than timestamps.
	ts := func(us int64) types.Datum { return types.NewInt(us) }
	a, b, c, z := row(1, ts(100)), row(2, ts(50)), row(3, ts(97)), row(4, types.Null)
	out.step(t, func(e *flow.Emitter) error {
		return f.Process(0, batchOf(ins(a), ins(b), ins(c), ins(z)), e)
	})
	out.wantDelta(t, bagOf()) // a from 95, c from 92; b ended at 60; z never
	at := func(us int64, want ...string) {
		t.Helper()
		now = us
		cp.checkpoint(t, []flow.Operator{f}, []*collector{out})
		out.wantDelta(t, bagOf(want...))
	}
	at(91)
	at(92, "(3,97)")
	at(94)
	at(95, "(1,100)")
	out.wantTotal(t, bagOf("(1,100)", "(3,97)"))
	at(106)
	at(107, "-(3,97)") // 97 > 107 - 10 no longer holds
	at(90)             // the clock went back: nothing changes

	// A restart reads the rows and the time back.
	f, err = ops.NewTemporalFilter(n, 7, cp.db, clock)
	if err != nil {
		t.Fatal(err)
	}
	if rows, cur := ops.TemporalState(f); rows != 1 || cur != 107 {
		t.Fatalf("restored %d rows at %d, want 1 row at 107", rows, cur)
	}
	at(109)
	at(110, "-(1,100)")
	out.wantTotal(t, bagOf())
	// The expired rows' retractions change nothing; a row inside the span
	// comes in at once.
	d := row(5, ts(112))
	out.step(t, func(e *flow.Emitter) error { return f.Process(0, batchOf(del(a), del(c), ins(d)), e) })
	out.wantDelta(t, bagOf("(5,112)"))
	at(122, "-(5,112)")
	if got := stateCounts(t, cp.db, 7); len(got) != 1 { // only the time is left
		t.Fatalf("state after every row expired: %v", got)
	}
}
