package ops

import (
	"encoding/binary"
	"slices"
	"sort"
	"strings"

	"sluice/exec/flow"
	"sluice/exec/limit"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// Agg is a hash aggregation that handles insertions and retractions: for
// every group touched since the last flush it retracts the group's previous
// output row and emits the new one. It flushes at each barrier (before the
// barrier goes on, so the epoch's output is complete when it commits), at
// end of stream, for groups a watermark closes, and when too many groups
// are pending: a group changed by many rows of an epoch emits one change,
// not one per batch.
//
// min/max over an input with retractions and DISTINCT keep a multiset of
// the group's values, so they stay right when the current extreme is
// deleted. The aggregates that keep a multiset of the same argument share
// one (setClass): count(DISTINCT x) with several FILTERs looks each value
// up once, and its entries count the rows per aggregate.
type Agg struct {
	groupBy []int
	aggs    []spec.AggCall
	// classes: the multiset-keeping aggregates grouped by argument; set[j]
	// is aggregate j's class and slot in it, or -1.
	classes []setClass
	set     []setRef
	plain   []int  // the aggregates without a multiset
	opID    uint64 // state under s/<opID> (storage.AppendStateKey)
	groups  map[string]*group
	dirty   map[string]struct{}
	// fresh lists the groups created this epoch that the store cannot hold
	// (group.fresh): they are dirty without being in dirty, so that one
	// created and closed between two checkpoints (most groups of a
	// windowed aggregation) costs no map insertion and deletion; the
	// checkpoint puts those still alive into dirty.
	fresh   []*group
	freshAt int // len(fresh) at which the closed ones are taken out
	global  bool
	touched []*group // groups changed since the last flush, in first-touch order
	// eowc: emit a group's row only when a watermark closes it (EMIT ON
	// WINDOW CLOSE), never before and never retracted.
	eowc bool
	// windows indexes the groups by the value of group column gi, for
	// each gi that has received a watermark.
	windows map[int]*valueIndex
	// cleared holds groups dropped since the last checkpoint (their
	// stored set entries are deleted then).
	cleared map[string]struct{}
	// appendOnly: the input never retracts, so min and max keep only the
	// extreme value (in acc.d), not a multiset of every value.
	appendOnly bool
	encBuf     []byte // encodeGroup's buffer
	kb         []byte // update's key buffer
	ekBuf      []byte // Checkpoint's set entry key buffer
	evBuf      []byte // encodeEntry's buffer
	// Guard, when set (a batch query), is charged for each new group.
	Guard *limit.Guard
	// foldErr is the first error of folding an aggregate's inputs
	// (aggfold.go): emitGroup returns it, failing the job.
	foldErr error
	spill   aggSpill // aggspill.go
	// Replay: Start emits the current rows of every group (a view
	// changed in place, spec.Match.Replay).
	Replay bool
	// distinctSums: some aggregate is an exactDistinctSum, whose sum is
	// kept in its accumulator as values enter and leave its set; a group
	// header then ends with a marker saying so (a header of a build before
	// lacks it, and its sums are computed again from the set: resum).
	distinctSums bool
	// tail: group headers end with the marker and the per-scale counts of
	// the numeric sums (scaledSum); set with distinctSums or any such sum.
	tail bool
	// win, when set, windows the input before the Agg sees it (FuseWindow).
	win *fusedWindow
}

// scaledSum reports whether ag is a sum or avg of numeric values: its
// result has the largest scale among the current inputs, as PostgreSQL's
// has (a sum kept as inputs come and go would keep the scale of a value
// deleted since), so its accumulator counts the inputs per scale
// (countScale).
func scaledSum(ag *spec.AggCall) bool {
	return (ag.Func == "sum" || ag.Func == "avg") && ag.T.Fam == types.Numeric
}

// countScale counts d more inputs of the scale of decimal v in ac. ext[0]
// is 1 while the counts are known, -1 when not (a group of an older build
// that did not count them, until it is empty again).
func countScale(ac *acc, v types.Datum, d int64) {
	if !types.DecIsFinite(v) {
		return
	}
	xs := ac.stats()
	if len(xs.ext) == 0 {
		xs.ext = []int64{1}
	}
	if xs.ext[0] < 0 {
		return
	}
	sc := int(v.X)
	if sc == 0 { // ext[0] is the flag; the largest scale is at least 0
		return
	}
	if sc >= len(xs.ext) {
		xs.ext = append(xs.ext, make([]int64, sc+1-len(xs.ext))...)
	}
	xs.ext[sc] += d
}

// knownScale returns the largest scale among ac's current inputs, if it
// counts them.
func knownScale(ac *acc) (int32, bool) {
	ext := ac.ext()
	if len(ext) == 0 || ext[0] != 1 {
		return 0, false
	}
	for sc := len(ext) - 1; sc > 0; sc-- {
		if ext[sc] > 0 {
			return int32(sc), true
		}
	}
	return 0, true
}

// exactDistinctSum reports whether ag is a sum or avg of DISTINCT integer
// or numeric values: its sum is kept exactly as values enter and leave the
// set, so its set is asked only whether a value is in it and can spill
// entry by entry. (Float sums are computed from the whole set, in one
// order, as PostgreSQL does.)
func exactDistinctSum(ag *spec.AggCall) bool {
	return ag.Distinct && (ag.Func == "sum" || ag.Func == "avg") && (ag.T.Fam == types.Int8 || ag.T.Fam == types.Numeric)
}

// legacyDistinctSums makes the aggregation behave as the builds before
// exactDistinctSum (tests: their state must be read right).
var legacyDistinctSums bool

// addSum adds d times v to the integer or decimal sum of ac, counting a
// decimal's scale (scaledSum); false if v is of another kind.
func (a *Agg) addSum(ac *acc, ag *spec.AggCall, v types.Datum, d int64) (bool, error) {
	switch v.K {
	case types.KInt:
		if ag.T.Fam == types.Numeric {
			return true, a.addDec(ac, types.DecFromInt(v.I), d)
		}
		ac.i += v.I * d
		return true, nil
	case types.KDecimal:
		if a.tail && ag.T.Fam == types.Numeric {
			countScale(ac, v, d)
		}
		return true, a.addDec(ac, v, d)
	}
	return false, nil
}

// distinctAdd adds d times DISTINCT value v to the sum of ac.
func (a *Agg) distinctAdd(ac *acc, ag *spec.AggCall, v types.Datum, d int64) error {
	_, err := a.addSum(ac, ag, v, d)
	return err
}

// maxPending is how many groups may wait for a flush before Process
// flushes on its own (it bounds the old rows held for their retraction).
var maxPending = 1 << 16

// setSlots is the most aggregates one multiset serves.
const setSlots = 4

// setClass is a multiset shared by the aggregates in slots, all of
// argument column arg.
type setClass struct {
	arg   int
	slots []int // aggregate indexes
	// countOnly: every aggregate of the class is a count(DISTINCT …), whose
	// result is its counter: the multiset is only asked whether a value is
	// in it, so its entries can be evicted one by one (aggspill.go).
	countOnly bool
	// entries: the set's entries are evicted one by one: every aggregate
	// of the class is a count(DISTINCT …), or a min or max over a type whose
	// key encoding orders as Compare does (aggextreme.go), which keeps
	// the entries at its end(s) of the order in memory. mins and maxs say
	// which ends.
	entries, mins, maxs bool
	// dir is -1 for a slot of a min, 1 for a max, else 0.
	dir [setSlots]int8
}

type setRef struct{ class, slot int }

type group struct {
	key     types.Row
	count   int64 // rows in the group
	accs    []acc
	sets    []vset // one per class
	emitted bool   // the global group's row has been emitted
	k       string // the group's key in groups
	// touch is set while the group is in touched (waiting for a flush);
	// dirty while its key is in dirty (the current epoch).
	touch *touch
	dirty bool
	// saved is the last epoch that wrote the group; ref is set when a row
	// touches it, and cleared by an eviction pass (aggspill.go).
	saved uint64
	ref   bool
	// resum: the header had no distinctSums marker (an older build's):
	// the exact DISTINCT sums are computed from the stored set (resum).
	resum bool
	// stored: the store may hold the group's header (it was read from
	// there, written by a checkpoint, or its key was dropped earlier in
	// this epoch): dropping it writes a deletion.
	stored bool
	// fresh: created this epoch with a key the store does not hold, and
	// listed in Agg.fresh instead of dirty until the checkpoint.
	fresh bool
	// tbuf is touch's memory while the group is pending.
	tbuf touch
}

// A group holds one acc per aggregate, so the rarely used parts sit
// behind pointers (nil until used): 40 bytes an aggregate instead of 192
// for a count or an integer sum.
type acc struct {
	n  int64        // non-null inputs; of a DISTINCT aggregate, its distinct values
	i  int64        // integer sum
	f  float64      // float sum
	dp *types.Datum // decimal or interval sum, append-only min/max (nil: NULL)
	xs *accStats    // the state of the aggregates of aggstats.go
}

// accStats is the sum of squares and the per-scale or per-bit counts of
// the aggregates of aggstats.go (hasExtState).
type accStats struct {
	d2  types.Datum
	ext []int64
}

// d returns the decimal sum, interval sum or extreme (NULL if none).
func (ac *acc) d() types.Datum {
	if ac.dp == nil {
		return types.Null
	}
	return *ac.dp
}

// setD sets what d returns (in place once it has been set).
func (ac *acc) setD(v types.Datum) {
	if ac.dp == nil {
		if v.IsNull() {
			return
		}
		ac.dp = new(types.Datum)
	}
	*ac.dp = v
}

// stats returns the aggstats state, made on first use.
func (ac *acc) stats() *accStats {
	if ac.xs == nil {
		ac.xs = &accStats{}
	}
	return ac.xs
}

// d2 returns the sum of squares (NULL if none).
func (ac *acc) d2() types.Datum {
	if ac.xs == nil {
		return types.Null
	}
	return ac.xs.d2
}

// ext returns the per-scale or per-bit counts (nil if none).
func (ac *acc) ext() []int64 {
	if ac.xs == nil {
		return nil
	}
	return ac.xs.ext
}

// vset is one class's multiset in a group.
type vset struct {
	m map[string]*setEntry
	// changed lists the keys of entries changed since the last checkpoint,
	// once per entry that carries the changed flag (a key recurs if its
	// entry went and came back). A small set is stored inside its group's
	// header; a large one (split) as one key per entry, of which a
	// checkpoint writes only the changed ones.
	changed []string
	split   bool
	// spilled: the store may hold entries of the set that are not in
	// memory (evicted, or not read back with the group); the set then
	// stays split, and an entry whose count drops to zero stays as a
	// tombstone until its deletion is committed. cold: such entries may be
	// missing from the filter of evicted entries, so a value not in memory
	// is looked up in the store (aggspill.go).
	spilled, cold bool
	// ext bounds the stored entries not in memory of a spilled set of a
	// min/max class (aggextreme.go); it means nothing while !spilled.
	ext *extent
	// top caches the extreme entry in memory of each min/max slot whose
	// bit is set in known (bestEntry); nil: none.
	top   [setSlots]*setEntry
	known uint8
	// gone is the last epoch that deleted entries of the set from the store
	// that memory no longer holds (not spilled, a set drops its deleted
	// entries): the set may spill once it is committed.
	gone uint64
}

// splitSetAt is the size from which a multiset is stored entry by entry.
var splitSetAt = 16

// setEntry is one value of a multiset with its count per slot (the rows
// with the value that passed the slot's aggregate's FILTER); it lives while
// a count is not zero.
type setEntry struct {
	v       types.Datum
	n       [setSlots]int64
	k       string // the entry's key in its set
	saved   uint64 // the epoch that last wrote the entry (split sets)
	changed bool   // k is in the set's changed list
	ref     bool   // touched since the last eviction pass
}

// zero reports whether every count of e is zero: a tombstone.
func (e *setEntry) zero() bool { return e.n == [setSlots]int64{} }

type touch struct {
	old    types.Row
	hadOld bool
}

// keepsSet reports whether aggregate ag needs a multiset of its values.
func keepsSet(ag *spec.AggCall, appendOnly bool) bool {
	return ag.Distinct || (!appendOnly && (ag.Func == "min" || ag.Func == "max")) || IsFoldAgg(ag.Func) || IsOrderedSetAgg(ag.Func)
}

// NewAgg creates the aggregation of node n with state under opID, loading
// saved state from db (nil db: a batch query without state).
func NewAgg(n *spec.Node, opID uint64, db *storage.DB) (*Agg, error) {
	a := &Agg{
		groupBy: n.GroupBy, aggs: n.Aggs,
		opID:   opID,
		groups: map[string]*group{}, dirty: map[string]struct{}{},
		global: len(n.GroupBy) == 0, eowc: n.EOWC, appendOnly: n.InputAppendOnly,
		windows: map[int]*valueIndex{},
		set:     make([]setRef, len(n.Aggs)),
	}
	for j := range a.aggs {
		ag := &a.aggs[j]
		a.distinctSums = a.distinctSums || (exactDistinctSum(ag) && !legacyDistinctSums)
		a.tail = a.tail || (!legacyDistinctSums && (exactDistinctSum(ag) || scaledSum(ag)))
		if !keepsSet(ag, a.appendOnly) {
			a.set[j] = setRef{class: -1}
			a.plain = append(a.plain, j)
			continue
		}
		c := slices.IndexFunc(a.classes, func(c setClass) bool { return c.arg == ag.Arg && len(c.slots) < setSlots })
		if c < 0 {
			c = len(a.classes)
			a.classes = append(a.classes, setClass{arg: ag.Arg})
		}
		a.set[j] = setRef{class: c, slot: len(a.classes[c].slots)}
		a.classes[c].slots = append(a.classes[c].slots, j)
	}
	for c := range a.classes {
		cl := &a.classes[c]
		cl.countOnly = !slices.ContainsFunc(cl.slots, func(j int) bool {
			return a.aggs[j].Func != "count" || !a.aggs[j].Distinct
		})
		cl.entries = !slices.ContainsFunc(cl.slots, func(j int) bool {
			ag := &a.aggs[j]
			return !(ag.Func == "count" && ag.Distinct) && !(exactDistinctSum(ag) && !legacyDistinctSums) &&
				!(isExtreme(ag.Func) && keyOrdered(ag.T.Fam))
		})
		for s, j := range cl.slots {
			switch a.aggs[j].Func {
			case "min":
				cl.mins, cl.dir[s] = true, -1
			case "max":
				cl.maxs, cl.dir[s] = true, 1
			}
		}
	}
	if db != nil {
		if err := a.loadState(db); err != nil {
			return nil, err
		}
	}
	if a.global && a.groups[""] == nil {
		// A full state cache may have left the one group in the store.
		g, err := a.lookup(nil)
		if err != nil {
			return nil, err
		}
		if g == nil {
			a.groups[""] = a.newGroup(nil)
			a.groups[""].stored = true // kept simple: the one group
			a.dirty[""] = struct{}{}
		}
	}
	return a, nil
}

// restoreEntry puts a loaded entry into class ci's set of g (the header,
// loaded before, holds the aggregates' counts).
func (a *Agg) restoreEntry(g *group, ci int, e *setEntry) {
	vs := &g.sets[ci]
	if vs.m == nil {
		vs.m = map[string]*setEntry{}
	}
	vs.m[e.k] = e
}

func (a *Agg) newGroup(key types.Row) *group {
	g := &group{key: key, accs: make([]acc, len(a.aggs))}
	if len(a.classes) > 0 {
		g.sets = make([]vset, len(a.classes))
	}
	return g
}

// groupBytes estimates the memory of one group: its key (row and
// encoded), its accumulators and the map entry.
func groupBytes(key types.Row, keyLen, naggs int) int64 {
	return limit.RowBytes(key) + 2*int64(keyLen) + int64(naggs)*96 + 160
}

// FuseWindow makes the Agg take the input of TimeWindow tw, its only
// input, and expand it itself (fusedWindow); nil undoes it. The job's
// runtime fuses them; the plan keeps both nodes.
func (a *Agg) FuseWindow(tw *TimeWindow) {
	a.win = nil
	if tw != nil {
		a.win = &fusedWindow{tw: tw, wm: map[int]int64{}}
	}
}

// Process implements flow.Operator.
func (a *Agg) Process(_ int, b *types.Batch, out *flow.Emitter) error {
	if a.win != nil {
		return a.win.expand(b, func(b *types.Batch) error { return a.process(b, out) })
	}
	return a.process(b, out)
}

func (a *Agg) process(b *types.Batch, out *flow.Emitter) error {
	var kbuf []byte
	for i, r := range b.Rows {
		diff := b.Diffs[i]
		kbuf = kbuf[:0]
		for _, c := range a.groupBy {
			kbuf = types.AppendKey(kbuf, r[c])
		}
		g, err := a.lookup(kbuf)
		if err != nil {
			return err
		}
		switch {
		case g == nil:
			key := make(types.Row, len(a.groupBy))
			for j, c := range a.groupBy {
				key[j] = r[c]
			}
			if err := a.chargeGroup(key, kbuf); err != nil {
				return err
			}
			g = a.newGroup(key)
			g.k = string(kbuf)
			_, g.stored = a.dirty[g.k] // dropped earlier this epoch: maybe stored
			if !g.stored {
				g.fresh, g.dirty = true, true
				a.addFresh(g)
			}
			a.groups[g.k] = g
			a.indexGroup(g.k, g)
			g.tbuf = touch{}
			g.touch = &g.tbuf
			a.touched = append(a.touched, g)
		case g.touch == nil:
			g.tbuf = touch{}
			t := &g.tbuf
			if !a.eowc && (g.count > 0 || (a.global && g.emitted)) {
				t.old, t.hadOld = a.output(g), true
			}
			g.touch = t
			a.touched = append(a.touched, g)
		}
		if !g.dirty {
			g.dirty = true
			a.dirty[g.k] = struct{}{}
		}
		g.ref = true
		g.count += diff
		for _, j := range a.plain {
			if err := a.update(&g.accs[j], &a.aggs[j], r, diff); err != nil {
				return err
			}
		}
		for c := range a.classes {
			if err := a.updateSet(g, c, r, diff); err != nil {
				return err
			}
		}
	}
	if a.eowc {
		// Nothing is emitted before the window closes.
		for _, g := range a.touched {
			g.touch = nil
			if g.count == 0 {
				a.dropGroup(g.k, g)
			}
		}
		clear(a.touched)
		a.touched = a.touched[:0]
		return nil
	}
	if a.mem()-a.spill.reported > reportStep {
		a.report()
	}
	if len(a.touched) > maxPending {
		return a.Flush(out)
	}
	return nil
}

// indexGroup adds a new group to the window indexes.
func (a *Agg) indexGroup(k string, g *group) {
	for gi, idx := range a.windows {
		if d := g.key[gi]; !d.IsNull() {
			idx.add(d.I, k)
		}
	}
}

// addFresh lists fresh group g. The groups closed since they were listed
// are taken out whenever the list has doubled, so that it holds about as
// many groups as are alive.
func (a *Agg) addFresh(g *group) {
	if len(a.fresh) >= a.freshAt {
		live := a.fresh[:0]
		for _, f := range a.fresh {
			if f.fresh {
				live = append(live, f)
			}
		}
		clear(a.fresh[len(live):])
		a.fresh = live
		a.freshAt = max(1024, 2*len(live))
	}
	a.fresh = append(a.fresh, g)
}

// dropGroup deletes group k from memory and, at the next checkpoint, from
// the store.
func (a *Agg) dropGroup(k string, g *group) {
	delete(a.groups, k)
	a.spill.bytes -= a.groupMem(g)
	switch {
	case g.stored:
		a.dirty[k] = struct{}{}
	case g.fresh:
		// Not in dirty: nothing to write, nothing to delete (addFresh
		// lets go of it).
		g.fresh = false
	default:
		// Nothing of it was written (created since the last checkpoint,
		// and k was not dirty then, or stored would be set): there is
		// nothing to delete, and k is dirty only through this group.
		delete(a.dirty, k)
	}
	for i := range g.sets {
		if g.sets[i].split {
			a.markCleared(k) // its entries are stored apart
			break
		}
	}
	for gi, idx := range a.windows {
		if d := g.key[gi]; !d.IsNull() {
			idx.remove(d.I, k)
		}
	}
}

// OnWatermark implements flow.WatermarkOp. A watermark on a group-by
// column closes the groups below it: no row of theirs can come any more.
// With EMIT ON WINDOW CLOSE their final rows are emitted now, otherwise
// their pending changes; either way their state is deleted (the view keeps
// the rows already emitted). The group column keeps the watermark: the
// groups still pending are at or above it.
func (a *Agg) OnWatermark(_ int, w flow.Watermark, out *flow.Emitter) ([]flow.Watermark, error) {
	if a.win == nil {
		return a.onWatermark(w, out, nil)
	}
	var fwd []flow.Watermark
	for _, x := range a.win.watermarks(w) {
		var err error
		if fwd, err = a.onWatermark(x, out, fwd); err != nil {
			return nil, err
		}
	}
	return fwd, nil
}

// onWatermark is OnWatermark for a watermark on column w.Col of the
// Agg's own input (after a fused window), appending to fwd.
func (a *Agg) onWatermark(w flow.Watermark, out *flow.Emitter, fwd []flow.Watermark) ([]flow.Watermark, error) {
	for gi, c := range a.groupBy {
		if c != w.Col {
			continue
		}
		fwd = append(fwd, flow.Watermark{Col: gi, Ts: w.Ts})
		if err := a.closeBelow(gi, w.Ts, out); err != nil {
			return nil, err
		}
	}
	return fwd, nil
}

// closeBelow closes the groups whose group column gi is below ts.
func (a *Agg) closeBelow(gi int, ts int64, out *flow.Emitter) error {
	idx := a.windows[gi]
	if idx == nil {
		// First watermark on this column: index the groups.
		idx = newValueIndex()
		if a.appendOnly {
			// Groups go only when closed (they never empty).
			idx = newListIndex()
		}
		a.windows[gi] = idx
		for k, g := range a.groups {
			if d := g.key[gi]; !d.IsNull() {
				idx.add(d.I, k)
			}
		}
		err := a.storedKeys(func(k string, key types.Row) {
			if d := key[gi]; !d.IsNull() {
				idx.add(d.I, k)
			}
		})
		if err != nil {
			return err
		}
	}
	closed := idx.takeBelow(ts)
	if len(closed) == 0 {
		return nil
	}
	sort.Strings(closed)
	for i, k := range closed {
		if i > 0 && k == closed[i-1] {
			continue // a list index's key added twice
		}
		g, err := a.lookup([]byte(k))
		if err != nil {
			return err
		}
		if g == nil {
			continue
		}
		if g.touch != nil {
			// Pending: its change goes out before the watermark does.
			if err := a.emitGroup(g, out); err != nil {
				return err
			}
			if a.groups[k] != g {
				continue // emptied, and dropped
			}
		}
		if a.eowc && g.count > 0 {
			if err := out.Emit(a.output(g), 1); err != nil {
				return err
			}
		}
		a.dropGroup(k, g)
	}
	return nil
}

// Groups returns the number of groups held in memory.
func (a *Agg) Groups() int { return len(a.groups) }

// Flush emits the changes of the groups touched since the last flush: per
// group, the retraction of its previous row and its new row (nothing if
// they are equal).
func (a *Agg) Flush(out *flow.Emitter) error {
	// In key order: the output does not depend on the input's order.
	slices.SortFunc(a.touched, func(x, y *group) int { return strings.Compare(x.k, y.k) })
	for _, g := range a.touched {
		if g.touch == nil {
			continue // flushed already, by the watermark that closed it
		}
		if err := a.emitGroup(g, out); err != nil {
			return err
		}
	}
	clear(a.touched)
	a.touched = a.touched[:0]
	return nil
}

// emitGroup emits touched group g's change and drops it if it emptied.
func (a *Agg) emitGroup(g *group, out *flow.Emitter) error {
	t := g.touch
	g.touch = nil
	var nr types.Row
	has := g.count > 0 || a.global
	if has {
		nr = a.output(g)
		if a.foldErr != nil {
			return a.foldErr
		}
	}
	if !(t.hadOld && has && rowsEqual(t.old, nr)) {
		if t.hadOld {
			if err := out.Emit(t.old, -1); err != nil {
				return err
			}
		}
		if has {
			if err := out.Emit(nr, 1); err != nil {
				return err
			}
			g.emitted = true
		}
	}
	if g.count == 0 && !a.global {
		a.dropGroup(g.k, g)
	}
	return nil
}

func rowsEqual(x, y types.Row) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i].K != y[i].K || types.Compare(x[i], y[i]) != 0 {
			return false
		}
		if x[i].K == types.KDecimal && x[i].X != y[i].X {
			return false
		}
	}
	return true
}

