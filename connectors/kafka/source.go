package kafka

// The 'kafka' source connector: options, the factory and the reader the
// engine calls. The fetching goroutine is in source_fetch.go.

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"sluice/connectors/internal/msgfmt"
	"strconv"
	"strings"
	"time"

	kafkasasl "github.com/segmentio/kafka-go/sasl"

	"sluice/connectors/internal/chunkq"
	"sluice/connectors/internal/decode"
	"sluice/connectors/internal/schemareg"
	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// SourceFactory is the kafka source connector.
type SourceFactory struct{}

func init() { connector.RegisterSource("kafka", SourceFactory{}) }

// srcFormat is the FORMAT of a source.
type srcFormat uint8

const (
	srcPlain srcFormat = iota
	srcUpsert
	srcDebezium
)

// Offsets a partition may hold before the fetcher has asked the broker
// where it starts (Kafka's own ListOffsets conventions, plus one for
// scan.startup.mode = timestamp).
const (
	srcLatest    int64 = -1
	srcEarliest  int64 = -2
	srcTimestamp int64 = -3
)

const srcDefaultMaxBytes = 1 << 20

var srcKnownOptions = map[string]bool{
	"connector":                     true,
	"topic":                         true,
	"properties.bootstrap.server":   true,
	"properties.bootstrap.servers":  true,
	"scan.startup.mode":             true,
	"scan.startup.timestamp.millis": true,
	"scan.bounded":                  true,
	"isolation.level":               true,
	"on_error":                      true,
	"max.message.bytes":             true,
	"format":                        true,
	"encode":                        true,
	"schema.registry":               true, // ENCODE AVRO (schema.registry = '…')
	"schema.registry.username":      true,
	"schema.registry.password":      true,
	"schema.registry.ca":            true,
	"message":                       true, // ENCODE PROTOBUF (message = 'pkg.Msg', …)
	"key.message":                   true, // FORMAT UPSERT ENCODE PROTOBUF (key.message = 'pkg.Key'): Protobuf keys
}

// srcConfig is a parsed source configuration.
type srcConfig struct {
	policy        *connector.Policy // checks every broker dialled
	sec           *security         // TLS and SASL (security.go)
	registry      *schemareg.Client // ENCODE AVRO's and PROTOBUF's schemas
	protoMessage  string            // ENCODE PROTOBUF's message
	keyMessage    string            // FORMAT UPSERT ENCODE PROTOBUF's key.message ("": keys JSON or text)
	mech          kafkasasl.Mechanism
	name          string
	topic         string
	brokers       []string
	startup       int64 // srcEarliest, srcLatest or srcTimestamp
	startTS       int64 // scan.startup.timestamp.millis
	readCommitted bool
	// bounded (scan.bounded = 'latest'): the source ends at the offsets
	// the topic's partitions had when it first started.
	bounded  bool
	onError  msgfmt.OnError
	maxBytes int
	format   srcFormat
	enc      decode.Encoding
	cols     []types.Column
	key      []int
	skip     []bool // pseudo-columns, not in the payload
	keyCol   int    // _key, or -1
	partCol  int    // _partition, or -1
	offCol   int    // _offset, or -1
	tsCol    int    // _timestamp, or -1
}

func srcOptionError(key, format string, args ...any) error {
	return connector.OptionError("kafka", key, format, args...)
}

