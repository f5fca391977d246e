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

// Key encoding: every value starts with a tag byte, and the encodings of
// values of one kind compare bytewise as Compare orders the values. Each
// encoding is self-delimiting, so keys made of several values concatenate.
// Equal values give equal bytes (1.0 and 1.00, -0 and 0, every NaN, '1 mon'
// and '30 days'), so decoding returns an equal value that may differ in
// representation: decimals come back with trailing zeros stripped and
// intervals as days and microseconds (months only when the days would not
// fit an int32).
//
// Descending keys are the bitwise complement of ascending ones: they sort
// in exactly the reverse order (so NULL sorts last).
const (
	keyArrayEnd  = 0x00 // ends an array's elements
	keyNull      = 0x05
	keyFalse     = 0x10
	keyTrue      = 0x11
	keyInt       = 0x20
	keyFloat     = 0x28
	keyDecNegInf = 0x30
	keyDecNeg    = 0x31
	keyDecZero   = 0x32
	keyDecPos    = 0x33
	keyDecPosInf = 0x34
	keyDecNaN    = 0x35
	keyString    = 0x40
	keyBytes     = 0x48
	keyUUID      = 0x49 // then the 16 bytes
	keyDate      = 0x50
	keyTimestamp = 0x51
	keyTSTZ      = 0x52
	keyTime      = 0x58
	keyInterval  = 0x60
	keyJSON      = 0x68
	keyArray     = 0x70
)

// Escapes inside string keys.
const (
	keyEscape     = 0x00
	keyEscaped00  = 0xFF
	keyTerminator = 0x01
)

// maxKeyDepth bounds array nesting when decoding.
const maxKeyDepth = 32

// AppendKey appends the ascending order-preserving key encoding of d to
// buf. It allocates only to grow buf.
func AppendKey(buf []byte, d Datum) []byte {
	switch d.K {
	case KNull:
		return append(buf, keyNull)
	case KBool:
		if d.I != 0 {
			return append(buf, keyTrue)
		}
		return append(buf, keyFalse)
	case KInt:
		return appendKeyUint64(append(buf, keyInt), uint64(d.I)^(1<<63))
	case KFloat:
		return appendKeyUint64(append(buf, keyFloat), floatKeyBits(d.Float()))
	case KDecimal:
		return appendKeyDecimal(buf, d)
	case KString:
		return appendKeyString(append(buf, keyString), d.S)
	case KBytes:
		return appendKeyString(append(buf, keyBytes), d.S)
	case KUUID:
		return append(append(buf, keyUUID), d.S...)
	case KJSON:
		// Keys are equal when the values are (jsonb's '1.0' = '1'), so
		// numbers are keyed in their shortest form; a decoded key prints
		// them that way.
		return appendKeyString(append(buf, keyJSON), JSONKeyText(d.S))
	case KDate:
		return appendKeyUint64(append(buf, keyDate), uint64(d.I)^(1<<63))
	case KTimestamp:
		return appendKeyUint64(append(buf, keyTimestamp), uint64(d.I)^(1<<63))
	case KTimestampTZ:
		return appendKeyUint64(append(buf, keyTSTZ), uint64(d.I)^(1<<63))
	case KTime:
		return appendKeyUint64(append(buf, keyTime), uint64(d.I)^(1<<63))
	case KInterval:
		hi, lo := intervalTotal(d)
		buf = appendKeyUint64(append(buf, keyInterval), uint64(hi)^(1<<63))
		return appendKeyUint64(buf, lo)
	case KArray:
		buf = append(buf, keyArray)
		for _, e := range d.Elems() {
			buf = AppendKey(buf, e)
		}
		return append(buf, keyArrayEnd)
	}
	return append(buf, keyNull)
}

// AppendKeyDesc appends the descending key encoding of d: the complement
// of AppendKey's bytes. Decode it with DecodeKeyDesc.
func AppendKeyDesc(buf []byte, d Datum) []byte {
	start := len(buf)
	buf = AppendKey(buf, d)
	for i := start; i < len(buf); i++ {
		buf[i] = ^buf[i]
	}
	return buf
}

func appendKeyUint64(buf []byte, v uint64) []byte {
	return binary.BigEndian.AppendUint64(buf, v)
}

