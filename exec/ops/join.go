package ops

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"unsafe"

	"sluice/exec/eval"
	"sluice/exec/flow"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// Join is a symmetric hash equi-join with retractions. Both inputs are
// kept, bucketed by join key; a change on one side probes the other. Outer
// joins track, per preserved row, whether it has matches, and swap the
// NULL-extended row in and out as matches come and go.
//
// State lives in Pebble under s/<op>/<side><len(key)><key><row> = count,
// written once per barrier. In memory, a side keeps its hot buckets whole;
// when the operators' shared state cache (storage.StateCache) is full, the
// join spills clean, committed buckets and keeps only their row counts, so
// that a probe of a key that has no rows costs no read. A spilled bucket
// takes new rows without being read (as Merge deltas of the counts); it is
// read back from the store when the other side probes it. When even the
// counts outgrow the cache, a side forgets them (joinSide.partial): a
// probe of a key it does not hold then looks the key up in the store.
type Join struct {
	kind   spec.JoinKind
	keys   [2][]int
	widths [2]int
	// out picks the output columns from left++right (spec.Node.JoinOut);
	// nil: all of them.
	out      []int
	cond     func(types.Row) (bool, error)
	errs     *ErrorSink
	opID     uint64 // state under s/<opID> (storage.AppendStateKey)
	s        [2]joinSide
	preserve [2]bool
	scratch  types.Row
	// lookup: the right side is a lookup table (FOR SYSTEM_TIME AS OF
	// PROCTIME()): its changes update the state but not results already
	// emitted, and left rows are not kept.
	lookup bool
	// wm combines the two sides' watermarks on each pair of join keys;
	// keyIdx indexes each side's buckets by the value of key i once that
	// key has a watermark: side -> i -> index.
	wm     *flow.WatermarkMin
	keyIdx [2]map[int]*valueIndex

	db       *storage.DB // nil: a batch query (nothing saved or spilled)
	cache    *storage.StateCache
	reported int64 // bytes last added to cache
	kbuf     []byte
	rkbuf    []byte // store's row key buffer
	sorter   keySorter
	// evicted and loaded count buckets spilled and read back; lookups the
	// bucket probes.
	evicted, loaded int
	lookups         int64
	// bounds are the interval-join bounds of the condition; tidx indexes
	// each side's rows by the time columns bounds can delete them by:
	// side -> column -> index.
	bounds []spec.IntervalBound
	tidx   [2]map[int]*timeIndex
	// gate holds the output until the watermarks of the equi-join keys
	// close it (EMIT ON WINDOW CLOSE, windoweowc.go); nil if not.
	gate *eowcGate
}

// Spills returns how many buckets the join has spilled and read back.
func (j *Join) Spills() (evicted, loaded int) { return j.evicted, j.loaded }

// joinSide is one input's state.
type joinSide struct {
	// hot holds the resident buckets, and the spilled ones with changes
	// not yet known committed; cold the other spilled buckets' row counts.
	hot  map[string]*bucket
	cold map[string]int64
	// partial: the side forgot the counts of some spilled buckets (the
	// store holds buckets that neither hot nor cold names); forgot is
	// their number of rows. A side with a key index keeps its counts (the
	// index holds every key anyway).
	partial bool
	forgot  int64
	// forgotten holds the keys whose counts were forgotten: a key not in
	// it has no rows in the store that the side does not know of.
	forgotten keyFilter
	// gone holds the keys whose rows were deleted by an epoch that may not
	// be committed yet (pendingEpoch: by the next barrier): the store may
	// still show their rows, so a partial side must not look them up.
	gone map[string]uint64
	// dirty: the buckets changed since the last barrier, in the order of
	// their first change (a bucket that replaces an emptied one of the same
	// key comes after it, so its writes win).
	dirty []*bucket
	// drop: spilled buckets deleted whole, removed from the store at the
	// next barrier; flying: spilled buckets with writes in flight.
	drop   map[string]struct{}
	flying map[string]struct{}
	bytes  int64 // estimated memory of the resident rows and of cold
}

// pendingEpoch marks a deletion of the epoch in progress.
const pendingEpoch = math.MaxUint64

// markGone records that the rows of key jk are deleted in this epoch.
func (s *joinSide) markGone(jk string) {
	if s.gone == nil {
		s.gone = map[string]uint64{}
	}
	s.gone[jk] = pendingEpoch
}

// settleGone dates the deletions of the epoch ending and forgets those
// known committed.
func (s *joinSide) settleGone(epoch, committed uint64) {
	for jk, e := range s.gone {
		switch {
		case e == pendingEpoch:
			s.gone[jk] = epoch
		case e <= committed:
			delete(s.gone, jk)
		}
	}
}

// coldBytes estimates the memory of one entry of a side's cold counts.
func coldBytes(jk string) int64 { return int64(len(jk)) + 64 }

// keepCold reports whether side must keep its spilled buckets' counts.
func (j *Join) keepCold(side int) bool { return len(j.keyIdx[side]) > 0 || len(j.tidx[side]) > 0 }

