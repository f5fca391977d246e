package types

import (
	"encoding/hex"
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
	r := new(big.Rat).SetInt(decCoef(d))
	return r.Quo(r, new(big.Rat).SetInt(bigPow10(int(d.X))))
}

// checkCanonical fails unless d is a finite decimal in its canonical form:
// the int64 form exactly when the coefficient fits, the big form with a
// ±1 sign and no leading zero byte otherwise.
func checkCanonical(t testing.TB, what string, d Datum) {
	t.Helper()
	if d.K != KDecimal || d.X < 0 {
		return
	}
	if d.S == "" {
		return
	}
	c := decCoef(d)
	if (d.I != 1 && d.I != -1) || d.S[0] == 0 || c.IsInt64() {
		t.Fatalf("%s: non-canonical decimal %+v", what, d)
	}
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
		if d.K != KDecimal || d.I != tc.coef || d.X != tc.sc || d.S != "" {
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
	// Coefficients beyond the int64 range take the big form.
	bigs := []struct{ in, coef, out string }{
		{"9223372036854775808", "9223372036854775808", "9223372036854775808"},
		{"-9223372036854775809", "-9223372036854775809", "-9223372036854775809"},
		{"1.0000000000000000000000", "10000000000000000000000", "1.0000000000000000000000"},
		{"1e19", "10000000000000000000", "10000000000000000000"},
		{"-0.12345678901234567891", "-12345678901234567891", "-0.12345678901234567891"},
		{"  123456789012345678901234567890.123456789  ", "123456789012345678901234567890123456789", "123456789012345678901234567890.123456789"},
		{"1e100", "1" + strings.Repeat("0", 100), "1" + strings.Repeat("0", 100)},
		{"-1.5e-40", "-15", "-0.00000000000000000000000000000000000000015"},
		{"00012345678901234567890e-5", "12345678901234567890", "123456789012345.67890"},
	}
	for _, tc := range bigs {
		d, err := DecFromString(tc.in)
		if err != nil {
			t.Errorf("DecFromString(%q): %v", tc.in, err)
			continue
		}
		checkCanonical(t, tc.in, d)
		if DecIsBig(d) == decCoef(d).IsInt64() {
			t.Errorf("DecIsBig(%s) = %v", tc.in, DecIsBig(d))
		}
		if got := DecCoef(d).String(); got != tc.coef {
			t.Errorf("DecFromString(%q) coefficient %s, want %s", tc.in, got, tc.coef)
		}
		if got := DecString(d); got != tc.out {
			t.Errorf("DecString(%q) = %q, want %q", tc.in, got, tc.out)
		}
	}
	// The format's limits: fewer than 131072 integer digits, at most
	// 16383 fraction digits, exponents below (2^31-1)/2.
	for in, want := range map[string]int{"1e131071": 131072, "-9.99e131071": 131073, "1e-16383": 16385, "0e-16383": 16385,
		"0e1000000000": 1, "5" + strings.Repeat("0", 131071): 131072} {
		d, err := DecFromString(in)
		if err != nil || len(DecString(d)) != want {
			t.Errorf("DecFromString(%.20q) = %d chars, %v; want %d", in, len(DecString(d)), err, want)
		}
	}
	bad := map[string]string{
		"": "22P02", "abc": "22P02", "1e": "22P02", "-": "22P02", ".": "22P02", "1.2.3": "22P02", "1 2": "22P02",
		"0x10": "22P02", "+-1": "22P02", "1e+": "22P02", "--1": "22P02",
		"1e131072": "22003", "-10e131071": "22003", "1e-16384": "22003", "0e-16384": "22003", "1e1073741823": "22003",
		"0e-1073741823": "22003", "1e99999999999999999999": "22003", "1e1073741823x": "22003", "1e5x": "22P02",
		"1" + strings.Repeat("0", 131072): "22003", "0." + strings.Repeat("0", 16384): "22003",
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

// randDecimal returns a random finite decimal with varied magnitudes,
// in either coefficient form.
func randDecimal(rng *rand.Rand) Datum {
	var c int64
	switch rng.Intn(6) {
	case 4, 5:
		return randBigDecimal(rng)
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

// randBigDecimal returns a random decimal of 1 to 60 digits (mostly more
// than an int64 holds) at a scale of 0 to 40, sometimes with trailing
// zeros.
func randBigDecimal(rng *rand.Rand) Datum {
	n := 1 + rng.Intn(60)
	if rng.Intn(4) != 0 {
		n = 19 + rng.Intn(42)
	}
	ds := make([]byte, n)
	for i := range ds {
		ds[i] = byte('0' + rng.Intn(10))
	}
	if rng.Intn(5) == 0 {
		for i := n - 1 - rng.Intn(n); i < n; i++ {
			ds[i] = '0'
		}
	}
	c, _ := new(big.Int).SetString(string(ds), 10)
	if rng.Intn(2) == 0 {
		c.Neg(c)
	}
	d, err := decMake(c, int32(rng.Intn(41)))
	if err != nil {
		panic(err)
	}
	return d
}

func TestDecPostgresBinaryVectors(t *testing.T) {
	n := 0
	for _, vs := range [][]struct{ a, op, b, want, code, msg string }{pgDecBinVectors, pgDecBigBinVectors} {
		for _, v := range vs {
			checkDecBinVector(t, v.a, v.op, v.b, v.want, v.code, v.msg)
			n++
		}
	}
	t.Logf("%d vectors", n)
}

func decBinOp(op string) func(a, b Datum) (Datum, error) {
	switch op {
	case "+":
		return DecAdd
	case "-":
		return DecSub
	case "*":
		return DecMul
	case "/":
		return DecDiv
	}
	return DecMod
}

// checkDecBinVector checks a op b against PostgreSQL's answer want (or
// error code and message).
func checkDecBinVector(t *testing.T, as, op, bs, want, code, msg string) {
	t.Helper()
	a, b := mustDec(t, as), mustDec(t, bs)
	got, err := decBinOp(op)(a, b)
	desc := as + " " + op + " " + bs
	if len(desc) > 200 {
		desc = desc[:200] + "..."
	}
	if code != "" {
		if errCode(err) != code || err.Error() != msg {
			t.Errorf("%s: got %.100s %v, want error %s %s", desc, DecString(got), err, code, msg)
		}
		return
	}
	if err != nil {
		t.Errorf("%s: error %v, want %.100s", desc, err, want)
		return
	}
	checkCanonical(t, desc, got)
	if DecString(got) != want {
		t.Errorf("%s = %.200s, want %.200s", desc, DecString(got), want)
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

func TestDecPostgresUnaryVectors(t *testing.T) {
	n := 0
	for _, vs := range [][]struct{ a, fn, arg, want, code, msg string }{pgDecUnaryVectors, pgDecBigUnaryVectors} {
		for _, v := range vs {
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
			default:
				t.Fatalf("unknown function %s", v.fn)
			}
			n++
			desc := v.fn + "(" + v.a + "," + v.arg + ")"
			if v.code != "" {
				if errCode(err) != v.code || err.Error() != v.msg {
					t.Errorf("%s: got %v %v, want error %s %s", desc, got, err, v.code, v.msg)
				}
				continue
			}
			checkCanonical(t, desc, got)
			if err != nil || DecString(got) != v.want {
				t.Errorf("%s = %.200s, %v; want %.200s", desc, DecString(got), err, v.want)
			}
		}
	}
	t.Logf("%d vectors", n)
}

func TestDecArithmeticRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for i := 0; i < 15000; i++ {
		a, b := randDecimal(rng), randDecimal(rng)
		for _, op := range []string{"+", "-", "*", "/", "%"} {
			desc := DecString(a) + " " + op + " " + DecString(b)
			got, err := decBinOp(op)(a, b)
			if b.I == 0 && (op == "/" || op == "%") {
				if errCode(err) != "22012" {
					t.Fatalf("%s: %v", desc, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: unexpected error %v", desc, err)
			}
			checkCanonical(t, desc, got)
			var scale int32
			var want *big.Rat
			switch op {
			case "+", "-", "*":
				scale = max(a.X, b.X)
				if op == "*" {
					scale = a.X + b.X
				}
				want = exactOp(a, b, op)
			case "/":
				scale = decDivScale(a, b)
				want = new(big.Rat).SetFrac(roundRat(exactOp(a, b, op), scale), bigPow10(int(scale)))
			case "%":
				// a - trunc(a/b)*b
				scale = max(a.X, b.X)
				ra, rb := ratOf(a), ratOf(b)
				q := new(big.Rat).Quo(ra, rb)
				qi := new(big.Int).Quo(q.Num(), q.Denom())
				want = ra.Sub(ra, rb.Mul(rb, new(big.Rat).SetInt(qi)))
			}
			if got.X != scale || ratOf(got).Cmp(want) != 0 {
				t.Fatalf("%s = %s, want %s", desc, DecString(got), want.FloatString(int(scale)))
			}
			// Both forms compare, hash and encode alike.
			if op == "*" && b.X == 0 && b.I != 0 {
				back, err := DecDiv(got, b)
				if err != nil || DecCmp(back, a) != 0 || Hash(0, back) != Hash(0, a) || string(AppendKey(nil, back)) != string(AppendKey(nil, a)) {
					t.Fatalf("(%s) / %s = %s, %v", desc, DecString(b), DecString(back), err)
				}
			}
		}
	}
}

// TestDecDivScale checks select_div_scale's choices for quotients that
// need more digits than an int64 holds (PostgreSQL's answers).
func TestDecDivScale(t *testing.T) {
	tests := []struct{ a, b, want string }{
		{"2.50", "4", "0.62500000000000000000"},
		{"1", "3", "0.33333333333333333333"},
		{"2", "3", "0.66666666666666666667"},
		{"10", "4.0", "2.5000000000000000"},
		{"1", "9223372036854775807", "0.000000000000000000108420217248550443"},
		{"-9223372036854775808", "-1", "9223372036854775808"},
		{"12345.6789", "-9.87", "-1250.8286626139817629"},
		{"1.5", "7", "0.21428571428571428571"},
	}
	for _, tc := range tests {
		got, err := DecDiv(mustDec(t, tc.a), mustDec(t, tc.b))
		if err != nil || DecString(got) != tc.want {
			t.Errorf("%s / %s = %s, %v; want %s", tc.a, tc.b, DecString(got), err, tc.want)
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
			// The same value at a larger scale, perhaps in the other form.
			b = decRaiseScale(a, a.X+int32(rng.Intn(25)))
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
		{"1e9", 30, 20, "1000000000.00000000000000000000", ""},
		{"123456789012345678901234567890.5", 30, 0, "123456789012345678901234567891", ""},
		{"123456789012345678901234567890.5", 31, 1, "123456789012345678901234567890.5", ""},
		{"123456789012345678901234567890.5", 30, 1, "", "22003"},
		{"-99999999999999999999.995", 22, 2, "", "22003"},
		{"-99999999999999999999.994", 22, 2, "-99999999999999999999.99", ""},
		{"0.000000000000000000000000000005", 30, 30, "0.000000000000000000000000000005", ""},
		{"0.0000000000000000000000000000005", 30, 30, "0.000000000000000000000000000001", ""},
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
		{"NaN", 0, "0A000"}, {"Infinity", 0, "0A000"}, {"9223372036854775807.5", 0, "22003"},
		{"-9223372036854775808.4999999999", math.MinInt64, ""}, {"-9223372036854775808.5", 0, "22003"},
		{"1e30", 0, "22003"}, {"0.5000000000000000000001", 1, ""},
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
		{math.Copysign(0, -1), "0", ""}, {math.NaN(), "NaN", ""}, {math.Inf(-1), "-Infinity", ""}, {1e20, "100000000000000000000", ""},
		{-1.7976931348623157e308, "-179769313486232" + strings.Repeat("0", 294), ""}, {1e-300, "0." + strings.Repeat("0", 299) + "1", ""},
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
	for s, want := range map[string]float64{"1e400": math.Inf(1), "-1e400": math.Inf(-1), "123456789012345678901234567890": 1.2345678901234568e29,
		"1e-30": 1e-30, "-9223372036854775809": -9223372036854775809, "0.12345678901234567890123": 0.12345678901234568} {
		if f := DecToFloat(mustDec(t, s)); f != want {
			t.Errorf("DecToFloat(%s) = %v, want %v", s, f, want)
		}
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
		{"add", DecAdd, NewDecimal(math.MaxInt64, 0), one, "9223372036854775808", ""},
		{"sub", DecSub, NewDecimal(math.MinInt64, 0), one, "-9223372036854775809", ""},
		{"sub", DecSub, NewDecimal(math.MaxInt64, 0), NewDecimal(math.MinInt64, 0), "18446744073709551615", ""},
		{"add", DecAdd, NewDecimal(math.MaxInt64, 1), NewDecimal(1, 1), "922337203685477580.8", ""},
		{"mul", DecMul, NewDecimal(math.MaxInt64, 0), NewDecimal(2, 0), "18446744073709551614", ""},
		{"mul", DecMul, NewDecimal(math.MinInt64, 0), NewDecimal(1, 0), "-9223372036854775808", ""},
		{"mul", DecMul, NewDecimal(math.MinInt64, 0), NewDecimal(math.MinInt64, 0), "85070591730234615865843651857942052864", ""},
		{"div", DecDiv, NewDecimal(math.MinInt64, 0), NewDecimal(-1, 0), "9223372036854775808", ""},
		{"mod", DecMod, NewDecimal(math.MinInt64, 0), NewDecimal(7, 1), "-0.3", ""},
		{"div", DecDiv, NewDecimal(1, 0), NewDecimal(math.MaxInt64, 0), "0.000000000000000000108420217248550443", ""},
		{"mul", DecMul, mustDec(t, "1e70000"), mustDec(t, "1e70000"), "", "22003"},
		{"add", DecAdd, mustDec(t, "9.9e131071"), mustDec(t, "1e131071"), "", "22003"},
		{"div", DecDiv, mustDec(t, "1e131071"), mustDec(t, "0.1"), "", "22003"},
	}
	for _, tc := range tests {
		got, err := tc.f(tc.a, tc.b)
		if errCode(err) != tc.code || (tc.code == "" && DecString(got) != tc.want) {
			t.Errorf("%s(%s, %s) = %s, %v; want %s %s", tc.name, DecString(tc.a), DecString(tc.b), DecString(got), err, tc.want, tc.code)
		}
	}
	if d, err := DecNeg(NewDecimal(math.MinInt64, 3)); err != nil || DecString(d) != "9223372036854775.808" || d.S == "" {
		t.Errorf("DecNeg(MinInt64) = %+v, %v", d, err)
	}
	if d, err := DecNeg(mustDec(t, "9223372036854775.808")); err != nil || d.I != math.MinInt64 || d.X != 3 || d.S != "" {
		t.Errorf("DecNeg(2^63) = %+v, %v", d, err)
	}
	if d, err := DecAbs(mustDec(t, "-1e30")); err != nil || DecString(d) != "1000000000000000000000000000000" {
		t.Errorf("DecAbs(-1e30) = %+v, %v", d, err)
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
	if d, err := DecRound(NewDecimal(5, 0), 3000); err != nil || d.X != 3000 || DecCmp(d, NewDecimal(5, 0)) != 0 {
		t.Errorf("DecRound(5, 3000) = %+v, %v", d, err)
	}
	if d, err := DecRound(NewDecimal(0, 0), 30000); err != nil || d.X != MaxDecScale {
		t.Errorf("DecRound(0, 30000) = %+v, %v", d, err)
	}
	if d, err := DecRound(NewDecimal(5, 0), -3000); err != nil || d.I != 0 || d.X != 0 {
		t.Errorf("DecRound(5, -3000) = %+v, %v", d, err)
	}
	if _, err := DecRound(mustDec(t, "9.5e131071"), -131072); errCode(err) != "22003" {
		t.Errorf("DecRound(9.5e131071, -131072) = %v", err)
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

func repeatStrings(s string, n int) []string {
	r := make([]string, n)
	for i := range r {
		r[i] = s
	}
	return r
}

// TestDecPostgresSums folds DecAdd over many large values as sum(numeric)
// does and checks the sum and avg (sum / count) against PostgreSQL.
func TestDecPostgresSums(t *testing.T) {
	for i, v := range pgDecSumVectors {
		sum := NewDecimal(0, 0)
		for _, s := range v.vals {
			var err error
			if sum, err = DecAdd(sum, mustDec(t, s)); err != nil {
				t.Fatalf("set %d: %v", i, err)
			}
			checkCanonical(t, "sum", sum)
		}
		if got := DecString(sum); got != v.sum {
			t.Errorf("set %d: sum = %s, want %s", i, got, v.sum)
		}
		avg, err := DecDiv(sum, DecFromInt(int64(len(v.vals))))
		if err != nil || DecString(avg) != v.avg {
			t.Errorf("set %d: avg = %s, %v; want %s", i, DecString(avg), err, v.avg)
		}
		// Subtracting everything again (a retraction) gives zero.
		for _, s := range v.vals {
			if sum, err = DecSub(sum, mustDec(t, s)); err != nil {
				t.Fatal(err)
			}
		}
		if sum.I != 0 || sum.S != "" {
			t.Errorf("set %d: sum - values = %s", i, DecString(sum))
		}
	}
}

// TestDecPostgresBigBinary checks numeric_send's layout for big values
// both ways.
func TestDecPostgresBigBinary(t *testing.T) {
	for _, v := range pgDecBigBinaryVectors {
		d := mustDec(t, v.in)
		got, err := EncodeBinary(nil, d, TNumeric)
		if err != nil || hex.EncodeToString(got) != v.hex {
			t.Errorf("EncodeBinary(%s) = %x, %v; want %s", v.in, got, err, v.hex)
		}
		b, _ := hex.DecodeString(v.hex)
		back, err := DecodeBinary(b, TNumeric)
		if err != nil || !sameDatum(back, d) || DecString(back) != v.text {
			t.Errorf("DecodeBinary(%s) = %s, %v; want %s", v.hex, DecString(back), err, v.text)
		}
		checkCanonical(t, v.in, back)
	}
	t.Logf("%d vectors", len(pgDecBigBinaryVectors))
}

// TestDecPostgresBigCasts checks casts from and to big numerics.
func TestDecPostgresBigCasts(t *testing.T) {
	for _, v := range pgDecBigCastVectors {
		d, err := ParseText(v.in, v.from)
		if err != nil {
			t.Errorf("ParseText(%q, %s): %v", v.in, v.from, err)
			continue
		}
		r, err := Cast(d, v.from, v.to)
		if v.code != "" {
			if errCode(err) != v.code || err.Error() != v.msg {
				t.Errorf("Cast(%q::%s, %s) = %.100s, %.200v; want %s %.200s", v.in, v.from, v.to, FormatText(r, v.to), err, v.code, v.msg)
			}
			continue
		}
		if err != nil || FormatText(r, v.to) != v.want {
			t.Errorf("Cast(%q::%s, %s) = %.200s, %v; want %.200s", v.in, v.from, v.to, FormatText(r, v.to), err, v.want)
		}
		checkCanonical(t, v.in, r)
	}
	t.Logf("%d vectors", len(pgDecBigCastVectors))
}
