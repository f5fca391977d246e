package types

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// This file is jsonb as PostgreSQL stores it. A KJSON datum holds the
// value's canonical text, which is exactly what PostgreSQL's jsonb_out
// prints: object keys sorted by length, then bytewise (the order jsonb
// stores them in), a duplicate key keeping its last value, numbers as
// numeric_out prints the numeric they were read into ("1.50" stays, "1e2"
// is "100"), ", " and ": " separators. Two jsonb values are equal when
// PostgreSQL's jsonb btree comparison says so (compareJsonbContainers): so
// '1.0' equals '1' although their texts differ; JSONCompare and the hash
// (hashJSONValue) follow that comparison.

// JSONKind is the type of a JSON value, ordered as PostgreSQL's
// JsonbValue types compare (null < string < number < bool < array <
// object).
type JSONKind uint8

// JSON value kinds.
const (
	JNull JSONKind = iota
	JString
	JNumber
	JBool
	JArray
	JObject
)

// JSON is one parsed jsonb value.
type JSON struct {
	Kind  JSONKind
	Str   string // string value; number text as numeric_out prints it
	Bool  bool
	Elems []*JSON  // array elements
	Keys  []string // object keys in storage order
	Vals  []*JSON  // object values, parallel to Keys
}

// TypeName is the name jsonb_typeof returns.
func (j *JSON) TypeName() string {
	switch j.Kind {
	case JString:
		return "string"
	case JNumber:
		return "number"
	case JBool:
		return "boolean"
	case JArray:
		return "array"
	case JObject:
		return "object"
	}
	return "null"
}

// Get returns the value of key in an object (nil when absent or not an
// object).
func (j *JSON) Get(key string) *JSON {
	if j.Kind != JObject {
		return nil
	}
	i := sort.Search(len(j.Keys), func(i int) bool { return !keyLess(j.Keys[i], key) })
	if i < len(j.Keys) && j.Keys[i] == key {
		return j.Vals[i]
	}
	return nil
}

// keyLess is jsonb's key order: shorter keys first, then bytewise.
func keyLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// Normalize sorts an object's keys into storage order and drops duplicate
// keys (the last value wins), as jsonb input does. Nested values must be
// normalized already.
func (j *JSON) Normalize() {
	if j.Kind != JObject || len(j.Keys) < 2 {
		return
	}
	idx := make([]int, len(j.Keys))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return keyLess(j.Keys[idx[a]], j.Keys[idx[b]]) })
	keys := make([]string, 0, len(idx))
	vals := make([]*JSON, 0, len(idx))
	for _, i := range idx {
		if n := len(keys); n > 0 && keys[n-1] == j.Keys[i] {
			vals[n-1] = j.Vals[i] // stable sort: later duplicates come later
			continue
		}
		keys = append(keys, j.Keys[i])
		vals = append(vals, j.Vals[i])
	}
	j.Keys, j.Vals = keys, vals
}

// JSONString returns a JSON string value.
func JSONString(s string) *JSON { return &JSON{Kind: JString, Str: s} }

// JSONNull is the JSON null value.
func JSONNull() *JSON { return &JSON{Kind: JNull} }

// ParseJSON parses JSON text into a normalized value. Errors are
// PostgreSQL's: 22P02 "invalid input syntax for type json" with the same
// DETAIL, 22P05 for \u0000.
func ParseJSON(s string) (*JSON, error) {
	p := &jsonParser{s: s}
	p.ws()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.i < len(p.s) {
		return nil, p.errToken("Expected end of input, but found %s.")
	}
	return v, nil
}

// ParseJSONDatum parses JSON text into a jsonb datum holding its canonical
// text.
func ParseJSONDatum(s string) (Datum, error) {
	v, err := ParseJSON(s)
	if err != nil {
		return Datum{}, err
	}
	return NewJSON(v.String()), nil
}

// JSONOf parses the canonical text of a jsonb datum (it cannot fail for
// values Sluice produced; a corrupt one is reported as XX000).
func JSONOf(d Datum) (*JSON, error) {
	v, err := ParseJSON(d.S)
	if err != nil {
		return nil, pgerror.New(pgcode.Internal, "corrupt jsonb value %q", d.S)
	}
	return v, nil
}

// maxJSONDepth bounds nesting as PostgreSQL's stack depth check does.
const maxJSONDepth = 6400

type jsonParser struct {
	s string
	i int
}

func (p *jsonParser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) errf(detail string, args ...any) error {
	return pgerror.New(pgcode.InvalidTextRepresentation, "invalid input syntax for type json").WithDetail(detail, args...)
}

func (p *jsonParser) errEnd() error { return p.errf("The input string ended unexpectedly.") }

