package server

import (
	"context"
	"fmt"

	"sluice/exec/eval"
	"sluice/exec/ops"
	"sluice/server/pgwire"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// ALTER TABLE ADD COLUMN and DROP COLUMN change the shape of a table's
// rows. Sluice rebuilds the table under a new id: every current row,
// widened (with the new column's default, evaluated per row) or narrowed,
// is written with the new catalog entry in one synced batch, so a crash
// leaves either the old table or the new one. A table that views and sinks
// read keeps its id when a column is added (ddl_addcolumn.go); DROP COLUMN
// of such a table is refused with 2BP01.

func (s *session) alterColumns(ctx context.Context, x *parser.AlterTable, ent *storage.CatalogEntry, col int, w pgwire.ResultWriter) error {
	e := s.e
	what := fmt.Sprintf("drop column %s of table %s", x.Column, ent.Name)
	if x.Action == "add column" {
		what = fmt.Sprintf("add column %s to table %s", x.Column, ent.Name)
		if col >= 0 {
			if x.IfNotExists {
				return w.Notice(fmt.Sprintf("column %q of relation %q already exists, skipping", x.Column, ent.Name))
			}
			return pgerror.New(pgcode.DuplicateColumn, "column %q of relation %q already exists", x.Column, ent.Name)
		}
		if x.Def.PrimaryKey {
			return pgerror.Unsupported("ADD COLUMN ... PRIMARY KEY").WithHint("create a new table with the key and INSERT ... SELECT into it")
		}
	}
	inPlace := false // jobs read the table: widen it under its id
	if err := e.dependentsErr(what, ent); err != nil {
		if x.Action != "add column" {
			return err
		}
		inPlace = true
	}
	nt := copyEntry(ent)
	var extras *tableExtras
	var drop func(int) int // old column index -> new (-1: gone)
	if x.Action == "add column" {
		c := storage.ColumnOf(types.Column{Name: x.Def.Name, Type: x.Def.Type})
		c.NotNull = x.Def.NotNull
		cols := []storage.ColumnEntry{c}
		var err error
		fake := &parser.CreateTable{Name: ent.Name, Columns: []parser.ColumnDef{x.Def}}
		if extras, err = e.tableExtrasOf(fake, cols, nil); err != nil {
			return err
		}
		n := len(nt.Columns)
		nt.Columns = append(nt.Columns, cols[0])
		nt.Checks = append(nt.Checks, extras.checks...)
		for _, u := range extras.uniques {
			nt.Uniques = append(nt.Uniques, storage.UniqueEntry{Name: u.Name, Cols: []int{n}})
		}
		drop = func(i int) int { return i }
		if inPlace {
			return s.addColumnInPlace(ctx, x, ent, nt, extras)
		}
	} else {
		for _, k := range ent.Key {
			if k == col {
				return pgerror.Unsupported("dropping primary key column %q", x.Column).
					WithHint("create a new table without it and INSERT ... SELECT into it")
			}
		}
		if len(ent.Columns) == 1 {
			return pgerror.Unsupported("dropping the only column of table %q", ent.Name)
		}
		drop = func(i int) int {
			switch {
			case i == col:
				return -1
			case i > col:
				return i - 1
			}
			return i
		}
		nt.Columns = append(nt.Columns[:col:col], nt.Columns[col+1:]...)
		remap := func(cols []int) ([]int, bool) {
			var out []int
			for _, c := range cols {
				if drop(c) < 0 {
					return nil, false
				}
				out = append(out, drop(c))
			}
			return out, true
		}
		nt.Key, _ = remap(ent.Key)
		nt.Uniques = nil
		for _, u := range ent.Uniques {
			if cs, ok := remap(u.Cols); ok {
				u.Cols = cs
				nt.Uniques = append(nt.Uniques, u)
			}
		}
		nt.Indexes = nil
		for _, ix := range ent.Indexes {
			if cs, ok := remap(ix.Cols); ok {
				ix.Cols = cs
				nt.Indexes = append(nt.Indexes, ix)
			}
		}
		nt.Checks = nil
		for _, ch := range ent.Checks {
			chx, err := parser.ParseExpr(ch.Expr)
			if err != nil {
				return err
			}
			uses := false
			for _, r := range columnRefs(chx) {
				uses = uses || r == x.Column
			}
			if !uses {
				nt.Checks = append(nt.Checks, ch)
			}
		}
	}
	ectx := s.evalCtx(nil)
	return e.ddl(ctx, func() error {
		tw, err := e.tableWriter(ent.ID)
		if err != nil {
			return err
		}
		tw.mu.Lock()
		defer tw.mu.Unlock()
		if err := tableInUse(tw); err != nil {
			return err
		}
		nt.ID = e.cat.allocID()
		cons, defs, fail, err := e.newColumnConstraints(nt, extras, ectx)
		if err != nil {
			return err
		}
		// Rebuild every current row.
		type kv struct {
			k []byte
			r types.Row
		}
		var rows []kv
		err = e.scanMatching(tw, nil, nil, func(k []byte, r types.Row) error {
			var nr types.Row
			if x.Action == "add column" {
				nr = append(r.Copy(), types.Null)
				if fn := defs[len(nr)-1]; fn != nil {
					d, err := fn(nil)
					if err != nil {
						return err
					}
					nr[len(nr)-1] = d
				}
				if nt.Columns[len(nr)-1].NotNull && nr[len(nr)-1].IsNull() {
					return pgerror.New(pgcode.NotNullViolation, "column %q of relation %q contains null values", x.Column, ent.Name)
				}
				if err := cons.checkRow(nr); err != nil {
					if pe, ok := err.(*pgerror.Error); ok && pe.Code == pgcode.CheckViolation {
						return pgerror.New(pgcode.CheckViolation, "check constraint %q of relation %q is violated by some row", checkName(pe.Message), ent.Name)
					}
					return err
				}
			} else {
				for i, d := range r {
					if drop(i) >= 0 {
						nr = append(nr, d)
					}
				}
			}
			rows = append(rows, kv{k: k[len(storage.Key(storage.SpaceWrite, ent.ID)):], r: nr})
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
			// The write set keeps its keys (primary key or row id); the
			// materialized rows are keyed by the key or, without one, the
			// whole row.
			wb.Set(append(storage.Key(storage.SpaceWrite, nt.ID), kr.k...), types.EncodeRow(nil, kr.r))
			mk := string(ops.RelKey(storage.Key(storage.SpaceRelation, nt.ID), nt.Key, kr.r))
			mat[mk]++
			matRow[mk] = kr.r
		}
		for mk, n := range mat {
			wb.Set([]byte(mk), ops.EncodeRelValue(n, matRow[mk]))
		}
		if nt.Key == nil {
			wb.Set(rowIDKey(nt.ID), encodeUvarint(tw.rowID))
		}
		for _, sq := range e.ownedSequences(ent.ID) {
			if x.Action == "drop column" && sq.Sequence.OwnedCol == x.Column {
				continue
			}
			ns := *sq
			def := *sq.Sequence
			def.OwnedBy = nt.ID
			ns.Sequence = &def
			e.persist(&ns)
			storage.PutCatalogSync(wb, &ns, 0, e.cat.nextID)
		}
		nt.SQL = tableSQL(nt)
		storage.PutCatalogSync(wb, nt, ent.ID, e.cat.nextID)
		if err := e.db.WriteSync(wb); err != nil {
			return fail(err)
		}
		// The new table is durable; retire the old one.
		for _, sq := range e.ownedSequences(ent.ID) {
			if x.Action == "drop column" && sq.Sequence.OwnedCol == x.Column {
				e.dropOne(sq)
			}
		}
		e.rt.StopJob(ent.ID, 0)
		e.tablesMu.Lock()
		delete(e.tables, ent.ID)
		e.tablesMu.Unlock()
		e.cat.remove(ent)
		oldID := ent.ID
		e.coord.OnNextEpoch(func(w *storage.EpochWriter) {
			storage.DeleteCatalog(w, oldID)
			w.Delete(rowIDKey(oldID))
		})
		if err := e.startTable(nt); err != nil {
			return err
		}
		e.persist(nt)
		return nil
	})
}

// checkName extracts the constraint name from a 23514 message.
func checkName(msg string) string {
	var table, name string
	if _, err := fmt.Sscanf(msg, "new row for relation %q violates check constraint %q", &table, &name); err != nil {
		return ""
	}
	return name
}

func encodeUvarint(v uint64) []byte {
	var b []byte
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// newColumnConstraints applies an added column's extras (its sequences;
// the table keeps its own checks and uniques) to nt and builds nt's
// constraints and default functions. fail drops the sequences made for
// the column and returns err; it has already run when err is returned.
func (e *Engine) newColumnConstraints(nt *storage.CatalogEntry, extras *tableExtras, ectx *eval.Context) (*tableConstraints, []eval.Fn, func(error) error, error) {
	var created []*storage.CatalogEntry
	if extras != nil {
		checks, uniques := nt.Checks, nt.Uniques
		extras.apply(e, nt)
		nt.Checks, nt.Uniques = checks, uniques
		created = extras.seqs
	}
	fail := func(err error) error {
		for _, sq := range created {
			e.dropOne(sq)
		}
		return err
	}
	cons, err := e.buildConstraints(nt)
	if err != nil {
		return nil, nil, nil, fail(err)
	}
	defs, err := cons.defaultFns(ectx)
	if err != nil {
		return nil, nil, nil, fail(err)
	}
	return cons, defs, fail, nil
}