type bucket struct {
	jk string
	// rows: every row of a resident bucket; of a spilled one, the changes
	// since the last barrier (counts are deltas).
	rows  rowSet
	total int64
	// spilled buckets: flight holds the changes that barriers wrote and
	// that may not be committed yet.
	spilled bool
	// unknown: a spilled bucket of a partial side whose stored rows were
	// not counted: total counts only the changes since it was made.
	unknown bool
	// retracted: an unknown bucket took a retraction (its stored rows may
	// have all gone).
	retracted bool
	flight    []flight
	saved     uint64 // the last epoch that wrote the bucket
	ref       bool   // probed since the last eviction pass
	// dirty lists the row keys changed since the last barrier, once per
	// entry that carries the dirty flag (a key can recur after its entry
	// went and came back). queued: the bucket is in its side's dirty list;
	// skip: its changes went to the bucket that replaced it, or its key was
	// dropped whole, and it writes nothing.
	dirty  []string
	queued bool
	skip   bool
}

// jentry is one distinct row of a bucket: its encoding and its count. A
// stored row is kept as its encoding only, and decoded (once) when a probe
// first needs its values: most stored rows are never probed (a bid arrives
// after its auction: the auction finds none of its bids), and a row kept
// whole is 48 bytes per column of pointerful memory the garbage collector
// scans on every cycle.
type jentry struct {
	rk    string
	n     int64
	dirty bool // rk is in the bucket's dirty list
}

// rowSet holds a bucket's rows in a slice (most buckets have one or a
// few), indexed by encoding once it outgrows a linear search. rows holds
// the decoded rows, row i of list at i (nil: not decoded); it is nil until
// a row of the set is decoded.
type rowSet struct {
	list []jentry
	rows []types.Row
	idx  map[string]int32
}

// row returns entry i's row, decoded from its encoding the first time.
func (rs *rowSet) row(i int) (types.Row, error) {
	if rs.rows != nil && rs.rows[i] != nil {
		return rs.rows[i], nil
	}
	rk := rs.list[i].rk
	// DecodeRow copies what it keeps: it may read rk's bytes in place.
	r, err := types.DecodeRow(unsafe.Slice(unsafe.StringData(rk), len(rk)))
	if err != nil {
		return nil, err
	}
	rs.setRow(i, r)
	return r, nil
}

// setRow keeps r as entry i's decoded row.
func (rs *rowSet) setRow(i int, r types.Row) {
	if rs.rows == nil {
		if r == nil {
			return
		}
		rs.rows = make([]types.Row, len(rs.list), cap(rs.list))
	}
	rs.rows[i] = r
}

// decoded returns entry i's row if it was decoded, else nil.
func (rs *rowSet) decoded(i int) types.Row {
	if rs.rows == nil {
		return nil
	}
	return rs.rows[i]
}

const rowSetIndexAt = 8

// find returns the index of the entry encoded rk, or -1.
func (rs *rowSet) find(rk []byte) int {
	if rs.idx != nil {
		if i, ok := rs.idx[string(rk)]; ok {
			return int(i)
		}
		return -1
	}
	for i := range rs.list {
		if rs.list[i].rk == string(rk) {
			return i
		}
	}
	return -1
}

// findString is find for a string key.
func (rs *rowSet) findString(rk string) int {
	if rs.idx != nil {
		if i, ok := rs.idx[rk]; ok {
			return int(i)
		}
		return -1
	}
	for i := range rs.list {
		if rs.list[i].rk == rk {
			return i
		}
	}
	return -1
}

// add appends e and returns its index.
func (rs *rowSet) add(e jentry) int {
	i := len(rs.list)
	rs.list = append(rs.list, e)
	if rs.rows != nil {
		rs.rows = append(rs.rows, nil)
	}
	if rs.idx != nil {
		rs.idx[e.rk] = int32(i)
	} else if len(rs.list) > rowSetIndexAt {
		rs.idx = make(map[string]int32, 2*len(rs.list))
		for k := range rs.list {
			rs.idx[rs.list[k].rk] = int32(k)
		}
	}
	return i
}

// remove deletes entry i; the last entry takes its place.
func (rs *rowSet) remove(i int) {
	last := len(rs.list) - 1
	if rs.idx != nil {
		delete(rs.idx, rs.list[i].rk)
		if i != last {
			rs.idx[rs.list[last].rk] = int32(i)
		}
	}
	rs.list[i] = rs.list[last]
	rs.list[last] = jentry{}
	rs.list = rs.list[:last]
	if rs.rows != nil {
		rs.rows[i] = rs.rows[last]
		rs.rows[last] = nil
		rs.rows = rs.rows[:last]
	}
}

// touch records that entry e of bucket b changed since the last barrier.
func (s *joinSide) touch(b *bucket, e *jentry) {
	if !e.dirty {
		e.dirty = true
		b.dirty = append(b.dirty, e.rk)
	}
	s.queue(b)
}

// queue puts b in the side's dirty list.
func (s *joinSide) queue(b *bucket) {
	if !b.queued {
		b.queued = true
		s.dirty = append(s.dirty, b)
	}
}

type flight struct {
	rk    string
	n     int64
	epoch uint64
}

