package decode

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/hamba/avro/v2"

	"sluice/sql/types"
)

// AvroSource unframes and decodes an Avro message (schemareg.Client does,
// with the Confluent wire format and a schema registry).
type AvroSource interface {
	Decode(msg []byte) (avro.Schema, any, error)
}

// RecordSource reads a message into a record (field name -> value, of
// the Go types avroValue converts): schemareg.ProtoReader for PROTOBUF.
type RecordSource interface {
	Record(msg []byte) (map[string]any, error)
}

// EnvelopeSource is a RecordSource that also reads Debezium change
// envelopes: the before and after rows (nil when absent) and op.
type EnvelopeSource interface {
	Envelope(msg []byte) (before, after map[string]any, op string, err error)
}

// decodeRecord decodes a message of a RecordSource into row, as
// decodeAvro does a record.
func (d *Decoder) decodeRecord(msg []byte, row types.Row) error {
	if len(msg) == 0 {
		return errEmpty
	}
	if d.recs == nil {
		return fmt.Errorf("ENCODE %s needs a schema registry", d.enc)
	}
	rec, err := d.recs.Record(msg)
	if err != nil {
		return err
	}
	return d.fillAvro(rec, row)
}

// decodeAvro decodes an Avro record into row: each column takes the field
// of its name (the exact name, else one that matches case-insensitively);
// a field the writer's schema lacks is NULL, one the columns lack is
// ignored, so records of every compatible version of the schema decode.
func (d *Decoder) decodeAvro(msg []byte, row types.Row) error {
	if len(msg) == 0 {
		return errEmpty
	}
	if d.avro == nil {
		return fmt.Errorf("ENCODE AVRO needs a schema registry")
	}
	_, v, err := d.avro.Decode(msg)
	if err != nil {
		return err
	}
	rec, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("the Avro value is a %T, not a record", v)
	}
	return d.fillAvro(rec, row)
}

// fillAvro sets the columns of row from the fields of a decoded record.
func (d *Decoder) fillAvro(rec map[string]any, row types.Row) error {
	for col := range d.cols {
		if d.skip[col] {
			continue
		}
		val, ok := rec[d.names[col]]
		if !ok {
			for k, fv := range rec {
				if strings.EqualFold(k, d.names[col]) {
					val, ok = fv, true
					break
				}
			}
		}
		if !ok || val == nil {
			row[col] = types.Datum{}
			continue
		}
		if err := d.avroValue(col, val, &row[col]); err != nil {
			return err
		}
	}
	return nil
}

// avroValue converts a decoded Avro value to column col's type.
func (d *Decoder) avroValue(col int, v any, dst *types.Datum) error {
	t := d.cols[col].Type
	if m, ok := v.(map[string]any); ok && len(t.RecordFields()) > 0 {
		x, err := avroStruct(t, m)
		if err != nil {
			return d.colErr(col, "%v", err)
		}
		*dst = x
		return nil
	}
	switch x := v.(type) {
	case string:
		return d.text(col, []byte(x), true, dst)
	case []byte:
		if t.Fam == types.Bytea {
			*dst = types.NewBytes(x)
			return nil
		}
	}
	s, err := avroText(t, v)
	if err != nil {
		return d.colErr(col, "cannot convert the Avro value: %v", err)
	}
	return d.text(col, []byte(s), false, dst)
}

// avroText is the text of a decoded Avro (or Protobuf) value for a column
// of type t: scalars as the type's input reads them, records, maps and
// arrays as JSON.
func avroText(t types.T, v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case []byte:
		return string(x), nil
	case bool:
		return strconv.FormatBool(x), nil
	case int:
		return strconv.Itoa(x), nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case time.Time:
		if t.Fam == types.Timestamp || t.Fam == types.Date {
			return x.UTC().Format("2006-01-02 15:04:05.999999"), nil
		}
		return x.UTC().Format("2006-01-02T15:04:05.999999Z07:00"), nil
	case time.Duration:
		return fmt.Sprintf("%d microseconds", x.Microseconds()), nil
	case *big.Rat:
		scale := 18
		if t.Fam == types.Numeric && t.Scale >= 0 {
			scale = int(t.Scale)
		}
		s := x.FloatString(scale)
		if t.Scale < 0 && strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		return s, nil
	}
	b, err := json.Marshal(v) // records, maps, arrays
	return string(b), err
}

