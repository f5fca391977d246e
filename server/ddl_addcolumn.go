package server

import (
	"context"
	"errors"

	"sluice/exec/eval"
	"sluice/exec/ops"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// ALTER TABLE ADD COLUMN under materialized views and sinks (issue 16
// item 3). A table that jobs read cannot be rebuilt under a new id (they
// subscribe to its id and its change stream), so it is widened in place:
// with the graph paused at a committed epoch and no change of the table
// in flight, every row of its write set and of its materialized contents
// is rewritten with the new column (its default, or NULL) in one synced
// batch together with the new catalog entry, so that a crash leaves the
// old table or the new one, whole. The table's job runs on: from then on
// its stream carries the wider rows. The jobs planned before keep their
// plans: each Subscribe node lists the columns it was planned with, and
// the operator cuts wider rows down to them (ops.Subscribe.Width), so old
// views, their dependents and their sinks see exactly what they saw
// before, also after a restart from their stored plans. Views planned
// after see the column.

// errChangesInFlight: the table's source still holds changes pushed after
// the pause's barrier (their rows are narrower); the ALTER lets them
// through and tries again.
var errChangesInFlight = errors.New("changes in flight")

// addColumnInPlace widens table ent to nt (ent's columns and one more,
// same id); extras are the new column's constraints and sequences.
func (s *session) addColumnInPlace(ctx context.Context, x *parser.AlterTable, ent, nt *storage.CatalogEntry, extras *tableExtras) error {
	e := s.e
	ectx := s.evalCtx(nil)
	for try := 0; ; try++ {
		err := e.ddl(ctx, func() error { return e.widenTable(x, ent, nt, extras, ectx) })
		if !errors.Is(err, errChangesInFlight) {
			return err
		}
		if try == 20 {
			return pgerror.New(pgcode.ObjectInUse, "cannot ALTER TABLE %q while it is being written without pause", ent.Name).
				WithHint("Retry when fewer statements write the table.")
		}
		if err := e.coord.Flush(ctx); err != nil {
			return err
		}
	}
}

// widenTable runs inside the DDL pause.
func (e *Engine) widenTable(x *parser.AlterTable, ent, nt *storage.CatalogEntry, extras *tableExtras, ectx *eval.Context) error {
	tw, err := e.tableWriter(ent.ID)
	if err != nil {
		return err
	}
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if err := tableInUse(tw); err != nil {
		return err
	}
	if tw.src.Sent() != tw.seq {
		return errChangesInFlight
	}
	nt = copyEntry(nt)
	cons, defs, fail, err := e.newColumnConstraints(nt, extras, ectx)
	if err != nil {
		return err
	}
	last := len(nt.Columns) - 1
	type kv struct {
		k []byte
		r types.Row
	}
	var rows []kv
	err = e.scanMatching(tw, nil, nil, func(k []byte, r types.Row) error {
		nr := append(r.Copy(), types.Null)
		if fn := defs[last]; fn != nil {
			d, err := fn(nil)
			if err != nil {
				return err
			}
			nr[last] = d
		}
		if nt.Columns[last].NotNull && nr[last].IsNull() {
			return pgerror.New(pgcode.NotNullViolation, "column %q of relation %q contains null values", x.Column, ent.Name)
		}
		if err := cons.checkRow(nr); err != nil {
			if pe, ok := err.(*pgerror.Error); ok && pe.Code == pgcode.CheckViolation {
				return pgerror.New(pgcode.CheckViolation, "check constraint %q of relation %q is violated by some row", checkName(pe.Message), ent.Name)
			}
			return err
		}
		rows = append(rows, kv{k: append([]byte(nil), k...), r: nr})
		return nil
	})
	if err != nil {
		return fail(err)
	}
	seen := make([]map[string]bool, len(cons.uniques))
	for i := range seen {
		seen[i] = map[string]bool{}
	}
	wb := e.db.NewWriteBatch()
	// The materialized rows of a table without a key are keyed by the
	// whole row, which changes: they are all written again.
	relLo, relHi := storage.Key(storage.SpaceRelation, ent.ID), storage.Key(storage.SpaceRelation, ent.ID+1)
	wb.DeleteRange(relLo, relHi)
	mat := map[string]int64{}
	matRow := map[string]types.Row{}
	for _, kr := range rows {
		for i, u := range cons.uniques {
			if uk, ok := uniqueKey(kr.r, u.cols); ok {
				if seen[i][uk] {
					return fail(pgerror.New(pgcode.UniqueViolation, "could not create unique index %q", u.name))
				}
				seen[i][uk] = true
			}
		}
		wb.Set(kr.k, types.EncodeRow(nil, kr.r))
		mk := string(ops.RelKey(relLo, nt.Key, kr.r))
		mat[mk]++
		matRow[mk] = kr.r
	}
	for mk, n := range mat {
		wb.Set([]byte(mk), ops.EncodeRelValue(n, matRow[mk]))
	}
	nt.SQL = tableSQL(nt)
	storage.PutCatalogSync(wb, nt, 0, e.cat.nextID)
	if err := e.db.WriteSync(wb); err != nil {
		return fail(err)
	}
	return e.installTable(tw, nt, cons)
}
