package types

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/bits"
	"strconv"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// Decimals are KDecimal datums holding the exact value c * 10^-X, where
// X >= 0 is the display scale and c, the coefficient, is an integer of any
// size: NewDecimal(1050, 2) is 10.50 and prints so. As in PostgreSQL's
// NUMERIC, a decimal has fewer than 131072 digits before the decimal
// point (|value| < 10^131072) and at most MaxDecScale after it.
//
// The coefficient has two representations:
//
//   - the int64 form, S == "": c = I. Every coefficient that fits an int64
//     uses it, and arithmetic, comparison and encoding of such values do
//     not allocate;
//   - the big form, S != "": S holds |c| as big-endian magnitude bytes
//     without leading zero bytes (math/big's Int.Bytes) and I is +1 or -1,
//     the sign of c. Only coefficients outside the int64 range use it.
//
// So a value at a given scale has exactly one representation (every Dec*
// function normalises its result), and in both forms I has the sign of
// the value: d.I < 0, d.I == 0 and d.I > 0 test a finite decimal's sign
// whatever its form. Code outside this file should not read I as the
// coefficient; DecCoef returns it for either form.
//
// PostgreSQL's NUMERIC also has the special values NaN, Infinity and
// -Infinity. They are KDecimal datums with a negative X (see DecNaN and
// DecInf); I is zero and S empty for them. All Dec* functions handle them
// as PostgreSQL does.

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
	decMaxDisplayScale = 1000   // NUMERIC_MAX_DISPLAY_SCALE: cap on division scales
	decMinSigDigits    = 16     // NUMERIC_MIN_SIG_DIGITS
	decMaxIntDigits    = 131072 // (NUMERIC_WEIGHT_MAX+1) * DEC_DIGITS: |value| < 10^decMaxIntDigits
	decMaxExponent     = math.MaxInt32 / 2
	log2of10           = 3.321928094887362
	log10of2           = 0.30102999566398120
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

// DecIsBig reports whether the finite decimal d holds its coefficient in
// the big form (outside the int64 range).
func DecIsBig(d Datum) bool { return d.K == KDecimal && d.S != "" }

// DecCoef returns the coefficient c of the finite decimal d = c * 10^-d.X
// as a new big.Int, whichever form d uses (0 for the special values).
func DecCoef(d Datum) *big.Int {
	if d.X < 0 {
		return new(big.Int)
	}
	return decCoef(d)
}

// decCoef returns the coefficient of finite d as a new big.Int.
func decCoef(d Datum) *big.Int {
	if d.S == "" {
		return big.NewInt(d.I)
	}
	c := new(big.Int).SetBytes([]byte(d.S))
	if d.I < 0 {
		c.Neg(c)
	}
	return c
}

// DecFromBig returns the decimal c * 10^-scale. A negative scale multiplies
// c out to scale 0; a scale above MaxDecScale is rounded (half away from
// zero) to MaxDecScale. Values of 10^131072 or more give 22003 "value
// overflows numeric format". c is not modified.
func DecFromBig(c *big.Int, scale int) (Datum, error) {
	switch {
	case c.Sign() == 0:
		return NewDecimal(0, int32(min(max(scale, 0), MaxDecScale))), nil
	case scale < 0:
		if -scale > decMaxIntDigits {
			return Datum{}, errNumericFormatOverflow()
		}
		c = new(big.Int).Mul(c, bigPow10(-scale))
		scale = 0
	case scale > MaxDecScale:
		c = bigRoundMode(c, scale-MaxDecScale, roundHalfAway)
		scale = MaxDecScale
	}
	return decMake(c, int32(scale))
}

// decBigForm returns the big-form decimal with sign neg, magnitude bytes
// mag (no leading zero byte, too large for an int64) and scale.
func decBigForm(neg bool, mag []byte, scale int32) Datum {
	sg := int64(1)
	if neg {
		sg = -1
	}
	return Datum{K: KDecimal, I: sg, X: scale, S: string(mag)}
}

