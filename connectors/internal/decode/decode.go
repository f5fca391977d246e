package decode

import (
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"
	"unsafe"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Encoding is the syntax of a message.
type Encoding uint8

// The encodings a Decoder reads.
const (
	JSON Encoding = iota
	CSV
	// AVRO is Avro records in the Confluent wire format (avro.go); the
	// decoder needs an AvroSource (SetAvro).
	AVRO
	// PROTOBUF is Protobuf messages in the Confluent wire format; the
	// decoder needs a RecordSource (SetRecords).
	PROTOBUF
)

// NeedsRegistry reports whether e reads its schemas from a schema
// registry (AVRO, PROTOBUF): only the kafka source has one.
func (e Encoding) NeedsRegistry() bool { return e == AVRO || e == PROTOBUF }

func (e Encoding) String() string {
	switch e {
	case CSV:
		return "CSV"
	case AVRO:
		return "AVRO"
	case PROTOBUF:
		return "PROTOBUF"
	}
	return "JSON"
}

// ParseEncoding reads an ENCODE name (case-insensitive; "" is JSON).
func ParseEncoding(s string) (Encoding, bool) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "", "JSON":
		return JSON, true
	case "CSV":
		return CSV, true
	case "AVRO":
		return AVRO, true
	case "PROTOBUF":
		return PROTOBUF, true
	}
	return 0, false
}

// maxDepth bounds the nesting of JSON values, so that a hostile message
// cannot exhaust the stack.
const maxDepth = 512

// Decoder decodes messages into rows of a fixed set of columns. It keeps
// scratch buffers between calls, so it is not safe for concurrent use.
type Decoder struct {
	cols  []types.Column
	skip  []bool   // columns the caller fills itself (never decoded)
	names []string // column names, for matching keys
	ascii []bool   // name is ASCII (fast case folding)
	enc   Encoding
	avro  AvroSource   // AVRO's schemas
	recs  RecordSource // PROTOBUF's messages
	ncsv  int          // number of CSV fields: the columns not skipped

	// next is the column after the last one matched: JSON objects usually
	// list their keys in the declared order, so the search starts there.
	next int
	// keyAt remembers, by position in an object, the last key seen there
	// and the column it named (-1: none): the records of one producer
	// list the same keys in the same order, so a key, even one no column
	// takes, is mostly one comparison.
	keyAt []keyMemo

	b []byte // the message being scanned
	i int    // read position in b

	kbuf []byte // unescaped key
	vbuf []byte // unescaped string value
	jbuf []byte // compacted JSONB value

	// Text values are gathered in arena and turned into one string per
	// message (finish), not one allocation per value.
	arena   []byte
	pending []pendingText
}

// pendingText is a text value waiting for its message's string: a datum
// that still holds the placeholder with I = its index + 1 gets
// arena[off:off+n].
type pendingText struct {
	dst    *types.Datum
	off, n int
}

// reset prepares for a new message.
func (d *Decoder) reset() {
	d.arena = d.arena[:0]
	d.pending = d.pending[:0]
}

// deferText sets *dst to a placeholder for the text s, copied to the
// arena; finish replaces it with the string.
func (d *Decoder) deferText(dst *types.Datum, s []byte) {
	d.pending = append(d.pending, pendingText{dst: dst, off: len(d.arena), n: len(s)})
	d.arena = append(d.arena, s...)
	*dst = types.Datum{K: types.KString, I: int64(len(d.pending))}
}

// deferString is deferText for a string.
func (d *Decoder) deferString(dst *types.Datum, s string) {
	d.pending = append(d.pending, pendingText{dst: dst, off: len(d.arena), n: len(s)})
	d.arena = append(d.arena, s...)
	*dst = types.Datum{K: types.KString, I: int64(len(d.pending))}
}

// finish gives the placeholders still in place their strings, all cut
// from one allocation.
func (d *Decoder) finish() {
	if len(d.pending) == 0 {
		return
	}
	s := string(d.arena)
	for i, p := range d.pending {
		if p.dst != nil && p.dst.K == types.KString && p.dst.I == int64(i+1) {
			*p.dst = types.NewString(s[p.off : p.off+p.n])
		}
	}
	clear(d.pending) // drop the pointers into the caller's rows
	d.pending = d.pending[:0]
}

// New returns a decoder of enc messages into rows of cols. skip, when not
// nil, marks the columns the decoder must leave alone: they are neither
// looked up in the message nor counted among the CSV fields (a source fills
// them itself, as Kafka's _offset).
func New(cols []types.Column, enc Encoding, skip []bool) *Decoder {
	d := &Decoder{cols: cols, enc: enc, skip: make([]bool, len(cols))}
	copy(d.skip, skip)
	for i, c := range cols {
		d.names = append(d.names, c.Name)
		d.ascii = append(d.ascii, isASCII(c.Name))
		if !d.skip[i] {
			d.ncsv++
		}
	}
	return d
}