// updateSet adds diff copies of row r to class c's multiset of group g,
// counted in the slots whose FILTER r passes.
func (a *Agg) updateSet(g *group, c int, r types.Row, diff int64) error {
	cl := &a.classes[c]
	v := r[cl.arg]
	if v.IsNull() {
		return nil
	}
	var pass [setSlots]bool
	any := false
	for s, j := range cl.slots {
		if f := a.aggs[j].Filter; f < 0 || r[f].Bool() {
			pass[s], any = true, true
		}
	}
	if !any {
		return nil
	}
	vs := &g.sets[c]
	if vs.m == nil {
		vs.m = map[string]*setEntry{}
	}
	a.kb = types.AppendKey(a.kb[:0], v)
	e := vs.m[string(a.kb)]
	if e == nil && vs.spilled && vs.ext.inside(string(a.kb)) {
		var err error
		if e, err = a.readEntry(g, c, a.kb); err != nil {
			return err
		}
	}
	if e == nil {
		k := string(a.kb)
		e = &setEntry{v: v, k: k}
		vs.m[k] = e
		a.spill.bytes += entryBytes(k)
	}
	if vs.split && !e.changed { // inline sets are written whole
		e.changed = true
		vs.changed = append(vs.changed, e.k)
	}
	e.ref = true
	live := false
	var gained, lost uint8
	for s, j := range cl.slots {
		if pass[s] {
			old := e.n[s]
			e.n[s] += diff
			if old == 0 && e.n[s] != 0 {
				gained |= 1 << s
			} else if old != 0 && e.n[s] == 0 {
				lost |= 1 << s
			}
			ac := &g.accs[j]
			ag := &a.aggs[j]
			sum := a.distinctSums && exactDistinctSum(ag)
			if !ag.Distinct {
				ac.n += diff
			} else if old == 0 {
				ac.n++
				if sum {
					if err := a.distinctAdd(ac, ag, e.v, 1); err != nil {
						return err
					}
				}
			} else if e.n[s] == 0 {
				ac.n--
				if sum {
					if err := a.distinctAdd(ac, ag, e.v, -1); err != nil {
						return err
					}
					if ac.n == 0 {
						ac.xs = nil // no inputs: the scales are known again
					}
				}
			}
		}
		live = live || e.n[s] != 0
	}
	if vs.known != 0 {
		cl.offer(vs, e, gained, lost)
	}
	if !live && !vs.spilled { // a spilled set keeps a tombstone
		delete(vs.m, e.k)
		a.spill.bytes -= entryBytes(e.k)
	}
	return nil
}

