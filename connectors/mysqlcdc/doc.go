// Package mysqlcdc is the 'mysql-cdc' source connector: change data
// capture from a MySQL or MariaDB table by reading the binary log as a
// replica would (github.com/go-mysql-org/go-mysql), without Debezium.
//
// Contract:
//   - The upstream must log rows: log_bin ON, binlog_format ROW and
//     binlog_row_image FULL (checked at CREATE, 55000 otherwise). The
//     table needs a primary key, and the declared PRIMARY KEY must be it.
//   - The first start takes a snapshot in a transaction started WITH
//     CONSISTENT SNAPSHOT and learns the binlog position that snapshot
//     stands at (MariaDB's binlog_snapshot_file/position, or SHOW MASTER
//     STATUS under FLUSH TABLES WITH READ LOCK on MySQL); the stream starts
//     there, so there is no gap and no duplicate.
//   - The source emits keyed changes (FORMAT UPSERT semantics): an insert
//     or an update is the new row with diff +1, a delete is the old row
//     with diff -1; an update that changes the key is a delete of the old
//     row and the new row. The engine turns them into exact retractions.
//   - Its position (Seekable) is the point after the last transaction
//     emitted whole, plus the number of rows of the next transaction
//     already emitted (a transaction may span several reads); during the
//     snapshot, the snapshot's binlog position and the key of the last row
//     read. On MariaDB the point is a GTID position (the last GTID of each
//     domain, gtid.enable = 'false' turns it off), which a restart streams
//     from whatever binlog files have rotated or been purged since; on
//     MySQL (whose GTIDs are not implemented) it is the binlog file and
//     offset. A checkpoint stores it atomically with its epoch, and a
//     restart seeks to it, so each change is applied exactly once.
//   - A snapshot interrupted by a crash resumes after the last key read,
//     from the table as it is then, and the stream replays from the
//     snapshot's position: the keyed changes converge to the table.
//   - The binlog is not held for the source (MySQL has no slots): binlog
//     files purged upstream before a restart reads them end the source
//     with a clear error. Lost connections are retried with backoff and
//     shown in SHOW SOURCES. Schema changes that move or drop a declared
//     column, and TRUNCATE, end the source with 55000.
//
// What every CDC source shares (options, the reader and its retrying
// worker, the position framing) is connectors/internal/cdc's; this package
// keeps the binlog protocol, the type mapping and the position's fields.
//
// It imports only exec/connector, connectors/internal/cdc, the sql leaf
// packages and go-mysql.
package mysqlcdc
