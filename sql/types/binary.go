package types

import (
	"encoding/binary"
	"math"
	"math/big"
	"strconv"
	"unicode/utf8"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// PostgreSQL numeric binary sign words.
const (
	numericPos  = 0x0000
	numericNeg  = 0x4000
	numericNaN  = 0xC000
	numericPInf = 0xD000
	numericNInf = 0xF000
)

// maxArrayDims is PostgreSQL's MAXDIM.
const maxArrayDims = 6

// EncodeBinary appends the PostgreSQL binary wire representation of d as a
// value of type t to buf (without the length prefix). d must not be NULL.
// Number kinds are converted to the number type t asks for; any datum
// encodes as a string type via its text form.
func EncodeBinary(buf []byte, d Datum, t T) ([]byte, error) {
	if d.K == KNull {
		return buf, pgerror.New(pgcode.Internal, "cannot encode NULL as %s", t)
	}
	switch t.Fam {
	case Bool:
		if d.K != KBool {
			break
		}
		if d.I != 0 {
			return append(buf, 1), nil
		}
		return append(buf, 0), nil
	case Int2, Int4, Int8:
		v, err := binaryInt(d, t)
		if err != nil {
			return buf, err
		}
		switch t.Fam {
		case Int2:
			return binary.BigEndian.AppendUint16(buf, uint16(v)), nil
		case Int4:
			return binary.BigEndian.AppendUint32(buf, uint32(v)), nil
		}
		return binary.BigEndian.AppendUint64(buf, uint64(v)), nil
	case Oid, RegClass, RegType, RegProc, RegNamespace:
		if d.K != KInt {
			break
		}
		if d.I < math.MinInt32 || d.I > math.MaxUint32 {
			return buf, pgerror.New(pgcode.NumericValueOutOfRange, "OID out of range")
		}
		return binary.BigEndian.AppendUint32(buf, uint32(d.I)), nil
	case Float4, Float8:
		var f float64
		switch d.K {
		case KFloat:
			f = d.Float()
		case KInt:
			f = float64(d.I)
		case KDecimal:
			f = DecToFloat(d)
		default:
			return buf, errEncode(d, t)
		}
		if t.Fam == Float4 {
			return binary.BigEndian.AppendUint32(buf, math.Float32bits(float32(f))), nil
		}
		return binary.BigEndian.AppendUint64(buf, math.Float64bits(f)), nil
	case Numeric:
		switch d.K {
		case KDecimal:
		case KInt:
			d = DecFromInt(d.I)
		case KFloat:
			var err error
			if d, err = DecFromFloat(d.Float()); err != nil {
				return buf, err
			}
		default:
			return buf, errEncode(d, t)
		}
		return appendNumericBinary(buf, d), nil
	case Char:
		// "char" is always one byte; the empty string is '\0'.
		if d.K == KString {
			if d.S == "" {
				return append(buf, 0), nil
			}
			return append(buf, d.S[0]), nil
		}
	case Text, Varchar, Name, Unknown:
		if d.K == KString {
			return append(buf, d.S...), nil
		}
		return AppendText(buf, d, t), nil
	case Bytea:
		if d.K != KBytes && d.K != KString {
			break
		}
		return append(buf, d.S...), nil
	case UUID:
		if d.K != KUUID {
			break
		}
		return append(buf, d.S...), nil
	case Record:
		if d.K != KArray {
			break
		}
		return appendRecordBinary(buf, d, t)
	case Date:
		if d.K != KDate {
			break
		}
		switch d.I {
		case InfinityI:
			return binary.BigEndian.AppendUint32(buf, math.MaxInt32), nil
		case NegInfinityI:
			return binary.BigEndian.AppendUint32(buf, 1<<31), nil
		}
		v := d.I - pgEpochDays
		if d.I < math.MinInt64+pgEpochDays || v <= math.MinInt32 || v >= math.MaxInt32 {
			return buf, pgerror.New(pgcode.DatetimeFieldOverflow, "date out of range")
		}
		return binary.BigEndian.AppendUint32(buf, uint32(int32(v))), nil
	case Time:
		if d.K != KTime {
			break
		}
		return binary.BigEndian.AppendUint64(buf, uint64(d.I)), nil
	case Timestamp, TimestampTZ:
		if d.K != KTimestamp && d.K != KTimestampTZ {
			break
		}
		switch d.I {
		case InfinityI, NegInfinityI:
			return binary.BigEndian.AppendUint64(buf, uint64(d.I)), nil
		}
		if d.I < math.MinInt64+pgEpochUs {
			return buf, pgerror.New(pgcode.DatetimeFieldOverflow, "timestamp out of range")
		}
		return binary.BigEndian.AppendUint64(buf, uint64(d.I-pgEpochUs)), nil
	case Interval:
		if d.K != KInterval {
			break
		}
		buf = binary.BigEndian.AppendUint64(buf, uint64(d.I))
		buf = binary.BigEndian.AppendUint32(buf, uint32(d.X))
		return binary.BigEndian.AppendUint32(buf, uint32(d.M)), nil
	case JSONB:
		if d.K != KJSON && d.K != KString {
			break
		}
		buf = append(buf, 1)
		return append(buf, d.S...), nil
	case TextArray:
		if d.K != KArray {
			break
		}
		return appendArrayBinary(buf, d.Elems())
	case Int2Array, BoolArray:
		if d.K != KArray {
			break
		}
		elem, _ := ArrayElem(t.Fam)
		return appendTypedArrayBinary(buf, d.Elems(), elem)
	case Int4Array, Int8Array, Float8Array, NumericArray, TimestampTZArray, Float4Array, DateArray, TimeArray,
		TimestampArray, IntervalArray, JSONBArray, VarcharArray, UUIDArray, ByteaArray:
		if d.K != KArray {
			break
		}
		return appendElemArrayBinary(buf, d.Elems(), t)
	}
	return buf, errEncode(d, t)
}

func errEncode(d Datum, t T) error {
	return pgerror.New(pgcode.DatatypeMismatch, "cannot encode %s value as type %s", kindType(d.K), t)
}

// binaryInt returns the integer to send for an int2/int4/int8 column.
func binaryInt(d Datum, t T) (int64, error) {
	var v int64
	switch d.K {
	case KInt, KBool:
		v = d.I
	case KString, KBytes, KJSON, KArray, KDate, KTime, KTimestamp, KTimestampTZ, KInterval:
		return 0, errEncode(d, t)
	default:
		r, err := castToInt(d, kindType(d.K), t)
		if err != nil {
			return 0, err
		}
		v = r.I
	}
	lo, hi, name := intRange(t)
	if v < lo || v > hi {
		return 0, pgerror.New(pgcode.NumericValueOutOfRange, "%s out of range", name)
	}
	return v, nil
}

// appendNumericBinary appends PostgreSQL's numeric_send layout: int16
// ndigits, int16 weight, uint16 sign, uint16 dscale, then base-10000 digits
// with leading and trailing zero groups stripped.
func appendNumericBinary(buf []byte, d Datum) []byte {
	switch d.X {
	case decNaN:
		return append(buf, 0, 0, 0, 0, 0xC0, 0, 0, 0)
	case decPosInf:
		return append(buf, 0, 0, 0, 0, 0xD0, 0, 0, 0x20) // as PostgreSQL sends it
	case decNegInf:
		return append(buf, 0, 0, 0, 0, 0xF0, 0, 0, 0x20)
	}
	if d.I == 0 {
		buf = append(buf, 0, 0, 0, 0, 0, 0)
		return binary.BigEndian.AppendUint16(buf, uint16(d.X))
	}
	var dsBuf [20]byte
	var ds []byte
	if d.S != "" {
		ds = bigCoefDigits(d)
	} else {
		ds = strconv.AppendUint(dsBuf[:0], uabs(d.I), 10)
	}
	n := len(ds)
	intLen := n - int(d.X)
	p := int(floorMod(int64(-intLen), 4)) // zeros to prepend
	weight := (intLen+p)/4 - 1
	// Groups over the padded digits.
	var groupBuf [8]uint16
	groups := groupBuf[:0]
	total := p + n
	for start := 0; start < total; start += 4 {
		var g uint16
		for k := start; k < start+4; k++ {
			g *= 10
			if idx := k - p; idx >= 0 && idx < n {
				g += uint16(ds[idx] - '0')
			}
		}
		groups = append(groups, g)
	}
	ng := len(groups)
	for ng > 0 && groups[ng-1] == 0 {
		ng--
	}
	sign := uint16(numericPos)
	if d.I < 0 {
		sign = numericNeg
	}
	buf = binary.BigEndian.AppendUint16(buf, uint16(ng))
	buf = binary.BigEndian.AppendUint16(buf, uint16(int16(weight)))
	buf = binary.BigEndian.AppendUint16(buf, sign)
	buf = binary.BigEndian.AppendUint16(buf, uint16(d.X))
	for _, g := range groups[:ng] {
		buf = binary.BigEndian.AppendUint16(buf, g)
	}
	return buf
}

// appendArrayBinary appends PostgreSQL's array_send layout for text[]:
// ndim, has-nulls flag, element oid 25, (size, lower bound 1) per
// dimension, then each element as int32 length (-1 = NULL) and bytes.
func appendArrayBinary(buf []byte, elems []Datum) ([]byte, error) {
	var dims [maxArrayDims]int
	ndim := 0
	if len(elems) > 0 {
		cur := elems
		for {
			if ndim == maxArrayDims {
				return buf, pgerror.New(pgcode.ProgramLimitExceeded, "number of array dimensions exceeds the maximum allowed (%d)", maxArrayDims)
			}
			dims[ndim] = len(cur)
			ndim++
			if len(cur) == 0 || cur[0].K != KArray {
				break
			}
			cur = cur[0].Elems()
		}
	}
	hasNull := false
	if err := checkArrayShape(elems, dims[:ndim], &hasNull); err != nil {
		return buf, err
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(ndim))
	if hasNull {
		buf = binary.BigEndian.AppendUint32(buf, 1)
	} else {
		buf = binary.BigEndian.AppendUint32(buf, 0)
	}
	buf = binary.BigEndian.AppendUint32(buf, 25)
	for _, n := range dims[:ndim] {
		buf = binary.BigEndian.AppendUint32(buf, uint32(n))
		buf = binary.BigEndian.AppendUint32(buf, 1)
	}
	return appendArrayElems(buf, elems), nil
}

// checkArrayShape verifies that elems is rectangular with the given dims.
func checkArrayShape(elems []Datum, dims []int, hasNull *bool) error {
	if len(dims) == 0 {
		return nil
	}
	if len(elems) != dims[0] {
		return pgerror.New(pgcode.InvalidParameterValue, "multidimensional arrays must have array expressions with matching dimensions")
	}
	for _, e := range elems {
		if len(dims) > 1 {
			if e.K != KArray {
				return pgerror.New(pgcode.InvalidParameterValue, "multidimensional arrays must have array expressions with matching dimensions")
			}
			if err := checkArrayShape(e.Elems(), dims[1:], hasNull); err != nil {
				return err
			}
			continue
		}
		switch e.K {
		case KArray:
			return pgerror.New(pgcode.InvalidParameterValue, "multidimensional arrays must have array expressions with matching dimensions")
		case KNull:
			*hasNull = true
		}
	}
	return nil
}

// appendArrayElems appends the leaf elements in row-major order.
func appendArrayElems(buf []byte, elems []Datum) []byte {
	for _, e := range elems {
		switch e.K {
		case KArray:
			buf = appendArrayElems(buf, e.Elems())
		case KNull:
			buf = binary.BigEndian.AppendUint32(buf, math.MaxUint32)
		default:
			at := len(buf)
			buf = append(buf, 0, 0, 0, 0)
			if e.K == KString {
				buf = append(buf, e.S...)
			} else {
				buf = AppendText(buf, e, TUnknown)
			}
			binary.BigEndian.PutUint32(buf[at:], uint32(len(buf)-at-4))
		}
	}
	return buf
}

func errBinary(format string, args ...any) error {
	return pgerror.New(pgcode.InvalidBinaryRepresentation, format, args...)
}

func errBinaryLen(t T, want, got int) error {
	return errBinary("incorrect binary data format for type %s: expected %d bytes, got %d", t, want, got)
}

// DecodeBinary decodes a PostgreSQL binary wire value of type t (without
// the length prefix). Malformed input gives 22P03 (22021 for text that is
// not valid UTF-8, 22008 for dates and times out of range); it never panics.
func DecodeBinary(b []byte, t T) (Datum, error) {
	fixed := func(n int) error {
		if len(b) != n {
			return errBinaryLen(t, n, len(b))
		}
		return nil
	}
	switch t.Fam {
	case Bool:
		if err := fixed(1); err != nil {
			return Datum{}, err
		}
		return NewBool(b[0] != 0), nil
	case Int2:
		if err := fixed(2); err != nil {
			return Datum{}, err
		}
		return NewInt(int64(int16(binary.BigEndian.Uint16(b)))), nil
	case Int4:
		if err := fixed(4); err != nil {
			return Datum{}, err
		}
		return NewInt(int64(int32(binary.BigEndian.Uint32(b)))), nil
	case Int8:
		if err := fixed(8); err != nil {
			return Datum{}, err
		}
		return NewInt(int64(binary.BigEndian.Uint64(b))), nil
	case Oid, RegClass, RegType, RegProc, RegNamespace:
		if err := fixed(4); err != nil {
			return Datum{}, err
		}
		return NewInt(int64(binary.BigEndian.Uint32(b))), nil
	case Float4:
		if err := fixed(4); err != nil {
			return Datum{}, err
		}
		return NewFloat(float64(math.Float32frombits(binary.BigEndian.Uint32(b)))), nil
	case Float8:
		if err := fixed(8); err != nil {
			return Datum{}, err
		}
		return NewFloat(math.Float64frombits(binary.BigEndian.Uint64(b))), nil
	case Numeric:
		d, err := decodeNumericBinary(b)
		if err != nil {
			return Datum{}, err
		}
		return DecCoerce(d, t.Prec, t.Scale)
	case Text, Unknown:
		if err := checkText(b); err != nil {
			return Datum{}, err
		}
		return NewString(string(b)), nil
	case Varchar:
		if err := checkText(b); err != nil {
			return Datum{}, err
		}
		return varcharInput(string(b), t)
	case Name:
		if err := checkText(b); err != nil {
			return Datum{}, err
		}
		return NewString(truncateBytes(string(b), 63)), nil
	case Char:
		if err := fixed(1); err != nil {
			return Datum{}, err
		}
		if b[0] == 0 {
			return NewString(""), nil
		}
		return NewString(string(b)), nil
	case Bytea:
		return NewBytes(b), nil
	case UUID:
		return decodeUUIDBinary(b)
	case Date:
		if err := fixed(4); err != nil {
			return Datum{}, err
		}
		v := int32(binary.BigEndian.Uint32(b))
		switch v {
		case math.MaxInt32:
			return NewDate(InfinityI), nil
		case math.MinInt32:
			return NewDate(NegInfinityI), nil
		}
		days := int64(v) + pgEpochDays
		if days < minDateDays || days > maxDateDays {
			return Datum{}, pgerror.New(pgcode.DatetimeFieldOverflow, "date out of range")
		}
		return NewDate(days), nil
	case Time:
		if err := fixed(8); err != nil {
			return Datum{}, err
		}
		v := int64(binary.BigEndian.Uint64(b))
		if v < 0 || v > usPerDay {
			return Datum{}, pgerror.New(pgcode.DatetimeFieldOverflow, "time out of range")
		}
		return NewTime(v), nil
	case Timestamp, TimestampTZ:
		if err := fixed(8); err != nil {
			return Datum{}, err
		}
		v := int64(binary.BigEndian.Uint64(b))
		mk := NewTimestamp
		if t.Fam == TimestampTZ {
			mk = NewTimestampTZ
		}
		switch v {
		case math.MaxInt64, math.MinInt64:
			return mk(v), nil
		}
		if v > maxTsUs-pgEpochUs || v < minTsUs-pgEpochUs {
			return Datum{}, pgerror.New(pgcode.DatetimeFieldOverflow, "timestamp out of range")
		}
		return mk(v + pgEpochUs), nil
	case Interval:
		if err := fixed(16); err != nil {
			return Datum{}, err
		}
		return NewInterval(int32(binary.BigEndian.Uint32(b[12:])), int32(binary.BigEndian.Uint32(b[8:])),
			int64(binary.BigEndian.Uint64(b))), nil
	case JSONB:
		if len(b) == 0 {
			return Datum{}, errBinary("insufficient data for type jsonb")
		}
		if b[0] != 1 {
			return Datum{}, errBinary("unsupported jsonb version number %d", b[0])
		}
		if err := checkText(b[1:]); err != nil {
			return Datum{}, err
		}
		return parseJSON(string(b[1:]))
	case TextArray:
		return decodeArrayBinary(b)
	case Int4Array, Int8Array, Float8Array, NumericArray, TimestampTZArray, Float4Array, DateArray, TimeArray,
		TimestampArray, IntervalArray, JSONBArray, VarcharArray, UUIDArray, ByteaArray, Int2Array, BoolArray:
		return decodeElemArrayBinary(b, t)
	}
	return Datum{}, errBinary("no binary input function available for type %s", t)
}

// checkText rejects bytes that are not valid UTF-8 text (or contain NUL).
func checkText(b []byte) error {
	for i := 0; i < len(b); {
		c := b[i]
		if c == 0 {
			return pgerror.New(pgcode.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\": 0x00")
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return pgerror.New(pgcode.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\": 0x%02x", c)
		}
		i += n
	}
	return nil
}

// decodeNumericBinary decodes numeric_send's layout. Digits beyond dscale
// are truncated, as numeric_recv does.
func decodeNumericBinary(b []byte) (Datum, error) {
	if len(b) < 8 {
		return Datum{}, errBinary("insufficient data for type numeric: %d bytes", len(b))
	}
	ndigits := int(binary.BigEndian.Uint16(b))
	weight := int(int16(binary.BigEndian.Uint16(b[2:])))
	sign := binary.BigEndian.Uint16(b[4:])
	dscale := int(binary.BigEndian.Uint16(b[6:]))
	if len(b) != 8+2*ndigits {
		return Datum{}, errBinary("invalid length in external \"numeric\" value")
	}
	switch sign {
	case numericPos, numericNeg:
	case numericNaN:
		return DecNaN(), nil
	case numericPInf:
		return DecInf(false), nil
	case numericNInf:
		return DecInf(true), nil
	default:
		return Datum{}, errBinary("invalid sign in external \"numeric\" value")
	}
	if dscale > MaxDecScale {
		return Datum{}, errBinary("invalid scale in external \"numeric\" value")
	}
	for i := 0; i < ndigits; i++ {
		if binary.BigEndian.Uint16(b[8+2*i:]) >= 10000 {
			return Datum{}, errBinary("invalid digit in external \"numeric\" value")
		}
	}
	// The decimal digits from exponent top (the first group's first
	// digit) down to -dscale, leading zeros skipped.
	top := 4*weight + 3
	var stack [40]byte
	ds := stack[:0]
	for e := top; e >= -dscale; e-- {
		i := weight - int(floorDiv(int64(e), 4)) // group of exponent e
		if i >= ndigits {
			if len(ds) == 0 {
				break // all zeros from here
			}
			ds = append(ds, '0')
			continue
		}
		v := binary.BigEndian.Uint16(b[8+2*i:]) / uint16(pow10u[floorMod(int64(e), 4)]) % 10
		if v == 0 && len(ds) == 0 {
			continue
		}
		ds = append(ds, '0'+byte(v))
	}
	if len(ds) == 0 {
		return NewDecimal(0, int32(dscale)), nil
	}
	neg := sign == numericNeg
	if len(ds) <= 19 {
		var u uint64
		for _, c := range ds {
			u = u*10 + uint64(c-'0')
		}
		return decMake128(neg, 0, u, int32(dscale)), nil
	}
	c, _ := new(big.Int).SetString(string(ds), 10)
	if neg {
		c.Neg(c)
	}
	return decMake(c, int32(dscale))
}

// decodeArrayBinary decodes array_recv's layout for text[].
func decodeArrayBinary(b []byte) (Datum, error) {
	if len(b) < 12 {
		return Datum{}, errBinary("insufficient data for type text[]: %d bytes", len(b))
	}
	ndim := int32(binary.BigEndian.Uint32(b))
	flags := int32(binary.BigEndian.Uint32(b[4:]))
	elemOid := binary.BigEndian.Uint32(b[8:])
	if ndim < 0 || ndim > maxArrayDims {
		return Datum{}, errBinary("invalid number of dimensions: %d", ndim)
	}
	if flags != 0 && flags != 1 {
		return Datum{}, errBinary("invalid array flags")
	}
	switch elemOid {
	case 25, 1043, 19, 705:
	default:
		return Datum{}, pgerror.New(pgcode.DatatypeMismatch, "binary data has array element type %d instead of expected 25 (text)", elemOid)
	}
	p := b[12:]
	if len(p) < 8*int(ndim) {
		return Datum{}, errBinary("insufficient data for array dimensions")
	}
	var dims [maxArrayDims]int
	total := 1
	for i := 0; i < int(ndim); i++ {
		n := int32(binary.BigEndian.Uint32(p[8*i:]))
		if n < 0 {
			return Datum{}, errBinary("invalid array dimension size %d", n)
		}
		dims[i] = int(n)
		if n > 0 && total > (len(b)/4+1)/int(n) {
			return Datum{}, errBinary("array size exceeds the data available")
		}
		total *= int(n)
	}
	p = p[8*int(ndim):]
	if ndim == 0 || total == 0 {
		if len(p) != 0 {
			return Datum{}, errBinary("incorrect binary data format for type text[]: %d trailing bytes", len(p))
		}
		return Datum{K: KArray, A: NewElems([]Datum{})}, nil
	}
	if total > len(p)/4 {
		return Datum{}, errBinary("array size exceeds the data available")
	}
	leaves := make([]Datum, total)
	for i := range leaves {
		if len(p) < 4 {
			return Datum{}, errBinary("insufficient data for array element")
		}
		n := int32(binary.BigEndian.Uint32(p))
		p = p[4:]
		if n == -1 {
			leaves[i] = Null
			continue
		}
		if n < 0 || int(n) > len(p) {
			return Datum{}, errBinary("invalid array element length %d", n)
		}
		if err := checkText(p[:n]); err != nil {
			return Datum{}, err
		}
		leaves[i] = NewString(string(p[:n]))
		p = p[n:]
	}
	if len(p) != 0 {
		return Datum{}, errBinary("incorrect binary data format for type text[]: %d trailing bytes", len(p))
	}
	a, _ := nestArray(leaves, dims[:ndim])
	return Datum{K: KArray, A: NewElems(a)}, nil
}

// nestArray builds nested KArray datums from row-major leaves.
func nestArray(leaves []Datum, dims []int) ([]Datum, []Datum) {
	if len(dims) == 1 {
		return leaves[:dims[0]:dims[0]], leaves[dims[0]:]
	}
	out := make([]Datum, dims[0])
	for i := range out {
		var sub []Datum
		sub, leaves = nestArray(leaves, dims[1:])
		out[i] = Datum{K: KArray, A: NewElems(sub)}
	}
	return out, leaves
}
