package tests

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
)

// avroTopicRecord is one record of a topic written by an ENCODE AVRO
// sink, decoded with the schema the registry holds under its id.
type avroTopicRecord struct {
	key, value map[string]any // nil: no key / a tombstone
	keyID      uint32
	valueID    uint32
}

// readAvroTopic reads topic (read_committed) until it holds want records
// or 20 s pass, and decodes every key and value with the registry's schema
// of its id; the raw JSON keys of an unkeyed or JSON-keyed record are left
// out.
func readAvroTopic(t *testing.T, reg *testRegistry, addr, topic string, want int) []avroTopicRecord {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	decode := func(b []byte) (map[string]any, uint32) {
		t.Helper()
		if len(b) < 5 || b[0] != 0 {
			t.Fatalf("topic %s: %q is not in the Confluent wire format", topic, b)
		}
		id := binary.BigEndian.Uint32(b[1:5])
		reg.mu.Lock()
		if id < 1 || int(id) > len(reg.schemas) {
			reg.mu.Unlock()
			t.Fatalf("topic %s: schema id %d is not registered", topic, id)
		}
		text := reg.schemas[id-1]
		reg.mu.Unlock()
		var m map[string]any
		if err := avro.Unmarshal(avro.MustParse(text), b[5:], &m); err != nil {
			t.Fatalf("topic %s: decoding with schema %d: %v", topic, id, err)
		}
		return m, id
	}
	var out []avroTopicRecord
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for len(out) < want && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			var rec avroTopicRecord
			if len(r.Key) > 0 && r.Key[0] == 0 {
				rec.key, rec.keyID = decode(r.Key)
			}
			if r.Value != nil {
				rec.value, rec.valueID = decode(r.Value)
			}
			out = append(out, rec)
		})
	}
	// A few more polls: nothing beyond want may follow (no duplicates).
	ctx2, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel2()
	cl.PollFetches(ctx2).EachRecord(func(r *kgo.Record) { out = append(out, avroTopicRecord{}) })
	return out
}

// avroLine prints the fields of a decoded record in order.
func avroLine(m map[string]any, fields ...string) string {
	var parts []string
	for _, f := range fields {
		v := m[f]
		if u, ok := v.(map[string]any); ok && len(u) == 1 {
			// hamba/avro decodes a union branch it has no Go type for
			// (long.local-timestamp-micros) as {"branch": value}.
			for _, x := range u {
				v = x
			}
		}
		switch v := v.(type) {
		case nil:
			parts = append(parts, "NULL")
		case *big.Rat:
			parts = append(parts, v.FloatString(2))
		case time.Time:
			parts = append(parts, v.UTC().Format("2006-01-02T15:04:05.999999"))
		default:
			parts = append(parts, fmt.Sprint(v))
		}
	}
	return strings.Join(parts, " ")
}

