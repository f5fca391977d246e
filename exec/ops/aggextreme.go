package ops

import (
	"errors"
	"slices"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// A min or max over an input with retractions keeps the multiset of its
// group's values, so that it stays right when the current extreme is
// deleted. Such a set spills entry by entry, as a count(DISTINCT) set
// does (aggspill.go), but keeps in memory the entries at the end(s) of
// the value order its aggregates look at: its stored entries not in
// memory lie in an extent (lo, hi), every entry at or below lo and at or
// above hi being in memory. The minimum is then in memory while a live
// entry at or below lo is; when the last of them goes, the next entries
// are read from the store in key order (the key encoding orders values as
// Compare does, for the types keyOrdered accepts) and lo moves up. This is
// the cache of RisingWave's min/max state, built on the stored entries.

// extremeKeep is how many entries a spilled min/max set keeps at each end
// it serves, and how many a read of the store brings back at least.
var extremeKeep = 64

// extent bounds the stored entries of a spilled min/max set that may be
// missing from memory: their keys lie strictly between lo and hi (a
// missing bound is infinite); none: there are none.
type extent struct {
	lo, hi       string
	hasLo, hasHi bool
	none         bool
}

// inside reports whether an entry of key k may be in the store and not in
// memory (always, for a set without an extent: a count(DISTINCT) set).
func (x *extent) inside(k string) bool {
	if x == nil {
		return true
	}
	return !x.empty() && (!x.hasLo || k > x.lo) && (!x.hasHi || k < x.hi)
}

func (x *extent) empty() bool { return x.none || (x.hasLo && x.hasHi && x.lo >= x.hi) }

// isExtreme reports whether aggregate function f is min or max.
func isExtreme(f string) bool { return f == "min" || f == "max" }

// keyOrdered reports whether the key encodings of values of family f
// compare bytewise as Compare orders them: the values of such a column
// are all of one kind. (A numeric column may hold integers and decimals,
// whose keys order by kind first.)
func keyOrdered(f types.Family) bool {
	switch f {
	case types.Int2, types.Int4, types.Int8, types.Float4, types.Float8, types.Text, types.Varchar,
		types.Bytea, types.UUID, types.Date, types.Time, types.Timestamp, types.TimestampTZ:
		return true
	}
	return false
}

// bestEntry returns the entry of vs in memory with the smallest (or
// largest) value among those counted by slot; nil if none. It is cached
// per slot (vset.top): a row that brings a better value replaces it
// (offer), and it is found again, by a pass over the set, only after the
// entry it names loses its last row or leaves memory.
func bestEntry(vs *vset, slot int, max bool) *setEntry {
	if vs.known&(1<<slot) != 0 {
		return vs.top[slot]
	}
	var best *setEntry
	for _, e := range vs.m {
		if e.n[slot] == 0 {
			continue
		}
		if best == nil {
			best = e
			continue
		}
		c := types.Compare(e.v, best.v)
		if (!max && c < 0) || (max && c > 0) {
			best = e
		}
	}
	vs.top[slot], vs.known = best, vs.known|1<<slot
	return best
}

// offer updates the cached extremes of vs with entry e, which now counts
// rows for the slots of mask, or no longer counts any for those of lost
// (cl's min and max slots only).
func (cl *setClass) offer(vs *vset, e *setEntry, mask, lost uint8) {
	for s := range cl.slots {
		bit := uint8(1) << s
		if cl.dir[s] == 0 || vs.known&bit == 0 {
			continue
		}
		switch t := vs.top[s]; {
		case lost&bit != 0:
			if t == e {
				vs.known &^= bit
			}
		case mask&bit != 0 && t != e:
			if t == nil {
				vs.top[s] = e
			} else if c := types.Compare(e.v, t.v); (cl.dir[s] < 0 && c < 0) || (cl.dir[s] > 0 && c > 0) {
				vs.top[s] = e
			}
		}
	}
}

// forget drops the cached extremes of vs that name e, which leaves memory.
func (vs *vset) forget(e *setEntry) {
	for s, t := range vs.top {
		if t == e {
			vs.top[s] = nil
			vs.known &^= 1 << s
		}
	}
}

// loadedExtent returns the extent of a set whose entries were loaded in
// key order up to those now in memory, the rest left in the store.
func loadedExtent(vs *vset) *extent {
	x := &extent{}
	for k := range vs.m {
		if !x.hasLo || k > x.lo {
			x.lo, x.hasLo = k, true
		}
	}
	return x
}

// errEnough stops a scan of stored entries.
var errEnough = errors.New("enough entries")

// scanEntries reads the stored entries of class c's set of group g with
// keys in the set's extent, ascending (desc: descending), putting those
// not in memory into it, and calls f with each entry (in memory or read);
// f returns false to stop. It returns the key of the last entry seen and
// whether the scan reached the end of the extent.
func (a *Agg) scanEntries(g *group, c int, desc bool, f func(e *setEntry) bool) (last string, done bool, err error) {
	vs := &g.sets[c]
	pre := a.setEntryKeyInto(nil, g.k, c)
	lo, hi := pre, storage.PrefixEnd(pre)
	if x := vs.ext; x != nil {
		if x.hasLo {
			lo = append(append(slices.Clip(pre), x.lo...), 0) // the first key after lo
		}
		if x.hasHi {
			hi = append(slices.Clip(pre), x.hi...)
		}
	}
	ns := len(a.classes[c].slots)
	visit := func(k, v []byte) error {
		vk := string(k[len(pre):])
		e := vs.m[vk]
		if e == nil {
			r, err := types.DecodeRow(v)
			if err != nil || len(r) != 1+ns {
				return pgerror.New(pgcode.DataCorrupted, "corrupt aggregate set entry")
			}
			e = &setEntry{v: r[0], k: vk}
			for sl := 0; sl < ns; sl++ {
				e.n[sl] = r[1+sl].I
			}
			vs.m[vk] = e
			a.spill.bytes += entryBytes(vk)
			a.spill.entriesIn++
		}
		last = vk
		if !f(e) {
			return errEnough
		}
		return nil
	}
	a.spill.entryReads++
	if desc {
		err = a.spill.db.ScanRangeDesc(lo, hi, visit)
	} else {
		err = a.spill.db.ScanRange(lo, hi, visit)
	}
	if errors.Is(err, errEnough) {
		return last, false, nil
	}
	return last, err == nil, err
}

// readEnds reads back the ends of class c's set of group g, read back
// without its entries: the extremeKeep smallest entries if the class has a
// min, the largest if it has a max. A set that comes back whole is no
// longer spilled.
func (a *Agg) readEnds(g *group, c int) error {
	cl := &a.classes[c]
	vs := &g.sets[c]
	if vs.m == nil {
		vs.m = map[string]*setEntry{}
	}
	vs.ext = &extent{}
	whole := false
	for _, desc := range []bool{false, true} {
		if whole || (!desc && !cl.mins) || (desc && !cl.maxs) {
			continue
		}
		n := 0
		last, done, err := a.scanEntries(g, c, desc, func(*setEntry) bool {
			n++
			return n < extremeKeep
		})
		if err != nil {
			return err
		}
		if done {
			whole = true
		} else if desc {
			vs.ext.hi, vs.ext.hasHi = last, true
		} else {
			vs.ext.lo, vs.ext.hasLo = last, true
		}
	}
	if whole || vs.ext.empty() {
		vs.spilled, vs.cold, vs.ext = false, false, nil
	}
	return nil
}

// extreme returns the min (or max) of slot slot of class c's set of group
// g, spilled: the best entry in memory if it lies at or below lo (at or
// above hi), else the first live entry of the store's next entries, which
// are read into memory with the extent moved past them.
func (a *Agg) extreme(g *group, c, slot int, max bool) (types.Datum, error) {
	vs := &g.sets[c]
	best := bestEntry(vs, slot, max)
	x := vs.ext
	switch {
	case x.empty(),
		!max && best != nil && x.hasLo && best.k <= x.lo,
		max && best != nil && x.hasHi && best.k >= x.hi:
		return valueOf(best), nil
	}
	var found *setEntry
	n := 0
	last, done, err := a.scanEntries(g, c, max, func(e *setEntry) bool {
		n++
		if found == nil && e.n[slot] != 0 {
			found = e
		}
		return found == nil || n < extremeKeep
	})
	if err != nil {
		return types.Null, err
	}
	vs.known = 0 // entries came into memory
	switch {
	case done:
		x.none = true // every stored entry of the set is in memory now
	case max:
		x.hi, x.hasHi = last, true
	default:
		x.lo, x.hasLo = last, true
	}
	if found != nil && (best == nil || (types.Compare(found.v, best.v) < 0) != max) {
		best = found
	}
	return valueOf(best), nil
}

func valueOf(e *setEntry) types.Datum {
	if e == nil {
		return types.Null
	}
	return e.v
}

// narrow widens the extent of vs (of class cl, about to have entries
// evicted) so that its extremeKeep smallest entries in memory (if cl has
// a min) and largest (if a max) stay out of it: eviction takes entries
// inside the extent only. It reports whether any entry is inside.
func (a *Agg) narrow(vs *vset, cl *setClass) bool {
	fresh := !vs.spilled || vs.ext == nil || vs.ext.empty() // every stored entry is in memory
	if fresh && len(vs.m) <= 2*extremeKeep {
		return false
	}
	keys := make([]string, 0, len(vs.m))
	for k := range vs.m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	x := &extent{}
	if cl.mins && len(keys) > 0 {
		x.lo, x.hasLo = keys[min(extremeKeep, len(keys))-1], true
		if !fresh && (!vs.ext.hasLo || vs.ext.lo < x.lo) {
			x.lo, x.hasLo = vs.ext.lo, vs.ext.hasLo
		}
	}
	if cl.maxs && len(keys) > 0 {
		x.hi, x.hasHi = keys[max(len(keys)-extremeKeep, 0)], true
		if !fresh && (!vs.ext.hasHi || vs.ext.hi > x.hi) {
			x.hi, x.hasHi = vs.ext.hi, vs.ext.hasHi
		}
	}
	if x.empty() {
		return false
	}
	vs.ext = x
	return true
}