// update applies diff copies of row r to the accumulator of an aggregate
// without a multiset.
func (a *Agg) update(ac *acc, ag *spec.AggCall, r types.Row, diff int64) error {
	if ag.Filter >= 0 && !r[ag.Filter].Bool() {
		return nil
	}
	if ag.Func == "count_star" {
		ac.n += diff
		return nil
	}
	v := r[ag.Arg]
	if v.IsNull() {
		return nil
	}
	if ag.Func == "min" || ag.Func == "max" {
		// Append-only input: the extreme so far.
		if diff < 0 {
			return pgerror.New(pgcode.Internal, "a retraction reached an aggregation planned for an append-only input")
		}
		if ac.n == 0 {
			ac.setD(v)
		} else if c := types.Compare(v, *ac.dp); (ag.Func == "min" && c < 0) || (ag.Func == "max" && c > 0) {
			*ac.dp = v
		}
		ac.n += diff
		return nil
	}
	ac.n += diff
	switch {
	case isStatsAgg(ag.Func):
		return updateStats(ac, v, diff)
	case isBitAgg(ag.Func):
		updateBits(ac, ag.Func, v, diff)
		return nil
	}
	switch ag.Func {
	case "sum", "avg":
		if ok, err := a.addSum(ac, ag, v, diff); ok {
			if ac.n == 0 && a.tail && scaledSum(ag) {
				ac.xs = nil // no inputs: the scales are known again
			}
			return err
		}
		switch v.K {
		case types.KFloat:
			ac.f += v.Float() * float64(diff)
		case types.KInterval:
			// Interval sums keep months/days/micros in d.
			if ac.dp == nil || ac.dp.K != types.KInterval {
				ac.setD(types.NewInterval(0, 0, 0))
			}
			ac.dp.M += v.M * int32(diff)
			ac.dp.X += v.X * int32(diff)
			ac.dp.I += v.I * diff
		default:
			return pgerror.New(pgcode.DatatypeMismatch, "cannot sum values of this type")
		}
	}
	return nil
}

