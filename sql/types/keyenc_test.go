package types

import (
	"bytes"
	"encoding/hex"
	"math"
	"math/rand"
	"sort"
	"strconv"
	"testing"
)

// randKeyDatum returns a random datum of kind k with values chosen to hit
// edge cases.
func randKeyDatum(rng *rand.Rand, k Kind) Datum {
	date, tm, ts, iv := randDateTime(rng)
	switch k {
	case KNull:
		return Null
	case KBool:
		return NewBool(rng.Intn(2) == 0)
	case KInt:
		switch rng.Intn(4) {
		case 0:
			return NewInt([]int64{0, -1, 1, math.MinInt64, math.MaxInt64}[rng.Intn(5)])
		case 1:
			return NewInt(rng.Int63n(200) - 100)
		}
		return NewInt(int64(rng.Uint64()))
	case KFloat:
		switch rng.Intn(5) {
		case 0:
			return NewFloat([]float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 5e-324, -5e-324, math.MaxFloat64}[rng.Intn(8)])
		case 1:
			return NewFloat(float64(rng.Intn(200)-100) / 4)
		}
		return NewFloat(math.Float64frombits(rng.Uint64()))
	case KDecimal:
		switch rng.Intn(8) {
		case 0:
			return []Datum{DecNaN(), DecInf(false), DecInf(true), NewDecimal(0, 3)}[rng.Intn(4)]
		case 1:
			c := rng.Int63n(2000) - 1000
			return NewDecimal(c, int32(rng.Intn(4)))
		case 2:
			return NewDecimal(rng.Int63n(100)-50, int32(rng.Intn(40)))
		case 3:
			// Exponents around the 2-byte limit of the key encoding.
			d, err := DecFromString(strconv.Itoa(rng.Intn(20)-10) + "e" + strconv.Itoa([]int{32750 + rng.Intn(30), 33000, -rng.Intn(16000)}[rng.Intn(3)]))
			if err != nil {
				panic(err)
			}
			return d
		case 4:
			// An equal value at a larger scale, perhaps in the other form.
			d := randDecimal(rng)
			return decRaiseScale(d, d.X+int32(rng.Intn(30)))
		}
		return randDecimal(rng)
	case KString, KBytes, KJSON:
		alphabet := []byte{0, 1, 'a', 'b', 0xff, 0xfe}
		b := make([]byte, rng.Intn(5))
		for i := range b {
			b[i] = alphabet[rng.Intn(len(alphabet))]
		}
		return Datum{K: k, S: string(b)}
	case KDate:
		if rng.Intn(10) == 0 {
			return NewDate([]int64{InfinityI, NegInfinityI}[rng.Intn(2)])
		}
		return date
	case KTime:
		return tm
	case KTimestamp:
		return ts
	case KTimestampTZ:
		return NewTimestampTZ(ts.I)
	case KInterval:
		if rng.Intn(3) == 0 {
			return NewInterval(int32(rng.Intn(3)), int32(rng.Intn(90)-30), rng.Int63n(3)*usPerDay)
		}
		return iv
	case KArray:
		n := rng.Intn(4)
		a := make([]Datum, n)
		for i := range a {
			switch rng.Intn(4) {
			case 0:
				a[i] = Null
			case 1:
				a[i] = randKeyDatum(rng, KInt)
			default:
				a[i] = randKeyDatum(rng, KString)
			}
		}
		return Datum{K: KArray, A: NewElems(a)}
	}
	return Null
}

var keyKinds = []Kind{KNull, KBool, KInt, KFloat, KDecimal, KString, KBytes, KDate, KTime, KTimestamp, KTimestampTZ, KInterval, KJSON, KArray}

func TestKeyOrderMatchesCompare(t *testing.T) {
	rng := rand.New(rand.NewSource(40))
	for _, k := range keyKinds {
		vals := make([]Datum, 400)
		for i := range vals {
			vals[i] = randKeyDatum(rng, k)
		}
		vals = append(vals, Null) // NULL sorts first among any kind
		keys, descs := make([][]byte, len(vals)), make([][]byte, len(vals))
		for i, v := range vals {
			keys[i], descs[i] = AppendKey(nil, v), AppendKeyDesc(nil, v)
		}
		for i, a := range vals {
			ka, kd := keys[i], descs[i]
			for j, b := range vals[i:] {
				kb, kbd := keys[i+j], descs[i+j]
				c := Compare(a, b)
				if got := bytes.Compare(ka, kb); got != c {
					t.Fatalf("kind %d: Compare(%+v, %+v) = %d but keys %x, %x compare %d", k, a, b, c, ka, kb, got)
				}
				if got := bytes.Compare(kd, kbd); got != -c {
					t.Fatalf("kind %d: desc keys of %+v, %+v compare %d, want %d", k, a, b, got, -c)
				}
			}
		}
	}
}

func TestKeyRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(41))
	for _, k := range keyKinds {
		for i := 0; i < 2000; i++ {
			d := randKeyDatum(rng, k)
			for _, desc := range []bool{false, true} {
				buf := []byte("pre")
				var dec func([]byte) (Datum, []byte, error)
				if desc {
					buf = AppendKeyDesc(buf, d)
					dec = DecodeKeyDesc
				} else {
					buf = AppendKey(buf, d)
					dec = DecodeKey
				}
				buf = append(buf, 0xAB, 0xCD) // a following value
				got, rest, err := dec(buf[3:])
				if err != nil {
					t.Fatalf("decode %x (%+v, desc %v): %v", buf[3:], d, desc, err)
				}
				if !bytes.Equal(rest, []byte{0xAB, 0xCD}) {
					t.Fatalf("decode %+v left %x", d, rest)
				}
				if got.K != d.K || Compare(got, d) != 0 {
					t.Fatalf("decode(encode(%+v)) = %+v (desc %v)", d, got, desc)
				}
				// Everything but decimals, -0, NaN payloads and intervals
				// comes back field for field.
				switch d.K {
				case KDecimal, KFloat, KInterval, KArray:
				default:
					if !sameDatum(got, d) {
						t.Fatalf("decode(encode(%+v)) = %+v", d, got)
					}
				}
			}
		}
	}
}

func TestKeyEqualValuesEqualBytes(t *testing.T) {
	pairs := [][2]Datum{
		{NewDecimal(10, 1), NewDecimal(100, 2)},
		{NewDecimal(1, 0), NewDecimal(1000000000000000000, 18)},
		{NewDecimal(0, 0), NewDecimal(0, 7)},
		{NewDecimal(-1200, 0), NewDecimal(-12000, 1)},
		{NewFloat(0), NewFloat(math.Copysign(0, -1))},
		{NewFloat(math.NaN()), NewFloat(math.Float64frombits(0xfff8000000000123))},
		{NewInterval(1, 0, 0), NewInterval(0, 30, 0)},
		{NewInterval(0, 1, 0), NewInterval(0, 0, usPerDay)},
		{Datum{K: KArray}, Datum{K: KArray, A: NewElems([]Datum{})}},
	}
	for _, p := range pairs {
		if !bytes.Equal(AppendKey(nil, p[0]), AppendKey(nil, p[1])) {
			t.Errorf("keys of %+v and %+v differ", p[0], p[1])
		}
	}
	if bytes.Equal(AppendKey(nil, NewInt(1)), AppendKey(nil, NewDecimal(1, 0))) {
		t.Error("KInt and KDecimal keys collide")
	}
}

func TestKeyVectors(t *testing.T) {
	tests := []struct {
		d    Datum
		want string
	}{
		{Null, "05"},
		{NewBool(false), "10"},
		{NewBool(true), "11"},
		{NewInt(0), "208000000000000000"},
		{NewInt(-1), "207fffffffffffffff"},
		{NewFloat(1), "28bff0000000000000"},
		{NewFloat(-1), "28400fffffffffffff"},
		{NewDecimal(1250, 2), "338002" + "0d33" + "00"}, // 0.125e2: digit pairs 12,50 -> bytes 13,51
		{NewDecimal(-1250, 2), "31" + "7ffd" + "f2cc" + "ff"},
		{NewDecimal(0, 9), "32"},
		{NewDecimal(5, 3), "337ffe" + "33" + "00"}, // 0.005 = 0.5e-2
		{NewString("a\x00b"), "40" + "6100ff62" + "0001"},
		{NewBytes(nil), "48" + "0001"},
		{NewInterval(0, 1, 0), "60" + "8000000000000000" + "000000141dd76000"},
		{Datum{K: KArray, A: NewElems([]Datum{NewString("x"), Null})}, "70" + "40780001" + "05" + "00"},
	}
	for _, tc := range tests {
		if got := hex.EncodeToString(AppendKey(nil, tc.d)); got != tc.want {
			t.Errorf("AppendKey(%+v) = %s, want %s", tc.d, got, tc.want)
		}
	}
}

