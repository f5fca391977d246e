package types

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand"
	"strings"
	"testing"
)

func TestBinaryPostgresVectors(t *testing.T) {
	for _, v := range pgBinaryVectors {
		d, err := ParseText(v.in, v.typ)
		if err != nil {
			t.Errorf("ParseText(%q, %s): %v", v.in, v.typ, err)
			continue
		}
		pgBytes, err := hex.DecodeString(v.hex)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := EncodeBinary(nil, d, v.typ)
		if err != nil {
			t.Errorf("EncodeBinary(%q, %s): %v", v.in, v.typ, err)
			continue
		}
		if hex.EncodeToString(enc) != v.hex {
			t.Errorf("EncodeBinary(%q, %s) = %x, want %s", v.in, v.typ, enc, v.hex)
		}
		dec, err := DecodeBinary(pgBytes, v.typ)
		if err != nil {
			t.Errorf("DecodeBinary(%s, %s): %v", v.hex, v.typ, err)
			continue
		}
		want := v.text
		switch v.typ.Fam {
		case Bool:
			want = want[:1] // the vectors hold bool::text
		}
		if got := FormatText(dec, v.typ); got != want {
			t.Errorf("DecodeBinary(%s, %s) = %q, want %q", v.hex, v.typ, got, want)
		}
		if v.typ.Fam != Numeric && !sameDatum(dec, d) {
			t.Errorf("DecodeBinary(%s, %s) = %+v, want %+v", v.hex, v.typ, dec, d)
		}
		if v.typ.Fam == Numeric && (DecCmp(dec, d) != 0 || dec.X != d.X) {
			t.Errorf("DecodeBinary(%s, numeric) = %+v, want %+v", v.hex, dec, d)
		}
	}
}

// randDatumFor returns a random datum valid for type t.
func randDatumFor(rng *rand.Rand, t T) Datum {
	date, tm, ts, iv := randDateTime(rng)
	switch t.Fam {
	case Bool:
		return NewBool(rng.Intn(2) == 0)
	case Int2:
		return NewInt(int64(int16(rng.Uint32())))
	case Int4:
		return NewInt(int64(int32(rng.Uint32())))
	case Int8:
		return NewInt(int64(rng.Uint64()))
	case Oid, RegClass:
		return NewInt(int64(rng.Uint32()))
	case Float4:
		return NewFloat(float64(math.Float32frombits(rng.Uint32())))
	case Float8:
		return NewFloat(math.Float64frombits(rng.Uint64()))
	case Numeric:
		switch rng.Intn(20) {
		case 0:
			return DecNaN()
		case 1:
			return DecInf(rng.Intn(2) == 0)
		}
		return randDecimal(rng)
	case Text, Varchar, Name:
		return NewString(randText(rng, 10))
	case Char:
		return NewString(string(rune('a' + rng.Intn(26))))
	case Bytea:
		b := make([]byte, rng.Intn(10))
		rng.Read(b)
		return NewBytes(b)
	case Date:
		switch rng.Intn(10) {
		case 0:
			return NewDate(InfinityI)
		case 1:
			return NewDate(NegInfinityI)
		}
		return date
	case Time:
		return tm
	case Timestamp:
		return ts
	case TimestampTZ:
		return NewTimestampTZ(ts.I)
	case Interval:
		return iv
	case JSONB:
		return NewJSON(`{"k": [1, "` + strings.Repeat("é", rng.Intn(3)) + `", null]}`)
	case TextArray:
		return randTextArray(rng, 0)
	}
	return Null
}

func randText(rng *rand.Rand, n int) string {
	chars := []rune{'a', 'Z', ' ', ',', '"', '\\', '{', 'é', '☃', '\n'}
	r := make([]rune, rng.Intn(n+1))
	for i := range r {
		r[i] = chars[rng.Intn(len(chars))]
	}
	return string(r)
}

func randTextArray(rng *rand.Rand, depth int) Datum {
	n := rng.Intn(4)
	if depth == 0 && rng.Intn(4) == 0 {
		// two-dimensional
		inner := 1 + rng.Intn(3)
		a := make([]Datum, 1+rng.Intn(3))
		for i := range a {
			sub := make([]Datum, inner)
			for j := range sub {
				sub[j] = NewString(randText(rng, 4))
			}
			a[i] = Datum{K: KArray, A: NewElems(sub)}
		}
		return Datum{K: KArray, A: NewElems(a)}
	}
	a := make([]Datum, n)
	for i := range a {
		if rng.Intn(5) == 0 {
			a[i] = Null
		} else {
			a[i] = NewString(randText(rng, 4))
		}
	}
	return Datum{K: KArray, A: NewElems(a)}
}

var allTypes = []T{TBool, TInt2, TInt4, TInt8, TFloat4, TFloat8, TNumeric, TText, TVarchar, TBytea, TDate, TTime,
	TTimestamp, TTimestampTZ, TInterval, TJSONB, TOid, TName, TRegClass, TChar, TTextArray}

func TestBinaryRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(20))
	for _, typ := range allTypes {
		for i := 0; i < 2000; i++ {
			d := randDatumFor(rng, typ)
			enc, err := EncodeBinary([]byte("prefix"), d, typ)
			if err != nil {
				t.Fatalf("EncodeBinary(%+v, %s): %v", d, typ, err)
			}
			if string(enc[:6]) != "prefix" {
				t.Fatalf("EncodeBinary clobbered the buffer")
			}
			got, err := DecodeBinary(enc[6:], typ)
			if err != nil {
				t.Fatalf("DecodeBinary(%x, %s) of %+v: %v", enc[6:], typ, d, err)
			}
			if !sameDatum(got, d) {
				t.Fatalf("%s round trip: %+v -> %x -> %+v", typ, d, enc[6:], got)
			}
		}
	}
}

func TestEncodeBinaryConversions(t *testing.T) {
	tests := []struct {
		d    Datum
		t    T
		want string
		code string
	}{
		{NewInt(3), TFloat8, "4008000000000000", ""},
		{NewDecimal(15, 1), TFloat4, "3fc00000", ""},
		{NewInt(5), TNumeric, "00010000000000000005", ""},
		{NewFloat(0.5), TNumeric, "0001ffff000000011388", ""},
		{NewFloat(2.5), TInt4, "00000002", ""},
		{NewDecimal(25, 1), TInt8, "0000000000000003", ""},
		{NewInt(70000), TInt2, "", "22003"},
		{NewInt(5), TText, "35", ""},
		{NewDate(0), TText, "313937302d30312d3031", ""},
		{NewString("x"), TBytea, "78", ""},
		{NewString(`{"a": 1}`), TJSONB, "017b2261223a20317d", ""},
		{NewInt(-1), TOid, "ffffffff", ""},
		{NewInt(1 << 40), TOid, "", "22003"},
		{NewString("x"), TInt4, "", "42804"},
		{NewInt(1), TDate, "", "42804"},
		{NewInt(1), TBool, "", "42804"},
		{Null, TInt4, "", "XX000"},
		{NewFloat(1e20), TNumeric, "00010005000000000001", ""},
		{NewDate(math.MaxInt64 - 1), TDate, "", "22008"},
		{NewTimestamp(math.MinInt64 + 1), TTimestamp, "", "22008"},
		{Datum{K: KArray, A: NewElems([]Datum{{K: KArray, A: NewElems([]Datum{NewString("a")})}, NewString("b")})}, TTextArray, "", "22023"},
		{Datum{K: KArray, A: NewElems([]Datum{{K: KArray, A: NewElems([]Datum{NewString("a")})}, {K: KArray, A: NewElems([]Datum{})}})}, TTextArray, "", "22023"},
		{Datum{K: KArray, A: NewElems([]Datum{NewInt(1)})}, TTextArray, "000000010000000000000019000000010000000100000001" + "31", ""},
	}
	for _, tc := range tests {
		got, err := EncodeBinary(nil, tc.d, tc.t)
		if errCode(err) != tc.code || (tc.code == "" && hex.EncodeToString(got) != tc.want) {
			t.Errorf("EncodeBinary(%+v, %s) = %x, %v; want %s %s", tc.d, tc.t, got, err, tc.want, tc.code)
		}
	}
	deep := Datum{K: KArray, A: NewElems([]Datum{NewString("x")})}
	for i := 0; i < 7; i++ {
		deep = Datum{K: KArray, A: NewElems([]Datum{deep})}
	}
	if _, err := EncodeBinary(nil, deep, TTextArray); errCode(err) != "54000" {
		t.Errorf("EncodeBinary(8-dim array) = %v", err)
	}
}

