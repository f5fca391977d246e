// Package file is the 'file' sink connector: it writes the changes of
// each epoch into one file of a directory (option path, created if
// missing), as JSON lines (ENCODE JSON, the default, files *.jsonl) or CSV
// (ENCODE CSV, files *.csv, each starting with a header line of column
// names). Every byte comes from connectors/internal/encode.
//
// Formats:
//   - FORMAT PLAIN (the default): one line per appended row. Only for an
//     append-only input; a retracting one is refused at CREATE SINK
//     (0A000) with a hint to use FORMAT DEBEZIUM or a keyed sink.
//   - FORMAT DEBEZIUM: one encode.Debezium envelope per change, for any
//     input (JSON only).
//   - FORMAT UPSERT: one JSON line per change, the new row, or
//     {"__op":"delete",<key columns>} for a delete; needs primary_key.
//
// Write modes are append (PLAIN, DEBEZIUM) and upsert (UPSERT).
//
// Exactly once, by per-epoch files made visible by an atomic rename.
// Write(epoch) writes <path>/.tmp-<epoch>-<random>, fsyncs it, renames it
// to <path>/part-<epoch, 20 digits>.<ext> and fsyncs the directory. A
// reader that lists part-* files sees whole epochs only, and reading them
// in name order (the zero padding makes it epoch order) gives every
// change once. If the part file of an epoch already exists the epoch was
// applied and Write returns nil, so a replay after a crash is harmless.
// A crash before the rename leaves only a .tmp- file, which Open removes.
// Progress.LastEpoch is the highest epoch with a part file.
//
// A sink owns its directory: two sinks writing the same files in one
// directory would overwrite each other's epochs.
//
// It imports exec/connector, the sql leaf packages and
// connectors/internal/encode.
package file
