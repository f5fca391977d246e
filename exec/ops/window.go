package ops

import (
	"sort"

	"sluice/exec/flow"
	"sluice/exec/spec"
	"sluice/sql/types"
	"sluice/storage"
)

// Window computes window functions per partition, incrementally: it keeps
// each partition's rows in window order, and at each barrier (and at end
// of stream) it recomputes the partitions touched since and emits the
// difference between what it had emitted for them and what they give now:
// a session that many rows of an epoch extend is emitted once, not once
// per batch. With a Limit (Top-N: ROW_NUMBER() … WHERE rn <= N) only the
// first rows are output; when the input is append-only, rows that fall
// beyond the limit can never come back, so they are dropped from state,
// after every batch (so that a partition holds little more than N rows).
//
// State: s/<op>/<len(partition key)><partition key><row> = count, one key
// per distinct row, so that a barrier writes only the rows that came and
// went (count deltas, by Merge). Rows that arrive and leave between two
// barriers (most of an append-only Top-N's input) are never written.
type Window struct {
	// CopyRows: the input rows come in shared slabs (a source's, a
	// projection's): the rows kept are copied (the job sets it).
	CopyRows   bool
	n          *spec.Node
	appendOnly bool
	inCols     int
	opID       uint64 // state under s/<opID> (storage.AppendStateKey)
	parts      map[string]*wpart
	touched    map[string]struct{}
	kbuf       []byte
	calc       Agg // accumulator helpers for window aggregates
	// positional: every function is a rank (ROW_NUMBER, RANK,
	// DENSE_RANK): output rows are compared position by position.
	positional bool
	// whole: some call may depend on rows after the current row's peers
	// (window_frames.go): a changed partition is recomputed whole.
	whole bool
	// stateful: changes are saved at barriers (not a batch query).
	stateful bool
	// added holds the rows inserted since the last barrier, by their
	// first datum's address (the row object is the identity: a row that
	// leaves before the barrier is simply forgotten); pending the other
	// count changes of the barrier (rows without columns, rows that
	// were stored and leave).
	added   map[*types.Datum]addedRow
	pending []wchange
	// decKeys: the keys of this barrier's decrements of stored rows that
	// left copies behind; if the copies added since then leave too, the
	// key is deleted (see removed).
	decKeys map[string]struct{}
	// Session windows and watermarks (sess: the session function over
	// every partition's time column, nil if the node has others too): wm is
	// the input's watermark on the time column, flushedWm its value at the
	// last flush (hasWm, hasFlushedWm: received). A session that ended more
	// than its gap before wm can take no row any more: its rows leave the
	// state at the next barrier (the view keeps their output). Every output
	// row after a flush ends at or after the flush's watermark (a row
	// reaching a session ends it after the row's own time), so the
	// session_end column carries flushedWm on.
	// gate holds the output until the watermark closes it (EMIT ON
	// WINDOW CLOSE, windoweowc.go); nil if not.
	gate                *eowcGate
	skipping            bool // rows that can never be output are skipped (see skips)
	sess                *spec.WindowCall
	endCol              int // output column of session_end; -1 if none
	wm, flushedWm       int64
	hasWm, hasFlushedWm bool
	spill               windowSpill // windowspill.go
}

type addedRow struct {
	pk string
	r  types.Row
}

// wchange is a write of the barrier: d added to the key's count, or the
// key deleted (del: the row's last copy left; the count it would reach is
// zero, and a key of count zero would stay forever, see storage's
// countMerger).
type wchange struct {
	key []byte
	d   int64
	del bool
}

type wpart struct {
	rows    []types.Row // sorted by the window order, then the whole row
	emitted []types.Row // output rows currently emitted; emitted[i] is rows[i]'s
	// from is the first position of rows changed since the partition's
	// output was last computed (len(rows) when none).
	from int
	// Spilling (windowspill.go): mem estimates the partition's memory;
	// saved is the epoch that last wrote it; dirty says it changed since
	// the last barrier; ref that a row reached it since the last
	// eviction pass.
	mem        int64
	saved      uint64
	dirty, ref bool
	// full: an append-only Top-N's partition has left a row out (see
	// skips).
	full bool
}

