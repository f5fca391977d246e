package job

import (
	"fmt"
	"testing"

	"sluice/sql/types"
)

func TestClipSeries(t *testing.T) {
	const max = 1<<63 - 1
	i := types.NewInt
	for _, c := range []struct {
		args []types.Datum
		sp   span
		want string
	}{
		{[]types.Datum{i(1), i(max)}, span{hi: 9, hasHi: true}, "1..9"},
		{[]types.Datum{i(1), i(max)}, span{lo: 5, hi: 9, hasLo: true, hasHi: true}, "5..9"},
		{[]types.Datum{i(1), i(100), i(7)}, span{lo: 10, hasLo: true}, "15..100"},
		{[]types.Datum{i(100), i(1), i(-7)}, span{hi: 50, hasHi: true}, "44..1"},
		{[]types.Datum{i(100), i(1), i(-7)}, span{lo: 50, hasLo: true}, "100..50"},
		{[]types.Datum{i(1), i(10)}, span{lo: 20, hasLo: true}, "none"},
		{[]types.Datum{i(1), i(10)}, span{lo: 7, hi: 3, hasLo: true, hasHi: true}, "none"},
		{[]types.Datum{i(-max), i(max)}, span{lo: max - 1, hasLo: true}, fmt.Sprintf("%d..%d", max-1, max)},
		{[]types.Datum{i(0), i(max), i(max)}, span{lo: 1, hasLo: true}, fmt.Sprintf("%d..%d", max, max)},
		{[]types.Datum{i(1), i(10)}, span{empty: true}, "none"},
	} {
		got, ok := clip(c.args, c.sp)
		s := "none"
		if ok {
			s = fmt.Sprintf("%d..%d", got[0].I, got[1].I)
		}
		if s != c.want {
			t.Errorf("clip(%v, %+v) = %s, want %s", c.args, c.sp, s, c.want)
		}
	}
}
