package mysqlcdc

// The type mapping: which upstream types a declared column may read, and
// how a value (from the snapshot's text protocol or from a binlog row)
// becomes a datum. Both paths go through one conversion, so a row reads
// the same whether the snapshot or the stream delivered it.

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// intRank orders the integer types by range: the Sluice integer family
// that holds every value of each.
func intRank(up upColumn) (types.Family, bool) {
	switch up.dataType {
	case "tinyint", "year":
		return types.Int2, true
	case "smallint":
		if up.unsigned {
			return types.Int4, true
		}
		return types.Int2, true
	case "mediumint":
		return types.Int4, true
	case "int", "integer":
		if up.unsigned {
			return types.Int8, true
		}
		return types.Int4, true
	case "bigint":
		if up.unsigned {
			return types.Numeric, true
		}
		return types.Int8, true
	}
	return types.Unknown, false
}

var famRank = map[types.Family]int{types.Int2: 1, types.Int4: 2, types.Int8: 3, types.Numeric: 4}

var (
	textTypes = map[string]bool{"char": true, "varchar": true, "tinytext": true, "text": true, "mediumtext": true, "longtext": true}
	blobTypes = map[string]bool{"binary": true, "varbinary": true, "tinyblob": true, "blob": true, "mediumblob": true, "longblob": true}
	// otherTypes are the rest of the upstream types the source reads.
	otherTypes = map[string]bool{"decimal": true, "float": true, "double": true, "date": true, "datetime": true, "timestamp": true, "time": true, "json": true,
		"enum": true, "set": true, "bit": true}
)

// allowed lists the Sluice type families a source column may have.
var allowed = map[types.Family]bool{
	types.Bool: true, types.Int2: true, types.Int4: true, types.Int8: true, types.Float4: true, types.Float8: true,
	types.Numeric: true, types.Text: true, types.Varchar: true, types.Bytea: true, types.Date: true, types.Time: true,
	types.Timestamp: true, types.TimestampTZ: true, types.JSONB: true,
}

// checkType reports whether declared column col may read upstream column
// up: 0A000 for an upstream type the source cannot decode, 42804 for one
// that does not map to the declared type.
func checkType(source string, col types.Column, up upColumn) error {
	_, isInt := intRank(up)
	if !isInt && !textTypes[up.dataType] && !blobTypes[up.dataType] && !otherTypes[up.dataType] {
		return pgerror.New(pgcode.FeatureNotSupported, "mysql-cdc source %s: column %s has upstream type %s, which the source cannot read", source, col.Name, up.columnType).
			WithHint("the source reads integer, bit, decimal, float, double, char, varchar, text, enum, set, binary, blob, date, time, datetime, timestamp and json columns; leave this column out of the source's columns")
	}
	switch up.charset {
	case "", "utf8", "utf8mb3", "utf8mb4", "ascii", "binary":
	default:
		return pgerror.New(pgcode.FeatureNotSupported, "mysql-cdc source %s: column %s has character set %s upstream; the source reads utf8mb4, utf8 and ascii", source, col.Name, up.charset).
			WithHint("ALTER TABLE … MODIFY %s … CHARACTER SET utf8mb4 upstream, or leave the column out", col.Name)
	}
	if compatible(col.Type, up) {
		return nil
	}
	return pgerror.New(pgcode.DatatypeMismatch, "mysql-cdc source %s: column %s is %s upstream, which does not map to %s", source, col.Name, up.columnType, col.Type).
		WithHint("declare it as %s", suggest(up))
}

