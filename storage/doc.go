// Package storage owns everything Sluice keeps on disk, in one Pebble
// database: the catalog, the state of dataflow operators, source positions,
// the materialized contents of tables and views, tables' DML logs and their
// write-side rows, and checkpoint metadata.
//
// Key layout (every key starts with a one-byte space tag):
//
//	'm' meta:      m/epoch                       -> last committed epoch (uvarint)
//	               m/nextid                      -> catalog id allocator
//	'c' catalog:   c/<id:8>                      -> catalog entry (JSON)
//	's' state:     s/<op:8>/<key>                -> operator state
//	'p' position:  p/<op:8>                      -> source read position
//	'v' relation:  v/<rel:8>/<key>               -> materialized rows (count + row)
//	'l' dml log:   l/<table:8>/<seq:8>           -> a chunk of table changes
//	'w' write set: w/<table:8>/<key>             -> the table's current rows (DML side)
//
// Epoch N's writes (state, positions, relation contents, catalog changes)
// are collected in one EpochWriter and committed by one synced Pebble
// batch, or, when its runs (bulk writes of operators, see Run) are large,
// by one sstable written to <dir>/ingest and ingested (ingest.go): either
// way the epoch, with its m/epoch record, becomes durable at once; reads for SELECT use a Pebble snapshot taken after a commit, so
// they always see one committed epoch. DML is durable on its own: a table
// write commits its log entry and write-set rows in one synced batch before
// it is acknowledged.
//
// Faults: Open refuses a damaged store, naming the file, unless told to
// recover (records.go checks WAL and MANIFEST records, corruption.go the
// sstables, recover.go moves damage aside); writes keep a free-space
// reserve so that Pebble never meets a full disk (space.go).
//
// Backups are Pebble checkpoints taken between two epoch commits, with a
// BACKUP_MANIFEST (backup.go); a dropped object's ranges are deleted and
// then compacted so that its space returns (reclaim.go).
//
// storage imports Pebble, sql/pgcode and sql/pgerror only.
package storage
