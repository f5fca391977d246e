// Package decode turns one message (a Kafka record value, a socket line)
// into a typed row, driven by the source's declared columns. It is the
// inverse of connectors/internal/encode: what a Sluice sink writes, a
// Sluice source reads back unchanged.
//
// JSON is read by a hand-written scanner that walks the object once and
// matches its keys to the declared column names case-insensitively; values
// go straight into Datums of the column's type, with no map[string]any and
// no allocation per record except the strings of text columns. Mapping:
//
//   - null, or a missing field, is NULL; unknown fields are skipped (but
//     must still be valid JSON).
//   - A number fills an integer, float or NUMERIC column (an integer
//     column takes only integral values); a text column takes its literal.
//   - A string is parsed with the PostgreSQL input syntax of the column's
//     type (types.ParseText): timestamps, dates, intervals, numbers written
//     as strings. A BYTEA column takes base64 (as encode writes it) or the
//     \x hex form.
//   - true/false fill a BOOLEAN column (a text column takes the literal).
//   - A JSONB column takes any JSON value, compacted; an object or array for
//     any other column is an error.
//
// Broken JSON, invalid UTF-8, a value of the wrong type or out of range is
// an error whose text is the plain cause ("invalid JSON at byte 17: …",
// "column price: expected a number, got string \"x\""); the source wraps it
// with the record's provenance.
//
// CSV holds one record per message: fields in declared column order,
// RFC 4180 quoting, an unquoted empty field is NULL and a quoted empty one
// ("") the empty string.
//
// The Debezium envelope {"before":…,"after":…,"op":"c|u|d|r"}, optionally
// wrapped in {"schema":…,"payload":…}, is read by DecodeDebezium.
//
// It imports only the sql leaf packages.
package decode
