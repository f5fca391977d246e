package job

import (
	"context"
	"math"
	"testing"

	"sluice/exec/spec"
	"sluice/sql/types"
)

// TestClockSeries drives the generate_series source with a fake clock:
// each point is read exactly when the clock (plus the offset) reaches it,
// never before, in order, once; a Seek to a saved position replays from
// there; the last representable point ends the series without overflow.
func TestClockSeries(t *testing.T) {
	var now int64
	mk := func(start, step, off int64, typ types.T) *clockSeries {
		c, err := newClockSeries(&spec.SourceSpec{Columns: []types.Column{{Name: "ts", Type: typ}},
			Options: map[string]string{"start": itoa(start), "step": itoa(step), "offset": itoa(off)}}, func() int64 { return now })
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	read := func(c *clockSeries, max int) []int64 {
		b := &types.Batch{}
		n, err := c.Read(context.Background(), b, max)
		if err != nil || n != len(b.Rows) {
			t.Fatalf("Read: %d, %v (%d rows)", n, err, len(b.Rows))
		}
		var out []int64
		for i, r := range b.Rows {
			if b.Diffs[i] != 1 {
				t.Fatalf("diff %d", b.Diffs[i])
			}
			out = append(out, r[0].I)
		}
		return out
	}
	c := mk(1000, 100, 0, types.TTimestampTZ)
	now = 999
	if got := read(c, 10); len(got) != 0 {
		t.Fatalf("before the start: %v", got)
	}
	now = 1000
	if got := read(c, 10); len(got) != 1 || got[0] != 1000 {
		t.Fatalf("at the start: %v", got)
	}
	now = 1299
	if got := read(c, 10); len(got) != 2 || got[0] != 1100 || got[1] != 1200 {
		t.Fatalf("at 1299: %v", got)
	}
	pos := c.Position()
	now = 1700
	if got := read(c, 2); len(got) != 2 || got[0] != 1300 || got[1] != 1400 {
		t.Fatalf("max 2: %v", got)
	}
	if got := read(c, 10); len(got) != 3 || got[2] != 1700 {
		t.Fatalf("the rest up to 1700: %v", got)
	}
	if err := c.Seek(pos); err != nil {
		t.Fatal(err)
	}
	if got := read(c, 100); len(got) != 5 || got[0] != 1300 || got[4] != 1700 {
		t.Fatalf("replay from the saved position: %v", got)
	}
	if m := c.Meter(); m.Lag[0].Behind != 0 {
		t.Fatalf("lag %d after reading all", m.Lag[0].Behind)
	}
	now = 2000
	if m := c.Meter(); m.Lag[0].Behind != 3 {
		t.Fatalf("lag %d at 2000, want 3", m.Lag[0].Behind)
	}

	// now() + 50: a point is read 50 µs before the clock reaches it;
	// now() - 50: 50 µs after.
	for _, off := range []int64{50, -50} {
		c := mk(0, 1000, off, types.TTimestamp)
		now = 1000 - off - 1
		if got := read(c, 10); len(got) != 1 || got[0] != 0 {
			t.Fatalf("offset %d at %d: %v", off, now, got)
		}
		now++
		if got := read(c, 10); len(got) != 1 || got[0] != 1000 {
			t.Fatalf("offset %d at %d: %v", off, now, got)
		}
		b := &types.Batch{}
		now = 5000 - off
		c.Read(context.Background(), b, 10)
		if b.Rows[0][0].K != types.KTimestamp {
			t.Fatalf("a timestamp series reads %v", b.Rows[0][0].K)
		}
	}

	// The end of time: no overflow, no point past it.
	c = mk(math.MaxInt64-250, 100, 0, types.TTimestampTZ)
	now = math.MaxInt64 - 1
	if got := read(c, 10); len(got) != 3 {
		t.Fatalf("near the end of time: %v", got)
	}
	if got := read(c, 10); len(got) != 0 {
		t.Fatalf("past the end of time: %v", got)
	}
	if err := c.Seek([]byte{1}); err == nil {
		t.Fatal("a corrupt position was accepted")
	}
}

func itoa(v int64) string { return types.FormatText(types.NewInt(v), types.TInt8) }
