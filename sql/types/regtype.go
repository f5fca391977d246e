package types

import (
	"strings"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// This file holds the oid alias types' type-name side: regtype input
// (regtypein's names: pg_type.typname, the SQL spellings format_type
// prints, with an optional pg_catalog. prefix, typmod and [] suffix) and
// the datum a reg* column carries to the wire with its object's name.

// typeNames maps the names regtype input accepts to the types.
var typeNames = map[string]T{
	"bool": TBool, "boolean": TBool, "bytea": TBytea, "char": TChar, `"char"`: TChar, "name": TName,
	"int8": TInt8, "bigint": TInt8, "int2": TInt2, "smallint": TInt2, "int4": TInt4, "integer": TInt4, "int": TInt4,
	"text": TText, "oid": TOid, "float4": TFloat4, "real": TFloat4, "float8": TFloat8, "double precision": TFloat8,
	"_text": TTextArray, "text[]": TTextArray, "varchar": TVarchar, "character varying": TVarchar,
	"date": TDate, "time": TTime, "time without time zone": TTime, "timestamp": TTimestamp,
	"timestamp without time zone": TTimestamp, "timestamptz": TTimestampTZ, "timestamp with time zone": TTimestampTZ,
	"interval": TInterval, "numeric": TNumeric, "decimal": TNumeric, "regclass": TRegClass, "jsonb": TJSONB,
	"regtype": TRegType, "regproc": TRegProc, "regnamespace": TRegNamespace, "uuid": TUUID,
}

// pseudoTypes are the pseudo-types pg_proc names (no values have them).
var pseudoTypes = map[string]uint32{
	"any": 2276, `"any"`: 2276, "anyarray": 2277, "void": 2278, "trigger": 2279, "record": 2249,
	"anyelement": 2283, "anynonarray": 2776, "cstring": 2275, "internal": 2281, "event_trigger": 3838,
}

// PseudoTypeName returns the name of a pseudo-type oid, as format_type
// prints it.
func PseudoTypeName(oid uint32) (string, bool) {
	for n, o := range pseudoTypes {
		if o == oid && n != `"any"` {
			if n == "any" {
				return `"any"`, true
			}
			return n, true
		}
	}
	return "", false
}

// TypeByName returns the type a regtype name denotes.
func TypeByName(s string) (T, bool) {
	n := strings.ToLower(strings.TrimSpace(s))
	n = strings.TrimPrefix(n, "pg_catalog.")
	if i := strings.IndexByte(n, '('); i > 0 && strings.HasSuffix(n, ")") {
		n = strings.TrimSpace(n[:i]) // the typmod does not change the type
	} else if i > 0 {
		if j := strings.IndexByte(n, ')'); j > i {
			n = strings.TrimSpace(n[:i]) + n[j+1:] // "timestamp(3) with time zone"
		}
	}
	n = strings.Join(strings.Fields(n), " ")
	if len(n) > 2 && n[0] == '"' && n[len(n)-1] == '"' && n != `"char"` {
		n = n[1 : len(n)-1]
	}
	t, ok := typeNames[n]
	return t, ok
}

// RegTypeIn is regtypein: the oid of the type named s, or 42704.
func RegTypeIn(s string) (Datum, error) {
	t, ok := TypeByName(s)
	if !ok {
		if elem, isArray := strings.CutSuffix(strings.TrimSpace(s), "[]"); isArray {
			if et, ok := TypeByName(elem); ok {
				if a, ok := arrayOIDOf(et.OID()); ok {
					return NewInt(int64(a)), nil
				}
			}
		}
		n := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "pg_catalog.")
		if oid, ok := pseudoTypes[n]; ok {
			return NewInt(int64(oid)), nil
		}
		return Datum{}, pgerror.New(pgcode.UndefinedObject, "type \"%s\" does not exist", strings.TrimSpace(s))
	}
	return NewInt(int64(t.OID())), nil
}

// NewRegName returns a reg* value (an oid) that prints as name: a
// query's result carries its objects' names this way, so the column keeps
// its reg* type in RowDescription and binary output stays the oid.
func NewRegName(oid int64, name string) Datum { return Datum{K: KInt, I: oid, S: name} }

// arrayElems maps the oids of the array types of Sluice's types to their
// element types' oids, as pg_type has them: regtype reads and prints them
// (integer[] is 1007) though Sluice holds only text[] values.
var arrayElems = map[uint32]uint32{
	1000: 16, 1001: 17, 1002: 18, 1003: 19, 1005: 21, 1007: 23,
	1008: 24, 1009: 25, 1015: 1043, 1016: 20, 1021: 700, 1022: 701,
	1028: 26, 1115: 1114, 1182: 1082, 1183: 1083, 1185: 1184, 1187: 1186,
	1231: 1700, 2210: 2205, 2211: 2206, 2951: 2950, 3807: 3802, 4090: 4089,
}

// ArrayElemOID returns the element type of an array type's oid.
func ArrayElemOID(oid uint32) (uint32, bool) {
	e, ok := arrayElems[oid]
	return e, ok
}

// arrayOIDOf returns the oid of the array type of elem.
func arrayOIDOf(elem uint32) (uint32, bool) {
	for a, e := range arrayElems {
		if e == elem {
			return a, true
		}
	}
	return 0, false
}