// NewWindow creates the operator of node n with id opID; appendOnly says
// its input never retracts. db nil: a batch query.
func NewWindow(n *spec.Node, inCols int, appendOnly bool, opID uint64, db *storage.DB) (*Window, error) {
	w := &Window{n: n, appendOnly: appendOnly, inCols: inCols, opID: opID,
		parts: map[string]*wpart{}, touched: map[string]struct{}{},
		stateful: db != nil, added: map[*types.Datum]addedRow{}, decKeys: map[string]struct{}{}, positional: true}
	for _, f := range n.WinFuncs {
		if !rankFunc(f.Func) {
			w.positional = false
		}
		if wholePartition(f) {
			w.whole = true
		}
	}
	w.sess, w.endCol = sessionOf(n, inCols)
	if n.EOWC && len(n.Order) > 0 {
		g, err := newEOWCGate([]int{n.Order[0].Col}, opID, db)
		if err != nil {
			return nil, err
		}
		w.gate = g
	}
	w.skipping = w.trims() && w.positional && !w.whole && w.sess == nil && w.gate == nil
	if db == nil {
		return w, nil
	}
	if err := w.loadState(db); err != nil {
		return nil, err
	}
	return w, nil
}

// sessionOf returns the session function of node n if its window
// functions are all session bounds over one time column (its order) and
// one gap, with the output column of session_end (-1 if none); nil if not.
func sessionOf(n *spec.Node, inCols int) (*spec.WindowCall, int) {
	if len(n.WinFuncs) == 0 || len(n.Order) == 0 || n.Order[0].Col != n.WinFuncs[0].Arg {
		return nil, -1
	}
	first, endCol := &n.WinFuncs[0], -1
	for i, f := range n.WinFuncs {
		if (f.Func != "session_start" && f.Func != "session_end") || f.Arg != first.Arg || f.Gap != first.Gap {
			return nil, -1
		}
		if f.Func == "session_end" {
			endCol = inCols + i
		}
	}
	return first, endCol
}

// OnWatermark implements flow.WatermarkOp: a watermark on a session
// window's time column lets closed sessions go (at the next barrier), and
// the session_end column carries the watermark of the last flush on.
// Other window functions stop watermarks.
func (w *Window) OnWatermark(_ int, wm flow.Watermark, _ *flow.Emitter) ([]flow.Watermark, error) {
	if w.gate != nil {
		return w.gate.onWatermark(wm), nil
	}
	if w.sess == nil || wm.Col != w.sess.Arg {
		return nil, nil
	}
	w.wm, w.hasWm = wm.Ts, true
	if w.endCol < 0 || !w.hasFlushedWm {
		return nil, nil
	}
	return []flow.Watermark{{Col: w.endCol, Ts: w.flushedWm}}, nil
}

// dropClosedSessions removes from state the rows of the sessions that
// ended more than their gap before the watermark: a partition's leading
// sessions, in time order. Their output stays emitted.
func (w *Window) dropClosedSessions() {
	if w.sess == nil || !w.hasWm {
		return
	}
	col, gap, wm := w.sess.Arg, w.sess.Gap, types.NewTimestamp(w.wm)
	for pk, p := range w.parts {
		// The partition's output gives each session's end at once (no
		// walk through an open session) when it holds session_end.
		ends := w.endCol >= 0 && len(p.emitted) == len(p.rows)
		n := 0 // rows of closed sessions
		for n < len(p.rows) {
			if ends {
				if e := p.emitted[n][w.endCol]; e.IsNull() || e.I >= w.wm {
					break
				}
			}
			last := n // the session's last row
			for last+1 < len(p.rows) && !sessionBreak(p.rows[last][col], p.rows[last+1][col], gap) {
				last++
			}
			if t := p.rows[last][col]; t.IsNull() || !sessionBreak(t, wm, gap) {
				break
			}
			n = last + 1
		}
		if n == 0 {
			continue
		}
		w.markDirty(pk, p)
		for _, r := range p.rows[:n] {
			// Equal rows are adjacent: a copy left behind is rows[n].
			w.removed(pk, r, n == len(p.rows) || w.cmp(p.rows[n], r) != 0)
			w.charge(p, -rowMem(r))
		}
		clear(p.rows[:n])
		p.rows = p.rows[n:]
		m := min(n, len(p.emitted))
		w.charge(p, -int64(m)*w.outMem())
		p.emitted = p.emitted[m:]
		p.from = len(p.rows)
		if len(p.rows) == 0 {
			w.dropPart(pk, p)
		}
	}
}

