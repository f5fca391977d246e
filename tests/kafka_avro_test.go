package tests

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// testRegistry is a schema registry speaking the Confluent REST protocol
// (the subset a reader needs, and registration) on 127.0.0.1; with user
// set it demands HTTP basic authentication, as the Confluent registry
// does with authentication.method=BASIC.
type testRegistry struct {
	user, pass string

	mu       sync.Mutex
	schemas  []string            // id-1 -> schema text
	stypes   map[uint32]string   // id -> schemaType when not AVRO
	subjects map[string][]uint32 // subject -> ids of its versions
	gets     map[string]int      // path -> GETs served
	posts    map[string]int      // subject -> registrations asked
	// conflict holds the subjects whose compatibility refuses a new
	// schema: a registration answers 409, as a registry does.
	conflict map[string]bool
	// refs holds each schema's references (Confluent: name, subject,
	// version), answered with the schema.
	refs map[uint32][]map[string]any
}

// registerWithRefs registers schema under subject with references refs.
func (r *testRegistry) registerWithRefs(subject, schema, schemaType string, refs ...map[string]any) uint32 {
	id := r.register(subject, schema)
	r.mu.Lock()
	defer r.mu.Unlock()
	if schemaType != "" {
		r.stypes[id] = schemaType
	}
	r.refs[id] = refs
	return id
}

func startRegistry(t *testing.T) (*testRegistry, string) {
	r := newTestRegistry()
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	return r, srv.URL
}

func newTestRegistry() *testRegistry {
	return &testRegistry{subjects: map[string][]uint32{}, stypes: map[uint32]string{}, gets: map[string]int{}, posts: map[string]int{},
		conflict: map[string]bool{}, refs: map[uint32][]map[string]any{}}
}

// startRegistryTLS starts the registry over https with a certificate of
// its own; it returns the URL and a PEM file of the certificate (the CA a
// client must trust).
func startRegistryTLS(t *testing.T) (*testRegistry, string, string) {
	r := newTestRegistry()
	srv := httptest.NewTLSServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "registry-ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return r, srv.URL, ca
}

func (r *testRegistry) register(subject, schema string) uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.schemas = append(r.schemas, schema)
	id := uint32(len(r.schemas))
	r.subjects[subject] = append(r.subjects[subject], id)
	return id
}