// srcParse checks a source configuration without connecting anywhere.
func srcParse(cfg connector.SourceConfig) (*srcConfig, error) {
	if len(cfg.Columns) == 0 {
		return nil, pgerror.New(pgcode.InvalidObjectDefinition, "a kafka source needs declared columns")
	}
	for k := range cfg.Options {
		if !srcKnownOptions[k] {
			return nil, pgerror.New(pgcode.InvalidParameterValue, "kafka option %s: unknown option", k).
				WithHint("kafka source options are topic, properties.bootstrap.server, scan.startup.mode, scan.startup.timestamp.millis, scan.bounded, isolation.level, on_error, max.message.bytes, properties.security.protocol, properties.sasl.* and properties.ssl.*")
		}
	}
	get := func(k string) string { return strings.TrimSpace(cfg.Options[k]) }
	c := &srcConfig{
		name: cfg.Name, cols: cfg.Columns, key: cfg.Key, maxBytes: srcDefaultMaxBytes,
		keyCol: -1, partCol: -1, offCol: -1, tsCol: -1, readCommitted: true, startup: srcEarliest,
	}
	if c.topic = get("topic"); c.topic == "" {
		return nil, srcOptionError("topic", "is required")
	}
	servers := get("properties.bootstrap.server")
	if servers == "" {
		servers = get("properties.bootstrap.servers")
	}
	for _, s := range strings.Split(servers, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(s); err != nil {
			return nil, srcOptionError("properties.bootstrap.server", "%q is not host:port", s)
		}
		c.brokers = append(c.brokers, s)
	}
	if len(c.brokers) == 0 {
		return nil, srcOptionError("properties.bootstrap.server", "is required")
	}
	for _, b := range c.brokers {
		if err := cfg.Policy.CheckAddr("kafka", b, 9092); err != nil {
			return nil, err
		}
	}
	c.policy = cfg.Policy
	var err error
	if c.sec, err = parseSecurity(cfg.Options); err != nil {
		return nil, err
	}
	if c.mech, err = c.sec.kafkaGo(); err != nil {
		return nil, srcOptionError("properties.sasl.mechanism", "%v", err)
	}
	switch m := strings.ToLower(get("scan.startup.mode")); m {
	case "", "earliest":
	case "latest":
		c.startup = srcLatest
	case "timestamp":
		c.startup = srcTimestamp
		v := get("scan.startup.timestamp.millis")
		if v == "" {
			return nil, srcOptionError("scan.startup.timestamp.millis", "is required with scan.startup.mode = 'timestamp'")
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, srcOptionError("scan.startup.timestamp.millis", "%q is not a non-negative integer", v)
		}
		c.startTS = n
	default:
		return nil, srcOptionError("scan.startup.mode", "%q is not 'earliest', 'latest' or 'timestamp'", m)
	}
	if c.startup != srcTimestamp && get("scan.startup.timestamp.millis") != "" {
		return nil, srcOptionError("scan.startup.timestamp.millis", "needs scan.startup.mode = 'timestamp'")
	}
	switch v := strings.ToLower(get("scan.bounded")); v {
	case "", "none":
	case "latest":
		c.bounded = true
	default:
		return nil, srcOptionError("scan.bounded", "%q is not 'none' or 'latest'", v)
	}
	switch v := strings.ToLower(get("isolation.level")); v {
	case "", "read_committed":
	case "read_uncommitted":
		c.readCommitted = false
	default:
		return nil, srcOptionError("isolation.level", "%q is not 'read_committed' or 'read_uncommitted'", v)
	}
	if c.onError, err = msgfmt.ParseOnError("kafka", get("on_error")); err != nil {
		return nil, err
	}
	if c.maxBytes, err = msgfmt.ParseMaxBytes("kafka", get("max.message.bytes"), c.maxBytes); err != nil {
		return nil, err
	}
	switch v := strings.ToUpper(get("format")); v {
	case "", "PLAIN":
	case "UPSERT":
		c.format = srcUpsert
		if len(cfg.Key) == 0 {
			return nil, pgerror.New(pgcode.InvalidObjectDefinition, "FORMAT UPSERT needs a PRIMARY KEY").
				WithHint("declare the columns the record key holds as PRIMARY KEY")
		}
	case "DEBEZIUM":
		c.format = srcDebezium
	default:
		return nil, pgerror.New(pgcode.FeatureNotSupported, "kafka source does not support FORMAT %s", v).
			WithHint("use FORMAT PLAIN, UPSERT or DEBEZIUM")
	}
	enc, ok := decode.ParseEncoding(get("encode"))
	if !ok {
		return nil, pgerror.New(pgcode.FeatureNotSupported, "kafka source does not support ENCODE %s", get("encode")).
			WithHint("use ENCODE JSON, CSV, AVRO or PROTOBUF")
	}
	c.enc = enc
	if reg := get("schema.registry"); enc.NeedsRegistry() {
		if reg == "" {
			return nil, srcOptionError("schema.registry", "is required with ENCODE %s (e.g. 'http://127.0.0.1:8081')", enc)
		}
		if c.registry, err = schemareg.FromOptions(get, cfg.Policy); err != nil {
			return nil, err
		}
	} else {
		for _, k := range schemareg.Options {
			if get(k) != "" {
				return nil, srcOptionError(k, "needs ENCODE AVRO or PROTOBUF")
			}
		}
	}
	if enc == decode.PROTOBUF {
		if c.protoMessage = get("message"); c.protoMessage == "" {
			return nil, srcOptionError("message", "is required with ENCODE PROTOBUF: the full name of the records' message (e.g. 'shop.Order')")
		}
		// UPSERT reads the value as the message and the key as JSON or
		// text (srcDecoder.upsertKey); DEBEZIUM reads message as the
		// envelope (before, after: the row's message; op).
		if c.keyMessage = get("key.message"); c.keyMessage != "" && c.format != srcUpsert {
			return nil, srcOptionError("key.message", "needs FORMAT UPSERT (the record key holds the key columns)")
		}
	} else if get("message") != "" {
		return nil, srcOptionError("message", "needs ENCODE PROTOBUF")
	} else if get("key.message") != "" {
		return nil, srcOptionError("key.message", "needs ENCODE PROTOBUF")
	}
	if c.format == srcDebezium && enc != decode.JSON && enc != decode.AVRO && enc != decode.PROTOBUF {
		return nil, pgerror.New(pgcode.FeatureNotSupported, "FORMAT DEBEZIUM needs ENCODE JSON, AVRO or PROTOBUF")
	}
	c.skip = make([]bool, len(c.cols))
	payload := 0
	for i, col := range c.cols {
		var dst *int
		var ok bool
		switch col.Name {
		case "_key":
			dst, ok = &c.keyCol, col.Type.Fam == types.Text || col.Type.Fam == types.Varchar || col.Type.Fam == types.Bytea
		case "_partition":
			dst, ok = &c.partCol, col.Type.Fam == types.Int2 || col.Type.Fam == types.Int4 || col.Type.Fam == types.Int8
		case "_offset":
			dst, ok = &c.offCol, col.Type.Fam == types.Int8
		case "_timestamp":
			dst, ok = &c.tsCol, col.Type.Fam == types.Timestamp || col.Type.Fam == types.TimestampTZ
		default:
			payload++
			continue
		}
		if !ok {
			return nil, pgerror.New(pgcode.DatatypeMismatch, "kafka pseudo-column %s cannot have type %s", col.Name, col.Type).
				WithHint("_key is TEXT or BYTEA, _partition an integer, _offset BIGINT, _timestamp TIMESTAMP or TIMESTAMPTZ")
		}
		if *dst >= 0 {
			return nil, pgerror.New(pgcode.DuplicateColumn, "kafka pseudo-column %s is declared twice", col.Name)
		}
		*dst = i
		c.skip[i] = true
	}
	if payload == 0 {
		return nil, pgerror.New(pgcode.InvalidObjectDefinition, "a kafka source needs a column read from the message besides its pseudo-columns")
	}
	for _, k := range c.key {
		if k < 0 || k >= len(c.cols) {
			return nil, pgerror.New(pgcode.Internal, "primary key column %d out of range", k)
		}
	}
	return c, nil
}

