package server

import (
	"context"
	"fmt"
	"strings"

	"sluice/exec/eval"
	"sluice/server/pgwire"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// ALTER TABLE ADD CONSTRAINT (CHECK, UNIQUE) and DROP CONSTRAINT. A new
// constraint is checked against every existing row before it is
// installed, as PostgreSQL does.

// constraintNames returns the names of a table's constraints.
func constraintNames(ent *storage.CatalogEntry) map[string]bool {
	names := map[string]bool{}
	if len(ent.Key) > 0 {
		names[ent.Name+"_pkey"] = true
	}
	for _, c := range ent.Checks {
		names[c.Name] = true
	}
	for _, u := range ent.Uniques {
		names[u.Name] = true
	}
	return names
}

func (e *Engine) addConstraint(ctx context.Context, x *parser.AlterTable, ent *storage.CatalogEntry) error {
	taken := constraintNames(ent)
	_, bare := relSchema(ent.Name)
	choose := func(given, base string) (string, error) {
		if given != "" {
			if taken[given] {
				return "", pgerror.New(pgcode.DuplicateObject, "constraint %q for relation %q already exists", given, bare)
			}
			return given, nil
		}
		return uniqueName(base, func(n string) bool { return taken[n] || e.cat.get(n) != nil }, nil), nil
	}
	nt := copyEntry(ent)
	switch {
	case x.Check != nil:
		refs := columnRefs(x.Check.Expr)
		base := bare + "_check"
		if len(refs) == 1 {
			base = bare + "_" + refs[0] + "_check"
		}
		name, err := choose(x.Check.Name, base)
		if err != nil {
			return err
		}
		nt.Checks = append(nt.Checks, storage.CheckEntry{Name: name, Expr: x.Check.Text})
		bound, err := e.newPlanner().BindRowExpr(bare, ent.Cols(), x.Check.Expr, types.TBool)
		if err != nil {
			return err
		}
		fn, err := eval.Compile(bound, &eval.Context{})
		if err != nil {
			return err
		}
		return e.ddl(ctx, func() error {
			return e.validateAndReplace(nt, func(r types.Row) error {
				d, err := fn(r)
				if err != nil {
					return err
				}
				if d.K == types.KBool && d.I == 0 {
					return pgerror.New(pgcode.CheckViolation, "check constraint %q of relation %q is violated by some row", name, bare)
				}
				return nil
			})
		})
	case x.Unique != nil:
		var cols []int
		for _, c := range x.Unique.Columns {
			found := -1
			for i, ce := range ent.Columns {
				if ce.Name == c {
					found = i
				}
			}
			if found < 0 {
				return pgerror.New(pgcode.UndefinedColumn, "column %q named in key does not exist", c)
			}
			cols = append(cols, found)
		}
		name, err := choose(x.Unique.Name, bare+"_"+strings.Join(x.Unique.Columns, "_")+"_key")
		if err != nil {
			return err
		}
		nt.Uniques = append(nt.Uniques, storage.UniqueEntry{Name: name, Cols: cols})
		return e.ddl(ctx, func() error { return e.validateAndReplace(nt, uniqueCheck(ent, name, cols)) })
	}
	return pgerror.Unsupported("this kind of ADD CONSTRAINT")
}

func (e *Engine) dropConstraint(ctx context.Context, x *parser.AlterTable, ent *storage.CatalogEntry, w pgwire.ResultWriter) error {
	_, bare := relSchema(ent.Name)
	if len(ent.Key) > 0 && x.Constraint == ent.Name+"_pkey" {
		return pgerror.Unsupported("dropping a primary key").WithHint("rows are stored by their primary key: create a new table and INSERT ... SELECT into it")
	}
	nt := copyEntry(ent)
	found := false
	nt.Checks = nil
	for _, c := range ent.Checks {
		if c.Name == x.Constraint {
			found = true
			continue
		}
		nt.Checks = append(nt.Checks, c)
	}
	nt.Uniques = nil
	for _, u := range ent.Uniques {
		if u.Name == x.Constraint && !u.Index {
			found = true
			continue
		}
		nt.Uniques = append(nt.Uniques, u)
	}
	if !found {
		if x.ColIfExists {
			return w.Notice(fmt.Sprintf("constraint %q of relation %q does not exist, skipping", x.Constraint, bare))
		}
		return pgerror.New(pgcode.UndefinedObject, "constraint %q of relation %q does not exist", x.Constraint, bare)
	}
	return e.ddl(ctx, func() error { return e.replaceTable(nt) })
}
