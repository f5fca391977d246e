package ops

import (
	"encoding/binary"
	"math"

	"sluice/exec/flow"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// WindowTopCount computes, per TUMBLE or HOP window of an append-only
// input, the keys with the most rows and their count, ties included
// (spec.WindowTopCount, Nexmark q5's "hot items"). The plan it replaces
// counts the rows per key and window, takes the maximum of those counts
// per window over the counts' changes (keeping every count to retract
// it), and joins the counts to the maxima on the window, storing every
// (key, window, count) row; this operator keeps per open window one count
// per key, the largest count and the keys at it.
//
// The output is the join's, change by change: when a key's count reaches
// the window's largest it is emitted with that count; when a count
// passes the largest, the keys at the old one are retracted. A row with a
// NULL time is in no window; a NULL key is a key (GROUP BY's NULL group).
//
// A watermark on the time column closes the windows ending at or before
// it (rows to come, at or after the watermark, are in none of them):
// their state is dropped, their output stays downstream. The output
// carries no watermark.
//
// State: s/<op>/<window start, 8 bytes big-endian, sign flipped><key: 0
// for NULL, 1 and 8 bytes for an integer> = the count (varint); written at
// a barrier for the counts changed since, a closed window's range deleted.
type WindowTopCount struct {
	w      spec.WinTopSpec
	slide  int64
	opID   uint64
	db     *storage.DB // nil: a batch query
	wins   map[int64]*wtWindow
	gone   []int64 // windows closed since the last barrier
	wm     int64
	alloc  types.RowAlloc
	kbuf   []byte
	tkind  types.Datum // the time column's kind (timestamp or timestamptz)
	hasKnd bool
}

// wtWindow is an open window's counts: held in a slice indexed by a map
// of keys, neither holding pointers (the collector does not scan them).
type wtWindow struct {
	idx   map[int64]int32
	cs    []wtCount
	null  int32 // the NULL key's count in cs; -1: none
	max   int64
	top   []int32 // the counts at max
	dirty bool    // a count changed since the last barrier
}

type wtCount struct {
	key   int64
	n     int64
	null  bool // the NULL key's count
	dirty bool // changed since the last barrier
}

func (c *wtCount) datum() types.Datum {
	if c.null {
		return types.Null
	}
	return types.NewInt(c.key)
}

// NewWindowTopCount creates the operator of node n; db nil: a batch
// query. Saved state is read back.
func NewWindowTopCount(n *spec.Node, opID uint64, db *storage.DB) (*WindowTopCount, error) {
	w := *n.WinTop
	slide := w.Win.Slide
	if !w.Win.Hop {
		slide = w.Win.Size
	}
	o := &WindowTopCount{w: w, slide: slide, opID: opID, db: db, wins: map[int64]*wtWindow{}, wm: math.MinInt64}
	if db == nil {
		return o, nil
	}
	corrupt := pgerror.New(pgcode.DataCorrupted, "corrupt window top count state")
	err := db.Scan(storage.StatePrefix(opID), func(k, v []byte) error {
		uk := storage.StateUserKey(k)
		cnt, m := binary.Varint(v)
		if len(uk) < 9 || m <= 0 || cnt <= 0 {
			return corrupt
		}
		start := int64(binary.BigEndian.Uint64(uk) ^ 1<<63)
		key := types.Null
		switch {
		case len(uk) == 9 && uk[8] == 0:
		case len(uk) == 17 && uk[8] == 1:
			key = types.NewInt(int64(binary.BigEndian.Uint64(uk[9:])))
		default:
			return corrupt
		}
		win := o.window(start)
		win.cs[win.count(key)].n = cnt
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, win := range o.wins {
		for i, c := range win.cs {
			switch {
			case c.n > win.max:
				win.max, win.top = c.n, append(win.top[:0], int32(i))
			case c.n == win.max:
				win.top = append(win.top, int32(i))
			}
		}
	}
	return o, nil
}

func (o *WindowTopCount) window(start int64) *wtWindow {
	win := o.wins[start]
	if win == nil {
		win = &wtWindow{idx: map[int64]int32{}, null: -1}
		o.wins[start] = win
	}
	return win
}

// count returns the index of key's count in the window, creating it at 0.
func (win *wtWindow) count(key types.Datum) int32 {
	if key.IsNull() {
		if win.null < 0 {
			win.null = int32(len(win.cs))
			win.cs = append(win.cs, wtCount{null: true})
		}
		return win.null
	}
	i, ok := win.idx[key.I]
	if !ok {
		i = int32(len(win.cs))
		win.cs = append(win.cs, wtCount{key: key.I})
		win.idx[key.I] = i
	}
	return i
}

// Process implements flow.Operator.
func (o *WindowTopCount) Process(_ int, b *types.Batch, out *flow.Emitter) error {
	for i, r := range b.Rows {
		d := b.Diffs[i]
		if d < 0 {
			return errRetracted("window top count")
		}
		td := r[o.w.Time]
		if td.IsNull() || d == 0 {
			continue
		}
		if !o.hasKnd {
			o.tkind, o.hasKnd = td, true
		}
		key := r[o.w.Key]
		t := td.I
		last := WindowStart(t, o.slide, o.w.Win.Offset)
		for s := last - o.w.Win.Size + o.slide; s <= last; s += o.slide {
			if err := o.add(s, key, d, out); err != nil {
				return err
			}
		}
	}
	return nil
}

func (o *WindowTopCount) add(start int64, key types.Datum, d int64, out *flow.Emitter) error {
	win := o.window(start)
	i := win.count(key)
	c := &win.cs[i]
	c.n += d
	c.dirty, win.dirty = true, true
	switch {
	case c.n > win.max:
		for _, x := range win.top {
			if err := o.emit(out, win.cs[x].datum(), win.max, start, -1); err != nil {
				return err
			}
		}
		win.max, win.top = c.n, append(win.top[:0], i)
		return o.emit(out, c.datum(), c.n, start, 1)
	case c.n == win.max:
		win.top = append(win.top, i)
		return o.emit(out, c.datum(), c.n, start, 1)
	}
	return nil
}

// emit sends the output row of key at count n in the window starting at
// start.
func (o *WindowTopCount) emit(out *flow.Emitter, key types.Datum, n, start int64, d int64) error {
	r := o.alloc.Row(len(o.w.Out))
	for i, c := range o.w.Out {
		switch c {
		case spec.TopKey:
			r[i] = key
		case spec.TopCount:
			r[i] = types.NewInt(n)
		case spec.TopStart, spec.TopEnd:
			x := o.tkind
			x.I = start
			if c == spec.TopEnd {
				x.I = satAdd(start, o.w.Win.Size)
			}
			r[i] = x
		}
	}
	return out.Emit(r, d)
}

// OnWatermark implements flow.WatermarkOp: a watermark on the time column
// closes the windows that end at or before it. The output gets none.
func (o *WindowTopCount) OnWatermark(_ int, w flow.Watermark, _ *flow.Emitter) ([]flow.Watermark, error) {
	if w.Col != o.w.Time || w.Ts <= o.wm {
		return nil, nil
	}
	o.wm = w.Ts
	for start := range o.wins {
		if satAdd(start, o.w.Win.Size) <= w.Ts {
			delete(o.wins, start)
			o.gone = append(o.gone, start)
		}
	}
	return nil, nil
}

// windowKey returns (in kbuf) the state key prefix of the counts of the
// window starting at start: the start is the distribution key.
func (o *WindowTopCount) windowKey(start int64) []byte {
	o.kbuf = appendWindowStateKey(o.kbuf[:0], o.opID, start)
	return o.kbuf
}

// Checkpoint implements flow.Operator: the counts changed since the last
// barrier are written (a window closed before it writes none), the closed
// windows deleted.
func (o *WindowTopCount) Checkpoint(b *flow.Barrier, _ *flow.Emitter) error {
	var v []byte
	for start, win := range o.wins {
		if !win.dirty {
			continue
		}
		win.dirty = false
		for i := range win.cs {
			c := &win.cs[i]
			if !c.dirty {
				continue
			}
			c.dirty = false
			if o.db == nil {
				continue
			}
			k := o.windowKey(start)
			if c.null {
				k = append(k, 0)
			} else {
				k = binary.BigEndian.AppendUint64(append(k, 1), uint64(c.key))
			}
			o.kbuf = k
			v = binary.AppendVarint(v[:0], c.n)
			b.W.Set(k, v)
		}
	}
	if o.db != nil {
		for _, start := range o.gone {
			// A window's keys share its vnode: one range holds them all.
			lo := append([]byte(nil), o.windowKey(start)...)
			b.W.DeleteRange(lo, append(o.kbuf, 0xff))
		}
	}
	o.gone = o.gone[:0]
	return nil
}