// Validate implements connector.SourceFactory.
func (SourceFactory) Validate(cfg connector.SourceConfig) ([]types.Column, error) {
	if len(cfg.Columns) == 0 && strings.EqualFold(strings.TrimSpace(cfg.Options["encode"]), "PROTOBUF") {
		if strings.TrimSpace(cfg.Options["message"]) == "" {
			return nil, srcOptionError("message", "is required with ENCODE PROTOBUF: the full name of the records' message (e.g. 'shop.Order')")
		}
		// The columns are the fields of message in the topic's latest
		// value schema.
		reg, err := schemareg.FromOptions(func(k string) string { return strings.TrimSpace(cfg.Options[k]) }, cfg.Policy)
		if err != nil {
			return nil, err
		}
		md, err := reg.ProtoMessage(strings.TrimSpace(cfg.Options["topic"])+"-value", strings.TrimSpace(cfg.Options["message"]))
		if err != nil {
			return nil, err
		}
		if strings.EqualFold(strings.TrimSpace(cfg.Options["format"]), "DEBEZIUM") {
			// The columns of a Debezium envelope: its after message's.
			f := md.Fields().ByName("after")
			if f == nil || f.Message() == nil {
				return nil, pgerror.New(pgcode.InvalidParameterValue, "message %s has no after message field: not a Debezium envelope", md.FullName())
			}
			md = f.Message()
		}
		if cfg.Columns, err = schemareg.ProtoColumns(md); err != nil {
			return nil, err
		}
	}
	if len(cfg.Columns) == 0 && strings.EqualFold(strings.TrimSpace(cfg.Options["encode"]), "AVRO") {
		// The columns are the fields of the topic's latest value schema
		// (subject <topic>-value, the registry's TopicNameStrategy).
		reg, err := schemareg.FromOptions(func(k string) string { return strings.TrimSpace(cfg.Options[k]) }, cfg.Policy)
		if err != nil {
			return nil, err
		}
		s, _, err := reg.Latest(strings.TrimSpace(cfg.Options["topic"]) + "-value")
		if err != nil {
			return nil, err
		}
		if strings.EqualFold(strings.TrimSpace(cfg.Options["format"]), "DEBEZIUM") {
			// The envelope's "after" record is the row.
			if s, err = schemareg.DebeziumRow(s); err != nil {
				return nil, err
			}
		}
		if cfg.Columns, err = schemareg.Columns(s); err != nil {
			return nil, err
		}
	}
	if _, err := srcParse(cfg); err != nil {
		return nil, err
	}
	return cfg.Columns, nil
}