func (r *testRegistry) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	notFound := func(code int, msg string) {
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(map[string]any{"error_code": code, "message": msg})
	}
	if r.user != "" {
		if u, p, ok := req.BasicAuth(); !ok || u != r.user || p != r.pass {
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]any{"error_code": 401, "message": "Unauthorized"})
			return
		}
	}
	if req.Method == http.MethodPost {
		// POST /subjects/{subject}/versions {"schema": …}: the id of the
		// same schema if the subject has it, else a new version.
		subject, ok := strings.CutSuffix(strings.TrimPrefix(req.URL.Path, "/subjects/"), "/versions")
		var body struct {
			Schema     string `json:"schema"`
			SchemaType string `json:"schemaType"`
		}
		if !ok || json.NewDecoder(req.Body).Decode(&body) != nil || body.Schema == "" {
			w.WriteHeader(http.StatusUnprocessableEntity)
			json.NewEncoder(w).Encode(map[string]any{"error_code": 42201, "message": "Invalid schema"})
			return
		}
		r.posts[subject]++
		if r.conflict[subject] {
			w.WriteHeader(http.StatusConflict)
			json.NewEncoder(w).Encode(map[string]any{"error_code": 409, "message": "Schema being registered is incompatible with an earlier schema for subject \"" + subject + "\""})
			return
		}
		for _, id := range r.subjects[subject] {
			if r.schemas[id-1] == body.Schema {
				json.NewEncoder(w).Encode(map[string]any{"id": id})
				return
			}
		}
		r.schemas = append(r.schemas, body.Schema)
		id := uint32(len(r.schemas))
		r.subjects[subject] = append(r.subjects[subject], id)
		if body.SchemaType != "" && body.SchemaType != "AVRO" {
			r.stypes[id] = body.SchemaType
		}
		json.NewEncoder(w).Encode(map[string]any{"id": id})
		return
	}
	r.gets[req.URL.Path]++
	switch p := req.URL.Path; {
	case strings.HasPrefix(p, "/schemas/ids/"):
		id, err := strconv.Atoi(strings.TrimPrefix(p, "/schemas/ids/"))
		if err != nil || id < 1 || id > len(r.schemas) {
			notFound(40403, "Schema not found")
			return
		}
		ans := map[string]any{"schema": r.schemas[id-1]}
		if st := r.stypes[uint32(id)]; st != "" {
			ans["schemaType"] = st
		}
		if refs := r.refs[uint32(id)]; len(refs) > 0 {
			ans["references"] = refs
		}
		json.NewEncoder(w).Encode(ans)
	case strings.HasPrefix(p, "/subjects/") && strings.HasSuffix(p, "/versions/latest"):
		subject := strings.TrimSuffix(strings.TrimPrefix(p, "/subjects/"), "/versions/latest")
		ids := r.subjects[subject]
		if len(ids) == 0 {
			notFound(40401, "Subject '"+subject+"' not found.")
			return
		}
		id := ids[len(ids)-1]
		ans := map[string]any{"subject": subject, "version": len(ids), "id": id, "schema": r.schemas[id-1]}
		if st := r.stypes[id]; st != "" {
			ans["schemaType"] = st
		}
		if refs := r.refs[id]; len(refs) > 0 {
			ans["references"] = refs
		}
		json.NewEncoder(w).Encode(ans)
	case strings.HasPrefix(p, "/subjects/") && strings.Contains(p, "/versions/"):
		// GET /subjects/{subject}/versions/{n}: a reference's schema.
		subject, v, _ := strings.Cut(strings.TrimPrefix(p, "/subjects/"), "/versions/")
		n, err := strconv.Atoi(v)
		ids := r.subjects[subject]
		if err != nil || n < 1 || n > len(ids) {
			notFound(40402, "Version not found.")
			return
		}
		id := ids[n-1]
		ans := map[string]any{"subject": subject, "version": n, "id": id, "schema": r.schemas[id-1]}
		if st := r.stypes[id]; st != "" {
			ans["schemaType"] = st
		}
		if refs := r.refs[id]; len(refs) > 0 {
			ans["references"] = refs
		}
		json.NewEncoder(w).Encode(ans)
	default:
		notFound(404, "not found")
	}
}

const avroBidV1 = `{"type":"record","name":"Bid","fields":[
 {"name":"auction","type":"long"},
 {"name":"bidder","type":"int"},
 {"name":"price","type":"double"},
 {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
 {"name":"channel","type":{"type":"enum","name":"Channel","symbols":["web","app"]}},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"note","type":["null","string"],"default":null},
 {"name":"ok","type":"boolean"}]}`

// v2 adds a field with a default: a compatible evolution.
const avroBidV2 = `{"type":"record","name":"Bid","fields":[
 {"name":"auction","type":"long"},
 {"name":"bidder","type":"int"},
 {"name":"price","type":"double"},
 {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
 {"name":"channel","type":{"type":"enum","name":"Channel","symbols":["web","app"]}},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"note","type":["null","string"],"default":null},
 {"name":"ok","type":"boolean"},
 {"name":"qty","type":"int","default":1}]}`

