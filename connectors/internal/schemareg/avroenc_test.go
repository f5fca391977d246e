package schemareg

import (
	"math/big"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"sluice/sql/types"
)

// TestAppendRecordRoundTrip writes rows with AppendRecord and reads them
// back with hamba/avro by the schema RecordSchema derives.
func TestAppendRecordRoundTrip(t *testing.T) {
	cols := []types.Column{
		{Name: "i", Type: types.TInt4}, {Name: "l", Type: types.TInt8}, {Name: "b", Type: types.TBool},
		{Name: "f", Type: types.TFloat4}, {Name: "d", Type: types.TFloat8},
		{Name: "n", Type: types.T{Fam: types.Numeric, Prec: 10, Scale: 2}}, {Name: "u", Type: types.TNumeric},
		{Name: "dt", Type: types.TDate}, {Name: "ts", Type: types.TTimestamp}, {Name: "tz", Type: types.TTimestampTZ},
		{Name: "by", Type: types.TBytea}, {Name: "s", Type: types.TText}, {Name: "bad name", Type: types.TText},
	}
	s := avro.MustParse(RecordSchema("t-1", cols, nil))
	dec := func(text string) types.Datum {
		d, err := types.DecFromString(text)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	tsUs := time.Date(1960, 1, 2, 3, 4, 5, 123456000, time.UTC).UnixMicro()
	row := types.Row{types.NewInt(-7), types.NewInt(1 << 40), types.NewBool(true), types.NewFloat(1.5), types.NewFloat(-2.25),
		dec("-128.5"), dec("12345678901234567890.123"), types.NewDate(-1), types.NewTimestamp(tsUs), types.NewTimestampTZ(tsUs),
		types.NewBytes([]byte{0, 255}), types.NewString("héllo"), types.Null}
	b, err := AppendRecord(nil, cols, nil, row)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := avro.Unmarshal(s, b, &got); err != nil {
		t.Fatal(err)
	}
	want := time.Date(1960, 1, 2, 3, 4, 5, 123456000, time.UTC)
	rat := func(v any) string {
		if r, ok := v.(*big.Rat); ok {
			return r.FloatString(2)
		}
		return "?"
	}
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"i", got["i"] == int(-7)}, {"l", got["l"] == int64(1<<40)}, {"b", got["b"] == true},
		{"f", got["f"] == float32(1.5)}, {"d", got["d"] == -2.25}, {"n", rat(got["n"]) == "-128.50"},
		{"u", got["u"] == "12345678901234567890.123"},
		{"dt", got["dt"].(time.Time).Format("2006-01-02") == "1969-12-31"},
		{"tz", got["tz"].(time.Time).Equal(want)}, {"by", string(got["by"].([]byte)) == "\x00\xff"},
		{"s", got["s"] == "héllo"}, {"bad_name", got["bad_name"] == nil},
	} {
		if !c.ok {
			t.Errorf("field %s: got %#v", c.name, got[c.name])
		}
	}
	for _, c := range []struct {
		v    int64
		want string
	}{{0, "\x00"}, {127, "\x7f"}, {128, "\x00\x80"}, {-1, "\xff"}, {-128, "\xff\x80"}, {-129, "\xff\x7f"}} {
		if got := string(twosComplement(big.NewInt(c.v))); got != c.want {
			t.Errorf("twosComplement(%d) = %x, want %x", c.v, got, c.want)
		}
	}
}