// floatKeyBits maps a float to bits that sort as the floats do (-0 and 0
// equal, all NaNs equal and last).
func floatKeyBits(f float64) uint64 {
	if f != f {
		return math.MaxUint64
	}
	if f == 0 {
		f = 0
	}
	b := math.Float64bits(f)
	if b&(1<<63) != 0 {
		return ^b
	}
	return b | 1<<63
}

func floatFromKeyBits(b uint64) float64 {
	if b == math.MaxUint64 {
		return math.NaN()
	}
	if b&(1<<63) != 0 {
		return math.Float64frombits(b &^ (1 << 63))
	}
	return math.Float64frombits(^b)
}

// appendKeyString appends s with 0x00 escaped as 0x00 0xFF, then 0x00 0x01.
func appendKeyString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == keyEscape {
			buf = append(buf, keyEscape, keyEscaped00)
			continue
		}
		buf = append(buf, s[i])
	}
	return append(buf, keyEscape, keyTerminator)
}

// appendKeyDecimal encodes a decimal as tag (by sign class), an exponent
// E and base-100 digit bytes, where the value is 0.d1d2... * 10^E with
// trailing zeros stripped. E takes 2 bytes, E+0x8000, when that is below
// 0xFFFF, else 0xFFFF and 4 bytes of E (which sorts after every 2-byte
// exponent). Digit pairs are bytes 1..100 and a 0 ends them, so a shorter
// digit string sorts first. Negative values complement everything after
// the tag. Both coefficient forms encode alike.
func appendKeyDecimal(buf []byte, d Datum) []byte {
	switch d.X {
	case decNaN:
		return append(buf, keyDecNaN)
	case decPosInf:
		return append(buf, keyDecPosInf)
	case decNegInf:
		return append(buf, keyDecNegInf)
	}
	if d.I == 0 {
		return append(buf, keyDecZero)
	}
	neg := d.I < 0
	var tmp [20]byte
	var ds []byte
	if d.S != "" {
		ds = bigCoefDigits(d)
	} else {
		ds = strconv.AppendUint(tmp[:0], uabs(d.I), 10)
	}
	s := int(d.X)
	n := len(ds)
	for ds[n-1] == '0' {
		n--
		s--
	}
	e := n - s
	if neg {
		buf = append(buf, keyDecNeg)
	} else {
		buf = append(buf, keyDecPos)
	}
	start := len(buf)
	if e+0x8000 < 0xFFFF {
		buf = binary.BigEndian.AppendUint16(buf, uint16(e+0x8000))
	} else {
		buf = binary.BigEndian.AppendUint32(append(buf, 0xFF, 0xFF), uint32(e))
	}
	for k := 0; k < n; k += 2 {
		lo := byte(0)
		if k+1 < n {
			lo = ds[k+1] - '0'
		}
		buf = append(buf, (ds[k]-'0')*10+lo+1)
	}
	buf = append(buf, 0)
	if neg {
		for i := start; i < len(buf); i++ {
			buf[i] = ^buf[i]
		}
	}
	return buf
}

func errCorruptKey(format string, args ...any) error {
	return pgerror.New(pgcode.DataCorrupted, "corrupt key encoding: "+format, args...)
}

// keyReader reads a key whose bytes are xored with mask (0 ascending,
// 0xFF descending).
type keyReader struct {
	b    []byte
	i    int
	mask byte
}

func (r *keyReader) byte() (byte, bool) {
	if r.i >= len(r.b) {
		return 0, false
	}
	c := r.b[r.i] ^ r.mask
	r.i++
	return c, true
}

func (r *keyReader) uint64() (uint64, bool) {
	if len(r.b)-r.i < 8 {
		return 0, false
	}
	v := binary.BigEndian.Uint64(r.b[r.i:])
	if r.mask != 0 {
		v = ^v
	}
	r.i += 8
	return v, true
}

// n reads n bytes, unmasked.
func (r *keyReader) n(n int) ([]byte, bool) {
	if len(r.b)-r.i < n {
		return nil, false
	}
	out := make([]byte, n)
	for j := range out {
		out[j] = r.b[r.i+j] ^ r.mask
	}
	r.i += n
	return out, true
}

