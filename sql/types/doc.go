// Package types owns Sluice's values: SQL types (T) with their Postgres OIDs,
// the Datum that holds one value, rows and batches of rows with diffs, and the
// encodings of values: Postgres text and binary wire formats, an
// order-preserving key encoding and a compact value encoding for storage.
//
// It is a leaf package: it imports only the standard library and
// sql/pgcode, sql/pgerror, and anyone may import it.
package types
