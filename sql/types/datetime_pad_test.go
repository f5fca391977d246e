package types

import (
	"strconv"
	"testing"
)

// TestAppendPad: the digit fast paths of appendPad (2 and 4 digits) print
// what zero-padding strconv's digits does, for every value they take and
// those just outside; and timestamps of years below 1000 and above 9999
// keep their PostgreSQL form.
func TestAppendPad(t *testing.T) {
	ref := func(v int64, width int) string {
		ds := strconv.FormatInt(v, 10)
		for len(ds) < width {
			ds = "0" + ds
		}
		return ds
	}
	for _, width := range []int{2, 4, 6} {
		for v := int64(-12); v <= 10012; v++ {
			if got, want := string(appendPad([]byte("x"), v, width)), "x"+ref(v, width); got != want {
				t.Fatalf("appendPad(%d, %d) = %q, want %q", v, width, got, want)
			}
		}
	}
	for us, want := range map[int64]string{
		0:                        "1970-01-01 00:00:00",
		-62135596800000000 + 1e6: "0001-01-01 00:00:01",
		-62167219200000000:       "0001-01-01 00:00:00 BC",
		253402300799999999:       "9999-12-31 23:59:59.999999",
		253402300800000000:       "10000-01-01 00:00:00",
		1765065600123000:         "2025-12-07 00:00:00.123",
	} {
		if got := string(appendTimestamp(nil, us, false)); got != want {
			t.Errorf("appendTimestamp(%d) = %q, want %q", us, got, want)
		}
	}
}