// DecodeKey decodes one value encoded by AppendKey from the front of buf
// and returns it with the rest of buf. Corrupt input gives XX001.
func DecodeKey(buf []byte) (Datum, []byte, error) {
	r := keyReader{b: buf}
	d, err := r.decode(0)
	if err != nil {
		return Datum{}, nil, err
	}
	return d, buf[r.i:], nil
}

// DecodeKeyDesc decodes one value encoded by AppendKeyDesc.
func DecodeKeyDesc(buf []byte) (Datum, []byte, error) {
	r := keyReader{b: buf, mask: 0xFF}
	d, err := r.decode(0)
	if err != nil {
		return Datum{}, nil, err
	}
	return d, buf[r.i:], nil
}

func (r *keyReader) decode(depth int) (Datum, error) {
	tag, ok := r.byte()
	if !ok {
		return Datum{}, errCorruptKey("empty key")
	}
	short := func() (Datum, error) { return Datum{}, errCorruptKey("truncated value (tag 0x%02x)", tag) }
	switch tag {
	case keyNull:
		return Null, nil
	case keyFalse:
		return NewBool(false), nil
	case keyTrue:
		return NewBool(true), nil
	case keyInt, keyDate, keyTimestamp, keyTSTZ, keyTime:
		v, ok := r.uint64()
		if !ok {
			return short()
		}
		i := int64(v ^ (1 << 63))
		switch tag {
		case keyInt:
			return NewInt(i), nil
		case keyDate:
			return NewDate(i), nil
		case keyTimestamp:
			return NewTimestamp(i), nil
		case keyTSTZ:
			return NewTimestampTZ(i), nil
		}
		return NewTime(i), nil
	case keyFloat:
		v, ok := r.uint64()
		if !ok {
			return short()
		}
		return NewFloat(floatFromKeyBits(v)), nil
	case keyDecNaN:
		return DecNaN(), nil
	case keyDecPosInf:
		return DecInf(false), nil
	case keyDecNegInf:
		return DecInf(true), nil
	case keyDecZero:
		return NewDecimal(0, 0), nil
	case keyDecPos, keyDecNeg:
		return r.decimal(tag == keyDecNeg)
	case keyUUID:
		b, ok := r.n(16)
		if !ok {
			return short()
		}
		return Datum{K: KUUID, S: string(b)}, nil
	case keyString, keyBytes, keyJSON:
		s, err := r.str()
		if err != nil {
			return Datum{}, err
		}
		switch tag {
		case keyString:
			return NewString(s), nil
		case keyBytes:
			return Datum{K: KBytes, S: s}, nil
		}
		return NewJSON(s), nil
	case keyInterval:
		hi, ok1 := r.uint64()
		lo, ok2 := r.uint64()
		if !ok1 || !ok2 {
			return short()
		}
		d, ok := intervalFromTotal(int64(hi^(1<<63)), lo)
		if !ok {
			return Datum{}, errCorruptKey("interval out of range")
		}
		return d, nil
	case keyArray:
		if depth >= maxKeyDepth {
			return Datum{}, errCorruptKey("arrays nested too deeply")
		}
		elems := []Datum{}
		for {
			if r.i >= len(r.b) {
				return short()
			}
			if r.b[r.i]^r.mask == keyArrayEnd {
				r.i++
				return Datum{K: KArray, A: NewElems(elems)}, nil
			}
			e, err := r.decode(depth + 1)
			if err != nil {
				return Datum{}, err
			}
			elems = append(elems, e)
		}
	}
	return Datum{}, errCorruptKey("unknown tag 0x%02x", tag)
}

// str reads an escaped, terminated string.
func (r *keyReader) str() (string, error) {
	// Fast path: find the terminator with no escapes in between.
	start := r.i
	for j := start; j+1 < len(r.b); j++ {
		if r.b[j]^r.mask != keyEscape {
			continue
		}
		if r.b[j+1]^r.mask == keyTerminator && r.mask == 0 {
			r.i = j + 2
			return string(r.b[start:j]), nil
		}
		break
	}
	out := make([]byte, 0, 16)
	for {
		c, ok := r.byte()
		if !ok {
			return "", errCorruptKey("unterminated string")
		}
		if c != keyEscape {
			out = append(out, c)
			continue
		}
		c2, ok := r.byte()
		if !ok {
			return "", errCorruptKey("unterminated string")
		}
		switch c2 {
		case keyTerminator:
			return string(out), nil
		case keyEscaped00:
			out = append(out, 0)
		default:
			return "", errCorruptKey("bad string escape 0x%02x", c2)
		}
	}
}

