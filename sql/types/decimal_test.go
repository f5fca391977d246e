package types

import (
	"math"
	"math/big"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"sluice/sql/pgerror"
)

func mustDec(t testing.TB, s string) Datum {
	t.Helper()
	d, err := DecFromString(s)
	if err != nil {
		t.Fatalf("DecFromString(%q): %v", s, err)
	}
	return d
}

// ratOf returns the exact value of a finite decimal.
func ratOf(d Datum) *big.Rat {
	r := new(big.Rat).SetInt64(d.I)
	return r.Quo(r, new(big.Rat).SetInt(bigPow10(int(d.X))))
}

// roundRat rounds r half away from zero to scale fraction digits and
// returns the coefficient.
func roundRat(r *big.Rat, scale int32) *big.Int {
	x := new(big.Rat).Mul(r, new(big.Rat).SetInt(bigPow10(int(scale))))
	num, den := new(big.Int).Abs(x.Num()), x.Denom()
	q, m := new(big.Int).QuoRem(num, den, new(big.Int))
	if m.Lsh(m, 1).Cmp(den) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if x.Sign() < 0 {
		q.Neg(q)
	}
	return q
}

func fitsInt64(b *big.Int) bool { return b.IsInt64() }

// textFits reports whether the numeric text s, with all its digits kept,
// has a coefficient that fits an int64.
func textFits(s string) bool {
	digits := strings.TrimLeft(strings.NewReplacer("-", "", ".", "").Replace(s), "0")
	c, ok := new(big.Int).SetString("0"+digits, 10)
	return ok && c.IsInt64()
}

func TestDecFromStringAndString(t *testing.T) {
	tests := []struct {
		in   string
		coef int64
		sc   int32
		out  string
	}{
		{"12.50", 1250, 2, "12.50"},
		{"-3", -3, 0, "-3"},
		{".5", 5, 1, "0.5"},
		{"5.", 5, 0, "5"},
		{"1e3", 1000, 0, "1000"},
		{"1E+3", 1000, 0, "1000"},
		{"1.5e-3", 15, 4, "0.0015"},
		{"  -0.05\t", -5, 2, "-0.05"},
		{"+7", 7, 0, "7"},
		{"0.00", 0, 2, "0.00"},
		{"-0", 0, 0, "0"},
		{"0e-5", 0, 5, "0.00000"},
		{"000123.4500", 1234500, 4, "123.4500"},
		{"9223372036854775807", math.MaxInt64, 0, "9223372036854775807"},
		{"-9223372036854775808", math.MinInt64, 0, "-9223372036854775808"},
		{"0.9223372036854775807", math.MaxInt64, 19, "0.9223372036854775807"},
		{"1.0000000000000000000000", 1000000000000000000, 18, "1.000000000000000000"},
		{"1e-30", 1, 30, "0.000000000000000000000000000001"},
		{"12.3e1", 123, 0, "123"},
		{"12.34e1", 1234, 1, "123.4"},
	}
	for _, tc := range tests {
		d, err := DecFromString(tc.in)
		if err != nil {
			t.Errorf("DecFromString(%q): %v", tc.in, err)
			continue
		}
		if d.K != KDecimal || d.I != tc.coef || d.X != tc.sc {
			t.Errorf("DecFromString(%q) = %d e-%d, want %d e-%d", tc.in, d.I, d.X, tc.coef, tc.sc)
		}
		if got := DecString(d); got != tc.out {
			t.Errorf("DecString(%q) = %q, want %q", tc.in, got, tc.out)
		}
	}
	for _, s := range []string{"NaN", "nan", "Infinity", "inf", "+inf", "-Infinity", "-INF"} {
		d, err := DecFromString(s)
		if err != nil || d.X >= 0 {
			t.Errorf("DecFromString(%q) = %+v, %v", s, d, err)
		}
	}
	bad := map[string]string{
		"": "22P02", "abc": "22P02", "1e": "22P02", "-": "22P02", ".": "22P02", "1.2.3": "22P02", "1 2": "22P02",
		"0x10": "22P02", "+-1": "22P02", "1e+": "22P02", "--1": "22P02",
		"9223372036854775808": "22003", "12345678901234567890": "22003", "1e19": "22003", "1e1001": "22003",
		"0.12345678901234567891": "22003",
	}
	for s, code := range bad {
		if _, err := DecFromString(s); errCode(err) != code {
			t.Errorf("DecFromString(%q) error = %v, want %s", s, err, code)
		}
	}
}

func TestDecStringRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(10))
	for i := 0; i < 20000; i++ {
		d := randDecimal(rng)
		s := DecString(d)
		back, err := DecFromString(s)
		if err != nil || !sameDatum(back, d) {
			t.Fatalf("%+v -> %q -> %+v, %v", d, s, back, err)
		}
		if f, _ := strconv.ParseFloat(s, 64); DecToFloat(d) != f {
			t.Fatalf("DecToFloat(%s) = %v, want %v", s, DecToFloat(d), f)
		}
	}
}

// randDecimal returns a random finite decimal with varied magnitudes.
func randDecimal(rng *rand.Rand) Datum {
	var c int64
	switch rng.Intn(4) {
	case 0:
		c = int64(rng.Uint64())
	case 1:
		c = rng.Int63n(1000) - 500
	case 2:
		c = rng.Int63n(2e9) - 1e9
	default:
		c = rng.Int63n(2e15) - 1e15
	}
	return NewDecimal(c, int32(rng.Intn(22)))
}

func TestDecPostgresBinaryVectors(t *testing.T) {
	for _, v := range pgDecBinVectors {
		a, b := mustDec(t, v.a), mustDec(t, v.b)
		var got Datum
		var err error
		switch v.op {
		case "+":
			got, err = DecAdd(a, b)
		case "-":
			got, err = DecSub(a, b)
		case "*":
			got, err = DecMul(a, b)
		case "/":
			got, err = DecDiv(a, b)
		case "%":
			got, err = DecMod(a, b)
		}
		desc := v.a + " " + v.op + " " + v.b
		if v.code != "" {
			if errCode(err) != v.code || err.Error() != v.msg {
				t.Errorf("%s: got %v %v, want error %s %s", desc, got, err, v.code, v.msg)
			}
			continue
		}
		if err != nil {
			if errCode(err) != "22003" || fitsInt64(roundRat(exactOp(a, b, v.op), 0)) {
				t.Errorf("%s: error %v, want %s", desc, err, v.want)
			}
			continue
		}
		if DecString(got) == v.want {
			continue
		}
		// PostgreSQL's result has more digits than an int64 holds: Sluice
		// must round the exact result at the largest scale that fits.
		if textFits(v.want) {
			t.Errorf("%s = %s, want %s", desc, DecString(got), v.want)
			continue
		}
		checkReducedScale(t, desc, got, exactOp(a, b, v.op))
	}
}

func exactOp(a, b Datum, op string) *big.Rat {
	ra, rb := ratOf(a), ratOf(b)
	switch op {
	case "+":
		return ra.Add(ra, rb)
	case "-":
		return ra.Sub(ra, rb)
	case "*":
		return ra.Mul(ra, rb)
	}
	return ra.Quo(ra, rb)
}

// checkReducedScale checks that got is exact rounded at got's scale and
// that one more digit would not fit.
func checkReducedScale(t *testing.T, desc string, got Datum, exact *big.Rat) {
	t.Helper()
	if want := roundRat(exact, got.X); want.Cmp(big.NewInt(got.I)) != 0 {
		t.Errorf("%s = %s, want coefficient %s at scale %d", desc, DecString(got), want, got.X)
	}
	if fitsInt64(roundRat(exact, got.X+1)) {
		t.Errorf("%s = %s: scale %d would also fit", desc, DecString(got), got.X+1)
	}
}

