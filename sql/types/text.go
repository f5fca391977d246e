package types

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// FormatText returns the text form of d as PostgreSQL 15 prints a value of
// type t with DateStyle ISO, IntervalStyle postgres and TimeZone UTC. d must
// not be NULL (callers print NULL themselves). The output follows d's kind;
// t only selects float4 formatting and unsigned oid/regclass numbers.
// Two differences from PostgreSQL: jsonb prints as stored (compact, keys
// in input order, where PostgreSQL sorts keys and adds spaces), and
// regclass prints the OID number (resolving names needs the catalog).
func FormatText(d Datum, t T) string {
	var buf [64]byte
	return string(AppendText(buf[:0], d, t))
}

// AppendText appends the text form of d (see FormatText) to b.
func AppendText(b []byte, d Datum, t T) []byte {
	switch d.K {
	case KNull:
		return b
	case KBool:
		if d.I != 0 {
			return append(b, 't')
		}
		return append(b, 'f')
	case KInt:
		if IsOidFamily(t.Fam) {
			if d.S != "" && t.Fam != Oid {
				// A reg* value carries its object's name for output
				// (see sql/types.NewRegName).
				return append(b, d.S...)
			}
			return strconv.AppendUint(b, uint64(uint32(d.I)), 10)
		}
		return strconv.AppendInt(b, d.I, 10)
	case KFloat:
		if t.Fam == Float4 {
			return appendFloat(b, d.Float(), 32)
		}
		return appendFloat(b, d.Float(), 64)
	case KDecimal:
		return appendDecimal(b, d)
	case KString, KJSON:
		return append(b, d.S...)
	case KBytes:
		return appendByteaHex(b, d.S)
	case KUUID:
		return appendUUID(b, d.S)
	case KDate:
		return appendDate(b, d.I)
	case KTime:
		return appendClock(b, d.I)
	case KTimestamp:
		return appendTimestamp(b, d.I, false)
	case KTimestampTZ:
		return appendTimestamp(b, d.I, true)
	case KInterval:
		return appendInterval(b, d)
	case KArray:
		if t.Fam == Record {
			return appendRecordText(b, d.Elems(), t)
		}
		if IsVector(t.Fam) {
			for i, e := range d.Elems() {
				if i > 0 {
					b = append(b, ' ')
				}
				b = AppendText(b, e, TText)
			}
			return b
		}
		return appendArrayText(b, d.Elems(), elemArrayElem[t.Fam])
	}
	return b
}

// appendFloat appends f as PostgreSQL 12+ prints float4 (bitSize 32) and
// float8 values: the shortest text that reads back exactly, in exponent
// form when the decimal exponent is < -4 or >= 15 (float8) / 6 (float4).
func appendFloat(b []byte, f float64, bitSize int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	}
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', -1, bitSize)
	k := bytes.IndexByte(e, 'e')
	exp, _ := strconv.Atoi(string(e[k+1:]))
	limit := 15
	if bitSize == 32 {
		limit = 6
	}
	if exp < -4 || exp >= limit {
		return append(b, e...)
	}
	return strconv.AppendFloat(b, f, 'f', -1, bitSize)
}

const hexDigits = "0123456789abcdef"

// appendByteaHex appends bytea hex output: \x0102.
func appendByteaHex(b []byte, s string) []byte {
	b = append(b, '\\', 'x')
	for i := 0; i < len(s); i++ {
		b = append(b, hexDigits[s[i]>>4], hexDigits[s[i]&15])
	}
	return b
}

// arrayNeedsQuotes reports whether an array element must be quoted.
func arrayNeedsQuotes(s string) bool {
	if s == "" || equalFold(s, "null") {
		return true
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '{', '}', ',', '"', '\\':
			return true
		default:
			if isSpace(c) {
				return true
			}
		}
	}
	return false
}

