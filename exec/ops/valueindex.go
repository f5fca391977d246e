package ops

import "math"

// valueIndex indexes keys (aggregation groups, join buckets) by the value
// of one watermarked column, so that a watermark finds the keys below it
// without looking at every key: low is a lower bound of the values held,
// and a watermark at or below it costs nothing.
type valueIndex struct {
	m   map[int64]map[string]struct{}
	low int64
}

func newValueIndex() *valueIndex {
	return &valueIndex{m: map[int64]map[string]struct{}{}, low: math.MaxInt64}
}

func (x *valueIndex) add(v int64, k string) {
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
