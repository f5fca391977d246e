package types

import "encoding/binary"

// smallint[] (int2[], oid 1005: pg_constraint.conkey and confkey) and
// boolean[] (bool[], oid 1000: array_agg of booleans) are arrays whose
// elements are of one type. Their values are text[] values whose elements
// are that type's text (KString "3", "t"), so every text[] function takes
// them unchanged (the families convert to text[] implicitly); what
// differs is the type clients see, the binary format, and that subscripts
// and unnest yield the element type (exec/eval), so that conkey's
// elements compare with pg_attribute.attnum across a subquery (SQLAlchemy
// 2's reflection).

// ArrayElem returns the element type of smallint[] and boolean[]; ok is
// false for other types.
func ArrayElem(f Family) (elem T, ok bool) {
	switch f {
	case Int2Array:
		return TInt2, true
	case BoolArray:
		return TBool, true
	}
	if e, ok := elemArrayElem[f]; ok {
		return e, true
	}
	return TUnknown, false
}

// parseTypedArray parses '{1,2}' as an array of elem.
func parseTypedArray(s string, elem T) (Datum, error) {
	d, err := parseTextArray(s)
	if err != nil {
		return Datum{}, err
	}
	return checkTypedArray(d, elem)
}

// checkTypedArray checks that every element of an array value reads as
// elem, as a cast to elem[] does, and returns the array with each element
// as elem prints it (so '{true}'::boolean[] holds "t").
func checkTypedArray(d Datum, elem T) (Datum, error) {
	out := make([]Datum, len(d.Elems()))
	for i, e := range d.Elems() {
		switch e.K {
		case KNull:
			continue
		case KArray:
			sub, err := checkTypedArray(e, elem)
			if err != nil {
				return Datum{}, err
			}
			out[i] = sub
			continue
		}
		s := e.S
		if e.K != KString {
			s = FormatText(e, elem)
		}
		v, err := ParseText(s, elem)
		if err != nil {
			return Datum{}, err
		}
		out[i] = NewString(FormatText(v, elem))
	}
	return Datum{K: KArray, A: NewElems(out)}, nil
}

// appendTypedArrayBinary appends array_send's layout of a one-dimensional
// array of elem: dimensions, the NULL flag, the element type, then each
// element as a length and its binary form.
func appendTypedArrayBinary(buf []byte, elems []Datum, elem T) ([]byte, error) {
	vals := make([]Datum, len(elems))
	hasNull := false
	for i, e := range elems {
		switch e.K {
		case KNull:
			hasNull = true
			continue
		case KArray:
			return buf, errEncode(Datum{K: KArray, A: NewElems(elems)}, T{Fam: TextArray})
		}
		s := e.S
		if e.K != KString {
			s = FormatText(e, elem)
		}
		v, err := ParseText(s, elem)
		if err != nil {
			return buf, err
		}
		vals[i] = v
	}
	ndim := uint32(1)
	if len(elems) == 0 {
		ndim = 0
	}
	buf = binary.BigEndian.AppendUint32(buf, ndim)
	if hasNull {
		buf = binary.BigEndian.AppendUint32(buf, 1)
	} else {
		buf = binary.BigEndian.AppendUint32(buf, 0)
	}
	buf = binary.BigEndian.AppendUint32(buf, elem.OID())
	if ndim == 0 {
		return buf, nil
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(elems)))
	buf = binary.BigEndian.AppendUint32(buf, 1)
	for i, e := range elems {
		if e.K == KNull {
			buf = binary.BigEndian.AppendUint32(buf, 0xFFFFFFFF)
			continue
		}
		at := len(buf)
		buf = append(buf, 0, 0, 0, 0)
		var err error
		if buf, err = EncodeBinary(buf, vals[i], elem); err != nil {
			return buf, err
		}
		binary.BigEndian.PutUint32(buf[at:], uint32(len(buf)-at-4))
	}
	return buf, nil
}
