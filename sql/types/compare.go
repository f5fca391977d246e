package types

import (
	"math"
	"math/big"
	"math/bits"
	"strings"
)

// Comparison classes, in sort order. Datums of different classes (which
// well-typed columns never mix) sort by class so that Compare is total.
const (
	classNull = iota
	classBool
	classNumber   // KInt, KFloat, KDecimal
	classString   // KString
	classBytes    // KBytes
	classDateTime // KDate, KTimestamp, KTimestampTZ
	classTime     // KTime
	classInterval // KInterval
	classJSON     // KJSON
	classArray    // KArray
	classUUID     // KUUID
)

func kindClass(k Kind) int {
	switch k {
	case KNull:
		return classNull
	case KBool:
		return classBool
	case KInt, KFloat, KDecimal:
		return classNumber
	case KString:
		return classString
	case KBytes:
		return classBytes
	case KDate, KTimestamp, KTimestampTZ:
		return classDateTime
	case KTime:
		return classTime
	case KInterval:
		return classInterval
	case KJSON:
		return classJSON
	case KUUID:
		return classUUID
	}
	return classArray
}

// Compare returns -1, 0 or +1 as a sorts before, equal to or after b in
// the total order used for sorting, grouping and min/max:
//   - NULL sorts before everything and equals NULL;
//   - numbers compare exactly by value across KInt, KFloat and KDecimal;
//     NaN equals NaN and sorts above +Infinity, -0 equals 0;
//   - strings, bytes and JSON text compare bytewise;
//   - dates, timestamps and timestamptz compare as instants (a date is
//     its midnight); times by I;
//   - intervals by total duration as PostgreSQL does (a month is 30 days,
//     a day 24 hours), so '1 mon' equals '30 days';
//   - bools false < true; arrays element by element, then by length.
//
// It does not allocate except when comparing a float with a decimal of
// scale above 27 that rounds to the same float, or a decimal whose
// coefficient does not fit an int64 (the big form) with a number it is
// close to.
func Compare(a, b Datum) int {
	if a.K == b.K {
		switch a.K {
		case KNull:
			return 0
		case KBool, KInt, KDate, KTime, KTimestamp, KTimestampTZ:
			return cmpInt64(a.I, b.I)
		case KFloat:
			return cmpFloat(a.Float(), b.Float())
		case KDecimal:
			return DecCmp(a, b)
		case KString, KBytes, KUUID:
			return strings.Compare(a.S, b.S)
		case KJSON:
			return compareJSONText(a.S, b.S)
		case KInterval:
			return cmpInterval(a, b)
		case KArray:
			return cmpArray(a.Elems(), b.Elems())
		}
		return 0
	}
	ca, cb := kindClass(a.K), kindClass(b.K)
	if ca != cb {
		return cmpInt64(int64(ca), int64(cb))
	}
	switch ca {
	case classNumber:
		return cmpNumbers(a, b)
	case classDateTime:
		switch {
		case a.K == KDate:
			return cmpDateTs(a.I, b.I)
		case b.K == KDate:
			return -cmpDateTs(b.I, a.I)
		}
		return cmpInt64(a.I, b.I) // timestamp vs timestamptz (UTC)
	}
	return 0
}

// Equal reports whether Compare(a, b) == 0.
func Equal(a, b Datum) bool {
	if a.K == b.K {
		switch a.K {
		case KNull:
			return true
		case KBool, KInt, KDate, KTime, KTimestamp, KTimestampTZ:
			return a.I == b.I
		case KString, KBytes, KUUID:
			return a.S == b.S
		case KJSON:
			return a.S == b.S || compareJSONText(a.S, b.S) == 0
		}
	}
	return Compare(a, b) == 0
}

// floatRank orders floats: -Inf 0, finite 1, +Inf 2, NaN 3 (as decRank).
func floatRank(f float64) int {
	switch {
	case f != f:
		return 3
	case math.IsInf(f, 1):
		return 2
	case math.IsInf(f, -1):
		return 0
	}
	return 1
}

// CompareFloat orders floats as Postgres does: NaN equals NaN and sorts
// above every other value; -0 equals 0.
func CompareFloat(a, b float64) int { return cmpFloat(a, b) }

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	}
	an, bn := a != a, b != b
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	}
	return -1
}