// decimal reads the exponent and digit bytes of a nonzero decimal.
func (r *keyReader) decimal(neg bool) (Datum, error) {
	m := r.mask
	if neg {
		m ^= 0xFF
	}
	if len(r.b)-r.i < 2 {
		return Datum{}, errCorruptKey("truncated decimal")
	}
	ev := int(uint16(r.b[r.i]^m)<<8 | uint16(r.b[r.i+1]^m))
	r.i += 2
	e := ev - 0x8000
	if ev == 0xFFFF {
		if len(r.b)-r.i < 4 {
			return Datum{}, errCorruptKey("truncated decimal")
		}
		var x [4]byte
		for k := range x {
			x[k] = r.b[r.i+k] ^ m
		}
		r.i += 4
		e = int(int32(binary.BigEndian.Uint32(x[:])))
		if e+0x8000 < 0xFFFF {
			return Datum{}, errCorruptKey("bad decimal exponent")
		}
	}
	var stack [40]byte
	ds := stack[:0]
	for {
		if r.i >= len(r.b) {
			return Datum{}, errCorruptKey("truncated decimal")
		}
		c := r.b[r.i] ^ m
		r.i++
		if c == 0 {
			break
		}
		if c > 100 {
			return Datum{}, errCorruptKey("bad decimal digits")
		}
		ds = append(ds, '0'+(c-1)/10, '0'+(c-1)%10)
	}
	n := len(ds)
	for n > 0 && ds[n-1] == '0' {
		n--
	}
	if n == 0 || ds[0] == '0' {
		return Datum{}, errCorruptKey("bad decimal digits")
	}
	ds = ds[:n]
	s := n - e
	if s > MaxDecScale || e > decMaxIntDigits {
		return Datum{}, errCorruptKey("decimal out of range")
	}
	zeros := 0
	if s < 0 {
		zeros, s = -s, 0
	}
	if n+zeros <= 19 {
		var u uint64
		for _, c := range ds {
			u = u*10 + uint64(c-'0')
		}
		return decMake128(neg, 0, u*pow10u[zeros], int32(s)), nil
	}
	c, _ := new(big.Int).SetString(string(ds), 10)
	if zeros > 0 {
		c.Mul(c, bigPow10(zeros))
	}
	if neg {
		c.Neg(c)
	}
	d, err := decMake(c, int32(s))
	if err != nil {
		return Datum{}, errCorruptKey("decimal out of range")
	}
	return d, nil
}

// intervalFromTotal rebuilds an interval from its total microseconds:
// days and microseconds (truncated toward zero), with months only when
// the days would not fit an int32.
func intervalFromTotal(hi int64, lo uint64) (Datum, bool) {
	neg := hi < 0
	uhi, ulo := uint64(hi), lo
	if neg {
		uhi, ulo = neg128(uhi, ulo)
	}
	if uhi >= uint64(usPerDay) {
		return Datum{}, false
	}
	days, us := bits.Div64(uhi, ulo, uint64(usPerDay))
	// Magnitude limits of the fields (one more for negative values).
	lim32, lim64 := uint64(math.MaxInt32), uint64(math.MaxInt64)
	if neg {
		lim32++
		lim64++
	}
	var months uint64
	if days > lim32 {
		months = min(days/30, lim32)
		days -= months * 30
		if days > lim32 {
			extra := days - lim32
			days = lim32
			if extra > (lim64-us)/uint64(usPerDay) {
				return Datum{}, false
			}
			us += extra * uint64(usPerDay)
		}
	}
	if neg {
		return NewInterval(int32(-int64(months)), int32(-int64(days)), int64(-us)), true
	}
	return NewInterval(int32(months), int32(days), int64(us)), true
}