// appendArrayText appends PostgreSQL array output: {a,b,"c d",NULL};
// elem (the element type, or TUnknown) selects float4 formatting.
func appendArrayText(b []byte, elems []Datum, elem T) []byte {
	b = append(b, '{')
	for i, e := range elems {
		if i > 0 {
			b = append(b, ',')
		}
		switch e.K {
		case KNull:
			b = append(b, "NULL"...)
		case KArray:
			b = appendArrayText(b, e.Elems(), elem)
		default:
			var s string
			if e.K == KString {
				s = e.S
			} else {
				s = FormatText(e, elem)
			}
			if !arrayNeedsQuotes(s) {
				b = append(b, s...)
				continue
			}
			b = append(b, '"')
			for j := 0; j < len(s); j++ {
				if s[j] == '"' || s[j] == '\\' {
					b = append(b, '\\')
				}
				b = append(b, s[j])
			}
			b = append(b, '"')
		}
	}
	return append(b, '}')
}

// ParseText parses s in PostgreSQL's input syntax for type t. Errors are
// PostgreSQL's: 22P02 for malformed input, 22003 for numbers out of range,
// 22007/22008 for bad date/time values, 22001 for over-long varchar.
func ParseText(s string, t T) (Datum, error) {
	switch t.Fam {
	case Bool:
		v, ok := parseBool(s)
		if !ok {
			return Datum{}, pgerror.New(pgcode.InvalidTextRepresentation, "invalid input syntax for type boolean: \"%s\"", s)
		}
		return NewBool(v), nil
	case Int2:
		return parseInt(s, math.MinInt16, math.MaxInt16, "smallint")
	case Int4:
		return parseInt(s, math.MinInt32, math.MaxInt32, "integer")
	case Int8:
		return parseInt(s, math.MinInt64, math.MaxInt64, "bigint")
	case Oid, RegClass, RegType, RegProc, RegNamespace:
		return parseOid(s, t)
	case Float4:
		return parseFloat(s, 32)
	case Float8:
		return parseFloat(s, 64)
	case Numeric:
		if t.Prec > 0 {
			d, err := decParse(s, int(max(t.Scale, 0)))
			if err != nil {
				return Datum{}, err
			}
			return DecCoerce(d, t.Prec, t.Scale)
		}
		return DecFromString(s)
	case Text, Unknown:
		return NewString(s), nil
	case Varchar:
		return varcharInput(s, t)
	case Name:
		return NewString(truncateBytes(s, 63)), nil
	case Char:
		if s == "" {
			return NewString(""), nil
		}
		return NewString(s[:1]), nil
	case Bytea:
		return parseBytea(s)
	case Date:
		return parseDate(s)
	case Time:
		return parseTime(s)
	case Timestamp:
		return parseTimestamp(s, false)
	case TimestampTZ:
		return parseTimestamp(s, true)
	case Interval:
		return parseInterval(s)
	case JSONB:
		return parseJSON(s)
	case UUID:
		return parseUUID(s)
	case TextArray:
		return parseTextArray(s)
	case Int2Array, BoolArray:
		elem, _ := ArrayElem(t.Fam)
		return parseTypedArray(s, elem)
	case Int4Array, Int8Array, Float8Array, NumericArray, TimestampTZArray, Float4Array, DateArray, TimeArray,
		TimestampArray, IntervalArray, JSONBArray, VarcharArray, UUIDArray, ByteaArray:
		return parseElemArray(s, t)
	case Record:
		if len(t.RecordFields()) > 0 {
			return parseRecordText(s, t)
		}
	case Int2Vector, OidVector:
		elem := TInt2
		if t.Fam == OidVector {
			elem = TOid
		}
		var out []Datum
		for _, f := range strings.Fields(s) {
			if _, err := ParseText(f, elem); err != nil {
				return Datum{}, err
			}
			out = append(out, NewString(f))
		}
		return Datum{K: KArray, A: NewElems(out)}, nil
	}
	return Datum{}, pgerror.New(pgcode.FeatureNotSupported, "cannot parse input for type %s", t)
}

// parseBool implements PostgreSQL's parse_bool.
func parseBool(s string) (bool, bool) {
	t := trimSpace(s)
	if t == "" {
		return false, false
	}
	prefixOf := func(w string, minLen int) bool {
		return len(t) >= minLen && len(t) <= len(w) && equalFold(t, w[:len(t)])
	}
	switch t[0] {
	case 't', 'T':
		return true, prefixOf("true", 1)
	case 'f', 'F':
		return false, prefixOf("false", 1)
	case 'y', 'Y':
		return true, prefixOf("yes", 1)
	case 'n', 'N':
		return false, prefixOf("no", 1)
	case 'o', 'O':
		if prefixOf("on", 2) {
			return true, true
		}
		return false, prefixOf("off", 2)
	case '1':
		return true, len(t) == 1
	case '0':
		return false, len(t) == 1
	}
	return false, false
}

