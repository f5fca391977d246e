package eval

import (
	"math"
	"math/big"
	"strconv"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file adapts sql/types' decimal arithmetic and adds what numeric
// functions need beyond it: conversions to and from math/big for the
// transcendental functions, and Postgres' result-scale rules.

func decNeg(d types.Datum) (types.Datum, error)   { return types.DecNeg(d) }
func decAbs(d types.Datum) (types.Datum, error)   { return types.DecAbs(d) }
func decFloor(d types.Datum) (types.Datum, error) { return types.DecFloor(d) }
func decCeil(d types.Datum) (types.Datum, error)  { return types.DecCeil(d) }

func decRound(d types.Datum, scale int32) (types.Datum, error) { return types.DecRound(d, scale) }
func decTrunc(d types.Datum, scale int32) (types.Datum, error) { return types.DecTrunc(d, scale) }

// decSign returns -1, 0 or 1 for a decimal.
func decSign(d types.Datum) int {
	switch {
	case d.I < 0:
		return -1
	case d.I > 0:
		return 1
	}
	return 0
}

// numericPrec is the working precision of the transcendental functions,
// in bits: far more than the 19 digits a decimal coefficient holds.
const numericPrec = 320

func newFloat() *big.Float { return new(big.Float).SetPrec(numericPrec) }

// pow10Int returns 10^n as a big.Int.
func pow10Int(n int64) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(n), nil)
}

// decToBig returns d as a big.Float.
func decToBig(d types.Datum) *big.Float {
	f := newFloat().SetInt64(d.I)
	switch {
	case d.X > 0:
		f.Quo(f, newFloat().SetInt(pow10Int(int64(d.X))))
	case d.X < 0:
		f.Mul(f, newFloat().SetInt(pow10Int(int64(-d.X))))
	}
	return f
}

// decFromBig rounds v half away from zero to rscale decimal places. When
// the coefficient does not fit the decimal representation, the scale is
// reduced (trailing digits dropped) until it does; a value whose integer
// part does not fit is 22003.
func decFromBig(v *big.Float, rscale int) (types.Datum, error) {
	if v.IsInf() {
		return types.Null, pgerror.New(pgcode.NumericValueOutOfRange, "value overflows numeric format")
	}
	for {
		if rscale < 0 {
			rscale = 0
		}
		scaled := newFloat().Mul(v, newFloat().SetInt(pow10Int(int64(rscale))))
		coef := roundHalfAway(scaled)
		if coef.IsInt64() {
			return types.NewDecimal(coef.Int64(), int32(rscale)), nil
		}
		if rscale == 0 {
			return types.Null, pgerror.New(pgcode.NumericValueOutOfRange, "value overflows numeric format")
		}
		// Drop as many digits as needed at once.
		excess := len(new(big.Int).Abs(coef).String()) - 19
		if excess < 1 {
			excess = 1
		}
		rscale -= excess
	}
}

// roundHalfAway rounds v to an integer, halves away from zero.
func roundHalfAway(v *big.Float) *big.Int {
	half := newFloat().SetFloat64(0.5)
	t := newFloat()
	if v.Sign() < 0 {
		t.Sub(v, half)
	} else {
		t.Add(v, half)
	}
	i, _ := t.Int(nil)
	return i
}

// decDigits returns the number of decimal digits of |d.I| (0 for zero).
func decDigits(d types.Datum) int {
	if d.I == 0 {
		return 0
	}
	u := uint64(d.I)
	if d.I < 0 {
		u = uint64(-d.I)
	}
	return len(strconv.FormatUint(u, 10))
}

// decExp10 returns floor(log10(|d|)) for non-zero d.
func decExp10(d types.Datum) int {
	return decDigits(d) - 1 - int(d.X)
}