// srcOpenProbe bounds how long Open waits for a broker answer before it
// leaves the fetcher to keep trying (a broker that is down is transient;
// only a broker's answer that the topic is missing fails Open).
const srcOpenProbe = time.Second

// Open implements connector.SourceFactory. When a broker answers, it
// checks that the topic exists and fixes each partition's start offset
// per scan.startup.mode; when none answers within srcOpenProbe the
// fetcher does that once one does.
func (SourceFactory) Open(ctx context.Context, cfg connector.SourceConfig) (connector.Source, error) {
	c, err := srcParse(cfg)
	if err != nil {
		return nil, err
	}
	r := newSrcReader(c)
	probe, cancel := context.WithTimeout(ctx, srcOpenProbe)
	defer cancel()
	for {
		parts, err := r.client.partitions(probe)
		if err == nil {
			offs, err := r.client.resolve(probe, c, srcStartOffsets(c, parts))
			if err == nil {
				r.next = offs
			} else {
				r.next = srcStartOffsets(c, parts)
			}
			if c.bounded {
				// The end of a bounded scan: the partitions' ends now
				// (the last stable offsets under read_committed). A
				// restart keeps the bound saved in the position (Seek).
				if r.bound, err = r.client.listOffsets(probe, parts, srcLatest, c.readCommitted); err != nil {
					r.Close()
					return nil, pgerror.Wrap(err, pgcode.SQLClientUnableToEstablishSQLConnection, "kafka source %s: reading the end offsets of scan.bounded", c.name)
				}
			}
			break
		}
		if errors.Is(err, errSrcNoTopic) {
			r.Close()
			return nil, pgerror.New(pgcode.UndefinedObject, "kafka topic %q does not exist", c.topic).
				WithHint("create the topic on %s first", strings.Join(c.brokers, ","))
		}
		select {
		case <-probe.Done():
			if ctx.Err() != nil {
				r.Close()
				return nil, ctx.Err()
			}
			if c.bounded {
				// The bound must be the topic's end when the scan starts,
				// not whenever the broker comes back.
				r.Close()
				return nil, pgerror.New(pgcode.SQLClientUnableToEstablishSQLConnection, "kafka source %s: cannot reach %s to read the end offsets of scan.bounded", c.name, strings.Join(c.brokers, ",")).
					WithHint("a bounded scan fixes its end when it starts: start it when the broker is up")
			}
			return r, nil // the broker is unreachable for now
		case <-time.After(200 * time.Millisecond):
		}
	}
	return r, nil
}

// srcStartOffsets returns the start of every partition in parts per the
// startup mode (unresolved: srcEarliest, srcLatest or srcTimestamp).
func srcStartOffsets(c *srcConfig, parts []int32) map[int32]int64 {
	m := make(map[int32]int64, len(parts))
	for _, p := range parts {
		m[p] = c.startup
	}
	return m
}

// srcReader is the source the engine reads. Read, Position, Seek,
// TakeDeadLetters and Close are called from one goroutine; the fetcher
// goroutine it owns hands it decoded chunks over a bounded channel.
type srcReader struct {
	cfg    *srcConfig
	client *srcClient

	// next is the offset after the rows returned so far, per partition:
	// what Position saves. It may hold an unresolved start (srcEarliest…)
	// for a partition not read from yet.
	next map[int32]int64

	fetch   *srcFetcher // nil until the first Read
	chunks  chan *srcChunk
	cur     *srcChunk
	item    int   // next item of cur
	fatal   error // a fetcher error that ends the source
	pending error // a bad record met after rows were added to the batch
	dead    chunkq.DeadLetters
	take    chunkq.Taker[*srcChunk]
	// hwm is each partition's latest high watermark seen, bytes the record
	// bytes taken from the fetcher (Meter).
	hwm   map[int32]int64
	bytes int64
	// bound is where a bounded scan ends, per partition (nil: unbounded);
	// a partition not in it (created later) is not read.
	bound map[int32]int64
}

