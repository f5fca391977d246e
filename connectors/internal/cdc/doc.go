// Package cdc is what the change-data-capture sources (postgres-cdc,
// mysql-cdc) share, so that each keeps only what is specific to its
// upstream (the replication protocol, the type mapping, what a position
// holds):
//
//   - Parse: the RisingWave-style WITH options every CDC source takes
//     (hostname, port, username, password, database.name, table.name,
//     FORMAT/ENCODE left out), the declared columns and PRIMARY KEY, the
//     host policy and the column types the connector reads.
//   - Reader and Worker: the exec connector adapter (Seekable, Statuser)
//     over a worker goroutine that runs the connector's session (snapshot,
//     then stream) and retries transient errors with backoff; chunks pass
//     over a bounded channel with the position after their rows, so rows
//     and position are taken together.
//   - Txn: the rows of the transaction being streamed, the rows of a
//     resumed transaction already emitted skipped, flushed in chunks.
//   - The position framing (version byte, phase, the connector's fields,
//     the last snapshot key) with a Decoder that refuses truncated or
//     foreign bytes with XX001.
//   - Claims: one reader per slot or replica id in this process.
//
// It imports only exec/connector, connectors/internal/chunkq and the sql
// leaf packages.
package cdc
