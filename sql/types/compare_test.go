package types

import (
	"bytes"
	"math"
	"math/big"
	"math/rand"
	"sort"
	"strings"
	"testing"
)

func TestCompareOrderTable(t *testing.T) {
	// Each group lists values in ascending order; values within a
	// sub-slice are equal.
	groups := [][][]Datum{
		{ // numbers of all kinds
			{NewFloat(math.Inf(-1)), DecInf(true)},
			{NewInt(math.MinInt64), NewFloat(-0x1p63), NewDecimal(math.MinInt64, 0)},
			{NewFloat(-1e10), NewInt(-1e10), NewDecimal(-1e11, 1)},
			{NewDecimal(-15, 1), NewFloat(-1.5)},
			{NewDecimal(-1499999999999999999, 18)},
			{NewInt(-1), NewFloat(-1), NewDecimal(-100, 2)},
			{NewDecimal(-1, 30)},
			{NewFloat(-1e-300)},
			{NewInt(0), NewFloat(0), NewFloat(math.Copysign(0, -1)), NewDecimal(0, 5)},
			{NewFloat(5e-324)},
			{NewDecimal(1, 30)},
			{NewDecimal(1, 1)},
			{NewFloat(0.1)},
			{NewDecimal(5, 1), NewFloat(0.5)},
			{NewDecimal(999999999999999999, 18)},
			{NewInt(1), NewFloat(1), NewDecimal(1000, 3)},
			{NewDecimal(1000000000000000001, 18)},
			{NewFloat(1.0000000000000002)},
			{NewInt(1 << 53), NewFloat(1 << 53), NewDecimal(1<<53, 0)},
			{NewInt(1<<53 + 1), NewDecimal((1<<53+1)*10, 1)},
			{NewFloat(1<<53 + 2)},
			{NewInt(math.MaxInt64), NewDecimal(math.MaxInt64, 0)},
			{NewFloat(0x1p63)},
			{NewFloat(1e300)},
			{NewFloat(math.Inf(1)), DecInf(false)},
			{NewFloat(math.NaN()), NewFloat(-math.NaN()), DecNaN()},
		},
		{
			{Null},
		},
		{
			{NewBool(false)}, {NewBool(true)},
		},
		{
			{NewString("")}, {NewString("\x00")}, {NewString("a")}, {NewString("a\x00")}, {NewString("ab")}, {NewString("b")}, {NewString("é")},
		},
		{
			{NewBytes(nil)}, {NewBytes([]byte{0})}, {NewBytes([]byte{0xff})},
		},
		{ // dates and timestamps
			{NewDate(NegInfinityI), NewTimestamp(NegInfinityI), NewTimestampTZ(NegInfinityI)},
			{NewDate(minDateDays), NewTimestamp(minTsUs)},
			{NewTimestamp(-1)},
			{NewDate(0), NewTimestamp(0), NewTimestampTZ(0)},
			{NewTimestampTZ(1)},
			{NewTimestamp(usPerDay - 1)},
			{NewDate(1), NewTimestampTZ(usPerDay)},
			{NewDate(maxTsDays + 1)},
			{NewDate(maxDateDays)},
			{NewDate(InfinityI), NewTimestamp(InfinityI), NewTimestampTZ(InfinityI)},
		},
		{
			{NewTime(0)}, {NewTime(1)}, {NewTime(usPerDay)},
		},
		{ // intervals by total duration
			{NewInterval(math.MinInt32, math.MinInt32, math.MinInt64)},
			{NewInterval(-1, 0, 0), NewInterval(0, -30, 0), NewInterval(0, 0, -30*usPerDay)},
			{NewInterval(0, -1, 0), NewInterval(0, 0, -usPerDay)},
			{NewInterval(0, 0, -1)},
			{NewInterval(0, 0, 0), NewInterval(1, -30, 0), NewInterval(0, 1, -usPerDay)},
			{NewInterval(0, 0, 1)},
			{NewInterval(0, 1, 0), NewInterval(0, 0, usPerDay)},
			{NewInterval(1, 0, 0), NewInterval(0, 30, 0)},
			{NewInterval(0, 31, 0)},
			{NewInterval(math.MaxInt32, math.MaxInt32, math.MaxInt64)},
		},
		{
			{NewJSON("[]")}, {NewJSON(`{"a":1}`)},
		},
		{
			{Datum{K: KArray}, Datum{K: KArray, A: NewElems([]Datum{})}},
			{Datum{K: KArray, A: NewElems([]Datum{Null})}},
			{Datum{K: KArray, A: NewElems([]Datum{Null, NewString("a")})}},
			{Datum{K: KArray, A: NewElems([]Datum{NewString("a")})}},
			{Datum{K: KArray, A: NewElems([]Datum{NewString("a"), Null})}},
			{Datum{K: KArray, A: NewElems([]Datum{NewString("b")})}},
		},
	}
	var all [][]Datum // classes in the order Compare ranks them
	order := []int{1, 2, 0, 3, 4, 5, 6, 7, 8, 9}
	for _, g := range order {
		all = append(all, groups[g]...)
	}
	for i, gi := range all {
		for j, gj := range all {
			want := cmpInt64(int64(i), int64(j))
			for _, a := range gi {
				for _, b := range gj {
					if got := Compare(a, b); got != want {
						t.Errorf("Compare(%+v, %+v) = %d, want %d", a, b, got, want)
					}
					if got := Equal(a, b); got != (want == 0) {
						t.Errorf("Equal(%+v, %+v) = %v", a, b, got)
					}
					if want == 0 && Hash(7, a) != Hash(7, b) {
						t.Errorf("Hash(%+v) != Hash(%+v)", a, b)
					}
				}
			}
		}
	}
}