// scanInt parses [ws][+-]digits[ws]; ok is false on junk, ovf when the
// magnitude does not fit in a uint64.
func scanInt(s string) (neg bool, u uint64, ok, ovf bool) {
	t := trimSpace(s)
	i := 0
	if i < len(t) && (t[i] == '+' || t[i] == '-') {
		neg = t[i] == '-'
		i++
	}
	if i == len(t) {
		return
	}
	for ; i < len(t); i++ {
		c := t[i]
		if !isDigit(c) {
			return neg, 0, false, false
		}
		if u > (math.MaxUint64-9)/10 {
			ovf = true
		} else {
			u = u*10 + uint64(c-'0')
		}
	}
	return neg, u, true, ovf
}

// parseInt parses an integer of the given range (PostgreSQL's int2in,
// int4in, int8in).
func parseInt(s string, lo, hi int64, typ string) (Datum, error) {
	neg, u, ok, ovf := scanInt(s)
	if !ok {
		return Datum{}, pgerror.New(pgcode.InvalidTextRepresentation, "invalid input syntax for type %s: \"%s\"", typ, s)
	}
	v, fits := fromMag(neg, u)
	if ovf || !fits || v < lo || v > hi {
		return Datum{}, pgerror.New(pgcode.NumericValueOutOfRange, "value \"%s\" is out of range for type %s", s, typ)
	}
	return NewInt(v), nil
}

// parseOid parses an oid (PostgreSQL's oidin: -2147483648..4294967295,
// negatives wrap). RegClass accepts only numeric OIDs here; resolving
// relation names is the catalog's job.
func parseOid(s string, t T) (Datum, error) {
	typ := t.String()
	neg, u, ok, ovf := scanInt(s)
	if !ok {
		switch t.Fam {
		case RegClass:
			return Datum{}, pgerror.New(pgcode.UndefinedTable, "relation \"%s\" does not exist", trimSpace(s))
		case RegType:
			return RegTypeIn(s)
		case RegProc:
			return Datum{}, pgerror.New(pgcode.UndefinedFunction, "function \"%s\" does not exist", trimSpace(s))
		case RegNamespace:
			return Datum{}, pgerror.New("3F000", "schema \"%s\" does not exist", trimSpace(s))
		}
		return Datum{}, pgerror.New(pgcode.InvalidTextRepresentation, "invalid input syntax for type %s: \"%s\"", typ, s)
	}
	if ovf || (!neg && u > math.MaxUint32) || (neg && u > 1<<31) {
		return Datum{}, pgerror.New(pgcode.NumericValueOutOfRange, "value \"%s\" is out of range for type %s", s, typ)
	}
	if neg {
		return NewInt(int64(uint32(-int64(u)))), nil
	}
	return NewInt(int64(u)), nil
}

// pgNaN is the NaN PostgreSQL's float input produces (bits 0x7ff8000000000000).
var pgNaN = math.Float64frombits(0x7ff8000000000000)

// parseFloat parses float8 (bitSize 64) or float4 (32) input as
// PostgreSQL's float8in/float4in.
func parseFloat(s string, bitSize int) (Datum, error) {
	typ := "double precision"
	if bitSize == 32 {
		typ = "real"
	}
	t := trimSpace(s)
	syntax := func() (Datum, error) {
		return Datum{}, pgerror.New(pgcode.InvalidTextRepresentation, "invalid input syntax for type %s: \"%s\"", typ, s)
	}
	rangeErr := func() (Datum, error) {
		return Datum{}, pgerror.New(pgcode.NumericValueOutOfRange, "\"%s\" is out of range for type %s", s, typ)
	}
	if t == "" {
		return syntax()
	}
	for i := 0; i < len(t); i++ {
		if t[i] == '_' {
			return syntax()
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return rangeErr()
		}
		return syntax()
	}
	if f != f {
		f = pgNaN
	}
	if f == 0 && hasNonzeroMantissa(t) {
		return rangeErr()
	}
	if bitSize == 32 && !math.IsNaN(f) && !math.IsInf(f, 0) {
		f32 := float32(f)
		if math.IsInf(float64(f32), 0) || (f32 == 0 && f != 0) {
			return rangeErr()
		}
		f = float64(f32)
	}
	return NewFloat(f), nil
}