// cmpNumbers compares two numbers of different kinds exactly.
func cmpNumbers(a, b Datum) int {
	switch a.K {
	case KInt:
		if b.K == KFloat {
			return cmpIntFloat(a.I, b.Float())
		}
		return -cmpDecInt(b, a.I)
	case KFloat:
		if b.K == KInt {
			return -cmpIntFloat(b.I, a.Float())
		}
		return -cmpDecFloat(b, a.Float())
	}
	// a is a decimal
	if b.K == KInt {
		return cmpDecInt(a, b.I)
	}
	return cmpDecFloat(a, b.Float())
}

// cmpIntFloat compares an int64 with a float64 exactly.
func cmpIntFloat(i int64, f float64) int {
	switch {
	case f != f:
		return -1
	case f >= 0x1p63:
		return -1
	case f < -0x1p63:
		return 1
	}
	t := int64(f)
	if c := cmpInt64(i, t); c != 0 {
		return c
	}
	fr := f - float64(t)
	switch {
	case fr > 0:
		return -1
	case fr < 0:
		return 1
	}
	return 0
}

// cmpDecInt compares a decimal with an int64.
func cmpDecInt(d Datum, i int64) int {
	if r := decRank(d); r != 1 {
		return cmpInt64(int64(r), 1)
	}
	if d.S != "" {
		return decCmpBig(d, NewDecimal(i, 0))
	}
	return decCmpFinite(d.I, d.X, i, 0)
}

// cmpDecFloat compares a decimal with a float64 exactly.
func cmpDecFloat(d Datum, f float64) int {
	rd, rf := decRank(d), floatRank(f)
	if rd != rf {
		return cmpInt64(int64(rd), int64(rf))
	}
	if rd != 1 {
		return 0
	}
	sd, sf := sign64(d.I), 0
	switch {
	case f > 0:
		sf = 1
	case f < 0:
		sf = -1
	}
	if sd != sf {
		return cmpInt64(int64(sd), int64(sf))
	}
	if sd == 0 {
		return 0
	}
	var c int
	if d.S != "" {
		c = cmpBigDecFloat(new(big.Int).SetBytes([]byte(d.S)), d.X, math.Abs(f))
	} else {
		c = cmpMagDecFloat(uabs(d.I), d.X, math.Abs(f))
	}
	if sd < 0 {
		return -c
	}
	return c
}

// pow5u[k] = 5^k for k <= 27.
var pow5u = func() (p [28]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 5
	}
	return
}()

// cmpMagDecFloat compares u*10^-s with the positive finite float f.
func cmpMagDecFloat(u uint64, s int32, f float64) int {
	fr, exp := math.Frexp(f) // f = fr * 2^exp, fr in [0.5, 1)
	m := uint64(fr * (1 << 53))
	e := exp - 53 // f = m * 2^e
	if exp > 64 {
		return -1 // f >= 2^64 > u*10^-s
	}
	if s > 27 {
		// Rare: exact comparison with big integers.
		return cmpBigDecFloat(new(big.Int).SetUint64(u), s, f)
	}
	// Compare u with M * 2^k where M = m*5^s and k = e+s.
	mhi, mlo := bits.Mul64(m, pow5u[s])
	k := e + int(s)
	mlen := bitLen128(mhi, mlo)
	if k >= 0 {
		if mlen+k > 64 {
			return -1
		}
		return cmpUint64(u, mlo<<uint(k))
	}
	j := -k
	ulen := bits.Len64(u)
	if ulen+j > 128 {
		return 1
	}
	uhi, ulo := shl128(0, u, uint(j))
	return cmp128(uhi, ulo, mhi, mlo)
}

// cmpBigDecFloat compares u*10^-s (u >= 0, modified) with the positive
// finite float f exactly.
func cmpBigDecFloat(u *big.Int, s int32, f float64) int {
	fr, exp := math.Frexp(f) // f = fr * 2^exp, fr in [0.5, 1)
	m := uint64(fr * (1 << 53))
	e := exp - 53 // f = m * 2^e
	// u * 10^-s <=> m * 2^e  <=>  u * 2^-e <=> m * 10^s
	r := new(big.Int).SetUint64(m)
	if s > 0 {
		r.Mul(r, bigPow10(int(s)))
	}
	if e < 0 {
		u.Lsh(u, uint(-e))
	} else {
		r.Lsh(r, uint(e))
	}
	return u.Cmp(r)
}

func bitLen128(hi, lo uint64) int {
	if hi != 0 {
		return 64 + bits.Len64(hi)
	}
	return bits.Len64(lo)
}

// shl128 shifts the 128-bit value hi:lo left by n < 128 bits.
func shl128(hi, lo uint64, n uint) (uint64, uint64) {
	switch {
	case n == 0:
		return hi, lo
	case n >= 64:
		return lo << (n - 64), 0
	}
	return hi<<n | lo>>(64-n), lo << n
}

