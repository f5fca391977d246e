package server

import (
	"context"
	"fmt"
	"strings"

	"sluice/server/pgwire"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// CREATE INDEX and DROP INDEX. Sluice answers point reads through the
// primary key and otherwise scans, so a plain index would change nothing:
// CREATE INDEX records it (it shows up and DROP INDEX finds it) and says
// so in a NOTICE. A UNIQUE index is a promise about the data: it is
// enforced like a UNIQUE constraint (the existing rows are checked first).

// indexOwner finds the table holding index name: the entry and, for a
// unique index or constraint, its position in Uniques (else in Indexes).
func (e *Engine) indexOwner(name string) (ent *storage.CatalogEntry, unique bool, pos int) {
	for _, t := range e.cat.list(kindTable) {
		if len(t.Key) > 0 && name == t.Name+"_pkey" {
			return t, true, -1
		}
		for i, u := range t.Uniques {
			if u.Name == name {
				return t, true, i
			}
		}
		for i, ix := range t.Indexes {
			if ix.Name == name {
				return t, false, i
			}
		}
	}
	return nil, false, 0
}

func (s *session) createIndex(ctx context.Context, x *parser.CreateIndex, w pgwire.ResultWriter) error {
	e := s.e
	ent, err := e.tableEntry(x.Table)
	if err != nil {
		return err
	}
	var cols []int
	for _, c := range x.Columns {
		found := -1
		for i, ce := range ent.Columns {
			if ce.Name == c {
				found = i
			}
		}
		if found < 0 {
			return pgerror.New(pgcode.UndefinedColumn, "column %q does not exist", c)
		}
		cols = append(cols, found)
	}
	if x.Unique && (x.Exprs || x.Where) {
		return pgerror.Unsupported("UNIQUE indexes on expressions or with WHERE").
			WithHint("a UNIQUE index must be enforced; Sluice enforces UNIQUE over plain columns")
	}
	name := x.Name
	if name == "" {
		var parts []string
		for _, c := range x.Columns {
			parts = append(parts, c)
		}
		if x.Exprs {
			parts = append(parts, "expr")
		}
		name = uniqueName(ent.Name+"_"+strings.Join(parts, "_")+"_idx", func(n string) bool {
			t, _, _ := e.indexOwner(n)
			return t != nil || e.cat.get(n) != nil
		}, nil)
	}
	if t, _, _ := e.indexOwner(name); t != nil || e.cat.get(name) != nil {
		if x.IfNotExists {
			return w.Notice(fmt.Sprintf("relation %q already exists, skipping", name))
		}
		return pgerror.New(pgcode.DuplicateTable, "relation %q already exists", name)
	}
	return e.ddl(ctx, func() error {
		nt := copyEntry(e.cat.byIDGet(ent.ID))
		if !x.Unique {
			nt.Indexes = append(nt.Indexes, storage.IndexEntry{Name: name, Cols: cols})
			if err := e.replaceTable(nt); err != nil {
				return err
			}
			return w.Notice(fmt.Sprintf("index %q is recorded but not built: Sluice reads by primary key or scans, so it does not need it", name))
		}
		nt.Uniques = append(nt.Uniques, storage.UniqueEntry{Name: name, Cols: cols, Index: true})
		return e.validateAndReplace(nt, uniqueCheck(ent, name, cols))
	})
}

func (e *Engine) dropIndex(ctx context.Context, x *parser.Drop) error {
	return e.ddl(ctx, func() error {
		for _, name := range x.Names {
			t, unique, pos := e.indexOwner(name)
			if t == nil {
				if x.IfExists {
					continue
				}
				return pgerror.New(pgcode.UndefinedObject, "index %q does not exist", name)
			}
			nt := copyEntry(t)
			switch {
			case unique && (pos < 0 || !t.Uniques[pos].Index):
				return pgerror.New(pgcode.DependentObjectsStillExist, "cannot drop index %s because constraint %s on table %s requires it", name, name, t.Name).
					WithHint("You can drop constraint %s on table %s instead.", name, t.Name)
			case unique:
				nt.Uniques = append(nt.Uniques[:pos:pos], nt.Uniques[pos+1:]...)
			default:
				nt.Indexes = append(nt.Indexes[:pos:pos], nt.Indexes[pos+1:]...)
			}
			if err := e.replaceTable(nt); err != nil {
				return err
			}
		}
		return nil
	})
}

// uniqueCheck returns a row check that fails on the second row holding a
// key of cols, as building a unique index does.
func uniqueCheck(ent *storage.CatalogEntry, name string, cols []int) func(types.Row) error {
	seen := map[string]bool{}
	return func(r types.Row) error {
		k, ok := uniqueKey(r, cols)
		if !ok {
			return nil
		}
		if seen[k] {
			var names, vals []string
			for _, c := range cols {
				names = append(names, ent.Columns[c].Name)
				vals = append(vals, types.FormatText(r[c], ent.Columns[c].Type()))
			}
			return pgerror.New(pgcode.UniqueViolation, "could not create unique index %q", name).
				WithDetail("Key (%s)=(%s) is duplicated.", strings.Join(names, ", "), strings.Join(vals, ", "))
		}
		seen[k] = true
		return nil
	}
}