// rowBytes estimates the memory a resident row of width columns encoded
// rk takes, counting it decoded.
func rowBytes(rk string, width int) int64 {
	return 2*int64(len(rk)) + int64(width)*int64(unsafe.Sizeof(types.Datum{})) + 128
}

// NewJoin creates the join of node n (inputs of widths lw and rw) with
// state under opID, loading saved state from db (nil: batch query).
func NewJoin(n *spec.Node, lw, rw int, opID uint64, db *storage.DB, ctx *eval.Context, errs *ErrorSink) (*Join, error) {
	j := &Join{
		kind: n.JoinKind, keys: [2][]int{n.LeftKeys, n.RightKeys}, widths: [2]int{lw, rw},
		out:  n.JoinOut,
		errs: errs, opID: opID, lookup: n.Temporal, db: db,
	}
	for s := 0; s < 2; s++ {
		j.s[s] = joinSide{
			hot: map[string]*bucket{}, cold: map[string]int64{},
			drop: map[string]struct{}{}, flying: map[string]struct{}{},
		}
	}
	j.preserve[0] = n.JoinKind == spec.LeftJoin || n.JoinKind == spec.FullJoin || j.filtering()
	j.preserve[1] = n.JoinKind == spec.RightJoin || n.JoinKind == spec.FullJoin
	if n.Cond != nil {
		c, err := eval.CompilePredicate(n.Cond, ctx)
		if err != nil {
			return nil, err
		}
		j.cond = c
	}
	if n.Cond != nil && n.JoinKind == spec.InnerJoin && !j.lookup {
		j.bounds, _ = spec.IntervalBounds(n.Cond, lw)
		for _, b := range j.bounds {
			if b.Lo != math.MinInt64 {
				j.timeIndex(0, b.L)
			}
			if b.Hi != math.MaxInt64 {
				j.timeIndex(1, b.R)
			}
		}
	}
	if n.EOWC {
		// The gate's time columns: each equi-join key in both output
		// columns (a watermark passes through only on those).
		var cols []int
		for i := range j.keys[0] {
			for _, c := range []int{j.keys[0][i], lw + j.keys[1][i]} {
				if oc := j.outCol(c); oc >= 0 {
					cols = append(cols, oc)
				}
			}
		}
		g, err := newEOWCGate(cols, opID, db)
		if err != nil {
			return nil, err
		}
		j.gate = g
	}
	if db == nil {
		return j, nil
	}
	j.cache = db.StateCache()
	// Load buckets whole while the cache has room, then only their counts.
	room := j.cache.Limit() - j.cache.Used()
	var cur *bucket
	var curSide int
	var curKey string
	err := db.Scan(storage.StatePrefix(j.opID), func(k, v []byte) error {
		side, jk, rk, err := j.splitKey(k)
		if err != nil {
			return err
		}
		cnt, m := binary.Varint(v)
		if m <= 0 {
			return pgerror.New(pgcode.DataCorrupted, "corrupt join state")
		}
		if cnt == 0 {
			return nil
		}
		s := &j.s[side]
		if cur == nil || side != curSide || string(jk) != curKey {
			cur, curSide, curKey = nil, side, string(jk)
			if s.bytes+j.s[1-side].bytes < room {
				cur = &bucket{jk: curKey}
				s.hot[curKey] = cur
			}
		}
		if cur == nil {
			if _, ok := s.cold[curKey]; ok {
				s.cold[curKey] += cnt
			} else if j.keepCold(side) || s.bytes+j.s[1-side].bytes < room {
				s.cold[curKey] = cnt
				s.bytes += coldBytes(curKey)
			} else {
				if !s.partial || !s.forgotten.has(curKey) {
					s.forgotten.add(curKey)
				}
				s.partial = true
				s.forgot += cnt
			}
		}
		rks := string(rk)
		if len(j.tidx[side]) > 0 {
			row, err := types.DecodeRow(rk)
			if err != nil {
				return err
			}
			for _, x := range j.tidx[side] {
				x.add(row, curKey, rks)
			}
		}
		if cur == nil {
			return nil
		}
		cur.rows.add(jentry{rk: rks, n: cnt})
		cur.total += cnt
		s.bytes += rowBytes(rks, j.widths[side])
		return nil
	})
	if err != nil {
		return nil, err
	}
	j.report()
	return j, nil
}

// splitKey splits a state key into side, join key and row key.
func (j *Join) splitKey(k []byte) (int, []byte, []byte, error) {
	jk, rest, ok := storage.SplitStateKeyLen(storage.StateUserKey(k))
	if !ok || len(rest) < 1 || rest[0] > 1 {
		return 0, nil, nil, pgerror.New(pgcode.DataCorrupted, "corrupt join state")
	}
	return int(rest[0]), jk, rest[1:], nil
}

// bucketKey appends the store prefix of side's bucket jk to buf: the join
// key (its vnode's) then the side, so both sides of a key share a vnode.
func (j *Join) bucketKey(buf []byte, side int, jk string) []byte {
	return append(storage.AppendStateKeyLen(buf, j.opID, jk), byte(side))
}

