package ops

import (
	"sluice/exec/flow"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// aggSpill bounds an aggregation's memory: its groups in memory are a
// cache of the state in the store. When the operators' shared state cache
// (storage.StateCache) is over its limit, a checkpoint evicts clean groups
// (written by a committed epoch, not touched since, not referenced since
// the last pass) and a row of an evicted group reads it back (a point
// lookup, answered by the bloom filters when the group is new). Until the
// first eviction nothing is read: a missing group is a new one.
type aggSpill struct {
	db    *storage.DB // nil: a batch query (nothing saved or spilled)
	cache *storage.StateCache
	// bytes estimates the memory of the groups held; reported is what
	// was last added to the cache.
	bytes, reported int64
	// spilled: the store may hold groups that are not in memory.
	spilled bool
	// gone holds the groups dropped by epochs not yet known committed,
	// with the epoch that deleted them: the store may still show them.
	gone map[string]uint64
	// evicted and loaded count groups spilled and read back; lookups the
	// group lookups, reads those that went to the store.
	evicted, loaded int
	lookups, reads  int64
	// entryKeys is a Bloom filter (sparse: 16 bits a key) of the store
	// keys of evicted multiset entries (count(DISTINCT) and min/max sets
	// only, setClass.entries): a value the filter rules out is new to its
	// set and costs no read.
	// entriesOut and entriesIn count entries evicted and read back,
	// entryReads the store reads for entries.
	entryKeys                         keyFilter
	entriesOut, entriesIn, entryReads int64
	// groupKeys is a Bloom filter (sparse) of the keys of the groups in
	// the store but not in memory (evicted, or left there at start-up): a
	// group it rules out is new and costs no read.
	groupKeys keyFilter
	// covered holds the groups evicted with a split count(DISTINCT) set
	// whose entries were all added to entryKeys then: read back, such a
	// set is not cold. (A group left in the store at start-up is.)
	covered map[string]struct{}
}

// StateStats implements flow.StateReporter.
func (a *Agg) StateStats() flow.StateStats {
	return flow.StateStats{Bytes: a.mem(), Keys: int64(len(a.groups)), Lookups: a.spill.lookups, Misses: a.spill.reads + a.spill.entryReads}
}

// Spills returns how many groups the aggregation has evicted and read
// back.
func (a *Agg) Spills() (evicted, loaded int) { return a.spill.evicted, a.spill.loaded }

// EntrySpills returns how many count(DISTINCT) multiset entries the
// aggregation has evicted and read back, and its store reads for entries.
func (a *Agg) EntrySpills() (evicted, loaded, reads int64) {
	return a.spill.entriesOut, a.spill.entriesIn, a.spill.entryReads
}

// entryBytes estimates the memory of one multiset entry of key k.
func entryBytes(k string) int64 { return 2*int64(len(k)) + 160 }

// groupMem estimates the memory of group g with its multisets.
func (a *Agg) groupMem(g *group) int64 {
	n := groupBytes(g.key, len(g.k), len(a.aggs))
	for c := range g.sets {
		for k := range g.sets[c].m {
			n += entryBytes(k)
		}
	}
	return n
}

// loadState reads the stored groups while the state cache has room; the
// others stay in the store, their keys in the filter of groups not in
// memory, and are read back when a row needs them. A group's header (h)
// sorts just before its set entries (s), all under its key in one vnode
// (headerKey); the entries of a large count(DISTINCT) set that no longer
// fit stay in the store too (the set is cold).
func (a *Agg) loadState(db *storage.DB) error {
	s := &a.spill
	s.db, s.cache = db, db.StateCache()
	s.entryKeys.sparse, s.groupKeys.sparse = true, true
	room := s.cache.Limit() - s.cache.Used()
	full := false // the cache is full: the other groups' keys go to the filter
	err := db.Scan(storage.StatePrefix(a.opID), func(k, v []byte) error {
		gkb, rest, ok := storage.SplitStateKeyLen(storage.StateUserKey(k))
		if !ok || len(rest) == 0 {
			return pgerror.New(pgcode.DataCorrupted, "corrupt aggregate state key")
		}
		switch rest[0] {
		case 'h':
			if len(rest) != 1 {
				return pgerror.New(pgcode.DataCorrupted, "corrupt aggregate state key")
			}
			if full = full || s.bytes >= room; full {
				s.spilled = true
				s.groupKeys.add(string(gkb))
				return nil
			}
			g, err := a.decodeGroup(v)
			if err != nil {
				return err
			}
			g.k = string(gkb)
			a.groups[g.k] = g
			s.bytes += a.groupMem(g) // with its inline sets
		case 's':
			if len(rest) < 2 {
				return pgerror.New(pgcode.DataCorrupted, "corrupt aggregate set key")
			}
			ci := int(rest[1])
			g := a.groups[string(gkb)]
			if g == nil && full {
				return nil // an entry of a group left in the store
			}
			if g == nil || ci >= len(g.sets) {
				return pgerror.New(pgcode.DataCorrupted, "aggregate set entry without its group")
			}
			if a.classes[ci].entries && s.bytes >= room {
				// Left in the store: a value not in memory is read.
				vs := &g.sets[ci]
				if !vs.spilled && (a.classes[ci].mins || a.classes[ci].maxs) {
					vs.ext = loadedExtent(vs) // the entries after those loaded
				}
				vs.split, vs.spilled, vs.cold = true, true, true
				return nil
			}
			s.bytes += entryBytes(string(rest[2:]))
			return a.restoreStored(g, ci, string(rest[2:]), v)
		default:
			return pgerror.New(pgcode.DataCorrupted, "corrupt aggregate state key")
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, g := range a.groups {
		if g.resum {
			if err := a.resum(g); err != nil {
				return err
			}
		}
	}
	a.report()
	return nil
}

// resum computes the exact DISTINCT sums of group g, whose header an
// older build wrote (it did not keep them), from its sets: inline, or all
// their entries in the store. The group is written again at the next
// checkpoint, with the marker.
func (a *Agg) resum(g *group) error {
	for c := range a.classes {
		cl := &a.classes[c]
		var slots []int
		for s, j := range cl.slots {
			if exactDistinctSum(&a.aggs[j]) {
				slots = append(slots, s)
				g.accs[j].i, g.accs[j].dp, g.accs[j].xs = 0, nil, nil
			}
		}
		if len(slots) == 0 {
			continue
		}
		add := func(e *setEntry) error {
			for _, s := range slots {
				if j := cl.slots[s]; e.n[s] != 0 {
					if err := a.distinctAdd(&g.accs[j], &a.aggs[j], e.v, 1); err != nil {
						return err
					}
				}
			}
			return nil
		}
		vs := &g.sets[c]
		if !vs.split && len(vs.m) > 0 { // inline (a split set is not marked so before it is read)
			for _, e := range vs.m {
				if err := add(e); err != nil {
					return err
				}
			}
			continue
		}
		pre := a.setEntryKeyInto(nil, g.k, c)
		err := a.spill.db.Scan(pre, func(k, v []byte) error {
			r, err := types.DecodeRow(v)
			if err != nil || len(r) != 1+len(cl.slots) {
				return pgerror.New(pgcode.DataCorrupted, "corrupt aggregate set entry")
			}
			e := setEntry{v: r[0]}
			for s := range cl.slots {
				e.n[s] = r[1+s].I
			}
			return add(&e)
		})
		if err != nil {
			return err
		}
	}
	g.resum = false
	g.dirty = true
	a.dirty[g.k] = struct{}{}
	return nil
}

// restoreStored puts the stored entry vk = v of class ci into group g.
func (a *Agg) restoreStored(g *group, ci int, vk string, v []byte) error {
	if ci >= len(g.sets) {
		return pgerror.New(pgcode.DataCorrupted, "corrupt aggregate set key")
	}
	r, err := types.DecodeRow(v)
	if err != nil || len(r) != 1+len(a.classes[ci].slots) {
		return pgerror.New(pgcode.DataCorrupted, "corrupt aggregate set entry")
	}
	e := &setEntry{v: r[0], k: vk}
	for s := range a.classes[ci].slots {
		e.n[s] = r[1+s].I
	}
	a.restoreEntry(g, ci, e)
	g.sets[ci].split = true
	return nil
}

// lookup returns group k: in memory, or read back from the store if it
// was evicted; nil if there is none.
func (a *Agg) lookup(k []byte) (*group, error) {
	a.spill.lookups++
	if g := a.groups[string(k)]; g != nil || !a.spill.spilled {
		return g, nil
	}
	if _, ok := a.dirty[string(k)]; ok {
		return nil, nil // dropped by this epoch
	}
	if _, ok := a.spill.gone[string(k)]; ok {
		return nil, nil // dropped by an epoch that may not be committed
	}
	if !a.spill.groupKeys.has(string(k)) {
		return nil, nil // never evicted: a new group
	}
	return a.readBack(string(k))
}

// readBack reads evicted group k from the store.
func (a *Agg) readBack(k string) (*group, error) {
	a.spill.reads++
	v, err := a.spill.db.Get(a.headerKey(k))
	if err != nil || v == nil {
		return nil, err
	}
	g, err := a.decodeGroup(v)
	if err != nil {
		return nil, err
	}
	g.k = k
	if g.resum {
		if err := a.resum(g); err != nil {
			return nil, err
		}
	}
	// The stored entries of a count(DISTINCT) set stay there: the group's
	// counters hold its results, and a value is read when a row brings it
	// (if the filter of evicted entries does not rule it out).
	_, covered := a.spill.covered[k]
	delete(a.spill.covered, k)
	for c := range a.classes {
		cl := &a.classes[c]
		if !cl.entries {
			continue
		}
		vs := &g.sets[c]
		if len(vs.m) > 0 { // inline sets came with the header
			continue
		}
		vs.split, vs.spilled, vs.cold = true, true, !covered
		if cl.mins || cl.maxs {
			if err := a.readEnds(g, c); err != nil {
				return nil, err
			}
		}
	}
	for c := range a.classes {
		if a.classes[c].entries {
			continue
		}
		sp := a.setEntryKeyInto(nil, k, c)
		err := a.spill.db.Scan(sp, func(key, v []byte) error {
			return a.restoreStored(g, c, string(key[len(sp):]), v)
		})
		if err != nil {
			return nil, err
		}
	}
	a.groups[k] = g
	a.spill.bytes += a.groupMem(g)
	a.spill.loaded++
	return g, nil
}

// readEntry reads the stored entry of value key vk in class c's set of
// group g (spilled), puts it in the set and returns it; nil if the store
// has none. The filter of evicted entries answers for values never
// evicted unless the set is cold.
func (a *Agg) readEntry(g *group, c int, vk []byte) (*setEntry, error) {
	s := &a.spill
	vs := &g.sets[c]
	a.ekBuf = append(a.setEntryKeyInto(a.ekBuf[:0], g.k, c), vk...)
	if !vs.cold && !s.entryKeys.has(string(a.ekBuf)) {
		return nil, nil
	}
	s.entryReads++
	v, err := s.db.Get(a.ekBuf)
	if err != nil || v == nil {
		return nil, err
	}
	r, err := types.DecodeRow(v)
	if err != nil || len(r) != 1+len(a.classes[c].slots) {
		return nil, pgerror.New(pgcode.DataCorrupted, "corrupt aggregate set entry")
	}
	e := &setEntry{v: r[0], k: string(vk)}
	for sl := range a.classes[c].slots {
		e.n[sl] = r[1+sl].I
	}
	vs.m[e.k] = e
	if vs.known != 0 {
		var mask uint8
		for sl := range a.classes[c].slots {
			if e.n[sl] != 0 {
				mask |= 1 << sl
			}
		}
		a.classes[c].offer(vs, e, mask, 0)
	}
	s.bytes += entryBytes(e.k)
	s.entriesIn++
	return e, nil
}

// coverEntries adds the stored entries of group g's split count(DISTINCT)
// and min/max sets that are in memory to the filter of evicted entries, as g is
// evicted: if none of its sets is cold, every stored entry is then in the
// filter, and g is covered.
func (a *Agg) coverEntries(g *group) {
	s := &a.spill
	split, cold := false, false
	for c := range g.sets {
		vs := &g.sets[c]
		if !a.classes[c].entries || !vs.split {
			continue
		}
		split, cold = true, cold || vs.cold
		for vk, e := range vs.m {
			if !e.zero() {
				a.ekBuf = append(a.setEntryKeyInto(a.ekBuf[:0], g.k, c), vk...)
				s.entryKeys.add(string(a.ekBuf))
			}
		}
	}
	if split && !cold {
		if s.covered == nil {
			s.covered = map[string]struct{}{}
		}
		s.covered[g.k] = struct{}{}
	}
}

// evictEntries drops clean entries of count(DISTINCT) and min/max sets
// from memory (written by a committed epoch, not touched since the last
// pass) until the aggregation's memory (own) is at most target; a min/max
// set keeps the entries at its ends (narrow). Tombstones whose deletion is
// committed simply go.
func (a *Agg) evictEntries(own, target int64, committed uint64) {
	s := &a.spill
	for pass := 0; pass < 2 && own > target; pass++ {
		for _, g := range a.groups {
			if own <= target {
				break
			}
			for c := range g.sets {
				vs := &g.sets[c]
				cl := &a.classes[c]
				// A set not yet spilled dropped its deleted entries from
				// memory: it may spill once their deletions are committed
				// (before, the store would show them again).
				if !cl.entries || !vs.split || len(vs.changed) > 0 || (!vs.spilled && vs.gone > committed) {
					continue
				}
				if (cl.mins || cl.maxs) && !a.narrow(vs, cl) {
					continue // too small to leave its ends
				}
				for vk, e := range vs.m {
					if own <= target {
						break
					}
					if e.changed || e.saved > committed || (!e.zero() && !vs.ext.inside(vk)) {
						continue
					}
					if e.ref && !e.zero() {
						e.ref = false
						continue
					}
					if !e.zero() {
						a.ekBuf = append(a.setEntryKeyInto(a.ekBuf[:0], g.k, c), vk...)
						s.entryKeys.add(string(a.ekBuf))
						s.entriesOut++
					}
					n := entryBytes(vk)
					own -= n
					s.bytes -= n
					vs.forget(e)
					delete(vs.m, vk)
					vs.spilled = true
				}
			}
		}
	}
}

// storedKeys calls f with the key of every group in the store that is
// not in memory (nor dropped): the groups a first watermark must index.
func (a *Agg) storedKeys(f func(k string, key types.Row)) error {
	if !a.spill.spilled {
		return nil
	}
	return a.spill.db.Scan(storage.StatePrefix(a.opID), func(k, v []byte) error {
		gkb, rest, ok := storage.SplitStateKeyLen(storage.StateUserKey(k))
		if !ok || len(rest) == 0 {
			return pgerror.New(pgcode.DataCorrupted, "corrupt aggregate state key")
		}
		if rest[0] != 'h' {
			return nil // a set entry: its group's header came before it
		}
		gk := string(gkb)
		if _, ok := a.groups[gk]; ok {
			return nil
		}
		if _, ok := a.dirty[gk]; ok {
			return nil
		}
		if _, ok := a.spill.gone[gk]; ok {
			return nil
		}
		g, err := a.decodeGroup(v)
		if err != nil {
			return err
		}
		f(gk, g.key)
		return nil
	})
}

// reportStep is how much an operator's state may grow between two
// checkpoints before it tells the state cache: a cache over its limit then
// asks for a checkpoint at once (storage.StateCache.Full), so that the
// epoch's state becomes clean and can be evicted, instead of growing with
// the rows of one checkpoint interval.
const reportStep = 1 << 20

// mem is the aggregation's memory: its groups and its filters.
func (a *Agg) mem() int64 {
	return a.spill.bytes + a.spill.groupKeys.bytes() + a.spill.entryKeys.bytes()
}

// report tells the state cache the memory the groups hold now.
func (a *Agg) report() {
	s := &a.spill
	if s.cache == nil {
		return
	}
	m := a.mem()
	s.cache.Add(m - s.reported)
	s.reported = m
}

// settle forgets the drops of committed epochs.
func (a *Agg) settle(committed uint64) {
	for k, e := range a.spill.gone {
		if e <= committed {
			delete(a.spill.gone, k)
		}
	}
}

// markGone records that epoch e deletes group k from the store.
func (a *Agg) markGone(k string, e uint64) {
	if a.spill.db == nil {
		return
	}
	if a.spill.gone == nil {
		a.spill.gone = map[string]uint64{}
	}
	a.spill.gone[k] = e
}

// evict drops clean groups from memory, saved by an epoch at or before
// the committed one and not referenced since the last pass, until the
// aggregation's memory fits its share of the state cache.
func (a *Agg) evict(committed uint64) {
	s := &a.spill
	if s.cache == nil {
		return
	}
	a.report()
	own := a.mem()
	target := s.cache.Target(own)
	for pass := 0; pass < 2 && own > target; pass++ {
		for k, g := range a.groups {
			if own <= target {
				break
			}
			if g.dirty || g.touch != nil || g.saved > committed || (a.global && k == "") {
				continue
			}
			if g.ref {
				g.ref = false
				continue
			}
			n := a.groupMem(g)
			own -= n
			s.bytes -= n
			a.coverEntries(g)
			s.groupKeys.add(k)
			delete(a.groups, k)
			s.spilled = true
			s.evicted++
		}
	}
	if own > target {
		a.evictEntries(own, target, committed)
	}
	a.report()
}

// chargeGroup counts a new group's memory.
func (a *Agg) chargeGroup(key types.Row, k []byte) error {
	n := groupBytes(key, len(k), len(a.aggs))
	if err := a.Guard.Grow(n); err != nil {
		return err
	}
	a.spill.bytes += n
	return nil
}

// Release implements flow.Releaser: the groups' memory leaves the state
// cache's count when the aggregation stops.
func (a *Agg) Release() {
	a.spill.bytes = 0
	a.spill.groupKeys, a.spill.entryKeys = keyFilter{}, keyFilter{}
	a.report()
}
