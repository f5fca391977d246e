package eval

import (
	"math"
	"math/big"
	"strings"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file adapts sql/types' decimal arithmetic and adds what numeric
// functions need beyond it: conversions to and from math/big for the
// transcendental functions, and Postgres' result-scale rules. Decimals
// are arbitrary precision; the functions here read their coefficients
// through types.DecCoef and build results with types.DecFromBig.

func decNeg(d types.Datum) (types.Datum, error)   { return types.DecNeg(d) }
func decAbs(d types.Datum) (types.Datum, error)   { return types.DecAbs(d) }
func decFloor(d types.Datum) (types.Datum, error) { return types.DecFloor(d) }
func decCeil(d types.Datum) (types.Datum, error)  { return types.DecCeil(d) }

func decRound(d types.Datum, scale int32) (types.Datum, error) { return types.DecRound(d, scale) }
func decTrunc(d types.Datum, scale int32) (types.Datum, error) { return types.DecTrunc(d, scale) }

// decSign returns -1, 0 or 1 for a finite decimal (the sign of Datum.I in
// either coefficient form).
func decSign(d types.Datum) int {
	switch {
	case d.I < 0:
		return -1
	case d.I > 0:
		return 1
	}
	return 0
}

// numericPrec is the least working precision of the transcendental
// functions, in bits; precFor raises it for results with more digits.
const numericPrec = 320

func newFloat() *big.Float { return new(big.Float).SetPrec(numericPrec) }

// newFloatP returns a zero big.Float of precision prec.
func newFloatP(prec uint) *big.Float { return new(big.Float).SetPrec(prec) }

// precFor returns a working precision, in bits, for results accurate to
// digits significant decimal digits, with guard bits.
func precFor(digits int) uint {
	return max(numericPrec, uint(float64(max(digits, 0))*3.33)+96)
}

// pow10Int returns 10^n as a big.Int.
func pow10Int(n int64) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(n), nil)
}

// decToBig returns d as a big.Float holding its coefficient exactly (and
// at least numericPrec bits).
func decToBig(d types.Datum) *big.Float {
	c := types.DecCoef(d)
	return decToBigP(d, max(numericPrec, uint(c.BitLen())+64))
}

// decToBigP returns d as a big.Float of precision prec.
func decToBigP(d types.Datum, prec uint) *big.Float {
	f := newFloatP(prec).SetInt(types.DecCoef(d))
	if d.X > 0 {
		f.Quo(f, newFloatP(prec).SetInt(pow10Int(int64(d.X))))
	}
	return f
}

// decFromBig rounds v half away from zero to rscale decimal places; a
// value too large for the numeric format is 22003.
func decFromBig(v *big.Float, rscale int) (types.Datum, error) {
	if v.IsInf() {
		return types.Null, pgerror.New(pgcode.NumericValueOutOfRange, "value overflows numeric format")
	}
	rscale = max(rscale, 0)
	p := pow10Int(int64(rscale))
	scaled := newFloatP(v.Prec() + uint(p.BitLen()) + 1).SetInt(p)
	scaled.Mul(scaled, v) // exact
	return types.DecFromBig(roundHalfAway(scaled), rscale)
}

// decFromRat rounds r half away from zero to rscale decimal places.
func decFromRat(r *big.Rat, rscale int) (types.Datum, error) {
	rscale = max(rscale, 0)
	num := new(big.Int).Mul(r.Num(), pow10Int(int64(rscale)))
	num.Abs(num)
	q, m := new(big.Int).QuoRem(num, r.Denom(), new(big.Int))
	if m.Lsh(m, 1).Cmp(r.Denom()) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if r.Sign() < 0 {
		q.Neg(q)
	}
	return types.DecFromBig(q, rscale)
}

// roundHalfAway rounds v to an integer, halves away from zero.
func roundHalfAway(v *big.Float) *big.Int {
	i, acc := v.Int(nil) // truncated toward zero
	if acc == big.Exact {
		return i
	}
	frac := newFloatP(v.Prec()).Sub(v, new(big.Float).SetInt(i)) // exact
	frac.Abs(frac)
	if frac.Cmp(big.NewFloat(0.5)) >= 0 {
		if v.Sign() < 0 {
			i.Sub(i, big.NewInt(1))
		} else {
			i.Add(i, big.NewInt(1))
		}
	}
	return i
}