// own returns the memory of the join's state: resident rows, counts and
// filters.
func (j *Join) own() int64 {
	return j.s[0].bytes + j.s[1].bytes + j.s[0].forgotten.bytes() + j.s[1].forgotten.bytes()
}

// StateStats implements flow.StateReporter.
func (j *Join) StateStats() flow.StateStats {
	return flow.StateStats{Bytes: j.own(), Keys: int64(len(j.s[0].hot) + len(j.s[0].cold) + len(j.s[1].hot) + len(j.s[1].cold)),
		Lookups: j.lookups, Misses: int64(j.loaded)}
}

// report brings the cache's count of this join's bytes up to date.
func (j *Join) report() {
	if j.cache == nil {
		return
	}
	own := j.own()
	j.cache.Add(own - j.reported)
	j.reported = own
}

// Release implements flow.Releaser: the join's memory leaves the cache.
func (j *Join) Release() {
	if j.cache != nil {
		j.cache.Add(-j.reported)
		j.reported = 0
	}
}

// probe returns side's bucket jk whole (reading it back if spilled), or
// nil if it has no rows.
func (j *Join) probe(side int, jk string) (*bucket, error) {
	j.lookups++
	s := &j.s[side]
	b := s.hot[jk]
	if b != nil && !b.spilled {
		b.ref = true
		return b, nil
	}
	if b == nil {
		if _, ok := s.cold[jk]; !ok {
			if !s.partial {
				return nil, nil
			}
			if _, ok := s.gone[jk]; ok || !s.forgotten.has(jk) {
				return nil, nil
			}
		}
	}
	return j.load(side, jk, b)
}

// load reads spilled bucket jk of side (b: its in-memory part, or nil)
// back from the latest committed state, adds the changes the store does
// not have yet, and makes it resident.
func (j *Join) load(side int, jk string, b *bucket) (*bucket, error) {
	s := &j.s[side]
	want, known := s.cold[jk]
	if known {
		s.bytes -= coldBytes(jk)
	}
	if b != nil {
		want, known = b.total, !b.unknown
	}
	nb := &bucket{jk: jk, ref: true}
	add := func(rk string, row types.Row, n int64) {
		i := nb.rows.findString(rk)
		if i < 0 {
			i = nb.rows.add(jentry{rk: rk})
			nb.rows.setRow(i, row)
		}
		nb.rows.list[i].n += n
		nb.total += n
	}
	j.loaded++
	snap := j.db.Snapshot()
	j.kbuf = j.bucketKey(j.kbuf[:0], side, jk)
	// zeros: rows counted down to zero while the bucket was spilled (the
	// count merger cannot delete them); a resident bucket deletes them.
	var zeros []string
	found := false
	err := snap.Scan(j.kbuf, func(k, v []byte) error {
		cnt, m := binary.Varint(v)
		if m <= 0 {
			return pgerror.New(pgcode.DataCorrupted, "corrupt join state")
		}
		found = true
		if cnt == 0 {
			zeros = append(zeros, string(k[len(j.kbuf):]))
			return nil
		}
		add(string(k[len(j.kbuf):]), nil /* row: decoded when probed */, cnt)
		return nil
	})
	committed := snap.Epoch
	snap.Release()
	if err != nil {
		return nil, err
	}
	if b != nil {
		for _, f := range b.flight {
			if f.epoch > committed {
				add(f.rk, nil /* row */, f.n)
			}
			nb.saved = max(nb.saved, f.epoch)
		}
		for i, e := range b.rows.list {
			add(e.rk, b.rows.decoded(i), e.n)
		}
		delete(s.flying, jk)
	}
	switch {
	case !known && b != nil:
		s.forgot -= nb.total - b.total // b.total: its changes since it was forgotten
	case !known:
		s.forgot -= nb.total
	}
	if known && nb.total != want {
		return nil, pgerror.Newf(pgcode.DataCorrupted, "join state of a spilled key holds %d rows, want %d", nb.total, want)
	}
	for i := 0; i < len(nb.rows.list); {
		if e := &nb.rows.list[i]; e.n == 0 {
			nb.rows.remove(i)
			continue
		} else {
			s.bytes += rowBytes(e.rk, j.widths[side])
		}
		i++
	}
	if b != nil && b.queued {
		// The spilled bucket's unwritten changes become nb's: rows that
		// net to nothing are deleted at the barrier.
		for _, rk := range b.dirty {
			if i := nb.rows.findString(rk); i >= 0 {
				e := &nb.rows.list[i]
				if !e.dirty {
					e.dirty = true
					nb.dirty = append(nb.dirty, rk)
				}
			} else {
				nb.dirty = append(nb.dirty, rk)
			}
		}
		b.skip = true
		s.queue(nb)
	}
	delete(s.cold, jk)
	if len(nb.rows.list) == 0 {
		delete(s.hot, jk)
		j.indexBucket(side, jk, false)
		if found {
			s.drop[jk] = struct{}{} // what the store holds nets to nothing
		}
		if found || b != nil {
			s.markGone(jk)
		}
		return nil, nil
	}
	if len(zeros) > 0 {
		// Not entries: the barrier deletes them (a row added again in the
		// meantime is an entry, and written instead).
		nb.dirty = append(nb.dirty, zeros...)
		s.queue(nb)
	}
	s.hot[jk] = nb
	return nb, nil
}

