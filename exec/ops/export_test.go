package ops

import "math"

// SetSplitSetAt lowers the size from which aggregate multisets are stored
// entry by entry (so tests exercise both layouts); it returns the undo.
func SetSplitSetAt(n int) func() {
	old := splitSetAt
	splitSetAt = n
	return func() { splitSetAt = old }
}

// SetExtremeKeep sets how many entries a spilled min/max multiset keeps
// at each end; it returns the undo.
func SetExtremeKeep(n int) func() {
	old := extremeKeep
	extremeKeep = n
	return func() { extremeKeep = old }
}

// SetLegacyDistinctSums makes new aggregations behave as the builds
// before exact DISTINCT sums were kept (their state has no marker); it
// returns the undo.
func SetLegacyDistinctSums(on bool) func() {
	old := legacyDistinctSums
	legacyDistinctSums = on
	return func() { legacyDistinctSums = old }
}

// SortStrings sorts row keys as the join's checkpoint does.
func SortStrings(ks []string) { new(keySorter).strings(ks) }

// SortKeyOrder returns the positions of ks in the order the join's
// checkpoint sorts them (lenFirst: join keys, by length first).
func SortKeyOrder(ks []string, lenFirst bool) []int {
	buf, _ := sortKeys(len(ks), func(i int) string { return ks[i] }, lenFirst, nil, nil)
	pos := make([]int, len(buf))
	for k := range buf {
		pos[k] = buf[k].i
	}
	return pos
}

// HeldCounts returns how many spilled buckets' row counts the join holds
// in memory.
func (j *Join) HeldCounts() int { return len(j.s[0].cold) + len(j.s[1].cold) }

// TemporalState returns how many rows temporal filter f holds and the
// time its output is as of.
func TemporalState(f *TemporalFilter) (rows int, cur int64) { return len(f.rows), f.cur }

// StoredWindows returns how many windows a window max join holds and how
// many rows they keep.
func (j *WindowMaxJoin) StoredWindows() (wins, rows int) {
	for _, w := range j.wins {
		rows += len(w.cands)
	}
	return len(j.wins), rows
}

// StoredCounts returns how many windows a window top count holds, how
// many counts they keep, and the earliest end among them.
func (o *WindowTopCount) StoredCounts() (wins, counts int, firstEnd int64) {
	firstEnd = math.MaxInt64
	for start, w := range o.wins {
		counts += len(w.cs)
		firstEnd = min(firstEnd, start+o.w.Win.Size)
	}
	return len(o.wins), counts, firstEnd
}