// hasNonzeroMantissa reports whether the mantissa of a decimal float
// literal has a nonzero digit (to detect underflow to zero).
func hasNonzeroMantissa(t string) bool {
	hex := len(t) > 2 && (t[1] == 'x' || t[1] == 'X' || (len(t) > 3 && (t[2] == 'x' || t[2] == 'X')))
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !hex && (c == 'e' || c == 'E') {
			return false
		}
		if hex && (c == 'p' || c == 'P') {
			return false
		}
		if '1' <= c && c <= '9' {
			return true
		}
		if hex && (('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')) {
			return true
		}
	}
	return false
}

// varcharInput checks varchar(n) input: over-long values are an error
// unless the excess is all spaces, which is trimmed (PostgreSQL's varchar_in).
func varcharInput(s string, t T) (Datum, error) {
	if t.Prec <= 0 {
		return NewString(s), nil
	}
	cut, ok := runePrefix(s, int(t.Prec))
	if !ok {
		return NewString(s), nil
	}
	for i := cut; i < len(s); i++ {
		if s[i] != ' ' {
			return Datum{}, pgerror.New(pgcode.StringDataRightTrunc, "value too long for type character varying(%d)", t.Prec)
		}
	}
	return NewString(s[:cut]), nil
}

// runePrefix returns the byte length of the first n characters of s and
// whether s is longer than that.
func runePrefix(s string, n int) (int, bool) {
	i := 0
	for k := 0; k < n; k++ {
		if i >= len(s) {
			return len(s), false
		}
		_, sz := utf8.DecodeRuneInString(s[i:])
		i += sz
	}
	return i, i < len(s)
}

// truncateBytes cuts s to at most n bytes without splitting a character.
func truncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// parseBytea parses bytea input in hex (\x0102) or escape format.
func parseBytea(s string) (Datum, error) {
	if len(s) >= 2 && s[0] == '\\' && s[1] == 'x' {
		out := make([]byte, 0, (len(s)-2)/2)
		for i := 2; i < len(s); {
			c := s[i]
			if c == ' ' || c == '\n' || c == '\t' || c == '\r' {
				i++
				continue
			}
			hi, ok := unhex(c)
			if !ok {
				return Datum{}, pgerror.New(pgcode.InvalidParameterValue, "invalid hexadecimal digit: \"%s\"", badChar(s, i))
			}
			if i+1 >= len(s) {
				return Datum{}, pgerror.New(pgcode.InvalidParameterValue, "invalid hexadecimal data: odd number of digits")
			}
			lo, ok := unhex(s[i+1])
			if !ok {
				return Datum{}, pgerror.New(pgcode.InvalidParameterValue, "invalid hexadecimal digit: \"%s\"", badChar(s, i+1))
			}
			out = append(out, hi<<4|lo)
			i += 2
		}
		return NewBytes(out), nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '\\':
			out = append(out, '\\')
			i += 2
		case i+3 < len(s) && '0' <= s[i+1] && s[i+1] <= '3' && '0' <= s[i+2] && s[i+2] <= '7' && '0' <= s[i+3] && s[i+3] <= '7':
			out = append(out, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 4
		default:
			return Datum{}, pgerror.New(pgcode.InvalidTextRepresentation, "invalid input syntax for type bytea")
		}
	}
	return NewBytes(out), nil
}

// badChar returns the (possibly multi-byte) character at s[i].
func badChar(s string, i int) string {
	_, n := utf8.DecodeRuneInString(s[i:])
	return s[i : i+n]
}

// parseJSON parses JSON text into its canonical jsonb text (jsonb.go).
func parseJSON(s string) (Datum, error) {
	return ParseJSONDatum(s)
}

// arrayParser parses PostgreSQL array literals of text elements.
type arrayParser struct {
	s string
	i int
}

func (p *arrayParser) skipSpaces() {
	for p.i < len(p.s) && isSpace(p.s[p.i]) {
		p.i++
	}
}