// combine builds the output row of row r of side and row o of the other
// side (nil: NULLs).
func (j *Join) combine(side int, r, o types.Row) types.Row {
	if j.out != nil {
		l, rt := r, o
		if side == 1 {
			l, rt = o, r
		}
		w := j.widths[0]
		out := make(types.Row, len(j.out))
		for k, c := range j.out {
			switch {
			case c < w:
				if l != nil {
					out[k] = l[c]
				}
			case rt != nil:
				out[k] = rt[c-w]
			}
		}
		return out
	}
	out := make(types.Row, j.widths[0]+j.widths[1])
	if side == 0 {
		copy(out, r)
		if o != nil {
			copy(out[j.widths[0]:], o)
		}
	} else {
		if o != nil {
			copy(out, o)
		}
		copy(out[j.widths[0]:], r)
	}
	return out
}

// matches reports whether left row l and right row r satisfy the residual condition.
func (j *Join) matches(side int, r, o types.Row) (bool, error) {
	if j.cond == nil {
		return true, nil
	}
	var row types.Row
	if side == 0 {
		row = j.combineInto(r, o)
	} else {
		row = j.combineInto(o, r)
	}
	ok, err := j.cond(row)
	if err != nil {
		if err := j.errs.handle(err); err != nil {
			return false, err
		}
		return false, nil
	}
	return ok, nil
}

func (j *Join) combineInto(l, r types.Row) types.Row {
	if j.scratch == nil {
		j.scratch = make(types.Row, j.widths[0]+j.widths[1])
	}
	copy(j.scratch, l)
	copy(j.scratch[j.widths[0]:], r)
	return j.scratch
}

// degree returns how many rows of side `other` match row r of side `side`.
func (j *Join) degree(side int, r types.Row, b *bucket) (int64, error) {
	if b == nil {
		return 0, nil
	}
	if j.cond == nil {
		return b.total, nil
	}
	var d int64
	for k := range b.rows.list {
		o := &b.rows.list[k]
		orow, err := b.rows.row(k)
		if err != nil {
			return 0, err
		}
		ok, err := j.matches(side, r, orow)
		if err != nil {
			return 0, err
		}
		if ok {
			d += o.n
		}
	}
	return d, nil
}

// probeRow returns r's join key (built in *kbuf), whether it has a NULL
// (which matches nothing), and the other side's bucket of it (nil for a
// NULL or no rows).
func (j *Join) probeRow(side int, r types.Row, kbuf *[]byte) (jk string, ob *bucket, null bool, err error) {
	for _, c := range j.keys[side] {
		if r[c].IsNull() {
			null = true
		}
		*kbuf = types.AppendKey(*kbuf, r[c])
	}
	jk = string(*kbuf)
	if null {
		return jk, nil, true, nil
	}
	ob, err = j.probe(1-side, jk)
	return jk, ob, false, err
}

// First implements flow.Sequenced: a lookup join reads its stream only
// once the table's backfill is in, so that the stream's first rows meet
// the whole table (rows are matched against the table as it is when they
// arrive, and a row that met an empty table would be lost for good).
func (j *Join) First() int {
	if j.lookup {
		return 1
	}
	return -1
}

// filtering reports whether the join is a semi or anti join: it outputs
// left rows (never pairs) by whether they have matches, which it derives,
// as an outer join does, from the right rows stored under the row's key.
func (j *Join) filtering() bool {
	return j.kind == spec.SemiJoin || j.kind == spec.AntiJoin
}

// Process implements flow.Operator.
func (j *Join) Process(side int, b *types.Batch, out *flow.Emitter) error {
	if j.gate != nil {
		// EMIT ON WINDOW CLOSE: the changes wait in the gate.
		pend := flow.NewEmitter(j.gate.add)
		if err := j.process(side, b, pend); err != nil {
			return err
		}
		return pend.Flush()
	}
	return j.process(side, b, out)
}

func (j *Join) process(side int, b *types.Batch, out *flow.Emitter) error {
	if j.filtering() {
		return j.processFiltering(side, b, out)
	}
	other := 1 - side
	var kbuf []byte
	for i, r := range b.Rows {
		diff := b.Diffs[i]
		kbuf = kbuf[:0]
		if j.lookup && side == 1 {
			for _, c := range j.keys[side] {
				kbuf = types.AppendKey(kbuf, r[c])
			}
			j.store(side, string(kbuf), r, diff)
			continue
		}
		jk, ob, null, err := j.probeRow(side, r, &kbuf)
		if err != nil {
			return err
		}
		// Matches of r on the other side.
		var deg int64
		if ob != nil {
			for k := range ob.rows.list {
				o := &ob.rows.list[k]
				orow, err := ob.rows.row(k)
				if err != nil {
					return err
				}
				ok, err := j.matches(side, r, orow)
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
				deg += o.n
				if j.preserve[other] {
					// o's degree changes by diff: swap its NULL-extended row.
					var own *bucket
					if !null {
						if own, err = j.probe(side, jk); err != nil {
							return err
						}
					}
					before, err := j.degree(other, orow, own)
					if err != nil {
						return err
					}
					after := before + diff
					if before == 0 && after > 0 {
						if err := out.Emit(j.combine(other, orow, nil), -o.n); err != nil {
							return err
						}
					} else if before > 0 && after == 0 {
						if err := out.Emit(j.combine(other, orow, nil), o.n); err != nil {
							return err
						}
					}
				}
				if err := out.Emit(j.combine(side, r, orow), diff*o.n); err != nil {
					return err
				}
			}
		}
		if j.preserve[side] && deg == 0 {
			if err := out.Emit(j.combine(side, r, nil), diff); err != nil {
				return err
			}
		}
		if !j.lookup {
			j.store(side, jk, r, diff)
		}
	}
	if j.s[0].bytes+j.s[1].bytes-j.reported > reportStep {
		j.report()
	}
	return nil
}