func (a *Agg) addDec(ac *acc, v types.Datum, diff int64) error {
	if ac.dp == nil || ac.dp.K != types.KDecimal {
		ac.setD(types.NewDecimal(0, 0))
	}
	var err error
	var sum types.Datum
	if diff == 1 {
		sum, err = types.DecAdd(*ac.dp, v)
	} else if diff == -1 {
		sum, err = types.DecSub(*ac.dp, v)
	} else {
		var m types.Datum
		m, err = types.DecMul(v, types.DecFromInt(diff))
		if err == nil {
			sum, err = types.DecAdd(*ac.dp, m)
		}
	}
	if err == nil {
		*ac.dp = sum
	}
	return err
}

// output computes the group's row: group values then aggregates.
func (a *Agg) output(g *group) types.Row {
	r := make(types.Row, 0, len(g.key)+len(a.aggs))
	r = append(r, g.key...)
	for j := range a.aggs {
		r = append(r, a.result(g, j))
	}
	return r
}

// result computes aggregate j of group g.
func (a *Agg) result(g *group, j int) types.Datum {
	if ref := a.set[j]; ref.class >= 0 && IsFoldAgg(a.aggs[j].Func) {
		d, err := foldSet(&a.aggs[j], &g.sets[ref.class], ref.slot)
		if err != nil && a.foldErr == nil {
			a.foldErr = err
		}
		return d
	}
	ag := &a.aggs[j]
	if isStatsAgg(ag.Func) || isBitAgg(ag.Func) || IsOrderedSetAgg(ag.Func) {
		d, err := a.resultExt(g, j)
		if err != nil && a.foldErr == nil {
			a.foldErr = err
		}
		return d
	}
	if ref := a.set[j]; ref.class >= 0 {
		if vs := &g.sets[ref.class]; vs.spilled && vs.ext != nil && isExtreme(ag.Func) {
			d, err := a.extreme(g, ref.class, ref.slot, ag.Func == "max")
			if err != nil && a.foldErr == nil {
				a.foldErr = err
			}
			return d
		}
		return resultOf(&g.accs[j], ag, &g.sets[ref.class], ref.slot)
	}
	return resultOf(&g.accs[j], ag, nil, 0)
}

