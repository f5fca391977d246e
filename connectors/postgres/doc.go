// Package postgres is the 'postgres' sink connector: it writes the changes
// of committed epochs into a table of a PostgreSQL server through pgx.
//
// It owns the sink's options (url; user and password, which override the
// URL's; table, auto.create, progress.table, write.timeout), the mapping
// of Sluice types to PostgreSQL column types, the DDL it runs (the target
// table when auto.create is on, the progress table, the per-connection
// staging tables) and the statements of each write mode:
//
//   - append: every inserted row is copied into the table (binary COPY);
//     at least once, since nothing records which epoch was written.
//   - upsert: one transaction per epoch: rows are copied into a temporary
//     staging table, then INSERT … ON CONFLICT (key) DO UPDATE and a
//     DELETE … USING by key; repeating an epoch changes nothing.
//   - transactional: the same, plus a progress row (sluice_sink_progress,
//     one per sink id) locked FOR UPDATE at the start of the transaction
//     and advanced in it, so an epoch at or below the stored one is
//     skipped and a crash before COMMIT leaves nothing behind.
//
// Values travel in PostgreSQL's binary format (types.EncodeBinary), so
// floats (NaN, ±Infinity), big numerics, bytea, jsonb, timestamps and
// intervals are stored exactly.
//
// It imports only exec/connector, the sql leaf packages and pgx.
package postgres