func TestDecPostgresUnaryVectors(t *testing.T) {
	for _, v := range pgDecUnaryVectors {
		a := mustDec(t, v.a)
		var got Datum
		var err error
		arg := int32(0)
		if v.arg != "" {
			n, _ := strconv.Atoi(v.arg)
			arg = int32(n)
		}
		switch v.fn {
		case "round":
			got, err = DecRound(a, arg)
		case "trunc":
			got, err = DecTrunc(a, arg)
		case "floor":
			got, err = DecFloor(a)
		case "ceil":
			got, err = DecCeil(a)
		case "abs":
			got, err = DecAbs(a)
		case "-":
			got, err = DecNeg(a)
		}
		desc := v.fn + "(" + v.a + "," + v.arg + ")"
		if v.code != "" {
			if errCode(err) != v.code {
				t.Errorf("%s: got %v %v, want error %s", desc, got, err, v.code)
			}
			continue
		}
		if err == nil && DecString(got) == v.want {
			continue
		}
		if textFits(v.want) {
			if err != nil || DecString(got) != v.want {
				t.Errorf("%s = %s, %v; want %s", desc, DecString(got), err, v.want)
			}
			continue
		}
		// Not representable: an overflow error, or the same value at a
		// smaller scale.
		wr, ok := new(big.Rat).SetString(v.want)
		if !ok {
			t.Fatalf("bad vector %q", v.want)
		}
		if err != nil {
			if errCode(err) != "22003" || wr.IsInt() && fitsInt64(wr.Num()) {
				t.Errorf("%s: error %v, want %s", desc, err, v.want)
			}
			continue
		}
		if ratOf(got).Cmp(wr) != 0 {
			t.Errorf("%s = %s, want %s", desc, DecString(got), v.want)
		}
	}
}

func TestDecArithmeticRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for i := 0; i < 15000; i++ {
		a, b := randDecimal(rng), randDecimal(rng)
		for _, op := range []string{"+", "-", "*", "/", "%"} {
			var got Datum
			var err error
			var scale int32
			switch op {
			case "+":
				got, err = DecAdd(a, b)
				scale = max(a.X, b.X)
			case "-":
				got, err = DecSub(a, b)
				scale = max(a.X, b.X)
			case "*":
				got, err = DecMul(a, b)
				scale = a.X + b.X
			case "/":
				if b.I == 0 {
					if _, err = DecDiv(a, b); errCode(err) != "22012" {
						t.Fatalf("%v / 0: %v", a, err)
					}
					continue
				}
				got, err = DecDiv(a, b)
				scale = decDivScale(a, b)
			case "%":
				if b.I == 0 {
					if _, err = DecMod(a, b); errCode(err) != "22012" {
						t.Fatalf("%v %% 0: %v", a, err)
					}
					continue
				}
				got, err = DecMod(a, b)
				if err != nil {
					t.Fatalf("%s %% %s: %v", DecString(a), DecString(b), err)
				}
				// a - trunc(a/b)*b
				ra, rb := ratOf(a), ratOf(b)
				q := new(big.Rat).Quo(ra, rb)
				qi := new(big.Int).Quo(q.Num(), q.Denom())
				want := ra.Sub(ra, rb.Mul(rb, new(big.Rat).SetInt(qi)))
				if ratOf(got).Cmp(want) != 0 || got.X != max(a.X, b.X) {
					t.Fatalf("%s %% %s = %s, want %s", DecString(a), DecString(b), DecString(got), want.FloatString(int(max(a.X, b.X))))
				}
				continue
			}
			desc := DecString(a) + " " + op + " " + DecString(b)
			exact := exactOp(a, b, op)
			if err != nil {
				if errCode(err) != "22003" || fitsInt64(roundRat(exact, 0)) {
					t.Fatalf("%s: unexpected error %v", desc, err)
				}
				continue
			}
			if got.X == scale {
				if roundRat(exact, scale).Cmp(big.NewInt(got.I)) != 0 {
					t.Fatalf("%s = %s, want %s", desc, DecString(got), exact.FloatString(int(scale)))
				}
				continue
			}
			if got.X > scale {
				t.Fatalf("%s = %s: scale above %d", desc, DecString(got), scale)
			}
			checkReducedScale(t, desc, got, exact)
		}
	}
}