// nbaseDigits returns Postgres' base-10000 view of a non-zero decimal: the
// weight of its first digit group and its first groups (up to max), with
// trailing zero groups dropped.
func nbaseDigits(d types.Datum, max int) (weight int, groups []int) {
	u := uint64(d.I)
	if d.I < 0 {
		u = uint64(-d.I)
	}
	s := strconv.FormatUint(u, 10)
	scale := int(d.X)
	// Split into integer and fraction digits.
	var ip, fp string
	switch {
	case scale <= 0:
		ip = s
		for i := 0; i < -scale; i++ {
			ip += "0"
		}
	case scale >= len(s):
		fp = s
		for len(fp) < scale {
			fp = "0" + fp
		}
	default:
		ip, fp = s[:len(s)-scale], s[len(s)-scale:]
	}
	for len(ip)%4 != 0 {
		ip = "0" + ip
	}
	for len(fp)%4 != 0 {
		fp += "0"
	}
	all := ip + fp
	w := len(ip)/4 - 1
	var gs []int
	for i := 0; i < len(all); i += 4 {
		g, _ := strconv.Atoi(all[i : i+4])
		gs = append(gs, g)
	}
	for len(gs) > 0 && gs[0] == 0 {
		gs = gs[1:]
		w--
	}
	for len(gs) > 0 && gs[len(gs)-1] == 0 {
		gs = gs[:len(gs)-1]
	}
	if len(gs) > max {
		gs = gs[:max]
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

// bigExp computes e^x.
func bigExp(x *big.Float) *big.Float {
	// Reduce: e^x = (e^(x/2^k))^(2^k) with |x/2^k| < 1/2.
	k := 0
	r := newFloat().Set(x)
	half := newFloat().SetFloat64(0.5)
	for newFloat().Abs(r).Cmp(half) > 0 {
		r.Quo(r, newFloat().SetInt64(2))
		k++
	}
	sum := newFloat().SetInt64(1)
	term := newFloat().SetInt64(1)
	eps := newFloat().SetMantExp(newFloat().SetInt64(1), -numericPrec)
	for n := int64(1); n < 1000; n++ {
		term.Mul(term, r)
		term.Quo(term, newFloat().SetInt64(n))
		sum.Add(sum, term)
		if newFloat().Abs(term).Cmp(eps) < 0 {
			break
		}
	}
	for ; k > 0; k-- {
		sum.Mul(sum, sum)
	}
	return sum
}

// bigLn computes ln(x) for x > 0.
func bigLn(x *big.Float) *big.Float {
	// x = m * 2^e with m in [0.5, 1): ln x = ln m + e ln 2.
	m := newFloat()
	e := x.MantExp(m)
	res := atanhSeries(m)
	if e != 0 {
		ln2 := atanhSeries(newFloat().SetInt64(2))
		res.Add(res, ln2.Mul(ln2, newFloat().SetInt64(int64(e))))
	}
	return res
}

// atanhSeries returns ln(m) = 2 atanh((m-1)/(m+1)).
func atanhSeries(m *big.Float) *big.Float {
	one := newFloat().SetInt64(1)
	z := newFloat().Quo(newFloat().Sub(m, one), newFloat().Add(m, one))
	z2 := newFloat().Mul(z, z)
	sum := newFloat().Set(z)
	pow := newFloat().Set(z)
	eps := newFloat().SetMantExp(one, -numericPrec)
	for n := int64(3); n < 10000; n += 2 {
		pow.Mul(pow, z2)
		t := newFloat().Quo(pow, newFloat().SetInt64(n))
		sum.Add(sum, t)
		if t.Sign() == 0 || newFloat().Abs(t).Cmp(eps) < 0 {
			break
		}
	}
	return sum.Mul(sum, newFloat().SetInt64(2))
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

// numericSqrt is sqrt(numeric) with Postgres' result scale.
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
	v := newFloat().Sqrt(decToBig(d))
	return decFromBig(v, rscale)
}

// numericExp is exp(numeric) with Postgres' result scale.
func numericExp(d types.Datum) (types.Datum, error) {
	switch {
	case types.DecIsNaN(d), types.DecIsInf(d) > 0:
		return d, nil
	case types.DecIsInf(d) < 0:
		return types.NewDecimal(0, 0), nil
	}
	val := types.DecToFloat(d) * 0.434294481903252
	if val > 19 {
		// Beyond what a decimal coefficient can hold.
		return types.Null, pgerror.New(pgcode.NumericValueOutOfRange, "value overflows numeric format")
	}
	val = math.Max(val, -2000)
	rscale := clampScale(maxInt(16-int(val), int(d.X)))
	return decFromBig(bigExp(decToBig(d)), rscale)
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
	return decFromBig(bigLn(decToBig(d)), rscale)
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
	lb := bigLn(decToBig(base))
	if lb.Sign() == 0 {
		return types.Null, errDivZero()
	}
	rw := estimateLnDweight(num) - estimateLnDweight(base)
	rscale := clampScale(maxInt(maxInt(16-rw, int(base.X)), int(num.X)))
	return decFromBig(newFloat().Quo(bigLn(decToBig(num)), lb), rscale)
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
	if isInt && expInt >= math.MinInt32 && expInt <= math.MaxInt32 {
		rscale := clampScale(maxInt(16, int(base.X)))
		if expInt == 0 {
			return decFromBig(newFloat().SetInt64(1), rscale)
		}
		e := expInt
		if e < 0 {
			e = -e
		}
		if base.I != 0 && float64(expInt)*math.Log10(math.Abs(types.DecToFloat(base))) > 40 {
			return types.Null, pgerror.New(pgcode.NumericValueOutOfRange, "value overflows numeric format")
		}
		// Exact rational power when its size stays small, else through
		// logarithms at high precision.
		if int64(decDigits(base)+int(base.X)+1)*e <= 20000 {
			num := new(big.Rat).SetFrac(big.NewInt(base.I), pow10Int(int64(base.X)))
			if expInt < 0 {
				num.Inv(num)
			}
			res := new(big.Rat).SetInt64(1)
			p := new(big.Rat).Set(num)
			for e > 0 {
				if e&1 == 1 {
					res.Mul(res, p)
				}
				e >>= 1
				if e > 0 {
					p.Mul(p, p)
				}
			}
			return decFromBig(newFloat().SetRat(res), rscale)
		}
		if base.I == 0 {
			return types.NewDecimal(0, int32(rscale)), nil
		}
		v := bigExp(newFloat().Mul(bigLn(newFloat().Abs(decToBig(base))), newFloat().SetInt64(expInt)))
		if base.I < 0 && expInt%2 != 0 {
			v.Neg(v)
		}
		return decFromBig(v, rscale)
	}
	if base.I == 0 {
		return types.NewDecimal(0, 16), nil
	}
	lnBase := bigLn(decToBig(base))
	ln := newFloat().Mul(lnBase, decToBig(exp))
	lnf, _ := ln.Float64()
	val := lnf * 0.434294481903252
	if val > 40 {
		return types.Null, pgerror.New(pgcode.NumericValueOutOfRange, "value overflows numeric format")
	}
	rscale := clampScale(maxInt(maxInt(16-int(val), int(base.X)), int(exp.X)))
	return decFromBig(bigExp(ln), rscale)
}

// decIntegral reports whether d is a whole number and returns it.
func decIntegral(d types.Datum) (int64, bool) {
	if d.X <= 0 {
		v := d.I
		for i := int32(0); i < -d.X; i++ {
			if v > math.MaxInt64/10 || v < math.MinInt64/10 {
				return 0, false
			}
			v *= 10
		}
		return v, true
	}
	p := int64(1)
	for i := int32(0); i < d.X; i++ {
		if p > math.MaxInt64/10 {
			return 0, d.I == 0
		}
		p *= 10
	}
	if d.I%p != 0 {
		return 0, false
	}
	return d.I / p, true
}

const (
	codeInvalidLog   pgcode.Code = "2201E" // invalid_argument_for_logarithm
	codeInvalidPower pgcode.Code = "2201F" // invalid_argument_for_power_function
)