// decMake returns c * 10^-scale (0 <= scale <= MaxDecScale) in canonical
// form, or 22003 when |value| >= 10^131072. c is not modified.
func decMake(c *big.Int, scale int32) (Datum, error) {
	if c.IsInt64() {
		return NewDecimal(c.Int64(), scale), nil
	}
	if decTooLarge(c, scale) {
		return Datum{}, errNumericFormatOverflow()
	}
	return decBigForm(c.Sign() < 0, c.Bytes(), scale), nil
}

// decMake128 returns the decimal with sign neg, 128-bit magnitude hi:lo and
// scale in canonical form (39 digits never overflow the format).
func decMake128(neg bool, hi, lo uint64, scale int32) Datum {
	if hi == 0 {
		if c, ok := fromMag(neg, lo); ok {
			return NewDecimal(c, scale)
		}
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], hi)
	binary.BigEndian.PutUint64(b[8:], lo)
	i := 0
	for b[i] == 0 {
		i++
	}
	return decBigForm(neg, b[i:], scale)
}

// decTooLarge reports whether |c| * 10^-scale >= 10^decMaxIntDigits, the
// limit of PostgreSQL's numeric format.
func decTooLarge(c *big.Int, scale int32) bool {
	lim := decMaxIntDigits + int(scale) // |c| must stay below 10^lim
	bl := c.BitLen()
	x := float64(lim) * log2of10
	switch {
	case float64(bl) < x-1: // |c| < 2^bl < 10^lim
		return false
	case float64(bl-1) > x+1: // |c| >= 2^(bl-1) > 10^lim
		return true
	}
	var a big.Int
	return a.Abs(c).Cmp(bigPow10(lim)) >= 0
}

// decBitLen returns the bit length of |coefficient| of finite d.
func decBitLen(d Datum) int {
	if d.S == "" {
		return bits.Len64(uabs(d.I))
	}
	return 8*(len(d.S)-1) + bits.Len8(d.S[0])
}

// bigCoefDigits returns the decimal digits (ASCII) of |coefficient| of a
// big-form decimal.
func bigCoefDigits(d Datum) []byte {
	var m big.Int
	m.SetBytes([]byte(d.S))
	return m.Append(nil, 10)
}

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
// applied). Junk gives 22P02; a value of 10^131072 or more, a scale above
// MaxDecScale or an exponent beyond ±(2^31-1)/2 gives 22003.
func DecFromString(s string) (Datum, error) {
	return decParse(s, -1)
}

// decParse parses s; when round >= 0 the value is then rounded (half away
// from zero) to that many fraction digits, as a NUMERIC(p,round) column
// would. As in PostgreSQL, the limits of the numeric format apply to the
// value before that rounding.
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
	var stack [64]byte
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
			if exp < decMaxExponent {
				exp = exp*10 + int(t[i]-'0')
			}
			i++
		}
		if exp >= decMaxExponent {
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
	if scale > MaxDecScale || len(sig) > 0 && len(sig)-scale > decMaxIntDigits {
		return Datum{}, errNumericFormatOverflow()
	}
	if round >= 0 && scale > round {
		sig = roundDigits(sig, scale-round)
		scale = round
	}
	if len(sig) == 0 {
		return NewDecimal(0, int32(max(scale, 0))), nil
	}
	zeros := 0
	if scale < 0 {
		zeros, scale = -scale, 0
	}
	if len(sig)+zeros <= 19 {
		var u uint64
		for _, c := range sig {
			u = u*10 + uint64(c-'0')
		}
		u *= pow10u[zeros]
		return decMake128(neg, 0, u, int32(scale)), nil
	}
	c, _ := new(big.Int).SetString(string(sig), 10)
	if zeros > 0 {
		c.Mul(c, bigPow10(zeros))
	}
	if neg {
		c.Neg(c)
	}
	return decMake(c, int32(scale))
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
	if d.S != "" {
		return appendDecText(b, d.I < 0, bigCoefDigits(d), int(d.X))
	}
	var tmp [20]byte
	return appendDecText(b, d.I < 0, strconv.AppendUint(tmp[:0], uabs(d.I), 10), int(d.X))
}

