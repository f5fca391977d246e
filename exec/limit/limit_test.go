package limit

import (
	"context"
	"strings"
	"testing"

	"sluice/sql/pgerror"
	"sluice/sql/types"
)

func TestGuardBudget(t *testing.T) {
	g := New(context.Background(), 1000)
	if err := g.Grow(600); err != nil {
		t.Fatal(err)
	}
	sub := g.With(context.Background()) // a subquery shares the account
	err := sub.Grow(500)
	if pgerror.GetCode(err) != "53200" {
		t.Fatalf("Grow past the budget: %v, want 53200", err)
	}
	e := pgerror.Flatten(err)
	if e.Message != "out of memory" || !strings.Contains(e.Detail, "statement_mem = 1000B") || e.Hint == "" {
		t.Errorf("error = %q / %q / %q", e.Message, e.Detail, e.Hint)
	}
	if g.Used() != 600 {
		t.Errorf("a refused Grow was accounted: used %d", g.Used())
	}
	if err := g.Fits(500); err == nil {
		t.Errorf("Fits(500) with 600 of 1000 used passed")
	}
	g.Shrink(600)
	if err := sub.Grow(1000); err != nil || g.Used() != 1000 {
		t.Errorf("after Shrink: %v, used %d", err, g.Used())
	}
	var none *Guard // no statement: nothing is limited
	if none.Grow(1<<40) != nil || none.Err() != nil || none.Fits(1<<40) != nil {
		t.Errorf("a nil guard limited something")
	}
}

func TestGuardCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	g := New(ctx, 0)
	if g.Err() != nil {
		t.Fatal("Err before cancel")
	}
	cancel()
	if err := g.Err(); pgerror.GetCode(err) != "57014" {
		t.Fatalf("Err after cancel = %v, want 57014", err)
	}
	if g.Grow(1<<40) != nil {
		t.Errorf("a guard without a budget refused memory")
	}
}

func TestRowBytesAndFormat(t *testing.T) {
	small := RowBytes(types.Row{types.NewInt(1)})
	big := RowBytes(types.Row{types.NewString(strings.Repeat("x", 1000))})
	if big-small != 1000 {
		t.Errorf("a 1000-byte string adds %d bytes", big-small)
	}
	for n, want := range map[int64]string{64 << 20: "64MB", 1 << 30: "1GB", 1536 << 10: "1536kB", 1000: "1000B"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %s, want %s", n, got, want)
		}
	}
}
