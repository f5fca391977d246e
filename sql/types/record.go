package types

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// Records: the composite values a set-returning function of several
// columns yields when it is called for its whole row in a select list
// (`SELECT information_schema._pg_expandarray(indkey) AS keys`, whose
// fields a query reads as `(keys).x`, as pgjdbc's getPrimaryKeys does). A
// record is a KArray datum holding its fields in order; its type is the
// family Record with a shape, the fields' names and types, that the
// planner needs to bind `(r).field`. Shapes are interned per process: a
// record type is never persisted (views are planned again from their SQL
// at start).

var shapes struct {
	sync.Mutex
	list  []shape
	byKey map[string]int16
}

// shape is an interned record type: its fields, and whether it was
// declared as a STRUCT (a table or source column's type, printed
// struct<…>) rather than made by a row constructor or a function (printed
// record, as PostgreSQL prints an anonymous row type).
type shape struct {
	cols     []Column
	isStruct bool
}

// maxShapes bounds the interned shapes; the shapes come from the
// set-returning functions' fixed signatures, far fewer.
const maxShapes = 1 << 14

// RecordType returns the record type whose fields are cols. Past
// maxShapes distinct shapes it returns an anonymous record (no fields
// to bind).
func RecordType(cols []Column) T { return internShape(cols, false) }

// StructType returns the STRUCT<…> type whose fields are cols: a record
// type that prints as struct<name type, …>.
func StructType(cols []Column) T { return internShape(cols, true) }

func internShape(cols []Column, isStruct bool) T {
	var sb strings.Builder
	if isStruct {
		sb.WriteString("struct\x00")
	}
	for _, c := range cols {
		sb.WriteString(c.Name)
		sb.WriteByte(0)
		sb.WriteString(c.Type.String())
		sb.WriteByte(0)
	}
	key := sb.String()
	shapes.Lock()
	defer shapes.Unlock()
	if id, ok := shapes.byKey[key]; ok {
		return T{Fam: Record, Prec: id}
	}
	if len(shapes.list) >= maxShapes {
		return T{Fam: Record}
	}
	if shapes.byKey == nil {
		shapes.byKey = map[string]int16{}
	}
	shapes.list = append(shapes.list, shape{cols: append([]Column(nil), cols...), isStruct: isStruct})
	id := int16(len(shapes.list))
	shapes.byKey[key] = id
	return T{Fam: Record, Prec: id}
}

// RecordFields returns the fields of a record type (nil for an anonymous
// record or another type).
func (t T) RecordFields() []Column {
	if t.Fam != Record || t.Prec <= 0 {
		return nil
	}
	shapes.Lock()
	defer shapes.Unlock()
	if int(t.Prec) > len(shapes.list) {
		return nil
	}
	return shapes.list[t.Prec-1].cols
}

// IsStruct reports whether t is a STRUCT<…> type.
func (t T) IsStruct() bool {
	if t.Fam != Record || t.Prec <= 0 {
		return false
	}
	shapes.Lock()
	defer shapes.Unlock()
	return int(t.Prec) <= len(shapes.list) && shapes.list[t.Prec-1].isStruct
}

// structName returns struct<name type, …> for a STRUCT type.
func (t T) structName() string {
	var sb strings.Builder
	sb.WriteString("struct<")
	for i, c := range t.RecordFields() {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(c.Name)
		sb.WriteByte(' ')
		sb.WriteString(c.Type.String())
	}
	sb.WriteByte('>')
	return sb.String()
}