// resultExt computes aggregate j of group g, one of aggstats.go's.
func (a *Agg) resultExt(g *group, j int) (types.Datum, error) {
	ag := &a.aggs[j]
	ref := a.set[j]
	if IsOrderedSetAgg(ag.Func) {
		return orderedSetResult(ag, &g.sets[ref.class], ref.slot)
	}
	ac := &g.accs[j]
	if ref.class >= 0 { // DISTINCT
		d, err := distinctAcc(ag, &g.sets[ref.class], ref.slot)
		if err != nil {
			return types.Null, err
		}
		ac = &d
	}
	if isBitAgg(ag.Func) {
		return bitsResult(ac, ag.Func), nil
	}
	return statsResult(ac, ag)
}

// resultOf computes aggregate ag from its accumulator and, if it keeps
// one, slot slot of its multiset vs.
func resultOf(ac *acc, ag *spec.AggCall, vs *vset, slot int) types.Datum {
	switch ag.Func {
	case "count_star", "count":
		return types.NewInt(ac.n)
	case "min", "max":
		if vs == nil {
			if ac.n == 0 {
				return types.Null
			}
			return ac.d()
		}
		best := bestEntry(vs, slot, ag.Func == "max")
		if best == nil {
			return types.Null
		}
		return best.v
	}
	// sum / avg, possibly DISTINCT
	n := ac.n
	sumI, sumF, sumD := ac.i, ac.f, ac.d()
	if ag.Distinct && (legacyDistinctSums || !exactDistinctSum(ag)) {
		sumI, sumF, sumD = 0, 0, types.Datum{}
		for _, e := range vs.m {
			if e.n[slot] == 0 {
				continue
			}
			switch e.v.K {
			case types.KInt:
				if ag.T.Fam == types.Numeric {
					sumD = decAddSafe(sumD, types.DecFromInt(e.v.I))
				} else {
					sumI += e.v.I
				}
			case types.KFloat:
				sumF += e.v.Float()
			case types.KDecimal:
				sumD = decAddSafe(sumD, e.v)
			}
		}
	}
	if n == 0 {
		return types.Null
	}
	var sum types.Datum
	switch {
	case sumD.K == types.KInterval:
		sum = sumD
	case ag.T.Fam == types.Float8 || ag.T.Fam == types.Float4:
		if sumD.K == types.KDecimal {
			sum = types.NewFloat(types.DecToFloat(sumD) + sumF)
		} else {
			sum = types.NewFloat(sumF + float64(sumI))
		}
	case ag.T.Fam == types.Numeric:
		if sumD.K != types.KDecimal {
			sumD = types.DecFromInt(sumI)
		}
		if sc, ok := knownScale(ac); ok && types.DecIsFinite(sumD) && sumD.X > sc {
			// Exact: the digits past sc are zeros.
			if d, err := types.DecRound(sumD, sc); err == nil {
				sumD = d
			}
		}
		sum = sumD
	default:
		sum = types.NewInt(sumI)
	}
	if ag.Func == "sum" {
		return sum
	}
	// avg
	switch sum.K {
	case types.KFloat:
		return types.NewFloat(sum.Float() / float64(n))
	case types.KInterval:
		return types.NewInterval(sum.M/int32(n), sum.X/int32(n), sum.I/n)
	case types.KInt:
		sum = types.DecFromInt(sum.I)
	}
	q, err := types.DecDiv(sum, types.DecFromInt(n))
	if err != nil {
		return types.Null
	}
	return q
}

