package types

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"time"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// integer[], bigint[], double precision[], numeric[] and timestamp with
// time zone[] are arrays whose leaves are values of the element type
// (KInt, KFloat, KDecimal, KTimestampTZ), NULL, or nested KArray for
// further dimensions: one type for every number of dimensions, as in
// PostgreSQL. Comparison, hashing and the key and value encodings work
// on the leaves, so arrays order element-wise as PostgreSQL orders them
// ({9} < {10}) and serve as GROUP BY and DISTINCT keys. text[] stays the
// array of strings; smallint[] and boolean[] keep text leaves
// (typedarray.go).

// elemArrayElem maps each element-typed array family to its element type.
var elemArrayElem = map[Family]T{
	Int4Array:        TInt4,
	Int8Array:        TInt8,
	Float8Array:      TFloat8,
	NumericArray:     TNumeric,
	TimestampTZArray: TTimestampTZ,
	Float4Array:      TFloat4,
	DateArray:        TDate,
	TimeArray:        TTime,
	TimestampArray:   TTimestamp,
	IntervalArray:    TInterval,
	JSONBArray:       TJSONB,
	VarcharArray:     TVarchar,
	UUIDArray:        TUUID,
	ByteaArray:       TBytea,
}

// ElemType returns the element type of the element-typed array type t,
// with its modifiers (varchar(n)[]: varchar(n)).
func ElemType(t T) T {
	e := elemArrayElem[t.Fam]
	if t.Fam == VarcharArray {
		e.Prec = t.Prec
	}
	return e
}

// IsElemArray reports whether f is an array family whose leaves are
// values of its element type.
func IsElemArray(f Family) bool {
	_, ok := elemArrayElem[f]
	return ok
}

// IsArray reports whether f is any array type (text[], smallint[],
// boolean[], the element-typed arrays).
func IsArray(f Family) bool {
	return f == TextArray || f == Int2Array || f == BoolArray || IsElemArray(f)
}

// ArrayOf returns the array type whose elements are of type elem; ok is
// false when Sluice has no such array type.
func ArrayOf(elem T) (T, bool) {
	switch elem.Fam {
	case Text, Name, Unknown:
		return TTextArray, true
	case Varchar:
		// varchar(n)[]: the elements' length limit is the array's Prec.
		return T{Fam: VarcharArray, Prec: elem.Prec}, true
	case Bool:
		return TBoolArray, true
	case Int2:
		return TInt2Array, true
	case Int4:
		return TInt4Array, true
	case Int8:
		return TInt8Array, true
	case Float8:
		return TFloat8Array, true
	case Float4:
		return TFloat4Array, true
	case Date:
		return TDateArray, true
	case Time:
		return TTimeArray, true
	case Timestamp:
		return TTsArray, true
	case Interval:
		return TIntervalArr, true
	case JSONB:
		return TJSONBArray, true
	case UUID:
		return TUUIDArray, true
	case Bytea:
		return TByteaArray, true
	case Numeric:
		return TNumericArray, true
	case TimestampTZ:
		return TTstzArray, true
	}
	return TUnknown, false
}

// convertLeaves returns the array elems with every leaf converted to elem:
// strings by elem's input function, other values by a cast.
func convertLeaves(elems []Datum, elem T) ([]Datum, error) {
	out := make([]Datum, len(elems))
	for i, e := range elems {
		switch e.K {
		case KNull:
			out[i] = Null
			continue
		case KArray:
			sub, err := convertLeaves(e.Elems(), elem)
			if err != nil {
				return nil, err
			}
			out[i] = Datum{K: KArray, A: NewElems(sub)}
			continue
		case KString:
			v, err := ParseText(e.S, elem)
			if err != nil {
				return nil, err
			}
			out[i] = v
			continue
		}
		v, err := Cast(e, kindType(e.K), elem)
		if err != nil {
			// e.g. a boolean leaf to integer: through its text form,
			// which fails as PostgreSQL's input function does.
			if v, err = ParseText(FormatText(e, TUnknown), elem); err != nil {
				return nil, err
			}
		}
		out[i] = v
	}
	return out, nil
}