// SetRecords gives a PROTOBUF decoder the reader of its messages.
func (d *Decoder) SetRecords(r RecordSource) { d.recs = r }

// SetAvro gives an AVRO decoder the source of its schemas.
func (d *Decoder) SetAvro(a AvroSource) { d.avro = a }

// Columns returns the columns the decoder fills.
func (d *Decoder) Columns() []types.Column { return d.cols }

// Decode decodes msg into row, which has one Datum per column: every
// column not skipped is set (NULL when the message lacks it), skipped
// columns are untouched. On error row holds partial values.
func (d *Decoder) Decode(msg []byte, row types.Row) error {
	if len(row) < len(d.cols) {
		return fmt.Errorf("row has %d values for %d columns", len(row), len(d.cols))
	}
	d.reset()
	defer d.finish()
	switch d.enc {
	case CSV:
		return d.decodeCSV(msg, row)
	case AVRO:
		return d.decodeAvro(msg, row)
	case PROTOBUF:
		return d.decodeRecord(msg, row)
	}
	d.start(msg)
	d.ws()
	if d.i >= len(d.b) {
		return errEmpty
	}
	if d.b[d.i] != '{' {
		return d.syntax(fmt.Sprintf("expected an object, found %s", d.found()))
	}
	if err := d.object(row); err != nil {
		return err
	}
	return d.end()
}

var errEmpty = fmt.Errorf("empty message")

// DecodeDebezium decodes a Debezium change envelope. It fills before and
// after with the images present and reports which ones were. Creates and
// snapshot reads ("c", "r") have only after, deletes ("d") only before and
// updates ("u") both; an envelope without the image its op needs (an
// update from a table without REPLICA IDENTITY FULL) is an error.
func (d *Decoder) DecodeDebezium(msg []byte, before, after types.Row) (hasBefore, hasAfter bool, err error) {
	var env envelope
	switch d.enc {
	case AVRO:
		d.reset()
		defer d.finish()
		if env, err = d.decodeAvroDebezium(msg, before, after); err != nil {
			return false, false, err
		}
	case JSON:
		d.reset()
		defer d.finish()
		d.start(msg)
		d.ws()
		if d.i >= len(d.b) {
			return false, false, errEmpty
		}
		if d.b[d.i] != '{' {
			return false, false, d.syntax(fmt.Sprintf("expected an object, found %s", d.found()))
		}
		if err := d.envelope(&env, before, after, 0); err != nil {
			return false, false, err
		}
		if err := d.end(); err != nil {
			return false, false, err
		}
	case PROTOBUF:
		es, ok := d.recs.(EnvelopeSource)
		if !ok {
			return false, false, fmt.Errorf("ENCODE PROTOBUF needs a schema registry")
		}
		if len(msg) == 0 {
			return false, false, errEmpty
		}
		d.reset()
		defer d.finish()
		b, a, op, err := es.Envelope(msg)
		if err != nil {
			return false, false, err
		}
		for _, img := range []struct {
			rec map[string]any
			row types.Row
			has *bool
		}{{b, before, &env.before}, {a, after, &env.after}} {
			if img.rec == nil {
				continue
			}
			if err := d.fillAvro(img.rec, img.row); err != nil {
				return false, false, err
			}
			*img.has = true
		}
		if op != "" {
			env.hasOp, env.op, env.opText = true, op[0], op
			if len(op) != 1 {
				env.op = 0
			}
		}
	default:
		return false, false, fmt.Errorf("the Debezium envelope needs JSON, Avro or Protobuf")
	}
	op := env.op
	if !env.hasOp {
		switch {
		case env.before && env.after:
			op = 'u'
		case env.after:
			op = 'c'
		case env.before:
			op = 'd'
		default:
			return false, false, fmt.Errorf("Debezium envelope has neither \"before\" nor \"after\"")
		}
	}
	switch op {
	case 'c', 'r':
		if !env.after {
			return false, false, fmt.Errorf("Debezium op %q without \"after\"", string(op))
		}
		return false, true, nil
	case 'd':
		if !env.before {
			return false, false, fmt.Errorf("Debezium op \"d\" without \"before\"")
		}
		return true, false, nil
	case 'u':
		if !env.before {
			return false, false, fmt.Errorf("Debezium op \"u\" without \"before\" (the upstream table needs REPLICA IDENTITY FULL)")
		}
		if !env.after {
			return false, false, fmt.Errorf("Debezium op \"u\" without \"after\"")
		}
		return true, true, nil
	}
	return false, false, fmt.Errorf("unsupported Debezium op %q", env.opText)
}