func decAddSafe(a, b types.Datum) types.Datum {
	if a.K != types.KDecimal {
		return b
	}
	s, err := types.DecAdd(a, b)
	if err != nil {
		return a
	}
	return s
}

// Checkpoint implements flow.Operator: the pending changes are flushed,
// global aggregates emit their first row, and dirty groups are written.
func (a *Agg) Checkpoint(b *flow.Barrier, out *flow.Emitter) error {
	if err := a.Flush(out); err != nil {
		return err
	}
	if a.global {
		if g := a.groups[""]; !g.emitted {
			g.emitted = true
			a.dirty[""] = struct{}{}
			if err := out.Emit(a.output(g), 1); err != nil {
				return err
			}
		}
	}
	committed := uint64(0)
	if a.spill.db != nil {
		committed = a.spill.db.CommittedEpoch()
	}
	a.settle(committed)
	for _, g := range a.fresh {
		if g.fresh { // still open: dropGroup clears it, and eviction skips dirty groups
			a.dirty[g.k] = struct{}{}
		}
		g.fresh = false
	}
	clear(a.fresh)
	a.fresh = a.fresh[:0]
	for k := range a.dirty {
		key := a.headerKey(k)
		g, ok := a.groups[k]
		if ok {
			g.dirty = false
			g.saved = b.Epoch
			g.stored = true
		} else {
			a.markGone(k, b.Epoch)
		}
		_, cleared := a.cleared[k]
		if cleared {
			sp := a.setPrefix(k)
			b.W.DeleteRange(sp, storage.PrefixEnd(sp))
		}
		if !ok {
			b.W.Delete(key)
			continue
		}
		for c := range g.sets {
			vs := &g.sets[c]
			if cleared && vs.split {
				vs.split, vs.spilled, vs.cold, vs.ext = false, false, false, nil
				vs.gone = b.Epoch
				vs.changed = vs.changed[:0] // rewritten whole below if still large
			}
			// The batch copies keys and values: one buffer serves each.
			ek := a.setEntryKeyInto(a.ekBuf[:0], k, c)
			ek0 := len(ek)
			switch {
			case len(vs.m) >= splitSetAt && !vs.split:
				// Becomes split: every entry goes out once.
				vs.split = true
				for vk, e := range vs.m {
					ek = append(ek[:ek0], vk...)
					b.W.Set(ek, a.encodeEntry(c, e))
					e.changed = false
					e.saved = b.Epoch
				}
			case len(vs.m) < splitSetAt/2 && vs.split && !vs.spilled:
				// Back to inline: drop the entries.
				vs.split = false
				b.W.DeleteRange(ek, storage.PrefixEnd(ek))
				vs.gone = b.Epoch
				for _, e := range vs.m {
					e.changed = false
				}
			case vs.split:
				for _, vk := range vs.changed {
					ek = append(ek[:ek0], vk...)
					switch e := vs.m[vk]; {
					case e == nil:
						b.W.Delete(ek)
						vs.gone = b.Epoch
					case !e.changed: // listed twice, written already
					case e.zero(): // a spilled set's tombstone
						b.W.Delete(ek)
						e.changed = false
						e.saved = b.Epoch
					default:
						b.W.Set(ek, a.encodeEntry(c, e))
						e.changed = false
						e.saved = b.Epoch
					}
				}
			}
			a.ekBuf = ek
			clear(vs.changed)
			vs.changed = vs.changed[:0]
		}
		b.W.Set(key, a.encodeGroup(g))
	}
	clear(a.dirty)
	clear(a.cleared)
	a.evict(committed)
	return nil
}