// appendDecText appends the text of the decimal with sign neg, coefficient
// digits ds (no leading zeros, "0" for zero) and scale sc.
func appendDecText(b []byte, neg bool, ds []byte, sc int) []byte {
	if neg {
		b = append(b, '-')
	}
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
// numeric specials.
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

// DecToFloat returns the float64 nearest to d (NaN and ±Inf for the
// specials; ±Inf or 0 when a finite d is beyond the float64 range).
func DecToFloat(d Datum) float64 {
	switch d.X {
	case decNaN:
		return pgNaN
	case decPosInf:
		return math.Inf(1)
	case decNegInf:
		return math.Inf(-1)
	}
	if d.S != "" {
		f, _ := strconv.ParseFloat(DecString(d), 64)
		return f
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
	if err != nil || r.S != "" {
		return 0, pgerror.New(pgcode.NumericValueOutOfRange, "bigint out of range")
	}
	return r.I, nil
}

// bigPow10 returns 10^k as a new big.Int.
func bigPow10(k int) *big.Int {
	if k < len(pow10u) {
		return new(big.Int).SetUint64(pow10u[k])
	}
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil)
}

var bigOne = big.NewInt(1)

// bigRoundMode returns c / 10^k (k >= 0) rounded as mode says, as a new
// big.Int.
func bigRoundMode(c *big.Int, k int, mode decRounding) *big.Int {
	if k <= 0 {
		return new(big.Int).Set(c)
	}
	if float64(c.BitLen()) < float64(k-1)*log2of10 {
		// |c| < 10^(k-1): the quotient is 0 and the remainder too small
		// to round half up, so only floor and ceil can move it.
		q := new(big.Int)
		switch {
		case c.Sign() < 0 && mode == roundFloor:
			q.SetInt64(-1)
		case c.Sign() > 0 && mode == roundCeil:
			q.SetInt64(1)
		}
		return q
	}
	p := bigPow10(k)
	var q, r big.Int
	q.QuoRem(c, p, &r) // truncated: r has c's sign
	if r.Sign() == 0 {
		return &q
	}
	neg := c.Sign() < 0
	up := false
	switch mode {
	case roundHalfAway:
		r.Abs(&r)
		r.Lsh(&r, 1)
		up = r.Cmp(p) >= 0
	case roundFloor:
		up = neg
	case roundCeil:
		up = !neg
	}
	if up {
		if neg {
			q.Sub(&q, bigOne)
		} else {
			q.Add(&q, bigOne)
		}
	}
	return &q
}

// decScaled returns the coefficient of finite d times 10^k (k >= 0) as a
// new big.Int.
func decScaled(d Datum, k int32) *big.Int {
	b := decCoef(d)
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
	return sign64(d.I)
}

// DecAdd returns a + b with the larger of the two scales. 22003 when the
// sum is too large for the numeric format.
func DecAdd(a, b Datum) (Datum, error) {
	if a.X < 0 || b.X < 0 {
		return decAddSpecial(a, DecIsInf(b), b.X == decNaN), nil
	}
	if a.S == "" && b.S == "" {
		if d, ok := decAddSmall(a.I, a.X, b.I, b.X, false); ok {
			return d, nil
		}
	}
	return decAddBig(a, b, false)
}

// DecSub returns a - b with the larger of the two scales. 22003 when the
// difference is too large for the numeric format.
func DecSub(a, b Datum) (Datum, error) {
	if a.X < 0 || b.X < 0 {
		return decAddSpecial(a, -DecIsInf(b), b.X == decNaN), nil
	}
	if a.S == "" && b.S == "" {
		if d, ok := decAddSmall(a.I, a.X, b.I, b.X, true); ok {
			return d, nil
		}
	}
	return decAddBig(a, b, true)
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

// decAddSmall adds (or subtracts) two int64-form coefficients without
// allocating, except for a result that needs the big form; ok is false
// when aligning the scales overflows.
func decAddSmall(ca int64, sa int32, cb int64, sb int32, sub bool) (Datum, bool) {
	s := max(sa, sb)
	xa, ok1 := scaleUp(ca, s-sa)
	xb, ok2 := scaleUp(cb, s-sb)
	if !ok1 || !ok2 {
		return Datum{}, false
	}
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
		return NewDecimal(r, s), true
	}
	// Overflow means both terms push the same way: the magnitude is the
	// sum of the magnitudes, with xa's sign.
	lo, hi := bits.Add64(uabs(xa), uabs(xb), 0)
	return decMake128(xa < 0, hi, lo, s), true
}

func decAddBig(a, b Datum, sub bool) (Datum, error) {
	s := max(a.X, b.X)
	A := decScaled(a, s-a.X)
	B := decScaled(b, s-b.X)
	if sub {
		A.Sub(A, B)
	} else {
		A.Add(A, B)
	}
	return decMake(A, s)
}

// DecMul returns a * b with the sum of the scales (rounded half away from
// zero to MaxDecScale when that is larger). 22003 when the product is too
// large for the numeric format.
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
	if a.S == "" && b.S == "" && s <= MaxDecScale {
		hi, lo := bits.Mul64(uabs(a.I), uabs(b.I))
		return decMake128((a.I < 0) != (b.I < 0), hi, lo, s), nil
	}
	A := decCoef(a)
	A.Mul(A, decCoef(b))
	if s > MaxDecScale {
		A = bigRoundMode(A, int(s-MaxDecScale), roundHalfAway)
		s = MaxDecScale
	}
	return decMake(A, s)
}