// token returns the token at p.i as PostgreSQL's lexer delimits it.
func (p *jsonParser) token() string {
	if p.i >= len(p.s) {
		return ""
	}
	switch c := p.s[p.i]; c {
	case '{', '}', '[', ']', ',', ':':
		return string(c)
	case '"':
		j := p.i + 1
		for j < len(p.s) && p.s[j] != '"' {
			if p.s[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(p.s) {
			return p.s[p.i:]
		}
		return p.s[p.i : j+1]
	}
	j := p.i
	for j < len(p.s) && !strings.ContainsRune(" \t\n\r{}[],:\"", rune(p.s[j])) {
		j++
	}
	if j == p.i {
		_, n := utf8.DecodeRuneInString(p.s[p.i:])
		j += n
	}
	return p.s[p.i:j]
}

// errToken reports the token at p.i with a DETAIL format taking its quoted
// text.
func (p *jsonParser) errToken(detail string) error {
	if p.i >= len(p.s) {
		return p.errEnd()
	}
	return p.errf(detail, strconv.Quote(p.token()))
}

func (p *jsonParser) value(depth int) (*JSON, error) {
	if depth > maxJSONDepth {
		return nil, pgerror.New(pgcode.Code("54001"), "stack depth limit exceeded")
	}
	if p.i >= len(p.s) {
		return nil, p.errEnd()
	}
	switch c := p.s[p.i]; {
	case c == '{':
		p.i++
		obj := &JSON{Kind: JObject}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return obj, nil
		}
		for {
			p.ws()
			if p.i >= len(p.s) {
				return nil, p.errEnd()
			}
			if p.s[p.i] != '"' {
				return nil, p.errToken("Expected string or \"}\", but found %s.")
			}
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			p.ws()
			if p.i >= len(p.s) {
				return nil, p.errEnd()
			}
			if p.s[p.i] != ':' {
				return nil, p.errToken("Expected \":\", but found %s.")
			}
			p.i++
			p.ws()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			obj.Keys = append(obj.Keys, k)
			obj.Vals = append(obj.Vals, v)
			p.ws()
			if p.i >= len(p.s) {
				return nil, p.errEnd()
			}
			if p.s[p.i] == '}' {
				p.i++
				obj.Normalize()
				return obj, nil
			}
			if p.s[p.i] != ',' {
				return nil, p.errToken("Expected \",\" or \"}\", but found %s.")
			}
			p.i++
		}
	case c == '[':
		p.i++
		arr := &JSON{Kind: JArray}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return arr, nil
		}
		for {
			p.ws()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			arr.Elems = append(arr.Elems, v)
			p.ws()
			if p.i >= len(p.s) {
				return nil, p.errEnd()
			}
			if p.s[p.i] == ']' {
				p.i++
				return arr, nil
			}
			if p.s[p.i] != ',' {
				return nil, p.errToken("Expected \",\" or \"]\", but found %s.")
			}
			p.i++
		}
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return JSONString(s), nil
	case c == '-' || ('0' <= c && c <= '9'):
		return p.number()
	}
	tok := p.token()
	switch tok {
	case "true", "false":
		p.i += len(tok)
		return &JSON{Kind: JBool, Bool: tok == "true"}, nil
	case "null":
		p.i += len(tok)
		return JSONNull(), nil
	case "}", "]", ",", ":":
		return nil, p.errToken("Expected JSON value, but found %s.")
	}
	return nil, p.errToken("Token %s is invalid.")
}

// number reads a JSON number (RFC 8259 grammar) and keeps it as
// numeric_out prints the numeric it denotes.
func (p *jsonParser) number() (*JSON, error) {
	start := p.i
	j := p.i
	digits := func() int {
		n := 0
		for j < len(p.s) && '0' <= p.s[j] && p.s[j] <= '9' {
			j++
			n++
		}
		return n
	}
	bad := func() (*JSON, error) {
		k := j
		for k < len(p.s) && !strings.ContainsRune(" \t\n\r{}[],:\"", rune(p.s[k])) {
			k++
		}
		return nil, p.errf("Token %s is invalid.", strconv.Quote(p.s[start:k]))
	}
	if p.s[j] == '-' {
		j++
	}
	if j < len(p.s) && p.s[j] == '0' {
		j++
	} else if digits() == 0 {
		return bad()
	}
	if j < len(p.s) && p.s[j] == '.' {
		j++
		if digits() == 0 {
			return bad()
		}
	}
	if j < len(p.s) && (p.s[j] == 'e' || p.s[j] == 'E') {
		j++
		if j < len(p.s) && (p.s[j] == '+' || p.s[j] == '-') {
			j++
		}
		if digits() == 0 {
			return bad()
		}
	}
	if j < len(p.s) && !strings.ContainsRune(" \t\n\r{}[],:", rune(p.s[j])) {
		return bad()
	}
	p.i = j
	d, err := DecFromString(p.s[start:j])
	if err != nil {
		return nil, err
	}
	return &JSON{Kind: JNumber, Str: FormatText(d, TNumeric)}, nil
}