// rowKey returns the state key of row r of partition pk.
func (w *Window) rowKey(pk string, r types.Row) []byte { return w.appendRowKey(nil, pk, r) }

// appendRowKey appends the state key of row r of partition pk to buf.
func (w *Window) appendRowKey(buf []byte, pk string, r types.Row) []byte {
	return types.EncodeRow(storage.AppendStateKeyLen(buf, w.opID, pk), r)
}

// inserted notes that row r joined partition pk.
func (w *Window) inserted(pk string, r types.Row) {
	if !w.stateful {
		return
	}
	if len(r) > 0 {
		if _, dup := w.added[&r[0]]; !dup {
			w.added[&r[0]] = addedRow{pk: pk, r: r}
			return
		}
	}
	w.pending = append(w.pending, wchange{key: w.rowKey(pk, r), d: 1})
}

// removed notes that row r (the object that was in the partition) left
// partition pk; last says no equal row is left in it. The last copy of a
// stored row deletes its key rather than count it down to zero.
func (w *Window) removed(pk string, r types.Row, last bool) {
	if !w.stateful {
		return
	}
	if len(r) > 0 {
		if _, ok := w.added[&r[0]]; ok {
			delete(w.added, &r[0])
			// A row added since the barrier was not written, but stored
			// copies counted down before it may have been: their key goes.
			if last && len(w.decKeys) > 0 {
				key := w.rowKey(pk, r)
				if _, dec := w.decKeys[string(key)]; dec {
					w.pending = append(w.pending, wchange{key: key, del: true})
				}
			}
			return
		}
	}
	key := w.rowKey(pk, r)
	if last {
		w.pending = append(w.pending, wchange{key: key, del: true})
		return
	}
	w.decKeys[string(key)] = struct{}{}
	w.pending = append(w.pending, wchange{key: key, d: -1})
}