// LeavesToText returns elems with every leaf in its text form as an
// element of type elem (a typed array cast to text[]).
func LeavesToText(elems []Datum, elem T) []Datum {
	out := make([]Datum, len(elems))
	for i, e := range elems {
		switch e.K {
		case KNull, KString:
			out[i] = e
		case KArray:
			out[i] = Datum{K: KArray, A: NewElems(LeavesToText(e.Elems(), elem))}
		default:
			out[i] = NewString(FormatText(e, elem))
		}
	}
	return out
}

// ToElemArray converts an array value (text leaves or typed ones) to the
// element-typed array family t.
func ToElemArray(d Datum, t T) (Datum, error) {
	if d.K != KArray {
		return Datum{}, errCannotCast(kindType(d.K), t)
	}
	out, err := convertLeaves(d.Elems(), ElemType(t))
	if err != nil {
		return Datum{}, err
	}
	return Datum{K: KArray, A: NewElems(out)}, nil
}

// parseElemArray parses '{1,2}' as an array of t's element type.
func parseElemArray(s string, t T) (Datum, error) {
	d, err := parseTextArray(s)
	if err != nil {
		return Datum{}, err
	}
	return ToElemArray(d, t)
}

// appendElemArrayBinary appends array_send's layout of an element-typed
// array: ndim, the NULL flag, the element oid, (size, lower bound 1) per
// dimension, then each leaf as a length and its binary form.
func appendElemArrayBinary(buf []byte, elems []Datum, t T) ([]byte, error) {
	elem := elemArrayElem[t.Fam]
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
	buf = binary.BigEndian.AppendUint32(buf, elem.OID())
	for _, n := range dims[:ndim] {
		buf = binary.BigEndian.AppendUint32(buf, uint32(n))
		buf = binary.BigEndian.AppendUint32(buf, 1)
	}
	var leaves func(buf []byte, es []Datum) ([]byte, error)
	leaves = func(buf []byte, es []Datum) ([]byte, error) {
		for _, e := range es {
			switch e.K {
			case KArray:
				var err error
				if buf, err = leaves(buf, e.Elems()); err != nil {
					return buf, err
				}
				continue
			case KNull:
				buf = binary.BigEndian.AppendUint32(buf, math.MaxUint32)
				continue
			}
			v := e
			if e.K == KString {
				var err error
				if v, err = ParseText(e.S, elem); err != nil {
					return buf, err
				}
			}
			at := len(buf)
			buf = append(buf, 0, 0, 0, 0)
			var err error
			if buf, err = EncodeBinary(buf, v, elem); err != nil {
				return buf, err
			}
			binary.BigEndian.PutUint32(buf[at:], uint32(len(buf)-at-4))
		}
		return buf, nil
	}
	return leaves(buf, elems)
}