func TestDecCmp(t *testing.T) {
	order := []string{"-Infinity", "-9223372036854775808", "-1e10", "-1.5", "-1.499999999999999999", "-0.0000000000000000000000001",
		"0", "1e-30", "0.1", "0.999999999999999999", "1", "1.000000000000000001", "2.5", "1e18", "9223372036854775807", "Infinity", "NaN"}
	for i, as := range order {
		for j, bs := range order {
			a, b := mustDec(t, as), mustDec(t, bs)
			want := cmpInt64(int64(i), int64(j))
			if got := DecCmp(a, b); got != want {
				t.Errorf("DecCmp(%s, %s) = %d, want %d", as, bs, got, want)
			}
		}
	}
	eq := [][2]string{{"1", "1.000"}, {"0", "0.00"}, {"-2.50", "-2.5"}, {"NaN", "nan"}, {"100", "1e2"}, {"0.10", "0.1000000000"}}
	for _, p := range eq {
		if DecCmp(mustDec(t, p[0]), mustDec(t, p[1])) != 0 {
			t.Errorf("DecCmp(%s, %s) != 0", p[0], p[1])
		}
	}
	rng := rand.New(rand.NewSource(12))
	for i := 0; i < 20000; i++ {
		a, b := randDecimal(rng), randDecimal(rng)
		if rng.Intn(4) == 0 {
			b = NewDecimal(a.I*10, a.X+1)
			if b.I/10 != a.I || b.X > 25 {
				continue
			}
		}
		if got, want := DecCmp(a, b), ratOf(a).Cmp(ratOf(b)); got != want {
			t.Fatalf("DecCmp(%s, %s) = %d, want %d", DecString(a), DecString(b), got, want)
		}
	}
}

func TestDecCoerce(t *testing.T) {
	tests := []struct {
		in         string
		prec, sc   int16
		want, code string
	}{
		{"123.456", 5, 2, "123.46", ""},
		{"1234.5", 5, 2, "", "22003"},
		{"999.995", 5, 2, "", "22003"},
		{"999.994", 5, 2, "999.99", ""},
		{"-999.994", 5, 2, "-999.99", ""},
		{"0.5", 3, 3, "0.500", ""},
		{"1", 3, 3, "", "22003"},
		{"0.9995", 3, 3, "", "22003"},
		{"12.5", 2, 0, "13", ""},
		{"99.5", 2, 0, "", "22003"},
		{"NaN", 5, 2, "NaN", ""},
		{"Infinity", 5, 2, "", "22003"},
		{"12345.6789", 0, 0, "12345.6789", ""},
		{"1.5", 10, -1, "2", ""},
		{"1e9", 30, 20, "1000000000.000000000", ""},
		{"1e10", 30, 20, "", "22003"},
		{"0", 30, 25, "0.0000000000000000000000000", ""},
		{"0.0009", 2, 5, "0.00090", ""},
		{"0.001", 2, 5, "", "22003"},
		{"0.01", 2, 5, "", "22003"},
	}
	for _, tc := range tests {
		got, err := DecCoerce(mustDec(t, tc.in), tc.prec, tc.sc)
		if tc.code != "" {
			if errCode(err) != tc.code || err.Error() != "numeric field overflow" {
				t.Errorf("DecCoerce(%s, %d, %d) = %v, %v; want %s", tc.in, tc.prec, tc.sc, got, err, tc.code)
			}
			continue
		}
		if err != nil || DecString(got) != tc.want {
			t.Errorf("DecCoerce(%s, %d, %d) = %s, %v; want %s", tc.in, tc.prec, tc.sc, DecString(got), err, tc.want)
		}
	}
	_, err := DecCoerce(mustDec(t, "1234.5"), 5, 2)
	if !strings.Contains(detailOf(err), "must round to an absolute value less than 10^3") {
		t.Errorf("detail = %q", detailOf(err))
	}
	_, err = DecCoerce(mustDec(t, "1"), 3, 3)
	if detailOf(err) != "A field with precision 3, scale 3 must round to an absolute value less than 1." {
		t.Errorf("detail = %q", detailOf(err))
	}
	_, err = DecCoerce(DecInf(true), 5, 2)
	if detailOf(err) != "A field with precision 5, scale 2 cannot hold an infinite value." {
		t.Errorf("detail = %q", detailOf(err))
	}
}

