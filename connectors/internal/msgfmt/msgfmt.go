// Package msgfmt holds what the record-reading connectors share: the
// on_error and max.message.bytes options of every source (kafka, file,
// socket, nats, mqtt), FORMAT … ENCODE … of the broker sources, and
// the encoding of a sink's changes into one message each (FORMAT PLAIN
// ENCODE JSON | CSV for an append-only input, FORMAT DEBEZIUM ENCODE JSON
// for any input).
//
// It imports exec/connector, the sql leaf packages and
// connectors/internal/{decode,encode}.
package msgfmt

import (
	"strconv"
	"strings"

	"sluice/connectors/internal/decode"
	"sluice/connectors/internal/encode"
	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// OnError is what a source does with a message it cannot decode.
type OnError uint8

// The on_error values.
const (
	Fail OnError = iota
	Skip
	DeadLetter
)

// ParseOnError reads the on_error option ("" is fail).
func ParseOnError(conn, v string) (OnError, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "fail":
		return Fail, nil
	case "skip":
		return Skip, nil
	case "dead_letter":
		return DeadLetter, nil
	}
	return 0, connector.OptionError(conn, "on_error", "%q is not 'fail', 'skip' or 'dead_letter'", v)
}

// ParseMaxBytes reads the max.message.bytes option ("" is def): a size
// between 1 byte and 1 GiB.
func ParseMaxBytes(conn, v string, def int) (int, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 || n > 1<<30 {
		return 0, connector.OptionError(conn, "max.message.bytes", "%q is not a size between 1 and 1073741824", v)
	}
	return n, nil
}

// SourceEncoding checks a source's FORMAT (only PLAIN) and returns its
// ENCODE.
func SourceEncoding(conn, format, enc string) (decode.Encoding, error) {
	if f := strings.ToUpper(strings.TrimSpace(format)); f != "" && f != "PLAIN" {
		return 0, pgerror.New(pgcode.FeatureNotSupported, "%s source does not support FORMAT %s", conn, f).
			WithHint("a %s source reads FORMAT PLAIN records, one per message", conn)
	}
	e, ok := decode.ParseEncoding(enc)
	if !ok || e.NeedsRegistry() {
		return 0, pgerror.New(pgcode.FeatureNotSupported, "%s source does not support ENCODE %s", conn, enc).
			WithHint("use ENCODE JSON or CSV")
	}
	return e, nil
}

// Encoder turns a sink's changes into messages.
type Encoder struct {
	cols     []types.Column
	csv      bool
	debezium bool
}

// ParseSink checks a sink's FORMAT … ENCODE … and write_mode and returns
// the encoder and the write mode.
func ParseSink(conn string, cfg connector.SinkConfig) (*Encoder, string, error) {
	e := &Encoder{cols: cfg.Columns}
	switch v := strings.ToUpper(cfg.Encode); v {
	case "", "JSON":
	case "CSV":
		e.csv = true
	default:
		return nil, "", pgerror.New(pgcode.FeatureNotSupported, "a %s sink does not support ENCODE %s", conn, cfg.Encode).
			WithHint("use ENCODE JSON or ENCODE CSV")
	}
	switch f := strings.ToUpper(cfg.Format); f {
	case "", "PLAIN":
		if !cfg.AppendOnly {
			return nil, "", pgerror.New(pgcode.FeatureNotSupported,
				"a %s sink with FORMAT PLAIN needs an append-only input, and this one updates or deletes rows", conn).
				WithHint("use FORMAT DEBEZIUM to publish every change")
		}
	case "DEBEZIUM":
		if e.csv {
			return nil, "", pgerror.New(pgcode.FeatureNotSupported, "a %s sink does not support FORMAT DEBEZIUM ENCODE CSV", conn).
				WithHint("use ENCODE JSON")
		}
		e.debezium = true
	default:
		return nil, "", pgerror.New(pgcode.FeatureNotSupported, "a %s sink does not support FORMAT %s", conn, cfg.Format).
			WithHint("use FORMAT PLAIN or DEBEZIUM")
	}
	if m := strings.ToLower(cfg.WriteMode); m != "" && m != connector.ModeAppend {
		return nil, "", connector.OptionError(conn, "write_mode", "%q is not supported: a %s sink appends messages", cfg.WriteMode, conn)
	}
	return e, connector.ModeAppend, nil
}

// Encode appends the message of one change to buf.
func (e *Encoder) Encode(buf []byte, epoch uint64, c connector.Change) []byte {
	if e.debezium {
		return encode.Debezium(buf, e.cols, c.Before, c.After, epoch)
	}
	if e.csv {
		return encode.CSV(buf, e.cols, c.After)
	}
	return encode.JSON(buf, e.cols, c.After)
}
