package types

import (
	"fmt"
	"math"
)

// Family is the kind of a SQL type.
type Family uint8

// The type families Sluice supports.
const (
	Unknown Family = iota
	Bool
	Int2
	Int4
	Int8
	Float4
	Float8
	Numeric
	Text
	Varchar
	Bytea
	Date
	Time
	Timestamp
	TimestampTZ
	Interval
	JSONB
	Oid      // catalog oids (pg_catalog answers)
	Name     // catalog names
	RegClass // ::regclass
	Char     // "char" (catalog)
	TextArray
	RegType      // ::regtype (an oid printed as the type's name)
	RegProc      // ::regproc (an oid printed as the function's name)
	RegNamespace // ::regnamespace (an oid printed as the schema's name)
	Int2Vector   // int2vector (catalog: pg_index.indkey), elements as text[]'s, printed "1 2", subscripts from 0
	OidVector    // oidvector (catalog: pg_proc.proargtypes), likewise
	Record       // record: a composite value (record.go), fields in Datum.A
	Int2Array    // smallint[] (catalog: pg_constraint.conkey): text[] values whose elements are int2 (typedarray.go)
	BoolArray    // boolean[] (array_agg of booleans), likewise
	UUID         // uuid (uuid.go): KUUID values
	// Arrays whose elements are values of their element type (elemarray.go).
	Int4Array        // integer[]
	Int8Array        // bigint[]
	Float8Array      // double precision[]
	NumericArray     // numeric[]
	TimestampTZArray // timestamp with time zone[]
	Float4Array      // real[]
	DateArray        // date[]
	TimeArray        // time without time zone[]
	TimestampArray   // timestamp without time zone[]
	IntervalArray    // interval[]
	JSONBArray       // jsonb[]
	VarcharArray     // character varying[]
	UUIDArray        // uuid[]
	ByteaArray       // bytea[]
)

// lastFamily is the highest Family value.
const lastFamily = ByteaArray

// IsVector reports whether f is int2vector or oidvector: text[] values
// that print space-separated and are subscripted from 0.
func IsVector(f Family) bool { return f == Int2Vector || f == OidVector }

// IsOidFamily reports whether f is oid or one of the oid alias types
// (regclass, regtype, regproc, regnamespace): unsigned 32-bit values in
// Datum.I that convert to one another without change.
func IsOidFamily(f Family) bool {
	switch f {
	case Oid, RegClass, RegType, RegProc, RegNamespace:
		return true
	}
	return false
}

// T is a SQL type: a family plus modifiers.
type T struct {
	Fam   Family
	Prec  int16 // NUMERIC precision, VARCHAR length; 0 = unbounded
	Scale int16 // NUMERIC scale; -1 = unconstrained
}

// Convenience values of the plain types.
var (
	TUnknown      = T{Fam: Unknown}
	TBool         = T{Fam: Bool}
	TInt2         = T{Fam: Int2}
	TInt4         = T{Fam: Int4}
	TInt8         = T{Fam: Int8}
	TFloat4       = T{Fam: Float4}
	TFloat8       = T{Fam: Float8}
	TNumeric      = T{Fam: Numeric, Scale: -1}
	TText         = T{Fam: Text}
	TVarchar      = T{Fam: Varchar}
	TBytea        = T{Fam: Bytea}
	TDate         = T{Fam: Date}
	TTime         = T{Fam: Time}
	TTimestamp    = T{Fam: Timestamp}
	TTimestampTZ  = T{Fam: TimestampTZ}
	TInterval     = T{Fam: Interval}
	TJSONB        = T{Fam: JSONB}
	TOid          = T{Fam: Oid}
	TName         = T{Fam: Name}
	TRegClass     = T{Fam: RegClass}
	TChar         = T{Fam: Char}
	TTextArray    = T{Fam: TextArray}
	TRegType      = T{Fam: RegType}
	TRegProc      = T{Fam: RegProc}
	TRegNamespace = T{Fam: RegNamespace}
	TInt2Vector   = T{Fam: Int2Vector}
	TOidVector    = T{Fam: OidVector}
	TInt2Array    = T{Fam: Int2Array}
	TBoolArray    = T{Fam: BoolArray}
	TUUID         = T{Fam: UUID}
	TInt4Array    = T{Fam: Int4Array}
	TInt8Array    = T{Fam: Int8Array}
	TFloat8Array  = T{Fam: Float8Array}
	TNumericArray = T{Fam: NumericArray}
	TTstzArray    = T{Fam: TimestampTZArray}
	TFloat4Array  = T{Fam: Float4Array}
	TDateArray    = T{Fam: DateArray}
	TTimeArray    = T{Fam: TimeArray}
	TTsArray      = T{Fam: TimestampArray}
	TIntervalArr  = T{Fam: IntervalArray}
	TJSONBArray   = T{Fam: JSONBArray}
	TVarcharArray = T{Fam: VarcharArray}
	TUUIDArray    = T{Fam: UUIDArray}
	TByteaArray   = T{Fam: ByteaArray}
)