// processFiltering is Process for semi and anti joins. A left row is
// emitted (semi) or withheld (anti) while its degree, the number of
// matching right rows, is above zero; a right change that moves a left
// row's degree between zero and non-zero emits or retracts that row.
func (j *Join) processFiltering(side int, b *types.Batch, out *flow.Emitter) error {
	semi := j.kind == spec.SemiJoin
	var kbuf []byte
	for i, r := range b.Rows {
		diff := b.Diffs[i]
		kbuf = kbuf[:0]
		jk, ob, null, err := j.probeRow(side, r, &kbuf)
		if err != nil {
			return err
		}
		if side == 0 {
			deg, err := j.degree(0, r, ob)
			if err != nil {
				return err
			}
			if (deg > 0) == semi {
				if err := out.Emit(j.combine(0, r, nil), diff); err != nil {
					return err
				}
			}
		} else if ob != nil {
			var own *bucket
			if !null {
				var err error
				if own, err = j.probe(side, jk); err != nil {
					return err
				}
			}
			for k := range ob.rows.list {
				o := &ob.rows.list[k]
				orow, err := ob.rows.row(k)
				if err != nil {
					return err
				}
				ok, err := j.matches(side, r, orow)
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
				before, err := j.degree(0, orow, own)
				if err != nil {
					return err
				}
				after := before + diff
				var sign int64
				switch {
				case before == 0 && after > 0:
					sign = 1
				case before > 0 && after == 0:
					sign = -1
				default:
					continue
				}
				if !semi {
					sign = -sign
				}
				if err := out.Emit(j.combine(0, orow, nil), sign*o.n); err != nil {
					return err
				}
			}
		}
		j.store(side, jk, r, diff)
	}
	return nil
}

// store adds diff copies of row r to side's bucket jk. A spilled bucket
// is not read: the change is kept as a delta until the next barrier.
func (j *Join) store(side int, jk string, r types.Row, diff int64) {
	for _, x := range j.tidx[side] {
		if x.expired(r) {
			// A watermark of the other side has passed it already (its
			// matches so far are emitted): dropRows would delete it at the
			// next one, and a stream that ends, or a side far behind the
			// other, gets none, so it is not kept at all.
			return
		}
	}
	s := &j.s[side]
	b := s.hot[jk]
	if b == nil {
		if n, ok := s.cold[jk]; ok {
			b = &bucket{jk: jk, total: n, spilled: true}
			delete(s.cold, jk)
			s.bytes -= coldBytes(jk)
		} else if _, gone := s.gone[jk]; s.partial && !gone && s.forgotten.has(jk) {
			// The store may hold rows of jk: take the change unread.
			b = &bucket{jk: jk, spilled: true, unknown: true}
			j.indexBucket(side, jk, true)
		} else {
			b = &bucket{jk: jk}
			j.indexBucket(side, jk, true)
		}
		s.hot[jk] = b
	}
	j.rkbuf = types.EncodeRow(j.rkbuf[:0], r)
	i := b.rows.find(j.rkbuf)
	if i < 0 {
		rk := string(j.rkbuf)
		i = b.rows.add(jentry{rk: rk})
		if !b.spilled {
			s.bytes += rowBytes(rk, j.widths[side])
		}
		for _, x := range j.tidx[side] {
			x.add(r, jk, rk)
		}
	}
	e := &b.rows.list[i]
	e.n += diff
	b.total += diff
	b.retracted = b.retracted || diff < 0
	s.touch(b, e)
	if e.n == 0 {
		if !b.spilled {
			s.bytes -= rowBytes(e.rk, j.widths[side])
		}
		b.rows.remove(i)
	}
	if len(b.rows.list) == 0 && !b.spilled {
		delete(s.hot, jk)
		s.markGone(jk)
		j.indexBucket(side, jk, false)
	}
}

