package types

import (
	"bytes"
	"encoding/hex"
	"math"
	"math/rand"
	"testing"
)

// randAnyDatum returns a random datum of any kind, with arbitrary field
// values for the fields its kind uses.
func randAnyDatum(rng *rand.Rand, depth int) Datum {
	k := keyKinds[rng.Intn(len(keyKinds))]
	if k == KArray && depth > 2 {
		k = KString
	}
	switch k {
	case KFloat:
		return NewFloat(math.Float64frombits(rng.Uint64())) // NaN payloads, -0
	case KDecimal:
		if rng.Intn(5) == 0 {
			return []Datum{DecNaN(), DecInf(false), DecInf(true)}[rng.Intn(3)]
		}
		if rng.Intn(3) == 0 {
			d := randBigDecimal(rng)
			return decRaiseScale(d, int32(rng.Intn(MaxDecScale+1)))
		}
		return NewDecimal(int64(rng.Uint64()), int32(rng.Intn(MaxDecScale+1)))
	case KInterval:
		return NewInterval(int32(rng.Uint32()), int32(rng.Uint32()), int64(rng.Uint64()))
	case KDate, KTime, KTimestamp, KTimestampTZ, KInt:
		return Datum{K: k, I: int64(rng.Uint64()) >> rng.Intn(64)}
	case KArray:
		if rng.Intn(5) == 0 {
			return Datum{K: KArray}
		}
		a := make([]Datum, rng.Intn(4))
		for i := range a {
			a[i] = randAnyDatum(rng, depth+1)
		}
		return Datum{K: KArray, A: NewElems(a)}
	}
	return randKeyDatum(rng, k)
}

func TestValueRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(50))
	for i := 0; i < 20000; i++ {
		d := randAnyDatum(rng, 0)
		buf := AppendValue([]byte("x"), d)
		got, rest, err := DecodeValue(append(buf[1:], 0x77))
		if err != nil || !sameDatum(got, d) || !bytes.Equal(rest, []byte{0x77}) {
			t.Fatalf("DecodeValue(AppendValue(%+v)) = %+v, %x, %v", d, got, rest, err)
		}
	}
}

func TestRowRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(51))
	for i := 0; i < 3000; i++ {
		r := make(Row, rng.Intn(8))
		for j := range r {
			r[j] = randAnyDatum(rng, 0)
		}
		enc := EncodeRow([]byte("hdr"), r)
		got, err := DecodeRow(enc[3:])
		if err != nil || len(got) != len(r) {
			t.Fatalf("DecodeRow: %v (%d values, want %d)", err, len(got), len(r))
		}
		for j := range r {
			if !sameDatum(got[j], r[j]) {
				t.Fatalf("value %d: %+v, want %+v", j, got[j], r[j])
			}
		}
	}
	if r, err := DecodeRow([]byte{0}); err != nil || len(r) != 0 {
		t.Errorf("empty row = %v, %v", r, err)
	}
}

func TestValueVectors(t *testing.T) {
	tests := []struct {
		d    Datum
		want string
	}{
		{Null, "00"},
		{NewBool(false), "01"},
		{NewBool(true), "02"},
		{NewInt(-1), "0301"},
		{NewInt(300), "03d804"},
		{NewFloat(1), "04000000000000f03f"},
		{NewDecimal(1050, 2), "0504b410"},
		{DecNaN(), "050100"},
		{NewString("hi"), "06026869"},
		{NewBytes([]byte{0}), "070100"},
		{NewDate(-1), "0801"},
		{NewTime(1), "0902"},
		{NewTimestamp(2), "0a04"},
		{NewTimestampTZ(-2), "0b03"},
		{NewInterval(1, -1, 2), "0c020104"},
		{NewJSON("1"), "0d0131"},
		{Datum{K: KArray, A: NewElems([]Datum{Null})}, "0e0100"},
		{Datum{K: KArray, A: NewElems([]Datum{})}, "0e00"},
		{Datum{K: KArray}, "0f"},
	}
	for _, tc := range tests {
		if got := hex.EncodeToString(AppendValue(nil, tc.d)); got != tc.want {
			t.Errorf("AppendValue(%+v) = %s, want %s", tc.d, got, tc.want)
		}
	}
	if got := hex.EncodeToString(EncodeRow(nil, Row{NewInt(1), Null})); got != "02030200" {
		t.Errorf("EncodeRow = %s", got)
	}
}

func TestDecodeValueCorrupt(t *testing.T) {
	bad := []string{"", "10", "ff", "03", "0380", "04000000", "05", "0502", "0580808080808080808080", "05ff7f00", "0682", "0604616263", "06ff",
		"0c", "0c0000", "0c80808080200000", "0e", "0e05", "0e0103", "0e80808080808080808001"}
	for _, s := range bad {
		b, _ := hex.DecodeString(s)
		if d, _, err := DecodeValue(b); errCode(err) != "XX001" {
			t.Errorf("DecodeValue(%s) = %+v, %v; want XX001", s, d, err)
		}
	}
	rows := []string{"", "80", "01", "0203", "0100ff", "ffffffffffffffffff0100", "0500000000"}
	for _, s := range rows {
		b, _ := hex.DecodeString(s)
		if r, err := DecodeRow(b); errCode(err) != "XX001" {
			t.Errorf("DecodeRow(%s) = %+v, %v; want XX001", s, r, err)
		}
	}
	deep := append(bytes.Repeat([]byte{valArray, 1}, 100), valNull)
	if _, _, err := DecodeValue(deep); errCode(err) != "XX001" {
		t.Errorf("deep array: %v", err)
	}
}