// exactRat returns the exact value of a finite number datum.
func exactRat(d Datum) *big.Rat {
	switch d.K {
	case KInt:
		return new(big.Rat).SetInt64(d.I)
	case KFloat:
		return new(big.Rat).SetFloat64(d.Float())
	}
	return ratOf(d)
}

func randNumber(rng *rand.Rand) Datum {
	switch rng.Intn(6) {
	case 0:
		return NewInt(rng.Int63n(2000) - 1000)
	case 1:
		return NewInt(int64(rng.Uint64()))
	case 2:
		return NewFloat(float64(rng.Int63n(2000)-1000) / float64(int64(1)<<rng.Intn(8)))
	case 3:
		return NewFloat(math.Float64frombits(rng.Uint64()&^(0x7ff<<52) | uint64(1000+rng.Intn(100))<<52))
	case 4:
		return NewDecimal(rng.Int63n(20000)-10000, int32(rng.Intn(4)))
	}
	return randDecimal(rng)
}

func TestCompareNumbersRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(30))
	for i := 0; i < 50000; i++ {
		a, b := randNumber(rng), randNumber(rng)
		if a.K == KFloat && (math.IsNaN(a.Float()) || math.IsInf(a.Float(), 0)) || b.K == KFloat && (math.IsNaN(b.Float()) || math.IsInf(b.Float(), 0)) {
			continue
		}
		want := exactRat(a).Cmp(exactRat(b))
		if got := Compare(a, b); got != want {
			t.Fatalf("Compare(%+v, %+v) = %d, want %d", a, b, got, want)
		}
		if want == 0 && Hash(1, a) != Hash(1, b) {
			t.Fatalf("Hash(%+v) != Hash(%+v)", a, b)
		}
	}
	// Equal values in different kinds and representations hash equal.
	for i := 0; i < 20000; i++ {
		f := float64(rng.Int63n(1<<20)-1<<19) / float64(int64(1)<<rng.Intn(12))
		d, err := DecFromString(FormatText(NewFloat(f), TFloat8))
		if err != nil {
			t.Fatal(err)
		}
		d2 := decRaiseScale(d, d.X+2+int32(rng.Intn(30)))
		if Compare(NewFloat(f), d) != 0 || Compare(d, d2) != 0 || Hash(0, NewFloat(f)) != Hash(0, d) || Hash(0, d) != Hash(0, d2) {
			t.Fatalf("float %v and decimal %s disagree", f, DecString(d))
		}
		if f == math.Trunc(f) && (Hash(0, NewInt(int64(f))) != Hash(0, d) || Compare(NewInt(int64(f)), d) != 0) {
			t.Fatalf("int %v and decimal %s disagree", f, DecString(d))
		}
	}
}