// Checkpoint implements flow.Operator: it writes the changed rows
// (resident buckets: their counts; spilled ones: count deltas), settles
// spilled buckets whose writes are committed, and spills buckets when the
// state cache is over its limit.
func (j *Join) Checkpoint(bar *flow.Barrier, _ *flow.Emitter) error {
	if j.db == nil {
		return nil
	}
	if j.gate != nil {
		j.gate.save(bar.W)
	}
	committed := j.db.CommittedEpoch()
	for side := 0; side < 2; side++ {
		s := &j.s[side]
		s.settleGone(bar.Epoch, committed)
		for jk := range s.drop {
			j.kbuf = j.bucketKey(j.kbuf[:0], side, jk)
			bar.W.DeleteRange(j.kbuf, storage.PrefixEnd(j.kbuf))
		}
		clear(s.drop)
		// Written in key order: Pebble sorts a large epoch batch before it
		// flushes it to L0, and a sorted batch takes it one pass (its sort
		// was 11% of Nexmark q20).
		j.sorter.buckets(s.dirty)
		var vbuf [binary.MaxVarintLen64]byte
		// The rows go to a run of the epoch, in key order, after the
		// deletions above (see storage.Run).
		run := bar.W.NewRun()
		for _, bk := range s.dirty {
			if bk.skip {
				continue
			}
			j.sorter.strings(bk.dirty)
			// The run copies keys and values: one buffer serves every row.
			j.kbuf = j.bucketKey(j.kbuf[:0], side, bk.jk)
			bk0 := len(j.kbuf)
			for _, rk := range bk.dirty {
				j.kbuf = append(j.kbuf[:bk0], rk...)
				key := j.kbuf
				i := bk.rows.findString(rk)
				switch {
				case i < 0:
					if !bk.spilled {
						run.Delete(key)
					}
				case !bk.rows.list[i].dirty: // listed twice, written already
				case bk.spilled:
					e := &bk.rows.list[i]
					e.dirty = false
					run.Merge(key, e.n)
					bk.flight = append(bk.flight, flight{rk: rk, n: e.n, epoch: bar.Epoch})
				default:
					e := &bk.rows.list[i]
					e.dirty = false
					run.Set(key, binary.AppendVarint(vbuf[:0], e.n))
				}
			}
			clear(bk.dirty)
			bk.dirty = bk.dirty[:0]
			bk.queued = false
			bk.saved = bar.Epoch
			if bk.spilled {
				bk.rows = rowSet{}
				s.flying[bk.jk] = struct{}{}
			}
		}
		clear(s.dirty)
		s.dirty = s.dirty[:0]
		// Spilled buckets whose writes are all committed go back to counts.
		for jk := range s.flying {
			b := s.hot[jk]
			if b == nil || !b.spilled {
				delete(s.flying, jk)
				continue
			}
			keep := b.flight[:0]
			for _, f := range b.flight {
				if f.epoch > committed {
					keep = append(keep, f)
				}
			}
			clear(b.flight[len(keep):])
			b.flight = keep
			if b.saved > committed || len(b.rows.list) > 0 {
				continue
			}
			delete(s.flying, jk)
			delete(s.hot, jk)
			switch {
			case b.unknown:
				// Its rows stay uncounted, unless a retraction may have
				// emptied it: then it is deleted whole if it has none.
				s.forgot += b.total
				if !b.retracted {
					break
				}
				n, err := j.storedCount(side, jk)
				if err != nil {
					return err
				}
				if n == 0 {
					j.indexBucket(side, jk, false)
					s.drop[jk] = struct{}{}
					s.markGone(jk)
				}
			case b.total != 0:
				s.cold[jk] = b.total
				s.bytes += coldBytes(jk)
			default:
				// Its rows netted to nothing: the stored counts, zero, go
				// at the next barrier.
				j.indexBucket(side, jk, false)
				s.drop[jk] = struct{}{}
				s.markGone(jk)
			}
		}
	}
	j.report()
	j.evict(committed)
	return nil
}

// storedCount returns the number of rows the committed store holds in
// side's bucket jk.
func (j *Join) storedCount(side int, jk string) (int64, error) {
	j.kbuf = j.bucketKey(j.kbuf[:0], side, jk)
	var n int64
	err := j.db.Scan(j.kbuf, func(_, v []byte) error {
		c, m := binary.Varint(v)
		if m <= 0 {
			return pgerror.New(pgcode.DataCorrupted, "corrupt join state")
		}
		n += c
		return nil
	})
	return n, err
}

// evict spills clean resident buckets, saved at or before the committed
// epoch and not probed since the last pass, until the join's memory fits
// its share of the state cache; then, if it still does not, it forgets
// spilled buckets' counts.
func (j *Join) evict(committed uint64) {
	own := j.own()
	target := j.cache.Target(own)
	if own <= target {
		return
	}
	for side := 0; side < 2 && own > target; side++ {
		s := &j.s[side]
		for jk, b := range s.hot {
			if own <= target {
				break
			}
			if b.spilled || b.saved > committed {
				continue
			}
			if b.ref {
				b.ref = false
				continue
			}
			var n int64
			for _, e := range b.rows.list {
				n += rowBytes(e.rk, j.widths[side])
			}
			n -= coldBytes(jk)
			s.bytes -= n
			own -= n
			delete(s.hot, jk)
			s.cold[jk] = b.total
			j.evicted++
		}
	}
	for side := 0; side < 2 && own > target; side++ {
		s := &j.s[side]
		if j.keepCold(side) {
			continue
		}
		for jk, n := range s.cold {
			if own <= target {
				break
			}
			delete(s.cold, jk)
			s.bytes -= coldBytes(jk)
			own -= coldBytes(jk)
			s.forgot += n
			s.partial = true
			s.forgotten.add(jk)
		}
	}
	j.report()
}