// TestKafkaAvroSink writes ENCODE AVRO sinks into Kafka: FORMAT PLAIN
// from an append-only source and FORMAT UPSERT from a table, each with
// delivery EXACTLY_ONCE (transactional) and AT_LEAST_ONCE. The schemas
// the sinks register (<topic>-value, and <topic>-key for UPSERT) decode
// every record with hamba/avro to the exact rows, deletes are tombstones,
// a Sluice ENCODE AVRO source reads the topic back to the same rows, and
// registry credentials are checked (wrong ones: 28000 at CREATE SOURCE,
// the sink's Last Error in SHOW SINKS).
func TestKafkaAvroSink(t *testing.T) {
	reg, regURL := startRegistry(t)
	b := StartBroker(t, 1, "avs_in")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	in := []string{
		`{"id":1,"k":"a","amount":"10.25","ts":"2026-12-06T10:00:01Z","d":"2026-12-06","note":null,"ok":true,"f":1.5,"lts":"2026-12-06 11:00:00.123456"}`,
		`{"id":2,"k":"b","amount":"-20.5","ts":"2026-12-06T10:00:02.5Z","d":"1969-12-31","note":"second","ok":false,"f":-0.25,"lts":"1960-01-01 00:00:00"}`,
		`{"id":3,"k":"a","amount":"123456.78","ts":"2026-12-06T10:00:03Z","d":"2000-02-29","note":"third","ok":null,"f":null,"lts":null}`,
	}
	for _, v := range in {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "avs_in", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	s := StartServer(t, Options{CheckpointInterval: 200 * time.Millisecond})
	conn := s.ConnectSimple(t)
	kw := `connector = 'kafka', properties.bootstrap.server = '` + b.Addr + `'`
	enc := `ENCODE AVRO (schema.registry = '` + regURL + `')`
	ExecAll(t, conn,
		`CREATE SOURCE src (id BIGINT, k TEXT, amount NUMERIC(10,2), ts TIMESTAMPTZ, d DATE, note TEXT, ok BOOLEAN, f DOUBLE PRECISION, lts TIMESTAMP) WITH (`+kw+`, topic = 'avs_in') FORMAT PLAIN ENCODE JSON`,
		`CREATE MATERIALIZED VIEW src_v AS SELECT * FROM src`,
		`CREATE SINK avs_plain FROM src WITH (`+kw+`, topic = 'avs_plain', delivery = 'EXACTLY_ONCE') FORMAT PLAIN `+enc,
		`CREATE SINK avs_plain_al FROM src WITH (`+kw+`, topic = 'avs_plain_al', delivery = 'AT_LEAST_ONCE') FORMAT PLAIN `+enc,
		`CREATE TABLE acct (id INT PRIMARY KEY, name TEXT, bal NUMERIC(12,2))`,
		`CREATE SINK avs_up FROM acct WITH (`+kw+`, topic = 'avs_up', primary_key = 'id', delivery = 'EXACTLY_ONCE') FORMAT UPSERT `+enc,
		`CREATE SINK avs_up_al FROM acct WITH (`+kw+`, topic = 'avs_up_al', primary_key = 'id', delivery = 'AT_LEAST_ONCE') FORMAT UPSERT `+enc,
	)
	ExecAll(t, conn, `INSERT INTO acct VALUES (1, 'ann', 10.50), (2, 'bob', NULL), (3, 'cy', -3)`, `FLUSH`)
	ExecAll(t, conn, `UPDATE acct SET bal = 99.99 WHERE id = 1`, `FLUSH`)
	ExecAll(t, conn, `DELETE FROM acct WHERE id = 2`, `FLUSH`)

	plainFields := []string{"id", "k", "amount", "ts", "d", "note", "ok", "f", "lts"}
	wantPlain := []string{
		"1 a 10.25 2026-12-06T10:00:01 2026-12-06T00:00:00 NULL true 1.5 2026-12-06T11:00:00.123456",
		"2 b -20.50 2026-12-06T10:00:02.5 1969-12-31T00:00:00 second false -0.25 1960-01-01T00:00:00",
		"3 a 123456.78 2026-12-06T10:00:03 2000-02-29T00:00:00 third NULL NULL NULL",
	}
	for _, topic := range []string{"avs_plain", "avs_plain_al"} {
		recs := readAvroTopic(t, reg, b.Addr, topic, len(wantPlain))
		var got []string
		for _, r := range recs {
			if r.key != nil || r.value == nil {
				t.Errorf("%s: record key %v value %v, want an unkeyed value", topic, r.key, r.value)
				continue
			}
			got = append(got, avroLine(r.value, plainFields...))
		}
		sort.Strings(got)
		if strings.Join(got, "\n") != strings.Join(wantPlain, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", topic, got, wantPlain)
		}
	}
	// The registered value schema: nullable unions and logical types.
	reg.mu.Lock()
	ids := reg.subjects["avs_plain-value"]
	var schema string
	if len(ids) == 1 {
		schema = reg.schemas[ids[0]-1]
	}
	reg.mu.Unlock()
	for _, want := range []string{
		`{"default":null,"name":"id","type":["null","long"]}`,
		`{"default":null,"name":"amount","type":["null",{"logicalType":"decimal","precision":10,"scale":2,"type":"bytes"}]}`,
		`{"default":null,"name":"ts","type":["null",{"logicalType":"timestamp-micros","type":"long"}]}`,
		`{"default":null,"name":"d","type":["null",{"logicalType":"date","type":"int"}]}`,
		`{"default":null,"name":"lts","type":["null",{"logicalType":"local-timestamp-micros","type":"long"}]}`,
	} {
		if !strings.Contains(schema, want) {
			t.Errorf("subject avs_plain-value (ids %v) has schema %s, want a field %s", ids, schema, want)
		}
	}

	// UPSERT: Avro keys of the key schema, the latest value per key, a
	// tombstone for the deleted row.
	for _, topic := range []string{"avs_up", "avs_up_al"} {
		recs := readAvroTopic(t, reg, b.Addr, topic, 5)
		var got []string
		for _, r := range recs {
			if r.key == nil {
				t.Errorf("%s: a record without an Avro key", topic)
				continue
			}
			if r.keyID == r.valueID {
				t.Errorf("%s: key and value under one schema id %d", topic, r.keyID)
			}
			v := "TOMBSTONE"
			if r.value != nil {
				v = avroLine(r.value, "id", "name", "bal")
			}
			got = append(got, avroLine(r.key, "id")+" -> "+v)
		}
		want := []string{"1 -> 1 ann 10.50", "2 -> 2 bob NULL", "3 -> 3 cy -3.00", "1 -> 1 ann 99.99", "2 -> TOMBSTONE"}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", topic, got, want)
		}
	}
	reg.mu.Lock()
	if n := len(reg.subjects["avs_up-key"]); n != 1 {
		t.Errorf("subject avs_up-key has %d versions, want 1", n)
	}
	reg.mu.Unlock()

	// Read back through a Sluice Avro source: the columns come from the
	// registered schema, the rows are the source's.
	ExecAll(t, conn,
		`CREATE SOURCE back WITH (`+kw+`, topic = 'avs_plain') FORMAT PLAIN `+enc,
		`CREATE MATERIALIZED VIEW back_v AS SELECT * FROM back`)
	waitForLines(t, conn, `SELECT column_name || ' ' || data_type FROM information_schema.columns WHERE table_name = 'back'`, []string{
		"amount numeric", "d date", "f double precision", "id bigint", "k text", "lts timestamp without time zone",
		"note text", "ok boolean", "ts timestamp with time zone"})
	srcLines := queryLines(t, conn, `SELECT id, k, amount, ts, d, note, ok, f, lts FROM src_v ORDER BY id`)
	if len(srcLines) != 3 {
		t.Fatalf("src has %d rows, want 3", len(srcLines))
	}
	waitForLines(t, conn, `SELECT id, k, amount, ts, d, note, ok, f, lts FROM back_v ORDER BY id`, srcLines)

	// And the upsert topic through FORMAT UPSERT ENCODE AVRO: the deleted
	// row's tombstone deletes it.
	ExecAll(t, conn,
		`CREATE SOURCE up_back (id INT, name TEXT, bal NUMERIC(12,2), PRIMARY KEY (id)) WITH (`+kw+`, topic = 'avs_up') FORMAT UPSERT `+enc,
		`CREATE MATERIALIZED VIEW up_back_v AS SELECT id, name, bal FROM up_back`)
	waitForLines(t, conn, `SELECT id, name, bal FROM up_back_v`, []string{"1 ann 99.99", "3 cy -3.00"})

	// Credentials: the registry now demands them.
	reg.mu.Lock()
	reg.user, reg.pass = "sr-user", "sr-secret"
	reg.mu.Unlock()
	wantCode(t, conn, `CREATE SOURCE back2 WITH (`+kw+`, topic = 'avs_plain') FORMAT PLAIN ENCODE AVRO (schema.registry = '`+regURL+`')`, "28000", "401")
	wantCode(t, conn, `CREATE SOURCE back2 WITH (`+kw+`, topic = 'avs_plain') FORMAT PLAIN ENCODE AVRO (schema.registry = '`+regURL+`', schema.registry.username = 'sr-user', schema.registry.password = 'wrong')`, "28000", "schema.registry.password")
	ExecAll(t, conn,
		`CREATE SOURCE back2 WITH (`+kw+`, topic = 'avs_plain') FORMAT PLAIN ENCODE AVRO (schema.registry = '`+regURL+`', schema.registry.username = 'sr-user', schema.registry.password = 'sr-secret')`,
		`CREATE MATERIALIZED VIEW back2_v AS SELECT id FROM back2`,
		`CREATE SINK avs_badpw FROM src WITH (`+kw+`, topic = 'avs_badpw', delivery = 'AT_LEAST_ONCE') FORMAT PLAIN ENCODE AVRO (schema.registry = '`+regURL+`', schema.registry.username = 'sr-user', schema.registry.password = 'wrong')`,
		`CREATE SINK avs_goodpw FROM src WITH (`+kw+`, topic = 'avs_goodpw', delivery = 'EXACTLY_ONCE') FORMAT PLAIN ENCODE AVRO (schema.registry = '`+strings.Replace(regURL, "http://", "http://sr-user:sr-secret@", 1)+`')`,
	)
	waitForLines(t, conn, `SELECT id FROM back2_v`, []string{"1", "2", "3"})
	if n := len(readAvroTopic(t, reg, b.Addr, "avs_goodpw", 3)); n != 3 {
		t.Errorf("avs_goodpw (credentials in the URL) has %d records, want 3", n)
	}
	deadline := time.Now().Add(15 * time.Second)
	for e := sinkError(t, conn, "avs_badpw"); !strings.Contains(e, "401"); e = sinkError(t, conn, "avs_badpw") {
		if time.Now().After(deadline) {
			t.Fatalf("SHOW SINKS: avs_badpw's last error is %q, want the registry's 401", e)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The password is not shown.
	for _, name := range []string{"avs_goodpw", "avs_badpw"} {
		res, err := QueryText(ctx, conn, `SHOW CREATE SINK `+name)
		if err != nil {
			t.Fatal(err)
		}
		if shown := fmt.Sprint(res.Rows); strings.Contains(shown, "sr-secret") || strings.Contains(shown, "wrong") || !strings.Contains(shown, "ENCODE AVRO") {
			t.Errorf("SHOW CREATE SINK %s: %s, want the statement without the registry password", name, shown)
		}
	}

	for _, bad := range []struct{ sql, code string }{
		// No registry; an unknown option after ENCODE; UPSERT CSV.
		{`CREATE SINK x FROM src WITH (` + kw + `, topic = 'x') FORMAT PLAIN ENCODE AVRO`, "22023"},
		{`CREATE SINK x FROM src WITH (` + kw + `, topic = 'x') FORMAT PLAIN ENCODE AVRO (schema.registry = '` + regURL + `', message = 'm')`, "22023"},
		{`CREATE SINK x FROM src WITH (` + kw + `, topic = 'x') FORMAT PLAIN ENCODE JSON (schema.registry = '` + regURL + `')`, "22023"},
		{`CREATE SINK x FROM src WITH (` + kw + `, topic = 'x', primary_key = 'id') FORMAT UPSERT ENCODE CSV`, "0A000"},
		{`CREATE SINK x FROM src WITH (` + kw + `, topic = 'x') FORMAT PLAIN ENCODE AVRO (schema.registry = 'ftp://h')`, "22023"},
		{`CREATE SINK x FROM src WITH (` + kw + `, topic = 'x') FORMAT PLAIN ENCODE AVRO (schema.registry = '` + regURL + `', schema.registry.password = 'p')`, "22023"},
	} {
		wantCode(t, conn, bad.sql, bad.code)
	}
}

// avroDbzEnvelope is a Debezium change event's value schema as Debezium's
// Avro converter registers it: before and after unions of the row record.
const avroDbzEnvelope = `{"type":"record","name":"Envelope","namespace":"dbserver1.inventory.customers","fields":[
 {"name":"before","type":["null",{"type":"record","name":"Value","fields":[
   {"name":"id","type":"int"},
   {"name":"email","type":["null","string"],"default":null},
   {"name":"since","type":["null",{"type":"long","logicalType":"timestamp-micros"}],"default":null}]}],"default":null},
 {"name":"after","type":["null","Value"],"default":null},
 {"name":"op","type":"string"},
 {"name":"ts_ms","type":["null","long"],"default":null}]}`

const avroUpKey = `{"type":"record","name":"Key","fields":[{"name":"id","type":"int"}]}`
const avroUpValue = `{"type":"record","name":"Acct","fields":[{"name":"id","type":"int"},{"name":"name","type":["null","string"],"default":null}]}`

// TestKafkaAvroUpsertDebezium reads FORMAT UPSERT ENCODE AVRO (Avro keys
// of <topic>-key, tombstones delete) and FORMAT DEBEZIUM ENCODE AVRO
// (the envelope's before/after records, columns derived from "after"),
// with bad records dead-lettered.
func TestKafkaAvroUpsertDebezium(t *testing.T) {
	reg, regURL := startRegistry(t)
	b := StartBroker(t, 1, "avu", "avd")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	frame := func(schema string, id uint32, v any) []byte {
		t.Helper()
		data, err := avro.Marshal(avro.MustParse(schema), v)
		if err != nil {
			t.Fatal(err)
		}
		return confluentFrame(id, data)
	}
	produce := func(topic string, key, value []byte) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: key, Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	kid := reg.register("avu-key", avroUpKey)
	vid := reg.register("avu-value", avroUpValue)
	key := func(id int) []byte { return frame(avroUpKey, kid, map[string]any{"id": int32(id)}) }
	val := func(id int, name any) []byte {
		return frame(avroUpValue, vid, map[string]any{"id": int32(id), "name": name})
	}
	produce("avu", key(1), val(1, "ann"))
	produce("avu", key(2), val(2, "bob"))
	produce("avu", key(3), val(3, nil))
	produce("avu", key(1), val(1, "ann2")) // replaces
	produce("avu", key(2), nil)            // a tombstone deletes
	produce("avu", key(4), []byte("not avro"))
	produce("avu", confluentFrame(77, []byte{2}), nil) // a key of an unknown schema id

	did := reg.register("avd-value", avroDbzEnvelope)
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	row := func(id int, email string) map[string]any {
		return map[string]any{"dbserver1.inventory.customers.Value": map[string]any{"id": int32(id), "email": email, "since": since}}
	}
	dbz := func(op string, before, after any) []byte {
		return frame(avroDbzEnvelope, did, map[string]any{"before": before, "after": after, "op": op, "ts_ms": int64(1)})
	}
	produce("avd", nil, dbz("r", nil, row(1, "a@x")))
	produce("avd", nil, dbz("c", nil, row(2, "b@x")))
	produce("avd", nil, dbz("u", row(1, "a@x"), row(1, "a2@x")))
	produce("avd", nil, dbz("d", row(2, "b@x"), nil))
	produce("avd", nil, nil) // the tombstone after a delete
	produce("avd", nil, dbz("c", nil, row(3, "c@x")))
	produce("avd", nil, []byte(`{"op":"c"}`)) // JSON, not Avro

	s := StartServer(t, Options{})
	conn := s.ConnectSimple(t)
	kw := `connector = 'kafka', properties.bootstrap.server = '` + b.Addr + `', on_error = 'dead_letter'`
	enc := `ENCODE AVRO (schema.registry = '` + regURL + `')`
	ExecAll(t, conn,
		`CREATE SOURCE avu (id INT, name TEXT, PRIMARY KEY (id)) WITH (`+kw+`, topic = 'avu') FORMAT UPSERT `+enc,
		`CREATE MATERIALIZED VIEW avu_v AS SELECT id, coalesce(name, 'NULL') AS name FROM avu`,
		`CREATE SOURCE avd WITH (`+kw+`, topic = 'avd') FORMAT DEBEZIUM `+enc,
		`CREATE MATERIALIZED VIEW avd_v AS SELECT id, email, since FROM avd`,
	)
	waitForLines(t, conn, `SELECT id, name FROM avu_v`, []string{"1 ann2", "3 NULL"})
	waitForLines(t, conn, `SELECT column_name || ' ' || data_type FROM information_schema.columns WHERE table_name = 'avd'`,
		[]string{"email text", "id integer", "since timestamp with time zone"})
	waitForLines(t, conn, `SELECT id, email, since FROM avd_v`, []string{"1 a2@x 2026-01-02 03:04:05+00", "3 c@x 2026-01-02 03:04:05+00"})
	waitForLines(t, conn, `SELECT source, "offset" FROM sluice_dead_letters ORDER BY 1, 2`, []string{"avd 6", "avu 5", "avu 6"})
}

// TestKafkaAvroDebeziumSink writes FORMAT DEBEZIUM ENCODE AVRO from a
// table, EXACTLY_ONCE: the registry holds an envelope schema (before,
// after, op, source.epoch) under <topic>-value and the key columns'
// record under <topic>-key; every change decodes with hamba/avro to its
// exact before and after rows and op (an insert c, an update u with both
// rows, a delete d), once; a FORMAT DEBEZIUM ENCODE AVRO source reads the
// topic back to the table's rows.
func TestKafkaAvroDebeziumSink(t *testing.T) {
	reg, regURL := startRegistry(t)
	b := StartBroker(t, 1)
	s := StartServer(t, Options{CheckpointInterval: 200 * time.Millisecond})
	conn := s.ConnectSimple(t)
	kw := `connector = 'kafka', properties.bootstrap.server = '` + b.Addr + `'`
	enc := `ENCODE AVRO (schema.registry = '` + regURL + `')`
	ExecAll(t, conn,
		`CREATE TABLE acct (id INT PRIMARY KEY, name TEXT, bal NUMERIC(12,2))`,
		`CREATE SINK avs_dbz FROM acct WITH (`+kw+`, topic = 'avs_dbz', primary_key = 'id', delivery = 'EXACTLY_ONCE') FORMAT DEBEZIUM `+enc)
	ExecAll(t, conn, `INSERT INTO acct VALUES (1, 'ann', 10.50), (2, 'bob', NULL)`, `FLUSH`)
	ExecAll(t, conn, `UPDATE acct SET bal = 99.99 WHERE id = 1`, `FLUSH`)
	ExecAll(t, conn, `DELETE FROM acct WHERE id = 2`, `FLUSH`)
	ExecAll(t, conn, `INSERT INTO acct VALUES (3, 'cy', -3)`, `FLUSH`)
	recs := readAvroTopic(t, reg, b.Addr, "avs_dbz", 5)
	row := func(v any) string {
		if v == nil {
			return "NULL"
		}
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("an envelope row is %T", v)
		}
		if len(m) == 1 { // hamba/avro: the union branch by name
			for _, x := range m {
				m = x.(map[string]any)
			}
		}
		return "(" + avroLine(m, "id", "name", "bal") + ")"
	}
	var got []string
	for _, r := range recs {
		if r.value == nil {
			t.Fatalf("a record without a value: %+v", r)
		}
		if r.keyID == 0 {
			t.Fatalf("a record without an Avro key: %+v", r)
		}
		src, _ := r.value["source"].(map[string]any)
		if src == nil || src["epoch"] == nil {
			t.Fatalf("envelope without source.epoch: %v", r.value)
		}
		got = append(got, fmt.Sprintf("%s key=%s %s -> %s", r.value["op"], avroLine(r.key, "id"), row(r.value["before"]), row(r.value["after"])))
	}
	want := []string{
		"c key=1 NULL -> (1 ann 10.50)",
		"c key=2 NULL -> (2 bob NULL)",
		"u key=1 (1 ann 10.50) -> (1 ann 99.99)",
		"d key=2 (2 bob NULL) -> NULL",
		"c key=3 NULL -> (3 cy -3.00)",
	}
	sort.Strings(got[:2])
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("envelopes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	ExecAll(t, conn,
		`CREATE SOURCE back (id INT, name TEXT, bal NUMERIC(12,2), PRIMARY KEY (id)) WITH (`+kw+`, topic = 'avs_dbz') FORMAT DEBEZIUM `+enc,
		`CREATE MATERIALIZED VIEW back_v AS SELECT * FROM back`)
	waitForLines(t, conn, `SELECT id, name, coalesce(bal::text, 'NULL') FROM back_v ORDER BY id`, []string{"1 ann 99.99", "3 cy -3.00"})
}

// TestKafkaAvroRegistryConflictAndCA: a registry that refuses a sink's
// schema (409, the subject's compatibility) shows as the sink's Last Error
// naming the incompatibility (42804) while the sink keeps its epochs and
// retries; once the registry accepts, every row arrives exactly once. A
// registry over https with a certificate of its own: a source without
// schema.registry.ca is refused at CREATE (the certificate is unknown),
// with it a sink registers and writes and a source reads the rows back.
func TestKafkaAvroRegistryConflictAndCA(t *testing.T) {
	reg, regURL := startRegistry(t)
	reg.mu.Lock()
	reg.conflict["c409-value"] = true
	reg.mu.Unlock()
	treg, tURL, ca := startRegistryTLS(t)
	b := StartBroker(t, 1)
	s := StartServer(t, Options{CheckpointInterval: 200 * time.Millisecond})
	conn := s.ConnectSimple(t)
	kw := `connector = 'kafka', properties.bootstrap.server = '` + b.Addr + `'`
	ExecAll(t, conn,
		`CREATE TABLE acct (id INT PRIMARY KEY, name TEXT)`,
		`CREATE SINK c409 FROM acct WITH (`+kw+`, topic = 'c409', primary_key = 'id', delivery = 'EXACTLY_ONCE') FORMAT UPSERT ENCODE AVRO (schema.registry = '`+regURL+`')`,
		`CREATE SINK tls_out FROM acct WITH (`+kw+`, topic = 'tls_out', primary_key = 'id', delivery = 'EXACTLY_ONCE') FORMAT UPSERT ENCODE AVRO (schema.registry = '`+tURL+`', schema.registry.ca = '`+ca+`')`)
	ExecAll(t, conn, `INSERT INTO acct VALUES (1, 'ann'), (2, 'bob')`, `FLUSH`)
	ExecAll(t, conn, `UPDATE acct SET name = 'cy' WHERE id = 2`, `FLUSH`)
	deadline := time.Now().Add(20 * time.Second)
	for {
		e := sinkError(t, conn, "c409")
		if strings.Contains(e, "incompatible with the subject's earlier versions") {
			t.Logf("the refused sink's Last Error: %s", e)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sink c409's Last Error %q does not name the incompatible schema", e)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The https sink wrote meanwhile, through the CA file.
	recs := readAvroTopic(t, treg, b.Addr, "tls_out", 3)
	if len(recs) != 3 {
		t.Fatalf("tls_out: %d records, want 3", len(recs))
	}
	// The registry accepts now: the refused sink delivers its epochs.
	reg.mu.Lock()
	delete(reg.conflict, "c409-value")
	reg.mu.Unlock()
	recs = readAvroTopic(t, reg, b.Addr, "c409", 3)
	var got []string
	for _, r := range recs {
		got = append(got, avroLine(r.key, "id")+" "+avroLine(r.value, "name"))
	}
	sort.Strings(got[:2])
	if strings.Join(got, ",") != "1 ann,2 bob,2 cy" {
		t.Fatalf("c409 after the registry accepted: %v, want 1 ann, 2 bob, 2 cy once each", got)
	}
	// Columns derived from the registry: CREATE reads the schema over
	// https, which fails without the CA.
	wantCode(t, conn, `CREATE SOURCE nope WITH (`+kw+`, topic = 'tls_out') FORMAT PLAIN ENCODE AVRO (schema.registry = '`+tURL+`')`, "08000")
	ExecAll(t, conn,
		`CREATE SOURCE back (id INT, name TEXT, PRIMARY KEY (id)) WITH (`+kw+`, topic = 'tls_out') FORMAT UPSERT ENCODE AVRO (schema.registry = '`+tURL+`', schema.registry.ca = '`+ca+`')`,
		`CREATE MATERIALIZED VIEW back_v AS SELECT id, name FROM back`)
	waitForLines(t, conn, `SELECT id, name FROM back_v ORDER BY id`, []string{"1 ann", "2 cy"})
}
