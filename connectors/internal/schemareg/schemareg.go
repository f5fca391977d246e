// Package schemareg reads and registers Avro schemas in a
// Confluent-compatible schema registry (the REST protocol: GET
// /schemas/ids/{id}, GET /subjects/{subject}/versions/latest, POST
// /subjects/{subject}/versions), with HTTP basic authentication and a
// private CA if asked, and frames and unframes the Confluent wire format
// (a zero byte, the schema id as 4 big-endian bytes, then the Avro
// binary). Schemas are cached by id: an id names one schema forever, so a
// cached one is never fetched again. avroenc.go derives a sink's record
// schema from its columns and writes rows in Avro binary.
package schemareg

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/reflect/protoreflect"

	"sluice/connectors/internal/decode"
	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Client is a registry client; safe for concurrent use.
type Client struct {
	base       string // without userinfo: it is shown in messages
	user, pass string // HTTP basic authentication ("" user: none)
	http       *http.Client

	mu        sync.Mutex
	byID      map[uint32]avro.Schema
	fetching  map[uint32]*fetch // Avro schemas being fetched: callers wait for the one GET
	protoByID map[uint32]protoreflect.FileDescriptor
	avroC     avro.API
}

// Options are the options of a registry client, as a connector reads
// them: schema.registry, schema.registry.username,
// schema.registry.password and schema.registry.ca.
var Options = []string{"schema.registry", "schema.registry.username", "schema.registry.password", "schema.registry.ca"}

// FromOptions returns a client of the registry the options name (get
// returns an option's value, "" when absent); the URL's userinfo is the
// credentials when schema.registry.username is not given.
func FromOptions(get func(string) string, policy *connector.Policy) (*Client, error) {
	c, err := New(get("schema.registry"), policy)
	if err != nil {
		return nil, err
	}
	if u := get("schema.registry.username"); u != "" {
		c.user, c.pass = u, get("schema.registry.password")
	} else if get("schema.registry.password") != "" {
		return nil, connector.OptionError("kafka", "schema.registry.password", "needs schema.registry.username")
	}
	if f := strings.TrimSpace(get("schema.registry.ca")); f != "" {
		if !strings.HasPrefix(c.base, "https:") {
			return nil, connector.OptionError("kafka", "schema.registry.ca", "needs an https schema.registry URL")
		}
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, connector.OptionError("kafka", "schema.registry.ca", "%v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, connector.OptionError("kafka", "schema.registry.ca", "%s holds no PEM certificate", f)
		}
		c.http.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return c, nil
}

// New returns a client of the registry at rawURL (http or https; a
// user:password in it is sent as HTTP basic authentication); policy
// checks the address it dials (--connector-allow-hosts).
func New(rawURL string, policy *connector.Policy) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, connector.OptionError("kafka", "schema.registry", "%q is not an http(s) URL", redactURL(rawURL))
	}
	var user, pass string
	if u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
		u.User = nil
	}
	hostPort := u.Host
	if u.Port() == "" {
		hostPort = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	if err := policy.CheckAddr("schema registry", hostPort, 8081); err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if err := policy.CheckAddr("schema registry", addr, 8081); err != nil {
			return nil, err
		}
		return dialer.DialContext(ctx, network, addr)
	}}
	avroC := avro.Config{}.Freeze()
	// A union branch hamba/avro has no Go type for decodes as a map
	// {"long.local-timestamp-micros": t}; these are times like the
	// timestamp-micros hamba knows.
	for _, l := range []avro.LogicalType{avro.LocalTimestampMillis, avro.LocalTimestampMicros} {
		avroC.Register(string(avro.Long)+"."+string(l), time.Time{})
	}
	return &Client{
		base:      strings.TrimRight(u.String(), "/"),
		user:      user,
		pass:      pass,
		http:      &http.Client{Transport: tr, Timeout: 10 * time.Second},
		byID:      map[uint32]avro.Schema{},
		protoByID: map[uint32]protoreflect.FileDescriptor{},
		avroC:     avroC,
	}, nil
}