// OID returns the Postgres type OID of t.
func (t T) OID() uint32 {
	switch t.Fam {
	case Bool:
		return 16
	case Int2:
		return 21
	case Int4:
		return 23
	case Int8:
		return 20
	case Float4:
		return 700
	case Float8:
		return 701
	case Numeric:
		return 1700
	case Text:
		return 25
	case Varchar:
		return 1043
	case Bytea:
		return 17
	case Date:
		return 1082
	case Time:
		return 1083
	case Timestamp:
		return 1114
	case TimestampTZ:
		return 1184
	case Interval:
		return 1186
	case JSONB:
		return 3802
	case Oid:
		return 26
	case Name:
		return 19
	case RegClass:
		return 2205
	case Char:
		return 18
	case TextArray:
		return 1009
	case RegType:
		return 2206
	case RegProc:
		return 24
	case RegNamespace:
		return 4089
	case Int2Vector:
		return 22
	case OidVector:
		return 30
	case Record:
		return 2249
	case Int2Array:
		return 1005
	case BoolArray:
		return 1000
	case UUID:
		return 2950
	case Int4Array:
		return 1007
	case Int8Array:
		return 1016
	case Float8Array:
		return 1022
	case NumericArray:
		return 1231
	case TimestampTZArray:
		return 1185
	case Float4Array:
		return 1021
	case DateArray:
		return 1182
	case TimeArray:
		return 1183
	case TimestampArray:
		return 1115
	case IntervalArray:
		return 1187
	case JSONBArray:
		return 3807
	case VarcharArray:
		return 1015
	case UUIDArray:
		return 2951
	case ByteaArray:
		return 1001
	}
	return 705 // unknown
}

// FromOID returns the type with Postgres OID oid. Record, smallint[] and
// boolean[] are not among them: only Sluice's catalog and aggregates make
// values of those, and a client's parameter of such a type stays untyped,
// as before they existed.
func FromOID(oid uint32) (T, bool) {
	for f := Bool; f < Record; f++ {
		t := T{Fam: f}
		if f == Numeric {
			t.Scale = -1
		}
		if t.OID() == oid {
			return t, true
		}
	}
	if oid == TUUID.OID() {
		return TUUID, true
	}
	for f := Int4Array; f <= lastFamily; f++ {
		if t := (T{Fam: f}); t.OID() == oid {
			return t, true
		}
	}
	return TUnknown, false
}

// Size returns the typlen Postgres reports for t (-1 = variable).
func (t T) Size() int16 {
	switch t.Fam {
	case Bool, Char:
		return 1
	case Int2:
		return 2
	case Int4, Float4, Date, Oid, RegClass, RegType, RegProc, RegNamespace:
		return 4
	case Int8, Float8, Time, Timestamp, TimestampTZ:
		return 8
	case Interval, UUID:
		return 16
	case Name:
		return 64
	}
	return -1
}

