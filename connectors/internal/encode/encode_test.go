package encode

import (
	"testing"

	"sluice/sql/types"
)

// Value writes every type as its PostgreSQL text in a JSON string, except
// numbers, booleans, JSONB and BYTEA; the direct paths for strings,
// date/time kinds and NUMERIC must equal quoting FormatText's output.
func TestValueTextKinds(t *testing.T) {
	mustParse := func(s string, ty types.T) types.Datum {
		d, err := types.ParseText(s, ty)
		if err != nil {
			t.Fatalf("%s as %v: %v", s, ty.Fam, err)
		}
		return d
	}
	cases := []struct {
		d    types.Datum
		t    types.T
		want string
	}{
		{types.NewString("plain"), types.TText, `"plain"`},
		{types.NewString("q\"b\\n\nt\t\x01é\xff"), types.TText, `"q\"b\\n\nt\t\u0001é\ufffd"`},
		{types.NewTimestamp(1436918400001000), types.TTimestamp, `"2015-07-15 00:00:00.001"`},
		{types.NewTimestampTZ(0), types.TTimestampTZ, `"1970-01-01 00:00:00+00"`},
		{types.NewTimestamp(-62167219200000000 - 86400000000), types.TTimestamp, `"0002-12-31 00:00:00 BC"`},
		{mustParse("infinity", types.TTimestamp), types.TTimestamp, `"infinity"`},
		{mustParse("-infinity", types.TTimestampTZ), types.TTimestampTZ, `"-infinity"`},
		{types.NewDate(-1), types.TDate, `"1969-12-31"`},
		{types.NewTime(3723000001), types.TTime, `"01:02:03.000001"`},
		{mustParse("1 year 2 days -03:04:05.5", types.TInterval), types.TInterval, `"1 year 2 days -03:04:05.5"`},
		{types.NewDecimal(-12345, 2), types.TNumeric, `-123.45`},
		{mustParse("NaN", types.TNumeric), types.TNumeric, `"NaN"`},
		{mustParse("Infinity", types.TNumeric), types.TNumeric, `"Infinity"`},
		{mustParse("-Infinity", types.TNumeric), types.TNumeric, `"-Infinity"`},
	}
	for _, c := range cases {
		got := string(Value([]byte("x"), c.d, c.t))
		if got != "x"+c.want {
			t.Errorf("Value(%v) = %s, want x%s", c.d, got, c.want)
		}
		if c.t.Fam != types.Numeric {
			if ref := string(String([]byte("x"), types.FormatText(c.d, c.t))); got != ref {
				t.Errorf("Value(%v) = %s, quoting FormatText gives %s", c.d, got, ref)
			}
		}
	}
}

func BenchmarkJSONBidRow(b *testing.B) {
	cols := []types.Column{{Name: "auction", Type: types.TInt8}, {Name: "bidder", Type: types.TInt8},
		{Name: "price", Type: types.TInt8}, {Name: "date_time", Type: types.TTimestamp}}
	row := types.Row{types.NewInt(1007), types.NewInt(2001), types.NewInt(12345), types.NewTimestamp(1436918400001000)}
	b.ReportAllocs()
	var buf []byte
	for i := 0; i < b.N; i++ {
		buf = JSON(buf[:0], cols, row)
	}
}