// State layout: under the group's key (storage.AppendStateKeyLen, so
// that a group's entries share its vnode), h holds the group's header
// (key, count, the accumulators' scalars and the small multisets);
// s<class><value key> holds one entry of a large multiset, so that a
// checkpoint writes only the entries that changed, not whole sets.
func (a *Agg) headerKey(k string) []byte {
	return append(storage.AppendStateKeyLen(nil, a.opID, k), 'h')
}

func (a *Agg) setPrefix(k string) []byte { return a.appendSetPrefix(nil, k) }

// appendSetPrefix appends the prefix of group k's set entries to buf.
func (a *Agg) appendSetPrefix(buf []byte, k string) []byte {
	return append(storage.AppendStateKeyLen(buf, a.opID, k), 's')
}

// setEntryKeyInto appends the prefix of class c's set entries of group k
// to buf.
func (a *Agg) setEntryKeyInto(buf []byte, k string, c int) []byte {
	return append(a.appendSetPrefix(buf, k), byte(c))
}

// encodeEntry encodes an entry of class c's set, the row (v, n per slot)
// as EncodeRow would, into a reused buffer (valid until the next call).
func (a *Agg) encodeEntry(c int, e *setEntry) []byte {
	ns := len(a.classes[c].slots)
	a.evBuf = types.AppendValue(binary.AppendUvarint(a.evBuf[:0], uint64(1+ns)), e.v)
	for s := 0; s < ns; s++ {
		a.evBuf = types.AppendValue(a.evBuf, types.NewInt(e.n[s]))
	}
	return a.evBuf
}

// markCleared notes that group k was dropped: its stored set entries go at
// the next checkpoint, before a group of the same key is written again.
func (a *Agg) markCleared(k string) {
	if a.cleared == nil {
		a.cleared = map[string]struct{}{}
	}
	a.cleared[k] = struct{}{}
}

// Finish implements flow.Finisher (batch queries).
func (a *Agg) Finish(out *flow.Emitter) error {
	if err := a.Flush(out); err != nil {
		return err
	}
	if a.global {
		if g := a.groups[""]; !g.emitted {
			g.emitted = true
			return out.Emit(a.output(g), 1)
		}
	}
	return nil
}