// redactURL hides the password of a URL's userinfo.
func redactURL(raw string) string {
	if u, err := url.Parse(strings.TrimSpace(raw)); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			return u.String()
		}
	}
	return raw
}

// get fetches path and decodes its JSON answer into v.
func (c *Client) get(path string, v any) error {
	return c.do(http.MethodGet, path, nil, v)
}

// do sends a request (body JSON-encoded when not nil) and decodes the JSON
// answer into v. A 401 or 403 is 28000 (wrong credentials: retrying does
// not help), any other failure 08000.
func (c *Client) do(method, path string, body, v any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return pgerror.Wrap(err, pgcode.Internal, "schema registry request")
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return pgerror.Wrap(err, pgcode.ConnectionException, "schema registry %s", c.base)
	}
	req.Header.Set("Accept", "application/vnd.schemaregistry.v1+json, application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	}
	if c.user != "" {
		req.SetBasicAuth(c.user, c.pass)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return pgerror.Wrap(err, pgcode.ConnectionException, "schema registry %s", c.base)
	}
	defer res.Body.Close()
	ans, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return pgerror.Wrap(err, pgcode.ConnectionException, "schema registry %s", c.base)
	}
	if res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden {
		return pgerror.New(pgcode.InvalidAuthorizationSpecification, "schema registry %s%s: %s: %s", c.base, path, res.Status, strings.TrimSpace(string(ans))).
			WithHint("check schema.registry.username and schema.registry.password")
	}
	switch res.StatusCode {
	case http.StatusOK:
	case http.StatusConflict:
		// The subject's compatibility level refuses the schema: retrying
		// helps only once someone changes the subject or its level.
		return pgerror.New(pgcode.DatatypeMismatch, "schema registry %s%s refused the schema as incompatible with the subject's earlier versions: %s: %s",
			c.base, path, res.Status, strings.TrimSpace(string(ans))).
			WithHint("change the subject's compatibility level (PUT /config/<subject>) or delete the subject, or write to another topic; the sink retries until the registry accepts it")
	case http.StatusUnprocessableEntity:
		return pgerror.New(pgcode.InvalidParameterValue, "schema registry %s%s refused the schema as invalid: %s: %s", c.base, path, res.Status, strings.TrimSpace(string(ans)))
	default:
		return pgerror.New(pgcode.ConnectionException, "schema registry %s%s: %s: %s", c.base, path, res.Status, strings.TrimSpace(string(ans)))
	}
	if err := json.Unmarshal(ans, v); err != nil {
		return pgerror.New(pgcode.ConnectionException, "schema registry %s%s: bad answer: %v", c.base, path, err)
	}
	return nil
}

// Reference is a schema reference (Confluent): the schema registered as
// version Version of Subject, known to the referring schema as Name (an
// Avro named type's full name, a Protobuf import path).
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// registered is a schema as the registry answers it.
type registered struct {
	ID         uint32      `json:"id"`
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType"`
	References []Reference `json:"references"`
}

// maxRefs bounds the schemas one schema's references may bring in.
const maxRefs = 256

// refTexts returns the texts of the schemas refs name, transitively, each
// once, every schema after those it references (the order a parser that
// resolves names as it goes needs): name → text in order.
func (c *Client) refTexts(refs []Reference) ([]Reference, map[string]string, error) {
	texts := map[string]string{}
	var order []Reference
	seen := map[string]bool{}
	var visit func(refs []Reference, depth int) error
	visit = func(refs []Reference, depth int) error {
		for _, r := range refs {
			key := r.Subject + "\x00" + strconv.Itoa(r.Version)
			if seen[key] {
				continue
			}
			seen[key] = true
			if depth > 32 || len(seen) > maxRefs {
				return pgerror.New(pgcode.InvalidParameterValue, "schema references nest too deep or are too many (%d)", len(seen))
			}
			var ans registered
			v := "latest"
			if r.Version > 0 {
				v = strconv.Itoa(r.Version)
			}
			if err := c.get("/subjects/"+url.PathEscape(r.Subject)+"/versions/"+v, &ans); err != nil {
				return err
			}
			if err := visit(ans.References, depth+1); err != nil {
				return err
			}
			texts[r.Name] = ans.Schema
			order = append(order, r)
		}
		return nil
	}
	err := visit(refs, 0)
	return order, texts, err
}