// decWeightFirst returns the base-10000 weight and the first base-10000
// digit of finite d, as PostgreSQL's NumericVar would hold them (0, 0 for
// zero).
func decWeightFirst(d Datum) (weight int, first uint64) {
	if d.S == "" {
		return decWeightFirstSmall(d.I, d.X)
	}
	ds := bigCoefDigits(d)
	n := len(ds)
	e10 := n - 1 - int(d.X)
	w := int(floorDiv(int64(e10), 4))
	for k := 0; k < e10-4*w+1; k++ { // the first group's 1 to 4 digits
		first *= 10
		if k < n {
			first += uint64(ds[k] - '0')
		}
	}
	return w, first
}

// decWeightFirstSmall is decWeightFirst for an int64 coefficient c at
// scale s.
func decWeightFirstSmall(c int64, s int32) (weight int, first uint64) {
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
	w1, f1 := decWeightFirst(a)
	w2, f2 := decWeightFirst(b)
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
// PostgreSQL's select_div_scale picks: at least 16 significant digits and
// at least the scales of a and b, at most 1000. Division by zero gives
// 22012; a quotient too large for the numeric format 22003.
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
	e := rscale - a.X + b.X // >= 0
	if a.S == "" && b.S == "" && e <= 19 {
		// Fast path: a 128-bit numerator and a 64-bit quotient.
		neg := (a.I < 0) != (b.I < 0)
		ua, ub := uabs(a.I), uabs(b.I)
		hi, lo := bits.Mul64(ua, pow10u[e])
		if hi < ub {
			q, r := bits.Div64(hi, lo, ub)
			if r >= ub-r {
				q++
				if q == 0 {
					return decMake128(neg, 1, 0, rscale), nil
				}
			}
			return decMake128(neg, 0, q, rscale), nil
		}
	}
	q := bigDivRound(decScaled(a, e), decCoef(b))
	return decMake(q, rscale)
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
				q.Sub(&q, bigOne)
			} else {
				q.Add(&q, bigOne)
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
	if a.S == "" && b.S == "" {
		xa, ok1 := scaleUp(a.I, s-a.X)
		xb, ok2 := scaleUp(b.I, s-b.X)
		if ok1 && ok2 {
			return NewDecimal(xa%xb, s), nil
		}
	}
	A := decScaled(a, s-a.X)
	A.Rem(A, decScaled(b, s-b.X))
	return decMake(A, s)
}

// mag2p63 is the big-form magnitude of 2^63 (-2^63 is math.MinInt64).
const mag2p63 = "\x80\x00\x00\x00\x00\x00\x00\x00"