// str reads a JSON string at p.i (the opening quote).
func (p *jsonParser) str() (string, error) {
	p.i++
	var b []byte
	for {
		if p.i >= len(p.s) {
			return "", p.errEnd()
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return string(b), nil
		case c < 0x20:
			return "", p.errf("Character with value 0x%02x must be escaped.", c)
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return "", p.errEnd()
			}
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, err := p.hex4()
				if err != nil {
					return "", err
				}
				if 0xD800 <= r && r <= 0xDBFF {
					if p.i+1 < len(p.s) && p.s[p.i] == '\\' && p.s[p.i+1] == 'u' {
						p.i += 2
						lo, err := p.hex4()
						if err != nil {
							return "", err
						}
						if lo < 0xDC00 || lo > 0xDFFF {
							return "", p.errf("Unicode low surrogate must follow a high surrogate.")
						}
						r = (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000
					} else {
						return "", p.errf("Unicode low surrogate must follow a high surrogate.")
					}
				} else if 0xDC00 <= r && r <= 0xDFFF {
					return "", p.errf("Unicode low surrogate must follow a high surrogate.")
				}
				if r == 0 {
					return "", pgerror.New(pgcode.Code("22P05"), "unsupported Unicode escape sequence").
						WithDetail("\\u0000 cannot be converted to text.")
				}
				b = utf8.AppendRune(b, rune(r))
			default:
				return "", p.errf("Escape sequence \"\\%c\" is invalid.", e)
			}
		default:
			b = append(b, c)
			p.i++
		}
	}
}

func (p *jsonParser) hex4() (int, error) {
	if p.i+4 > len(p.s) {
		return 0, p.errf("\"\\u\" must be followed by four hexadecimal digits.")
	}
	v, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32)
	if err != nil {
		return 0, p.errf("\"\\u\" must be followed by four hexadecimal digits.")
	}
	p.i += 4
	return int(v), nil
}

// String prints j as jsonb_out does.
func (j *JSON) String() string {
	return string(j.Append(nil))
}