func compatible(t types.T, up upColumn) bool {
	d := up.dataType
	if d == "bit" {
		// BIT(n): its value as an integer (BIGINT; NUMERIC), its bytes
		// (BYTEA), or BOOLEAN for BIT(1).
		switch t.Fam {
		case types.Int8, types.Numeric, types.Bytea:
			return true
		case types.Bool:
			return up.columnType == "bit(1)"
		}
		return false
	}
	rank, isInt := intRank(up)
	switch t.Fam {
	case types.Bool:
		return d == "tinyint"
	case types.Int2, types.Int4, types.Int8:
		return isInt && famRank[rank] <= famRank[t.Fam]
	case types.Numeric:
		return isInt || d == "decimal"
	case types.Float4:
		return d == "float"
	case types.Float8:
		return d == "float" || d == "double"
	case types.Text, types.Varchar:
		return !blobTypes[d] && d != "float" && d != "double"
	case types.Bytea:
		return blobTypes[d] || textTypes[d]
	case types.Date:
		return d == "date"
	case types.Time:
		return d == "time"
	case types.Timestamp, types.TimestampTZ:
		return d == "datetime" || d == "timestamp"
	case types.JSONB:
		return d == "json" || textTypes[d]
	}
	return false
}

// suggest names the Sluice type that reads upstream column up.
func suggest(up upColumn) string {
	if f, ok := intRank(up); ok {
		switch f {
		case types.Int2:
			return "SMALLINT"
		case types.Int4:
			return "INT"
		case types.Int8:
			return "BIGINT"
		}
		return "NUMERIC"
	}
	switch {
	case up.dataType == "bit" && up.columnType == "bit(1)":
		return "BOOLEAN"
	case up.dataType == "bit":
		return "BIGINT"
	case up.dataType == "decimal":
		return "NUMERIC"
	case up.dataType == "float":
		return "REAL"
	case up.dataType == "double":
		return "DOUBLE PRECISION"
	case blobTypes[up.dataType]:
		return "BYTEA"
	case up.dataType == "date":
		return "DATE"
	case up.dataType == "time":
		return "TIME"
	case up.dataType == "datetime":
		return "TIMESTAMP"
	case up.dataType == "timestamp":
		return "TIMESTAMPTZ"
	case up.dataType == "json":
		return "JSONB"
	}
	return "TEXT"
}

// selectExpr is how the snapshot selects upstream column up: FLOAT as a
// double, so that its text is the float32 value the binlog carries (the
// text protocol prints a FLOAT rounded to 6 digits).
func selectExpr(up upColumn) string {
	if up.dataType == "float" {
		return "CAST(" + quoteIdent(up.name) + " AS DOUBLE)"
	}
	return quoteIdent(up.name)
}

// intBits is the width in bits of an upstream integer type.
func intBits(d string) uint {
	switch d {
	case "tinyint":
		return 8
	case "smallint":
		return 16
	case "mediumint":
		return 24
	case "int", "integer":
		return 32
	}
	return 64
}