// appendRecordText appends PostgreSQL's record output: (a,b,,"c d"),
// NULL fields empty, a field quoted when it is empty or holds a quote,
// backslash, parenthesis, comma or space, quotes and backslashes doubled.
func appendRecordText(b []byte, fields []Datum, t T) []byte {
	types := t.RecordFields()
	b = append(b, '(')
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		if f.K == KNull {
			continue
		}
		ft := TUnknown
		if i < len(types) {
			ft = types[i].Type
		}
		s := FormatText(f, ft)
		if s != "" && !strings.ContainsAny(s, "\"\\(),\t\n\v\f\r ") {
			b = append(b, s...)
			continue
		}
		b = append(b, '"')
		for j := 0; j < len(s); j++ {
			if s[j] == '"' || s[j] == '\\' {
				b = append(b, s[j])
			}
			b = append(b, s[j])
		}
		b = append(b, '"')
	}
	return append(b, ')')
}

// parseRecordText parses PostgreSQL's record input, (1,x,,"a ""b"""), as
// a value of record type t: a field with nothing between its commas is
// NULL, a quoted one is its text with "" and \ escapes undone (an empty
// quoted field is the empty string), and each field is read by its type's
// input function. The number of fields must be the type's.
func parseRecordText(s string, t T) (Datum, error) {
	fields := t.RecordFields()
	bad := func(detail string) error {
		return pgerror.New(pgcode.InvalidTextRepresentation, "malformed record literal: \"%s\"", s).WithDetail("%s", detail)
	}
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	if i == len(s) || s[i] != '(' {
		return Datum{}, bad("Missing left parenthesis.")
	}
	i++
	var out []Datum
	for {
		if len(out) == len(fields) {
			return Datum{}, bad("Too many columns.")
		}
		var sb strings.Builder
		quoted, any := false, false
		for i < len(s) && s[i] != ',' && s[i] != ')' {
			c := s[i]
			switch {
			case c == '"':
				i++
				quoted, any = true, true
				for {
					if i >= len(s) {
						return Datum{}, bad("Unexpected end of input.")
					}
					if s[i] == '\\' && i+1 < len(s) {
						sb.WriteByte(s[i+1])
						i += 2
						continue
					}
					if s[i] == '"' {
						if i+1 < len(s) && s[i+1] == '"' {
							sb.WriteByte('"')
							i += 2
							continue
						}
						i++
						break
					}
					sb.WriteByte(s[i])
					i++
				}
			case c == '\\' && i+1 < len(s):
				sb.WriteByte(s[i+1])
				i += 2
				any = true
			default:
				sb.WriteByte(c)
				i++
				any = true
			}
		}
		if i >= len(s) {
			return Datum{}, bad("Unexpected end of input.")
		}
		ft := fields[len(out)].Type
		if !any && !quoted {
			out = append(out, Null)
		} else {
			v, err := ParseText(sb.String(), ft)
			if err != nil {
				return Datum{}, err
			}
			out = append(out, v)
		}
		if s[i] == ')' {
			i++
			break
		}
		i++ // ','
	}
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	if i != len(s) {
		return Datum{}, bad("Junk after right parenthesis.")
	}
	if len(out) != len(fields) {
		return Datum{}, bad("Too few columns.")
	}
	return Datum{K: KArray, A: NewElems(out)}, nil
}

// castRecord converts record d of type from to record type to field by
// field, by position, as PostgreSQL converts a row to a composite type;
// the field counts must match.
func castRecord(d Datum, from, to T) (Datum, error) {
	tf := to.RecordFields()
	if len(tf) != len(d.Elems()) {
		return Datum{}, pgerror.New(pgcode.CannotCoerce, "cannot cast type %s to %s", from, to).
			WithDetail("Input has %d columns, but the target has %d.", len(d.Elems()), len(tf))
	}
	ff := from.RecordFields()
	out := make([]Datum, len(d.Elems()))
	for i, f := range d.Elems() {
		src := kindType(f.K)
		if i < len(ff) {
			src = ff[i].Type
		}
		v, err := Cast(f, src, tf[i].Type)
		if err != nil {
			return Datum{}, err
		}
		out[i] = v
	}
	return Datum{K: KArray, A: NewElems(out)}, nil
}

