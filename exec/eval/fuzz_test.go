package eval

import (
	"strings"
	"testing"

	"sluice/sql/types"
)

// FuzzEval feeds arbitrary expressions through resolution, compilation
// and evaluation: any of them may fail, none may panic.
func FuzzEval(f *testing.F) {
	for _, c := range pgCases {
		f.Add(c.expr)
	}
	f.Fuzz(func(t *testing.T, src string) {
		low := strings.ToLower(src)
		if strings.Contains(low, "repeat") || strings.Contains(low, "pad") {
			return // may legitimately ask for gigabytes
		}
		row := types.Row{types.NewInt(3), types.NewString("abc"), types.Null, types.NewTimestamp(1589723130123456)}
		_ = evalSQL(src, row, tI8, tText, tNum, tTS)
	})
}