// parseTextArray parses a text[] literal: {a,b,"c d",NULL} and nested
// {{a,b},{c,d}} (sub-arrays must match in length).
func parseTextArray(s string) (Datum, error) {
	p := &arrayParser{s: s}
	malformed := func(detail string) (Datum, error) {
		return Datum{}, pgerror.New(pgcode.InvalidTextRepresentation, "malformed array literal: \"%s\"", s).WithDetail("%s", detail)
	}
	p.skipSpaces()
	if p.i >= len(s) || s[p.i] != '{' {
		return malformed("Array value must start with \"{\" or dimension information.")
	}
	elems, detail := p.parseLevel(0)
	if detail != "" {
		return malformed(detail)
	}
	p.skipSpaces()
	if p.i != len(s) {
		return malformed("Junk after closing right brace.")
	}
	return Datum{K: KArray, A: NewElems(elems)}, nil
}

// parseLevel parses one brace level at p.i == '{'; detail is non-empty on
// error.
func (p *arrayParser) parseLevel(depth int) ([]Datum, string) {
	if depth >= 6 {
		return nil, "number of array dimensions exceeds the maximum allowed (6)"
	}
	p.i++ // '{'
	elems := []Datum{}
	nested := -1 // -1 unknown, 0 scalars, 1 sub-arrays
	subLen := -1
	p.skipSpaces()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return elems, ""
	}
	for {
		p.skipSpaces()
		if p.i >= len(p.s) {
			return nil, "Unexpected end of input."
		}
		c := p.s[p.i]
		if c == '{' {
			if nested == 0 {
				return nil, "Unexpected \"{\" character."
			}
			nested = 1
			sub, detail := p.parseLevel(depth + 1)
			if detail != "" {
				return nil, detail
			}
			if subLen >= 0 && len(sub) != subLen {
				return nil, "Multidimensional arrays must have sub-arrays with matching dimensions."
			}
			subLen = len(sub)
			elems = append(elems, Datum{K: KArray, A: NewElems(sub)})
		} else {
			if nested == 1 {
				return nil, "Unexpected array element."
			}
			nested = 0
			d, detail := p.parseElement()
			if detail != "" {
				return nil, detail
			}
			elems = append(elems, d)
		}
		p.skipSpaces()
		if p.i >= len(p.s) {
			return nil, "Unexpected end of input."
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return elems, ""
		default:
			return nil, "Unexpected \"" + string(p.s[p.i]) + "\" character."
		}
	}
}

// parseElement parses one scalar element (quoted or not).
func (p *arrayParser) parseElement() (Datum, string) {
	var out []byte
	quoted := false
	sawAny := false
	lastNonSpace := 0 // length of out up to the last unquoted non-space or quoted byte
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			if sawAny && !quoted {
				return Datum{}, "Unexpected \"\"\" character."
			}
			if quoted {
				return Datum{}, "Unexpected \"\"\" character."
			}
			p.i++
			quoted, sawAny = true, true
			for {
				if p.i >= len(p.s) {
					return Datum{}, "Unexpected end of input."
				}
				c := p.s[p.i]
				if c == '\\' {
					if p.i+1 >= len(p.s) {
						return Datum{}, "Unexpected end of input."
					}
					out = append(out, p.s[p.i+1])
					p.i += 2
					continue
				}
				p.i++
				if c == '"' {
					break
				}
				out = append(out, c)
			}
			lastNonSpace = len(out)
		case c == ',' || c == '}':
			if !sawAny {
				return Datum{}, "Unexpected \"" + string(c) + "\" character."
			}
			if quoted {
				return NewString(string(out)), ""
			}
			v := string(out[:lastNonSpace])
			if equalFold(v, "null") {
				return Null, ""
			}
			return NewString(v), ""
		case c == '{':
			return Datum{}, "Unexpected \"{\" character."
		case quoted:
			if !isSpace(c) {
				return Datum{}, "Incorrectly quoted array element."
			}
			p.i++
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return Datum{}, "Unexpected end of input."
			}
			out = append(out, p.s[p.i+1])
			p.i += 2
			sawAny = true
			lastNonSpace = len(out)
		default:
			out = append(out, c)
			p.i++
			if !isSpace(c) {
				sawAny = true
				lastNonSpace = len(out)
			}
		}
	}
	return Datum{}, "Unexpected end of input."
}

