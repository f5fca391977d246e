package decode

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"sluice/connectors/internal/encode"
	"sluice/sql/types"
)

var testCols = []types.Column{
	{Name: "id", Type: types.TInt8},
	{Name: "Name", Type: types.TText},
	{Name: "price", Type: types.T{Fam: types.Numeric, Prec: 10, Scale: 2}},
	{Name: "ok", Type: types.TBool},
	{Name: "ts", Type: types.TTimestamp},
	{Name: "f", Type: types.TFloat8},
	{Name: "small", Type: types.TInt2},
	{Name: "doc", Type: types.TJSONB},
	{Name: "raw", Type: types.TBytea},
	{Name: "v", Type: types.T{Fam: types.Varchar, Prec: 3}},
}

// rowText renders a row in text form, NULL as "NULL".
func rowText(cols []types.Column, row types.Row) string {
	var parts []string
	for i, c := range cols {
		if row[i].IsNull() {
			parts = append(parts, "NULL")
			continue
		}
		parts = append(parts, types.FormatText(row[i], c.Type))
	}
	return strings.Join(parts, "|")
}

func TestJSON(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{`{"id":1,"name":"a","price":12.5,"ok":true,"ts":"2015-07-15 00:00:01.000","f":1.5e3,"small":-7,"doc":{"a": [1, 2, {"b" : null}]},"raw":"AQI=","v":"xyz"}`,
			`1|a|12.50|t|2015-07-15 00:00:01|1500|-7|{"a": [1, 2, {"b": null}]}|\x0102|xyz`},
		// Key order, case and whitespace do not matter; unknown fields are skipped.
		{` { "V" : "q" , "ID" : 2 , "extra" : {"deep":[true,false,null,"s\"x",-0.5e-3]} , "NAME":"b" } `,
			`2|b|NULL|NULL|NULL|NULL|NULL|NULL|NULL|q`},
		// Missing fields and nulls are NULL.
		{`{}`, `NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL`},
		{`{"id":null,"name":null}`, `NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL`},
		// Numbers in strings, escapes, integral floats into integers.
		{`{"id":"42","price":"3.14159","f":"NaN","small":"12","name":"a\tb\u00e9\ud83d\ude00\/"}`,
			"42|a\tbé😀/|3.14|NULL|NULL|NaN|12|NULL|NULL|NULL"},
		{`{"id":1.0e2,"small":3E0}`, `100|NULL|NULL|NULL|NULL|NULL|3|NULL|NULL|NULL`},
		// Scalars into text, strings into JSONB.
		{`{"name":17,"doc":"s","ok":"yes"}`, `NULL|17|NULL|t|NULL|NULL|NULL|"s"|NULL|NULL`},
		{`{"name":true,"doc":12.5,"raw":"\\x6869"}`, `NULL|true|NULL|NULL|NULL|NULL|NULL|12.5|\x6869|NULL`},
		{`{"id":-9223372036854775808}`, `-9223372036854775808|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL`},
		// A repeated key: the last value wins, whatever came before.
		{`{"name":"first","name":null,"v":"ab","v":"c","id":1,"id":2}`, `2|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|c`},
		{`{"name":null,"name":"second"}`, `NULL|second|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL`},
	} {
		d := New(testCols, JSON, nil)
		row := make(types.Row, len(testCols))
		if err := d.Decode([]byte(tc.in), row); err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if got := rowText(testCols, row); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

func TestJSONErrors(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{``, `empty message`},
		{`   `, `empty message`},
		{`[1]`, `invalid JSON at byte 0: expected an object, found '['`},
		{`{"id":1,"name":"a"`, `invalid JSON at byte 18: unexpected end of message in an object`},
		{`{"id":1,}`, `invalid JSON at byte 8: expected a string key, found '}'`},
		{`{"id" 1}`, `invalid JSON at byte 6: expected ':' after a key`},
		{`{"id":01}`, `invalid JSON at byte 7: expected ',' or '}'`},
		{`{"id":1} x`, `invalid JSON at byte 9: unexpected data after the top-level value`},
		{`{"id":tru}`, `invalid JSON at byte 6: invalid literal`},
		{`{"x":[1,2}`, `invalid JSON at byte 9: expected ',' or ']'`},
		{`{"name":"a` + "\n" + `"}`, `invalid JSON at byte 10: control character 0x0a in a string`},
		{`{"name":"\q"}`, `invalid JSON at byte 9: invalid escape \q`},
		{`{"name":"\ud800"}`, `invalid Unicode surrogate pair`},
		{`{"name":"\u0000"}`, `\u0000 cannot be converted to text`},
		{`{"id":"x"}`, `column id: expected a number, got string "x"`},
		{`{"price":"x"}`, `column price: expected a number, got string "x"`},
		{`{"id":true}`, `column id: expected a number, got true`},
		{`{"id":1.5}`, `column id: expected an integer, got 1.5`},
		{`{"id":9223372036854775808}`, `column id: value 9223372036854775808 is out of range for type bigint`},
		{`{"small":40000}`, `column small: value 40000 is out of range for type smallint`},
		{`{"f":1e400}`, `column f: value 1e400 is out of range for type double precision`},
		{`{"name":{"a":1}}`, `column Name: expected a string, got object`},
		{`{"id":[1]}`, `column id: expected a number, got array`},
		{`{"ts":"yesterday-ish"}`, `column ts: invalid input syntax for type timestamp`},
		{`{"ts":12}`, `column ts: expected a value of type timestamp without time zone, got number 12`},
		{`{"ok":"maybe"}`, `column ok: expected a boolean, got string "maybe"`},
		{`{"v":"abcd"}`, `column v: value too long for type character varying(3)`},
		{`{"raw":"!!"}`, `column raw: expected base64 or \x hex bytes`},
		{`{"name":"a` + "\xff" + `"}`, `invalid UTF-8 at byte 10`},
		{`{"other":"` + "\xc3\x28" + `"}`, `invalid UTF-8 at byte 10`},
		{`{"x":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`, `nesting too deep`},
	} {
		d := New(testCols, JSON, nil)
		row := make(types.Row, len(testCols))
		err := d.Decode([]byte(tc.in), row)
		if err == nil {
			t.Errorf("%q: no error, want %q", tc.in, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant %s", tc.in, err, tc.want)
		}
	}
}

// TestRoundTrip checks that what encode writes, decode reads back.
func TestRoundTrip(t *testing.T) {
	row := types.Row{
		types.NewInt(7), types.NewString("a \"q\"\n\\ é"), mustParse(t, "12.34", testCols[2].Type),
		types.NewBool(false), mustParse(t, "2024-02-29 12:34:56.789", types.TTimestamp),
		types.NewFloat(-0.25), types.NewInt(3), types.NewJSON(`{"k": [1, "x"]}`),
		types.NewBytes([]byte{0, 1, 0xff}), types.NewString("ab"),
	}
	want := rowText(testCols, row)
	for _, enc := range []Encoding{JSON, CSV} {
		var msg []byte
		if enc == JSON {
			msg = encode.JSON(nil, testCols, row)
		} else {
			msg = encode.CSV(nil, testCols, row)
		}
		d := New(testCols, enc, nil)
		got := make(types.Row, len(testCols))
		if err := d.Decode(msg, got); err != nil {
			t.Fatalf("%s %s: %v", enc, msg, err)
		}
		if g := rowText(testCols, got); g != want {
			t.Errorf("%s %s:\n got %s\nwant %s", enc, msg, g, want)
		}
	}
	// NULLs and the empty string survive CSV.
	nulls := make(types.Row, len(testCols))
	nulls[1] = types.NewString("")
	msg := encode.CSV(nil, testCols, nulls)
	got := make(types.Row, len(testCols))
	if err := New(testCols, CSV, nil).Decode(msg, got); err != nil {
		t.Fatal(err)
	}
	if got[1].IsNull() || got[1].S != "" || !got[0].IsNull() {
		t.Errorf("CSV %q: got %v", msg, got)
	}
}

func mustParse(t *testing.T, s string, typ types.T) types.Datum {
	t.Helper()
	d, err := types.ParseText(s, typ)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSkip(t *testing.T) {
	cols := []types.Column{{Name: "_offset", Type: types.TInt8}, {Name: "a", Type: types.TText}, {Name: "b", Type: types.TInt4}}
	skip := []bool{true, false, false}
	row := types.Row{types.NewInt(99), types.Null, types.Null}
	d := New(cols, JSON, skip)
	if err := d.Decode([]byte(`{"_offset":5,"a":"x","b":2}`), row); err != nil {
		t.Fatal(err)
	}
	if got := rowText(cols, row); got != "99|x|2" {
		t.Errorf("got %s", got)
	}
	d = New(cols, CSV, skip)
	if err := d.Decode([]byte("y,3\r\n"), row); err != nil {
		t.Fatal(err)
	}
	if got := rowText(cols, row); got != "99|y|3" {
		t.Errorf("got %s", got)
	}
}

func TestCSV(t *testing.T) {
	cols := []types.Column{{Name: "a", Type: types.TInt8}, {Name: "b", Type: types.TText}, {Name: "c", Type: types.TTimestamp}}
	for _, tc := range []struct{ in, want string }{
		{"1,x,2020-01-01 00:00:00", "1|x|2020-01-01 00:00:00"},
		{"1,\"x,\"\"y\"\"\nz\",\n", "1|x,\"y\"\nz|NULL"},
		{",,", "NULL|NULL|NULL"},
		{`,"",`, "NULL||NULL"},
		{"2,é,", "2|é|NULL"},
	} {
		row := make(types.Row, 3)
		if err := New(cols, CSV, nil).Decode([]byte(tc.in), row); err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got := rowText(cols, row); got != tc.want {
			t.Errorf("%q: got %q want %q", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"1,x", "expected 3 fields, got 2"},
		{"1,x,,4", "expected 3 fields, got 4"},
		{"x,y,", `column a: expected a number, got string "x"`},
		{`1,"x,`, "unterminated quoted field 2"},
		{`1,"x"y,`, `unexpected 'y' after a quoted field`},
		{`1,x"y,`, "quote in an unquoted field"},
		{"1,\xff,", "invalid UTF-8 at byte 2"},
		{"1,x,nope", "column c: invalid input syntax for type timestamp"},
		{"", "empty message"},
	} {
		row := make(types.Row, 3)
		err := New(cols, CSV, nil).Decode([]byte(tc.in), row)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %s", tc.in, err, tc.want)
		}
	}
}

func TestDebezium(t *testing.T) {
	cols := []types.Column{{Name: "id", Type: types.TInt8}, {Name: "v", Type: types.TText}}
	for _, tc := range []struct {
		in         string
		nb, na     bool
		before, af string
	}{
		{`{"before":null,"after":{"id":1,"v":"a"},"op":"c","source":{"epoch":3}}`, false, true, "", "1|a"},
		{`{"op":"r","after":{"id":1,"v":"a"}}`, false, true, "", "1|a"},
		{`{"before":{"id":1,"v":"a"},"after":{"id":1,"v":"b"},"op":"u"}`, true, true, "1|a", "1|b"},
		{`{"before":{"id":1,"v":"b"},"after":null,"op":"d"}`, true, false, "1|b", ""},
		{`{"schema":{"type":"struct","fields":[]},"payload":{"before":null,"after":{"id":2,"v":"x"},"op":"c","ts_ms":1}}`, false, true, "", "2|x"},
		{`{"before":{"id":3,"v":"y"},"after":null}`, true, false, "3|y", ""},
	} {
		d := New(cols, JSON, nil)
		b, a := make(types.Row, 2), make(types.Row, 2)
		nb, na, err := d.DecodeDebezium([]byte(tc.in), b, a)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if nb != tc.nb || na != tc.na {
			t.Errorf("%s: got before=%v after=%v", tc.in, nb, na)
			continue
		}
		if nb && rowText(cols, b) != tc.before {
			t.Errorf("%s: before %s", tc.in, rowText(cols, b))
		}
		if na && rowText(cols, a) != tc.af {
			t.Errorf("%s: after %s", tc.in, rowText(cols, a))
		}
	}
	for _, tc := range []struct{ in, want string }{
		{`{"before":null,"after":{"id":1,"v":"b"},"op":"u"}`, "REPLICA IDENTITY FULL"},
		{`{"before":null,"after":null,"op":"d"}`, `op "d" without "before"`},
		{`{"after":{"id":1},"op":"t"}`, `unsupported Debezium op "t"`},
		{`{"after":{"id":"x"},"op":"c"}`, `column id: expected a number`},
		{`{"after":5,"op":"c"}`, `"after" must be an object or null`},
		{`{"op":"c"}`, `op "c" without "after"`},
		{`{}`, `neither "before" nor "after"`},
	} {
		b, a := make(types.Row, 2), make(types.Row, 2)
		_, _, err := New(cols, JSON, nil).DecodeDebezium([]byte(tc.in), b, a)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %s", tc.in, err, tc.want)
		}
	}
}

func TestKeyText(t *testing.T) {
	cols := []types.Column{{Name: "id", Type: types.TInt8}, {Name: "s", Type: types.TText}, {Name: "b", Type: types.TBytea}}
	d := New(cols, JSON, nil)
	row := make(types.Row, 3)
	for _, tc := range []struct {
		key  string
		col  int
		want string
	}{
		{"42", 0, "42"}, {`"42"`, 0, "42"}, {"abc", 1, "abc"}, {`"a\"b"`, 1, `a"b`}, {"\x00\xff", 2, `\x00ff`},
	} {
		if err := d.KeyText([]byte(tc.key), row, tc.col); err != nil {
			t.Errorf("%q: %v", tc.key, err)
			continue
		}
		if got := types.FormatText(row[tc.col], cols[tc.col].Type); got != tc.want {
			t.Errorf("%q: got %s want %s", tc.key, got, tc.want)
		}
	}
	if err := d.KeyText([]byte("x"), row, 0); err == nil {
		t.Error("no error for a non-numeric key")
	}
}

// TestNoAliasing checks that text values do not share memory with the
// message, which the source reuses.
func TestNoAliasing(t *testing.T) {
	cols := []types.Column{{Name: "s", Type: types.TText}, {Name: "v", Type: types.TVarchar}, {Name: "j", Type: types.TJSONB}}
	msg := []byte(`{"s":"hello","v":"world","j":{"a":"b"}}`)
	row := make(types.Row, 3)
	if err := New(cols, JSON, nil).Decode(msg, row); err != nil {
		t.Fatal(err)
	}
	for i := range msg {
		msg[i] = 'X'
	}
	if got := rowText(cols, row); got != `hello|world|{"a": "b"}` {
		t.Errorf("got %s", got)
	}
}

var bidCols = []types.Column{
	{Name: "auction", Type: types.TInt8},
	{Name: "bidder", Type: types.TInt8},
	{Name: "price", Type: types.TInt8},
	{Name: "channel", Type: types.TVarchar},
	{Name: "url", Type: types.TVarchar},
	{Name: "date_time", Type: types.TTimestamp},
	{Name: "extra", Type: types.TVarchar},
}

var bidJSON = []byte(`{"auction":1000,"bidder":2001,"price":12345,"channel":"Google","url":"https://www.nexmark.com/zyid/aaa/dmzn/item.htm?query=1","date_time":"2015-07-15 00:00:01.000","extra":"vjpmqokvnqhgefnkszsmbxpyxqnpdobccbtwhtsgvbjzdvvmenxxqt"}`)

func BenchmarkDecodeBidJSON(b *testing.B) {
	d := New(bidCols, JSON, nil)
	row := make(types.Row, len(bidCols))
	b.ReportAllocs()
	b.SetBytes(int64(len(bidJSON)))
	cpu := cpuTime()
	for b.Loop() {
		if err := d.Decode(bidJSON, row); err != nil {
			b.Fatal(err)
		}
	}
	reportPerRecord(b, cpu)
}

// cpuTime returns the CPU time the process has used, in nanoseconds: on a
// shared machine it measures the decoder better than the wall clock.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func reportPerRecord(b *testing.B, cpu0 int64) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/record")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/record")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkDecodeBidJSONNoText is the same record with the text columns
// undeclared (skipped in the payload): the cost without string copies.
func BenchmarkDecodeBidJSONNoText(b *testing.B) {
	cols := []types.Column{bidCols[0], bidCols[1], bidCols[2], bidCols[5]}
	d := New(cols, JSON, nil)
	row := make(types.Row, len(cols))
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		if err := d.Decode(bidJSON, row); err != nil {
			b.Fatal(err)
		}
	}
	reportPerRecord(b, cpu)
}

