package decode

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"sluice/sql/types"
)

// syntax returns an "invalid JSON" error at the current position.
func (d *Decoder) syntax(msg string) error {
	return fmt.Errorf("invalid JSON at byte %d: %s", d.i, msg)
}

// found describes the byte at the current position, for messages.
func (d *Decoder) found() string {
	if d.i >= len(d.b) {
		return "end of message"
	}
	c := d.b[d.i]
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("%q", c)
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// ws skips JSON whitespace.
func (d *Decoder) ws() {
	b, i := d.b, d.i
	if i < len(b) && b[i] > ' ' {
		return // the common case: no whitespace at all
	}
	for i < len(b) && isSpace[b[i]] {
		i++
	}
	d.i = i
}

// isSpace and isPlain classify bytes: JSON whitespace, and string bytes
// that need no attention (printable ASCII but the quote and backslash).
var isSpace, isPlain [256]bool

func init() {
	for _, c := range " \t\n\r" {
		isSpace[c] = true
	}
	for c := 0x20; c < 0x80; c++ {
		isPlain[c] = c != '"' && c != '\\'
	}
}

// object decodes the object at d.i (which is '{') into row.
func (d *Decoder) object(row types.Row) error {
	for i := range d.cols {
		if !d.skip[i] {
			row[i] = types.Null
		}
	}
	d.i++ // '{'
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return nil
	}
	for pos := 0; ; pos++ {
		d.ws()
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return d.syntax(fmt.Sprintf("expected a string key, found %s", d.found()))
		}
		key, err := d.str(&d.kbuf)
		if err != nil {
			return err
		}
		d.ws()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return d.syntax(fmt.Sprintf("expected ':' after a key, found %s", d.found()))
		}
		d.i++
		d.ws()
		if col := d.column(pos, key); col >= 0 {
			if err := d.value(col, &row[col]); err != nil {
				return err
			}
		} else if err := d.skipValue(nil, 0); err != nil {
			return err
		}
		d.ws()
		if d.i >= len(d.b) {
			return d.syntax("unexpected end of message in an object")
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return nil
		default:
			return d.syntax(fmt.Sprintf("expected ',' or '}' in an object, found %s", d.found()))
		}
	}
}

// keyMemo is a key seen at a position of an object and its column.
type keyMemo struct {
	key []byte
	col int
}

// keyMemos bounds the positions remembered.
const keyMemos = 64

// column returns the column key names (-1: none), key being the pos'th
// of its object.
func (d *Decoder) column(pos int, key []byte) int {
	if pos < len(d.keyAt) && string(d.keyAt[pos].key) == string(key) {
		return d.keyAt[pos].col
	}
	col := d.lookup(key)
	if pos < keyMemos {
		for len(d.keyAt) <= pos {
			d.keyAt = append(d.keyAt, keyMemo{col: -1})
		}
		m := &d.keyAt[pos]
		m.key, m.col = append(m.key[:0], key...), col
	}
	return col
}

// lookup returns the column whose name matches key case-insensitively, or
// -1. The search starts after the last match.
func (d *Decoder) lookup(key []byte) int {
	n := len(d.names)
	j := d.next
	for k := 0; k < n; k++ {
		if j >= n {
			j = 0
		}
		if !d.skip[j] && d.match(j, key) {
			d.next = j + 1
			return j
		}
		j++
	}
	return -1
}