// parseWithRefs parses a registered Avro schema after the schemas it
// references (their named types in one cache, so the schema can name
// them).
func (c *Client) parseWithRefs(ans registered) (avro.Schema, error) {
	if ans.SchemaType != "" && !strings.EqualFold(ans.SchemaType, "AVRO") {
		return nil, pgerror.Unsupported("schema type %s", ans.SchemaType).WithHint("only Avro schemas are read")
	}
	cache := &avro.SchemaCache{}
	if len(ans.References) > 0 {
		order, texts, err := c.refTexts(ans.References)
		if err != nil {
			return nil, err
		}
		for _, r := range order {
			if _, err := avro.ParseWithCache(texts[r.Name], "", cache); err != nil {
				return nil, pgerror.New(pgcode.InvalidParameterValue, "bad Avro schema %s (a reference, subject %s version %d): %v", r.Name, r.Subject, r.Version, err)
			}
		}
	}
	s, err := avro.ParseWithCache(ans.Schema, "", cache)
	if err != nil {
		return nil, pgerror.New(pgcode.InvalidParameterValue, "bad Avro schema: %v", err)
	}
	return s, nil
}

// parse parses a registered schema (Avro only: a schemaType other than
// AVRO is refused).
func parse(schemaType, text string) (avro.Schema, error) {
	if schemaType != "" && !strings.EqualFold(schemaType, "AVRO") {
		return nil, pgerror.Unsupported("schema type %s", schemaType).WithHint("only Avro schemas are read")
	}
	s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		return nil, pgerror.New(pgcode.InvalidParameterValue, "bad Avro schema: %v", err)
	}
	return s, nil
}

// fetch is one GET of a schema by id that concurrent callers (a source's
// parallel decoders meeting a new id at once) share.
type fetch struct {
	done chan struct{}
	s    avro.Schema
	err  error
}

// Schema returns the schema registered under id, fetching it once however
// many callers ask for it at the same time.
func (c *Client) Schema(id uint32) (avro.Schema, error) {
	c.mu.Lock()
	if s := c.byID[id]; s != nil {
		c.mu.Unlock()
		return s, nil
	}
	if f := c.fetching[id]; f != nil {
		c.mu.Unlock()
		<-f.done
		return f.s, f.err
	}
	f := &fetch{done: make(chan struct{})}
	if c.fetching == nil {
		c.fetching = map[uint32]*fetch{}
	}
	c.fetching[id] = f
	c.mu.Unlock()
	var ans registered
	f.err = c.get(fmt.Sprintf("/schemas/ids/%d", id), &ans)
	if f.err == nil {
		f.s, f.err = c.parseWithRefs(ans)
	}
	c.mu.Lock()
	if f.err == nil {
		c.byID[id] = f.s
	}
	delete(c.fetching, id)
	c.mu.Unlock()
	close(f.done)
	return f.s, f.err
}

// subjectPath escapes a subject for a URL path.
func subjectPath(subject string) string { return url.PathEscape(subject) }

// Latest returns the latest schema of subject and its id.
func (c *Client) Latest(subject string) (avro.Schema, uint32, error) {
	var ans registered
	if err := c.get("/subjects/"+url.PathEscape(subject)+"/versions/latest", &ans); err != nil {
		return nil, 0, err
	}
	s, err := c.parseWithRefs(ans)
	if err != nil {
		return nil, 0, err
	}
	c.mu.Lock()
	c.byID[ans.ID] = s
	c.mu.Unlock()
	return s, ans.ID, nil
}

