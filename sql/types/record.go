package types

import (
	"strings"
	"sync"
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
	list  [][]Column
	byKey map[string]int16
}

// maxShapes bounds the interned shapes; the shapes come from the
// set-returning functions' fixed signatures, far fewer.
const maxShapes = 1 << 14

// RecordType returns the record type whose fields are cols. Past
// maxShapes distinct shapes it returns an anonymous record (no fields
// to bind).
func RecordType(cols []Column) T {
	var sb strings.Builder
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
	shapes.list = append(shapes.list, append([]Column(nil), cols...))
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
	return shapes.list[t.Prec-1]
}

// appendRecordText appends PostgreSQL's record output: (a,b,,"c d"),
// NULL fields empty, a field quoted when it is empty or holds a quote,
// backslash, parenthesis, comma or space, quotes and backslashes doubled.
func appendRecordText(b []byte, fields []Datum) []byte {
	b = append(b, '(')
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		if f.K == KNull {
			continue
		}
		s := FormatText(f, TUnknown)
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