func TestCompareSortsConsistently(t *testing.T) {
	rng := rand.New(rand.NewSource(31))
	var ds []Datum
	for i := 0; i < 3000; i++ {
		ds = append(ds, randNumber(rng))
	}
	sort.SliceStable(ds, func(i, j int) bool { return Compare(ds[i], ds[j]) < 0 })
	for i := 1; i < len(ds); i++ {
		if Compare(ds[i-1], ds[i]) > 0 {
			t.Fatalf("not sorted at %d: %+v > %+v", i, ds[i-1], ds[i])
		}
	}
}

func TestHashDistinguishes(t *testing.T) {
	vals := []Datum{Null, NewBool(false), NewBool(true), NewInt(0), NewInt(1), NewFloat(0.5), NewDecimal(1, 1),
		NewString(""), NewString("a"), NewBytes([]byte("a")), NewJSON("a"), NewDate(1), NewTime(1), NewTimestamp(1),
		NewInterval(0, 0, 1), NewInterval(0, 1, 0), Datum{K: KArray, A: NewElems([]Datum{NewString("a")})}, NewString("abcdefghijklmnopq"),
		NewString("abcdefghijklmnopr"), NewDecimal(1, 40), NewDecimal(3, 1), NewFloat(math.NaN()), NewFloat(1e300)}
	seen := map[uint64]int{}
	for i, v := range vals {
		h := Hash(0, v)
		if j, ok := seen[h]; ok {
			t.Errorf("Hash(%+v) == Hash(%+v)", v, vals[j])
		}
		seen[h] = i
		if Hash(1, v) == h {
			t.Errorf("Hash ignores the seed for %+v", v)
		}
	}
}

func TestNoAllocs(t *testing.T) {
	vals := []Datum{NewInt(5), NewFloat(1.5), NewDecimal(12345, 3), NewDecimal(math.MaxInt64, 25), DecNaN(), NewString("hello world, long enough"),
		NewBytes([]byte{0, 1, 0}), NewDate(3), NewTimestampTZ(-5), NewInterval(1, 2, 3), NewJSON(`{"a":1}`), NewBool(true), Null,
		Datum{K: KArray, A: NewElems([]Datum{NewString("a\x00"), Null})}}
	buf := make([]byte, 0, 4096)
	for _, a := range vals {
		for _, b := range []Datum{NewInt(7), NewFloat(7.25), NewDecimal(725, 2), a} {
			if n := testing.AllocsPerRun(100, func() { Compare(a, b); Equal(a, b) }); n != 0 {
				t.Errorf("Compare(%+v, %+v) allocates %v", a, b, n)
			}
		}
		if n := testing.AllocsPerRun(100, func() { Hash(0, a) }); n != 0 {
			t.Errorf("Hash(%+v) allocates %v", a, n)
		}
		if n := testing.AllocsPerRun(100, func() { buf = AppendKey(buf[:0], a) }); n != 0 {
			t.Errorf("AppendKey(%+v) allocates %v", a, n)
		}
		if n := testing.AllocsPerRun(100, func() { buf = AppendKeyDesc(buf[:0], a) }); n != 0 {
			t.Errorf("AppendKeyDesc(%+v) allocates %v", a, n)
		}
		if n := testing.AllocsPerRun(100, func() { buf = AppendValue(buf[:0], a) }); n != 0 {
			t.Errorf("AppendValue(%+v) allocates %v", a, n)
		}
	}
	d1, d2 := NewDecimal(123456789, 4), NewDecimal(-987, 2)
	for name, f := range map[string]func(a, b Datum) (Datum, error){"add": DecAdd, "sub": DecSub, "mul": DecMul, "mod": DecMod} {
		if n := testing.AllocsPerRun(100, func() { f(d1, d2) }); n != 0 {
			t.Errorf("Dec %s allocates %v", name, n)
		}
	}
	// A quotient has at least 16 significant digits (12345.6789 / -9.87
	// has 20, beyond an int64); one that fits does not allocate.
	if n := testing.AllocsPerRun(100, func() { DecDiv(NewDecimal(1000, 1), NewDecimal(-4, 0)) }); n != 0 {
		t.Errorf("DecDiv allocates %v", n)
	}
	if n := testing.AllocsPerRun(100, func() { DecRound(d1, 1); DecCmp(d1, d2) }); n != 0 {
		t.Errorf("DecRound/DecCmp allocate %v", n)
	}
}

