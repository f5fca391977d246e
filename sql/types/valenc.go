package types

import (
	"encoding/binary"
	"math"
	"math/big"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// Value encoding: a compact, non-ordered encoding for storage. Each value
// is a tag byte followed by varints or length-prefixed bytes. It round-trips
// every field a datum of its kind uses: decimal scale, interval months,
// days and microseconds, float bits (including -0 and NaN payloads),
// decimal coefficients of any size, and the difference between a nil and
// an empty array.
const (
	valNull        = 0
	valFalse       = 1
	valTrue        = 2
	valInt         = 3
	valFloat       = 4
	valDecimal     = 5
	valString      = 6
	valBytes       = 7
	valDate        = 8
	valTime        = 9
	valTimestamp   = 10
	valTimestampTZ = 11
	valInterval    = 12
	valJSON        = 13
	valArray       = 14
	valArrayNil    = 15
	valDecimalBig  = 16 // scale, sign (±1), magnitude bytes: a decimal in the big form
	valUUID        = 17 // the 16 bytes
)

// maxValueDepth bounds array nesting when decoding.
const maxValueDepth = 32

// AppendValue appends the value encoding of d to buf. It allocates only to
// grow buf.
func AppendValue(buf []byte, d Datum) []byte {
	switch d.K {
	case KNull:
		return append(buf, valNull)
	case KBool:
		if d.I != 0 {
			return append(buf, valTrue)
		}
		return append(buf, valFalse)
	case KInt:
		return binary.AppendVarint(append(buf, valInt), d.I)
	case KFloat:
		return binary.LittleEndian.AppendUint64(append(buf, valFloat), math.Float64bits(d.Float()))
	case KDecimal:
		if d.S != "" {
			buf = binary.AppendVarint(append(buf, valDecimalBig), int64(d.X))
			buf = binary.AppendVarint(buf, d.I)
			return appendValueBytes(buf, d.S)
		}
		buf = binary.AppendVarint(append(buf, valDecimal), int64(d.X))
		return binary.AppendVarint(buf, d.I)
	case KString:
		return appendValueBytes(append(buf, valString), d.S)
	case KBytes:
		return appendValueBytes(append(buf, valBytes), d.S)
	case KUUID:
		return append(append(buf, valUUID), d.S...)
	case KJSON:
		return appendValueBytes(append(buf, valJSON), d.S)
	case KDate:
		return binary.AppendVarint(append(buf, valDate), d.I)
	case KTime:
		return binary.AppendVarint(append(buf, valTime), d.I)
	case KTimestamp:
		return binary.AppendVarint(append(buf, valTimestamp), d.I)
	case KTimestampTZ:
		return binary.AppendVarint(append(buf, valTimestampTZ), d.I)
	case KInterval:
		buf = binary.AppendVarint(append(buf, valInterval), int64(d.M))
		buf = binary.AppendVarint(buf, int64(d.X))
		return binary.AppendVarint(buf, d.I)
	case KArray:
		if d.Elems() == nil {
			return append(buf, valArrayNil)
		}
		buf = binary.AppendUvarint(append(buf, valArray), uint64(len(d.Elems())))
		for _, e := range d.Elems() {
			buf = AppendValue(buf, e)
		}
		return buf
	}
	return append(buf, valNull)
}

// AppendBytesValue appends the value encoding of a BYTEA datum holding b:
// AppendValue(buf, NewBytes(string(b))) without the conversion (a table
// log entry embeds encoded rows this way).
func AppendBytesValue(buf, b []byte) []byte {
	buf = binary.AppendUvarint(append(buf, valBytes), uint64(len(b)))
	return append(buf, b...)
}

func appendValueBytes(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

func errCorruptValue(format string, args ...any) error {
	return pgerror.New(pgcode.DataCorrupted, "corrupt value encoding: "+format, args...)
}

// DecodeValue decodes one value encoded by AppendValue from the front of
// buf and returns it with the rest of buf. Corrupt input gives XX001.
func DecodeValue(buf []byte) (Datum, []byte, error) {
	return decodeValue(buf, 0)
}

func decodeValue(buf []byte, depth int) (Datum, []byte, error) {
	if len(buf) == 0 {
		return Datum{}, nil, errCorruptValue("missing value")
	}
	tag := buf[0]
	b := buf[1:]
	varint := func() (int64, bool) {
		v, n := binary.Varint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	short := func() (Datum, []byte, error) {
		return Datum{}, nil, errCorruptValue("truncated value (tag %d)", tag)
	}
	switch tag {
	case valNull:
		return Null, b, nil
	case valFalse:
		return NewBool(false), b, nil
	case valTrue:
		return NewBool(true), b, nil
	case valInt, valDate, valTime, valTimestamp, valTimestampTZ:
		v, ok := varint()
		if !ok {
			return short()
		}
		d := Datum{I: v}
		switch tag {
		case valInt:
			d.K = KInt
		case valDate:
			d.K = KDate
		case valTime:
			d.K = KTime
		case valTimestamp:
			d.K = KTimestamp
		default:
			d.K = KTimestampTZ
		}
		return d, b, nil
	case valFloat:
		if len(b) < 8 {
			return short()
		}
		return NewFloat(math.Float64frombits(binary.LittleEndian.Uint64(b))), b[8:], nil
	case valDecimal:
		x, ok1 := varint()
		c, ok2 := varint()
		if !ok1 || !ok2 {
			return short()
		}
		if x < int64(decNegInf) || x > MaxDecScale {
			return Datum{}, nil, errCorruptValue("bad decimal scale %d", x)
		}
		return NewDecimal(c, int32(x)), b, nil
	case valDecimalBig:
		x, ok1 := varint()
		sg, ok2 := varint()
		if !ok1 || !ok2 {
			return short()
		}
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return short()
		}
		mag := b[k : k+int(n)]
		b = b[k+int(n):]
		if x < 0 || x > MaxDecScale || (sg != 1 && sg != -1) || n == 0 || mag[0] == 0 {
			return Datum{}, nil, errCorruptValue("bad big decimal")
		}
		c := new(big.Int).SetBytes(mag)
		if sg < 0 {
			c.Neg(c)
		}
		if c.IsInt64() || decTooLarge(c, int32(x)) {
			return Datum{}, nil, errCorruptValue("bad big decimal")
		}
		return decBigForm(sg < 0, mag, int32(x)), b, nil
	case valUUID:
		if len(b) < 16 {
			return short()
		}
		return Datum{K: KUUID, S: string(b[:16])}, b[16:], nil
	case valString, valBytes, valJSON:
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return short()
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		switch tag {
		case valString:
			return NewString(s), b, nil
		case valBytes:
			return Datum{K: KBytes, S: s}, b, nil
		}
		return NewJSON(s), b, nil
	case valInterval:
		m, ok1 := varint()
		x, ok2 := varint()
		i, ok3 := varint()
		if !ok1 || !ok2 || !ok3 {
			return short()
		}
		if m != int64(int32(m)) || x != int64(int32(x)) {
			return Datum{}, nil, errCorruptValue("bad interval fields")
		}
		return NewInterval(int32(m), int32(x), i), b, nil
	case valArrayNil:
		return Datum{K: KArray}, b, nil
	case valArray:
		if depth >= maxValueDepth {
			return Datum{}, nil, errCorruptValue("arrays nested too deeply")
		}
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return short()
		}
		b = b[k:]
		elems := make([]Datum, n)
		for i := range elems {
			var err error
			if elems[i], b, err = decodeValue(b, depth+1); err != nil {
				return Datum{}, nil, err
			}
		}
		return Datum{K: KArray, A: NewElems(elems)}, b, nil
	}
	return Datum{}, nil, errCorruptValue("unknown tag %d", tag)
}

// EncodeRow appends the encoding of r: the number of values as a uvarint,
// then each value's AppendValue encoding.
func EncodeRow(buf []byte, r Row) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(r)))
	for _, d := range r {
		buf = AppendValue(buf, d)
	}
	return buf
}

// DecodeRow decodes a row encoded by EncodeRow; buf must hold exactly one
// row. Corrupt input gives XX001.
func DecodeRow(buf []byte) (Row, error) { return DecodeRowIn(buf, nil) }

// DecodeRowIn is DecodeRow with the row cut from a's slabs (nil: a row
// of its own).
func DecodeRowIn(buf []byte, a *RowAlloc) (Row, error) {
	n, k := binary.Uvarint(buf)
	if k <= 0 {
		return nil, errCorruptValue("bad row header")
	}
	b := buf[k:]
	if n > uint64(len(b)) {
		return nil, errCorruptValue("row of %d values in %d bytes", n, len(b))
	}
	var r Row
	if a == nil {
		r = make(Row, n)
	} else {
		r = a.Row(int(n))
	}
	for i := range r {
		var err error
		if r[i], b, err = decodeValue(b, 0); err != nil {
			return nil, err
		}
	}
	if len(b) != 0 {
		return nil, errCorruptValue("%d trailing bytes after row", len(b))
	}
	return r, nil
}
