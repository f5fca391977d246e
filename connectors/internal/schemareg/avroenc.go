package schemareg

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/big"

	"sluice/connectors/internal/encode"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// A sink's Avro schema is derived from its columns (RecordSchema) and
// its rows are written in Avro binary by AppendRecord, here rather than
// through hamba/avro's reflection: a row is a []types.Datum, not a Go
// struct or map, and the mapping below is small.
//
// Mapping (every field a union ["null", T] with default null, since a
// view's column may hold NULL): BOOLEAN boolean; SMALLINT and INTEGER
// int; BIGINT long; REAL float; DOUBLE PRECISION double; NUMERIC(p,s)
// bytes with logicalType decimal (precision p, scale s); an unconstrained
// NUMERIC string (its exact digits: Avro decimals need a fixed scale);
// DATE int date; TIMESTAMP long local-timestamp-micros; TIMESTAMPTZ long
// timestamp-micros; BYTEA bytes; everything else (TEXT, JSONB, INTERVAL,
// arrays …) string in its PostgreSQL text form.

// avroField is the Avro type of column type t (without the null union).
func avroField(t types.T) any {
	switch t.Fam {
	case types.Bool:
		return "boolean"
	case types.Int2, types.Int4:
		return "int"
	case types.Int8:
		return "long"
	case types.Float4:
		return "float"
	case types.Float8:
		return "double"
	case types.Numeric:
		if t.Prec > 0 && t.Scale >= 0 {
			return map[string]any{"type": "bytes", "logicalType": "decimal", "precision": int(t.Prec), "scale": int(t.Scale)}
		}
		return "string"
	case types.Date:
		return map[string]any{"type": "int", "logicalType": "date"}
	case types.Timestamp:
		return map[string]any{"type": "long", "logicalType": "local-timestamp-micros"}
	case types.TimestampTZ:
		return map[string]any{"type": "long", "logicalType": "timestamp-micros"}
	case types.Bytea:
		return "bytes"
	}
	return "string"
}

// avroName makes s a valid Avro name ([A-Za-z_][A-Za-z0-9_]*).
func avroName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}

// RecordSchema returns the JSON text of an Avro record schema named name
// whose fields are the columns idx of cols (all of them when idx is nil).
func RecordSchema(name string, cols []types.Column, idx []int) string {
	if idx == nil {
		idx = make([]int, len(cols))
		for i := range idx {
			idx[i] = i
		}
	}
	fields := make([]map[string]any, 0, len(idx))
	for _, i := range idx {
		fields = append(fields, map[string]any{"name": avroName(cols[i].Name), "type": []any{"null", avroField(cols[i].Type)}, "default": nil})
	}
	b, _ := json.Marshal(map[string]any{"type": "record", "name": avroName(name), "namespace": "sluice", "fields": fields})
	return string(b)
}

// EnvelopeSchema returns the JSON text of the Avro schema of a Debezium
// change envelope whose rows have the columns cols: before and after
// (each the row record RecordSchema derives, or null), op ("c", "u",
// "d") and source (the epoch of the change), as Debezium's Avro
// converter lays an envelope out.
func EnvelopeSchema(name string, cols []types.Column) string {
	var row map[string]any
	if err := json.Unmarshal([]byte(RecordSchema(name+"_row", cols, nil)), &row); err != nil {
		panic(err) // RecordSchema's output is JSON
	}
	rowName := avroName(name + "_row")
	b, _ := json.Marshal(map[string]any{"type": "record", "name": avroName(name), "namespace": "sluice", "fields": []any{
		map[string]any{"name": "before", "type": []any{"null", row}, "default": nil},
		map[string]any{"name": "after", "type": []any{"null", rowName}, "default": nil},
		map[string]any{"name": "op", "type": "string"},
		map[string]any{"name": "source", "type": map[string]any{"type": "record", "name": "source",
			"fields": []any{map[string]any{"name": "epoch", "type": "long"}}}},
	}})
	return string(b)
}