// DecNeg returns -d.
func DecNeg(d Datum) (Datum, error) {
	switch d.X {
	case decNaN:
		return d, nil
	case decPosInf:
		return DecInf(true), nil
	case decNegInf:
		return DecInf(false), nil
	}
	if d.S == "" {
		if d.I == math.MinInt64 {
			return decMake128(false, 0, 1<<63, d.X), nil
		}
		return NewDecimal(-d.I, d.X), nil
	}
	if d.I > 0 && d.S == mag2p63 {
		return NewDecimal(math.MinInt64, d.X), nil
	}
	d.I = -d.I
	return d, nil
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
// the decimal point (round(1234.5, -1) = 1230). scale is first clamped to
// [-131073, MaxDecScale] as in PostgreSQL; the result scale is
// max(scale, 0), padding with zeros when that is larger than d's.
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
	scale = max(min(scale, MaxDecScale), -decMaxIntDigits-1)
	rs := max(scale, 0)
	if scale >= d.X {
		return decRaiseScale(d, rs), nil
	}
	k := d.X - scale
	if d.S == "" && (scale >= 0 || -scale <= 19) {
		u := uabs(d.I)
		neg := d.I < 0
		var q uint64
		up := false
		if k > 19 {
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
			q++ // q < 2^63 here: no wrap
		}
		var hi uint64
		if scale < 0 {
			hi, q = bits.Mul64(q, pow10u[-scale])
		}
		return decMake128(neg, hi, q, rs), nil
	}
	q := bigRoundMode(decCoef(d), int(k), mode)
	if scale < 0 && q.Sign() != 0 {
		q.Mul(q, bigPow10(int(-scale)))
	}
	return decMake(q, rs)
}

// decRaiseScale pads d with trailing zeros up to scale target.
func decRaiseScale(d Datum, target int32) Datum {
	k := target - d.X
	if k <= 0 {
		return d
	}
	if d.S == "" {
		if d.I == 0 {
			return NewDecimal(0, target)
		}
		if k <= 19 {
			hi, lo := bits.Mul64(uabs(d.I), pow10u[k])
			return decMake128(d.I < 0, hi, lo, target)
		}
	}
	r, _ := decMake(decScaled(d, k), target) // same value: cannot overflow
	return r
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
	if a.S == "" && b.S == "" {
		return decCmpFinite(a.I, a.X, b.I, b.X)
	}
	return decCmpBig(a, b)
}

// decCmpBig compares two finite decimals of which one at least has the
// big form.
func decCmpBig(a, b Datum) int {
	sga, sgb := sign64(a.I), sign64(b.I)
	if sga != sgb {
		return cmpInt64(int64(sga), int64(sgb))
	}
	if sga == 0 {
		return 0
	}
	// log10 of the magnitude lies in [(bits-1)*log10(2) - scale,
	// bits*log10(2) - scale): decide by the bit lengths when the ranges
	// are apart.
	la, lb := decBitLen(a), decBitLen(b)
	loA, hiA := float64(la-1)*log10of2-float64(a.X), float64(la)*log10of2-float64(a.X)
	loB, hiB := float64(lb-1)*log10of2-float64(b.X), float64(lb)*log10of2-float64(b.X)
	c := 0
	switch {
	case hiA < loB-1e-9:
		c = -1
	case hiB < loA-1e-9:
		c = 1
	default:
		s := max(a.X, b.X)
		A, B := decScaled(a, s-a.X), decScaled(b, s-b.X)
		return A.Cmp(B)
	}
	return c * sga
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
	e := maxdigits + int(r.X) // |coefficient| must stay below 10^e
	switch {
	case e < 0:
		return Datum{}, overflow()
	case r.S == "":
		if e <= 19 && uabs(r.I) >= pow10u[e] {
			return Datum{}, overflow()
		}
	default:
		c := decCoef(r)
		if c.Abs(c).Cmp(bigPow10(e)) >= 0 {
			return Datum{}, overflow()
		}
	}
	return r, nil
}