// KeyText decodes a raw (non-JSON) message key into the single column col
// of row: the key's text in the column type's input syntax (the raw bytes
// for BYTEA). A key that is a JSON string literal is unquoted first.
func (d *Decoder) KeyText(key []byte, row types.Row, col int) error {
	if d.cols[col].Type.Fam == types.Bytea {
		row[col] = types.NewBytes(key)
		return nil
	}
	if !utf8.Valid(key) {
		return fmt.Errorf("key: invalid UTF-8")
	}
	d.reset()
	defer d.finish()
	if len(key) >= 2 && key[0] == '"' && key[len(key)-1] == '"' {
		d.start(key)
		if s, err := d.str(&d.vbuf); err == nil && d.i == len(key) {
			return d.fromString(col, s, key, &row[col])
		}
	}
	return d.text(col, key, false, &row[col])
}

// start resets the scanner to msg.
func (d *Decoder) start(msg []byte) {
	d.b = msg
	d.i = 0
}

// end checks that only whitespace follows the value just read.
func (d *Decoder) end() error {
	d.ws()
	if d.i < len(d.b) {
		return d.syntax("unexpected data after the top-level value")
	}
	return nil
}

// colErr returns an error about column col.
func (d *Decoder) colErr(col int, format string, args ...any) error {
	return fmt.Errorf("column %s: %s", d.cols[col].Name, fmt.Sprintf(format, args...))
}

// typeName names what a column expects, for messages.
func typeName(t types.T) string {
	switch {
	case t.IsNumeric():
		return "a number"
	case t.Fam == types.Bool:
		return "a boolean"
	case t.IsString():
		return "a string"
	}
	return "a value of type " + t.String()
}

// quoteShort quotes s for an error message, shortened when long.
func quoteShort(s []byte) string {
	if len(s) > 64 {
		return fmt.Sprintf("%q…", s[:64])
	}
	return fmt.Sprintf("%q", s)
}

// unsafeString views b as a string without copying. Only for calls that
// do not keep the string (parsing numbers and dates).
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// keepsInput reports whether ParseText may return a Datum that refers to
// its input string (so the input must be a real copy).
func keepsInput(t types.T) bool {
	switch t.Fam {
	case types.Bool, types.Int2, types.Int4, types.Int8, types.Oid, types.Float4, types.Float8,
		types.Numeric, types.Date, types.Time, types.Timestamp, types.TimestampTZ, types.Interval, types.UUID:
		return false
	}
	return true
}

// text converts the text s of a value to column col's type into *dst:
// the path of JSON strings, CSV fields and raw keys. quoted tells a JSON
// or CSV string from other text, for messages.
func (d *Decoder) text(col int, s []byte, quoted bool, dst *types.Datum) error {
	t := d.cols[col].Type
	switch t.Fam {
	case types.Text:
		d.deferText(dst, s)
		return nil
	case types.Varchar:
		if t.Prec == 0 {
			d.deferText(dst, s)
			return nil
		}
		v, err := types.ParseText(unsafeString(s), t) // v.S is s or a prefix: copied
		if err != nil {
			return d.colErr(col, "%s", err.Error())
		}
		d.deferString(dst, v.S)
		return nil
	case types.Bytea:
		if len(s) >= 2 && s[0] == '\\' && s[1] == 'x' {
			v, err := types.ParseText(string(s), t)
			if err != nil {
				return d.colErr(col, "%s", err.Error())
			}
			*dst = v
			return nil
		}
		out := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
		n, err := base64.StdEncoding.Decode(out, s)
		if err != nil {
			return d.colErr(col, "expected base64 or \\x hex bytes, got %s", quoteShort(s))
		}
		*dst = types.Datum{K: types.KBytes, S: unsafeString(out[:n])} // out is never written again
		return nil
	case types.Timestamp, types.TimestampTZ:
		if v, ok := fastTimestamp(s, t.Fam == types.TimestampTZ); ok {
			*dst = v
			return nil
		}
	}
	var in string
	if keepsInput(t) {
		in = string(s)
	} else {
		in = unsafeString(s)
	}
	v, err := types.ParseText(in, t)
	if err != nil {
		if (t.IsNumeric() || t.Fam == types.Bool) && pgerror.GetCode(err) == pgcode.InvalidTextRepresentation {
			kind := "string"
			if !quoted {
				kind = "text"
			}
			return d.colErr(col, "expected %s, got %s %s", typeName(t), kind, quoteShort(s))
		}
		return d.colErr(col, "%s", err.Error())
	}
	*dst = v
	return nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