// TestKafkaAvro reads Confluent-framed Avro records through a schema
// registry: the source's columns derived from the topic's latest value
// schema when none are declared, every record decoded with its own
// writer's schema (fetched once per id), a compatible new version
// mid-stream, declared columns matched by name, bad records and bad
// options.
func TestKafkaAvro(t *testing.T) {
	reg, regURL := startRegistry(t)
	b := StartBroker(t, 1, "bids", "bad")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	produce := func(topic, schema string, id uint32, rec map[string]any) {
		t.Helper()
		s := avro.MustParse(schema)
		data, err := avro.Marshal(s, rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: confluentFrame(id, data)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ts := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	bid := func(i int, note any) map[string]any {
		return map[string]any{"auction": int64(1000 + i), "bidder": int32(i), "price": float64(i) + 0.5,
			"amount": mustRat(t, fmt.Sprintf("%d.25", i*10)), "channel": []string{"web", "app"}[i%2],
			"ts": ts.Add(time.Duration(i) * time.Second), "note": note, "ok": i%2 == 0}
	}
	v1 := reg.register("bids-value", avroBidV1)
	produce("bids", avroBidV1, v1, bid(1, nil))
	produce("bids", avroBidV1, v1, bid(2, "second"))

	s := StartServer(t, Options{})
	conn := s.ConnectSimple(t)
	ExecAll(t, conn,
		`CREATE SOURCE bids WITH (connector = 'kafka', topic = 'bids', properties.bootstrap.server = '`+b.Addr+`')
		   FORMAT PLAIN ENCODE AVRO (schema.registry = '`+regURL+`')`,
		`CREATE MATERIALIZED VIEW bids_all AS SELECT * FROM bids`,
		`CREATE SOURCE bids_qty (auction BIGINT, qty INT, note TEXT) WITH (connector = 'kafka', topic = 'bids', properties.bootstrap.server = '`+b.Addr+`')
		   FORMAT PLAIN ENCODE AVRO (schema.registry = '`+regURL+`')`,
		`CREATE MATERIALIZED VIEW bids_q AS SELECT auction, qty, note FROM bids_qty`,
	)
	waitForLines(t, conn, `SELECT column_name || ' ' || data_type FROM information_schema.columns WHERE table_name = 'bids' ORDER BY ordinal_position`, []string{
		// (waitForLines compares sorted lines)
		"amount numeric", "auction bigint", "bidder integer", "channel text", "note text", "ok boolean",
		"price double precision", "ts timestamp with time zone"})
	v2 := reg.register("bids-value", avroBidV2)
	r3 := bid(3, "third")
	r3["qty"] = int32(7)
	produce("bids", avroBidV2, v2, r3)
	produce("bids", avroBidV1, v1, bid(4, nil)) // an old producer still writing v1
	want := []string{
		"1001 1 1.5 10.25 app 2026-12-06 10:00:01+00 NULL f",
		"1002 2 2.5 20.25 web 2026-12-06 10:00:02+00 second t",
		"1003 3 3.5 30.25 app 2026-12-06 10:00:03+00 third f",
		"1004 4 4.5 40.25 web 2026-12-06 10:00:04+00 NULL t",
	}
	waitForLines(t, conn, `SELECT auction, bidder, price, amount, channel, ts, coalesce(note, 'NULL'), ok FROM bids_all ORDER BY auction`, want)
	// Declared columns take the fields of their names; a field the
	// writer's schema lacks (qty before v2) is NULL.
	waitForLines(t, conn, `SELECT auction, coalesce(qty::text, 'NULL'), coalesce(note, 'NULL') FROM bids_q ORDER BY auction`,
		[]string{"1001 NULL NULL", "1002 NULL second", "1003 7 third", "1004 NULL NULL"})
	reg.mu.Lock()
	for _, id := range []uint32{v1, v2} {
		if n := reg.gets[fmt.Sprintf("/schemas/ids/%d", id)]; n > 2 { // once per source reader, cached after
			t.Errorf("schema %d fetched %d times", id, n)
		}
	}
	reg.mu.Unlock()

	// Not Avro, an unknown schema id: dead letters, the good record kept.
	produce("bad", avroBidV1, v1, bid(5, nil))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "bad", Value: []byte(`{"auction": 6}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "bad", Value: confluentFrame(99, []byte{2})}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ExecAll(t, conn,
		`CREATE SOURCE bad (auction BIGINT) WITH (connector = 'kafka', topic = 'bad', properties.bootstrap.server = '`+b.Addr+`', on_error = 'dead_letter')
		   FORMAT PLAIN ENCODE AVRO (schema.registry = '`+regURL+`')`,
		`CREATE MATERIALIZED VIEW bad_v AS SELECT auction FROM bad`)
	waitForLines(t, conn, `SELECT auction FROM bad_v`, []string{"1005"})
	waitForLines(t, conn, `SELECT "offset" FROM sluice_dead_letters WHERE source = 'bad' ORDER BY 1`, []string{"1", "2"})

	for _, bad := range []struct{ sql, code string }{
		{`CREATE SOURCE x (a INT) WITH (connector = 'kafka', topic = 'bids', properties.bootstrap.server = '` + b.Addr + `') FORMAT PLAIN ENCODE AVRO`, "22023"},
		{`CREATE SOURCE x WITH (connector = 'kafka', topic = 'nosuch', properties.bootstrap.server = '` + b.Addr + `') FORMAT PLAIN ENCODE AVRO (schema.registry = '` + regURL + `')`, "08000"},
		{`CREATE SOURCE x WITH (connector = 'kafka', topic = 'bids', properties.bootstrap.server = '` + b.Addr + `') FORMAT PLAIN ENCODE AVRO (schema.registry = 'http://127.0.0.1:1')`, "08000"},
		{`CREATE SOURCE x (a INT) WITH (connector = 'kafka', topic = 'bids', properties.bootstrap.server = '` + b.Addr + `') FORMAT PLAIN ENCODE JSON (schema.registry = '` + regURL + `')`, "22023"},
		// A value schema without an "after" record is no Debezium envelope.
		{`CREATE SOURCE x WITH (connector = 'kafka', topic = 'bids', properties.bootstrap.server = '` + b.Addr + `') FORMAT DEBEZIUM ENCODE AVRO (schema.registry = '` + regURL + `')`, "0A000"},
		{`CREATE SOURCE x (a INT) WITH (connector = 'kafka', topic = 'bids', properties.bootstrap.server = '` + b.Addr + `') FORMAT PLAIN ENCODE AVRO (schema.registry = '` + regURL + `', message = 'x')`, "22023"},
	} {
		_, err := conn.Exec(ctx, bad.sql)
		if code := pgCode(err); code != bad.code {
			t.Errorf("%s: %v (code %s), want %s", bad.sql, err, code, bad.code)
		}
	}
}

func mustRat(t *testing.T, s string) any {
	t.Helper()
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		t.Fatalf("bad decimal %s", s)
	}
	return r
}

// confluentFrame frames Avro data with its schema id: the Confluent wire
// format.
func confluentFrame(id uint32, data []byte) []byte {
	out := make([]byte, 5, 5+len(data))
	binary.BigEndian.PutUint32(out[1:], id)
	return append(out, data...)
}

const avroUnionSchema = `{"type":"record","name":"Ev","namespace":"shop","fields":[
 {"name":"id","type":"long"},
 {"name":"v","type":["null","int","string",{"type":"record","name":"Pt","fields":[{"name":"x","type":"double"},{"name":"y","type":"double"}]}],"default":null},
 {"name":"addr","type":["null",{"type":"record","name":"Addr","fields":[{"name":"city","type":"string"},{"name":"zip","type":["null","string"],"default":null}]}],"default":null}]}`

// TestKafkaAvroUnionsAndStructs: an Avro union of several non-null types
// becomes a STRUCT column with a field per branch (the one the value took
// set, the others NULL; a record branch is jsonb, as a record field is),
// in a source whose columns come from the schema;
// a record field read into a declared STRUCT column fills its fields by
// name (a source with declared columns).
func TestKafkaAvroUnionsAndStructs(t *testing.T) {
	reg, regURL := startRegistry(t)
	b, cl, ctx := brokerClient(t, "evs")
	id := reg.register("evs-value", avroUnionSchema)
	sch := avro.MustParse(avroUnionSchema)
	for _, rec := range []map[string]any{
		{"id": int64(1), "v": map[string]any{"int": int32(7)}, "addr": map[string]any{"shop.Addr": map[string]any{"city": "Oslo", "zip": map[string]any{"string": "0150"}}}},
		{"id": int64(2), "v": map[string]any{"string": "seven"}, "addr": nil},
		{"id": int64(3), "v": map[string]any{"shop.Pt": map[string]any{"x": 1.5, "y": -2.0}}, "addr": map[string]any{"shop.Addr": map[string]any{"city": "Rome", "zip": nil}}},
		{"id": int64(4), "v": nil, "addr": nil},
	} {
		data, err := avro.Marshal(sch, rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "evs", Value: confluentFrame(id, data)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	s := StartServer(t, Options{})
	conn := s.ConnectSimple(t)
	kw := `connector = 'kafka', topic = 'evs', properties.bootstrap.server = '` + b.Addr + `'`
	ExecAll(t, conn,
		`CREATE SOURCE evs WITH (`+kw+`) FORMAT PLAIN ENCODE AVRO (schema.registry = '`+regURL+`')`,
		`CREATE MATERIALIZED VIEW evs_v AS SELECT id, v, (v)."int" AS i, (v).string AS s, (v)."Pt"->>'x' AS x FROM evs`,
		`CREATE SOURCE evs2 (id BIGINT, addr STRUCT<city TEXT, zip TEXT>) WITH (`+kw+`) FORMAT PLAIN ENCODE AVRO (schema.registry = '`+regURL+`')`,
		`CREATE MATERIALIZED VIEW evs2_v AS SELECT id, addr, (addr).city AS city FROM evs2`)
	res, err := QueryText(ctx, conn, "DESCRIBE evs")
	if err != nil {
		t.Fatal(err)
	}
	if d := strings.Join(res.Lines(), "\n"); !strings.Contains(d, "struct<int integer, string text, Pt jsonb>") {
		t.Fatalf("DESCRIBE evs:\n%s", d)
	}
	waitForLines(t, conn, `SELECT id, coalesce(v::text, 'NULL'), coalesce(i::text, 'NULL'), coalesce(s, 'NULL'), coalesce(x::text, 'NULL') FROM evs_v ORDER BY id`, []string{
		`1 (7,,) 7 NULL NULL`,
		`2 (,seven,) NULL seven NULL`,
		`3 (,,"{""x"": 1.5, ""y"": -2}") NULL NULL 1.5`,
		`4 NULL NULL NULL NULL`,
	})
	waitForLines(t, conn, `SELECT id, coalesce(addr::text, 'NULL'), coalesce(city, 'NULL') FROM evs2_v ORDER BY id`, []string{
		`1 (Oslo,0150) Oslo`,
		`2 NULL NULL`,
		`3 (Rome,) Rome`,
		`4 NULL NULL`,
	})
}

// TestSchemaReferences: an Avro schema that names a record type another
// subject defines, and a .proto that imports a file another subject holds
// (Confluent schema references: name, subject, version). A source reads
// each: the referenced schemas are fetched by subject and version, the
// Avro types and the import resolved, the rows exact; a reference to a
// missing version is a clear error at CREATE.
func TestSchemaReferences(t *testing.T) {
	reg, regURL := startRegistry(t)
	b, cl, ctx := brokerClient(t, "pays", "ppays")
	const money = `{"type":"record","name":"Money","namespace":"shop","fields":[{"name":"amount","type":"double"},{"name":"cur","type":"string"}]}`
	const pay = `{"type":"record","name":"Pay","namespace":"shop","fields":[{"name":"id","type":"long"},{"name":"price","type":"shop.Money"}]}`
	reg.registerWithRefs("money", money, "")
	payID := reg.registerWithRefs("pays-value", pay, "", map[string]any{"name": "shop.Money", "subject": "money", "version": 1})
	cache := &avro.SchemaCache{}
	if _, err := avro.ParseWithCache(money, "", cache); err != nil {
		t.Fatal(err)
	}
	paySchema, err := avro.ParseWithCache(pay, "", cache)
	if err != nil {
		t.Fatal(err)
	}
	for i, rec := range []map[string]any{
		{"id": int64(1), "price": map[string]any{"amount": 9.5, "cur": "EUR"}},
		{"id": int64(2), "price": map[string]any{"amount": 0.25, "cur": "NOK"}},
	} {
		data, err := avro.Marshal(paySchema, rec)
		if err != nil {
			t.Fatal(i, err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "pays", Value: confluentFrame(payID, data)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	const common = "syntax = \"proto3\";\npackage common;\nmessage Money { double amount = 1; string cur = 2; }\n"
	const shop = "syntax = \"proto3\";\npackage shop;\nimport \"common.proto\";\nmessage PPay { int64 id = 1; common.Money price = 2; }\n"
	reg.registerWithRefs("common", common, "PROTOBUF")
	pid := reg.registerWithRefs("ppays-value", shop, "PROTOBUF", map[string]any{"name": "common.proto", "subject": "common", "version": 1})
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"shop.proto": shop, "common.proto": common}),
	})}
	files, err := c.Compile(ctx, "shop.proto")
	if err != nil {
		t.Fatal(err)
	}
	pp := files[0].Messages().ByName("PPay")
	mony := pp.Fields().ByName("price").Message()
	for _, v := range []struct {
		id  int64
		amt float64
		cur string
	}{{1, 3.5, "SEK"}, {2, 7, "DKK"}} {
		m := dynamicpb.NewMessage(pp)
		m.Set(pp.Fields().ByName("id"), protoreflect.ValueOfInt64(v.id))
		pm := dynamicpb.NewMessage(mony)
		pm.Set(mony.Fields().ByName("amount"), protoreflect.ValueOfFloat64(v.amt))
		pm.Set(mony.Fields().ByName("cur"), protoreflect.ValueOfString(v.cur))
		m.Set(pp.Fields().ByName("price"), protoreflect.ValueOfMessage(pm))
		data, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		val := append(binary.BigEndian.AppendUint32([]byte{0}, pid), append([]byte{0}, data...)...)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ppays", Value: val}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	s := StartServer(t, Options{})
	conn := s.ConnectSimple(t)
	kw := `connector = 'kafka', properties.bootstrap.server = '` + b.Addr + `'`
	ExecAll(t, conn,
		`CREATE SOURCE pays WITH (`+kw+`, topic = 'pays') FORMAT PLAIN ENCODE AVRO (schema.registry = '`+regURL+`')`,
		`CREATE MATERIALIZED VIEW pays_v AS SELECT id, price->>'cur' AS cur, (price->>'amount')::float8 AS amount FROM pays`,
		`CREATE SOURCE pays2 (id BIGINT, price STRUCT<amount DOUBLE, cur TEXT>) WITH (`+kw+`, topic = 'pays') FORMAT PLAIN ENCODE AVRO (schema.registry = '`+regURL+`')`,
		`CREATE MATERIALIZED VIEW pays2_v AS SELECT id, (price).cur AS cur, (price).amount AS amount FROM pays2`,
		`CREATE SOURCE ppays WITH (`+kw+`, topic = 'ppays') FORMAT PLAIN ENCODE PROTOBUF (message = 'shop.PPay', schema.registry = '`+regURL+`')`,
		`CREATE MATERIALIZED VIEW ppays_v AS SELECT id, price->>'cur' AS cur, (price->>'amount')::float8 AS amount FROM ppays`)
	waitForLines(t, conn, `SELECT id, cur, amount FROM pays_v ORDER BY id`, []string{"1 EUR 9.5", "2 NOK 0.25"})
	waitForLines(t, conn, `SELECT id, cur, amount FROM pays2_v ORDER BY id`, []string{"1 EUR 9.5", "2 NOK 0.25"})
	waitForLines(t, conn, `SELECT id, cur, amount FROM ppays_v ORDER BY id`, []string{"1 SEK 3.5", "2 DKK 7"})

	// A reference to a version the registry does not have.
	reg.registerWithRefs("broken-value", pay, "", map[string]any{"name": "shop.Money", "subject": "money", "version": 9})
	wantCode(t, conn, `CREATE SOURCE broken WITH (`+kw+`, topic = 'broken') FORMAT PLAIN ENCODE AVRO (schema.registry = '`+regURL+`')`, "08000")
}
