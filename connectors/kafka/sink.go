package kafka

// The 'kafka' sink connector.
//
// Records. FORMAT PLAIN writes every appended row as one record whose
// value is the row (ENCODE JSON: encode.JSON, ENCODE CSV: encode.CSV) and
// whose key is encode.KeyJSON of primary_key, or nil without one; it needs
// an append-only input. FORMAT UPSERT keys every record by primary_key
// (required); the value is the new row, or nil (a tombstone) when the row
// was deleted. FORMAT DEBEZIUM writes the encode.Debezium envelope
// (before, after, op, source.epoch), keyed like PLAIN.
//
// ENCODE AVRO (schema.registry = '…') writes the key and value in the
// Confluent wire format: the value schema is a record of the sink's
// columns (schemareg.RecordSchema), registered under <topic>-value, and
// for FORMAT UPSERT the key schema a record of the primary_key columns,
// registered under <topic>-key; both are registered on the first Write
// (the registry answers the same id for a schema it has already). ENCODE
// PROTOBUF (FORMAT PLAIN only) likewise registers a .proto of the
// columns (schemareg.ProtoWriter; message names its message, default
// <topic>_value, package sluice) and writes the Confluent protobuf framing.
//
// Delivery. With delivery = EXACTLY_ONCE (the default) every epoch is one
// Kafka transaction of franz-go's transactional producer (txn.go) that
// also writes a progress record {"sink":ID,"epoch":N} keyed by the
// transactional.id to progress.topic; on recovery LastEpoch reads the
// highest committed one back with read_committed isolation and Write
// skips epochs up to it, so an epoch is visible to read_committed readers
// exactly once. With AT_LEAST_ONCE or AT_MOST_ONCE a plain kafka-go
// writer is used (sink_writer.go): a crash between the write and the
// checkpoint repeats the epoch's records, which a compacted topic keyed
// by primary_key (FORMAT UPSERT) absorbs, so only PLAIN and DEBEZIUM drop
// to at least once.
//
// Topics. The sink creates its topic if it is missing (broker default
// partitions and replication, cleanup.policy=compact for FORMAT UPSERT)
// and the progress topic (one partition, compacted); it does not rely on
// broker auto-creation.

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"sluice/connectors/internal/encode"
	"sluice/connectors/internal/schemareg"
	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// SinkFactory is the kafka sink connector.
type SinkFactory struct{}

func init() { connector.RegisterSink("kafka", SinkFactory{}) }

// Formats and encodings of the kafka sink.
const (
	sinkFormatPlain    = "PLAIN"
	sinkFormatUpsert   = "UPSERT"
	sinkFormatDebezium = "DEBEZIUM"
	sinkEncodeJSON     = "JSON"
	sinkEncodeCSV      = "CSV"
	sinkEncodeAvro     = "AVRO"
	sinkEncodeProtobuf = "PROTOBUF"
)

// sinkDefaultTxnTimeout is transaction.timeout.ms when not given. It also
// bounds one transactional Write (a transaction cannot outlive it anyway).
const sinkDefaultTxnTimeout = 60 * time.Second

// sinkKnownOptions are the options a kafka sink accepts: its own and
// those every sink shares.
var sinkKnownOptions = map[string]bool{
	"connector": true, "topic": true, "properties.bootstrap.server": true,
	"primary_key": true, "delivery": true, "write_mode": true,
	"transactional.id": true, "transaction.timeout.ms": true, "progress.topic": true,
	"type": true, "force_append_only": true,
}

// sinkOptions is a parsed kafka sink configuration.
type sinkOptions struct {
	// policy checks every broker address the client dials, those the
	// cluster's metadata names included (--connector-allow-hosts).
	policy        *connector.Policy
	name          string
	id            uint64
	brokers       []string
	topic         string
	progressTopic string
	txnID         string
	txnTimeout    time.Duration
	delivery      connector.Guarantee
	format        string // sinkFormat…
	encode        string // sinkEncode…
	writeMode     string // connector.Mode…
	cols          []types.Column
	key           []int
	sec           *security // TLS and SASL (security.go)
	avro          *sinkAvro // ENCODE AVRO's schemas
}

// sinkAvro is the registry and the schemas of an ENCODE AVRO sink; the
// ids are set by the first register.
type sinkAvro struct {
	reg                    *schemareg.Client
	proto                  *schemareg.ProtoWriter // ENCODE PROTOBUF (valueSchema unused then)
	valueSchema, keySchema string                 // keySchema "" unless FORMAT UPSERT
	valueID, keyID         uint32
}