// decodeElemArrayBinary decodes array_recv's layout for the
// element-typed array t; the element oid must be t's element type's.
func decodeElemArrayBinary(b []byte, t T) (Datum, error) {
	elem := ElemType(t)
	if len(b) < 12 {
		return Datum{}, errBinary("insufficient data for type %s: %d bytes", t, len(b))
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
	// A client that declared the parameter smallint[] (psycopg's lists of
	// small numbers) sends int2 elements: they convert as PostgreSQL's
	// assignment cast int2[] -> int4[] converts them.
	src := elem
	if elemOid != elem.OID() {
		st, ok := FromOID(elemOid)
		switch {
		case ok && elem.Fam == Varchar && st.Fam == Text:
		case ok && (elem.Fam == Int4 || elem.Fam == Int8) && (st.Fam == Int2 || st.Fam == Int4 || st.Fam == Int8):
		case ok && elem.Fam == Float8 && (st.Fam == Float4 || st.Fam == Int2 || st.Fam == Int4 || st.Fam == Int8):
		case ok && elem.Fam == Numeric && (st.Fam == Int2 || st.Fam == Int4 || st.Fam == Int8):
		default:
			return Datum{}, pgerror.New(pgcode.DatatypeMismatch, "binary data has array element type %d instead of expected %d (%s)", elemOid, elem.OID(), elem)
		}
		src = st
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
		v, err := DecodeBinary(p[:n], src)
		if err != nil {
			return Datum{}, err
		}
		if src != elem {
			if v, err = Cast(v, src, elem); err != nil {
				return Datum{}, err
			}
		}
		if elem.Fam == Varchar && elem.Prec > 0 {
			// varchar(n)[]: varchar_in's length check.
			if v, err = varcharInput(v.S, elem); err != nil {
				return Datum{}, err
			}
		}
		leaves[i] = v
		p = p[n:]
	}
	if len(p) != 0 {
		return Datum{}, errBinary("incorrect binary data format for type %s: %d trailing bytes", t, len(p))
	}
	a, _ := nestArray(leaves, dims[:ndim])
	return Datum{K: KArray, A: NewElems(a)}, nil
}

// ArrayFromJSON converts the JSON array text (a source's field) to a
// value of the array type t: numbers and strings are read by the element
// type's input function, null is NULL, nested arrays are further
// dimensions; an object inside is 22P02.
func ArrayFromJSON(text string, t T) (Datum, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return Datum{}, pgerror.New(pgcode.InvalidTextRepresentation, "invalid JSON array: %v", err)
	}
	var conv func(v any) (Datum, error)
	conv = func(v any) (Datum, error) {
		switch x := v.(type) {
		case nil:
			return Null, nil
		case []any:
			out := make([]Datum, len(x))
			for i, e := range x {
				d, err := conv(e)
				if err != nil {
					return Datum{}, err
				}
				out[i] = d
			}
			return Datum{K: KArray, A: NewElems(out)}, nil
		case json.Number:
			return NewString(x.String()), nil
		case string:
			return NewString(x), nil
		case bool:
			if x {
				return NewString("true"), nil
			}
			return NewString("false"), nil
		}
		return Datum{}, pgerror.New(pgcode.InvalidTextRepresentation, "malformed array literal: a JSON object is not an element of %s", t)
	}
	d, err := conv(v)
	if err != nil {
		return Datum{}, err
	}
	if d.K != KArray {
		return Datum{}, pgerror.New(pgcode.InvalidTextRepresentation, "malformed array literal: expected a JSON array for %s", t)
	}
	var dims []int
	if err := checkArrayShape(d.Elems(), jsonDims(d.Elems(), dims), new(bool)); err != nil {
		return Datum{}, err
	}
	switch {
	case t.Fam == TextArray:
		return d, nil
	case IsElemArray(t.Fam):
		return ToElemArray(d, t)
	}
	elem, _ := ArrayElem(t.Fam)
	return checkTypedArray(d, elem)
}

func jsonDims(a []Datum, dims []int) []int {
	for len(a) > 0 {
		dims = append(dims, len(a))
		if a[0].K != KArray {
			break
		}
		a = a[0].Elems()
	}
	return dims
}

// tstzLeavesIn returns the leaves of a timestamptz[] as their text in
// zone loc (a session's TimeZone).
func tstzLeavesIn(elems []Datum, loc *time.Location) []Datum {
	out := make([]Datum, len(elems))
	for i, e := range elems {
		switch e.K {
		case KArray:
			out[i] = Datum{K: KArray, A: NewElems(tstzLeavesIn(e.Elems(), loc))}
		case KTimestampTZ:
			out[i] = NewString(string(AppendTimestampTZ(nil, e.I, loc)))
		default:
			out[i] = e
		}
	}
	return out
}

// parseTstzArrayIn parses a timestamptz[] whose elements that name no
// zone are read in zone loc.
func parseTstzArrayIn(s string, loc *time.Location) (Datum, error) {
	d, err := parseTextArray(s)
	if err != nil {
		return Datum{}, err
	}
	var conv func(es []Datum) ([]Datum, error)
	conv = func(es []Datum) ([]Datum, error) {
		out := make([]Datum, len(es))
		for i, e := range es {
			switch e.K {
			case KArray:
				sub, err := conv(e.Elems())
				if err != nil {
					return nil, err
				}
				out[i] = Datum{K: KArray, A: NewElems(sub)}
			case KString:
				v, err := parseTimestampIn(e.S, loc)
				if err != nil {
					return nil, err
				}
				out[i] = v
			default:
				out[i] = e
			}
		}
		return out, nil
	}
	a, err := conv(d.Elems())
	if err != nil {
		return Datum{}, err
	}
	return Datum{K: KArray, A: NewElems(a)}, nil
}