func TestDecodeBinaryErrors(t *testing.T) {
	h := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		b    []byte
		t    T
		code string
	}{
		{nil, TBool, "22P03"},
		{h("0001"), TInt4, "22P03"},
		{h("0000000001"), TInt4, "22P03"},
		{h("00"), TInt2, "22P03"},
		{h("00000000"), TInt8, "22P03"},
		{h("0000"), TFloat4, "22P03"},
		{h("00"), TFloat8, "22P03"},
		{h("000000"), TNumeric, "22P03"},
		{h("0001000000000000"), TNumeric, "22P03"},       // ndigits 1, no digit
		{h("ffff000000000000"), TNumeric, "22P03"},       // negative ndigits
		{h("0000000012340000"), TNumeric, "22P03"},       // bad sign
		{h("000000000000ffff"), TNumeric, "22P03"},       // bad dscale
		{h("00010000000000002710"), TNumeric, "22P03"},   // digit 10000
		{h("0002000000000000000100"), TNumeric, "22P03"}, // odd length
		{h("00050004000000000384"), TNumeric, "22P03"},   // short digits
		{h("ff"), TText, "22021"},
		{h("6100"), TText, "22021"},
		{h("c328"), TVarchar, "22021"},
		{[]byte("abcdef"), T{Fam: Varchar, Prec: 3}, "22001"},
		{h("ff"), TName, "22021"},
		{h("6162"), TChar, "22P03"},
		{h("000000"), TDate, "22P03"},
		{h("7ffffffe"), TDate, "22008"},
		{h("0000000000000001ff"), TTime, "22P03"},
		{h("ffffffffffffffff"), TTime, "22008"},
		{h("00000014f46b0401"), TTime, "22008"},
		{h("7ffffffffffffffe"), TTimestamp, "22008"},
		{h("8000000000000001"), TTimestampTZ, "22008"},
		{h("00"), TInterval, "22P03"},
		{nil, TJSONB, "22P03"},
		{h("027b7d"), TJSONB, "22P03"},
		{h("017b"), TJSONB, "22P02"},
		{h("01ff"), TJSONB, "22021"},
		{h("000000"), TOid, "22P03"},
		{h("0000"), TTextArray, "22P03"},
		{h("000000070000000000000019"), TTextArray, "22P03"},                                       // 7 dims
		{h("ffffffff0000000000000019"), TTextArray, "22P03"},                                       // negative dims
		{h("000000010000000200000019"), TTextArray, "22P03"},                                       // bad flags
		{h("000000010000000000000017"), TTextArray, "42804"},                                       // int4 elements
		{h("00000001000000000000001900000001"), TTextArray, "22P03"},                               // missing lbound
		{h("000000010000000000000019ffffffff00000001"), TTextArray, "22P03"},                       // negative size
		{h("0000000100000000000000197fffffff00000001"), TTextArray, "22P03"},                       // huge size
		{h("00000001000000000000001900000001000000010000000561"), TTextArray, "22P03"},             // element too long
		{h("00000001000000000000001900000001000000010000000161ff"), TTextArray, "22P03"},           // trailing
		{h("000000010000000000000019000000010000000100000001ff"), TTextArray, "22021"},             // bad utf8
		{h("000000010000000000000019000000010000000180000000"), TTextArray, "22P03"},               // len < -1
		{h("000000020000000000000019000100000000000100010000000000001"[:56]), TTextArray, "22P03"}, // huge product
		{h("0000000200000000000000197fffffff0000000100000000000000001"[:56]), TTextArray, "22P03"}, // too big
		{h("00"), TUnknown, "22021"},
		{nil, T{Fam: Family(200)}, "22P03"},
	}
	for _, tc := range tests {
		d, err := DecodeBinary(tc.b, tc.t)
		if errCode(err) != tc.code {
			t.Errorf("DecodeBinary(%x, %s) = %+v, %v; want %s", tc.b, tc.t, d, err, tc.code)
		}
	}
	// Zero-size dimensions give an empty array; lower bounds are ignored.
	d, err := DecodeBinary(h("000000020000000000000019000000027fffffff0000000000000001"), TTextArray)
	if err != nil || d.K != KArray || len(d.Elems()) != 0 {
		t.Errorf("zero-size array = %+v, %v", d, err)
	}
	d, err = DecodeBinary(h("0000000100000000000000190000000100000005000000016162"[:len("0000000100000000000000190000000100000005000000016162")-2]), TTextArray)
	if err != nil || len(d.Elems()) != 1 || d.Elems()[0].S != "a" {
		t.Errorf("lower bound 5 = %+v, %v", d, err)
	}
	// Numeric digits beyond dscale are truncated as numeric_recv does.
	d, err = DecodeBinary(h("0002000000000001000113ec"), TNumeric) // 1.5100 with dscale 1
	if err != nil || DecString(d) != "1.5" {
		t.Errorf("numeric beyond dscale = %s, %v", DecString(d), err)
	}
	// A numeric(p,s) parameter is coerced.
	d, err = DecodeBinary(h("0002000000000002000a1388"), T{Fam: Numeric, Prec: 3, Scale: 1})
	if err != nil || DecString(d) != "10.5" {
		t.Errorf("numeric(3,1) = %s, %v", DecString(d), err)
	}
	if _, err := DecodeBinary(h("0002000000000002000a1388"), T{Fam: Numeric, Prec: 2, Scale: 1}); errCode(err) != "22003" {
		t.Errorf("numeric(2,1) overflow = %v", err)
	}
}

// TestDecodeBinaryNoPanic feeds random and mutated bytes to every decoder.
func TestDecodeBinaryNoPanic(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	for _, typ := range allTypes {
		for i := 0; i < 3000; i++ {
			var b []byte
			if i%2 == 0 {
				b = make([]byte, rng.Intn(40))
				rng.Read(b)
			} else {
				var err error
				b, err = EncodeBinary(nil, randDatumFor(rng, typ), typ)
				if err != nil {
					t.Fatal(err)
				}
				if len(b) > 0 {
					b[rng.Intn(len(b))] ^= byte(1 << rng.Intn(8))
					if rng.Intn(3) == 0 {
						b = b[:rng.Intn(len(b))]
					}
				}
			}
			if typ.Fam == TextArray && len(b) >= 12 && rng.Intn(2) == 0 {
				binary.BigEndian.PutUint32(b[8:], 25)
			}
			d, err := DecodeBinary(b, typ)
			if err == nil && d.K == KNull {
				t.Fatalf("DecodeBinary(%x, %s) returned NULL", b, typ)
			}
		}
	}
}