// register registers the sink's schemas unless done already.
func (a *sinkAvro) register(topic string) error {
	if a.valueID != 0 {
		return nil
	}
	if a.keySchema != "" {
		id, err := a.reg.Register(topic+"-key", a.keySchema)
		if err != nil {
			return err
		}
		a.keyID = id
	}
	var id uint32
	var err error
	if a.proto != nil {
		id, err = a.reg.RegisterProto(topic+"-value", a.proto.Schema)
	} else {
		id, err = a.reg.Register(topic+"-value", a.valueSchema)
	}
	if err != nil {
		return err
	}
	a.valueID = id
	return nil
}

func sinkOptionError(key, format string, args ...any) error {
	return connector.OptionError("kafka", key, format, args...)
}

// sinkParse checks a configuration without connecting anywhere.
func sinkParse(cfg connector.SinkConfig) (*sinkOptions, error) {
	for k := range cfg.Options {
		if !sinkKnownOptions[k] {
			return nil, sinkOptionError(k, "unknown option")
		}
	}
	o := &sinkOptions{name: cfg.Name, id: cfg.ID, cols: cfg.Columns, key: cfg.Key, txnTimeout: sinkDefaultTxnTimeout}
	o.topic = strings.TrimSpace(cfg.Options["topic"])
	if o.topic == "" {
		return nil, sinkOptionError("topic", "is required")
	}
	for _, b := range strings.Split(cfg.Options["properties.bootstrap.server"], ",") {
		if b = strings.TrimSpace(b); b != "" {
			o.brokers = append(o.brokers, b)
		}
	}
	if len(o.brokers) == 0 {
		return nil, sinkOptionError("properties.bootstrap.server", "is required (e.g. '127.0.0.1:9092')")
	}
	for _, b := range o.brokers {
		if err := cfg.Policy.CheckAddr("kafka", b, 9092); err != nil {
			return nil, err
		}
	}
	o.policy = cfg.Policy
	var err error
	if o.sec, err = parseSecurity(cfg.Options); err != nil {
		return nil, err
	}
	if o.delivery, err = connector.ParseGuarantee(cfg.Options["delivery"]); err != nil {
		return nil, err
	}
	o.txnID = "sluice-sink-" + strconv.FormatUint(cfg.ID, 10)
	if v, ok := cfg.Options["transactional.id"]; ok {
		if o.txnID = strings.TrimSpace(v); o.txnID == "" {
			return nil, sinkOptionError("transactional.id", "must not be empty")
		}
	}
	if v, ok := cfg.Options["transaction.timeout.ms"]; ok {
		ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil || ms <= 0 {
			return nil, sinkOptionError("transaction.timeout.ms", "%q is not a positive number of milliseconds", v)
		}
		o.txnTimeout = time.Duration(ms) * time.Millisecond
	}
	o.progressTopic = o.topic + ".sluice-progress"
	if v, ok := cfg.Options["progress.topic"]; ok {
		if o.progressTopic = strings.TrimSpace(v); o.progressTopic == "" || o.progressTopic == o.topic {
			return nil, sinkOptionError("progress.topic", "must name a topic other than the sink's topic")
		}
	}

	switch o.format = strings.ToUpper(strings.TrimSpace(cfg.Format)); o.format {
	case "":
		o.format = sinkFormatPlain
	case sinkFormatPlain, sinkFormatUpsert, sinkFormatDebezium:
	default:
		return nil, pgerror.New(pgcode.FeatureNotSupported, "FORMAT %s is not supported by the kafka sink", cfg.Format).
			WithHint("use FORMAT PLAIN, UPSERT or DEBEZIUM")
	}
	switch o.encode = strings.ToUpper(strings.TrimSpace(cfg.Encode)); o.encode {
	case "":
		o.encode = sinkEncodeJSON
	case sinkEncodeJSON:
	case sinkEncodeCSV:
		if o.format != sinkFormatPlain {
			return nil, pgerror.New(pgcode.FeatureNotSupported, "ENCODE CSV is only supported with FORMAT PLAIN").
				WithHint("use ENCODE JSON with FORMAT %s", o.format)
		}
	case sinkEncodeAvro:
	case sinkEncodeProtobuf:

	default:
		return nil, pgerror.New(pgcode.FeatureNotSupported, "ENCODE %s is not supported by the kafka sink", cfg.Encode).
			WithHint("use ENCODE JSON, CSV, AVRO or PROTOBUF")
	}
	// The options after ENCODE …: only ENCODE AVRO's registry has any.
	registry := o.encode == sinkEncodeAvro || o.encode == sinkEncodeProtobuf
	for k := range cfg.FormatOptions {
		if !registry || !slices.Contains(schemareg.Options, k) && (k != "message" || o.encode != sinkEncodeProtobuf) {
			return nil, sinkOptionError(k, "unknown option of ENCODE %s", o.encode)
		}
	}
	if registry {
		get := func(k string) string { return strings.TrimSpace(cfg.FormatOptions[k]) }
		if get("schema.registry") == "" {
			return nil, sinkOptionError("schema.registry", "is required with ENCODE AVRO (e.g. ENCODE AVRO (schema.registry = 'http://127.0.0.1:8081'))")
		}
		reg, err := schemareg.FromOptions(get, cfg.Policy)
		if err != nil {
			return nil, err
		}
		o.avro = &sinkAvro{reg: reg}
		if o.encode == sinkEncodeProtobuf {
			name := get("message")
			if name == "" {
				name = o.topic + "_value"
			}
			if o.format == sinkFormatDebezium {
				o.avro.proto, err = schemareg.NewProtoEnvelopeWriter(name, o.cols)
			} else {
				o.avro.proto, err = schemareg.NewProtoWriter(name, o.cols)
			}
			if err != nil {
				return nil, err
			}
		} else if o.format == sinkFormatDebezium {
			o.avro.valueSchema = schemareg.EnvelopeSchema(o.topic+"_envelope", o.cols)
		} else {
			o.avro.valueSchema = schemareg.RecordSchema(o.topic+"_value", o.cols, nil)
		}
		if (o.format == sinkFormatUpsert || o.format == sinkFormatDebezium) && len(cfg.Key) > 0 && o.avro.proto == nil {
			// ENCODE AVRO: the key an Avro record of the key columns
			// (ENCODE PROTOBUF keys are JSON, as ENCODE JSON's).
			o.avro.keySchema = schemareg.RecordSchema(o.topic+"_key", o.cols, cfg.Key)
		}
	}

	switch o.format {
	case sinkFormatPlain:
		if !cfg.AppendOnly {
			return nil, pgerror.New(pgcode.FeatureNotSupported,
				"the input of sink %s has updates or deletes, which FORMAT PLAIN cannot express: use FORMAT UPSERT with primary_key, or FORMAT DEBEZIUM", cfg.Name).
				WithHint("FORMAT PLAIN only appends rows; FORMAT UPSERT writes the latest row per primary_key and a tombstone for a delete")
		}
		o.writeMode = connector.ModeAppend
	case sinkFormatUpsert:
		if len(cfg.Key) == 0 {
			return nil, sinkOptionError("primary_key", "is required with FORMAT UPSERT: every record is keyed by it")
		}
		o.writeMode = connector.ModeUpsert
	case sinkFormatDebezium:
		o.writeMode = connector.ModeAppend
	}
	if m := strings.ToLower(strings.TrimSpace(cfg.WriteMode)); m != "" && m != o.writeMode {
		// Under EXACTLY_ONCE every format is written by one transaction
		// per epoch, so asking for that by name is fine too.
		if m != connector.ModeTransactional || o.delivery != connector.ExactlyOnce {
			return nil, sinkOptionError("write_mode", "%q does not fit FORMAT %s with delivery %s: the kafka sink writes it in %s mode",
				cfg.WriteMode, o.format, o.delivery, o.writeMode)
		}
		o.writeMode = connector.ModeTransactional
	}
	return o, nil
}