// errCannotCast is PostgreSQL's 42846 error for a cast that does not exist.
func errCannotCast(from, to T) error {
	return pgerror.New(pgcode.CannotCoerce, "cannot cast type %s to %s", from, to)
}

// Cast converts d of type from to type to as SQL CAST does: between number
// types (with range checks; float to integer rounds to nearest-even as
// PostgreSQL's rint, numeric to integer half away from zero), to the
// string types via the text output (bool gives "true"/"false"; varchar(n)
// and name truncate), from the string types via ParseText, integer <->
// boolean, date <-> timestamp <-> timestamptz (UTC), timestamp -> time,
// time <-> interval, oid <-> integer and jsonb -> scalar. NULL casts to
// NULL. Unsupported pairs give 42846 "cannot cast type X to Y".
func Cast(d Datum, from, to T) (Datum, error) {
	if d.K == KNull {
		return Null, nil
	}
	if from.Fam == Unknown {
		from = kindType(d.K)
	}
	switch to.Fam {
	case Text, Varchar, Name, Char, Unknown:
		return castToString(d, from, to)
	}
	if d.K == KString {
		// text -> anything: the input function, then the type modifier.
		if !from.IsString() {
			return Datum{}, errCannotCast(from, to)
		}
		if to.Fam == VarcharArray && to.Prec > 0 {
			// The explicit cast cuts each element (see below).
			v, err := ParseText(d.S, TVarcharArray)
			if err != nil {
				return v, err
			}
			return Datum{K: KArray, A: NewElems(cutLeaves(v.Elems(), int(to.Prec)))}, nil
		}
		return ParseText(d.S, to)
	}
	if d.K == KJSON && to.Fam != JSONB {
		return castFromJSON(d, to)
	}
	switch to.Fam {
	case Bool:
		switch d.K {
		case KBool:
			return d, nil
		case KInt:
			if IsOidFamily(from.Fam) {
				break
			}
			return NewBool(d.I != 0), nil
		}
	case Int2, Int4, Int8, Oid, RegClass, RegType, RegProc, RegNamespace:
		return castToInt(d, from, to)
	case Float4, Float8:
		var f float64
		switch d.K {
		case KInt:
			f = float64(d.I)
		case KFloat:
			f = d.Float()
		case KDecimal:
			// PostgreSQL converts through the text form, so range errors
			// quote it.
			f = DecToFloat(d)
			f32 := float32(f)
			if d.X >= 0 && (f == 0 && d.I != 0 || math.IsInf(f, 0) || to.Fam == Float4 && (math.IsInf(float64(f32), 0) || f32 == 0 && d.I != 0)) {
				typ := "double precision"
				if to.Fam == Float4 {
					typ = "real"
				}
				return Datum{}, pgerror.New(pgcode.NumericValueOutOfRange, "\"%s\" is out of range for type %s", DecString(d), typ)
			}
		default:
			return Datum{}, errCannotCast(from, to)
		}
		if to.Fam == Float4 && !math.IsNaN(f) && !math.IsInf(f, 0) {
			f32 := float32(f)
			if math.IsInf(float64(f32), 0) {
				return Datum{}, pgerror.New(pgcode.NumericValueOutOfRange, "value out of range: overflow")
			}
			if f32 == 0 && f != 0 {
				return Datum{}, pgerror.New(pgcode.NumericValueOutOfRange, "value out of range: underflow")
			}
			f = float64(f32)
		}
		return NewFloat(f), nil
	case Numeric:
		var r Datum
		var err error
		switch d.K {
		case KInt:
			r = DecFromInt(d.I)
		case KFloat:
			if from.Fam == Float4 {
				r, err = decFromFloatDigits(d.Float(), 6)
			} else {
				r, err = DecFromFloat(d.Float())
			}
		case KDecimal:
			r = d
		default:
			return Datum{}, errCannotCast(from, to)
		}
		if err != nil {
			return Datum{}, err
		}
		return DecCoerce(r, to.Prec, to.Scale)
	case Bytea:
		if d.K == KBytes {
			return d, nil
		}
	case Date:
		switch d.K {
		case KDate:
			return d, nil
		case KTimestamp, KTimestampTZ:
			if d.I == InfinityI || d.I == NegInfinityI {
				return NewDate(d.I), nil
			}
			return NewDate(floorDiv(d.I, usPerDay)), nil
		}
	case Time:
		switch d.K {
		case KTime:
			return d, nil
		case KTimestamp, KTimestampTZ:
			if d.I == InfinityI || d.I == NegInfinityI {
				return Datum{}, pgerror.New(pgcode.DatetimeFieldOverflow, "timestamp out of range")
			}
			return NewTime(floorMod(d.I, usPerDay)), nil
		case KInterval:
			return NewTime(floorMod(d.I, usPerDay)), nil
		}
	case Timestamp, TimestampTZ:
		mk := NewTimestamp
		if to.Fam == TimestampTZ {
			mk = NewTimestampTZ
		}
		switch d.K {
		case KTimestamp, KTimestampTZ:
			return mk(d.I), nil
		case KDate:
			if d.I == InfinityI || d.I == NegInfinityI {
				return mk(d.I), nil
			}
			if d.I < minDateDays || d.I > maxTsDays {
				return Datum{}, pgerror.New(pgcode.DatetimeFieldOverflow, "date out of range for timestamp")
			}
			return mk(d.I * usPerDay), nil
		}
	case Interval:
		switch d.K {
		case KInterval:
			return d, nil
		case KTime:
			return NewInterval(0, 0, d.I), nil
		}
	case JSONB:
		if d.K == KJSON {
			return d, nil
		}
	case UUID:
		if d.K == KUUID {
			return d, nil
		}
	case TextArray, Int2Vector, OidVector:
		if d.K == KArray {
			if IsElemArray(from.Fam) {
				return Datum{K: KArray, A: NewElems(LeavesToText(d.Elems(), elemArrayElem[from.Fam]))}, nil
			}
			return d, nil
		}
	case Int4Array, Int8Array, Float8Array, NumericArray, TimestampTZArray, Float4Array, DateArray, TimeArray,
		TimestampArray, IntervalArray, JSONBArray, VarcharArray, UUIDArray, ByteaArray:
		if d.K == KArray {
			if to.Fam == VarcharArray && to.Prec > 0 {
				// An explicit cast to varchar(n)[] cuts each element,
				// as one to varchar(n) does.
				v, err := ToElemArray(d, TVarcharArray)
				if err != nil {
					return v, err
				}
				return Datum{K: KArray, A: NewElems(cutLeaves(v.Elems(), int(to.Prec)))}, nil
			}
			return ToElemArray(d, to)
		}
	case Record:
		if d.K == KArray && len(to.RecordFields()) > 0 {
			return castRecord(d, from, to)
		}
		if d.K == KArray {
			return d, nil
		}
	case Int2Array, BoolArray:
		if d.K == KArray {
			elem, _ := ArrayElem(to.Fam)
			return checkTypedArray(d, elem)
		}
	}
	return Datum{}, errCannotCast(from, to)
}

