package flow

import "math"

// wmKey names one watermark stream: a column of an input (or of the output).
type wmKey struct{ in, col int }

// wmTracker keeps the last watermark of each stream, so that the ones that
// do not advance are dropped: watermarks are monotonic per actor, whatever
// its inputs do.
type wmTracker map[wmKey]int64

// advance records ts for (in, col) and reports whether it is above the
// last one.
func (t wmTracker) advance(in, col int, ts int64) bool {
	k := wmKey{in, col}
	if last, ok := t[k]; ok && ts <= last {
		return false
	}
	t[k] = ts
	return true
}

// WatermarkMin combines the watermarks that several inputs send for the
// same output column (keys are the operator's choice: a column of a
// Union, a join key of a Join): the output's watermark is the minimum over
// the inputs, and an input that has sent none holds it at -inf.
type WatermarkMin struct {
	n    int
	vals map[int][]int64 // key -> latest per input; math.MinInt64 = none yet
	last map[int]int64   // key -> last minimum returned
}

// NewWatermarkMin returns a combiner over n inputs.
func NewWatermarkMin(n int) *WatermarkMin {
	return &WatermarkMin{n: n, vals: map[int][]int64{}, last: map[int]int64{}}
}

// Advance records input in's watermark ts for key and returns the new
// minimum over all inputs, ok only if every input has one and it is above
// the last minimum returned.
func (m *WatermarkMin) Advance(in, key int, ts int64) (min int64, ok bool) {
	v := m.vals[key]
	if v == nil {
		v = make([]int64, m.n)
		for i := range v {
			v[i] = math.MinInt64
		}
		m.vals[key] = v
	}
	if ts > v[in] {
		v[in] = ts
	}
	min = v[0]
	for _, x := range v[1:] {
		if x < min {
			min = x
		}
	}
	if min == math.MinInt64 {
		return 0, false
	}
	if last, seen := m.last[key]; seen && min <= last {
		return 0, false
	}
	m.last[key] = min
	return min, true
}