// Append appends j's text as jsonb_out prints it.
func (j *JSON) Append(b []byte) []byte {
	switch j.Kind {
	case JNull:
		return append(b, "null"...)
	case JBool:
		if j.Bool {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case JNumber:
		return append(b, j.Str...)
	case JString:
		return AppendJSONString(b, j.Str)
	case JArray:
		b = append(b, '[')
		for i, e := range j.Elems {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = e.Append(b)
		}
		return append(b, ']')
	}
	b = append(b, '{')
	for i, k := range j.Keys {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = AppendJSONString(b, k)
		b = append(b, ": "...)
		b = j.Vals[i].Append(b)
	}
	return append(b, '}')
}

// AppendJSONString appends s quoted as PostgreSQL's escape_json does.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		default:
			if c < 0x20 {
				b = append(b, `\u00`...)
				b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}

// Pretty prints j as jsonb_pretty does (four-space indents).
func (j *JSON) Pretty() string {
	var b []byte
	var walk func(v *JSON, level int)
	indent := func(level int) {
		b = append(b, '\n')
		for i := 0; i < level; i++ {
			b = append(b, "    "...)
		}
	}
	walk = func(v *JSON, level int) {
		switch v.Kind {
		case JArray:
			if len(v.Elems) == 0 {
				b = append(b, "[\n"...)
				for i := 0; i < level; i++ {
					b = append(b, "    "...)
				}
				b = append(b, ']')
				return
			}
			b = append(b, '[')
			for i, e := range v.Elems {
				if i > 0 {
					b = append(b, ',')
				}
				indent(level + 1)
				walk(e, level+1)
			}
			indent(level)
			b = append(b, ']')
		case JObject:
			if len(v.Keys) == 0 {
				b = append(b, "{\n"...)
				for i := 0; i < level; i++ {
					b = append(b, "    "...)
				}
				b = append(b, '}')
				return
			}
			b = append(b, '{')
			for i, k := range v.Keys {
				if i > 0 {
					b = append(b, ',')
				}
				indent(level + 1)
				b = AppendJSONString(b, k)
				b = append(b, ": "...)
				walk(v.Vals[i], level+1)
			}
			indent(level)
			b = append(b, '}')
		default:
			b = v.Append(b)
		}
	}
	walk(j, 0)
	return string(b)
}

// JSONCompare orders two jsonb values as PostgreSQL's jsonb btree
// operator class does (compareJsonbContainers): a top-level scalar is a
// one-element "raw scalar" array, so it sorts below a one-element array
// and above an empty one; containers compare by their number of elements
// or pairs first, then element by element (objects key, value, key, ... in
// storage order); values of different types by type (null < string <
// number < bool < array < object); strings bytewise (the C collation),
// numbers by value.
func JSONCompare(a, b *JSON) int {
	aArr, bArr := a.Kind != JObject, b.Kind != JObject
	if aArr != bArr {
		if aArr {
			return -1
		}
		return 1
	}
	if !aArr {
		return jsonCmpValue(a, b)
	}
	aScalar, bScalar := a.Kind != JArray, b.Kind != JArray
	na, nb := 1, 1
	if !aScalar {
		na = len(a.Elems)
	}
	if !bScalar {
		nb = len(b.Elems)
	}
	if na != nb {
		return cmpInt64(int64(na), int64(nb))
	}
	if aScalar != bScalar {
		if aScalar {
			return -1
		}
		return 1
	}
	if aScalar {
		return jsonCmpValue(a, b)
	}
	for i := range a.Elems {
		if c := jsonCmpValue(a.Elems[i], b.Elems[i]); c != 0 {
			return c
		}
	}
	return 0
}

func jsonCmpValue(a, b *JSON) int {
	if a.Kind != b.Kind {
		return cmpInt64(int64(a.Kind), int64(b.Kind))
	}
	switch a.Kind {
	case JString:
		return strings.Compare(a.Str, b.Str)
	case JNumber:
		x, _ := DecFromString(a.Str)
		y, _ := DecFromString(b.Str)
		return DecCmp(x, y)
	case JBool:
		switch {
		case a.Bool == b.Bool:
			return 0
		case b.Bool:
			return -1
		}
		return 1
	case JArray:
		if len(a.Elems) != len(b.Elems) {
			return cmpInt64(int64(len(a.Elems)), int64(len(b.Elems)))
		}
		for i := range a.Elems {
			if c := jsonCmpValue(a.Elems[i], b.Elems[i]); c != 0 {
				return c
			}
		}
	case JObject:
		if len(a.Keys) != len(b.Keys) {
			return cmpInt64(int64(len(a.Keys)), int64(len(b.Keys)))
		}
		for i := range a.Keys {
			if c := strings.Compare(a.Keys[i], b.Keys[i]); c != 0 {
				return c
			}
			if c := jsonCmpValue(a.Vals[i], b.Vals[i]); c != 0 {
				return c
			}
		}
	}
	return 0
}

// compareJSONText compares two canonical jsonb texts by value.
func compareJSONText(a, b string) int {
	if a == b {
		return 0
	}
	x, errA := ParseJSON(a)
	y, errB := ParseJSON(b)
	if errA != nil || errB != nil {
		return strings.Compare(a, b)
	}
	return JSONCompare(x, y)
}

// hashJSONText hashes canonical jsonb text consistently with
// compareJSONText: values equal by value have the same key text.
func hashJSONText(h uint64, s string) uint64 {
	return hashStr(h, JSONKeyText(s))
}

// JSONContains reports whether a contains b as jsonb's @> does.
func JSONContains(a, b *JSON) bool {
	// A top-level array contains a top-level scalar it has as an element.
	if a.Kind == JArray && b.Kind != JArray && b.Kind != JObject {
		for _, e := range a.Elems {
			if e.Kind == b.Kind && jsonCmpValue(e, b) == 0 {
				return true
			}
		}
		return false
	}
	return jsonContains(a, b)
}

func jsonContains(a, b *JSON) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case JObject:
		for i, k := range b.Keys {
			v := a.Get(k)
			if v == nil || !jsonContains(v, b.Vals[i]) {
				return false
			}
		}
		return true
	case JArray:
		for _, be := range b.Elems {
			found := false
			for _, ae := range a.Elems {
				if be.Kind == JArray || be.Kind == JObject {
					if jsonContains(ae, be) {
						found = true
						break
					}
				} else if ae.Kind == be.Kind && jsonCmpValue(ae, be) == 0 {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	return jsonCmpValue(a, b) == 0
}

// JSONKeyText returns canonical jsonb text with every number in its
// shortest form (trailing fractional zeros dropped), so that values equal
// under JSONCompare have equal key texts.
func JSONKeyText(s string) string {
	if !strings.Contains(s, ".") {
		return s // numeric_out uses no exponent: no fraction, nothing to trim
	}
	v, err := ParseJSON(s)
	if err != nil {
		return s
	}
	var walk func(v *JSON)
	changed := false
	walk = func(v *JSON) {
		switch v.Kind {
		case JNumber:
			if strings.Contains(v.Str, ".") {
				t := strings.TrimRight(strings.TrimRight(v.Str, "0"), ".")
				if t == "-0" {
					t = "0"
				}
				if t != v.Str {
					v.Str, changed = t, true
				}
			}
		case JArray:
			for _, e := range v.Elems {
				walk(e)
			}
		case JObject:
			for _, e := range v.Vals {
				walk(e)
			}
		}
	}
	walk(v)
	if !changed {
		return s
	}
	return v.String()
}