// cutLeaves returns the string leaves of a cut to n characters.
func cutLeaves(a []Datum, n int) []Datum {
	out := make([]Datum, len(a))
	for i, e := range a {
		switch e.K {
		case KArray:
			e = Datum{K: KArray, A: NewElems(cutLeaves(e.Elems(), n))}
		case KString:
			if cut, long := runePrefix(e.S, n); long {
				e = NewString(e.S[:cut])
			}
		}
		out[i] = e
	}
	return out
}

// kindType returns a representative type for a datum kind.
func kindType(k Kind) T {
	switch k {
	case KBool:
		return TBool
	case KInt:
		return TInt8
	case KFloat:
		return TFloat8
	case KDecimal:
		return TNumeric
	case KString:
		return TText
	case KBytes:
		return TBytea
	case KDate:
		return TDate
	case KTime:
		return TTime
	case KTimestamp:
		return TTimestamp
	case KTimestampTZ:
		return TTimestampTZ
	case KInterval:
		return TInterval
	case KJSON:
		return TJSONB
	case KArray:
		return TTextArray
	case KUUID:
		return TUUID
	}
	return TUnknown
}

// castToString implements casts to text, varchar(n), name and "char".
func castToString(d Datum, from, to T) (Datum, error) {
	var s string
	switch d.K {
	case KString:
		s = d.S
	case KBool:
		if d.I != 0 {
			s = "true"
		} else {
			s = "false"
		}
	default:
		s = FormatText(d, from)
	}
	switch to.Fam {
	case Varchar:
		if to.Prec > 0 {
			if cut, long := runePrefix(s, int(to.Prec)); long {
				s = s[:cut]
			}
		}
	case Name:
		s = truncateBytes(s, 63)
	case Char:
		if len(s) > 1 {
			s = s[:1]
		}
	}
	return NewString(s), nil
}

