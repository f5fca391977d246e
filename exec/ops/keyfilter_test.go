package ops

import (
	"strconv"
	"testing"
)

// TestKeyFilter: every key added is reported; of keys never added, the
// share falsely reported stays within what each shape promises, summed
// over the parts that 1,000,000 keys fill.
func TestKeyFilter(t *testing.T) {
	for _, tc := range []struct {
		sparse bool
		maxFP  float64
	}{{false, 0.08}, {true, 0.005}} {
		f := keyFilter{sparse: tc.sparse}
		const n = 1000000
		for i := 0; i < n; i++ {
			f.add("key" + strconv.Itoa(i))
		}
		for i := 0; i < n; i++ {
			if !f.has("key" + strconv.Itoa(i)) {
				t.Fatalf("sparse=%v: key %d was added but is not reported", tc.sparse, i)
			}
		}
		fp := 0
		for i := 0; i < n; i++ {
			if f.has("other" + strconv.Itoa(i)) {
				fp++
			}
		}
		rate := float64(fp) / n
		t.Logf("sparse=%v: %d parts, %d bytes, false positives %.4f%%", tc.sparse, len(f.parts), f.bytes(), 100*rate)
		if rate > tc.maxFP {
			t.Errorf("sparse=%v: false positives %.4f, want at most %.4f", tc.sparse, rate, tc.maxFP)
		}
	}
}