// encodeGroup stores a group as one row: key columns, count, emitted, then
// per aggregate n, i, f, d, then per class its inline multiset as (size,
// value, count per slot…), or size 0 when split.
func (a *Agg) encodeGroup(g *group) []byte {
	n := 1 + len(g.key) + 2 + 4*len(g.accs)
	for j := range g.accs {
		if hasExtState(a.aggs[j].Func) {
			n += 2 + len(g.accs[j].ext())
		}
	}
	for c := range g.sets {
		n++
		if vs := &g.sets[c]; !vs.split {
			n += (1 + len(a.classes[c].slots)) * len(vs.m)
		}
	}
	if a.tail {
		n++
		for j := range g.accs {
			if scaledSum(&a.aggs[j]) {
				n += 1 + len(g.accs[j].ext())
			}
		}
	}
	// The values are appended straight into a reused buffer (the batch
	// copies it): no row is built.
	buf := binary.AppendUvarint(a.encBuf[:0], uint64(n))
	buf = types.AppendValue(buf, types.NewInt(int64(len(g.key))))
	for _, d := range g.key {
		buf = types.AppendValue(buf, d)
	}
	buf = types.AppendValue(buf, types.NewInt(g.count))
	buf = types.AppendValue(buf, types.NewBool(g.emitted))
	for _, ac := range g.accs {
		buf = types.AppendValue(buf, types.NewInt(ac.n))
		buf = types.AppendValue(buf, types.NewInt(ac.i))
		buf = types.AppendValue(buf, types.NewFloat(ac.f))
		buf = types.AppendValue(buf, ac.d())
	}
	for j := range g.accs {
		if ac := &g.accs[j]; hasExtState(a.aggs[j].Func) {
			buf = types.AppendValue(buf, ac.d2())
			buf = types.AppendValue(buf, types.NewInt(int64(len(ac.ext()))))
			for _, x := range ac.ext() {
				buf = types.AppendValue(buf, types.NewInt(x))
			}
		}
	}
	for c := range g.sets {
		vs := &g.sets[c]
		if vs.split {
			buf = types.AppendValue(buf, types.NewInt(0))
			continue
		}
		buf = types.AppendValue(buf, types.NewInt(int64(len(vs.m))))
		ns := len(a.classes[c].slots)
		for _, e := range vs.m {
			buf = types.AppendValue(buf, e.v)
			for s := 0; s < ns; s++ {
				buf = types.AppendValue(buf, types.NewInt(e.n[s]))
			}
		}
	}
	if a.tail {
		buf = types.AppendValue(buf, types.NewInt(1)) // the DISTINCT sums and the scales are kept
		for j := range g.accs {
			if scaledSum(&a.aggs[j]) {
				ext := g.accs[j].ext()
				buf = types.AppendValue(buf, types.NewInt(int64(len(ext))))
				for _, x := range ext {
					buf = types.AppendValue(buf, types.NewInt(x))
				}
			}
		}
	}
	a.encBuf = buf
	return buf
}

func (a *Agg) decodeGroup(v []byte) (*group, error) {
	r, err := types.DecodeRow(v)
	if err != nil {
		return nil, err
	}
	bad := pgerror.New(pgcode.DataCorrupted, "corrupt aggregate state")
	p := 0
	next := func() types.Datum {
		if p >= len(r) {
			p++
			return types.Null
		}
		p++
		return r[p-1]
	}
	nk := int(next().I)
	if nk < 0 || nk > len(r) {
		return nil, bad
	}
	key := make(types.Row, nk)
	for i := range key {
		key[i] = next()
	}
	g := a.newGroup(key)
	g.stored = true // read from the store
	g.count = next().I
	g.emitted = next().Bool()
	for i := range g.accs {
		ac := &g.accs[i]
		ac.n, ac.i, ac.f = next().I, next().I, next().Float()
		ac.setD(next())
	}
	for j := range g.accs {
		if ac := &g.accs[j]; hasExtState(a.aggs[j].Func) {
			d2 := next()
			ne := int(next().I)
			if ne < 0 || ne > len(r) {
				return nil, bad
			}
			if !d2.IsNull() || ne > 0 {
				xs := ac.stats()
				xs.d2 = d2
				if ne > 0 {
					xs.ext = make([]int64, ne)
					for k := range xs.ext {
						xs.ext[k] = next().I
					}
				}
			}
		}
	}
	for c := range g.sets {
		ns := int(next().I)
		if ns < 0 || ns > len(r) {
			return nil, bad
		}
		vs := &g.sets[c]
		for j := 0; j < ns; j++ {
			v := next()
			k := string(types.AppendKey(nil, v))
			e := &setEntry{v: v, k: k}
			for s := range a.classes[c].slots {
				e.n[s] = next().I
			}
			if vs.m == nil {
				vs.m = map[string]*setEntry{}
			}
			vs.m[k] = e
		}
	}
	if a.tail {
		if p < len(r) {
			next()
			for j := range g.accs {
				if scaledSum(&a.aggs[j]) {
					ne := int(next().I)
					if ne < 0 || ne > len(r) {
						return nil, bad
					}
					if ne > 0 {
						ext := make([]int64, ne)
						for k := range ext {
							ext[k] = next().I
						}
						g.accs[j].stats().ext = ext
					}
				}
			}
		} else {
			// An older build's header: the DISTINCT sums are computed from
			// the sets; the scales of the other sums are not known.
			g.resum = a.distinctSums
			for j := range g.accs {
				if ag := &a.aggs[j]; scaledSum(ag) && !ag.Distinct && g.accs[j].n != 0 {
					g.accs[j].stats().ext = []int64{-1}
				}
			}
		}
	}
	if p > len(r) {
		return nil, bad
	}
	return g, nil
}

// Start implements flow.Starter: with Replay set (a view changed in place
// whose new part reads this aggregation), it first emits every group's
// current row, read from its state, so the new part is built without the
// aggregation's input being read again.
func (a *Agg) Start(out *flow.Emitter) error {
	if !a.Replay {
		return nil
	}
	a.Replay = false
	var stored []string
	if err := a.storedKeys(func(k string, _ types.Row) { stored = append(stored, k) }); err != nil {
		return err
	}
	for _, k := range stored {
		if _, err := a.readBack(k); err != nil {
			return err
		}
	}
	keys := make([]string, 0, len(a.groups))
	for k := range a.groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		g := a.groups[k]
		if g.count <= 0 && !a.global {
			continue
		}
		r := a.output(g)
		if a.foldErr != nil {
			return a.foldErr
		}
		if err := out.Emit(r, 1); err != nil {
			return err
		}
		g.emitted = true
	}
	return nil
}
