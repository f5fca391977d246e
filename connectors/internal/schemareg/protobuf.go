package schemareg

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Protobuf. A registered PROTOBUF schema is the text of a .proto file; it
// is compiled at run time (bufbuild/protocompile, the well-known imports
// such as google/protobuf/timestamp.proto built in) and its messages are
// read with dynamicpb. The Confluent wire format of a Protobuf message is
// the zero byte, the schema id, then the message indexes (a zig-zag
// varint count and that many zig-zag varint indexes: the path to the
// message among the file's top-level and then nested messages; the single
// byte 0 stands for [0], the first message), then the message.

// compileProto compiles the text of a .proto file.
func compileProto(text string, imports map[string]string) (protoreflect.FileDescriptor, error) {
	const name = "registered.proto"
	sources := map[string]string{name: text}
	for k, v := range imports {
		if k != name {
			sources[k] = v
		}
	}
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(sources),
	})}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	files, err := c.Compile(ctx, name)
	if err != nil {
		return nil, pgerror.New(pgcode.InvalidParameterValue, "bad Protobuf schema: %v", err).
			WithHint("an import must be a well-known google/protobuf type or a schema reference registered with the schema (its name the import path)")
	}
	return files[0], nil
}

// compileWithRefs compiles a registered .proto with the files its schema
// references name (their import paths).
func (c *Client) compileWithRefs(ans registered) (protoreflect.FileDescriptor, error) {
	var imports map[string]string
	if len(ans.References) > 0 {
		var err error
		if _, imports, err = c.refTexts(ans.References); err != nil {
			return nil, err
		}
	}
	return compileProto(ans.Schema, imports)
}

// ProtoMessage returns the descriptor of message (a full name such as
// pkg.Msg, or a name without the package) in the latest schema of
// subject: the row a source reads.
func (c *Client) ProtoMessage(subject, message string) (protoreflect.MessageDescriptor, error) {
	var ans registered
	if err := c.get("/subjects/"+subjectPath(subject)+"/versions/latest", &ans); err != nil {
		return nil, err
	}
	if !strings.EqualFold(ans.SchemaType, "PROTOBUF") {
		return nil, pgerror.New(pgcode.InvalidParameterValue, "subject %s holds a schema of type %s, not PROTOBUF", subject, orAvro(ans.SchemaType)).
			WithHint("use ENCODE AVRO for Avro schemas")
	}
	fd, err := c.compileWithRefs(ans)
	if err != nil {
		return nil, err
	}
	return findMessage(fd, message)
}

func orAvro(t string) string {
	if t == "" {
		return "AVRO"
	}
	return t
}

// findMessage finds message (full name or the name within the file's
// package) in fd.
func findMessage(fd protoreflect.FileDescriptor, message string) (protoreflect.MessageDescriptor, error) {
	name := protoreflect.FullName(message)
	if fd.Package() != "" && !strings.HasPrefix(message, string(fd.Package())+".") {
		name = fd.Package().Append(protoreflect.Name(message))
		if strings.Contains(message, ".") {
			name = protoreflect.FullName(string(fd.Package()) + "." + message)
		}
	}
	var found protoreflect.MessageDescriptor
	var walk func(ms protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len() && found == nil; i++ {
			if ms.Get(i).FullName() == name || ms.Get(i).FullName() == protoreflect.FullName(message) {
				found = ms.Get(i)
			}
			walk(ms.Get(i).Messages())
		}
	}
	walk(fd.Messages())
	if found == nil {
		var names []string
		for i := 0; i < fd.Messages().Len(); i++ {
			names = append(names, string(fd.Messages().Get(i).FullName()))
		}
		return nil, pgerror.New(pgcode.InvalidParameterValue, "the Protobuf schema has no message %s", message).
			WithHint("message names one of %s", strings.Join(names, ", "))
	}
	return found, nil
}

