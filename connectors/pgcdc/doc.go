// Package pgcdc is the 'postgres-cdc' source connector: change data
// capture from a PostgreSQL table by logical replication with the pgoutput
// plugin (github.com/jackc/pglogrepl over pgx's pgconn), without Debezium.
//
// Contract:
//   - The first start creates the publication (FOR TABLE the table) and
//     the replication slot when they are absent. The slot is created with
//     EXPORT_SNAPSHOT, and the initial snapshot is read in a REPEATABLE
//     READ transaction that imports that snapshot (SET TRANSACTION
//     SNAPSHOT): the snapshot is the table at the slot's consistent point,
//     and the stream starts there, so there is no gap and no duplicate.
//   - The source emits keyed changes (FORMAT UPSERT semantics): an insert
//     or an update is the new row with diff +1, a delete is the key with
//     diff -1; an update that changes the key is a delete of the old key
//     and the new row. The engine turns them into exact retractions.
//   - Its position (Seekable) is the end LSN of the last transaction
//     emitted whole, plus the number of rows of the next transaction
//     already emitted (a transaction may span several reads); during the
//     snapshot, the slot's consistent point and the key of the last row
//     read. The slot's confirmed flush LSN is advanced (Committer) only to
//     a position that a durable checkpoint holds, so the slot keeps every
//     change a recovery may replay.
//   - A snapshot interrupted by a crash resumes after the last key read,
//     from the table as it is then (the exported snapshot died with the
//     connection), and the stream replays from the consistent point: the
//     keyed changes converge to the table's state exactly, though a row
//     may show a newer value before older changes are replayed over it.
//   - Lost connections (upstream restarted, network) are retried with
//     backoff; the last such error is visible (SHOW SOURCES). Problems
//     that retrying cannot cure fail with a SQLSTATE and a hint: wal_level
//     not logical, a table without a primary key or replica identity,
//     wrong credentials, TRUNCATE or a dropped column upstream.
//
// One job reads a slot at a time: read a postgres-cdc source from one
// materialized view and build further views on that one.
//
// What every CDC source shares (options, the reader and its retrying
// worker, the position framing) is connectors/internal/cdc's; this package
// keeps the replication protocol, the type mapping and the position's
// fields.
//
// It imports only exec/connector, connectors/internal/cdc, the sql leaf
// packages, pgx and pglogrepl.
package pgcdc