func cmp128(ahi, alo, bhi, blo uint64) int {
	if c := cmpUint64(ahi, bhi); c != 0 {
		return c
	}
	return cmpUint64(alo, blo)
}

// cmpDateTs compares a date (days) with a timestamp (microseconds).
func cmpDateTs(days, us int64) int {
	rd, rt := infRank(days), infRank(us)
	if rd != rt || rd != 1 {
		return cmpInt64(int64(rd), int64(rt))
	}
	if c := cmpInt64(days, floorDiv(us, usPerDay)); c != 0 {
		return c
	}
	if floorMod(us, usPerDay) > 0 {
		return -1
	}
	return 0
}

// infRank orders -infinity 0, finite 1, infinity 2 for date/time I values.
func infRank(v int64) int {
	switch v {
	case NegInfinityI:
		return 0
	case InfinityI:
		return 2
	}
	return 1
}

// intervalTotal returns the interval's total duration in microseconds
// (months as 30 days, days as 24 hours) as a signed 128-bit hi:lo.
func intervalTotal(d Datum) (int64, uint64) {
	days := int64(d.M)*30 + int64(d.X)
	hi, lo := bits.Mul64(uabs(days), uint64(usPerDay))
	if days < 0 {
		hi, lo = neg128(hi, lo)
	}
	// add sign-extended I
	ihi := uint64(0)
	if d.I < 0 {
		ihi = math.MaxUint64
	}
	var carry uint64
	lo, carry = bits.Add64(lo, uint64(d.I), 0)
	hi, _ = bits.Add64(hi, ihi, carry)
	return int64(hi), lo
}

func neg128(hi, lo uint64) (uint64, uint64) {
	lo = ^lo + 1
	hi = ^hi
	if lo == 0 {
		hi++
	}
	return hi, lo
}

func cmpInterval(a, b Datum) int {
	ahi, alo := intervalTotal(a)
	bhi, blo := intervalTotal(b)
	if c := cmpInt64(ahi, bhi); c != 0 {
		return c
	}
	return cmpUint64(alo, blo)
}

func cmpArray(a, b []Datum) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if c := Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmpInt64(int64(len(a)), int64(len(b)))
}

// Hash tags keep values of different classes apart.
const (
	hashNull uint64 = iota + 0x51
	hashBool
	hashNum
	hashFloat
	hashDec
	hashString
	hashBytes
	hashDateTime
	hashDateOnly
	hashTime
	hashInterval
	hashJSON
	hashArray
	hashUUID
)

// mix folds the word v into the hash h (the MurmurHash3 x64 block step).
func mix(h, v uint64) uint64 {
	v *= 0x87c37b91114253d5
	v = bits.RotateLeft64(v, 31)
	v *= 0x4cf5ad432745937f
	h ^= v
	return bits.RotateLeft64(h, 27)*5 + 0x52dce729
}

// fmix finalises a hash (MurmurHash3's fmix64).
func fmix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

func hashStr(h uint64, s string) uint64 {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		v := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		h = mix(h, v)
	}
	var v uint64
	for k := 0; i+k < len(s); k++ {
		v |= uint64(s[i+k]) << (8 * k)
	}
	h = mix(h, v)
	return mix(h, uint64(len(s)))
}

// Hash folds d into the hash h and returns the result. It is consistent
// with Equal: equal numbers hash equal whatever their kinds and forms
// (integral values in the int64 range hash as integers, other exactly
// representable binary fractions as floats, anything else as the
// normalised decimal), dates hash as their midnight timestamps, intervals
// by total duration. It does not allocate, except for decimals in the big
// form.
func Hash(h uint64, d Datum) uint64 {
	switch d.K {
	case KNull:
		h = mix(h, hashNull)
	case KBool:
		h = mix(mix(h, hashBool), uint64(d.I))
	case KInt:
		h = mix(mix(h, hashNum), uint64(d.I))
	case KFloat:
		h = hashFloatVal(h, d.Float())
	case KDecimal:
		h = hashDecimal(h, d)
	case KString:
		h = hashStr(mix(h, hashString), d.S)
	case KBytes:
		h = hashStr(mix(h, hashBytes), d.S)
	case KUUID:
		h = hashStr(mix(h, hashUUID), d.S)
	case KJSON:
		h = hashJSONText(mix(h, hashJSON), d.S)
	case KDate:
		switch {
		case d.I == InfinityI || d.I == NegInfinityI:
			h = mix(mix(h, hashDateTime), uint64(d.I))
		case d.I > math.MaxInt64/usPerDay || d.I < math.MinInt64/usPerDay:
			h = mix(mix(h, hashDateOnly), uint64(d.I))
		default:
			h = mix(mix(h, hashDateTime), uint64(d.I*usPerDay))
		}
	case KTimestamp, KTimestampTZ:
		h = mix(mix(h, hashDateTime), uint64(d.I))
	case KTime:
		h = mix(mix(h, hashTime), uint64(d.I))
	case KInterval:
		hi, lo := intervalTotal(d)
		h = mix(mix(mix(h, hashInterval), uint64(hi)), lo)
	case KArray:
		h = mix(mix(h, hashArray), uint64(len(d.Elems())))
		for _, e := range d.Elems() {
			h = Hash(h, e)
		}
	}
	return fmix(h)
}