// protoFile returns the compiled schema registered under id.
func (c *Client) protoFile(id uint32) (protoreflect.FileDescriptor, error) {
	c.mu.Lock()
	fd := c.protoByID[id]
	c.mu.Unlock()
	if fd != nil {
		return fd, nil
	}
	var ans registered
	if err := c.get(fmt.Sprintf("/schemas/ids/%d", id), &ans); err != nil {
		return nil, err
	}
	if !strings.EqualFold(ans.SchemaType, "PROTOBUF") {
		return nil, fmt.Errorf("schema %d is of type %s, not PROTOBUF", id, orAvro(ans.SchemaType))
	}
	fd, err := c.compileWithRefs(ans)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.protoByID[id] = fd
	c.mu.Unlock()
	return fd, nil
}

// readIndexes reads the message indexes after the schema id.
func readIndexes(b []byte) ([]int, []byte, error) {
	n, k := binary.Varint(b)
	if k <= 0 || n < 0 || n > 100 {
		return nil, nil, fmt.Errorf("bad Protobuf message indexes")
	}
	b = b[k:]
	if n == 0 {
		return []int{0}, b, nil
	}
	idx := make([]int, n)
	for i := range idx {
		v, k := binary.Varint(b)
		if k <= 0 || v < 0 {
			return nil, nil, fmt.Errorf("bad Protobuf message indexes")
		}
		idx[i], b = int(v), b[k:]
	}
	return idx, b, nil
}

// ProtoReader reads Confluent-framed Protobuf messages of one message
// type into records (decode.RecordSource).
type ProtoReader struct {
	c       *Client
	message string // the full name every record must have
}

// NewProtoReader returns a reader of records of message (a full name).
func (c *Client) NewProtoReader(message string) *ProtoReader {
	return &ProtoReader{c: c, message: message}
}

// Record decodes msg into a record: field name -> value (nil for an unset
// field with presence; a proto3 scalar without presence is its value).
func (p *ProtoReader) Record(msg []byte) (map[string]any, error) {
	m, err := p.decode(msg)
	if err != nil {
		return nil, err
	}
	return protoRecord(m), nil
}

// Envelope decodes msg as a Debezium change envelope: a message whose
// fields before and after are the row's message (each unset when
// absent) and op a string; it returns the rows as records
// (decode.EnvelopeSource).
func (p *ProtoReader) Envelope(msg []byte) (before, after map[string]any, op string, err error) {
	m, err := p.decode(msg)
	if err != nil {
		return nil, nil, "", err
	}
	fields := m.Descriptor().Fields()
	for _, img := range []struct {
		name string
		dst  *map[string]any
	}{{"before", &before}, {"after", &after}} {
		f := fields.ByName(protoreflect.Name(img.name))
		if f == nil || f.Message() == nil || f.IsList() || f.IsMap() {
			return nil, nil, "", fmt.Errorf("the message %s has no %s message field: not a Debezium envelope", m.Descriptor().FullName(), img.name)
		}
		if m.Has(f) {
			*img.dst = protoRecord(m.Get(f).Message())
		}
	}
	if f := fields.ByName("op"); f != nil && f.Kind() == protoreflect.StringKind {
		op = m.Get(f).String()
	}
	return before, after, op, nil
}

// decode unframes msg and reads its message.
func (p *ProtoReader) decode(msg []byte) (protoreflect.Message, error) {
	if len(msg) < 6 || msg[0] != 0 {
		return nil, fmt.Errorf("not in the Confluent wire format (a zero byte, a 4-byte schema id, the message indexes)")
	}
	id := binary.BigEndian.Uint32(msg[1:5])
	fd, err := p.c.protoFile(id)
	if err != nil {
		return nil, err
	}
	idx, payload, err := readIndexes(msg[5:])
	if err != nil {
		return nil, err
	}
	ms := fd.Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range idx {
		if i >= ms.Len() {
			return nil, fmt.Errorf("message index %v is not in schema %d", idx, id)
		}
		md = ms.Get(i)
		ms = md.Messages()
	}
	if p.message != "" && string(md.FullName()) != p.message && string(md.Name()) != p.message {
		return nil, fmt.Errorf("the record is a %s, not a %s", md.FullName(), p.message)
	}
	m := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(payload, m); err != nil {
		return nil, fmt.Errorf("bad Protobuf data for schema %d: %v", id, err)
	}
	return m, nil
}