// decDigits returns the number of decimal digits of d's coefficient (0
// for zero).
func decDigits(d types.Datum) int {
	if d.I == 0 {
		return 0
	}
	return len(types.DecCoef(d).Text(10)) - max(0, -decSign(d))
}

// decExp10 returns floor(log10(|d|)) for non-zero d.
func decExp10(d types.Datum) int {
	return decDigits(d) - 1 - int(d.X)
}

// decLog10 returns an approximation of log10(|d|) for non-zero finite d,
// good for any magnitude.
func decLog10(d types.Datum) float64 {
	s := types.DecCoef(d).Text(10)
	s = strings.TrimPrefix(s, "-")
	lead := s
	if len(lead) > 17 {
		lead = lead[:17]
	}
	var f float64
	for _, c := range lead {
		f = f*10 + float64(c-'0')
	}
	return math.Log10(f) + float64(len(s)-len(lead)) - float64(d.X)
}

// nbaseDigits returns Postgres' base-10000 view of a non-zero decimal: the
// weight of its first digit group and its first groups (up to max), with
// trailing zero groups dropped.
func nbaseDigits(d types.Datum, max int) (weight int, groups []int) {
	s := strings.TrimPrefix(types.DecCoef(d).Text(10), "-")
	// Pad to whole groups: the decimal point sits scale digits from the
	// right, so the integer part needs a multiple of four digits.
	intLen := len(s) - int(d.X)
	pad := ((-intLen)%4 + 4) % 4
	w := (intLen+pad)/4 - 1
	s = strings.Repeat("0", pad) + s
	var gs []int
	for i := 0; i < len(s) && len(gs) < max+1; i += 4 {
		g := 0
		for k := i; k < i+4; k++ {
			g *= 10
			if k < len(s) {
				g += int(s[k] - '0')
			}
		}
		if len(gs) == 0 && g == 0 {
			w--
			continue
		}
		gs = append(gs, g)
	}
	if len(gs) > max {
		gs = gs[:max]
	}
	for len(gs) > 0 && gs[len(gs)-1] == 0 {
		gs = gs[:len(gs)-1]
	}
	return w, gs
}

// estimateLnDweight is Postgres' estimate_ln_dweight: the decimal weight
// of ln(d), used to choose result scales.
func estimateLnDweight(d types.Datum) int {
	if d.I <= 0 {
		return 0
	}
	lo := types.NewDecimal(9, 1)
	hi := types.NewDecimal(11, 1)
	if types.DecCmp(d, lo) >= 0 && types.DecCmp(d, hi) <= 0 {
		x, err := types.DecSub(d, types.DecFromInt(1))
		if err != nil || x.I == 0 {
			return 0
		}
		return decExp10(x)
	}
	w, gs := nbaseDigits(d, 2)
	if len(gs) == 0 {
		return 0
	}
	digits := float64(gs[0])
	dweight := w * 4
	if len(gs) > 1 {
		digits = digits*10000 + float64(gs[1])
		dweight -= 4
	}
	lnv := math.Log(digits) + float64(dweight)*2.302585092994046
	return int(math.Log10(math.Abs(lnv)))
}