// TestFastTimestamp checks the fast timestamp path against types.ParseText.
func TestFastTimestamp(t *testing.T) {
	for _, s := range []string{
		"2015-07-15 00:00:01.000", "2015-07-15T23:59:59.123456", "2000-02-29 12:00:00", "1900-02-28 01:02:03.5",
		"1969-12-31 23:59:59.999999", "0001-01-01 00:00:00", "2024-12-31 00:00:00.1", "9999-12-31 23:59:59",
		"1600-03-01 00:00:00", "2015-07-15 00:00:01Z", "2015-07-15T00:00:00.001Z", "2015-07-15T00:00:00.5+01:00",
		"2015-07-15 23:30:00-05", "2015-07-15T00:00:00-0930", "1970-01-01T00:00:00.000001+14:59", "2016-02-29T00:00:00-00:00",
	} {
		for _, tz := range []bool{false, true} {
			typ := types.TTimestamp
			if tz {
				typ = types.TTimestampTZ
			}
			got, ok := fastTimestamp([]byte(s), tz)
			want, err := types.ParseText(s, typ)
			if !ok {
				t.Errorf("%s tz=%v: fast path refused", s, tz)
				continue
			}
			if err != nil || got.K != want.K || got.I != want.I {
				t.Errorf("%s tz=%v: fast %v, ParseText %v %v", s, tz, got, want, err)
			}
		}
	}
	for _, s := range []string{"2015-02-29 00:00:00", "2015-07-15 24:00:00", "2015-07-15 00:00:01.1234567", "2015-7-15 00:00:00", "0000-01-01 00:00:00",
		"2015-07-15 00:00:01+15:00", "2015-07-15 00:00:01 BC", "2015-07-15 00:00:01+01:00:30", "2015-07-15 00:00:01 +01",
		"2015-07-15 00:00:01 UTC", "2015-07-15 00:00:01+1", "2015-07-15 00:00:01+01:60", "2015-07-15 00:00:01.+01", "2015-07-15 00:00:01z"} {
		for _, tz := range []bool{false, true} {
			if _, ok := fastTimestamp([]byte(s), tz); ok {
				t.Errorf("%s tz=%v: fast path accepted", s, tz)
			}
		}
	}
}

