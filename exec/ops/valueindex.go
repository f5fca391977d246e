package ops

import "math"

// valueIndex indexes keys (aggregation groups, join buckets) by the value
// of one watermarked column, so that a watermark finds the keys below it
// without looking at every key: low is a lower bound of the values held,
// and a watermark at or below it costs nothing.
type valueIndex struct {
	m   map[int64]map[string]struct{}
	low int64
	// lists, in place of m (newListIndex), holds each value's keys in the
	// order added, without removing any before takeBelow: for keys that
	// rarely go before their value is taken (an append-only input's
	// windows), a slice append instead of a set insert.
	lists map[int64][]string
}

func newValueIndex() *valueIndex {
	return &valueIndex{m: map[int64]map[string]struct{}{}, low: math.MaxInt64}
}

// newListIndex returns an index whose remove does nothing: takeBelow may
// return a key that was removed, or a key twice; the caller skips those.
func newListIndex() *valueIndex {
	return &valueIndex{lists: map[int64][]string{}, low: math.MaxInt64}
}

func (x *valueIndex) add(v int64, k string) {
	if x.lists != nil {
		x.lists[v] = append(x.lists[v], k)
		if v < x.low {
			x.low = v
		}
		return
	}
	s := x.m[v]
	if s == nil {
		s = map[string]struct{}{}
		x.m[v] = s
	}
	s[k] = struct{}{}
	if v < x.low {
		x.low = v
	}
}

// remove drops k (low stays a lower bound).
func (x *valueIndex) remove(v int64, k string) {
	if x.lists != nil {
		return
	}
	if s := x.m[v]; s != nil {
		delete(s, k)
		if len(s) == 0 {
			delete(x.m, v)
		}
	}
}

// takeBelow removes and returns the keys whose value is below ts.
func (x *valueIndex) takeBelow(ts int64) []string {
	if ts <= x.low {
		return nil
	}
	var out []string
	low := int64(math.MaxInt64)
	for v, l := range x.lists {
		if v >= ts {
			low = min(low, v)
			continue
		}
		out = append(out, l...)
		delete(x.lists, v)
	}
	for v, s := range x.m {
		if v >= ts {
			if v < low {
				low = v
			}
			continue
		}
		for k := range s {
			out = append(out, k)
		}
		delete(x.m, v)
	}
	x.low = low
	return out
}
