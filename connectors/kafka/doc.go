// Package kafka reads Kafka topics as sources and writes sinks to them.
// It imports only exec/connector, the sql leaf packages, connectors/internal
// (decode, encode) and its client libraries: twmb/franz-go (kgo, kmsg)
// for reading and for the transactional producer of the exactly-once sink
// (txn.go), segmentio/kafka-go for plain writes.
//
// # Source
//
//	CREATE SOURCE bids (auction BIGINT, price BIGINT, _offset BIGINT)
//	WITH (connector = 'kafka', topic = 'bids',
//	      properties.bootstrap.server = '127.0.0.1:9092')
//	FORMAT PLAIN ENCODE JSON;
//
// Options: topic and properties.bootstrap.server (comma-separated) are
// required; scan.startup.mode is earliest (default), latest or timestamp
// (with scan.startup.timestamp.millis); scan.bounded = 'latest' ends the
// source (io.EOF) at the offsets the partitions had when it first started,
// kept in its position (version 2) across restarts; isolation.level is read_committed
// (default) or read_uncommitted; on_error is fail (default), skip or
// dead_letter; max.message.bytes (default 1048576) bounds key plus value,
// and a larger record is a bad record.
//
// The source reads every partition of the topic. It does not use a
// consumer: source_fetch.go sends Fetch requests (isolation level 1 for
// read_committed) as kmsg requests through a kgo client to each
// partition's leader, reads the record batches itself, in place
// (source_batch.go: message format v2; v0/v1 is refused), drops the batches of aborted
// transactions (from the response's AbortedTransactions list of producer
// ids and first offsets, as the Java consumer does), never returns control
// records, and reads only below the last stable offset.
//
// Formats. FORMAT PLAIN: one row (+1) per record value (a record with a
// null value is passed by). FORMAT UPSERT needs a PRIMARY KEY: the record
// key (a JSON object of the key columns or, with one key column, its
// text) gives the key, a value gives the row (+1, replacing the key's
// row) and a null value (a tombstone) deletes the key (-1, only the key
// columns set); the engine turns these into exact changes. FORMAT
// DEBEZIUM: the envelope's before image is retracted (-1) and its after
// image inserted (+1). ENCODE JSON or CSV (see connectors/internal/decode
// for the mapping of values to column types); ENCODE AVRO (every FORMAT;
// an UPSERT key may be a Confluent-framed Avro record of the key columns)
// and ENCODE PROTOBUF (FORMAT PLAIN, option message) read their schemas
// from a schema registry (connectors/internal/schemareg).
//
// Pseudo-columns. A declared column with one of these names is filled
// from the record, not looked up in the payload:
//
//	_key        TEXT, VARCHAR or BYTEA   the record key (NULL when none)
//	_partition  SMALLINT, INT or BIGINT  the partition
//	_offset     BIGINT                   the offset
//	_timestamp  TIMESTAMP or TIMESTAMPTZ the record timestamp
//
// Position and recovery. Position encodes the next offset of every
// partition known to the source (those found at Open and those read
// since). Seek restores them; a partition missing from a saved position
// appeared after it was taken and starts at its earliest offset, as does
// a partition added to the topic while the source runs (metadata is
// refreshed every few seconds). Partitions start per scan.startup.mode
// only when the source knows none (a fresh start, or a broker that was
// unreachable until now).
//
// Bad records (design.md §6). With on_error = 'fail' Read returns an
// error naming the topic, partition, offset and cause; with 'skip' or
// 'dead_letter' the record is passed by and TakeDeadLetters hands it to
// the engine with its raw bytes and provenance. A broker outage is not an
// error: Read returns no rows while the fetcher retries with backoff. A
// topic that does not exist when the source opens is an error.
package kafka
