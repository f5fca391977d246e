package pgcdc

// The type mapping: which upstream types a declared column may read. Every
// value travels as PostgreSQL's text form (the snapshot selects col::text,
// pgoutput sends text) and is parsed with types.ParseText, so a value
// reads exactly as PostgreSQL prints it.

import (
	"sluice/sql/types"
)

// allowed maps each Sluice type family a source column may have to the
// upstream types (pg_type.typname) it reads. TEXT and VARCHAR also take
// any other type, as its text (arrays, enums, …).
var allowed = map[types.Family][]string{
	types.Bool:        {"bool"},
	types.Int2:        {"int2"},
	types.Int4:        {"int2", "int4"},
	types.Int8:        {"int2", "int4", "int8"},
	types.Float4:      {"float4"},
	types.Float8:      {"float4", "float8"},
	types.Numeric:     {"int2", "int4", "int8", "numeric"},
	types.Text:        nil,
	types.Varchar:     nil,
	types.Bytea:       {"bytea"},
	types.Date:        {"date"},
	types.Time:        {"time"},
	types.Timestamp:   {"timestamp"},
	types.TimestampTZ: {"timestamptz"},
	types.Interval:    {"interval"},
	types.JSONB:       {"jsonb", "json"},
	types.UUID:        {"uuid"},
}

// compatible reports whether a column of type t may read upstream type ty.
func compatible(t types.T, ty string) bool {
	if t.Fam == types.Text || t.Fam == types.Varchar {
		return true
	}
	for _, u := range allowed[t.Fam] {
		if u == ty {
			return true
		}
	}
	return false
}

// suggest names the Sluice type that reads upstream type ty.
func suggest(ty string) string {
	switch ty {
	case "bool":
		return "BOOLEAN"
	case "int2":
		return "SMALLINT"
	case "int4":
		return "INT"
	case "int8":
		return "BIGINT"
	case "float4":
		return "REAL"
	case "float8":
		return "DOUBLE PRECISION"
	case "numeric":
		return "NUMERIC"
	case "bytea":
		return "BYTEA"
	case "date":
		return "DATE"
	case "time":
		return "TIME"
	case "timestamp":
		return "TIMESTAMP"
	case "timestamptz":
		return "TIMESTAMPTZ"
	case "interval":
		return "INTERVAL"
	case "json", "jsonb":
		return "JSONB"
	case "uuid":
		return "UUID"
	}
	return "TEXT"
}

// parseValue turns the text form of an upstream value into a datum of t
// (nil: NULL).
func parseValue(s []byte, null bool, t types.T) (types.Datum, error) {
	if null {
		return types.Null, nil
	}
	return types.ParseText(string(s), t)
}