// hashFloatVal hashes a float: integral values in int64 range as integers.
func hashFloatVal(h uint64, f float64) uint64 {
	switch {
	case f != f:
		return mix(h, hashFloat)
	case f == 0:
		return mix(mix(h, hashNum), 0)
	case f >= -0x1p63 && f < 0x1p63 && f == math.Trunc(f):
		return mix(mix(h, hashNum), uint64(int64(f)))
	}
	return mix(mix(h, hashFloat), math.Float64bits(f))
}

// hashDecimal hashes a decimal consistently with ints and floats.
func hashDecimal(h uint64, d Datum) uint64 {
	switch d.X {
	case decNaN:
		return hashFloatVal(h, math.NaN())
	case decPosInf:
		return hashFloatVal(h, math.Inf(1))
	case decNegInf:
		return hashFloatVal(h, math.Inf(-1))
	}
	if d.S != "" {
		return hashBigDecimal(h, d)
	}
	c, s := d.I, d.X
	for s > 0 && c%10 == 0 {
		c /= 10
		s--
	}
	if s == 0 {
		return mix(mix(h, hashNum), uint64(c))
	}
	// c*10^-s with c not a multiple of 10: a float can equal it only if
	// 5^s divides c and c/5^s fits the 53-bit mantissa.
	if s <= 27 && c%int64(pow5u[s]) == 0 {
		q := c / int64(pow5u[s])
		if uabs(q) < 1<<53 {
			return hashFloatVal(h, math.Ldexp(float64(q), -int(s)))
		}
	}
	return mix(mix(mix(h, hashDec), uint64(c)), uint64(s))
}

// hashBigDecimal hashes a big-form decimal. Stripped of trailing
// fraction zeros it may fit an int64 again (1.000...000), and then hashes
// as that decimal does; else it hashes as a float when a float64 holds it
// exactly, or by its digits and scale.
func hashBigDecimal(h uint64, d Datum) uint64 {
	ds := bigCoefDigits(d)
	s := int(d.X)
	n := len(ds)
	for s > 0 && ds[n-1] == '0' {
		n--
		s--
	}
	ds = ds[:n]
	neg := d.I < 0
	if n <= 19 {
		var u uint64
		for _, c := range ds {
			u = u*10 + uint64(c-'0')
		}
		if c, ok := fromMag(neg, u); ok {
			return hashDecimal(h, NewDecimal(c, int32(s)))
		}
	}
	if f, ok := bigDecExactFloat(ds, s); ok {
		if neg {
			f = -f
		}
		return hashFloatVal(h, f)
	}
	h = mix(h, hashDec)
	if neg {
		h = mix(h, 1)
	}
	return mix(hashStr(h, string(ds)), uint64(s))
}

// bigDecExactFloat returns the float64 equal to the decimal with digits ds
// (no trailing zero when s > 0) and scale s, if there is one.
func bigDecExactFloat(ds []byte, s int) (float64, bool) {
	c, _ := new(big.Int).SetString(string(ds), 10)
	if s > 0 {
		// c*10^-s with c not a multiple of 10 is a binary fraction only
		// if 5^s divides c, and then c/5^s must fit the mantissa.
		if float64(c.BitLen()) > 54+float64(s)*2.321928094887362 {
			return 0, false
		}
		p := new(big.Int).Exp(big.NewInt(5), big.NewInt(int64(s)), nil)
		var r big.Int
		c.QuoRem(c, p, &r)
		if r.Sign() != 0 {
			return 0, false
		}
	}
	f := new(big.Float).SetInt(c)
	f.SetMantExp(f, -s)
	v, acc := f.Float64()
	if acc != big.Exact || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}