func FuzzDecodeRow(f *testing.F) {
	rng := rand.New(rand.NewSource(52))
	for i := 0; i < 20; i++ {
		r := make(Row, rng.Intn(5))
		for j := range r {
			r[j] = randAnyDatum(rng, 0)
		}
		f.Add(EncodeRow(nil, r))
	}
	f.Add([]byte{})
	f.Add([]byte{1, valArray, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRow(b)
		if err != nil {
			if errCode(err) != "XX001" {
				t.Fatalf("DecodeRow(%x): error %v is not XX001", b, err)
			}
			return
		}
		// A decoded row re-encodes to bytes that decode to the same row.
		enc := EncodeRow(nil, r)
		r2, err := DecodeRow(enc)
		if err != nil || len(r2) != len(r) {
			t.Fatalf("re-decode of %x: %v", enc, err)
		}
		for i := range r {
			if !sameDatum(r[i], r2[i]) {
				t.Fatalf("value %d: %+v != %+v", i, r[i], r2[i])
			}
		}
	})
}

func FuzzDecodeKey(f *testing.F) {
	rng := rand.New(rand.NewSource(53))
	for _, k := range keyKinds {
		f.Add(AppendKey(nil, randKeyDatum(rng, k)), false)
		f.Add(AppendKeyDesc(nil, randKeyDatum(rng, k)), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, desc bool) {
		dec, enc := DecodeKey, AppendKey
		if desc {
			dec, enc = DecodeKeyDesc, AppendKeyDesc
		}
		d, rest, err := dec(b)
		if err != nil {
			if errCode(err) != "XX001" {
				t.Fatalf("error %v is not XX001", err)
			}
			return
		}
		// Re-encoding gives a key that decodes to an equal value.
		d2, rest2, err := dec(enc(nil, d))
		if err != nil || len(rest2) != 0 || Compare(d, d2) != 0 || len(rest) > len(b) {
			t.Fatalf("re-decode of %+v: %+v %v", d, d2, err)
		}
	})
}

func FuzzParseText(f *testing.F) {
	for _, v := range pgInputVectors {
		f.Add(v.in, uint8(v.typ.Fam))
	}
	f.Fuzz(func(t *testing.T, s string, fam uint8) {
		typ := T{Fam: Family(fam % uint8(TextArray+1)), Scale: -1}
		d, err := ParseText(s, typ)
		if err != nil {
			if errCode(err) == "XX000" {
				t.Fatalf("ParseText(%q, %s): untagged error %v", s, typ, err)
			}
			return
		}
		// Output reads back as an equal value (float4 via its own text).
		out := FormatText(d, typ)
		d2, err := ParseText(out, typ)
		if err != nil {
			t.Fatalf("ParseText(%q, %s) -> %q does not read back: %v", s, typ, out, err)
		}
		if Compare(d, d2) != 0 && typ.Fam != Char && typ.Fam != Name {
			t.Fatalf("ParseText(%q, %s) = %+v -> %q -> %+v", s, typ, d, out, d2)
		}
		if _, err := EncodeBinary(nil, d, typ); err != nil && typ.Fam != RegClass && typ.Fam != Oid {
			t.Fatalf("EncodeBinary(%+v, %s): %v", d, typ, err)
		}
	})
}

func FuzzDecodeBinary(f *testing.F) {
	for _, v := range pgBinaryVectors {
		b, _ := hex.DecodeString(v.hex)
		f.Add(b, uint8(v.typ.Fam))
	}
	f.Fuzz(func(t *testing.T, b []byte, fam uint8) {
		typ := T{Fam: Family(fam % uint8(TextArray+1)), Scale: -1}
		d, err := DecodeBinary(b, typ)
		if err != nil {
			return
		}
		enc, err := EncodeBinary(nil, d, typ)
		if err != nil {
			t.Fatalf("EncodeBinary(%+v, %s): %v", d, typ, err)
		}
		d2, err := DecodeBinary(enc, typ)
		if err != nil || Compare(d, d2) != 0 {
			t.Fatalf("binary %x -> %+v -> %x -> %+v, %v", b, d, enc, d2, err)
		}
	})
}

// TestRowAlloc: rows cut from one slab are disjoint, zeroed and full,
// so appending to one or writing past it cannot reach its neighbour.
func TestRowAlloc(t *testing.T) {
	var a RowAlloc
	var rows []Row
	for i := 0; i < 3*SlabRows; i++ {
		r := a.Row(3)
		if len(r) != 3 || cap(r) != 3 {
			t.Fatalf("row %d: len %d cap %d", i, len(r), cap(r))
		}
		for j := range r {
			if !r[j].IsNull() {
				t.Fatalf("row %d not zeroed", i)
			}
			r[j] = NewInt(int64(i*10 + j))
		}
		rows = append(rows, r)
	}
	rows[0] = append(rows[0], NewInt(-1)) // must copy, not overwrite rows[1]
	for i, r := range rows {
		for j := 0; j < 3; j++ {
			if r[j].I != int64(i*10+j) {
				t.Fatalf("row %d col %d = %d", i, j, r[j].I)
			}
		}
	}
	if r := a.Row(0); len(r) != 0 {
		t.Fatal("empty row")
	}
	if r := a.Row(1000); len(r) != 1000 || cap(r) != 1000 {
		t.Fatal("a row larger than a slab")
	}
	// Sink log chunks decode through one.
	buf := EncodeRow(nil, Row{NewInt(1), NewString("x")})
	r1, err := DecodeRowIn(buf, &a)
	if err != nil || len(r1) != 2 || r1[1].S != "x" {
		t.Fatalf("DecodeRowIn: %v %v", r1, err)
	}
}