// Validate implements connector.SinkFactory.
func (SinkFactory) Validate(cfg connector.SinkConfig) (connector.SinkPlan, error) {
	o, err := sinkParse(cfg)
	if err != nil {
		return connector.SinkPlan{}, err
	}
	plan := connector.SinkPlan{WriteMode: o.writeMode, Guarantee: connector.ExactlyOnce}
	if o.delivery != connector.ExactlyOnce && o.format != sinkFormatUpsert {
		// Without a transaction a retried epoch appends its records again.
		// An upsert topic absorbs that: the repeat writes the same value
		// for the same key, so the keyed view stays exactly once.
		plan.Guarantee = connector.AtLeastOnce
		plan.Why = "non-transactional Kafka writes repeat after a crash"
	}
	return plan, nil
}

// Open implements connector.SinkFactory. It does not connect: the first
// LastEpoch or Write does.
func (SinkFactory) Open(_ context.Context, cfg connector.SinkConfig) (connector.Sink, error) {
	o, err := sinkParse(cfg)
	if err != nil {
		return nil, err
	}
	if o.delivery == connector.ExactlyOnce {
		return newSinkTxn(o), nil
	}
	return newSinkWriter(o), nil
}

// sinkEncoder turns changes into record keys and values.
type sinkEncoder struct {
	cols   []types.Column
	key    []int
	format string
	csv    bool
	topic  string
	avro   *sinkAvro // ENCODE AVRO
}

func newSinkEncoder(o *sinkOptions) sinkEncoder {
	return sinkEncoder{cols: o.cols, key: o.key, format: o.format, csv: o.encode == sinkEncodeCSV, topic: o.topic, avro: o.avro}
}