func TestKeyIntervalDecode(t *testing.T) {
	tests := []struct{ in, want Datum }{
		{NewInterval(1, 2, 3), NewInterval(0, 32, 3)},
		{NewInterval(-1, 0, -usPerDay-5), NewInterval(0, -31, -5)},
		{NewInterval(0, 0, 25*usPerHour), NewInterval(0, 1, usPerHour)},
		{NewInterval(math.MaxInt32, math.MaxInt32, math.MaxInt64), NewInterval(math.MaxInt32, math.MaxInt32, math.MaxInt64)},
		{NewInterval(math.MinInt32, math.MinInt32, math.MinInt64), NewInterval(math.MinInt32, math.MinInt32, math.MinInt64)},
		{NewInterval(math.MaxInt32, 0, 0), NewInterval(math.MaxInt32, 0, 0)},
		{NewInterval(math.MaxInt32, 5, 0), NewInterval(math.MaxInt32, 5, 0)},
		{NewInterval(71582789, 0, 0), NewInterval(71582789, 0, 0)},
		{NewInterval(71582788, 0, 0), NewInterval(0, 2147483640, 0)},
	}
	for _, tc := range tests {
		got, _, err := DecodeKey(AppendKey(nil, tc.in))
		if err != nil || !sameDatum(got, tc.want) || Compare(got, tc.in) != 0 {
			t.Errorf("DecodeKey(AppendKey(%+v)) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestKeyCompositeOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	type row struct {
		a, b Datum
		key  []byte
	}
	rows := make([]row, 1000)
	for i := range rows {
		r := row{a: randKeyDatum(rng, KString), b: randKeyDatum(rng, KInt)}
		if rng.Intn(5) == 0 {
			r.a = Null
		}
		r.key = AppendKeyDesc(AppendKey(nil, r.a), r.b)
		rows[i] = r
	}
	sort.Slice(rows, func(i, j int) bool { return bytes.Compare(rows[i].key, rows[j].key) < 0 })
	for i := 1; i < len(rows); i++ {
		p, c := rows[i-1], rows[i]
		ca := Compare(p.a, c.a)
		if ca > 0 || ca == 0 && Compare(p.b, c.b) < 0 {
			t.Fatalf("composite keys out of order: (%+v, %+v) before (%+v, %+v)", p.a, p.b, c.a, c.b)
		}
	}
	// Decode the composite key back.
	for _, r := range rows[:50] {
		a, rest, err := DecodeKey(r.key)
		if err != nil {
			t.Fatal(err)
		}
		b, rest, err := DecodeKeyDesc(rest)
		if err != nil || len(rest) != 0 || !sameDatum(a, r.a) || !sameDatum(b, r.b) {
			t.Fatalf("composite decode = %+v %+v %x %v", a, b, rest, err)
		}
	}
}

func TestDecodeKeyCorrupt(t *testing.T) {
	bad := []string{"", "ff", "20", "2000", "28ff", "33", "3380", "338002", "33800265", "3380020000", "3380ff" + "65" + "00", "33" + "8000" + "656565656565656565656565" + "00",
		"40", "4061", "406100", "406100ff", "400002", "60", "608000000000000000", "608000000000000000000000", "70", "7005", "70ff", "7020"}
	for _, s := range bad {
		b, _ := hex.DecodeString(s)
		if d, _, err := DecodeKey(b); err == nil || errCode(err) != "XX001" {
			t.Errorf("DecodeKey(%s) = %+v, %v; want XX001", s, d, err)
		}
	}
	deep := bytes.Repeat([]byte{keyArray}, 100)
	if _, _, err := DecodeKey(deep); errCode(err) != "XX001" {
		t.Errorf("deep array: %v", err)
	}
	rng := rand.New(rand.NewSource(43))
	for i := 0; i < 50000; i++ {
		b := make([]byte, rng.Intn(30))
		rng.Read(b)
		if len(b) > 0 && rng.Intn(2) == 0 {
			b[0] = []byte{keyDecPos, keyDecNeg, keyString, keyInterval, keyArray}[rng.Intn(5)]
		}
		DecodeKey(b)
		DecodeKeyDesc(b)
	}
}