var (
	_ connector.Seekable         = (*srcReader)(nil)
	_ connector.DeadLetterSource = (*srcReader)(nil)
	_ connector.Metered          = (*srcReader)(nil)
)

// Meter implements connector.Metered: per partition, the offsets between
// the position and the high watermark of the partition's last fetch.
func (r *srcReader) Meter() connector.SourceMeter {
	m := connector.SourceMeter{Bytes: r.bytes}
	parts := make([]int32, 0, len(r.hwm))
	for p := range r.hwm {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	for _, p := range parts {
		if next, ok := r.next[p]; ok && next >= 0 {
			m.Lag = append(m.Lag, connector.PartitionLag{Partition: strconv.Itoa(int(p)), Behind: max(0, r.hwm[p]-next)})
		}
	}
	return m
}

func newSrcReader(c *srcConfig) *srcReader {
	return &srcReader{cfg: c, client: newSrcClient(c), next: map[int32]int64{}, hwm: map[int32]int64{}}
}

// Read implements connector.Source. It takes only what the fetcher has
// ready, waiting at most chunkq.Wait when nothing is. The rows of one
// record are never split across reads (Position counts whole records): a
// Debezium update gives two rows even when max is 1.
func (r *srcReader) Read(ctx context.Context, b *types.Batch, max int) (int, error) {
	if r.fatal != nil {
		return 0, r.fatal
	}
	if r.pending != nil {
		err := r.pending
		r.pending = nil
		return 0, err
	}
	if r.bound != nil && r.reachedBound() {
		return 0, io.EOF
	}
	if r.fetch == nil {
		r.startFetcher()
	}
	n := 0
	waited := false
	for n < max {
		if r.cur == nil {
			mayWait := n == 0 && !waited
			waited = waited || mayWait
			c, ok, err := r.take.Next(ctx, r.chunks, mayWait)
			if err != nil {
				return 0, err
			}
			if !ok {
				return n, nil
			}
			r.cur, r.item = c, 0
			r.bytes += c.bytes
			if c.hwm > 0 {
				r.hwm[c.part] = c.hwm
			}
		}
		c := r.cur
		if c.err != nil {
			r.fatal = c.err
			r.cur = nil
			if n > 0 {
				return n, nil
			}
			return 0, r.fatal
		}
		for r.item < len(c.items) && n < max {
			it := &c.items[r.item]
			if r.bound != nil && it.off >= r.bound[c.part] {
				// Past the end of a bounded scan: the rest of the chunk
				// is not read.
				r.item = len(c.items)
				break
			}
			if it.bad != nil {
				if r.cfg.onError == msgfmt.Fail {
					err := connector.BadRecord(r.cfg.name, r.cfg.topic, c.part, it.off, it.bad.Error)
					if n > 0 {
						r.pending = err
						return n, nil
					}
					return 0, err
				}
				r.dead.Add(*it.bad)
				r.next[c.part] = it.off + 1
				r.item++
				continue
			}
			if n > 0 && n+int(it.nrows) > max {
				return n, nil // a record's rows are never split across reads
			}
			for j := it.first; j < it.first+int32(it.nrows); j++ {
				b.Add(c.rows[j], c.diffs[j])
			}
			n += int(it.nrows)
			r.next[c.part] = it.off + 1
			r.item++
		}
		if r.item == len(c.items) {
			end := c.end // past control records and aborted transactions
			if r.bound != nil {
				end = min(end, r.bound[c.part])
			}
			if end > r.next[c.part] {
				r.next[c.part] = end
			}
			r.cur = nil
		}
	}
	return n, nil
}

// reachedBound reports whether a bounded scan has read every partition up
// to its bound.
func (r *srcReader) reachedBound() bool {
	for p, end := range r.bound {
		if next, ok := r.next[p]; end > 0 && (!ok || next < end) {
			return false
		}
	}
	return true
}

// TakeDeadLetters implements connector.DeadLetterSource.
func (r *srcReader) TakeDeadLetters(buf []connector.DeadLetter) []connector.DeadLetter {
	return r.dead.Take(buf)
}

// srcPosVersion is the first byte of an encoded position.
// Position versions: 1 holds the next offsets; 2 (a bounded scan) also
// the bound.
const (
	srcPosVersion        = 1
	srcPosVersionBounded = 2
)

// Position implements connector.Seekable: a version byte, the number of
// partitions, then (partition, next offset) pairs as varints, by
// partition; a bounded scan's position (version 2) then holds its bound
// the same way.
func (r *srcReader) Position() []byte {
	buf := make([]byte, 0, 4+(len(r.next)+len(r.bound))*6)
	if r.bound == nil {
		buf = append(buf, srcPosVersion)
		return srcAppendOffsets(buf, r.next)
	}
	buf = append(buf, srcPosVersionBounded)
	buf = srcAppendOffsets(buf, r.next)
	return srcAppendOffsets(buf, r.bound)
}

func srcAppendOffsets(buf []byte, m map[int32]int64) []byte {
	parts := make([]int32, 0, len(m))
	for p := range m {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	buf = binary.AppendUvarint(buf, uint64(len(parts)))
	for _, p := range parts {
		buf = binary.AppendVarint(buf, int64(p))
		buf = binary.AppendVarint(buf, m[p])
	}
	return buf
}

// srcDecodePosition decodes a Position: the next offsets, and the bound
// of a bounded scan (nil for version 1).
func srcDecodePosition(pos []byte) (next, bound map[int32]int64, err error) {
	bad := pgerror.New(pgcode.DataCorrupted, "bad kafka source position")
	if len(pos) < 2 || (pos[0] != srcPosVersion && pos[0] != srcPosVersionBounded) {
		return nil, nil, bad
	}
	v := pos[0]
	next, rest, ok := srcDecodeOffsets(pos[1:])
	if !ok {
		return nil, nil, bad
	}
	if v == srcPosVersionBounded {
		if bound, rest, ok = srcDecodeOffsets(rest); !ok {
			return nil, nil, bad
		}
		if bound == nil {
			bound = map[int32]int64{}
		}
	}
	if len(rest) != 0 {
		return nil, nil, bad
	}
	return next, bound, nil
}

// srcDecodeOffsets decodes what srcAppendOffsets wrote, returning the rest.
func srcDecodeOffsets(pos []byte) (map[int32]int64, []byte, bool) {
	n, k := binary.Uvarint(pos)
	if k <= 0 || n > 1<<20 {
		return nil, nil, false
	}
	pos = pos[k:]
	m := make(map[int32]int64, n)
	for i := uint64(0); i < n; i++ {
		p, k := binary.Varint(pos)
		if k <= 0 || p < 0 || p > 1<<31-1 {
			return nil, nil, false
		}
		pos = pos[k:]
		off, k := binary.Varint(pos)
		if k <= 0 || off < srcTimestamp {
			return nil, nil, false
		}
		pos = pos[k:]
		m[int32(p)] = off
	}
	return m, pos, true
}

// Seek implements connector.Seekable. A partition missing from pos (but
// known to the source) appeared after pos was taken: it starts at its
// earliest offset. A pos without partitions leaves the startup offsets.
func (r *srcReader) Seek(pos []byte) error {
	m, bound, err := srcDecodePosition(pos)
	if err != nil {
		return err
	}
	if r.cfg.bounded && bound != nil {
		r.bound = bound // the bound fixed when the scan first started
	}
	r.stopFetcher()
	r.fatal, r.pending = nil, nil
	if len(m) == 0 {
		return nil
	}
	for p := range r.next {
		if _, ok := m[p]; !ok {
			m[p] = srcEarliest
		}
	}
	r.next = m
	return nil
}

// startFetcher starts the fetching goroutine from r.next.
func (r *srcReader) startFetcher() {
	r.chunks = make(chan *srcChunk, srcChunkBuffer)
	r.fetch = startSrcFetcher(r.cfg, r.client, r.next, r.chunks)
}

// stopFetcher stops the fetching goroutine and drops what it fetched.
func (r *srcReader) stopFetcher() {
	if r.fetch == nil {
		return
	}
	r.fetch.stop()
	r.fetch = nil
	r.chunks = nil
	r.cur = nil
}

// Close implements connector.Source.
func (r *srcReader) Close() error {
	r.stopFetcher()
	r.client.close()
	return nil
}