func TestDecConversions(t *testing.T) {
	ints := []struct {
		in   string
		want int64
		code string
	}{
		{"2.5", 3, ""}, {"-2.5", -3, ""}, {"2.4999", 2, ""}, {"0.5", 1, ""}, {"-0.4", 0, ""},
		{"9223372036854775807", math.MaxInt64, ""}, {"-9223372036854775808", math.MinInt64, ""},
		{"9223372036854775.75", 9223372036854776, ""}, {"0.9223372036854775807", 1, ""},
		{"NaN", 0, "0A000"}, {"Infinity", 0, "0A000"},
	}
	for _, tc := range ints {
		got, err := DecToInt(mustDec(t, tc.in))
		if errCode(err) != tc.code || (tc.code == "" && got != tc.want) {
			t.Errorf("DecToInt(%s) = %d, %v; want %d %s", tc.in, got, err, tc.want, tc.code)
		}
	}
	if d := DecFromInt(math.MinInt64); d.I != math.MinInt64 || d.X != 0 || d.K != KDecimal {
		t.Errorf("DecFromInt = %+v", d)
	}
	floats := []struct {
		f    float64
		want string
		code string
	}{
		{0.1, "0.1", ""}, {1.0 / 3, "0.333333333333333", ""}, {-2.5, "-2.5", ""}, {1e15, "1000000000000000", ""},
		{123456789.123456789, "123456789.123457", ""}, {1e-20, "0.00000000000000000001", ""}, {0, "0", ""},
		{math.Copysign(0, -1), "0", ""}, {math.NaN(), "NaN", ""}, {math.Inf(-1), "-Infinity", ""}, {1e20, "", "22003"},
	}
	for _, tc := range floats {
		got, err := DecFromFloat(tc.f)
		if errCode(err) != tc.code || (tc.code == "" && DecString(got) != tc.want) {
			t.Errorf("DecFromFloat(%v) = %s, %v; want %s %s", tc.f, DecString(got), err, tc.want, tc.code)
		}
	}
	if f := DecToFloat(DecNaN()); !math.IsNaN(f) {
		t.Errorf("DecToFloat(NaN) = %v", f)
	}
	if f := DecToFloat(DecInf(true)); !math.IsInf(f, -1) {
		t.Errorf("DecToFloat(-Inf) = %v", f)
	}
	if f := DecToFloat(NewDecimal(1, 400)); f != 0 {
		t.Errorf("DecToFloat(1e-400) = %v", f)
	}
	if !DecIsNaN(DecNaN()) || DecIsInf(DecInf(false)) != 1 || DecIsInf(DecInf(true)) != -1 || DecIsFinite(DecNaN()) || !DecIsFinite(NewDecimal(1, 1)) {
		t.Error("special predicates")
	}
}