func (d *Decoder) match(col int, key []byte) bool {
	name := d.names[col]
	if !d.ascii[col] {
		return equalFoldUnicode(name, key)
	}
	if len(name) != len(key) {
		return false
	}
	for i := 0; i < len(key); i++ {
		a, b := name[i], key[i]
		if a == b {
			continue
		}
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

func equalFoldUnicode(name string, key []byte) bool {
	for name != "" && len(key) > 0 {
		r1, n1 := utf8.DecodeRuneInString(name)
		r2, n2 := utf8.DecodeRune(key)
		name, key = name[n1:], key[n2:]
		if r1 == r2 || unicode.ToLower(r1) == unicode.ToLower(r2) {
			continue
		}
		return false
	}
	return name == "" && len(key) == 0
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// str reads the string at d.i (which is '"') and returns its contents:
// a view of the message when it has no escapes, else the unescaped text in
// *buf. It checks UTF-8 and rejects control characters.
func (d *Decoder) str(buf *[]byte) ([]byte, error) {
	b := d.b
	i := d.i + 1 // past the opening quote
	start := i
	for {
		// Skip 8 plain bytes at a time: none below 0x20, none at or
		// above 0x80, no quote, no backslash.
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			q := x ^ (0x22 * lsb)
			e := x ^ (0x5c * lsb)
			if (x|((x-0x20*lsb)&^x)|((q-lsb)&^q)|((e-lsb)&^e))&msb != 0 {
				break
			}
			i += 8
		}
		for i < len(b) && isPlain[b[i]] {
			i++
		}
		if i >= len(b) {
			d.i = i
			return nil, d.syntax("unterminated string")
		}
		switch c := b[i]; {
		case c == '"':
			d.i = i + 1
			return b[start:i], nil
		case c == '\\':
			d.i = i
			*buf = append((*buf)[:0], b[start:i]...)
			return d.strEscaped(buf)
		case c < 0x20:
			d.i = i
			return nil, d.syntax(fmt.Sprintf("control character 0x%02x in a string", c))
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n <= 1 {
				return nil, fmt.Errorf("invalid UTF-8 at byte %d", i)
			}
			i += n
		}
	}
}

// strEscaped continues str from a backslash, unescaping into *buf.
func (d *Decoder) strEscaped(buf *[]byte) ([]byte, error) {
	b := d.b
	out := *buf
	defer func() { *buf = out[:0] }()
	for d.i < len(b) {
		c := b[d.i]
		switch {
		case c == '"':
			d.i++
			return out, nil
		case c == '\\':
			if d.i+1 >= len(b) {
				return nil, d.syntax("unterminated string")
			}
			e := b[d.i+1]
			d.i += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return nil, d.syntax("invalid \\u escape")
				}
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if d.i+1 < len(b) && b[d.i] == '\\' && b[d.i+1] == 'u' {
						d.i += 2
						r2, ok = d.hex4()
						if !ok {
							return nil, d.syntax("invalid \\u escape")
						}
					}
					r = utf16.DecodeRune(r, r2)
					if r == utf8.RuneError {
						return nil, d.syntax("invalid Unicode surrogate pair")
					}
				}
				if r == 0 {
					return nil, d.syntax("\\u0000 cannot be converted to text")
				}
				out = utf8.AppendRune(out, r)
			default:
				d.i -= 2
				return nil, d.syntax(fmt.Sprintf("invalid escape \\%c", e))
			}
		case c < 0x20:
			return nil, d.syntax(fmt.Sprintf("control character 0x%02x in a string", c))
		case c < utf8.RuneSelf:
			out = append(out, c)
			d.i++
		default:
			r, n := utf8.DecodeRune(b[d.i:])
			if r == utf8.RuneError && n <= 1 {
				return nil, fmt.Errorf("invalid UTF-8 at byte %d", d.i)
			}
			out = append(out, b[d.i:d.i+n]...)
			d.i += n
		}
	}
	return nil, d.syntax("unterminated string")
}