// Modifier returns the typmod Postgres reports for t (-1 = none).
func (t T) Modifier() int32 {
	switch t.Fam {
	case Numeric:
		if t.Prec > 0 {
			s := t.Scale
			if s < 0 {
				s = 0
			}
			return (int32(t.Prec)<<16 | int32(s)) + 4
		}
	case Varchar, VarcharArray:
		if t.Prec > 0 {
			return int32(t.Prec) + 4
		}
	}
	return -1
}

// String returns the SQL name of t as Postgres' format_type prints it.
func (t T) String() string {
	switch t.Fam {
	case Bool:
		return "boolean"
	case Int2:
		return "smallint"
	case Int4:
		return "integer"
	case Int8:
		return "bigint"
	case Float4:
		return "real"
	case Float8:
		return "double precision"
	case Numeric:
		if t.Prec > 0 {
			s := t.Scale
			if s < 0 {
				s = 0
			}
			return fmt.Sprintf("numeric(%d,%d)", t.Prec, s)
		}
		return "numeric"
	case Text:
		return "text"
	case Varchar:
		if t.Prec > 0 {
			return fmt.Sprintf("character varying(%d)", t.Prec)
		}
		return "character varying"
	case Bytea:
		return "bytea"
	case Date:
		return "date"
	case Time:
		return "time without time zone"
	case Timestamp:
		return "timestamp without time zone"
	case TimestampTZ:
		return "timestamp with time zone"
	case Interval:
		return "interval"
	case JSONB:
		return "jsonb"
	case Oid:
		return "oid"
	case Name:
		return "name"
	case RegClass:
		return "regclass"
	case Char:
		return "\"char\""
	case TextArray:
		return "text[]"
	case RegType:
		return "regtype"
	case RegProc:
		return "regproc"
	case RegNamespace:
		return "regnamespace"
	case Int2Vector:
		return "int2vector"
	case OidVector:
		return "oidvector"
	case Record:
		if t.IsStruct() {
			return t.structName()
		}
		return "record"
	case Int2Array:
		return "smallint[]"
	case BoolArray:
		return "boolean[]"
	case UUID:
		return "uuid"
	case Int4Array:
		return "integer[]"
	case Int8Array:
		return "bigint[]"
	case Float8Array:
		return "double precision[]"
	case NumericArray:
		return "numeric[]"
	case TimestampTZArray:
		return "timestamp with time zone[]"
	case Float4Array:
		return "real[]"
	case DateArray:
		return "date[]"
	case TimeArray:
		return "time without time zone[]"
	case TimestampArray:
		return "timestamp without time zone[]"
	case IntervalArray:
		return "interval[]"
	case JSONBArray:
		return "jsonb[]"
	case VarcharArray:
		if t.Prec > 0 {
			return fmt.Sprintf("character varying(%d)[]", t.Prec)
		}
		return "character varying[]"
	case UUIDArray:
		return "uuid[]"
	case ByteaArray:
		return "bytea[]"
	}
	return "unknown"
}

// IsNumeric reports whether t is a number type.
func (t T) IsNumeric() bool {
	switch t.Fam {
	case Int2, Int4, Int8, Float4, Float8, Numeric, Oid:
		return true
	}
	return false
}

// IsInteger reports whether t is an integer type.
func (t T) IsInteger() bool {
	switch t.Fam {
	case Int2, Int4, Int8, Oid:
		return true
	}
	return false
}

// IsString reports whether t is a character type.
func (t T) IsString() bool {
	switch t.Fam {
	case Text, Varchar, Name, Char:
		return true
	}
	return false
}

// Kind is the storage class of a Datum.
type Kind uint8

// Datum kinds. Int2/Int4/Int8/Oid values are KInt; Text/Varchar/Name/Char
// are KString.
const (
	KNull Kind = iota
	KBool
	KInt
	KFloat
	KDecimal
	KString
	KBytes
	KDate        // I = days since 1970-01-01
	KTime        // I = microseconds since midnight
	KTimestamp   // I = microseconds since 1970-01-01 00:00:00
	KTimestampTZ // I = microseconds since 1970-01-01 00:00:00 UTC
	KInterval    // M months, X days, I microseconds
	KJSON        // S = canonical JSON text
	KArray       // A = elements
	KUUID        // S = the 16 bytes (uuid.go)
)

