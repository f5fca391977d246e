package types

import (
	"math"
	"math/rand"
	"strings"
	"testing"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// errCode returns the SQLSTATE of err ("" for nil).
func errCode(err error) string {
	if err == nil {
		return ""
	}
	return string(pgerror.GetCode(err))
}

// knownCodeSubst maps PostgreSQL SQLSTATEs that sql/pgcode does not define
// to the nearest code Sluice reports.
var knownCodeSubst = map[string]string{
	"22009": string(pgcode.DatetimeFieldOverflow), // invalid_time_zone_displacement_value
	"22015": string(pgcode.DatetimeFieldOverflow), // interval_field_overflow
}

func wantCode(code string) string {
	if c, ok := knownCodeSubst[code]; ok {
		return c
	}
	return code
}

func TestParseTextPostgresVectors(t *testing.T) {
	for _, v := range pgInputVectors {
		var d Datum
		var err error
		if v.typ.Fam == Varchar {
			// The vectors come from 'x'::varchar(n), an explicit cast
			// (which truncates); input proper is tested below.
			d, err = Cast(NewString(v.in), TText, v.typ)
		} else {
			d, err = ParseText(v.in, v.typ)
		}
		if v.code != "" {
			if err == nil {
				t.Errorf("ParseText(%q, %s) = %s, want error %s %s", v.in, v.typ, FormatText(d, v.typ), v.code, v.msg)
				continue
			}
			if errCode(err) != wantCode(v.code) || err.Error() != v.msg {
				t.Errorf("ParseText(%q, %s) error = %s %q, want %s %q", v.in, v.typ, errCode(err), err.Error(), v.code, v.msg)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseText(%q, %s) error %v, want %q", v.in, v.typ, err, v.want)
			continue
		}
		want := v.want
		if got := FormatText(d, v.typ); got != want {
			t.Errorf("FormatText(ParseText(%q, %s)) = %q, want %q", v.in, v.typ, got, want)
		}
	}
}

func TestCastPostgresVectors(t *testing.T) {
	for _, v := range pgCastVectors {
		d, err := ParseText(v.in, v.from)
		if err != nil {
			t.Errorf("ParseText(%q, %s): %v", v.in, v.from, err)
			continue
		}
		r, err := Cast(d, v.from, v.to)
		if v.code != "" {
			if err == nil {
				t.Errorf("Cast(%q::%s, %s) = %s, want error %s %s", v.in, v.from, v.to, FormatText(r, v.to), v.code, v.msg)
				continue
			}
			if errCode(err) != wantCode(v.code) || err.Error() != v.msg {
				t.Errorf("Cast(%q::%s, %s) error = %s %q, want %s %q", v.in, v.from, v.to, errCode(err), err.Error(), v.code, v.msg)
			}
			continue
		}
		if err != nil {
			t.Errorf("Cast(%q::%s, %s) error %v, want %q", v.in, v.from, v.to, err, v.want)
			continue
		}
		want := v.want
		if got := FormatText(r, v.to); got != want {
			t.Errorf("Cast(%q::%s, %s) = %q, want %q", v.in, v.from, v.to, got, want)
		}
	}
}

func TestFormatText(t *testing.T) {
	tests := []struct {
		d    Datum
		t    T
		want string
	}{
		{NewBool(true), TBool, "t"},
		{NewBool(false), TBool, "f"},
		{NewInt(-42), TInt4, "-42"},
		{NewInt(math.MinInt64), TInt8, "-9223372036854775808"},
		{NewInt(4294967295), TOid, "4294967295"},
		{NewFloat(1.5), TFloat8, "1.5"},
		{NewFloat(1e20), TFloat8, "1e+20"},
		{NewFloat(1e15), TFloat8, "1e+15"},
		{NewFloat(1e14), TFloat8, "100000000000000"},
		{NewFloat(123456789012345), TFloat8, "123456789012345"},
		{NewFloat(1e-5), TFloat8, "1e-05"},
		{NewFloat(1.5e-5), TFloat8, "1.5e-05"},
		{NewFloat(0.0001), TFloat8, "0.0001"},
		{NewFloat(1e100), TFloat8, "1e+100"},
		{NewFloat(5e-324), TFloat8, "5e-324"},
		{NewFloat(math.MaxFloat64), TFloat8, "1.7976931348623157e+308"},
		{NewFloat(math.Copysign(0, -1)), TFloat8, "-0"},
		{NewFloat(0), TFloat8, "0"},
		{NewFloat(math.Inf(1)), TFloat8, "Infinity"},
		{NewFloat(math.Inf(-1)), TFloat8, "-Infinity"},
		{NewFloat(math.NaN()), TFloat8, "NaN"},
		{NewFloat(float64(float32(0.1))), TFloat4, "0.1"},
		{NewFloat(float64(float32(0.1))), TFloat8, "0.10000000149011612"},
		{NewFloat(16777216), TFloat4, "1.6777216e+07"},
		{NewFloat(float64(float32(123456.7))), TFloat4, "123456.7"},
		{NewFloat(float64(float32(1.17549435e-38))), TFloat4, "1.1754944e-38"},
		{NewFloat(float64(float32(-1.25e-5))), TFloat4, "-1.25e-05"},
		{NewFloat(1e6), TFloat4, "1e+06"},
		{NewFloat(100000), TFloat4, "100000"},
		{NewDecimal(1050, 2), TNumeric, "10.50"},
		{NewDecimal(-5, 2), TNumeric, "-0.05"},
		{NewDecimal(0, 3), TNumeric, "0.000"},
		{NewDecimal(math.MinInt64, 19), TNumeric, "-0.9223372036854775808"},
		{DecNaN(), TNumeric, "NaN"},
		{DecInf(false), TNumeric, "Infinity"},
		{DecInf(true), TNumeric, "-Infinity"},
		{NewString("héllo"), TText, "héllo"},
		{NewBytes([]byte{1, 2, 0xff}), TBytea, `\x0102ff`},
		{NewBytes(nil), TBytea, `\x`},
		{NewDate(19753), TDate, "2024-01-31"},
		{NewDate(-1), TDate, "1969-12-31"},
		{NewDate(daysFromCivil(0, 12, 31)), TDate, "0001-12-31 BC"},
		{NewDate(daysFromCivil(10000, 1, 1)), TDate, "10000-01-01"},
		{NewDate(InfinityI), TDate, "infinity"},
		{NewDate(NegInfinityI), TDate, "-infinity"},
		{NewTime(13*usPerHour + 4*usPerMin + 5*usPerSec), TTime, "13:04:05"},
		{NewTime(13*usPerHour + 4*usPerMin + 5*usPerSec + 123000), TTime, "13:04:05.123"},
		{NewTime(usPerDay), TTime, "24:00:00"},
		{NewTimestamp(1706706245500000), TTimestamp, "2024-01-31 13:04:05.5"},
		{NewTimestamp(-1), TTimestamp, "1969-12-31 23:59:59.999999"},
		{NewTimestamp(minTsUs), TTimestamp, "4714-11-24 00:00:00 BC"},
		{NewTimestamp(maxTsUs), TTimestamp, "294246-12-31 23:59:59.999999"},
		{NewTimestamp(InfinityI), TTimestamp, "infinity"},
		{NewTimestampTZ(1706706245000000), TTimestampTZ, "2024-01-31 13:04:05+00"},
		{NewTimestampTZ(-2208988799999999), TTimestampTZ, "1900-01-01 00:00:00.000001+00"},
		{NewTimestampTZ(daysFromCivil(-43, 3, 15)*usPerDay + 13*usPerHour), TTimestampTZ, "0044-03-15 13:00:00+00 BC"},
		{NewTimestampTZ(NegInfinityI), TTimestampTZ, "-infinity"},
		{NewInterval(14, 3, 4*usPerHour+5*usPerMin+6*usPerSec+500000), TInterval, "1 year 2 mons 3 days 04:05:06.5"},
		{NewInterval(0, 0, 0), TInterval, "00:00:00"},
		{NewInterval(0, -1, 0), TInterval, "-1 days"},
		{NewInterval(0, 1, 0), TInterval, "1 day"},
		{NewInterval(0, 0, -1), TInterval, "-00:00:00.000001"},
		{NewInterval(math.MaxInt32, math.MaxInt32, math.MaxInt64), TInterval, "178956970 years 7 mons 2147483647 days 2562047788:00:54.775807"},
		{NewInterval(0, 0, math.MinInt64), TInterval, "-2562047788:00:54.775808"},
		{NewInterval(math.MinInt32, math.MinInt32, 0), TInterval, "-178956970 years -8 mons -2147483648 days"},
		{NewInterval(-13, 1, 0), TInterval, "-1 years -1 mons +1 day"},
		{NewInterval(0, 0, -25*usPerHour), TInterval, "-25:00:00"},
		{NewInterval(1, -1, usPerHour), TInterval, "1 mon -1 days +01:00:00"},
		{NewInterval(-1, 1, -usPerHour), TInterval, "-1 mons +1 day -01:00:00"},
		{NewInterval(12, 0, 0), TInterval, "1 year"},
		{NewInterval(1, 1, usPerSec), TInterval, "1 mon 1 day 00:00:01"},
		{NewJSON(`{"a":1}`), TJSONB, `{"a":1}`},
		{Datum{K: KArray, A: NewElems([]Datum{})}, TTextArray, "{}"},
		{Datum{K: KArray, A: NewElems([]Datum{NewString("a"), Null, NewString("c d"), NewString(""), NewString("NULL"), NewString(`x"y`), NewString(`a\b`), NewString("{}"), NewString(" s"), NewString("é")})}, TTextArray,
			`{a,NULL,"c d","","NULL","x\"y","a\\b","{}"," s",é}`},
		{Datum{K: KArray, A: NewElems([]Datum{{K: KArray, A: NewElems([]Datum{NewString("a"), NewString("b")})}, {K: KArray, A: NewElems([]Datum{NewString("c"), NewString("d")})}})}, TTextArray, "{{a,b},{c,d}}"},
		{Datum{K: KArray, A: NewElems([]Datum{NewInt(1), NewDecimal(25, 1)})}, TTextArray, "{1,2.5}"},
		{Null, TInt4, ""},
	}
	for _, tc := range tests {
		if got := FormatText(tc.d, tc.t); got != tc.want {
			t.Errorf("FormatText(%+v, %s) = %q, want %q", tc.d, tc.t, got, tc.want)
		}
		if got := string(AppendText([]byte("x"), tc.d, tc.t)); got != "x"+tc.want {
			t.Errorf("AppendText(%+v, %s) = %q, want %q", tc.d, tc.t, got, "x"+tc.want)
		}
	}
}

func TestParseTextErrors(t *testing.T) {
	v3 := T{Fam: Varchar, Prec: 3}
	tests := []struct {
		in   string
		t    T
		code pgcode.Code
		msg  string
	}{
		{"abcd", v3, pgcode.StringDataRightTrunc, "value too long for type character varying(3)"},
		{"hééé", v3, pgcode.StringDataRightTrunc, "value too long for type character varying(3)"},
		{"ab  x", v3, pgcode.StringDataRightTrunc, "value too long for type character varying(3)"},
		{"2147483648", TInt4, pgcode.NumericValueOutOfRange, `value "2147483648" is out of range for type integer`},
		{"99999999999999999999999", TInt8, pgcode.NumericValueOutOfRange, `value "99999999999999999999999" is out of range for type bigint`},
		{"1_000", TFloat8, pgcode.InvalidTextRepresentation, `invalid input syntax for type double precision: "1_000"`},
		{"1e-400", TFloat8, pgcode.NumericValueOutOfRange, `"1e-400" is out of range for type double precision`},
		{"1e131072", TNumeric, pgcode.NumericValueOutOfRange, "value overflows numeric format"},
		{"1e-16384", TNumeric, pgcode.NumericValueOutOfRange, "value overflows numeric format"},
		{"1e1073741823", TNumeric, pgcode.NumericValueOutOfRange, "value overflows numeric format"},
		{"1e131071", T{Fam: Numeric, Prec: 5, Scale: 2}, pgcode.NumericValueOutOfRange, "numeric field overflow"},
		{"1.2.3", TNumeric, pgcode.InvalidTextRepresentation, `invalid input syntax for type numeric: "1.2.3"`},
		{"-NaN", TNumeric, pgcode.InvalidTextRepresentation, `invalid input syntax for type numeric: "-NaN"`},
		{"2024-01-31 13:04:05 Mars/Base", TTimestampTZ, pgcode.InvalidParameterValue, `time zone "Mars/Base" not recognized`},
		{"x", TRegClass, pgcode.UndefinedTable, `relation "x" does not exist`},
		{"{a", TTextArray, pgcode.InvalidTextRepresentation, `malformed array literal: "{a"`},
		{"{{{{{{{a}}}}}}}", TTextArray, pgcode.InvalidTextRepresentation, `malformed array literal: "{{{{{{{a}}}}}}}"`},
		{`{"a}`, TTextArray, pgcode.InvalidTextRepresentation, `malformed array literal: "{"a}"`},
		{`{"a"b}`, TTextArray, pgcode.InvalidTextRepresentation, `malformed array literal: "{"a"b}"`},
		{"[1,", TJSONB, pgcode.InvalidTextRepresentation, "invalid input syntax for type json"},
		{"1 hour 2 hours", TInterval, pgcode.InvalidDatetimeFormat, `invalid input syntax for type interval: "1 hour 2 hours"`},
		{"1 ago year", TInterval, pgcode.InvalidDatetimeFormat, `invalid input syntax for type interval: "1 ago year"`},
		{"P1X", TInterval, pgcode.InvalidDatetimeFormat, `invalid input syntax for type interval: "P1X"`},
		{"PT1D", TInterval, pgcode.InvalidDatetimeFormat, `invalid input syntax for type interval: "PT1D"`},
		{"P1", TInterval, pgcode.InvalidDatetimeFormat, `invalid input syntax for type interval: "P1"`},
		{"99999999999999999999 hours", TInterval, pgcode.DatetimeFieldOverflow, `interval field value out of range: "99999999999999999999 hours"`},
		{"9999999999999 hours", TInterval, pgcode.DatetimeFieldOverflow, `interval field value out of range: "9999999999999 hours"`},
		{"13:04:05 BC", TTime, pgcode.InvalidDatetimeFormat, `invalid input syntax for type time: "13:04:05 BC"`},
		{"13 PM", TTime, pgcode.InvalidDatetimeFormat, `invalid input syntax for type time: "13 PM"`},
		{"13:00 PM", TTime, pgcode.DatetimeFieldOverflow, `date/time field value out of range: "13:00 PM"`},
		{"2024-01-31 13:04:05 +02 +03", TTimestampTZ, pgcode.InvalidDatetimeFormat, `invalid input syntax for type timestamp with time zone: "2024-01-31 13:04:05 +02 +03"`},
		{"2024-01-31 13:04:05 +02:60", TTimestampTZ, pgcode.DatetimeFieldOverflow, `date/time field value out of range: "2024-01-31 13:04:05 +02:60"`},
		{"2024-01-31 13:04:05 +123", TTimestampTZ, pgcode.InvalidDatetimeFormat, `invalid input syntax for type timestamp with time zone: "2024-01-31 13:04:05 +123"`},
		{"nope", TUnknown, "", ""},
		{"2562047788:00:54.775808", TInterval, pgcode.DatetimeFieldOverflow, `interval field value out of range: "2562047788:00:54.775808"`},
		{"99999999999999999:00", TInterval, pgcode.DatetimeFieldOverflow, `interval field value out of range: "99999999999999999:00"`},
		{"P0-0-0T", TInterval, pgcode.InvalidDatetimeFormat, `invalid input syntax for type interval: "P0-0-0T"`},
		{"2024-01-31 13:04:05 XYZ", TTimestampTZ, pgcode.InvalidDatetimeFormat, `invalid input syntax for type timestamp with time zone: "2024-01-31 13:04:05 XYZ"`},
		{"2024-01-31 13:04:05 ../etc/x", TTimestampTZ, pgcode.InvalidDatetimeFormat, `invalid input syntax for type timestamp with time zone: "2024-01-31 13:04:05 ../etc/x"`},
	}
	for _, tc := range tests {
		_, err := ParseText(tc.in, tc.t)
		if tc.code == "" {
			if err != nil {
				t.Errorf("ParseText(%q, %s): %v", tc.in, tc.t, err)
			}
			continue
		}
		if errCode(err) != string(tc.code) || err.Error() != tc.msg {
			t.Errorf("ParseText(%q, %s) = %s %v, want %s %q", tc.in, tc.t, errCode(err), err, tc.code, tc.msg)
		}
	}
}

func TestParseTextValues(t *testing.T) {
	v3 := T{Fam: Varchar, Prec: 3}
	tests := []struct {
		in   string
		t    T
		want Datum
	}{
		{"abc   ", v3, NewString("abc")},
		{"héé ", v3, NewString("héé")},
		{"ab", v3, NewString("ab")},
		{"anything goes", TVarchar, NewString("anything goes")},
		{strings.Repeat("é", 40), TName, NewString(strings.Repeat("é", 31))},
		{"abc", TChar, NewString("a")},
		{"", TChar, NewString("")},
		{"42", TRegClass, NewInt(42)},
		{"-1", TOid, NewInt(4294967295)},
		{"12.50", TNumeric, NewDecimal(1250, 2)},
		{"1.00000000000000000000000", TNumeric, decBigForm(false, bigPow10(23).Bytes(), 23)},
		{"-9223372036854775808", TNumeric, NewDecimal(math.MinInt64, 0)},
		{"9223372036854775808", TNumeric, decBigForm(false, []byte{0x80, 0, 0, 0, 0, 0, 0, 0}, 0)},
		{"123456789.123456789012345", T{Fam: Numeric, Prec: 20, Scale: 5}, NewDecimal(12345678912346, 5)},
		{"0.5", T{Fam: Numeric, Prec: 3, Scale: -1}, NewDecimal(1, 0)},
		{"1", TFloat4, NewFloat(1)},
		{"2024-01-31 13:04:05", TTimestamp, NewTimestamp(1706706245000000)},
		{"1970-01-01", TDate, NewDate(0)},
		{"epoch", TTimestampTZ, NewTimestampTZ(0)},
		{"1 mon 2 days 00:00:03", TInterval, NewInterval(1, 2, 3*usPerSec)},
		{"{}", TTextArray, Datum{K: KArray, A: NewElems([]Datum{})}},
		{`{"",NULL}`, TTextArray, Datum{K: KArray, A: NewElems([]Datum{NewString(""), Null})}},
		{`["x", {"k": null}]`, TJSONB, NewJSON(`["x", {"k": null}]`)},
		{"\\x4142", TBytea, NewBytes([]byte("AB"))},
		{"raw", TUnknown, NewString("raw")},
		{"2024-01-31 13:04:05 PST", TTimestampTZ, NewTimestampTZ(1706706245000000 + 8*usPerHour)},
		{"2024-01-31 13:04:05 pdt", TTimestampTZ, NewTimestampTZ(1706706245000000 + 7*usPerHour)},
		{"2024-01-31 13:04:05 jst", TTimestampTZ, NewTimestampTZ(1706706245000000 - 9*usPerHour)},
		{"2024-01-31 13:04:05 CEST", TTimestamp, NewTimestamp(1706706245000000)},
		{"2024-01-31 13:04:05 Asia/Tokyo", TTimestampTZ, NewTimestampTZ(1706706245000000 - 9*usPerHour)},
		{"2024-01-31 13:04:05 Asia/Tokyo", TTimestampTZ, NewTimestampTZ(1706706245000000 - 9*usPerHour)}, // cached
		{"2024-01-31 13:04:05 Etc/GMT+5", TTimestampTZ, NewTimestampTZ(1706706245000000 + 5*usPerHour)},
		{"-2562047788:00:54.775808", TInterval, NewInterval(0, 0, math.MinInt64)},
		{"2562047788:00:54.775807", TInterval, NewInterval(0, 0, math.MaxInt64)},
	}
	for _, tc := range tests {
		got, err := ParseText(tc.in, tc.t)
		if err != nil {
			t.Errorf("ParseText(%q, %s): %v", tc.in, tc.t, err)
			continue
		}
		if !sameDatum(got, tc.want) {
			t.Errorf("ParseText(%q, %s) = %+v, want %+v", tc.in, tc.t, got, tc.want)
		}
	}
}

// sameDatum reports whether two datums are identical field by field
// (floats by bits, arrays recursively, nil and empty arrays apart).
func sameDatum(a, b Datum) bool {
	if a.K != b.K || a.X != b.X || a.M != b.M || a.I != b.I || a.S != b.S ||
		math.Float64bits(a.Float()) != math.Float64bits(b.Float()) || len(a.Elems()) != len(b.Elems()) || (a.Elems() == nil) != (b.Elems() == nil) {
		return false
	}
	for i := range a.Elems() {
		if !sameDatum(a.Elems()[i], b.Elems()[i]) {
			return false
		}
	}
	return true
}

func TestFloatTextRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 20000; i++ {
		f := math.Float64frombits(rng.Uint64())
		if math.IsNaN(f) {
			continue
		}
		s := FormatText(NewFloat(f), TFloat8)
		d, err := ParseText(s, TFloat8)
		if err != nil || math.Float64bits(d.Float()) != math.Float64bits(f) {
			t.Fatalf("float8 %v -> %q -> %v, %v", f, s, d.Float(), err)
		}
		f32 := math.Float32frombits(rng.Uint32())
		if f32 != f32 {
			continue
		}
		s = FormatText(NewFloat(float64(f32)), TFloat4)
		d, err = ParseText(s, TFloat4)
		if err != nil || math.Float32bits(float32(d.Float())) != math.Float32bits(f32) {
			t.Fatalf("float4 %v -> %q -> %v, %v", f32, s, d.Float(), err)
		}
	}
}

// randDateTime returns random values of the date/time kinds in range.
func randDateTime(rng *rand.Rand) (date, tm, ts, iv Datum) {
	date = NewDate(minDateDays + rng.Int63n(maxDateDays-minDateDays+1))
	tm = NewTime(rng.Int63n(usPerDay + 1))
	ts = NewTimestamp(minTsUs + int64(rng.Uint64()%uint64(maxTsUs-minTsUs+1)))
	if rng.Intn(2) == 0 {
		ts = NewTimestamp(rng.Int63n(200*365*usPerDay) - 100*365*usPerDay)
	}
	var m, d int32
	var us int64
	switch rng.Intn(3) {
	case 0:
		m, d, us = int32(rng.Uint32()), int32(rng.Uint32()), int64(rng.Uint64())
	case 1:
		m, d, us = int32(rng.Intn(50)-25), int32(rng.Intn(100)-50), rng.Int63n(4*usPerDay)-2*usPerDay
	default:
		us = rng.Int63n(2*usPerSec) - usPerSec
	}
	iv = NewInterval(m, d, us)
	return
}

func TestDateTimeTextRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for i := 0; i < 20000; i++ {
		date, tm, ts, iv := randDateTime(rng)
		tstz := NewTimestampTZ(ts.I)
		for _, c := range []struct {
			d Datum
			t T
		}{{date, TDate}, {tm, TTime}, {ts, TTimestamp}, {tstz, TTimestampTZ}, {iv, TInterval}} {
			s := FormatText(c.d, c.t)
			got, err := ParseText(s, c.t)
			if err != nil || !sameDatum(got, c.d) {
				t.Fatalf("%s %+v -> %q -> %+v, %v", c.t, c.d, s, got, err)
			}
		}
	}
}

func TestTextArrayAndByteaRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	alphabet := []string{"a", "b", " ", ",", "{", "}", `"`, `\`, "é", "NULL", "null", "\t", "x y"}
	for i := 0; i < 5000; i++ {
		n := rng.Intn(5)
		a := make([]Datum, n)
		for j := range a {
			if rng.Intn(6) == 0 {
				a[j] = Null
				continue
			}
			var sb strings.Builder
			for k := rng.Intn(4); k > 0; k-- {
				sb.WriteString(alphabet[rng.Intn(len(alphabet))])
			}
			a[j] = NewString(sb.String())
		}
		d := Datum{K: KArray, A: NewElems(a)}
		s := FormatText(d, TTextArray)
		got, err := ParseText(s, TTextArray)
		if err != nil || !sameDatum(got, d) {
			t.Fatalf("%+v -> %q -> %+v, %v", d, s, got, err)
		}
		b := make([]byte, rng.Intn(10))
		rng.Read(b)
		bd := NewBytes(b)
		s = FormatText(bd, TBytea)
		got, err = ParseText(s, TBytea)
		if err != nil || !sameDatum(got, bd) {
			t.Fatalf("bytea %x -> %q -> %+v, %v", b, s, got, err)
		}
	}
}

func TestCastMisc(t *testing.T) {
	if d, err := Cast(Null, TInt4, TText); err != nil || !d.IsNull() {
		t.Errorf("Cast(NULL) = %+v, %v", d, err)
	}
	_, err := Cast(NewInt(1), TInt4, TDate)
	if errCode(err) != "42846" || err.Error() != "cannot cast type integer to date" {
		t.Errorf("Cast(int, date) error = %v", err)
	}
	tests := []struct {
		d        Datum
		from, to T
		want     Datum
	}{
		{NewString("héllo"), TText, T{Fam: Varchar, Prec: 2}, NewString("hé")},
		{NewString(strings.Repeat("x", 70)), TText, TName, NewString(strings.Repeat("x", 63))},
		{NewInt(7), TUnknown, TText, NewString("7")},
		{NewDecimal(125, 1), TNumeric, TInt8, NewInt(13)},
		{NewDecimal(-125, 1), TNumeric, TInt8, NewInt(-13)},
		{NewFloat(-0.5), TFloat8, TInt8, NewInt(0)},
		{NewFloat(1.5), TFloat8, TInt8, NewInt(2)},
		{NewFloat(-9.223372036854775808e18), TFloat8, TInt8, NewInt(math.MinInt64)},
		{NewInt(math.MaxInt64), TInt8, TNumeric, NewDecimal(math.MaxInt64, 0)},
		{NewInt(5), TInt4, T{Fam: Numeric, Prec: 4, Scale: 2}, NewDecimal(500, 2)},
		{NewDecimal(15, 1), TNumeric, TFloat4, NewFloat(1.5)},
		{NewTimestampTZ(InfinityI), TTimestampTZ, TDate, NewDate(InfinityI)},
		{NewDate(-1), TDate, TTimestampTZ, NewTimestampTZ(-usPerDay)},
		{NewTimestamp(-1), TTimestamp, TTime, NewTime(usPerDay - 1)},
		{NewInterval(1, 2, 3), TInterval, TInterval, NewInterval(1, 2, 3)},
		{NewJSON(`{"a": 1}`), TJSONB, TText, NewString(`{"a": 1}`)},
		{NewString(`{"a":1}`), TText, TJSONB, NewJSON(`{"a": 1}`)},
		{NewBytes([]byte{1}), TBytea, TBytea, NewBytes([]byte{1})},
		{NewInt(99), TRegClass, TOid, NewInt(99)},
		{NewBool(true), TBool, TInt8, NewInt(1)},
		{NewBool(true), TBool, TBool, NewBool(true)},
	}
	for _, tc := range tests {
		got, err := Cast(tc.d, tc.from, tc.to)
		if err != nil || !sameDatum(got, tc.want) {
			t.Errorf("Cast(%+v, %s, %s) = %+v, %v; want %+v", tc.d, tc.from, tc.to, got, err, tc.want)
		}
	}
	errs := []struct {
		d        Datum
		from, to T
		code     string
	}{
		{NewFloat(9.3e18), TFloat8, TInt8, "22003"},
		{NewFloat(math.Inf(1)), TFloat8, TInt4, "22003"},
		{NewDecimal(1, 400), TNumeric, TFloat8, "22003"},
		{NewInt(-1), TInt8, TOid, "22003"},
		{NewBool(true), TBool, TOid, "42846"},
		{NewFloat(1), TFloat8, TOid, "42846"},
		{NewDate(maxDateDays), TDate, TTimestamp, "22008"},
		{NewTimestamp(InfinityI), TTimestamp, TTime, "22008"},
		{NewJSON(`"x"`), TJSONB, TDate, "42846"},
		{NewString("x"), TBytea, TInt4, "42846"},
		{NewJSON("[1]"), TJSONB, TInt4, "22023"},
	}
	for _, tc := range errs {
		if _, err := Cast(tc.d, tc.from, tc.to); errCode(err) != tc.code {
			t.Errorf("Cast(%+v, %s, %s) error = %v, want %s", tc.d, tc.from, tc.to, err, tc.code)
		}
	}
}
