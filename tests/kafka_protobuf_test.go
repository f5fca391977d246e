package tests

import (
	"context"
	"encoding/binary"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

const protoShop = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Order {
  enum Status { NEW = 0; PAID = 1; }
  int64 id = 1;
  string item = 2;
  double price = 3;
  optional string note = 4;
  Status status = 5;
  google.protobuf.Timestamp ts = 6;
  repeated string tags = 7;
  uint32 qty = 8;
}
message Other { string x = 1; }
`

// compileTestProto compiles a .proto text for the test's producer.
func compileTestProto(t *testing.T, text string) protoreflect.FileDescriptor {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"t.proto": text}),
	})}
	files, err := c.Compile(context.Background(), "t.proto")
	if err != nil {
		t.Fatal(err)
	}
	return files[0]
}

// TestKafkaProtobuf reads Confluent-framed Protobuf records (magic byte,
// schema id, message indexes, message) through a schema registry that
// holds the .proto text (schemaType PROTOBUF): columns derived from the
// message's fields, proto3 defaults and optional fields, enums, a
// Timestamp, a repeated field; records that are not Protobuf, of an
// unknown schema id or of another message are dead letters; bad options
// and a registry that is down are refused at CREATE.
func TestKafkaProtobuf(t *testing.T) {
	reg, regURL := startRegistry(t)
	b := StartBroker(t, 1, "orders")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	id := reg.register("orders-value", protoShop)
	reg.mu.Lock()
	reg.stypes[id] = "PROTOBUF"
	reg.mu.Unlock()

	fd := compileTestProto(t, protoShop)
	order := fd.Messages().ByName("Order")
	tsd := order.Fields().ByName("ts").Message()
	frame := func(indexes []byte, m proto.Message) []byte {
		data, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out := binary.BigEndian.AppendUint32([]byte{0}, id)
		return append(append(out, indexes...), data...)
	}
	mk := func(set func(m *dynamicpb.Message, f protoreflect.FieldDescriptors)) []byte {
		m := dynamicpb.NewMessage(order)
		set(m, order.Fields())
		return frame([]byte{0}, m) // [0]: the first message
	}
	produce := func(v []byte) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(mk(func(m *dynamicpb.Message, f protoreflect.FieldDescriptors) {
		m.Set(f.ByName("id"), protoreflect.ValueOfInt64(1))
		m.Set(f.ByName("item"), protoreflect.ValueOfString("apple"))
		m.Set(f.ByName("price"), protoreflect.ValueOfFloat64(1.5))
		m.Set(f.ByName("status"), protoreflect.ValueOfEnum(1))
		ts := dynamicpb.NewMessage(tsd)
		ts.Set(tsd.Fields().ByName("seconds"), protoreflect.ValueOfInt64(time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC).Unix()))
		ts.Set(tsd.Fields().ByName("nanos"), protoreflect.ValueOfInt32(250000000))
		m.Set(f.ByName("ts"), protoreflect.ValueOfMessage(ts))
		l := m.Mutable(f.ByName("tags")).List()
		l.Append(protoreflect.ValueOfString("x"))
		l.Append(protoreflect.ValueOfString("y"))
		m.Set(f.ByName("qty"), protoreflect.ValueOfUint32(3))
	}))
	// proto3 defaults: item "" and price 0 are values, the unset optional
	// note and message ts are NULL.
	produce(mk(func(m *dynamicpb.Message, f protoreflect.FieldDescriptors) {
		m.Set(f.ByName("id"), protoreflect.ValueOfInt64(2))
		m.Set(f.ByName("note"), protoreflect.ValueOfString("second"))
	}))
	produce([]byte(`{"id": 3}`))                                           // not Protobuf
	produce(append(binary.BigEndian.AppendUint32([]byte{0}, 99), 0, 8, 3)) // unknown schema id
	other := dynamicpb.NewMessage(fd.Messages().ByName("Other"))
	other.Set(other.Descriptor().Fields().ByName("x"), protoreflect.ValueOfString("?"))
	produce(frame([]byte{2, 2}, other)) // indexes [1]: shop.Other, not shop.Order
	produce(mk(func(m *dynamicpb.Message, f protoreflect.FieldDescriptors) {
		m.Set(f.ByName("id"), protoreflect.ValueOfInt64(6))
		m.Set(f.ByName("item"), protoreflect.ValueOfString("last"))
	}))

	s := StartServer(t, Options{})
	conn := s.ConnectSimple(t)
	kw := `connector = 'kafka', topic = 'orders', properties.bootstrap.server = '` + b.Addr + `'`
	ExecAll(t, conn,
		`CREATE SOURCE orders WITH (`+kw+`, on_error = 'dead_letter') FORMAT PLAIN ENCODE PROTOBUF (message = 'shop.Order', schema.registry = '`+regURL+`')`,
		`CREATE MATERIALIZED VIEW orders_v AS SELECT * FROM orders`,
	)
	waitForLines(t, conn, `SELECT column_name || ' ' || data_type FROM information_schema.columns WHERE table_name = 'orders'`, []string{
		"id bigint", "item text", "note text", "price double precision", "qty bigint", "status text", "tags jsonb", "ts timestamp with time zone"})
	waitForLines(t, conn, `SELECT id, '<' || item || '>', price, coalesce(note, 'NULL'), status, coalesce(ts::text, 'NULL'), tags, qty FROM orders_v`, []string{
		`1 <apple> 1.5 NULL PAID 2026-12-06 10:00:00.25+00 ["x", "y"] 3`,
		`2 <> 0 second NEW NULL [] 0`,
		`6 <last> 0 NULL NEW NULL [] 0`,
	})
	waitForLines(t, conn, `SELECT "offset" FROM sluice_dead_letters WHERE source = 'orders'`, []string{"2", "3", "4"})

	// A Protobuf sink: it registers a .proto of its columns under
	// pb_out-value; a Protobuf source reads the topic back to the same rows.
	ExecAll(t, conn,
		`CREATE SINK pb_out FROM orders WITH (connector = 'kafka', topic = 'pb_out', properties.bootstrap.server = '`+b.Addr+`') FORMAT PLAIN ENCODE PROTOBUF (schema.registry = '`+regURL+`')`,
	)
	// The sink registers its schema on its first write.
	waitRegistered(t, reg, conn, "pb_out")
	ExecAll(t, conn,
		`CREATE SOURCE pb_back WITH (connector = 'kafka', topic = 'pb_out', properties.bootstrap.server = '`+b.Addr+`') FORMAT PLAIN ENCODE PROTOBUF (message = 'sluice.pb_out_value', schema.registry = '`+regURL+`')`,
		`CREATE MATERIALIZED VIEW pb_back_v AS SELECT * FROM pb_back`,
	)
	waitForLines(t, conn, `SELECT id, '<' || item || '>', price, coalesce(note, 'NULL'), status, coalesce(ts::text, 'NULL'), tags, qty FROM pb_back_v`, []string{
		`1 <apple> 1.5 NULL PAID 2026-12-06 10:00:00.25+00 ["x", "y"] 3`,
		`2 <> 0 second NEW NULL [] 0`,
		`6 <last> 0 NULL NEW NULL [] 0`,
	})
	reg.mu.Lock()
	if ids := reg.subjects["pb_out-value"]; len(ids) != 1 || reg.stypes[ids[0]] != "PROTOBUF" || !strings.Contains(reg.schemas[ids[0]-1], "optional google.protobuf.Timestamp ts = 6;") {
		t.Errorf("subject pb_out-value: ids %v, want one PROTOBUF schema with the field ts", ids)
	}
	reg.mu.Unlock()

	for _, bad := range []struct{ sql, code string }{
		{`CREATE SOURCE x WITH (` + kw + `) FORMAT PLAIN ENCODE PROTOBUF (schema.registry = '` + regURL + `')`, "22023"},
		{`CREATE SOURCE x WITH (` + kw + `) FORMAT PLAIN ENCODE PROTOBUF (message = 'shop.Nope', schema.registry = '` + regURL + `')`, "22023"},
		{`CREATE SOURCE x WITH (` + kw + `) FORMAT PLAIN ENCODE PROTOBUF (message = 'shop.Order', schema.registry = 'http://127.0.0.1:1')`, "08000"},
		{`CREATE SOURCE x WITH (` + kw + `) FORMAT PLAIN ENCODE AVRO (schema.registry = '` + regURL + `')`, "0A000"},
		{`CREATE SOURCE x WITH (` + kw + `) FORMAT DEBEZIUM ENCODE PROTOBUF (message = 'shop.Order', schema.registry = '` + regURL + `')`, "22023"},
	} {
		wantCode(t, conn, bad.sql, bad.code)
	}
}

// TestKafkaProtobufUpsert reads FORMAT UPSERT ENCODE PROTOBUF: each value
// is the message, each key JSON ({"id": 1}) or text (3); a later record
// of a key replaces its row, a tombstone (no value) deletes it, a value
// that is not Protobuf is a dead letter; across a SIGKILL and restart the
// view is the same.
func TestKafkaProtobufUpsert(t *testing.T) {
	reg, regURL := startRegistry(t)
	b, cl, ctx := brokerClient(t, "orders_u")
	id := reg.register("orders_u-value", protoShop)
	reg.mu.Lock()
	reg.stypes[id] = "PROTOBUF"
	reg.mu.Unlock()
	order := compileTestProto(t, protoShop).Messages().ByName("Order")
	val := func(oid int64, item string) []byte {
		m := dynamicpb.NewMessage(order)
		m.Set(order.Fields().ByName("id"), protoreflect.ValueOfInt64(oid))
		m.Set(order.Fields().ByName("item"), protoreflect.ValueOfString(item))
		data, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return append(binary.BigEndian.AppendUint32([]byte{0}, id), append([]byte{0}, data...)...)
	}
	produce := func(key string, value []byte) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders_u", Key: []byte(key), Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(`{"id": 1}`, val(1, "apple"))
	produce(`{"id": 2}`, val(2, "pear"))
	produce(`3`, val(3, "plum"))
	produce(`{"id": 1}`, val(1, "apple2")) // replaces 1
	produce(`{"id": 2}`, nil)              // deletes 2
	produce(`{"id": 4}`, []byte(`{"id": 4}`))
	produce(`{"id": 5}`, val(5, "fig"))

	s := StartServer(t, Options{})
	conn := s.ConnectSimple(t)
	ExecAll(t, conn,
		`CREATE SOURCE ou (id BIGINT, item TEXT, PRIMARY KEY (id)) WITH (connector = 'kafka', topic = 'orders_u', properties.bootstrap.server = '`+b.Addr+`', on_error = 'dead_letter')
		   FORMAT UPSERT ENCODE PROTOBUF (message = 'shop.Order', schema.registry = '`+regURL+`')`,
		`CREATE MATERIALIZED VIEW ou_v AS SELECT id, item FROM ou`,
		`CREATE MATERIALIZED VIEW ou_n AS SELECT count(*) AS n FROM ou`)
	want := []string{"1 apple2", "3 plum", "5 fig"}
	waitForLines(t, conn, `SELECT id, item FROM ou_v`, want)
	waitForLines(t, conn, `SELECT n FROM ou_n`, []string{"3"})
	waitForLines(t, conn, `SELECT "offset" FROM sluice_dead_letters WHERE source = 'ou'`, []string{"5"})
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	conn = s.ConnectSimple(t)
	produce(`5`, nil)
	produce(`{"id": 6}`, val(6, "kiwi"))
	waitForLines(t, conn, `SELECT id, item FROM ou_v`, []string{"1 apple2", "3 plum", "6 kiwi"})
	waitForLines(t, conn, `SELECT n FROM ou_n`, []string{"3"})

	// Protobuf keys: with key.message, a Confluent-framed key is that
	// message (a tombstone's key too); a JSON key still works beside them.
	const keyProto = "syntax = \"proto3\";\npackage shop;\nmessage OrderKey { int64 id = 1; }\n"
	kid := reg.register("orders_u-key", keyProto)
	reg.mu.Lock()
	reg.stypes[kid] = "PROTOBUF"
	reg.mu.Unlock()
	okd := compileTestProto(t, keyProto).Messages().ByName("OrderKey")
	pkey := func(oid int64) string {
		m := dynamicpb.NewMessage(okd)
		m.Set(okd.Fields().ByName("id"), protoreflect.ValueOfInt64(oid))
		data, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(append(binary.BigEndian.AppendUint32([]byte{0}, kid), append([]byte{0}, data...)...))
	}
	produce(pkey(7), val(7, "lime"))
	produce(pkey(6), nil) // deletes 6
	produce(pkey(1), val(1, "apple3"))
	ExecAll(t, conn,
		`CREATE SOURCE ouk (id BIGINT, item TEXT, PRIMARY KEY (id)) WITH (connector = 'kafka', topic = 'orders_u', properties.bootstrap.server = '`+b.Addr+`', on_error = 'dead_letter')
		   FORMAT UPSERT ENCODE PROTOBUF (message = 'shop.Order', key.message = 'shop.OrderKey', schema.registry = '`+regURL+`')`,
		`CREATE MATERIALIZED VIEW ouk_v AS SELECT id, item FROM ouk`)
	waitForLines(t, conn, `SELECT id, item FROM ouk_v`, []string{"1 apple3", "3 plum", "7 lime"})
	wantCode(t, conn, `CREATE SOURCE bad (id BIGINT) WITH (connector = 'kafka', topic = 'orders_u', properties.bootstrap.server = '`+b.Addr+`')
		   FORMAT PLAIN ENCODE PROTOBUF (message = 'shop.Order', key.message = 'shop.OrderKey', schema.registry = '`+regURL+`')`, "22023")
}

// TestKafkaProtobufUpsertSink: FORMAT UPSERT ENCODE PROTOBUF from a table,
// EXACTLY_ONCE: each record's value is the registered message of the row
// (keys JSON of the primary key), a delete a tombstone; a FORMAT UPSERT
// ENCODE PROTOBUF source reads the topic back to the table's rows, the
// deleted one gone.
func TestKafkaProtobufUpsertSink(t *testing.T) {
	reg, regURL := startRegistry(t)
	b := StartBroker(t, 1)
	s := StartServer(t, Options{CheckpointInterval: 200 * time.Millisecond})
	conn := s.ConnectSimple(t)
	kw := `connector = 'kafka', properties.bootstrap.server = '` + b.Addr + `'`
	ExecAll(t, conn,
		`CREATE TABLE acct (id INT PRIMARY KEY, name TEXT, bal NUMERIC(12,2))`,
		`CREATE SINK pbu FROM acct WITH (`+kw+`, topic = 'pbu', primary_key = 'id', delivery = 'EXACTLY_ONCE') FORMAT UPSERT ENCODE PROTOBUF (schema.registry = '`+regURL+`')`)
	ExecAll(t, conn, `INSERT INTO acct VALUES (1, 'ann', 10.50), (2, 'bob', NULL), (3, 'cy', -3)`, `FLUSH`)
	ExecAll(t, conn, `UPDATE acct SET bal = 99.99 WHERE id = 1`, `DELETE FROM acct WHERE id = 2`, `FLUSH`)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumeTopics("pbu"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []string
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for len(recs) < 5 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			v := "tombstone"
			if r.Value != nil {
				if len(r.Value) < 6 || r.Value[0] != 0 {
					t.Fatalf("value %q is not Confluent-framed", r.Value)
				}
				v = "message"
			}
			recs = append(recs, string(r.Key)+" "+v)
		})
	}
	sort.Strings(recs)
	if want := []string{`{"id":1} message`, `{"id":1} message`, `{"id":2} message`, `{"id":2} tombstone`, `{"id":3} message`}; strings.Join(recs, ",") != strings.Join(want, ",") {
		t.Fatalf("records %v, want %v", recs, want)
	}
	reg.mu.Lock()
	n := len(reg.subjects["pbu-value"])
	reg.mu.Unlock()
	if n != 1 {
		t.Fatalf("pbu-value has %d schemas, want 1", n)
	}
	ExecAll(t, conn,
		`CREATE SOURCE back (id INT, name TEXT, bal TEXT, PRIMARY KEY (id)) WITH (`+kw+`, topic = 'pbu') FORMAT UPSERT ENCODE PROTOBUF (message = 'sluice.pbu_value', schema.registry = '`+regURL+`')`,
		`CREATE MATERIALIZED VIEW back_v AS SELECT id, name, coalesce(bal, 'NULL') FROM back`)
	waitForLines(t, conn, `SELECT * FROM back_v ORDER BY id`, []string{"1 ann 99.99", "3 cy -3.00"})
}

// TestKafkaProtobufDebezium reads FORMAT DEBEZIUM ENCODE PROTOBUF: each
// record is an envelope message (before and after: the row's message, op)
// whose columns come from its after message; creates, an update and a
// delete leave the table's rows, a tombstone is ignored, a record that is
// not Protobuf is a dead letter.
func TestKafkaProtobufDebezium(t *testing.T) {
	const dbz = `syntax = "proto3";
package dbz;
message Value { int32 id = 1; optional string name = 2; }
message Envelope { Value before = 1; Value after = 2; string op = 3; }
`
	reg, regURL := startRegistry(t)
	b, cl, ctx := brokerClient(t, "dbzp")
	id := reg.register("dbzp-value", dbz)
	reg.mu.Lock()
	reg.stypes[id] = "PROTOBUF"
	reg.mu.Unlock()
	fd := compileTestProto(t, dbz)
	val, env := fd.Messages().ByName("Value"), fd.Messages().ByName("Envelope")
	row := func(rid int32, name string) protoreflect.Value {
		m := dynamicpb.NewMessage(val)
		m.Set(val.Fields().ByName("id"), protoreflect.ValueOfInt32(rid))
		if name != "" {
			m.Set(val.Fields().ByName("name"), protoreflect.ValueOfString(name))
		}
		return protoreflect.ValueOfMessage(m)
	}
	produce := func(v []byte) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "dbzp", Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	change := func(op string, before, after *protoreflect.Value) []byte {
		m := dynamicpb.NewMessage(env)
		if before != nil {
			m.Set(env.Fields().ByName("before"), *before)
		}
		if after != nil {
			m.Set(env.Fields().ByName("after"), *after)
		}
		m.Set(env.Fields().ByName("op"), protoreflect.ValueOfString(op))
		data, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		// indexes [1]: the file's second message, dbz.Envelope.
		return append(binary.BigEndian.AppendUint32([]byte{0}, id), append([]byte{2, 2}, data...)...)
	}
	a1, a2, a3 := row(1, "ann"), row(2, "bob"), row(3, "")
	produce(change("c", nil, &a1))
	produce(change("c", nil, &a2))
	produce(change("r", nil, &a3))
	b1 := row(1, "anne")
	produce(change("u", &a1, &b1))
	produce(change("d", &a2, nil))
	produce(nil)                   // the tombstone after a delete
	produce([]byte(`{"op": "c"}`)) // not Protobuf: a dead letter
	s := StartServer(t, Options{})
	conn := s.ConnectSimple(t)
	ExecAll(t, conn,
		`CREATE SOURCE dbzp WITH (connector = 'kafka', topic = 'dbzp', properties.bootstrap.server = '`+b.Addr+`', on_error = 'dead_letter')
		   FORMAT DEBEZIUM ENCODE PROTOBUF (message = 'dbz.Envelope', schema.registry = '`+regURL+`')`,
		`CREATE MATERIALIZED VIEW dbzp_v AS SELECT id, coalesce(name, 'NULL') FROM dbzp`)
	waitForLines(t, conn, `SELECT column_name || ' ' || data_type FROM information_schema.columns WHERE table_name = 'dbzp'`, []string{"id integer", "name text"})
	waitForLines(t, conn, `SELECT * FROM dbzp_v ORDER BY id`, []string{"1 anne", "3 NULL"})
	waitForLines(t, conn, `SELECT "offset" FROM sluice_dead_letters WHERE source = 'dbzp'`, []string{"6"})

	// A FORMAT DEBEZIUM ENCODE PROTOBUF sink: its envelope message read
	// back by a Debezium Protobuf source to the table's rows.
	ExecAll(t, conn,
		`CREATE TABLE acct (id INT PRIMARY KEY, name TEXT)`,
		`CREATE SINK dbz_out FROM acct WITH (connector = 'kafka', topic = 'dbz_out', properties.bootstrap.server = '`+b.Addr+`', primary_key = 'id', delivery = 'EXACTLY_ONCE')
		   FORMAT DEBEZIUM ENCODE PROTOBUF (schema.registry = '`+regURL+`')`)
	ExecAll(t, conn, `INSERT INTO acct VALUES (1, 'ann'), (2, 'bob'), (3, NULL)`, `FLUSH`)
	ExecAll(t, conn, `UPDATE acct SET name = 'cy' WHERE id = 3`, `DELETE FROM acct WHERE id = 2`, `FLUSH`)
	waitRegistered(t, reg, conn, "dbz_out")
	ExecAll(t, conn,
		`CREATE SOURCE dbz_back WITH (connector = 'kafka', topic = 'dbz_out', properties.bootstrap.server = '`+b.Addr+`')
		   FORMAT DEBEZIUM ENCODE PROTOBUF (message = 'sluice.dbz_out_value_envelope', schema.registry = '`+regURL+`')`,
		`CREATE MATERIALIZED VIEW dbz_back_v AS SELECT id, coalesce(name, 'NULL') FROM dbz_back`)
	waitForLines(t, conn, `SELECT * FROM dbz_back_v ORDER BY id`, []string{"1 ann", "3 cy"})
}

// waitRegistered waits until sink (topic of the same name) has registered
// its value schema, which it does on its first write.
func waitRegistered(t *testing.T, reg *testRegistry, conn *pgx.Conn, sink string) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		reg.mu.Lock()
		n := len(reg.subjects[sink+"-value"])
		reg.mu.Unlock()
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sink %s registered no schema: %s", sink, sinkError(t, conn, sink))
		}
	}
}