// RecordFromJSON converts a JSON object (a source's field) to a value of
// the STRUCT type t: each field by its name (case-insensitively, as
// columns are matched), read as its type reads a JSON value (strings and
// numbers by the input function, nested objects and arrays as nested
// STRUCTs and arrays, jsonb fields keep the JSON); a missing field or null
// is NULL, an unknown key is ignored.
func RecordFromJSON(text string, t T) (Datum, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return Datum{}, pgerror.New(pgcode.InvalidTextRepresentation, "invalid JSON object: %v", err)
	}
	return recordFromValue(v, t)
}

func recordFromValue(v any, t T) (Datum, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return Datum{}, pgerror.New(pgcode.InvalidTextRepresentation, "expected a JSON object for %s", t)
	}
	fields := t.RecordFields()
	out := make([]Datum, len(fields))
	for i, f := range fields {
		var fv any
		found := false
		if x, ok := obj[f.Name]; ok {
			fv, found = x, true
		} else {
			for k, x := range obj {
				if strings.EqualFold(k, f.Name) {
					fv, found = x, true
					break
				}
			}
		}
		if !found || fv == nil {
			out[i] = Null
			continue
		}
		d, err := fieldFromJSON(fv, f.Type)
		if err != nil {
			return Datum{}, pgerror.New(pgcode.InvalidTextRepresentation, "field %s: %s", f.Name, pgerror.Flatten(err).Message)
		}
		out[i] = d
	}
	return Datum{K: KArray, A: NewElems(out)}, nil
}

func fieldFromJSON(v any, t T) (Datum, error) {
	if t.Fam == JSONB {
		b, err := json.Marshal(v)
		if err != nil {
			return Datum{}, err
		}
		return ParseText(string(b), t)
	}
	switch x := v.(type) {
	case map[string]any:
		if len(t.RecordFields()) == 0 {
			return Datum{}, pgerror.New(pgcode.InvalidTextRepresentation, "expected %s, got an object", t)
		}
		return recordFromValue(x, t)
	case []any:
		if !IsArray(t.Fam) {
			return Datum{}, pgerror.New(pgcode.InvalidTextRepresentation, "expected %s, got an array", t)
		}
		b, err := json.Marshal(x)
		if err != nil {
			return Datum{}, err
		}
		return ArrayFromJSON(string(b), t)
	case json.Number:
		return ParseText(x.String(), t)
	case string:
		return ParseText(x, t)
	case bool:
		if x {
			return ParseText("true", t)
		}
		return ParseText("false", t)
	}
	return Datum{}, pgerror.New(pgcode.InvalidTextRepresentation, "unexpected JSON value for %s", t)
}

// tJSON is T's JSON form: the fields of T, plus a record type's shape (its
// id is per process, so a stored plan carries the fields and Struct, and
// the type is interned again when the plan is read). Other types encode as
// they always have ({"Fam":…,"Prec":…,"Scale":…}).
type tJSON struct {
	Fam    Family
	Prec   int16
	Scale  int16
	Fields []Column `json:",omitempty"`
	Struct bool     `json:",omitempty"`
}

// MarshalJSON implements json.Marshaler.
func (t T) MarshalJSON() ([]byte, error) {
	j := tJSON{Fam: t.Fam, Prec: t.Prec, Scale: t.Scale}
	if fields := t.RecordFields(); len(fields) > 0 {
		j.Prec, j.Fields, j.Struct = 0, fields, t.IsStruct()
	}
	return json.Marshal(j)
}

// UnmarshalJSON implements json.Unmarshaler.
func (t *T) UnmarshalJSON(b []byte) error {
	var j tJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	switch {
	case j.Fam == Record && len(j.Fields) > 0 && j.Struct:
		*t = StructType(j.Fields)
	case j.Fam == Record && len(j.Fields) > 0:
		*t = RecordType(j.Fields)
	case j.Fam == Record:
		*t = T{Fam: Record} // a shape id from another process means nothing
	default:
		*t = T{Fam: j.Fam, Prec: j.Prec, Scale: j.Scale}
	}
	return nil
}