// TestDecimalFormsAgree checks that equal decimals in the int64 and big
// forms (and floats equal to big decimals) compare, hash and encode alike,
// and that keys of big values order as the values do.
func TestDecimalFormsAgree(t *testing.T) {
	rng := rand.New(rand.NewSource(33))
	for i := 0; i < 20000; i++ {
		a := randDecimal(rng)
		b := decRaiseScale(a, a.X+int32(rng.Intn(40)))
		if Compare(a, b) != 0 || Hash(7, a) != Hash(7, b) || !bytes.Equal(AppendKey(nil, a), AppendKey(nil, b)) {
			t.Fatalf("%+v and %+v disagree", a, b)
		}
		if k, _, err := DecodeKey(AppendKey(nil, b)); err != nil || Compare(k, a) != 0 {
			t.Fatalf("DecodeKey(AppendKey(%+v)) = %+v, %v", b, k, err)
		}
	}
	// Floats equal to decimals beyond the int64 range: integers >= 2^63
	// and binary fractions with long expansions.
	for i := 0; i < 20000; i++ {
		f := math.Ldexp(float64(rng.Int63n(1<<53)|1), rng.Intn(400)-200)
		if rng.Intn(2) == 0 {
			f = -f
		}
		txt := new(big.Float).SetFloat64(f).Text('f', 1100)
		txt = strings.TrimRight(strings.TrimRight(txt, "0"), ".")
		d, err := DecFromString(txt)
		if err != nil {
			t.Fatal(err)
		}
		if Compare(NewFloat(f), d) != 0 || Hash(3, NewFloat(f)) != Hash(3, d) {
			t.Fatalf("float %v and decimal %s disagree", f, txt)
		}
		// One unit more in the last place is larger than the float.
		up, _ := DecAdd(d, NewDecimal(1, d.X+1))
		if Compare(NewFloat(f), up) != -1 || Compare(up, NewFloat(f)) != 1 {
			t.Fatalf("float %v vs decimal %s", f, DecString(up))
		}
	}
	// Key order of big values across the exponent escape.
	var vals []Datum
	for _, s := range []string{"-9e131071", "-1e40000", "-1e32767", "-9.99e32765", "-1e32765", "-123456789012345678901234567890",
		"-9223372036854775809", "-9223372036854775808", "-1", "-1e-16383", "0", "1e-16383", "0.1234567890123456789012345",
		"1", "9223372036854775807", "9223372036854775808", "1e30", "1e32765", "9.99e32765", "1e32766", "1e32767", "1.5e32767", "1e40000", "9e131071"} {
		vals = append(vals, mustDec(t, s))
	}
	for i := range vals {
		for j := range vals {
			want := cmpInt64(int64(i), int64(j))
			if got := Compare(vals[i], vals[j]); got != want {
				t.Fatalf("Compare(%s, %s) = %d", DecString(vals[i])[:10], DecString(vals[j])[:10], got)
			}
			if got := bytes.Compare(AppendKey(nil, vals[i]), AppendKey(nil, vals[j])); got != want {
				t.Fatalf("key order of %.10s, %.10s = %d", DecString(vals[i]), DecString(vals[j]), got)
			}
			if got := bytes.Compare(AppendKeyDesc(nil, vals[i]), AppendKeyDesc(nil, vals[j])); got != -want {
				t.Fatalf("desc key order of %.10s, %.10s = %d", DecString(vals[i]), DecString(vals[j]), got)
			}
		}
		for _, desc := range []bool{false, true} {
			enc, dec := AppendKey, DecodeKey
			if desc {
				enc, dec = AppendKeyDesc, DecodeKeyDesc
			}
			back, rest, err := dec(enc(nil, vals[i]))
			if err != nil || len(rest) != 0 || Compare(back, vals[i]) != 0 {
				t.Fatalf("key round trip of %.20s: %v", DecString(vals[i]), err)
			}
		}
		v, rest, err := DecodeValue(AppendValue(nil, vals[i]))
		if err != nil || len(rest) != 0 || !sameDatum(v, vals[i]) {
			t.Fatalf("value round trip of %.20s: %v", DecString(vals[i]), err)
		}
	}
}