// decodeAvroDebezium decodes a Debezium envelope in Avro: a record with
// fields before and after (each the row record or null) and op.
func (d *Decoder) decodeAvroDebezium(msg []byte, before, after types.Row) (env envelope, err error) {
	if len(msg) == 0 {
		return env, errEmpty
	}
	if d.avro == nil {
		return env, fmt.Errorf("ENCODE AVRO needs a schema registry")
	}
	_, v, err := d.avro.Decode(msg)
	if err != nil {
		return env, err
	}
	rec, ok := v.(map[string]any)
	if !ok {
		return env, fmt.Errorf("the Avro value is a %T, not a Debezium envelope record", v)
	}
	for _, img := range []struct {
		name string
		row  types.Row
		has  *bool
	}{{"before", before, &env.before}, {"after", after, &env.after}} {
		switch x := rec[img.name].(type) {
		case nil:
		case map[string]any:
			if err := d.fillAvro(x, img.row); err != nil {
				return env, err
			}
			*img.has = true
		default:
			return env, fmt.Errorf("Debezium field %q is a %T, not a record", img.name, x)
		}
	}
	if op, ok := rec["op"].(string); ok && op != "" {
		env.hasOp, env.op, env.opText = true, op[0], op
		if len(op) != 1 {
			env.op = 0
		}
	}
	return env, nil
}

// avroStruct converts a decoded Avro record, or a union's {branch: value},
// to a value of the STRUCT type t: each field from the key of its name
// (case-insensitively; a union branch's name as UnionFieldName gives
// it), NULL when there is none.
func avroStruct(t types.T, m map[string]any) (types.Datum, error) {
	fields := t.RecordFields()
	out := make([]types.Datum, len(fields))
	for i, f := range fields {
		var val any
		found := false
		for k, x := range m {
			if strings.EqualFold(k, f.Name) || strings.EqualFold(UnionFieldName(k), f.Name) {
				val, found = x, true
				break
			}
		}
		if !found || val == nil {
			out[i] = types.Null
			continue
		}
		d, err := avroDatum(f.Type, val)
		if err != nil {
			return types.Null, fmt.Errorf("field %s: %v", f.Name, err)
		}
		out[i] = d
	}
	return types.Datum{K: types.KArray, A: types.NewElems(out)}, nil
}

// avroDatum converts one decoded Avro value to type t (a STRUCT field).
func avroDatum(t types.T, v any) (types.Datum, error) {
	switch x := v.(type) {
	case map[string]any:
		if len(t.RecordFields()) > 0 {
			return avroStruct(t, x)
		}
	case []any:
		if types.IsArray(t.Fam) {
			b, err := json.Marshal(x)
			if err != nil {
				return types.Null, err
			}
			return types.ArrayFromJSON(string(b), t)
		}
	case []byte:
		if t.Fam == types.Bytea {
			return types.NewBytes(x), nil
		}
	}
	s, err := avroText(t, v)
	if err != nil {
		return types.Null, err
	}
	return types.ParseText(s, t)
}

// UnionFieldName is the STRUCT field name of the union branch hamba/avro
// names branch: a named type's short name, a primitive's type, a logical
// type's "type_logical" (long_timestamp_millis).
func UnionFieldName(branch string) string {
	if strings.ContainsAny(branch, "-") || strings.HasSuffix(branch, ".uuid") || strings.HasSuffix(branch, ".decimal") || strings.HasSuffix(branch, ".date") {
		return strings.NewReplacer(".", "_", "-", "_").Replace(branch)
	}
	if i := strings.LastIndexByte(branch, '.'); i >= 0 {
		return branch[i+1:]
	}
	return branch
}
