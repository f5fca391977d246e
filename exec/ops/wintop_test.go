package ops_test

import (
	"fmt"
	"math/rand"
	"testing"

	"sluice/exec/flow"
	"sluice/exec/ops"
	"sluice/exec/spec"
	"sluice/sql/types"
)

// TestWindowTopCountAgainstBruteForce feeds seeded random rows (key, time;
// keys from a small range so that counts tie, some NULL keys and times)
// with a rising watermark to window top counts over TUMBLE and HOP windows
// with and without an offset, and after every batch compares the output
// so far with the query recomputed from all rows so far: per window the
// largest count of rows per key, and each key with that count. Along the
// way the operator is checkpointed into a real store and now and then
// restored from it; the windows the watermark closed leave its state.
func TestWindowTopCountAgainstBruteForce(t *testing.T) {
	for _, win := range []spec.TimeWindowSpec{
		{Col: 1, Size: 10},
		{Col: 1, Size: 10, Offset: 4},
		{Hop: true, Col: 1, Size: 10, Slide: 2}, // Nexmark q5's shape
		{Hop: true, Col: 1, Size: 9, Slide: 3, Offset: 1},
	} {
		t.Run(fmt.Sprintf("hop%v_size%d_slide%d_offset%d", win.Hop, win.Size, win.Slide, win.Offset), func(t *testing.T) {
			n := &spec.Node{Kind: spec.WindowTopCount, WinTop: &spec.WinTopSpec{Win: win, Time: 1, Key: 0,
				Out: []int{spec.TopKey, spec.TopCount, spec.TopStart, spec.TopEnd}}}
			ck := newCheckpointer(t)
			open := func() *ops.WindowTopCount {
				o, err := ops.NewWindowTopCount(n, 12, ck.db)
				if err != nil {
					t.Fatal(err)
				}
				return o
			}
			o := open()
			c := newCollector()
			rng := rand.New(rand.NewSource(win.Size*10 + win.Offset))
			var all []types.Row
			now, wm := int64(1000), int64(0)
			maxWins, restores, matched := 0, 0, 0
			for step := 0; step < 700; step++ {
				bt := types.NewBatch(4)
				for k := 1 + rng.Intn(4); k > 0; k-- {
					key, ts := types.NewInt(int64(rng.Intn(5))), types.NewTimestamp(max(wm, now+int64(rng.Intn(6))-4))
					switch rng.Intn(20) {
					case 0:
						key = types.Null
					case 1:
						ts = types.Null
					}
					r := types.Row{key, ts}
					d := int64(1)
					if rng.Intn(15) == 0 {
						d = 2
					}
					bt.Add(r, d)
					for ; d > 0; d-- {
						all = append(all, r)
					}
				}
				c.step(t, process(o, 0, batchChanges(bt)...))
				want := windowTopCountOf(all, win)
				c.wantTotal(t, want)
				matched = len(want)
				now += int64(rng.Intn(3))
				if rng.Intn(3) == 0 {
					wm = max(wm, now-1-int64(rng.Intn(3)))
					var fwd []flow.Watermark
					c.step(t, watermark(o, 0, flow.Watermark{Col: 1, Ts: wm}, &fwd))
					if len(fwd) != 0 {
						t.Fatalf("watermarks passed on: %v", fwd)
					}
					// The windows the watermark passed are gone.
					if _, _, end := o.StoredCounts(); end <= wm {
						t.Fatalf("a window ending at %d kept at watermark %d", end, wm)
					}
				}
				w, _, _ := o.StoredCounts()
				maxWins = max(maxWins, w)
				if checkpointMaybeRestore(t, rng, ck, o, c) {
					o = open()
					restores++
				}
			}
			if restores < 10 || matched < 50 {
				t.Fatalf("%d restores, %d rows: the run exercises too little", restores, matched)
			}
			// Open windows only: the run covers ~700 time units.
			if maxWins > 25 {
				t.Fatalf("state held up to %d windows", maxWins)
			}
		})
	}
}

// windowTopCountOf is the query recomputed: per window (start, end) of
// win, the count of rows per key (NULL a key like any), and the keys at
// the window's largest count, as (key, count, start, end).
func windowTopCountOf(rows []types.Row, win spec.TimeWindowSpec) bag {
	slide := win.Slide
	if !win.Hop {
		slide = win.Size
	}
	type wk struct {
		start int64
		key   string
	}
	counts := map[wk]int64{}
	keys := map[string]types.Datum{}
	most := map[int64]int64{}
	for _, r := range rows {
		if r[1].IsNull() {
			continue
		}
		last := ops.WindowStart(r[1].I, slide, win.Offset)
		for s := last - win.Size + slide; s <= last; s += slide {
			k := wk{s, fmtDatum(r[0])}
			keys[k.key] = r[0]
			counts[k]++
			most[s] = max(most[s], counts[k])
		}
	}
	out := bag{}
	for k, n := range counts {
		if n == most[k.start] {
			out.add(types.Row{keys[k.key], types.NewInt(n), types.NewTimestamp(k.start), types.NewTimestamp(k.start + win.Size)}, 1)
		}
	}
	return out
}