// Datum is one SQL value. It is a small struct passed by value; rows are
// slices of Datums.
type Datum struct {
	K Kind
	X int32    // decimal scale; interval days
	M int32    // interval months
	I int64    // bool (0/1), int, decimal coefficient (its sign for a big one), date, time, timestamps, interval micros, a float's bits (Float)
	S string   // text, bytes, json; a big decimal coefficient's magnitude (see decimal.go)
	A *[]Datum // arrays (rare): the elements (Elems); a pointer keeps the other datums small
}

// Elems returns an array datum's elements (nil for other kinds).
func (d Datum) Elems() []Datum {
	if d.A == nil {
		return nil
	}
	return *d.A
}

// SetElems makes e the array datum's elements.
func (d *Datum) SetElems(e []Datum) { d.A = NewElems(e) }

// NewElems returns the A of an array datum of elements e.
func NewElems(e []Datum) *[]Datum { return &e }

// Null is the NULL datum.
var Null = Datum{}

// IsNull reports whether d is NULL.
func (d Datum) IsNull() bool { return d.K == KNull }

// NewBool returns a boolean datum.
func NewBool(b bool) Datum {
	if b {
		return Datum{K: KBool, I: 1}
	}
	return Datum{K: KBool}
}

// NewInt returns an integer datum.
func NewInt(i int64) Datum { return Datum{K: KInt, I: i} }

// NewFloat returns a float datum.
func NewFloat(f float64) Datum { return Datum{K: KFloat, I: int64(math.Float64bits(f))} }

// Float returns the value of a float datum (its bits are I's).
func (d Datum) Float() float64 { return math.Float64frombits(uint64(d.I)) }

// NewDecimal returns coef * 10^-scale (scale >= 0). Coefficients beyond
// the int64 range are built with DecFromBig.
func NewDecimal(coef int64, scale int32) Datum { return Datum{K: KDecimal, I: coef, X: scale} }

// NewString returns a text datum.
func NewString(s string) Datum { return Datum{K: KString, S: s} }

// NewBytes returns a bytea datum.
func NewBytes(b []byte) Datum { return Datum{K: KBytes, S: string(b)} }

// NewDate returns a date datum of days since 1970-01-01.
func NewDate(days int64) Datum { return Datum{K: KDate, I: days} }

// NewTime returns a time datum of microseconds since midnight.
func NewTime(us int64) Datum { return Datum{K: KTime, I: us} }

// NewTimestamp returns a timestamp datum of microseconds since the Unix epoch.
func NewTimestamp(us int64) Datum { return Datum{K: KTimestamp, I: us} }

// NewTimestampTZ returns a timestamptz datum of microseconds since the Unix epoch (UTC).
func NewTimestampTZ(us int64) Datum { return Datum{K: KTimestampTZ, I: us} }

// NewInterval returns an interval datum.
func NewInterval(months, days int32, us int64) Datum {
	return Datum{K: KInterval, M: months, X: days, I: us}
}

// NewJSON returns a jsonb datum holding canonical JSON text.
func NewJSON(s string) Datum { return Datum{K: KJSON, S: s} }

// Bool returns the boolean value of d (false for NULL).
func (d Datum) Bool() bool { return d.K == KBool && d.I != 0 }

// Row is one tuple.
type Row []Datum

// Copy returns a copy of r that shares no slice with it.
func (r Row) Copy() Row {
	c := make(Row, len(r))
	copy(c, r)
	return c
}

// Column is a named, typed column of a relation or result.
type Column struct {
	Name string
	Type T
	// TableOID and AttNum say which table (or view) column a query's
	// result column comes straight from, as RowDescription reports it
	// (0 when computed).
	TableOID uint32
	AttNum   int16
}
