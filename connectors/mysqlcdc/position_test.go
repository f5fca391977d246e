package mysqlcdc

import (
	"reflect"
	"testing"
)

// TestPositionRoundTrip: every phase's position decodes to itself, and
// truncated or foreign bytes are refused rather than misread.
func TestPositionRoundTrip(t *testing.T) {
	k1, k2 := "42", "a'b\x00c"
	for _, p := range []position{
		{phase: phaseFresh},
		{phase: phaseSnapshot, snapFile: "binlog.000001", snapPos: 325},
		{phase: phaseSnapshot, snapFile: "binlog.000001", snapPos: 325, lastKey: []*string{&k1, nil, &k2}},
		{phase: phaseStream, snapFile: "binlog.000001", snapPos: 325, file: "binlog.000007", pos: 1 << 31, skip: 3000},
	} {
		b := p.encode()
		got, err := decodePosition(b)
		if err != nil || !reflect.DeepEqual(got, p) {
			t.Fatalf("%+v: decoded %+v, %v", p, got, err)
		}
		for n := range len(b) {
			if _, err := decodePosition(b[:n]); err == nil {
				t.Fatalf("%+v: a %d-byte prefix decoded", p, n)
			}
		}
	}
	if _, err := decodePosition([]byte{9, 0}); err == nil {
		t.Fatal("a foreign version decoded")
	}
}