// sortKey is a string to sort, with the 8 bytes after the prefix that
// all the strings sorted share as a number (deciding most comparisons
// without comparing strings), and its position before the sort.
type sortKey struct {
	p uint64
	s string
	i int
}

// sortKeys sorts n strings, key(i) the i-th, in byte order (lenFirst: by
// length first), stably. buf and tmp are scratch space, returned for reuse;
// the sorted strings are buf[k].s, from position buf[k].i.
func sortKeys(n int, key func(i int) string, lenFirst bool, buf, tmp []sortKey) ([]sortKey, []sortKey) {
	buf = buf[:0]
	if n == 0 {
		return buf, tmp
	}
	sameLen := true
	first := key(0)
	c := len(first)
	for i := 1; i < n; i++ {
		k := key(i)
		sameLen = sameLen && len(k) == len(first)
		m := min(c, len(k))
		c = 0
		for c < m && k[c] == first[c] {
			c++
		}
	}
	for i := 0; i < n; i++ {
		k := key(i)
		var b [8]byte
		copy(b[:], k[c:])
		buf = append(buf, sortKey{binary.BigEndian.Uint64(b[:]), k, i})
	}
	order := func(a, b sortKey) int {
		if lenFirst && len(a.s) != len(b.s) {
			return cmp.Compare(len(a.s), len(b.s))
		}
		if a.p != b.p {
			return cmp.Compare(a.p, b.p)
		}
		if c := strings.Compare(a.s, b.s); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	}
	if n < 64 || (lenFirst && !sameLen) {
		slices.SortFunc(buf, order)
		return buf, tmp
	}
	// A radix sort by p (stable: equal ones keep their order), skipping the
	// bytes all share; then the runs of equal p by the rest of the string.
	tmp = slices.Grow(tmp[:0], n)[:n]
	for shift := 0; shift < 64; shift += 8 {
		var count [256]int
		for k := range buf {
			count[byte(buf[k].p>>shift)]++
		}
		if count[byte(buf[0].p>>shift)] == n {
			continue
		}
		at := 0
		for d, m := range count {
			count[d] = at
			at += m
		}
		for k := range buf {
			d := byte(buf[k].p >> shift)
			tmp[count[d]] = buf[k]
			count[d]++
		}
		buf, tmp = tmp, buf
	}
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && buf[hi].p == buf[lo].p {
			hi++
		}
		if hi-lo > 1 {
			slices.SortFunc(buf[lo:hi], order)
		}
		lo = hi
	}
	clear(tmp)
	return buf, tmp[:0]
}

// keySorter sorts a checkpoint's keys, keeping its scratch space.
type keySorter struct {
	buf, tmp []sortKey
	bs       []*bucket
	vn       []uint16
}

// strings sorts ks in byte order.
func (ks *keySorter) strings(keys []string) {
	if len(keys) < 2 {
		return
	}
	ks.buf, ks.tmp = sortKeys(len(keys), func(i int) string { return keys[i] }, false, ks.buf, ks.tmp)
	for k := range ks.buf {
		keys[k] = ks.buf[k].s
	}
	clear(ks.buf)
	ks.buf = ks.buf[:0]
}

// buckets sorts bs by store key (the join key's vnode, its length, then
// the key), stably: of two buckets of one key, the later one's writes must
// come last.
func (ks *keySorter) buckets(bs []*bucket) {
	if len(bs) < 2 {
		return
	}
	ks.buf, ks.tmp = sortKeys(len(bs), func(i int) string { return bs[i].jk }, true, ks.buf, ks.tmp)
	// Then by vnode, a counting sort (stable).
	var at [storage.VNodes + 1]int
	ks.vn = ks.vn[:0]
	for k := range ks.buf {
		v := storage.VNodeLen(bs[ks.buf[k].i].jk)
		ks.vn = append(ks.vn, v)
		at[v+1]++
	}
	for v := 1; v <= storage.VNodes; v++ {
		at[v] += at[v-1]
	}
	ks.bs = append(ks.bs[:0], bs...)
	for k := range ks.buf {
		v := ks.vn[k]
		bs[at[v]] = ks.bs[ks.buf[k].i]
		at[v]++
	}
	clear(ks.buf)
	ks.buf = ks.buf[:0]
	clear(ks.bs)
	ks.bs = ks.bs[:0]
}

// StoredRows returns the number of distinct rows the join keeps in memory
// plus the row count of its spilled buckets.
func (j *Join) StoredRows() int {
	n := 0
	for side := 0; side < 2; side++ {
		for _, b := range j.s[side].hot {
			if b.spilled {
				n += int(b.total)
			} else {
				n += len(b.rows.list)
			}
		}
		for _, c := range j.s[side].cold {
			n += int(c)
		}
		n += int(j.s[side].forgot)
	}
	return n
}