// cmp orders two input rows: window order, then the whole row (a stable
// tie-break, so ROW_NUMBER is deterministic).
func (w *Window) cmp(a, b types.Row) int {
	if c := compareOrder(a, b, w.n.Order); c != 0 {
		return c
	}
	for i := range a {
		if c := compareNullsLast(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

func compareNullsLast(a, b types.Datum) int {
	switch {
	case a.IsNull() && b.IsNull():
		return 0
	case a.IsNull():
		return 1
	case b.IsNull():
		return -1
	}
	return types.Compare(a, b)
}

// compareOrder compares rows by order as Postgres sorts: NULLs are larger
// than any value unless NullsFirst.
func compareOrder(a, b types.Row, order []spec.OrderItem) int {
	for _, o := range order {
		x, y := a[o.Col], b[o.Col]
		var c int
		switch {
		case x.IsNull() && y.IsNull():
			c = 0
		case x.IsNull():
			c = 1
			if o.NullsFirst {
				c = -1
			}
		case y.IsNull():
			c = -1
			if o.NullsFirst {
				c = 1
			}
		default:
			c = types.Compare(x, y)
			if o.Desc {
				c = -c
			}
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// Process implements flow.Operator.
func (w *Window) Process(_ int, b *types.Batch, out *flow.Emitter) error {
	for i, r := range b.Rows {
		w.kbuf = w.kbuf[:0]
		for _, c := range w.n.PartitionBy {
			w.kbuf = types.AppendKey(w.kbuf, r[c])
		}
		p, err := w.partition(w.kbuf)
		if err != nil {
			return err
		}
		if w.skips(p, r, b.Diffs[i]) {
			continue
		}
		k := string(w.kbuf)
		if _, ok := w.touched[k]; !ok {
			w.touched[k] = struct{}{}
			p.from = len(p.rows)
		}
		if b.Diffs[i] > 0 && w.CopyRows {
			// The row is kept, maybe long: in an allocation of its own,
			// not in the slab of the rows it came with, which it would
			// keep whole (types.RowAlloc).
			r = r.Copy()
		}
		for d := b.Diffs[i]; d > 0; d-- {
			j := sort.Search(len(p.rows), func(j int) bool { return w.cmp(p.rows[j], r) > 0 })
			p.rows = append(p.rows, nil)
			copy(p.rows[j+1:], p.rows[j:])
			p.rows[j] = r
			p.from = min(p.from, j)
			w.charge(p, rowMem(r))
			w.inserted(k, r)
		}
		for d := b.Diffs[i]; d < 0; d++ {
			j := sort.Search(len(p.rows), func(j int) bool { return w.cmp(p.rows[j], r) >= 0 })
			if j < len(p.rows) && w.cmp(p.rows[j], r) == 0 {
				gone := p.rows[j]
				p.rows = append(p.rows[:j], p.rows[j+1:]...)
				w.charge(p, -rowMem(gone))
				// Equal rows are adjacent: a copy left behind is now rows[j].
				w.removed(k, gone, j == len(p.rows) || w.cmp(p.rows[j], gone) != 0)
				p.from = min(p.from, j)
			}
		}
	}
	if w.spill.bytes-w.spill.reported > reportStep {
		w.report()
	}
	if w.trims() || len(w.touched) > maxPending {
		return w.Flush(out)
	}
	return nil
}

// trims reports whether rows beyond the limit are dropped as they fall
// out of the output (an append-only Top-N).
func (w *Window) trims() bool { return w.appendOnly && w.n.Limit >= 0 }

// skips reports whether inserted row r can never be output, so that it
// need not enter partition p at all: an append-only Top-N of rank
// functions whose partition has left a row out (its output is full: every
// row strictly after the last one output, in window order, ranks beyond
// the limit, and rows only come), and r comes strictly after that row.
// Nexmark q9's bids below their auction's best so far go no further.
func (w *Window) skips(p *wpart, r types.Row, d int64) bool {
	return d > 0 && p.full && w.skipping && len(p.emitted) > 0 && compareOrder(r, p.emitted[len(p.emitted)-1], w.n.Order) > 0
}

// Finish implements flow.Finisher (batch queries).
func (w *Window) Finish(out *flow.Emitter) error { return w.Flush(out) }

// Flush emits the changes of the partitions touched since the last flush
// (EMIT ON WINDOW CLOSE: hands them to the gate, which emits the rows the
// watermark has closed).
func (w *Window) Flush(out *flow.Emitter) error {
	if w.gate != nil {
		pend := flow.NewEmitter(w.gate.add)
		if err := w.flush(pend); err != nil {
			return err
		}
		if err := pend.Flush(); err != nil {
			return err
		}
		return w.gate.release(out)
	}
	return w.flush(out)
}

func (w *Window) flush(out *flow.Emitter) error {
	w.flushedWm, w.hasFlushedWm = w.wm, w.hasWm
	for k := range w.touched {
		p := w.parts[k]
		// Output before the first changed row stays as it was (see
		// stableBefore): recompute and diff only the rest.
		keep := min(w.stableBefore(p), len(p.emitted))
		fresh := w.computeFrom(p, keep)
		diff := w.diffMerge
		if w.positional {
			diff = diffPositional
		}
		if err := diff(p.emitted[keep:], fresh, out); err != nil {
			return err
		}
		clear(p.emitted[keep:])
		was := len(p.emitted)
		p.emitted = append(p.emitted[:keep], fresh...) // the kept prefix stays in place
		w.charge(p, int64(len(p.emitted)-was)*w.outMem())
		if w.positional {
			w.shareRows(p, keep)
		}
		p.from = len(p.rows)
		if w.trims() {
			// Rows beyond the limit never re-enter an append-only input's
			// top rows: keep only those output (and their peers).
			p.full = p.full || len(p.emitted) < len(p.rows)
			w.trim(k, p, p.emitted)
		}
		if len(p.rows) == 0 {
			w.dropPart(k, p)
		}
	}
	clear(w.touched)
	return nil
}

// shareRows makes partition p's rows from position from on that are
// output the leading columns of their output rows (rank functions only:
// output row i is row i's values and then its ranks), so that a row and
// its output are one allocation, not two. Rows added since the last
// barrier are noted by their first value's address (added): the note
// moves to the new row.
func (w *Window) shareRows(p *wpart, from int) {
	for i := from; i < len(p.emitted) && i < len(p.rows); i++ {
		old := p.rows[i]
		if len(old) == 0 || len(p.emitted[i]) < len(old) {
			continue
		}
		nr := p.emitted[i][:len(old):len(old)]
		if &nr[0] == &old[0] {
			continue
		}
		if a, ok := w.added[&old[0]]; ok {
			delete(w.added, &old[0])
			a.r = nr
			w.added[&nr[0]] = a
		}
		p.rows[i] = nr
	}
}

// trim drops partition pk's rows after the last one output.
func (w *Window) trim(pk string, p *wpart, now []types.Row) {
	if len(now) == 0 || len(now) >= len(p.rows) {
		return
	}
	last := now[len(now)-1][:w.inCols]
	j := sort.Search(len(p.rows), func(j int) bool { return w.cmp(p.rows[j], last) > 0 })
	if j < len(p.rows) {
		for _, r := range p.rows[j:] {
			// rows[j-1] <= last < r: no copy of r stays.
			w.removed(pk, r, true)
			w.charge(p, -rowMem(r))
		}
		clear(p.rows[j:])
		p.rows = p.rows[:j]
	}
}

// diffPositional emits the change from old to now, rows compared position
// by position: rank functions give every row a distinct output (its rank
// or its position), so a row that moved has changed anyway.
func diffPositional(old, now []types.Row, out *flow.Emitter) error {
	for i := 0; i < max(len(old), len(now)); i++ {
		if i < len(old) && i < len(now) && rowsEqual(old[i], now[i]) {
			continue
		}
		if i < len(old) {
			if err := out.Emit(old[i], -1); err != nil {
				return err
			}
		}
		if i < len(now) {
			if err := out.Emit(now[i], 1); err != nil {
				return err
			}
		}
	}
	return nil
}

// diffMerge emits the change from old to now, output rows in the
// partition's order: it walks both, pairing rows of equal input (a row
// whose window values changed is retracted and emitted again) and emitting
// the unpaired ones. Whatever the pairing, the change is exactly now − old.
func (w *Window) diffMerge(old, now []types.Row, out *flow.Emitter) error {
	i, j := 0, 0
	for i < len(old) || j < len(now) {
		c := 0
		switch {
		case i == len(old):
			c = 1
		case j == len(now):
			c = -1
		default:
			c = w.cmp(old[i][:w.inCols], now[j][:w.inCols])
		}
		if c == 0 && rowsEqual(old[i], now[j]) {
			i, j = i+1, j+1
			continue
		}
		if c <= 0 {
			if err := out.Emit(old[i], -1); err != nil {
				return err
			}
			i++
		}
		if c >= 0 {
			if err := out.Emit(now[j], 1); err != nil {
				return err
			}
			j++
		}
	}
	return nil
}

// stableBefore returns how many leading rows of p keep their output after
// the changes since the last computation, which start at p.from: a row's
// ROW_NUMBER, RANK, DENSE_RANK and ROWS/RANGE frame aggregate depend only
// on the rows before it and its peers; its session on its own session; an
// aggregate without ORDER BY on the whole partition.
func (w *Window) stableBefore(p *wpart) int {
	if w.whole {
		return 0
	}
	i := p.from
	if i > len(p.rows) {
		i = len(p.rows)
	}
	for _, f := range w.n.WinFuncs {
		switch {
		case f.Func == "session_start" || f.Func == "session_end":
			// Back to the start of the session of the row before the
			// change (a new row can merge it with the next one): sessions
			// are computed from a session's start.
			for i > 0 {
				i--
				if i == 0 || sessionBreak(p.rows[i-1][f.Arg], p.rows[i][f.Arg], f.Gap) {
					break
				}
			}
			return i
		case !rankFunc(f.Func) && len(w.n.Order) == 0:
			return 0 // an aggregate over the whole partition
		}
	}
	// Back to the first peer of the row before the change: a change at i
	// alters the ranks and RANGE frames of that row's peers (a deleted row
	// may have been one of them).
	if i > 0 && len(w.n.Order) > 0 {
		i--
		for i > 0 && compareOrder(p.rows[i-1], p.rows[i], w.n.Order) == 0 {
			i--
		}
	}
	return i
}

// sessionBreak reports whether a session ends between times a and b
// (b after a): more than gap apart, or a NULL.
func sessionBreak(a, b types.Datum, gap int64) bool {
	return a.IsNull() || b.IsNull() || b.I-a.I > gap
}

func rankFunc(f string) bool { return f == "row_number" || f == "rank" || f == "dense_rank" }

// compute returns the partition's output rows in window order.
func (w *Window) compute(p *wpart) []types.Row { return w.computeFrom(p, 0) }

// computeFrom returns the output rows of p from row start on (start must
// begin a run of peers, so that ranks restart correctly from it).
func (w *Window) computeFrom(p *wpart, start int) []types.Row {
	n := w.n
	var out []types.Row
	rank, dense := int64(0), int64(0)
	if start > 0 && start <= len(p.emitted) {
		// Carry the ranks of the row before start.
		prev := p.emitted[start-1]
		for fi, f := range n.WinFuncs {
			switch f.Func {
			case "rank":
				rank = prev[len(prev)-len(n.WinFuncs)+fi].I
			case "dense_rank":
				dense = prev[len(prev)-len(n.WinFuncs)+fi].I
			}
		}
	}
	var sessStart, sessEnd []types.Datum
	for _, f := range n.WinFuncs {
		if f.Func == "session_start" || f.Func == "session_end" {
			sessStart, sessEnd = sessions(p.rows[start:], f)
			break
		}
	}
	// The output rows share one allocation (they are replaced together
	// when the partition changes before them).
	var pg *peerGroups
	if w.whole {
		pg = w.peers(p.rows)
	}
	var slab []types.Datum
	for i := start; i < len(p.rows); i++ {
		r := p.rows[i]
		peerOfPrev := i > 0 && compareOrder(p.rows[i-1], r, n.Order) == 0
		if !peerOfPrev {
			rank = int64(i) + 1
			dense++
		}
		width := len(r) + len(n.WinFuncs)
		if len(slab) < width {
			rows := len(p.rows) - i
			if n.Limit >= 0 {
				// Rows past the limit's position are output only as peers
				// of its last rank (rare): they get slabs of their own.
				rows = min(rows, max(1, int(n.Limit)-i))
			}
			slab = make([]types.Datum, rows*width)
		}
		row := types.Row(slab[:0:width])
		slab = slab[width:]
		row = append(row, r...)
		for k, f := range n.WinFuncs {
			switch f.Func {
			case "row_number":
				row = append(row, types.NewInt(int64(i)+1))
			case "rank":
				row = append(row, types.NewInt(rank))
			case "dense_rank":
				row = append(row, types.NewInt(dense))
			case "session_start":
				row = append(row, sessStart[i-start])
			case "session_end":
				row = append(row, sessEnd[i-start])
			default:
				if pg != nil && wholePartition(f) {
					row = append(row, w.windowValue(p.rows, i, &n.WinFuncs[k], pg))
					break
				}
				row = append(row, w.frameAgg(p.rows, i, f))
			}
		}
		if n.Limit >= 0 {
			v := row[len(r)+n.LimitFunc].I
			if v > n.Limit {
				break // ranks only grow along the order
			}
		}
		out = append(out, row)
	}
	return out
}

// sessions returns each row's session bounds: rows (sorted by time) whose
// times are at most f.Gap apart share a session from the first time to
// the last time plus the gap. A NULL time has NULL bounds.
func sessions(rows []types.Row, f spec.WindowCall) (start, end []types.Datum) {
	start = make([]types.Datum, len(rows))
	end = make([]types.Datum, len(rows))
	for i := 0; i < len(rows); {
		t := rows[i][f.Arg]
		if t.IsNull() {
			start[i], end[i] = types.Null, types.Null
			i++
			continue
		}
		j := i
		last := t.I
		for j+1 < len(rows) && !rows[j+1][f.Arg].IsNull() && rows[j+1][f.Arg].I-last <= f.Gap {
			j++
			last = rows[j][f.Arg].I
		}
		s, e := t, t
		e.I = last + f.Gap
		for k := i; k <= j; k++ {
			start[k], end[k] = s, e
		}
		i = j + 1
	}
	return start, end
}

// frameAgg computes aggregate f over the frame of row i.
func (w *Window) frameAgg(rows []types.Row, i int, f spec.WindowCall) types.Datum {
	lo, hi := 0, len(rows)-1
	switch {
	case f.Rows:
		hi = i
		if f.Preceding >= 0 && int64(i)-f.Preceding > 0 {
			lo = i - int(f.Preceding)
		}
	case len(w.n.Order) > 0:
		// RANGE UNBOUNDED PRECEDING .. CURRENT ROW: through the last peer.
		hi = i
		for hi+1 < len(rows) && compareOrder(rows[hi+1], rows[i], w.n.Order) == 0 {
			hi++
		}
	}
	call := spec.AggCall{Func: f.Func, Arg: f.Arg, Filter: -1, T: f.T}
	ac := acc{} // the frame only grows: min and max keep the extreme
	for j := lo; j <= hi; j++ {
		_ = w.calc.update(&ac, &call, rows[j], 1)
	}
	return resultOf(&ac, &call, nil, 0)
}

// Checkpoint implements flow.Operator: it emits the touched partitions'
// changes and writes the count changes of the rows that came and went
// since the last barrier.
func (w *Window) Checkpoint(b *flow.Barrier, out *flow.Emitter) error {
	if err := w.Flush(out); err != nil {
		return err
	}
	w.dropClosedSessions()
	// The changes in their order, then the rows added since the barrier
	// and still here (a deletion of a key comes before a copy added
	// after it). They go to a run of the epoch (storage.Run: sorted
	// stably at the commit, written as an sstable when the epoch is
	// large) rather than into its batch, which grew by copying and was
	// copied again into the commit (Nexmark q11: 13% of the CPU).
	if len(w.pending) > 0 || len(w.added) > 0 {
		run := b.W.NewRun()
		for _, c := range w.pending {
			if c.del {
				run.Delete(c.key)
			} else {
				run.Merge(c.key, c.d)
			}
		}
		for _, a := range w.added {
			w.kbuf = w.appendRowKey(w.kbuf[:0], a.pk, a.r)
			run.Merge(w.kbuf, 1) // the run copies the key
		}
	}
	clear(w.pending)
	w.pending = w.pending[:0]
	clear(w.decKeys)
	clear(w.added)
	if w.gate != nil && w.stateful {
		w.gate.save(b.W)
	}
	if w.spill.db != nil {
		committed := w.spill.db.CommittedEpoch()
		w.settle(b.Epoch, committed)
		w.evict(committed)
	}
	return nil
}