// toDatum turns an upstream value into a datum of column type t. v is
// what go-mysql hands out: nil, an int64/int32/…/uint64, a float32 or
// float64, a string or a []byte (text-protocol values arrive as their
// text in []byte).
func toDatum(v any, t types.T, up upColumn) (types.Datum, error) {
	if v == nil {
		return types.Null, nil
	}
	var s string
	if up.dataType == "bit" {
		return bitDatum(v, t, up)
	}
	if up.labels != nil {
		// ENUM and SET: the binlog carries the index or the bitmask, the
		// snapshot the text (as MySQL prints a SET: its values joined
		// by commas, in declaration order).
		switch x := v.(type) {
		case int8, int16, int32, int64, int:
			return enumText(toInt64(x), up), nil
		case uint64:
			return enumText(int64(x), up), nil
		}
	}
	switch x := v.(type) {
	case int8, int16, int32, int64, int:
		i := toInt64(x)
		if up.unsigned && i < 0 {
			// The binlog carries unsigned values in signed Go types.
			bits := intBits(up.dataType)
			if bits == 64 {
				s = strconv.FormatUint(uint64(i), 10)
				break
			}
			i += 1 << bits
		}
		if t.Fam == types.Bool {
			return types.NewBool(i != 0), nil
		}
		s = strconv.FormatInt(i, 10)
	case uint64:
		if t.Fam == types.Bool {
			return types.NewBool(x != 0), nil
		}
		s = strconv.FormatUint(x, 10)
	case float32:
		if t.Fam == types.Float4 || t.Fam == types.Float8 {
			return types.NewFloat(float64(x)), nil
		}
		s = strconv.FormatFloat(float64(x), 'g', -1, 32)
	case float64:
		switch t.Fam {
		case types.Float4:
			return types.NewFloat(float64(float32(x))), nil
		case types.Float8:
			return types.NewFloat(x), nil
		}
		s = strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		s = x
	case []byte:
		if t.Fam == types.Bytea {
			return types.NewBytes(append([]byte(nil), x...)), nil
		}
		s = string(x)
	default:
		return types.Datum{}, pgerror.New(pgcode.Internal, "mysql-cdc: unexpected value %T", v)
	}
	switch t.Fam {
	case types.Bytea:
		return types.NewBytes([]byte(s)), nil
	case types.Bool:
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return types.ParseText(s, t)
		}
		return types.NewBool(i != 0), nil
	case types.Float4:
		f, err := strconv.ParseFloat(s, 32)
		if err != nil {
			return types.ParseText(s, t)
		}
		return types.NewFloat(float64(float32(f))), nil
	case types.Float8:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return types.ParseText(s, t)
		}
		return types.NewFloat(f), nil
	case types.Date, types.Timestamp, types.TimestampTZ:
		if strings.HasPrefix(s, "0000-00-00") {
			return types.Datum{}, pgerror.New(pgcode.DatetimeFieldOverflow, "zero date %q upstream has no PostgreSQL value", s).
				WithHint("store NULL instead of a zero date upstream (sql_mode NO_ZERO_DATE)")
		}
		if t.Fam == types.TimestampTZ {
			s += "+00" // the connection and the binlog decoder speak UTC
		}
	}
	return types.ParseText(s, t)
}

// bitDatum converts a BIT(n) value: the binlog carries it as an integer,
// the snapshot's text protocol as its big-endian bytes.
func bitDatum(v any, t types.T, up upColumn) (types.Datum, error) {
	var u uint64
	switch x := v.(type) {
	case []byte:
		if len(x) > 8 {
			return types.Datum{}, pgerror.New(pgcode.NumericValueOutOfRange, "mysql-cdc: BIT value of %d bytes", len(x))
		}
		for _, b := range x {
			u = u<<8 | uint64(b)
		}
	case string:
		for i := 0; i < len(x) && i < 8; i++ {
			u = u<<8 | uint64(x[i])
		}
	case int8, int16, int32, int64, int:
		u = uint64(toInt64(x))
	case uint64:
		u = x
	default:
		return types.Datum{}, pgerror.New(pgcode.Internal, "mysql-cdc: unexpected BIT value %T", v)
	}
	switch t.Fam {
	case types.Bool:
		return types.NewBool(u != 0), nil
	case types.Bytea:
		n := 1
		if i := strings.IndexByte(up.columnType, '('); i >= 0 {
			if w, err := strconv.Atoi(strings.TrimSuffix(up.columnType[i+1:], ")")); err == nil {
				n = (w + 7) / 8
			}
		}
		b := make([]byte, n)
		for i := n - 1; i >= 0; i-- {
			b[i] = byte(u)
			u >>= 8
		}
		return types.NewBytes(b), nil
	}
	return types.ParseText(strconv.FormatUint(u, 10), t)
}

// enumText is the text of ENUM index or SET bitmask i of column up.
func enumText(i int64, up upColumn) types.Datum {
	if up.dataType == "enum" {
		if i >= 1 && int(i) <= len(up.labels) {
			return types.NewString(up.labels[i-1])
		}
		return types.NewString("") // 0: the invalid value '' MySQL stores
	}
	var parts []string
	for b, l := range up.labels {
		if b < 64 && i&(1<<b) != 0 {
			parts = append(parts, l)
		}
	}
	return types.NewString(strings.Join(parts, ","))
}

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	case int:
		return int64(x)
	}
	return math.MinInt64
}

// describe renders a value for an error message.
func describe(v any) string {
	if b, ok := v.([]byte); ok {
		return fmt.Sprintf("%q", b)
	}
	return fmt.Sprintf("%v", v)
}
