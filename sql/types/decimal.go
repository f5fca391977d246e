package types

import (
	"math"
	"math/big"
	"math/bits"
	"strconv"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// Decimals are KDecimal datums holding the exact value I * 10^-X with a
// non-negative scale X and an int64 coefficient I. The scale is the
// display scale: NewDecimal(1050, 2) is 10.50 and prints so.
//
// PostgreSQL's NUMERIC also has the special values NaN, Infinity and
// -Infinity. They are KDecimal datums with a negative X (see DecNaN and
// DecInf); I is zero for them. All Dec* functions handle them as
// PostgreSQL does.

// Negative scales mark the special values.
const (
	decNaN    int32 = -1
	decPosInf int32 = -2
	decNegInf int32 = -3
)

// MaxDecScale is the largest scale a decimal can carry (PostgreSQL's
// NUMERIC_DSCALE_MAX).
const MaxDecScale = 16383

const (
	decMaxDisplayScale = 1000 // NUMERIC_MAX_DISPLAY_SCALE: cap on division scales
	decMaxResultScale  = 2000 // NUMERIC_MAX_RESULT_SCALE: cap on round/trunc scales
	decMinSigDigits    = 16   // NUMERIC_MIN_SIG_DIGITS
	decMaxExponent     = 1000 // largest |exponent| accepted in input
)

// pow10u[k] = 10^k for k <= 19 (10^19 is the largest power of ten in a uint64).
var pow10u = [20]uint64{
	1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
	1000000000, 10000000000, 100000000000, 1000000000000, 10000000000000,
	100000000000000, 1000000000000000, 10000000000000000,
	100000000000000000, 1000000000000000000, 10000000000000000000,
}

// pow10f[k] = 10^k exactly, k <= 22.
var pow10f = [23]float64{
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
}

// DecNaN returns the numeric NaN.
func DecNaN() Datum { return Datum{K: KDecimal, X: decNaN} }

// DecInf returns numeric Infinity, or -Infinity when neg is set.
func DecInf(neg bool) Datum {
	if neg {
		return Datum{K: KDecimal, X: decNegInf}
	}
	return Datum{K: KDecimal, X: decPosInf}
}

// DecIsNaN reports whether d is the numeric NaN.
func DecIsNaN(d Datum) bool { return d.K == KDecimal && d.X == decNaN }

// DecIsInf returns +1 for numeric Infinity, -1 for -Infinity and 0 otherwise.
func DecIsInf(d Datum) int {
	if d.K != KDecimal {
		return 0
	}
	switch d.X {
	case decPosInf:
		return 1
	case decNegInf:
		return -1
	}
	return 0
}

// DecIsFinite reports whether d is a decimal other than NaN and ±Infinity.
func DecIsFinite(d Datum) bool { return d.K == KDecimal && d.X >= 0 }

// uabs returns |i| as a uint64 (correct for math.MinInt64).
func uabs(i int64) uint64 {
	if i < 0 {
		return -uint64(i)
	}
	return uint64(i)
}

// fromMag returns the int64 with sign neg and magnitude u, if it fits.
func fromMag(neg bool, u uint64) (int64, bool) {
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// numDigits returns the number of decimal digits of u (1 for 0).
func numDigits(u uint64) int {
	n := 1
	for n < 20 && u >= pow10u[n] {
		n++
	}
	return n
}

// scaleUp returns c * 10^k if it fits in an int64.
func scaleUp(c int64, k int32) (int64, bool) {
	if k == 0 || c == 0 {
		return c, true
	}
	if k < 0 || k > 19 {
		return 0, false
	}
	hi, lo := bits.Mul64(uabs(c), pow10u[k])
	if hi != 0 {
		return 0, false
	}
	return fromMag(c < 0, lo)
}

func errNumericOverflow() *pgerror.Error {
	return pgerror.New(pgcode.NumericValueOutOfRange, "numeric field overflow")
}

func errNumericFormatOverflow() *pgerror.Error {
	return pgerror.New(pgcode.NumericValueOutOfRange, "value overflows numeric format")
}

func errDivByZero() *pgerror.Error {
	return pgerror.New(pgcode.DivisionByZero, "division by zero")
}

// isSpace reports whether c is a space as C's isspace sees it.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// trimSpace trims C whitespace from both ends of s.
func trimSpace(s string) string {
	i, j := 0, len(s)
	for i < j && isSpace(s[i]) {
		i++
	}
	for j > i && isSpace(s[j-1]) {
		j--
	}
	return s[i:j]
}

// equalFold reports whether s equals the lower-case ASCII word w, ignoring case.
func equalFold(s, w string) bool {
	if len(s) != len(w) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[i] {
			return false
		}
	}
	return true
}

// DecFromString parses s as PostgreSQL's numeric input does: optional
// surrounding whitespace, an optional sign, digits with an optional decimal
// point, an optional exponent, or NaN / Infinity / inf. The scale of the
// result is the number of fraction digits written (after the exponent is
// applied). Junk gives 22P02; values whose significant digits do not fit
// the int64 coefficient give 22003.
func DecFromString(s string) (Datum, error) {
	return decParse(s, -1)
}

// decParse parses s; when round >= 0 the value is first rounded (half away
// from zero) to that many fraction digits, as a NUMERIC(p,round) column
// would, so that long inputs can still fit.
func decParse(s string, round int) (Datum, error) {
	t := trimSpace(s)
	syntax := func() (Datum, error) {
		return Datum{}, pgerror.New(pgcode.InvalidTextRepresentation,
			"invalid input syntax for type numeric: \"%s\"", s)
	}
	switch {
	case equalFold(t, "nan"):
		return DecNaN(), nil
	case equalFold(t, "infinity"), equalFold(t, "+infinity"), equalFold(t, "inf"), equalFold(t, "+inf"):
		return DecInf(false), nil
	case equalFold(t, "-infinity"), equalFold(t, "-inf"):
		return DecInf(true), nil
	}
	i := 0
	neg := false
	if i < len(t) && (t[i] == '+' || t[i] == '-') {
		neg = t[i] == '-'
		i++
	}
	var stack [48]byte
	digs := stack[:0]
	nDigits, nFrac := 0, 0
	for i < len(t) && '0' <= t[i] && t[i] <= '9' {
		digs = append(digs, t[i])
		i++
		nDigits++
	}
	if i < len(t) && t[i] == '.' {
		i++
		for i < len(t) && '0' <= t[i] && t[i] <= '9' {
			digs = append(digs, t[i])
			i++
			nDigits++
			nFrac++
		}
	}
	if nDigits == 0 {
		return syntax()
	}
	exp := 0
	if i < len(t) && (t[i] == 'e' || t[i] == 'E') {
		i++
		eneg := false
		if i < len(t) && (t[i] == '+' || t[i] == '-') {
			eneg = t[i] == '-'
			i++
		}
		if i >= len(t) || t[i] < '0' || t[i] > '9' {
			return syntax()
		}
		for i < len(t) && '0' <= t[i] && t[i] <= '9' {
			if exp <= decMaxExponent {
				exp = exp*10 + int(t[i]-'0')
			}
			i++
		}
		if exp > decMaxExponent {
			return Datum{}, errNumericFormatOverflow()
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(t) {
		return syntax()
	}
	scale := nFrac - exp
	// Strip leading zeros.
	j := 0
	for j < len(digs) && digs[j] == '0' {
		j++
	}
	sig := digs[j:]
	if scale < 0 {
		if len(sig) > 0 {
			for k := 0; k < -scale; k++ {
				sig = append(sig, '0')
			}
		}
		scale = 0
	}
	if round >= 0 && scale > round {
		sig = roundDigits(sig, scale-round)
		scale = round
	}
	if len(sig) == 0 {
		if scale > MaxDecScale {
			return Datum{}, errNumericFormatOverflow()
		}
		return NewDecimal(0, int32(scale)), nil
	}
	// Drop trailing zeros of the fraction while the coefficient is too long.
	for len(sig) > 19 && scale > 0 && sig[len(sig)-1] == '0' {
		sig = sig[:len(sig)-1]
		scale--
	}
	if len(sig) > 19 {
		return Datum{}, errNumericFormatOverflow()
	}
	var u uint64
	for _, c := range sig {
		hi, lo := bits.Mul64(u, 10)
		lo, carry := bits.Add64(lo, uint64(c-'0'), 0)
		if hi != 0 || carry != 0 {
			return Datum{}, errNumericFormatOverflow()
		}
		u = lo
	}
	c, ok := fromMag(neg, u)
	for !ok && scale > 0 && u%10 == 0 {
		u /= 10
		scale--
		c, ok = fromMag(neg, u)
	}
	if !ok || scale > MaxDecScale {
		return Datum{}, errNumericFormatOverflow()
	}
	return NewDecimal(c, int32(scale)), nil
}

// roundDigits drops the last n digits of the significant digit string sig
// (no leading zeros), rounding half away from zero. The result has no
// leading zeros; it is empty for zero.
func roundDigits(sig []byte, n int) []byte {
	if n > len(sig) {
		return sig[:0]
	}
	up := sig[len(sig)-n] >= '5'
	sig = sig[:len(sig)-n]
	if !up {
		return sig
	}
	for k := len(sig) - 1; k >= 0; k-- {
		if sig[k] == '9' {
			sig[k] = '0'
			continue
		}
		sig[k]++
		return sig
	}
	// Carry out of the top digit (or nothing was kept).
	sig = append(sig, 0)
	copy(sig[1:], sig)
	sig[0] = '1'
	return sig
}

// DecString returns the text of d as PostgreSQL prints a numeric: the
// scale is kept, so NewDecimal(1050, 2) is "10.50".
func DecString(d Datum) string {
	var buf [32]byte
	return string(appendDecimal(buf[:0], d))
}

// appendDecimal appends the text of decimal d to b.
func appendDecimal(b []byte, d Datum) []byte {
	switch d.X {
	case decNaN:
		return append(b, "NaN"...)
	case decPosInf:
		return append(b, "Infinity"...)
	case decNegInf:
		return append(b, "-Infinity"...)
	}
	var tmp [20]byte
	ds := strconv.AppendUint(tmp[:0], uabs(d.I), 10)
	if d.I < 0 {
		b = append(b, '-')
	}
	sc := int(d.X)
	if sc <= 0 {
		return append(b, ds...)
	}
	if len(ds) > sc {
		b = append(b, ds[:len(ds)-sc]...)
		b = append(b, '.')
		return append(b, ds[len(ds)-sc:]...)
	}
	b = append(b, '0', '.')
	for k := len(ds); k < sc; k++ {
		b = append(b, '0')
	}
	return append(b, ds...)
}

// DecFromInt returns the decimal with the value of i and scale 0.
func DecFromInt(i int64) Datum { return NewDecimal(i, 0) }

// DecFromFloat converts f as PostgreSQL's float8 -> numeric cast does: the
// value is first rounded to 15 significant digits. NaN and ±Inf give the
// numeric specials; values too large for the coefficient give 22003.
func DecFromFloat(f float64) (Datum, error) {
	return decFromFloatDigits(f, 15)
}

// decFromFloatDigits converts f rounded to digits significant digits
// (15 for float8, 6 for float4 as in PostgreSQL).
func decFromFloatDigits(f float64, digits int) (Datum, error) {
	switch {
	case math.IsNaN(f):
		return DecNaN(), nil
	case math.IsInf(f, 1):
		return DecInf(false), nil
	case math.IsInf(f, -1):
		return DecInf(true), nil
	}
	var buf [40]byte
	b := strconv.AppendFloat(buf[:0], f, 'e', digits-1, 64)
	// Strip trailing zeros of the mantissa, as %g does.
	e := 0
	for e < len(b) && b[e] != 'e' {
		e++
	}
	m := e
	for m > 0 && b[m-1] == '0' {
		m--
	}
	if m > 0 && b[m-1] == '.' {
		m--
	}
	b = append(b[:m], b[e:]...)
	return decParse(string(b), -1)
}

// DecToFloat returns the float64 nearest to d (NaN and ±Inf for the specials).
func DecToFloat(d Datum) float64 {
	switch d.X {
	case decNaN:
		return pgNaN
	case decPosInf:
		return math.Inf(1)
	case decNegInf:
		return math.Inf(-1)
	}
	if d.X == 0 {
		return float64(d.I)
	}
	u := uabs(d.I)
	if u < 1<<53 && d.X <= 22 {
		f := float64(u) / pow10f[d.X]
		if d.I < 0 {
			f = -f
		}
		return f
	}
	var buf [64]byte
	b := appendDecimal(buf[:0], d)
	f, _ := strconv.ParseFloat(string(b), 64)
	return f
}

// DecToInt rounds d to an integer, half away from zero as PostgreSQL's
// numeric -> bigint cast does. Out of range gives 22003 "bigint out of
// range"; NaN and infinity give 0A000.
func DecToInt(d Datum) (int64, error) {
	switch d.X {
	case decNaN:
		return 0, pgerror.New(pgcode.FeatureNotSupported, "cannot convert NaN to bigint")
	case decPosInf, decNegInf:
		return 0, pgerror.New(pgcode.FeatureNotSupported, "cannot convert infinity to bigint")
	}
	r, err := decRoundMode(d, 0, roundHalfAway)
	if err != nil {
		return 0, pgerror.New(pgcode.NumericValueOutOfRange, "bigint out of range")
	}
	return r.I, nil
}

// decFromBig returns c * 10^-scale, rounding away fraction digits (half
// away from zero) as far as needed for the coefficient to fit an int64 and
// the scale to stay within MaxDecScale. It fails with 22003 when even the
// integer part does not fit.
func decFromBig(c *big.Int, scale int32) (Datum, error) {
	if scale > MaxDecScale {
		c = roundBig(c, int(scale-MaxDecScale))
		scale = MaxDecScale
	}
	if c.IsInt64() {
		return NewDecimal(c.Int64(), scale), nil
	}
	var abs big.Int
	abs.Abs(c)
	k := len(abs.Text(10)) - 19
	if k < 1 {
		k = 1
	}
	for ; k <= int(scale); k++ {
		r := roundBig(c, k)
		if r.IsInt64() {
			return NewDecimal(r.Int64(), scale-int32(k)), nil
		}
	}
	return Datum{}, errNumericOverflow()
}

// bigPow10 returns 10^k.
func bigPow10(k int) *big.Int {
	if k < len(pow10u) {
		return new(big.Int).SetUint64(pow10u[k])
	}
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil)
}

// roundBig returns c / 10^k rounded half away from zero.
func roundBig(c *big.Int, k int) *big.Int {
	if k <= 0 {
		return new(big.Int).Set(c)
	}
	p := bigPow10(k)
	var q, r big.Int
	q.QuoRem(c, p, &r) // truncated: r has c's sign
	r.Abs(&r)
	r.Lsh(&r, 1)
	if r.Cmp(p) >= 0 {
		if c.Sign() < 0 {
			q.Sub(&q, big.NewInt(1))
		} else {
			q.Add(&q, big.NewInt(1))
		}
	}
	return &q
}

// bigScaled returns c * 10^k as a big.Int.
func bigScaled(c int64, k int32) *big.Int {
	b := big.NewInt(c)
	if k > 0 {
		b.Mul(b, bigPow10(int(k)))
	}
	return b
}

// decSign returns the sign of a decimal, counting -Inf as -1 and +Inf as +1
// (NaN as 0).
func decSign(d Datum) int {
	switch d.X {
	case decNaN:
		return 0
	case decPosInf:
		return 1
	case decNegInf:
		return -1
	}
	switch {
	case d.I < 0:
		return -1
	case d.I > 0:
		return 1
	}
	return 0
}

// DecAdd returns a + b with the larger of the two scales (reduced by
// rounding when the coefficient would not fit). 22003 on overflow.
func DecAdd(a, b Datum) (Datum, error) {
	if a.X < 0 || b.X < 0 {
		return decAddSpecial(a, DecIsInf(b), b.X == decNaN), nil
	}
	return decAddFinite(a.I, a.X, b.I, b.X, false)
}

// DecSub returns a - b with the larger of the two scales (reduced by
// rounding when the coefficient would not fit). 22003 on overflow.
func DecSub(a, b Datum) (Datum, error) {
	if a.X < 0 || b.X < 0 {
		return decAddSpecial(a, -DecIsInf(b), b.X == decNaN), nil
	}
	return decAddFinite(a.I, a.X, b.I, b.X, true)
}

// decAddSpecial adds a to a b that is infinite with sign binf or NaN
// (either may be special).
func decAddSpecial(a Datum, binf int, bnan bool) Datum {
	if a.X == decNaN || bnan {
		return DecNaN()
	}
	ainf := DecIsInf(a)
	switch {
	case ainf != 0 && binf != 0:
		if ainf != binf {
			return DecNaN()
		}
		return DecInf(ainf < 0)
	case ainf != 0:
		return DecInf(ainf < 0)
	}
	return DecInf(binf < 0)
}

func decAddFinite(ca int64, sa int32, cb int64, sb int32, sub bool) (Datum, error) {
	s := max(sa, sb)
	xa, ok1 := scaleUp(ca, s-sa)
	xb, ok2 := scaleUp(cb, s-sb)
	if ok1 && ok2 {
		var r int64
		var ovf bool
		if sub {
			r = xa - xb
			ovf = (xa >= 0) != (xb >= 0) && (r >= 0) != (xa >= 0)
		} else {
			r = xa + xb
			ovf = (xa >= 0) == (xb >= 0) && (r >= 0) != (xa >= 0)
		}
		if !ovf {
			return NewDecimal(r, s), nil
		}
	}
	A := bigScaled(ca, s-sa)
	B := bigScaled(cb, s-sb)
	if sub {
		A.Sub(A, B)
	} else {
		A.Add(A, B)
	}
	return decFromBig(A, s)
}

// DecMul returns a * b with the sum of the scales (reduced by rounding when
// the coefficient would not fit). 22003 on overflow.
func DecMul(a, b Datum) (Datum, error) {
	if a.X < 0 || b.X < 0 {
		if a.X == decNaN || b.X == decNaN {
			return DecNaN(), nil
		}
		sa, sb := decSign(a), decSign(b)
		if sa == 0 || sb == 0 {
			return DecNaN(), nil // Inf * 0
		}
		return DecInf(sa*sb < 0), nil
	}
	s := a.X + b.X
	hi, lo := bits.Mul64(uabs(a.I), uabs(b.I))
	if s <= MaxDecScale {
		if d, ok := decReduce128((a.I < 0) != (b.I < 0), hi, lo, s); ok {
			return d, nil
		}
	}
	A := big.NewInt(a.I)
	A.Mul(A, big.NewInt(b.I))
	return decFromBig(A, s)
}

// decReduce128 returns the 128-bit magnitude hi:lo with sign neg at scale
// s, rounded half away from zero to the largest scale (dropping at most 19
// digits) at which it fits; ok is false when that is not possible here.
func decReduce128(neg bool, hi, lo uint64, s int32) (Datum, bool) {
	if hi == 0 {
		if c, ok := fromMag(neg, lo); ok {
			return NewDecimal(c, s), true
		}
	}
	for k := int32(1); k <= 19 && k <= s; k++ {
		p := pow10u[k]
		qh, rh := hi/p, hi%p
		if qh != 0 {
			continue
		}
		q, r := bits.Div64(rh, lo, p)
		if r >= p-r {
			if q == math.MaxUint64 {
				continue
			}
			q++
		}
		if c, ok := fromMag(neg, q); ok {
			return NewDecimal(c, s-k), true
		}
	}
	return Datum{}, false
}

// decWeightFirst returns the base-10000 weight and the first base-10000
// digit of c * 10^-s, as PostgreSQL's NumericVar would hold them (0, 0 for
// zero).
func decWeightFirst(c int64, s int32) (weight int, first uint64) {
	if c == 0 {
		return 0, 0
	}
	u := uabs(c)
	n := numDigits(u)
	e10 := n - 1 - int(s)
	w := floorDiv(int64(e10), 4)
	sh := 4*int(w) + int(s)
	if sh >= 0 {
		first = u / pow10u[sh]
	} else {
		first = u * pow10u[-sh]
	}
	return int(w), first
}

// floorDiv returns floor(a / b) for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// floorMod returns a - b*floorDiv(a, b) for b > 0.
func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// decDivScale returns the result scale PostgreSQL's select_div_scale
// chooses for a / b.
func decDivScale(a, b Datum) int32 {
	w1, f1 := decWeightFirst(a.I, a.X)
	w2, f2 := decWeightFirst(b.I, b.X)
	qweight := w1 - w2
	if f1 <= f2 {
		qweight--
	}
	rscale := decMinSigDigits - qweight*4
	rscale = max(rscale, int(a.X), int(b.X), 0)
	rscale = min(rscale, decMaxDisplayScale)
	return int32(rscale)
}

// DecDiv returns a / b rounded half away from zero to the scale
// PostgreSQL's select_div_scale picks (at least 16 significant digits and
// at least the scales of a and b), reduced so that the coefficient fits.
// Division by zero gives 22012; overflow 22003.
func DecDiv(a, b Datum) (Datum, error) {
	if a.X < 0 || b.X < 0 {
		if a.X == decNaN || b.X == decNaN {
			return DecNaN(), nil
		}
		ainf, binf := DecIsInf(a), DecIsInf(b)
		switch {
		case ainf != 0 && binf != 0:
			return DecNaN(), nil
		case ainf != 0:
			if b.I == 0 {
				return Datum{}, errDivByZero()
			}
			return DecInf((ainf < 0) != (b.I < 0)), nil
		}
		return NewDecimal(0, 0), nil // finite / ±Inf
	}
	if b.I == 0 {
		return Datum{}, errDivByZero()
	}
	rscale := decDivScale(a, b)
	neg := (a.I < 0) != (b.I < 0)
	ua, ub := uabs(a.I), uabs(b.I)
	e := rscale - a.X + b.X // >= 0
	// Fast path: a 128-bit numerator; each step drops one digit of scale.
	for k := int32(0); k <= 2 && k <= rscale && k <= e && e-k <= 19; k++ {
		hi, lo := bits.Mul64(ua, pow10u[e-k])
		if hi >= ub {
			continue
		}
		q, r := bits.Div64(hi, lo, ub)
		if r >= ub-r {
			if q == math.MaxUint64 {
				continue
			}
			q++
		}
		if c, ok := fromMag(neg, q); ok {
			return NewDecimal(c, rscale-k), nil
		}
	}
	num := bigScaled(a.I, e)
	den := big.NewInt(b.I)
	q := bigDivRound(num, den)
	if q.IsInt64() {
		return NewDecimal(q.Int64(), rscale), nil
	}
	var abs big.Int
	abs.Abs(q)
	k := len(abs.Text(10)) - 19
	if k < 1 {
		k = 1
	}
	for ; k <= int(rscale); k++ {
		// Recompute from the exact quotient at the smaller scale to round once.
		n2 := bigScaled(a.I, e-int32(k))
		var d2 *big.Int
		if e-int32(k) < 0 {
			n2 = big.NewInt(a.I)
			d2 = new(big.Int).Mul(den, bigPow10(int(int32(k)-e)))
		} else {
			d2 = den
		}
		r := bigDivRound(n2, d2)
		if r.IsInt64() {
			return NewDecimal(r.Int64(), rscale-int32(k)), nil
		}
	}
	return Datum{}, errNumericOverflow()
}

// bigDivRound returns n / d rounded half away from zero.
func bigDivRound(n, d *big.Int) *big.Int {
	var q, r big.Int
	q.QuoRem(n, d, &r)
	if r.Sign() != 0 {
		r.Abs(&r)
		r.Lsh(&r, 1)
		var ad big.Int
		ad.Abs(d)
		if r.Cmp(&ad) >= 0 {
			if (n.Sign() < 0) != (d.Sign() < 0) {
				q.Sub(&q, big.NewInt(1))
			} else {
				q.Add(&q, big.NewInt(1))
			}
		}
	}
	return &q
}

// DecMod returns the remainder of a / b truncated toward zero (the sign
// follows a), with the larger of the scales, as PostgreSQL's numeric %.
// Division by zero gives 22012.
func DecMod(a, b Datum) (Datum, error) {
	if a.X < 0 || b.X < 0 {
		if a.X == decNaN || b.X == decNaN {
			return DecNaN(), nil
		}
		if DecIsInf(a) != 0 {
			if b.X >= 0 && b.I == 0 {
				return Datum{}, errDivByZero()
			}
			return DecNaN(), nil
		}
		return a, nil // finite % ±Inf
	}
	if b.I == 0 {
		return Datum{}, errDivByZero()
	}
	s := max(a.X, b.X)
	xa, ok1 := scaleUp(a.I, s-a.X)
	xb, ok2 := scaleUp(b.I, s-b.X)
	if ok1 && ok2 {
		return NewDecimal(xa%xb, s), nil
	}
	A := bigScaled(a.I, s-a.X)
	A.Rem(A, bigScaled(b.I, s-b.X))
	return decFromBig(A, s)
}

// DecNeg returns -d. Negating the coefficient math.MinInt64 overflows (22003).
func DecNeg(d Datum) (Datum, error) {
	switch d.X {
	case decNaN:
		return d, nil
	case decPosInf:
		return DecInf(true), nil
	case decNegInf:
		return DecInf(false), nil
	}
	if d.I == math.MinInt64 {
		return Datum{}, errNumericOverflow()
	}
	return NewDecimal(-d.I, d.X), nil
}

// DecAbs returns |d|, keeping the scale.
func DecAbs(d Datum) (Datum, error) {
	if d.X == decNegInf {
		return DecInf(false), nil
	}
	if d.X >= 0 && d.I < 0 {
		return DecNeg(d)
	}
	return d, nil
}

type decRounding uint8

const (
	roundHalfAway decRounding = iota
	roundTrunc
	roundFloor
	roundCeil
)

// DecRound rounds d half away from zero to scale fraction digits, as
// PostgreSQL's round(numeric, int): a negative scale rounds to the left of
// the decimal point (round(1234.5, -1) = 1230). The result scale is
// max(scale, 0); a scale larger than d's pads with zeros as far as the
// coefficient allows.
func DecRound(d Datum, scale int32) (Datum, error) {
	return decRoundMode(d, scale, roundHalfAway)
}

// DecTrunc truncates d toward zero to scale fraction digits, as
// PostgreSQL's trunc(numeric, int).
func DecTrunc(d Datum, scale int32) (Datum, error) {
	return decRoundMode(d, scale, roundTrunc)
}

// DecFloor returns the largest integer <= d (scale 0).
func DecFloor(d Datum) (Datum, error) { return decRoundMode(d, 0, roundFloor) }

// DecCeil returns the smallest integer >= d (scale 0).
func DecCeil(d Datum) (Datum, error) { return decRoundMode(d, 0, roundCeil) }

func decRoundMode(d Datum, scale int32, mode decRounding) (Datum, error) {
	if d.X < 0 {
		return d, nil
	}
	scale = max(min(scale, decMaxResultScale), -decMaxResultScale)
	rs := max(scale, 0)
	if scale >= d.X {
		return decRaiseScale(d, rs), nil
	}
	k := d.X - scale
	u := uabs(d.I)
	neg := d.I < 0
	var q uint64
	up := false
	if k > 19 {
		q = 0
		switch mode {
		case roundFloor:
			up = neg && u != 0
		case roundCeil:
			up = !neg && u != 0
		}
	} else {
		p := pow10u[k]
		q = u / p
		r := u % p
		switch mode {
		case roundHalfAway:
			up = r >= p-r
		case roundFloor:
			up = neg && r != 0
		case roundCeil:
			up = !neg && r != 0
		}
	}
	if up {
		q++
	}
	if scale < 0 && q != 0 {
		if -scale > 19 {
			return Datum{}, errNumericOverflow()
		}
		hi, lo := bits.Mul64(q, pow10u[-scale])
		if hi != 0 {
			return Datum{}, errNumericOverflow()
		}
		q = lo
	}
	c, ok := fromMag(neg, q)
	if !ok {
		return Datum{}, errNumericOverflow()
	}
	return NewDecimal(c, rs), nil
}

// decRaiseScale pads d with trailing zeros up to scale target, stopping
// early when the coefficient would no longer fit.
func decRaiseScale(d Datum, target int32) Datum {
	if target <= d.X {
		return d
	}
	if d.I == 0 {
		return NewDecimal(0, target)
	}
	for k := min(target-d.X, 19); k > 0; k-- {
		if c, ok := scaleUp(d.I, k); ok {
			return NewDecimal(c, d.X+k)
		}
	}
	return d
}

// DecCmp compares the values of two decimals across scales: -1, 0 or +1.
// As in PostgreSQL, NaN equals NaN and sorts above everything, and
// -Infinity < finite values < Infinity.
func DecCmp(a, b Datum) int {
	ra, rb := decRank(a), decRank(b)
	if ra != rb {
		if ra < rb {
			return -1
		}
		return 1
	}
	if ra != 1 {
		return 0
	}
	return decCmpFinite(a.I, a.X, b.I, b.X)
}

// decRank orders the decimal classes: -Inf 0, finite 1, +Inf 2, NaN 3.
func decRank(d Datum) int {
	switch d.X {
	case decNegInf:
		return 0
	case decPosInf:
		return 2
	case decNaN:
		return 3
	}
	return 1
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpUint64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// decCmpFinite compares ca*10^-sa with cb*10^-sb without allocating.
func decCmpFinite(ca int64, sa int32, cb int64, sb int32) int {
	sga, sgb := sign64(ca), sign64(cb)
	if sga != sgb {
		return cmpInt64(int64(sga), int64(sgb))
	}
	if sga == 0 {
		return 0
	}
	if sa == sb {
		return cmpInt64(ca, cb)
	}
	ua, ub := uabs(ca), uabs(cb)
	var c int
	if sa < sb {
		c = cmpMagScaled(ua, sb-sa, ub)
	} else {
		c = -cmpMagScaled(ub, sa-sb, ua)
	}
	if sga < 0 {
		return -c
	}
	return c
}

func sign64(i int64) int {
	switch {
	case i < 0:
		return -1
	case i > 0:
		return 1
	}
	return 0
}

// cmpMagScaled compares u*10^k with v (k > 0).
func cmpMagScaled(u uint64, k int32, v uint64) int {
	if u == 0 {
		return cmpUint64(0, v)
	}
	if k > 19 {
		return 1
	}
	hi, lo := bits.Mul64(u, pow10u[k])
	if hi != 0 {
		return 1
	}
	return cmpUint64(lo, v)
}

// DecCoerce applies a NUMERIC(prec, scale) type modifier as PostgreSQL's
// apply_typmod does: d is rounded to scale digits and must then have at
// most prec-scale integer digits, else 22003 "numeric field overflow".
// prec 0 means unconstrained; a negative scale is taken as 0. NaN passes;
// infinities are rejected by a constrained type.
func DecCoerce(d Datum, prec, scale int16) (Datum, error) {
	if prec <= 0 || d.X == decNaN {
		return d, nil
	}
	if scale < 0 {
		scale = 0
	}
	maxdigits := int(prec) - int(scale)
	overflow := func() error {
		e := errNumericOverflow()
		if d.X < 0 {
			return e.WithDetail("A field with precision %d, scale %d cannot hold an infinite value.", prec, scale)
		}
		if maxdigits > 0 {
			return e.WithDetail("A field with precision %d, scale %d must round to an absolute value less than 10^%d.", prec, scale, maxdigits)
		}
		return e.WithDetail("A field with precision %d, scale %d must round to an absolute value less than 1.", prec, scale)
	}
	if d.X < 0 {
		return Datum{}, overflow()
	}
	r, err := DecRound(d, int32(scale))
	if err != nil {
		return Datum{}, overflow()
	}
	if r.I == 0 {
		return r, nil
	}
	e := maxdigits + int(r.X)
	if e < 0 || (e <= 19 && uabs(r.I) >= pow10u[e]) {
		return Datum{}, overflow()
	}
	return r, nil
}
