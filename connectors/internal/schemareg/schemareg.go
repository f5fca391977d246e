// Package schemareg reads Avro schemas from a Confluent-compatible schema
// registry (the REST protocol: GET /schemas/ids/{id},
// GET /subjects/{subject}/versions/latest) and frames and unframes the
// Confluent wire format (a zero byte, the schema id as 4 big-endian bytes,
// then the Avro binary). Schemas are cached by id: an id names one schema
// forever, so a cached one is never fetched again.
package schemareg

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hamba/avro/v2"

	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Client is a registry client; safe for concurrent use.
type Client struct {
	base string
	http *http.Client

	mu    sync.Mutex
	byID  map[uint32]avro.Schema
	avroC avro.API
}

// New returns a client of the registry at rawURL (http or https); policy
// checks the address it dials (--connector-allow-hosts).
func New(rawURL string, policy *connector.Policy) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, connector.OptionError("kafka", "schema.registry", "%q is not an http(s) URL", rawURL)
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
	return &Client{
		base:  strings.TrimRight(u.String(), "/"),
		http:  &http.Client{Transport: tr, Timeout: 10 * time.Second},
		byID:  map[uint32]avro.Schema{},
		avroC: avro.Config{}.Freeze(),
	}, nil
}

// get fetches path and decodes its JSON answer into v.
func (c *Client) get(path string, v any) error {
	res, err := c.http.Get(c.base + path)
	if err != nil {
		return pgerror.Wrap(err, pgcode.ConnectionException, "schema registry %s", c.base)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return pgerror.Wrap(err, pgcode.ConnectionException, "schema registry %s", c.base)
	}
	if res.StatusCode != http.StatusOK {
		return pgerror.New(pgcode.ConnectionException, "schema registry %s%s: %s: %s", c.base, path, res.Status, strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return pgerror.New(pgcode.ConnectionException, "schema registry %s%s: bad answer: %v", c.base, path, err)
	}
	return nil
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

// Schema returns the schema registered under id.
func (c *Client) Schema(id uint32) (avro.Schema, error) {
	c.mu.Lock()
	s := c.byID[id]
	c.mu.Unlock()
	if s != nil {
		return s, nil
	}
	var ans struct {
		Schema     string `json:"schema"`
		SchemaType string `json:"schemaType"`
	}
	if err := c.get(fmt.Sprintf("/schemas/ids/%d", id), &ans); err != nil {
		return nil, err
	}
	s, err := parse(ans.SchemaType, ans.Schema)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.byID[id] = s
	c.mu.Unlock()
	return s, nil
}

// Latest returns the latest schema of subject and its id.
func (c *Client) Latest(subject string) (avro.Schema, uint32, error) {
	var ans struct {
		ID         uint32 `json:"id"`
		Schema     string `json:"schema"`
		SchemaType string `json:"schemaType"`
	}
	if err := c.get("/subjects/"+url.PathEscape(subject)+"/versions/latest", &ans); err != nil {
		return nil, 0, err
	}
	s, err := parse(ans.SchemaType, ans.Schema)
	if err != nil {
		return nil, 0, err
	}
	c.mu.Lock()
	c.byID[ans.ID] = s
	c.mu.Unlock()
	return s, ans.ID, nil
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
	return s, v, nil
}

// Frame returns data framed with schema id (the Confluent wire format).
func Frame(id uint32, data []byte) []byte {
	out := make([]byte, 5, 5+len(data))
	binary.BigEndian.PutUint32(out[1:], id)
	return append(out, data...)
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
		if len(non) != 1 {
			return types.T{}, fmt.Errorf("a union of several types is not supported")
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