// FuzzDecode checks that no message panics the decoder and that it never
// accepts what is not JSON.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"id":1,"name":"a","doc":{"x":[1,"y\u00e9"]},"ts":"2015-07-15 00:00:01.000"}`))
	f.Add(bidJSON)
	f.Add([]byte(`{"before":null,"after":{"id":1},"op":"c"}`))
	f.Add([]byte("1,\"a\"\"b\",,x"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		row := make(types.Row, len(testCols))
		d := New(testCols, JSON, nil)
		if err := d.Decode(msg, row); err == nil && !json.Valid(msg) {
			t.Fatalf("accepted invalid JSON %q", msg)
		}
		d.DecodeDebezium(msg, make(types.Row, len(testCols)), make(types.Row, len(testCols)))
		d.KeyText(msg, row, 0)
		New(testCols, CSV, nil).Decode(msg, row)
	})
}

// TestKeyOrderMemo: one decoder reads objects whose keys change order,
// case, and set from one message to the next (the key memo must never
// give a stale column); every row equals a fresh decoder's.
func TestKeyOrderMemo(t *testing.T) {
	cols := []types.Column{{Name: "a", Type: types.TInt8}, {Name: "B", Type: types.TInt8}, {Name: "cc", Type: types.TInt8}}
	skip := []bool{false, false, true}
	keys := []string{"a", "A", "b", "B", "cc", "x", "ab", ""}
	rng := uint64(7)
	next := func(n int) int { rng = rng*6364136223846793005 + 1442695040888963407; return int(rng>>33) % n }
	memo := New(cols, JSON, skip)
	for m := 0; m < 2000; m++ {
		var sb strings.Builder
		sb.WriteByte('{')
		for k, n := 0, next(6); k < n; k++ {
			if k > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, "%q:%d", keys[next(len(keys))], next(100))
		}
		sb.WriteByte('}')
		msg := []byte(sb.String())
		got, want := make(types.Row, 3), make(types.Row, 3)
		err1 := memo.Decode(msg, got)
		err2 := New(cols, JSON, skip).Decode(msg, want)
		if (err1 == nil) != (err2 == nil) || rowText(cols, got) != rowText(cols, want) {
			t.Fatalf("%s: %s (%v), fresh decoder %s (%v)", msg, rowText(cols, got), err1, rowText(cols, want), err2)
		}
	}
}
