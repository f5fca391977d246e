package server

import (
	"strconv"
	"strings"

	"sluice/exec/eval"
)

// The indexes of a table as pg_class, pg_index, pg_attribute and
// pg_indexes show them, one row each: the primary key's NAME_pkey, the
// index behind each UNIQUE constraint (named as the constraint), each
// CREATE UNIQUE INDEX and each CREATE INDEX (recorded, not built: see
// index.go). pgjdbc's getIndexInfo and psql's \d list them from there.

// index is one index of a table.
type index struct {
	oid              int64
	name             string
	attnums          []string // indkey
	cols             []string
	unique, primary  bool
	constraintBacked bool // the index of a PRIMARY KEY or UNIQUE constraint
}

// oidFirstIndex is where the oids of indexes other than primary keys
// begin: 64 per table, between the primary keys' and the constraints'.
const oidFirstIndex = oidFirstPkey + 1<<24

// indexesOf returns the indexes of a table, its primary key first.
func indexesOf(r userRel) []index {
	if r.kind != "r" {
		return nil
	}
	var out []index
	if k, ok := pkeyOf(r); ok {
		out = append(out, index{oid: k.oid, name: k.name, attnums: k.attnums, cols: k.cols,
			unique: true, primary: true, constraintBacked: true})
	}
	add := func(k int, name string, cols []int, unique, constraint bool) {
		ix := index{oid: indexOID(r, k), name: name, unique: unique, constraintBacked: constraint}
		for _, c := range cols {
			ix.attnums = append(ix.attnums, strconv.Itoa(c+1))
			ix.cols = append(ix.cols, r.e.Columns[c].Name)
		}
		out = append(out, ix)
	}
	for i, u := range r.e.Uniques {
		add(1+i, u.Name, u.Cols, true, !u.Index)
	}
	for i, ix := range r.e.Indexes {
		add(1+len(r.e.Uniques)+i, ix.Name, ix.Cols, false, false)
	}
	return out
}

// indexOID is the oid of the k-th index (from 1) of r other than its
// primary key. The k-th UNIQUE constraint's index is indexOID(r, k).
func indexOID(r userRel, k int) int64 { return oidFirstIndex + int64(r.e.ID)*64 + int64(k) }

// def is pg_indexes.indexdef (and pg_get_indexdef) of the index.
func (ix index) def(table string) string {
	cols := make([]string, len(ix.cols))
	for i, c := range ix.cols {
		cols[i] = eval.QuoteIdent(c)
	}
	kw := "CREATE INDEX "
	if ix.unique {
		kw = "CREATE UNIQUE INDEX "
	}
	return kw + eval.QuoteIdent(ix.name) + " ON public." + eval.QuoteIdent(table) + " USING btree (" + strings.Join(cols, ", ") + ")"
}