// protoRecord converts a message into a record.
func protoRecord(m protoreflect.Message) map[string]any {
	fields := m.Descriptor().Fields()
	rec := make(map[string]any, fields.Len())
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		if f.HasPresence() && !m.Has(f) {
			rec[string(f.Name())] = nil
			continue
		}
		rec[string(f.Name())] = protoValue(f, m.Get(f))
	}
	return rec
}

// protoValue converts one field value: scalars to Go values the decoder
// knows, a Timestamp to a time.Time, other messages, lists and maps to
// JSON (protojson for messages).
func protoValue(f protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch {
	case f.IsList():
		l := v.List()
		out := make([]any, l.Len())
		for i := range out {
			out[i] = protoScalar(f, l.Get(i))
		}
		return out
	case f.IsMap():
		out := map[string]any{}
		v.Map().Range(func(k protoreflect.MapKey, x protoreflect.Value) bool {
			out[k.String()] = protoScalar(f.MapValue(), x)
			return true
		})
		return out
	}
	return protoScalar(f, v)
}

func protoScalar(f protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch f.Kind() {
	case protoreflect.BoolKind:
		return v.Bool()
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return int32(v.Int())
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return v.Int()
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return int64(v.Uint())
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if u := v.Uint(); u <= math.MaxInt64 {
			return int64(u)
		}
		return json.Number(fmt.Sprint(v.Uint()))
	case protoreflect.FloatKind:
		return float32(v.Float())
	case protoreflect.DoubleKind:
		return v.Float()
	case protoreflect.StringKind:
		return v.String()
	case protoreflect.BytesKind:
		return v.Bytes()
	case protoreflect.EnumKind:
		if e := f.Enum().Values().ByNumber(v.Enum()); e != nil {
			return string(e.Name())
		}
		return fmt.Sprint(int32(v.Enum()))
	case protoreflect.MessageKind, protoreflect.GroupKind:
		m := v.Message()
		if m.Descriptor().FullName() == "google.protobuf.Timestamp" {
			fs := m.Descriptor().Fields()
			return time.Unix(m.Get(fs.ByName("seconds")).Int(), m.Get(fs.ByName("nanos")).Int()).UTC()
		}
		b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m.Interface())
		if err != nil {
			return nil
		}
		return json.RawMessage(b)
	}
	return nil
}

// ProtoColumns derives a source's columns from a message's fields.
func ProtoColumns(md protoreflect.MessageDescriptor) ([]types.Column, error) {
	fields := md.Fields()
	cols := make([]types.Column, 0, fields.Len())
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		t := types.TJSONB
		if !f.IsList() && !f.IsMap() {
			switch f.Kind() {
			case protoreflect.BoolKind:
				t = types.TBool
			case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
				t = types.TInt4
			case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind, protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
				t = types.TInt8
			case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
				t = types.TNumeric
			case protoreflect.FloatKind:
				t = types.TFloat4
			case protoreflect.DoubleKind:
				t = types.TFloat8
			case protoreflect.StringKind, protoreflect.EnumKind:
				t = types.TText
			case protoreflect.BytesKind:
				t = types.TBytea
			case protoreflect.MessageKind, protoreflect.GroupKind:
				if f.Message().FullName() == "google.protobuf.Timestamp" {
					t = types.TTimestampTZ
				}
			}
		}
		cols = append(cols, types.Column{Name: string(f.Name()), Type: t})
	}
	if len(cols) == 0 {
		return nil, pgerror.New(pgcode.InvalidObjectDefinition, "Protobuf message %s has no fields", md.FullName())
	}
	return cols, nil
}