func (d *Decoder) hex4() (rune, bool) {
	if d.i+4 > len(d.b) {
		return 0, false
	}
	var r rune
	for _, c := range d.b[d.i : d.i+4] {
		var v byte
		switch {
		case '0' <= c && c <= '9':
			v = c - '0'
		case 'a' <= c && c <= 'f':
			v = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	d.i += 4
	return r, true
}

// number scans a JSON number at d.i and returns its text and whether it
// is an integer (no fraction, no exponent).
func (d *Decoder) number() ([]byte, bool, error) {
	b := d.b
	start := d.i
	i := start
	isInt := true
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i++; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		}
	default:
		d.i = i
		return nil, false, d.syntax(fmt.Sprintf("invalid number, found %s", d.found()))
	}
	if i < len(b) && b[i] == '.' {
		isInt = false
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			d.i = i
			return nil, false, d.syntax("invalid number: digits expected after '.'")
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		isInt = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			d.i = i
			return nil, false, d.syntax("invalid number: digits expected in the exponent")
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	d.i = i
	return b[start:i], isInt, nil
}

// literal consumes the literal word w at d.i.
func (d *Decoder) literal(w string) error {
	if len(d.b)-d.i < len(w) || string(d.b[d.i:d.i+len(w)]) != w {
		return d.syntax(fmt.Sprintf("invalid literal, found %s", d.found()))
	}
	d.i += len(w)
	return nil
}

// value decodes the JSON value at d.i for column col into *dst.
func (d *Decoder) value(col int, dst *types.Datum) error {
	if d.i >= len(d.b) {
		return d.syntax("unexpected end of message, expected a value")
	}
	t := d.cols[col].Type
	switch c := d.b[d.i]; {
	case c == '"':
		start := d.i
		s, err := d.str(&d.vbuf)
		if err != nil {
			return err
		}
		return d.fromString(col, s, d.b[start:d.i], dst)
	case c == '-' || ('0' <= c && c <= '9'):
		num, isInt, err := d.number()
		if err != nil {
			return err
		}
		return d.fromNumber(col, num, isInt, dst)
	case c == 'n':
		*dst = types.Null
		return d.literal("null")
	case c == 't' || c == 'f':
		w := "true"
		if c == 'f' {
			w = "false"
		}
		if err := d.literal(w); err != nil {
			return err
		}
		switch {
		case t.Fam == types.Bool:
			*dst = types.NewBool(c == 't')
			return nil
		case t.Fam == types.JSONB:
			*dst = types.NewJSON(w)
			return nil
		case t.IsString():
			return d.text(col, []byte(w), false, dst)
		}
		return d.colErr(col, "expected %s, got %s", typeName(t), w)
	case c == '[' && types.IsArray(t.Fam):
		// A JSON array into an array column: its elements as the
		// element type reads them (nested arrays: more dimensions).
		d.jbuf = d.jbuf[:0]
		if err := d.skipValue(&d.jbuf, 0); err != nil {
			return err
		}
		v, err := types.ArrayFromJSON(string(d.jbuf), t)
		if err != nil {
			return d.colErr(col, "%s", err.Error())
		}
		*dst = v
		return nil
	case c == '{' && t.Fam == types.Record && len(t.RecordFields()) > 0:
		// A JSON object into a STRUCT column: its fields by name.
		d.jbuf = d.jbuf[:0]
		if err := d.skipValue(&d.jbuf, 0); err != nil {
			return err
		}
		v, err := types.RecordFromJSON(string(d.jbuf), t)
		if err != nil {
			return d.colErr(col, "%s", err.Error())
		}
		*dst = v
		return nil
	case c == '{' || c == '[':
		if t.Fam != types.JSONB {
			kind := "object"
			if c == '[' {
				kind = "array"
			}
			return d.colErr(col, "expected %s, got %s", typeName(t), kind)
		}
		d.jbuf = d.jbuf[:0]
		if err := d.skipValue(&d.jbuf, 0); err != nil {
			return err
		}
		return d.jsonb(col, string(d.jbuf), dst)
	}
	return d.syntax(fmt.Sprintf("expected a value, found %s", d.found()))
}

// jsonb stores the JSON text of a jsonb column in PostgreSQL's canonical
// form (sorted keys, last duplicate wins, numbers as numeric prints them).
func (d *Decoder) jsonb(col int, text string, dst *types.Datum) error {
	v, err := types.ParseJSONDatum(text)
	if err != nil {
		return d.colErr(col, "%s", err.Error())
	}
	*dst = v
	return nil
}

// fromString converts the JSON string s (raw: its token with quotes) for
// column col into *dst.
func (d *Decoder) fromString(col int, s, raw []byte, dst *types.Datum) error {
	if d.cols[col].Type.Fam == types.JSONB {
		return d.jsonb(col, string(raw), dst)
	}
	return d.text(col, s, true, dst)
}

// fromNumber converts the JSON number num for column col into *dst.
func (d *Decoder) fromNumber(col int, num []byte, isInt bool, dst *types.Datum) error {
	t := d.cols[col].Type
	switch t.Fam {
	case types.Int2, types.Int4, types.Int8, types.Oid:
		var v int64
		if isInt {
			var ok bool
			v, ok = parseInt64(num)
			if !ok {
				return d.colErr(col, "value %s is out of range for type %s", num, t)
			}
		} else {
			dec, err := types.DecFromString(unsafeString(num))
			if err != nil {
				return d.colErr(col, "value %s is out of range for type %s", num, t)
			}
			if r, _ := types.DecTrunc(dec, 0); types.DecCmp(r, dec) != 0 {
				return d.colErr(col, "expected an integer, got %s", num)
			}
			v, err = types.DecToInt(dec)
			if err != nil {
				return d.colErr(col, "value %s is out of range for type %s", num, t)
			}
		}
		lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
		switch t.Fam {
		case types.Int2:
			lo, hi = math.MinInt16, math.MaxInt16
		case types.Int4:
			lo, hi = math.MinInt32, math.MaxInt32
		case types.Oid:
			lo, hi = 0, math.MaxUint32
		}
		if v < lo || v > hi {
			return d.colErr(col, "value %s is out of range for type %s", num, t)
		}
		*dst = types.Datum{K: types.KInt, I: v}
		return nil
	case types.Float4, types.Float8:
		bits := 64
		if t.Fam == types.Float4 {
			bits = 32
		}
		f, err := strconv.ParseFloat(unsafeString(num), bits)
		if err != nil {
			return d.colErr(col, "value %s is out of range for type %s", num, t)
		}
		*dst = types.NewFloat(f)
		return nil
	case types.Numeric:
		if isInt && t.Prec == 0 && len(num) <= 18 {
			v, _ := parseInt64(num)
			*dst = types.DecFromInt(v)
			return nil
		}
		v, err := types.ParseText(unsafeString(num), t)
		if err != nil {
			return d.colErr(col, "%s", err.Error())
		}
		*dst = v
		return nil
	case types.JSONB:
		return d.jsonb(col, string(num), dst)
	}
	if t.IsString() {
		return d.text(col, num, false, dst)
	}
	return d.colErr(col, "expected %s, got number %s", typeName(t), num)
}

// parseInt64 parses a JSON integer (already validated).
func parseInt64(s []byte) (int64, bool) {
	neg := false
	if len(s) > 0 && s[0] == '-' {
		neg = true
		s = s[1:]
	}
	var u uint64
	for _, c := range s {
		if u > (math.MaxUint64-9)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
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

// skipValue scans (and validates) the JSON value at d.i. When out is not
// nil the value is appended to it without insignificant whitespace.
func (d *Decoder) skipValue(out *[]byte, depth int) error {
	if depth > maxDepth {
		return d.syntax("nesting too deep")
	}
	if d.i >= len(d.b) {
		return d.syntax("unexpected end of message, expected a value")
	}
	start := d.i
	switch c := d.b[d.i]; {
	case c == '"':
		if _, err := d.str(&d.vbuf); err != nil {
			return err
		}
	case c == '-' || ('0' <= c && c <= '9'):
		if _, _, err := d.number(); err != nil {
			return err
		}
	case c == 'n':
		if err := d.literal("null"); err != nil {
			return err
		}
	case c == 't':
		if err := d.literal("true"); err != nil {
			return err
		}
	case c == 'f':
		if err := d.literal("false"); err != nil {
			return err
		}
	case c == '{':
		return d.skipContainer(out, depth, '}')
	case c == '[':
		return d.skipContainer(out, depth, ']')
	default:
		return d.syntax(fmt.Sprintf("expected a value, found %s", d.found()))
	}
	if out != nil {
		*out = append(*out, d.b[start:d.i]...)
	}
	return nil
}

// skipContainer scans an object or array whose closing byte is close.
func (d *Decoder) skipContainer(out *[]byte, depth int, close byte) error {
	if out != nil {
		*out = append(*out, d.b[d.i])
	}
	d.i++
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == close {
		d.i++
		if out != nil {
			*out = append(*out, close)
		}
		return nil
	}
	for {
		d.ws()
		if close == '}' {
			if d.i >= len(d.b) || d.b[d.i] != '"' {
				return d.syntax(fmt.Sprintf("expected a string key, found %s", d.found()))
			}
			start := d.i
			if _, err := d.str(&d.kbuf); err != nil {
				return err
			}
			if out != nil {
				*out = append(*out, d.b[start:d.i]...)
			}
			d.ws()
			if d.i >= len(d.b) || d.b[d.i] != ':' {
				return d.syntax(fmt.Sprintf("expected ':' after a key, found %s", d.found()))
			}
			d.i++
			if out != nil {
				*out = append(*out, ':')
			}
			d.ws()
		}
		if err := d.skipValue(out, depth+1); err != nil {
			return err
		}
		d.ws()
		if d.i >= len(d.b) {
			return d.syntax("unexpected end of message")
		}
		switch c := d.b[d.i]; c {
		case ',':
			d.i++
			if out != nil {
				*out = append(*out, ',')
			}
		case close:
			d.i++
			if out != nil {
				*out = append(*out, close)
			}
			return nil
		default:
			return d.syntax(fmt.Sprintf("expected ',' or '%c', found %s", close, d.found()))
		}
	}
}

// envelope is what a Debezium envelope held.
type envelope struct {
	before, after bool
	hasOp         bool
	op            byte
	opText        string
}

// envelope decodes a Debezium envelope object at d.i.
func (d *Decoder) envelope(env *envelope, before, after types.Row, depth int) error {
	d.i++ // '{'
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return nil
	}
	for {
		d.ws()
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return d.syntax(fmt.Sprintf("expected a string key, found %s", d.found()))
		}
		key, err := d.str(&d.kbuf)
		if err != nil {
			return err
		}
		d.ws()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return d.syntax(fmt.Sprintf("expected ':' after a key, found %s", d.found()))
		}
		d.i++
		d.ws()
		isObj := d.i < len(d.b) && d.b[d.i] == '{'
		switch string(key) {
		case "before", "after":
			row, flag := before, &env.before
			if key[0] == 'a' {
				row, flag = after, &env.after
			}
			if isObj {
				if err := d.object(row); err != nil {
					return err
				}
				*flag = true
			} else if err := d.literal("null"); err != nil {
				return d.syntax(fmt.Sprintf("Debezium %q must be an object or null", key))
			}
		case "op":
			if d.i >= len(d.b) || d.b[d.i] != '"' {
				return d.syntax("Debezium \"op\" must be a string")
			}
			s, err := d.str(&d.vbuf)
			if err != nil {
				return err
			}
			env.hasOp = true
			env.opText = string(s)
			if len(s) == 1 {
				env.op = s[0]
			} else {
				env.op = 0
			}
		case "payload":
			if isObj && depth == 0 {
				if err := d.envelope(env, before, after, 1); err != nil {
					return err
				}
			} else if err := d.skipValue(nil, 0); err != nil {
				return err
			}
		default:
			if err := d.skipValue(nil, 0); err != nil {
				return err
			}
		}
		d.ws()
		if d.i >= len(d.b) {
			return d.syntax("unexpected end of message in an object")
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return nil
		default:
			return d.syntax(fmt.Sprintf("expected ',' or '}' in an object, found %s", d.found()))
		}
	}
}
