// Package encode turns rows into the bytes sinks write: JSON objects
// (keyed by column name), CSV lines, the key object of an upsert record
// and the Debezium envelope. Every sink connector encodes through it, so
// a row looks the same in Kafka, Redis and files.
//
// JSON mapping: integers and floats are numbers (NaN and ±Infinity are
// strings), NUMERIC is a number with its exact digits, BOOLEAN is
// true/false, JSONB is embedded as JSON, BYTEA is base64, every other type
// is its PostgreSQL text form as a string, NULL is null.
package encode

import (
	"encoding/base64"
	"math"
	"strconv"
	"unicode/utf8"

	"sluice/sql/types"
)

// JSON appends row as a JSON object whose keys are the column names.
func JSON(buf []byte, cols []types.Column, row types.Row) []byte {
	buf = append(buf, '{')
	for i, c := range cols {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = String(buf, c.Name)
		buf = append(buf, ':')
		buf = Value(buf, row[i], c.Type)
	}
	return append(buf, '}')
}

// KeyJSON appends the key columns of row as a JSON object.
func KeyJSON(buf []byte, cols []types.Column, key []int, row types.Row) []byte {
	buf = append(buf, '{')
	for j, i := range key {
		if j > 0 {
			buf = append(buf, ',')
		}
		buf = String(buf, cols[i].Name)
		buf = append(buf, ':')
		buf = Value(buf, row[i], cols[i].Type)
	}
	return append(buf, '}')
}

// KeyText appends the key column values of row in text form, joined by sep
// (NULL is the empty string).
func KeyText(buf []byte, cols []types.Column, key []int, row types.Row, sep byte) []byte {
	for j, i := range key {
		if j > 0 {
			buf = append(buf, sep)
		}
		if !row[i].IsNull() {
			buf = types.AppendText(buf, row[i], cols[i].Type)
		}
	}
	return buf
}

// DebeziumOp is a change's Debezium op: c (an insert: no before row), d
// (a delete: no after row) or u.
func DebeziumOp(before, after types.Row) string {
	switch {
	case before == nil:
		return "c"
	case after == nil:
		return "d"
	}
	return "u"
}

// Debezium appends a Debezium-style change envelope:
// {"before":…,"after":…,"op":"c"|"u"|"d","source":{"epoch":N}}.
func Debezium(buf []byte, cols []types.Column, before, after types.Row, epoch uint64) []byte {
	op := DebeziumOp(before, after)
	buf = append(buf, `{"before":`...)
	if before == nil {
		buf = append(buf, "null"...)
	} else {
		buf = JSON(buf, cols, before)
	}
	buf = append(buf, `,"after":`...)
	if after == nil {
		buf = append(buf, "null"...)
	} else {
		buf = JSON(buf, cols, after)
	}
	buf = append(buf, `,"op":"`...)
	buf = append(buf, op...)
	buf = append(buf, `","source":{"epoch":`...)
	buf = strconv.AppendUint(buf, epoch, 10)
	return append(buf, "}}"...)
}

// Value appends one datum of type t as a JSON value.
func Value(buf []byte, d types.Datum, t types.T) []byte {
	if d.IsNull() {
		return append(buf, "null"...)
	}
	switch t.Fam {
	case types.Bool:
		if d.Bool() {
			return append(buf, "true"...)
		}
		return append(buf, "false"...)
	case types.Int2, types.Int4, types.Int8, types.Oid:
		return strconv.AppendInt(buf, d.I, 10)
	case types.Float4, types.Float8:
		if math.IsNaN(d.Float()) || math.IsInf(d.Float(), 0) {
			return String(buf, types.FormatText(d, t))
		}
		bits := 64
		if t.Fam == types.Float4 {
			bits = 32
		}
		return strconv.AppendFloat(buf, d.Float(), 'g', -1, bits)
	case types.Numeric:
		start := len(buf)
		buf = types.AppendText(buf, d, t)
		if s := string(buf[start:]); s == "NaN" || s == "Infinity" || s == "-Infinity" {
			return String(buf[:start], s)
		}
		return buf
	case types.JSONB:
		return append(buf, d.S...)
	case types.Bytea:
		buf = append(buf, '"')
		buf = base64.StdEncoding.AppendEncode(buf, []byte(d.S))
		return append(buf, '"')
	}
	if d.K == types.KArray && types.IsArray(t.Fam) {
		return arrayValue(buf, d.Elems(), t)
	}
	if d.K == types.KArray && t.Fam == types.Record {
		if fields := t.RecordFields(); len(fields) == len(d.Elems()) {
			return JSON(buf, fields, d.Elems()) // a STRUCT (or named record): an object of its fields
		}
	}
	switch d.K {
	case types.KString:
		return String(buf, d.S)
	case types.KDate, types.KTime, types.KTimestamp, types.KTimestampTZ, types.KInterval:
		// Their text is ASCII digits, letters, spaces and "-+:.": nothing
		// to escape, so it goes into buf directly, without a string.
		buf = append(buf, '"')
		buf = types.AppendText(buf, d, t)
		return append(buf, '"')
	}
	return String(buf, types.FormatText(d, t))
}

const hex = "0123456789abcdef"

// String appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func String(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

// CSV appends row as one CSV line (RFC 4180 quoting, NULL as an empty
// field, no trailing newline).
func CSV(buf []byte, cols []types.Column, row types.Row) []byte {
	for i, c := range cols {
		if i > 0 {
			buf = append(buf, ',')
		}
		if row[i].IsNull() {
			continue
		}
		var s string
		if c.Type.Fam == types.Bytea {
			s = base64.StdEncoding.EncodeToString([]byte(row[i].S))
		} else {
			s = types.FormatText(row[i], c.Type)
		}
		buf = CSVField(buf, s)
	}
	return buf
}

// CSVField appends one CSV field, quoted when it needs to be.
func CSVField(buf []byte, s string) []byte {
	quote := s == ""
	for i := 0; i < len(s) && !quote; i++ {
		switch s[i] {
		case ',', '"', '\n', '\r':
			quote = true
		}
	}
	if !quote {
		return append(buf, s...)
	}
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			buf = append(buf, '"')
		}
		buf = append(buf, s[i])
	}
	return append(buf, '"')
}

// arrayValue appends an array as a JSON array of its elements (nested
// arrays for further dimensions), each as Value writes its element type.
func arrayValue(buf []byte, elems []types.Datum, t types.T) []byte {
	elem, ok := types.ArrayElem(t.Fam)
	if !ok {
		elem = types.TText
	}
	buf = append(buf, '[')
	for i, e := range elems {
		if i > 0 {
			buf = append(buf, ',')
		}
		switch {
		case e.K == types.KArray:
			buf = arrayValue(buf, e.Elems(), t)
			continue
		case e.K == types.KString && elem.Fam != types.Text:
			// smallint[] and boolean[] hold their elements' text.
			if v, err := types.ParseText(e.S, elem); err == nil {
				e = v
			}
		}
		buf = Value(buf, e, elem)
	}
	return append(buf, ']')
}