// record appends the key and value of one change to buf and returns buf
// and both as capped sub-slices of it (so that they stay valid when buf
// grows later). A nil key means an unkeyed record, a nil value a tombstone.
func (e *sinkEncoder) record(buf []byte, epoch uint64, c connector.Change) (_, key, value []byte, err error) {
	row := c.After
	if row == nil {
		row = c.Before
	}
	if row == nil {
		return buf, nil, nil, pgerror.New(pgcode.Internal, "kafka sink: change with neither a before nor an after row")
	}
	if e.avro != nil {
		return e.recordAvro(buf, epoch, c, row)
	}
	if len(e.key) > 0 {
		start := len(buf)
		buf = encode.KeyJSON(buf, e.cols, e.key, row)
		key = buf[start:len(buf):len(buf)]
	}
	start := len(buf)
	switch e.format {
	case sinkFormatPlain:
		if c.After == nil || c.Before != nil {
			return buf, nil, nil, pgerror.New(pgcode.Internal, "kafka sink: FORMAT PLAIN got a retraction from an input planned as append-only")
		}
		if e.csv {
			buf = encode.CSV(buf, e.cols, c.After)
		} else {
			buf = encode.JSON(buf, e.cols, c.After)
		}
	case sinkFormatUpsert:
		if c.After == nil {
			return buf, key, nil, nil
		}
		buf = encode.JSON(buf, e.cols, c.After)
	case sinkFormatDebezium:
		buf = encode.Debezium(buf, e.cols, c.Before, c.After, epoch)
	}
	return buf, key, buf[start:len(buf):len(buf)], nil
}

// recordAvro is record for ENCODE AVRO: FORMAT PLAIN records are unkeyed
// unless primary_key is given (then the key is JSON, as with ENCODE
// JSON); FORMAT UPSERT keys are Avro records of the key columns.
func (e *sinkEncoder) recordAvro(buf []byte, epoch uint64, c connector.Change, row types.Row) (_, key, value []byte, err error) {
	if err := e.avro.register(e.topic); err != nil {
		return buf, nil, nil, err
	}
	if len(e.key) > 0 {
		start := len(buf)
		if e.avro.keyID != 0 {
			buf = schemareg.AppendFrame(buf, e.avro.keyID)
			if buf, err = schemareg.AppendRecord(buf, e.cols, e.key, row); err != nil {
				return buf, nil, nil, err
			}
		} else {
			buf = encode.KeyJSON(buf, e.cols, e.key, row)
		}
		key = buf[start:len(buf):len(buf)]
	}
	if e.format == sinkFormatPlain && (c.After == nil || c.Before != nil) {
		return buf, nil, nil, pgerror.New(pgcode.Internal, "kafka sink: FORMAT PLAIN got a retraction from an input planned as append-only")
	}
	if e.format == sinkFormatDebezium {
		start := len(buf)
		if e.avro.proto != nil {
			buf, err = e.avro.proto.AppendEnvelope(buf, e.avro.valueID, c.Before, c.After, epoch)
		} else {
			buf = schemareg.AppendFrame(buf, e.avro.valueID)
			buf, err = schemareg.AppendEnvelope(buf, e.cols, c.Before, c.After, epoch)
		}
		if err != nil {
			return buf, nil, nil, err
		}
		return buf, key, buf[start:len(buf):len(buf)], nil
	}
	if c.After == nil { // FORMAT UPSERT: a tombstone
		return buf, key, nil, nil
	}
	start := len(buf)
	if e.avro.proto != nil {
		if buf, err = e.avro.proto.AppendMessage(buf, e.avro.valueID, c.After); err != nil {
			return buf, nil, nil, err
		}
	} else {
		buf = schemareg.AppendFrame(buf, e.avro.valueID)
		if buf, err = schemareg.AppendRecord(buf, e.cols, nil, c.After); err != nil {
			return buf, nil, nil, err
		}
	}
	return buf, key, buf[start:len(buf):len(buf)], nil
}

// sinkWrap tags a Kafka error of sink o: a Write cancelled by its caller
// is 57014, the rest a connection failure the runtime retries.
func sinkWrap(o *sinkOptions, err error, format string, args ...any) error {
	msg := "kafka sink " + o.name + ": " + format
	code := pgcode.ConnectionException
	if errors.Is(err, context.Canceled) && !errors.Is(err, sinkErrStalled) {
		code = pgcode.QueryCanceled
	}
	return pgerror.Wrap(err, code, msg, args...)
}

// dial connects to a broker the policy allows.
func (o *sinkOptions) dial(ctx context.Context, network, host string) (net.Conn, error) {
	return policyDialer(o.policy, o.sec, 10*time.Second /* kgo's default */)(ctx, network, host)
}