// Register registers schema (Avro JSON text) under subject, or finds it
// registered already (the registry answers the same id for the same
// schema), and returns its id.
func (c *Client) Register(subject, schema string) (uint32, error) {
	s, err := parse("AVRO", schema)
	if err != nil {
		return 0, err
	}
	var ans struct {
		ID uint32 `json:"id"`
	}
	if err := c.do(http.MethodPost, "/subjects/"+url.PathEscape(subject)+"/versions", map[string]string{"schema": schema}, &ans); err != nil {
		return 0, err
	}
	if ans.ID == 0 {
		return 0, pgerror.New(pgcode.ConnectionException, "schema registry %s: registering under %s returned no id", c.base, subject)
	}
	c.mu.Lock()
	c.byID[ans.ID] = s
	c.mu.Unlock()
	return ans.ID, nil
}

// Decode reads a Confluent-framed Avro message: its schema (fetched by id
// on first sight) and its value as hamba/avro decodes into any (a record
// is a map[string]any).
func (c *Client) Decode(msg []byte) (avro.Schema, any, error) {
	if len(msg) < 5 || msg[0] != 0 {
		return nil, nil, fmt.Errorf("not in the Confluent wire format (a zero byte and a 4-byte schema id)")
	}
	s, err := c.Schema(binary.BigEndian.Uint32(msg[1:5]))
	if err != nil {
		return nil, nil, err
	}
	var v any
	if err := c.avroC.Unmarshal(s, msg[5:], &v); err != nil {
		return nil, nil, fmt.Errorf("bad Avro data for schema %d: %v", binary.BigEndian.Uint32(msg[1:5]), err)
	}
	return s, unwrap(s, v), nil
}

// unwrap replaces, throughout v (decoded with schema s), the value of a
// union branch hamba/avro has no Go type for, which it decodes as
// {"<branch name>": value} (a record inside ["null", Record], as in the
// Debezium envelope), by the value itself.
func unwrap(s avro.Schema, v any) any {
	if r, ok := s.(*avro.RefSchema); ok {
		s = r.Schema()
	}
	switch s := s.(type) {
	case *avro.UnionSchema:
		several := 0
		for _, t := range s.Types() {
			if t.Type() != avro.Null {
				several++
			}
		}
		if m, ok := v.(map[string]any); ok && len(m) == 1 {
			for _, t := range s.Types() {
				if x, ok := m[branchName(t)]; ok {
					if several > 1 {
						// Which branch matters: a STRUCT field per branch.
						return map[string]any{branchName(t): unwrap(t, x)}
					}
					return unwrap(t, x)
				}
			}
		}
		if v != nil {
			for _, t := range s.Types() {
				if t.Type() != avro.Null {
					return unwrap(t, v)
				}
			}
		}
	case *avro.RecordSchema:
		if m, ok := v.(map[string]any); ok {
			for _, f := range s.Fields() {
				if x, ok := m[f.Name()]; ok {
					m[f.Name()] = unwrap(f.Type(), x)
				}
			}
		}
	case *avro.ArraySchema:
		if a, ok := v.([]any); ok {
			for i := range a {
				a[i] = unwrap(s.Items(), a[i])
			}
		}
	case *avro.MapSchema:
		if m, ok := v.(map[string]any); ok {
			for k, x := range m {
				m[k] = unwrap(s.Values(), x)
			}
		}
	}
	return v
}

// branchName is the name hamba/avro gives a union branch (its full name,
// or its type with the logical type after a dot).
func branchName(s avro.Schema) string {
	if r, ok := s.(*avro.RefSchema); ok {
		s = r.Schema()
	}
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	name := string(s.Type())
	if l, ok := s.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
		name += "." + string(l.Logical().Type())
	}
	return name
}