// intRange returns the bounds and name of an integer type.
func intRange(t T) (lo, hi int64, name string) {
	switch t.Fam {
	case Int2:
		return math.MinInt16, math.MaxInt16, "smallint"
	case Int4:
		return math.MinInt32, math.MaxInt32, "integer"
	case Oid, RegClass, RegType, RegProc, RegNamespace:
		return 0, math.MaxUint32, "OID"
	}
	return math.MinInt64, math.MaxInt64, "bigint"
}

// castToInt implements casts to the integer types and oid.
func castToInt(d Datum, from, to T) (Datum, error) {
	lo, hi, name := intRange(to)
	outOfRange := func() (Datum, error) {
		return Datum{}, pgerror.New(pgcode.NumericValueOutOfRange, "%s out of range", name)
	}
	var v int64
	switch d.K {
	case KInt:
		v = d.I
		fromOid := IsOidFamily(from.Fam)
		toOid := IsOidFamily(to.Fam)
		switch {
		case fromOid && to.Fam == Int4:
			return NewInt(int64(int32(uint32(v)))), nil
		case toOid && from.Fam != Int8 && v < 0 && v >= math.MinInt32:
			return NewInt(int64(uint32(int32(v)))), nil
		}
	case KBool:
		if from.Fam == Bool && IsOidFamily(to.Fam) {
			return Datum{}, errCannotCast(from, to)
		}
		v = d.I
	case KFloat:
		if IsOidFamily(to.Fam) {
			return Datum{}, errCannotCast(from, to)
		}
		f := math.RoundToEven(d.Float())
		// float64(hi)+1 is exact for int2/int4 and rounds to 2^63 for int8.
		if math.IsNaN(f) || f < float64(lo) || f >= float64(hi)+1 {
			return outOfRange()
		}
		v = int64(f)
	case KDecimal:
		if IsOidFamily(to.Fam) {
			return Datum{}, errCannotCast(from, to)
		}
		if d.X == decNaN {
			return Datum{}, pgerror.New(pgcode.FeatureNotSupported, "cannot convert NaN to %s", name)
		}
		if d.X < 0 {
			return Datum{}, pgerror.New(pgcode.FeatureNotSupported, "cannot convert infinity to %s", name)
		}
		r, err := DecToInt(d)
		if err != nil {
			return outOfRange()
		}
		v = r
	default:
		return Datum{}, errCannotCast(from, to)
	}
	if v < lo || v > hi {
		return outOfRange()
	}
	return NewInt(v), nil
}

// jsonKind names the JSON value type of canonical JSON text as PostgreSQL
// does in cast errors.
func jsonKind(s string) string {
	if s == "" {
		return "null"
	}
	switch s[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "numeric"
}

// castFromJSON implements jsonb -> text-free scalar casts.
func castFromJSON(d Datum, to T) (Datum, error) {
	kind := jsonKind(d.S)
	bad := func() (Datum, error) {
		return Datum{}, pgerror.New(pgcode.InvalidParameterValue, "cannot cast jsonb %s to type %s", kind, to)
	}
	switch to.Fam {
	case Bool:
		if kind != "boolean" {
			return bad()
		}
		return NewBool(d.S[0] == 't'), nil
	case Int2, Int4, Int8, Float4, Float8, Numeric:
		if kind != "numeric" {
			return bad()
		}
		n, err := DecFromString(d.S)
		if err != nil {
			if to.Fam == Float4 || to.Fam == Float8 {
				return parseFloat(d.S, int(to.Size())*8)
			}
			return Datum{}, err
		}
		return Cast(n, TNumeric, to)
	}
	return Datum{}, errCannotCast(TJSONB, to)
}