func clampScale(r int) int {
	if r < 0 {
		return 0
	}
	if r > 1000 {
		return 1000
	}
	return r
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// bigExp computes e^x to about x.Prec() bits.
func bigExp(x *big.Float) *big.Float {
	// Reduce: e^x = (e^(x/2^k))^(2^k) with |x/2^k| < 1/2; each squaring
	// doubles the relative error, so work with k more bits.
	mant := newFloat()
	e := x.MantExp(mant)
	k := max(e+1, 0)
	prec := x.Prec() + uint(k) + 32
	nf := func() *big.Float { return newFloatP(prec) }
	r := nf().SetMantExp(nf().Set(x), -k)
	sum := nf().SetInt64(1)
	term := nf().SetInt64(1)
	eps := nf().SetMantExp(nf().SetInt64(1), -int(prec))
	for n := int64(1); n < 100000; n++ {
		term.Mul(term, r)
		term.Quo(term, nf().SetInt64(n))
		sum.Add(sum, term)
		if nf().Abs(term).Cmp(eps) < 0 {
			break
		}
	}
	for ; k > 0; k-- {
		sum.Mul(sum, sum)
	}
	return newFloatP(x.Prec()).Set(sum)
}

// bigLn computes ln(x) for x > 0, to about x.Prec() bits.
func bigLn(x *big.Float) *big.Float {
	// x = m * 2^e with m in [0.5, 1): ln x = ln m + e ln 2.
	prec := x.Prec() + 32
	m := newFloatP(prec)
	e := x.MantExp(m)
	res := atanhSeries(m)
	if e != 0 {
		ln2 := atanhSeries(newFloatP(prec).SetInt64(2))
		res.Add(res, ln2.Mul(ln2, newFloatP(prec).SetInt64(int64(e))))
	}
	return newFloatP(x.Prec()).Set(res)
}

// atanhSeries returns ln(m) = 2 atanh((m-1)/(m+1)) at m's precision.
func atanhSeries(m *big.Float) *big.Float {
	prec := m.Prec()
	nf := func() *big.Float { return newFloatP(prec) }
	one := nf().SetInt64(1)
	z := nf().Quo(nf().Sub(m, one), nf().Add(m, one))
	z2 := nf().Mul(z, z)
	sum := nf().Set(z)
	pow := nf().Set(z)
	eps := nf().SetMantExp(one, -int(prec))
	for n := int64(3); n < 1000000; n += 2 {
		pow.Mul(pow, z2)
		t := nf().Quo(pow, nf().SetInt64(n))
		sum.Add(sum, t)
		if t.Sign() == 0 || nf().Abs(t).Cmp(eps) < 0 {
			break
		}
	}
	return sum.Mul(sum, nf().SetInt64(2))
}

// decSpecial reports whether d is NaN or an infinity.
func decSpecial(d types.Datum) bool { return !types.DecIsFinite(d) }

// floatToDecSpecial converts the result of a float computation on special
// values back: ±Inf and NaN map to the numeric specials, others to an
// integral decimal.
func floatToDecSpecial(f float64) (types.Datum, error) {
	switch {
	case math.IsNaN(f):
		return types.DecNaN(), nil
	case math.IsInf(f, 0):
		return types.DecInf(f < 0), nil
	}
	return types.DecFromFloat(f)
}

// numericSqrt is sqrt(numeric) with Postgres' result scale, exactly
// rounded.
func numericSqrt(d types.Datum) (types.Datum, error) {
	if types.DecIsNaN(d) || types.DecIsInf(d) > 0 {
		return d, nil
	}
	if d.I < 0 || types.DecIsInf(d) < 0 {
		return types.Null, pgerror.New(codeInvalidPower, "cannot take square root of a negative number")
	}
	if d.I == 0 {
		return types.NewDecimal(0, int32(clampScale(maxInt(16, int(d.X))))), nil
	}
	w, _ := nbaseDigits(d, 1)
	sweight := (w+1)*4/2 - 1
	rscale := clampScale(maxInt(16-sweight, int(d.X)))
	// floor(sqrt(c * 10^-X) * 10^(rscale+1)) = isqrt(c * 10^(2*rscale+2-X)),
	// then round half away from zero at the last digit.
	n := types.DecCoef(d)
	n.Mul(n, pow10Int(int64(2*rscale+2-int(d.X))))
	r := new(big.Int).Sqrt(n)
	r.Add(r, big.NewInt(5))
	r.Quo(r, big.NewInt(10))
	return types.DecFromBig(r, rscale)
}

// numericExp is exp(numeric) with Postgres' result scale.
func numericExp(d types.Datum) (types.Datum, error) {
	switch {
	case types.DecIsNaN(d), types.DecIsInf(d) > 0:
		return d, nil
	case types.DecIsInf(d) < 0:
		return types.NewDecimal(0, 0), nil
	}
	x := types.DecToFloat(d)
	val := math.Max(math.Min(x*0.434294481903252, 2000), -2000)
	rscale := clampScale(maxInt(16-int(val), int(d.X)))
	if math.Abs(x) >= 6000 { // exp_var's limit
		if x > 0 {
			return types.Null, pgerror.New(pgcode.NumericValueOutOfRange, "value overflows numeric format")
		}
		return types.NewDecimal(0, int32(rscale)), nil
	}
	prec := precFor(int(math.Max(val, 0)) + rscale + 10)
	return decFromBig(bigExp(decToBigP(d, prec)), rscale)
}

// numericLn is ln(numeric) with Postgres' result scale.
func numericLn(d types.Datum) (types.Datum, error) {
	if err := checkLogArg(d); err != nil {
		return types.Null, err
	}
	if decSpecial(d) {
		return d, nil
	}
	rscale := clampScale(maxInt(16-estimateLnDweight(d), int(d.X)))
	return decFromBig(bigLn(decToBigP(d, precFor(rscale+16))), rscale)
}

// numericLog is log(base, num) with Postgres' result scale.
func numericLog(base, num types.Datum) (types.Datum, error) {
	if err := checkLogArg(base); err != nil {
		return types.Null, err
	}
	if err := checkLogArg(num); err != nil {
		return types.Null, err
	}
	if decSpecial(base) || decSpecial(num) {
		return floatToDecSpecial(math.Log(types.DecToFloat(num)) / math.Log(types.DecToFloat(base)))
	}
	rw := estimateLnDweight(num) - estimateLnDweight(base)
	rscale := clampScale(maxInt(maxInt(16-rw, int(base.X)), int(num.X)))
	// ln(base) may be tiny (base near 1): give it the digits the quotient
	// needs on top of its own weight.
	prec := precFor(rscale + 16 + maxInt(rw, 0) - minInt(estimateLnDweight(base), 0))
	lb := bigLn(decToBigP(base, prec))
	if lb.Sign() == 0 {
		return types.Null, errDivZero()
	}
	return decFromBig(newFloatP(prec).Quo(bigLn(decToBigP(num, prec)), lb), rscale)
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func checkLogArg(d types.Datum) error {
	switch {
	case types.DecIsNaN(d):
		return nil
	case types.DecIsInf(d) != 0:
		if types.DecIsInf(d) < 0 {
			return pgerror.New(codeInvalidLog, "cannot take logarithm of a negative number")
		}
		return nil
	case d.I == 0:
		return pgerror.New(codeInvalidLog, "cannot take logarithm of zero")
	case d.I < 0:
		return pgerror.New(codeInvalidLog, "cannot take logarithm of a negative number")
	}
	return nil
}

// numericPower is power(numeric, numeric) with Postgres 15's result scale.
func numericPower(base, exp types.Datum) (types.Datum, error) {
	if decSpecial(base) || decSpecial(exp) {
		b, e := types.DecToFloat(base), types.DecToFloat(exp)
		switch {
		case b == 1 || e == 0:
			return types.NewDecimal(1, 0), nil
		case math.IsNaN(b) || math.IsNaN(e):
			return types.DecNaN(), nil
		case b == 0 && e < 0:
			return types.Null, pgerror.New(codeInvalidPower, "zero raised to a negative power is undefined")
		case b < 0 && !math.IsInf(e, 0) && math.Trunc(e) != e:
			return types.Null, pgerror.New(codeInvalidPower, "a negative number raised to a non-integer power yields a complex result")
		}
		return floatToDecSpecial(math.Pow(b, e))
	}
	if base.I == 0 && exp.I < 0 {
		return types.Null, pgerror.New(codeInvalidPower, "zero raised to a negative power is undefined")
	}
	expInt, isInt := decIntegral(exp)
	if base.I < 0 && !isInt {
		return types.Null, pgerror.New(codeInvalidPower, "a negative number raised to a non-integer power yields a complex result")
	}
	if isInt && expInt.IsInt64() && expInt.Int64() >= math.MinInt32 && expInt.Int64() <= math.MaxInt32 {
		return numericPowerInt(base, expInt.Int64())
	}
	if base.I == 0 {
		return types.NewDecimal(0, 16), nil
	}
	// e^(exp * ln|base|), negated for a negative base and an odd exponent.
	absBase, _ := types.DecAbs(base)
	lnf := types.DecToFloat(exp) * decLog10(absBase) * math.Ln10
	if math.IsNaN(lnf) { // |base| = 1 and a huge exponent
		lnf = 0
	}
	if math.Abs(lnf) > 2000*3.01 {
		if lnf > 0 {
			return types.Null, pgerror.New(pgcode.NumericValueOutOfRange, "value overflows numeric format")
		}
		return types.NewDecimal(0, 1000), nil
	}
	val := lnf * 0.434294481903252
	rscale := clampScale(maxInt(maxInt(16-int(val), int(base.X)), int(exp.X)))
	if math.Abs(lnf) >= 6000 {
		if lnf > 0 {
			return types.Null, pgerror.New(pgcode.NumericValueOutOfRange, "value overflows numeric format")
		}
		return types.NewDecimal(0, int32(rscale)), nil
	}
	// ln|base| * exp must be accurate to the result's significant digits.
	sig := maxInt(rscale+int(val), 0)
	prec := precFor(sig + 16 + maxInt(int(math.Log10(math.Abs(lnf)+1)), 0) + decDigits(exp))
	ln := bigLn(decToBigP(absBase, prec))
	ln.Mul(ln, decToBigP(exp, prec))
	v := bigExp(ln)
	if base.I < 0 && isInt && expInt.Bit(0) == 1 {
		v.Neg(v)
	}
	return decFromBig(v, rscale)
}

// numericPowerInt is power(base, e) for a finite base and an int32
// exponent, as Postgres 15's power_var_int.
func numericPowerInt(base types.Datum, e int64) (types.Datum, error) {
	rscale := clampScale(maxInt(16, int(base.X)))
	if e == 0 {
		return types.DecRound(types.NewDecimal(1, 0), int32(rscale))
	}
	if base.I == 0 {
		return types.NewDecimal(0, int32(rscale)), nil
	}
	// log10(|result|), to tell overflow and underflow early.
	f := float64(e) * decLog10(base)
	if f > 131072+1 {
		return types.Null, pgerror.New(pgcode.NumericValueOutOfRange, "value overflows numeric format")
	}
	if f+1 < -float64(rscale) {
		return types.NewDecimal(0, int32(rscale)), nil
	}
	ae := e
	if ae < 0 {
		ae = -ae
	}
	// Exact integer power of the coefficient when its size stays moderate
	// (10::numeric ^ 100000 is a 100,001-digit integer: math/big makes it
	// in milliseconds), else through logarithms at the precision the
	// result needs.
	if int64(decDigits(base)+1)*ae <= 4_000_000 {
		return decPowExact(base, e, rscale)
	}
	absBase, _ := types.DecAbs(base)
	prec := precFor(maxInt(int(f), 0) + rscale + 32)
	ln := bigLn(decToBigP(absBase, prec))
	v := bigExp(ln.Mul(ln, newFloatP(prec).SetInt64(e)))
	if base.I < 0 && e%2 != 0 {
		v.Neg(v)
	}
	return decFromBig(v, rscale)
}

// decPowExact is base^e for a finite, nonzero base, computed exactly on
// the coefficient (coef^|e| at scale X*|e|) and rounded half away from
// zero to rscale digits.
func decPowExact(base types.Datum, e int64, rscale int) (types.Datum, error) {
	ae := e
	if ae < 0 {
		ae = -ae
	}
	coef := types.DecCoef(base)
	neg := coef.Sign() < 0 && ae%2 == 1
	pow := new(big.Int).Exp(new(big.Int).Abs(coef), big.NewInt(ae), nil)
	scale := int64(base.X) * ae // value = pow / 10^scale
	var q *big.Int
	switch {
	case e > 0 && scale <= int64(rscale):
		q = pow.Mul(pow, pow10Int(int64(rscale)-scale))
	case e > 0:
		q = divRound(pow, pow10Int(scale-int64(rscale)))
	default: // 10^scale / pow, at rscale digits
		q = divRound(pow10Int(scale+int64(rscale)), pow)
	}
	if neg {
		q.Neg(q)
	}
	return types.DecFromBig(q, rscale)
}

// divRound returns n/d for positive n and d, rounded half away from zero.
func divRound(n, d *big.Int) *big.Int {
	q, m := new(big.Int).QuoRem(n, d, new(big.Int))
	if m.Lsh(m, 1).Cmp(d) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	return q
}

// decIntegral reports whether d is a whole number and returns it.
func decIntegral(d types.Datum) (*big.Int, bool) {
	c := types.DecCoef(d)
	if d.X <= 0 {
		return c, true
	}
	q, r := new(big.Int).QuoRem(c, pow10Int(int64(d.X)), new(big.Int))
	return q, r.Sign() == 0
}

const (
	codeInvalidLog   pgcode.Code = "2201E" // invalid_argument_for_logarithm
	codeInvalidPower pgcode.Code = "2201F" // invalid_argument_for_power_function
)