// DebeziumRow returns the row schema of a Debezium envelope schema: the
// record of its "after" field (a union with null).
func DebeziumRow(s avro.Schema) (avro.Schema, error) {
	rec, ok := s.(*avro.RecordSchema)
	if ok {
		for _, f := range rec.Fields() {
			if f.Name() != "after" {
				continue
			}
			t := f.Type()
			if u, ok := t.(*avro.UnionSchema); ok {
				for _, b := range u.Types() {
					if b.Type() != avro.Null {
						t = b
					}
				}
			}
			if r, ok := t.(*avro.RefSchema); ok {
				t = r.Schema()
			}
			if t.Type() == avro.Record {
				return t, nil
			}
		}
	}
	return nil, pgerror.Unsupported("an Avro schema without an \"after\" record as a Debezium envelope").
		WithHint("FORMAT DEBEZIUM ENCODE AVRO reads records with fields before, after (the row, a union with null) and op")
}

// Frame returns data framed with schema id (the Confluent wire format).
func Frame(id uint32, data []byte) []byte {
	out := make([]byte, 5, 5+len(data))
	binary.BigEndian.PutUint32(out[1:], id)
	return append(out, data...)
}

// AppendFrame appends the Confluent wire format's header for schema id.
func AppendFrame(buf []byte, id uint32) []byte {
	return binary.BigEndian.AppendUint32(append(buf, 0), id)
}

// Columns derives a source's columns from a record schema: each field a
// column of the matching type, a union with null nullable.
func Columns(s avro.Schema) ([]types.Column, error) {
	rec, ok := s.(*avro.RecordSchema)
	if !ok {
		return nil, pgerror.Unsupported("an Avro %s schema as a row", s.Type()).WithHint("the value schema must be a record")
	}
	var cols []types.Column
	for _, f := range rec.Fields() {
		t, err := columnType(f.Type())
		if err != nil {
			return nil, pgerror.Unsupported("Avro field %s: %v", f.Name(), err).WithHint("declare the source's columns to read it as another type")
		}
		cols = append(cols, types.Column{Name: f.Name(), Type: t})
	}
	return cols, nil
}

func columnType(s avro.Schema) (types.T, error) {
	if u, ok := s.(*avro.UnionSchema); ok {
		var non []avro.Schema
		for _, t := range u.Types() {
			if t.Type() != avro.Null {
				non = append(non, t)
			}
		}
		if len(non) > 1 {
			// A union of several types: a STRUCT with a field per branch,
			// the one the value took set and the others NULL (as
			// RisingWave reads such unions).
			fields := make([]types.Column, len(non))
			for i, b := range non {
				ft, err := columnType(b)
				if err != nil {
					return types.T{}, err
				}
				fields[i] = types.Column{Name: decode.UnionFieldName(branchName(b)), Type: ft}
			}
			t := types.StructType(fields)
			if t.Prec == 0 {
				return types.T{}, fmt.Errorf("too many distinct STRUCT shapes")
			}
			return t, nil
		}
		if len(non) == 0 {
			return types.T{}, fmt.Errorf("a union of null alone is not supported")
		}
		s = non[0]
	}
	if l, ok := s.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
		switch l.Logical().Type() {
		case avro.TimestampMillis, avro.TimestampMicros:
			return types.TTimestampTZ, nil
		case avro.LocalTimestampMillis, avro.LocalTimestampMicros:
			return types.TTimestamp, nil
		case avro.Date:
			return types.TDate, nil
		case avro.Decimal:
			d := l.Logical().(*avro.DecimalLogicalSchema)
			return types.T{Fam: types.Numeric, Prec: int16(d.Precision()), Scale: int16(d.Scale())}, nil
		case avro.UUID:
			return types.TText, nil
		}
	}
	switch s.Type() {
	case avro.Boolean:
		return types.TBool, nil
	case avro.Int:
		return types.TInt4, nil
	case avro.Long:
		return types.TInt8, nil
	case avro.Float:
		return types.TFloat4, nil
	case avro.Double:
		return types.TFloat8, nil
	case avro.String, avro.Enum:
		return types.TText, nil
	case avro.Bytes, avro.Fixed:
		return types.TBytea, nil
	case avro.Record, avro.Map, avro.Array:
		return types.TJSONB, nil
	}
	return types.T{}, fmt.Errorf("type %s is not supported", s.Type())
}
