package ops

import (
	"encoding/binary"
	"sort"

	"sluice/exec/flow"
	"sluice/exec/limit"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// windowSpill bounds a window operator's memory (window functions, Top-N,
// deduplication, session windows): its partitions in memory are a cache
// of the state in the store, as an aggregation's groups are (aggspill.go).
// When the shared state cache is over its limit, a checkpoint evicts clean
// partitions (saved by a committed epoch, not touched since, not
// referenced since the last pass) and a row of an evicted partition reads
// it back (a prefix scan of its rows, whose output is computed again: it
// is what was emitted, a function of the rows). An in-memory Bloom filter
// of the evicted partitions' keys (keyFilter, ~10 bits a key) spares a
// new partition the read: a stream of new keys, the common case of a
// dedup or a per-key Top-N, costs no I/O.
//
// Closed sessions of an evicted partition leave the store when the
// partition is read back (their rows are then dropped as usual); until
// then they take disk, not memory.
type windowSpill struct {
	db    *storage.DB // nil: a batch query (nothing saved or spilled)
	cache *storage.StateCache
	// bytes estimates the memory of the partitions held; reported is
	// what was last added to the cache (with the filter's memory).
	bytes, reported int64
	// spilled: the store may hold partitions that are not in memory;
	// evictedKeys holds their keys (and, falsely, ~1% of others).
	spilled     bool
	evictedKeys keyFilter
	// gone holds the partitions emptied by epochs not yet known
	// committed, with that epoch (0: the coming barrier's): the store may
	// still show their rows.
	gone map[string]uint64
	// dirty lists the partitions changed since the last barrier.
	dirty []string
	// evicted and loaded count partitions spilled and read back; lookups
	// the partition lookups, reads those that went to the store.
	evicted, loaded int
	lookups, reads  int64
}

// partOverhead estimates the memory of a partition beyond its rows: the
// map entry with its key, the wpart, the dirty and touched entries.
func partOverhead(pk string) int64 { return 2*int64(len(pk)) + 200 }

// rowMem estimates the memory of an input row held in a partition (with
// its slot in the rows slice).
func rowMem(r types.Row) int64 { return limit.RowBytes(r) + 16 }

// outMem estimates the memory of one output row (its datums share the
// input row's strings).
func (w *Window) outMem() int64 {
	return 24 + 16 + int64(w.inCols+len(w.n.WinFuncs))*int64(limit.DatumBytes(types.Datum{}))
}

// charge adds d bytes to partition p's memory and the operator's.
func (w *Window) charge(p *wpart, d int64) {
	p.mem += d
	w.spill.bytes += d
}

// StateStats implements flow.StateReporter.
func (w *Window) StateStats() flow.StateStats {
	s := &w.spill
	return flow.StateStats{Bytes: s.bytes + s.evictedKeys.bytes(), Keys: int64(len(w.parts)), Lookups: s.lookups, Misses: s.reads}
}

// Spills returns how many partitions the operator has evicted and read
// back.
func (w *Window) Spills() (evicted, loaded int) { return w.spill.evicted, w.spill.loaded }

// report tells the state cache the memory the partitions (and the filter
// of the evicted ones) hold now.
func (w *Window) report() {
	s := &w.spill
	if s.cache == nil {
		return
	}
	n := s.bytes + s.evictedKeys.bytes()
	s.cache.Add(n - s.reported)
	s.reported = n
}

// Release implements flow.Releaser: the partitions' memory leaves the
// state cache's count when the operator stops.
func (w *Window) Release() {
	w.spill.bytes = 0
	w.spill.evictedKeys = keyFilter{}
	w.report()
}

// partition returns partition pk: in memory, read back from the store if
// it was evicted, or a new empty one; it is marked changed.
func (w *Window) partition(pk []byte) (*wpart, error) {
	s := &w.spill
	s.lookups++
	p := w.parts[string(pk)]
	if p == nil {
		k := string(pk)
		var err error
		if p, err = w.readBack(k); err != nil {
			return nil, err
		}
		if p == nil {
			p = &wpart{}
			w.parts[k] = p
			w.charge(p, partOverhead(k))
		}
		delete(s.gone, k)
		w.markDirty(k, p)
		return p, nil
	}
	if !p.dirty {
		w.markDirty(string(pk), p)
	}
	p.ref = true
	return p, nil
}

// markDirty notes that partition pk changes in this epoch.
func (w *Window) markDirty(pk string, p *wpart) {
	p.ref = true
	if !w.stateful || p.dirty {
		return
	}
	p.dirty = true
	w.spill.dirty = append(w.spill.dirty, pk)
}

// dropPart deletes emptied partition pk from memory; its stored rows go at
// the next barrier (their deletions are pending).
func (w *Window) dropPart(pk string, p *wpart) {
	delete(w.parts, pk)
	w.spill.bytes -= p.mem
	if !w.stateful {
		return
	}
	if w.spill.gone == nil {
		w.spill.gone = map[string]uint64{}
	}
	w.spill.gone[pk] = 0
}

// readBack reads evicted partition pk from the store; nil if it has no
// rows there (or cannot have: not evicted, or emptied since).
func (w *Window) readBack(pk string) (*wpart, error) {
	s := &w.spill
	if !s.spilled || !s.evictedKeys.has(pk) {
		return nil, nil
	}
	if _, ok := s.gone[pk]; ok {
		return nil, nil
	}
	s.reads++
	p := &wpart{}
	prefix := storage.AppendStateKeyLen(nil, w.opID, pk)
	err := s.db.Scan(prefix, func(k, v []byte) error {
		return w.restoreRow(p, k[len(prefix):], v)
	})
	if err != nil || len(p.rows) == 0 {
		return nil, err
	}
	w.parts[pk] = p
	w.charge(p, partOverhead(pk))
	w.ready(p)
	s.loaded++
	return p, nil
}

// restoreRow adds the stored row rowb of count v to partition p (rows
// unsorted; see ready).
func (w *Window) restoreRow(p *wpart, rowb, v []byte) error {
	cnt, err := decodeWindowCount(v)
	if err != nil || cnt == 0 { // a count of 0: a row that went (see storage's countMerger)
		return err
	}
	row, err := types.DecodeRow(rowb)
	if err != nil {
		return err
	}
	m := rowMem(row)
	for ; cnt > 0; cnt-- {
		p.rows = append(p.rows, row)
		w.charge(p, m)
	}
	return nil
}

// ready sorts a restored partition's rows into window order and computes
// the output they give (what was emitted for them).
func (w *Window) ready(p *wpart) {
	sort.SliceStable(p.rows, func(i, j int) bool { return w.cmp(p.rows[i], p.rows[j]) < 0 })
	p.emitted = w.compute(p)
	p.from = len(p.rows)
	w.charge(p, int64(len(p.emitted))*w.outMem())
}

// settle records the epoch of the barrier b for the partitions changed
// since the last one, and forgets the drops of committed epochs.
func (w *Window) settle(epoch, committed uint64) {
	s := &w.spill
	for _, pk := range s.dirty {
		if p := w.parts[pk]; p != nil {
			p.dirty = false
			p.saved = epoch
		}
	}
	clear(s.dirty)
	s.dirty = s.dirty[:0]
	for k, e := range s.gone {
		switch {
		case e == 0:
			s.gone[k] = epoch
		case e <= committed:
			delete(s.gone, k)
		}
	}
}

// evict drops clean partitions from memory, saved at or before the
// committed epoch and not referenced since the last pass, until the
// operator's memory fits its share of the state cache.
func (w *Window) evict(committed uint64) {
	s := &w.spill
	if s.cache == nil {
		return
	}
	w.report()
	own := s.bytes
	target := s.cache.Target(own)
	for pass := 0; pass < 2 && own > target; pass++ {
		for pk, p := range w.parts {
			if own <= target {
				break
			}
			if p.dirty || p.saved > committed {
				continue
			}
			if p.ref {
				p.ref = false
				continue
			}
			own -= p.mem
			s.bytes -= p.mem
			delete(w.parts, pk)
			s.evictedKeys.add(pk)
			s.spilled = true
			s.evicted++
		}
	}
	w.report()
}

// loadState reads the stored partitions while the state cache has room;
// the keys of the others go into the filter of evicted partitions, and
// their rows stay in the store until a row reaches them. A partition's
// rows are adjacent (under its key, in one vnode), so the scan stops
// loading at a partition boundary.
func (w *Window) loadState(db *storage.DB) error {
	s := &w.spill
	s.db, s.cache = db, db.StateCache()
	room := s.cache.Limit() - s.cache.Used()
	var cur *wpart
	var curKey string
	err := db.Scan(storage.StatePrefix(w.opID), func(k, v []byte) error {
		pk, rowb, ok := storage.SplitStateKeyLen(storage.StateUserKey(k))
		if !ok {
			return pgerror.New(pgcode.DataCorrupted, "corrupt window state")
		}
		if cur == nil || string(pk) != curKey {
			if cur != nil {
				w.ready(cur)
			}
			cur, curKey = nil, string(pk)
			if s.spilled || s.bytes >= room {
				if !s.spilled || !s.evictedKeys.has(curKey) {
					s.evictedKeys.add(curKey)
				}
				s.spilled = true
				return nil
			}
			cur = &wpart{}
			w.parts[curKey] = cur
			w.charge(cur, partOverhead(curKey))
		}
		if cur == nil {
			return nil // a row of a partition left in the store
		}
		return w.restoreRow(cur, rowb, v)
	})
	if err != nil {
		return err
	}
	if cur != nil {
		w.ready(cur)
	}
	for pk, p := range w.parts {
		if len(p.rows) == 0 { // every stored row went (counts of 0)
			delete(w.parts, pk)
			w.spill.bytes -= p.mem
		}
	}
	w.report()
	return nil
}

// decodeWindowCount decodes a stored row's count.
func decodeWindowCount(v []byte) (int64, error) {
	cnt, n := binary.Varint(v)
	if n <= 0 || cnt < 0 {
		return 0, pgerror.New(pgcode.DataCorrupted, "corrupt window state")
	}
	return cnt, nil
}