func TestDecSpecialArithmetic(t *testing.T) {
	nan, pinf, ninf := DecNaN(), DecInf(false), DecInf(true)
	one, zero := NewDecimal(1, 0), NewDecimal(0, 0)
	tests := []struct {
		name string
		f    func(a, b Datum) (Datum, error)
		a, b Datum
		want string
		code string
	}{
		{"add", DecAdd, pinf, ninf, "NaN", ""},
		{"add", DecAdd, pinf, one, "Infinity", ""},
		{"add", DecAdd, one, ninf, "-Infinity", ""},
		{"sub", DecSub, pinf, pinf, "NaN", ""},
		{"sub", DecSub, one, pinf, "-Infinity", ""},
		{"sub", DecSub, nan, one, "NaN", ""},
		{"mul", DecMul, pinf, zero, "NaN", ""},
		{"mul", DecMul, ninf, NewDecimal(-2, 0), "Infinity", ""},
		{"div", DecDiv, one, pinf, "0", ""},
		{"div", DecDiv, pinf, zero, "", "22012"},
		{"div", DecDiv, nan, zero, "NaN", ""},
		{"div", DecDiv, ninf, NewDecimal(-3, 0), "Infinity", ""},
		{"div", DecDiv, pinf, ninf, "NaN", ""},
		{"mod", DecMod, one, ninf, "1", ""},
		{"mod", DecMod, pinf, one, "NaN", ""},
		{"mod", DecMod, pinf, zero, "", "22012"},
		{"mod", DecMod, NewDecimal(math.MinInt64, 0), NewDecimal(-1, 0), "0", ""},
		{"add", DecAdd, NewDecimal(math.MaxInt64, 0), one, "", "22003"},
		{"sub", DecSub, NewDecimal(math.MinInt64, 0), one, "", "22003"},
		{"add", DecAdd, NewDecimal(math.MaxInt64, 1), NewDecimal(1, 1), "922337203685477581", ""},
		{"mul", DecMul, NewDecimal(math.MaxInt64, 0), NewDecimal(2, 0), "", "22003"},
		{"mul", DecMul, NewDecimal(math.MinInt64, 0), NewDecimal(1, 0), "-9223372036854775808", ""},
		{"div", DecDiv, NewDecimal(math.MinInt64, 0), NewDecimal(-1, 0), "", "22003"},
		{"div", DecDiv, NewDecimal(1, 0), NewDecimal(math.MaxInt64, 0), "0.000000000000000000108420217248550443", ""},
	}
	for _, tc := range tests {
		got, err := tc.f(tc.a, tc.b)
		if errCode(err) != tc.code || (tc.code == "" && DecString(got) != tc.want) {
			t.Errorf("%s(%s, %s) = %s, %v; want %s %s", tc.name, DecString(tc.a), DecString(tc.b), DecString(got), err, tc.want, tc.code)
		}
	}
	if _, err := DecNeg(NewDecimal(math.MinInt64, 3)); errCode(err) != "22003" {
		t.Errorf("DecNeg(MinInt64) = %v", err)
	}
	if d, _ := DecNeg(pinf); DecIsInf(d) != -1 {
		t.Error("DecNeg(Inf)")
	}
	if d, _ := DecAbs(ninf); DecIsInf(d) != 1 {
		t.Error("DecAbs(-Inf)")
	}
	if d, _ := DecRound(nan, 2); !DecIsNaN(d) {
		t.Error("DecRound(NaN)")
	}
	if d, err := DecRound(NewDecimal(5, 0), 3000); err != nil || d.X != 18 || d.I != 5e18 {
		t.Errorf("DecRound(5, 3000) = %+v, %v", d, err)
	}
	if d, err := DecRound(NewDecimal(0, 0), 3000); err != nil || d.X != decMaxResultScale {
		t.Errorf("DecRound(0, 3000) = %+v, %v", d, err)
	}
	if d, err := DecRound(NewDecimal(5, 0), -3000); err != nil || d.I != 0 || d.X != 0 {
		t.Errorf("DecRound(5, -3000) = %+v, %v", d, err)
	}
	if d, err := DecFloor(NewDecimal(-1, 25)); err != nil || d.I != -1 {
		t.Errorf("DecFloor(-1e-25) = %+v, %v", d, err)
	}
	if d, err := DecCeil(NewDecimal(1, 25)); err != nil || d.I != 1 {
		t.Errorf("DecCeil(1e-25) = %+v, %v", d, err)
	}
}

func detailOf(err error) string {
	if e, ok := err.(*pgerror.Error); ok {
		return e.Detail
	}
	return ""
}