// AppendEnvelope appends the Avro binary of a Debezium envelope in the
// schema EnvelopeSchema derives: before and after (nil: null), op, epoch.
func AppendEnvelope(b []byte, cols []types.Column, before, after types.Row, epoch uint64) ([]byte, error) {
	op := encode.DebeziumOp(before, after)
	for _, r := range []types.Row{before, after} {
		if r == nil {
			b = append(b, 0)
			continue
		}
		b = append(b, 2)
		var err error
		if b, err = AppendRecord(b, cols, nil, r); err != nil {
			return b, err
		}
	}
	b = appendBytes(b, []byte(op))
	return appendLong(b, int64(epoch)), nil
}

// appendLong appends v zig-zag varint encoded (Avro int and long).
func appendLong(b []byte, v int64) []byte {
	return binary.AppendUvarint(b, uint64(v<<1)^uint64(v>>63))
}

// appendBytes appends a length-prefixed byte string (Avro bytes and string).
func appendBytes(b []byte, s []byte) []byte {
	return append(appendLong(b, int64(len(s))), s...)
}

// AppendRecord appends the Avro binary of the columns idx of row (all of
// them when idx is nil), in the schema RecordSchema derives.
func AppendRecord(b []byte, cols []types.Column, idx []int, row types.Row) ([]byte, error) {
	if idx == nil {
		for i := range cols {
			var err error
			if b, err = appendDatum(b, cols[i], row[i]); err != nil {
				return b, err
			}
		}
		return b, nil
	}
	for _, i := range idx {
		var err error
		if b, err = appendDatum(b, cols[i], row[i]); err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendDatum appends one union value: branch 0 for NULL, 1 and the value.
func appendDatum(b []byte, c types.Column, d types.Datum) ([]byte, error) {
	if d.IsNull() {
		return append(b, 0), nil
	}
	b = append(b, 2) // zig-zag 1: the union's second branch
	t := c.Type
	switch t.Fam {
	case types.Bool:
		if d.Bool() {
			return append(b, 1), nil
		}
		return append(b, 0), nil
	case types.Int2, types.Int4, types.Int8:
		return appendLong(b, d.I), nil
	case types.Float4:
		return binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(d.Float()))), nil
	case types.Float8:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(d.Float())), nil
	case types.Numeric:
		if t.Prec > 0 && t.Scale >= 0 {
			if !types.DecIsFinite(d) {
				return b, pgerror.New(pgcode.NumericValueOutOfRange, "column %s: %s has no Avro decimal form", c.Name, types.FormatText(d, t)).
					WithHint("cast the column to text or filter the value out")
			}
			r, err := types.DecRound(d, int32(t.Scale))
			if err != nil {
				return b, err
			}
			coef := types.DecCoef(r)
			if r.X < int32(t.Scale) {
				coef.Mul(coef, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(int32(t.Scale)-r.X)), nil))
			}
			return appendBytes(b, twosComplement(coef)), nil
		}
	case types.Date, types.Timestamp, types.TimestampTZ:
		if d.I == types.InfinityI || d.I == types.NegInfinityI {
			return b, pgerror.New(pgcode.DatetimeFieldOverflow, "column %s: %s has no Avro form", c.Name, types.FormatText(d, t)).
				WithHint("filter infinite dates and timestamps out of the sink's query")
		}
		return appendLong(b, d.I), nil
	case types.Bytea:
		return appendBytes(b, []byte(d.S)), nil
	}
	return appendBytes(b, []byte(types.FormatText(d, t))), nil
}

// twosComplement returns c as a big-endian two's-complement integer in
// the fewest bytes (Avro's decimal).
func twosComplement(c *big.Int) []byte {
	if c.Sign() >= 0 {
		out := c.Bytes()
		if len(out) == 0 || out[0]&0x80 != 0 {
			out = append([]byte{0}, out...)
		}
		return out
	}
	// -c = 2^(8n) - |c| for the smallest n whose top bit is set.
	n := (c.BitLen() + 8) / 8
	m := new(big.Int).Lsh(big.NewInt(1), uint(8*n))
	m.Add(m, c)
	out := m.Bytes()
	for len(out) < n {
		out = append([]byte{0xff}, out...)
	}
	return out
}
