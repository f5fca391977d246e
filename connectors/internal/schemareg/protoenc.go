package schemareg

import (
	"fmt"
	"net/http"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"sluice/connectors/internal/encode"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// ProtoWriter writes rows as Protobuf messages of a schema derived from
// the columns (ProtoSchema): every field proto3 optional, so that NULL is
// an unset field; BOOLEAN bool, SMALLINT and INTEGER int32, BIGINT int64,
// REAL float, DOUBLE PRECISION double, BYTEA bytes, TIMESTAMPTZ and
// TIMESTAMP (taken as UTC) google.protobuf.Timestamp, everything else
// string in its PostgreSQL text form.
type ProtoWriter struct {
	cols   []types.Column
	Schema string // the .proto text
	md     protoreflect.MessageDescriptor
	fields []protoreflect.FieldDescriptor
	// env is the Debezium envelope message (NewProtoEnvelopeWriter),
	// the file's first: before and after the row message, op, epoch.
	env protoreflect.MessageDescriptor
}

// NewProtoEnvelopeWriter derives a .proto whose first message,
// <name>_envelope, is a Debezium change envelope (before = 1, after = 2:
// the row message name; op = 3; epoch = 4) of rows with columns cols.
func NewProtoEnvelopeWriter(name string, cols []types.Column) (*ProtoWriter, error) {
	return newProtoWriter(name, cols, true)
}

// AppendEnvelope appends the Confluent framing of schema id (message
// indexes [0], the envelope) and the envelope of one change.
func (w *ProtoWriter) AppendEnvelope(buf []byte, id uint32, before, after types.Row, epoch uint64) ([]byte, error) {
	m := dynamicpb.NewMessage(w.env)
	op := encode.DebeziumOp(before, after)
	for i, r := range []types.Row{before, after} {
		if r == nil {
			continue
		}
		rm, err := w.rowMessage(r)
		if err != nil {
			return buf, err
		}
		m.Set(w.env.Fields().ByNumber(protoreflect.FieldNumber(i+1)), protoreflect.ValueOfMessage(rm))
	}
	m.Set(w.env.Fields().ByName("op"), protoreflect.ValueOfString(op))
	m.Set(w.env.Fields().ByName("epoch"), protoreflect.ValueOfInt64(int64(epoch)))
	buf = append(AppendFrame(buf, id), 0)
	return proto.MarshalOptions{Deterministic: true}.MarshalAppend(buf, m)
}

// NewProtoWriter derives the .proto of message name (package sluice)
// for cols and compiles it.
func NewProtoWriter(name string, cols []types.Column) (*ProtoWriter, error) {
	return newProtoWriter(name, cols, false)
}

// protoHeader starts every derived .proto.
const protoHeader = "syntax = \"proto3\";\npackage sluice;\nimport \"google/protobuf/timestamp.proto\";\n"

// newProtoWriter derives the .proto of the row message name for cols,
// after an envelope message of it when envelope is set, and compiles it.
func newProtoWriter(name string, cols []types.Column, envelope bool) (*ProtoWriter, error) {
	row := avroName(name)
	var b strings.Builder
	b.WriteString(protoHeader)
	if envelope {
		fmt.Fprintf(&b, "message %s_envelope {\n  %s before = 1;\n  %s after = 2;\n  string op = 3;\n  int64 epoch = 4;\n}\n", row, row, row)
	}
	fmt.Fprintf(&b, "message %s {\n", row)
	for i, c := range cols {
		fmt.Fprintf(&b, "  optional %s %s = %d;\n", protoType(c.Type), avroName(c.Name), i+1)
	}
	b.WriteString("}\n")
	w := &ProtoWriter{cols: cols, Schema: b.String()}
	fd, err := compileProto(w.Schema, nil)
	if err != nil {
		return nil, pgerror.Wrap(err, pgcode.Internal, "the derived Protobuf schema")
	}
	w.md = fd.Messages().Get(0)
	if envelope {
		w.env, w.md = fd.Messages().Get(0), fd.Messages().Get(1)
	}
	for i := range cols {
		w.fields = append(w.fields, w.md.Fields().ByNumber(protoreflect.FieldNumber(i+1)))
	}
	return w, nil
}

// Message is the full name of the written message.
func (w *ProtoWriter) Message() string { return string(w.md.FullName()) }

func protoType(t types.T) string {
	switch t.Fam {
	case types.Bool:
		return "bool"
	case types.Int2, types.Int4:
		return "int32"
	case types.Int8:
		return "int64"
	case types.Float4:
		return "float"
	case types.Float8:
		return "double"
	case types.Bytea:
		return "bytes"
	case types.Timestamp, types.TimestampTZ:
		return "google.protobuf.Timestamp"
	}
	return "string"
}

// AppendMessage appends the Confluent framing of schema id (message
// indexes [0]) and the message of row.
func (w *ProtoWriter) AppendMessage(buf []byte, id uint32, row types.Row) ([]byte, error) {
	m, err := w.rowMessage(row)
	if err != nil {
		return buf, err
	}
	buf = append(AppendFrame(buf, id), 0) // message indexes [0]
	return proto.MarshalOptions{Deterministic: true}.MarshalAppend(buf, m)
}

// rowMessage returns the row message of row.
func (w *ProtoWriter) rowMessage(row types.Row) (*dynamicpb.Message, error) {
	m := dynamicpb.NewMessage(w.md)
	for i, c := range w.cols {
		d := row[i]
		if d.IsNull() {
			continue
		}
		f := w.fields[i]
		var v protoreflect.Value
		switch c.Type.Fam {
		case types.Bool:
			v = protoreflect.ValueOfBool(d.Bool())
		case types.Int2, types.Int4:
			v = protoreflect.ValueOfInt32(int32(d.I))
		case types.Int8:
			v = protoreflect.ValueOfInt64(d.I)
		case types.Float4:
			v = protoreflect.ValueOfFloat32(float32(d.Float()))
		case types.Float8:
			v = protoreflect.ValueOfFloat64(d.Float())
		case types.Bytea:
			v = protoreflect.ValueOfBytes([]byte(d.S))
		case types.Timestamp, types.TimestampTZ:
			if d.I == types.InfinityI || d.I == types.NegInfinityI {
				return nil, pgerror.New(pgcode.DatetimeFieldOverflow, "column %s: %s has no Protobuf Timestamp form", c.Name, types.FormatText(d, c.Type))
			}
			ts := dynamicpb.NewMessage(f.Message())
			sec, us := d.I/1e6, d.I%1e6
			if us < 0 {
				sec, us = sec-1, us+1e6
			}
			ts.Set(f.Message().Fields().ByName("seconds"), protoreflect.ValueOfInt64(sec))
			ts.Set(f.Message().Fields().ByName("nanos"), protoreflect.ValueOfInt32(int32(us*1000)))
			v = protoreflect.ValueOfMessage(ts)
		default:
			v = protoreflect.ValueOfString(types.FormatText(d, c.Type))
		}
		m.Set(f, v)
	}
	return m, nil
}

// RegisterProto registers a .proto text under subject (schemaType
// PROTOBUF) and returns its id.
func (c *Client) RegisterProto(subject, text string) (uint32, error) {
	var ans struct {
		ID uint32 `json:"id"`
	}
	if err := c.do(http.MethodPost, "/subjects/"+subjectPath(subject)+"/versions", map[string]string{"schemaType": "PROTOBUF", "schema": text}, &ans); err != nil {
		return 0, err
	}
	if ans.ID == 0 {
		return 0, pgerror.New(pgcode.ConnectionException, "schema registry %s: registering under %s returned no id", c.base, subject)
	}
	return ans.ID, nil
}
