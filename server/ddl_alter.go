package server

import (
	"context"

	"fmt"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"strings"

	"sluice/planner"
	"sluice/server/pgwire"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// This file runs TRUNCATE, ALTER TABLE, CREATE/DROP INDEX and the drop
// rules of owned sequences.

// tableEntry returns the table called name, or the PostgreSQL error.
func (e *Engine) tableEntry(name string) (*storage.CatalogEntry, error) {
	ent := e.cat.get(name)
	if ent == nil {
		return nil, pgerror.New(pgcode.UndefinedTable, "relation %q does not exist", name)
	}
	if ent.Kind != kindTable {
		return nil, pgerror.New(pgcode.WrongObjectType, "%q is not a table", name)
	}
	return ent, nil
}

// truncate runs TRUNCATE: every row of each table is deleted, and the
// deletions flow to the views like any DELETE's.
func (s *session) truncate(ctx context.Context, x *parser.Truncate) error {
	var ents []*storage.CatalogEntry
	for _, n := range x.Names {
		ent, err := s.e.tableEntry(n)
		if err != nil {
			return err
		}
		ents = append(ents, ent)
	}
	// Outside a block the tables are emptied in one transaction of their own.
	if s.tx == nil {
		s.tx = s.e.newTxn(true)
		defer func() {
			if s.tx != nil {
				s.tx.rollback()
				s.tx = nil
			}
		}()
		if err := s.truncateRows(ctx, ents, x.RestartIdentity); err != nil {
			return err
		}
		return s.commitImplicit(ctx)
	}
	return s.truncateRows(ctx, ents, x.RestartIdentity)
}

// truncateRows deletes every row of the tables in the open transaction and
// restarts their identities when asked.
func (s *session) truncateRows(ctx context.Context, ents []*storage.CatalogEntry, restartIdentity bool) error {
	ectx := s.evalCtx(nil)
	for _, ent := range ents {
		rel, err := relationOf(ent)
		if err != nil {
			return err
		}
		if _, err := s.delete(ctx, &planner.Delete{Table: rel}, ectx, nil); err != nil {
			return err
		}
		if restartIdentity {
			for _, seq := range s.e.ownedSequences(ent.ID) {
				st, err := s.e.seqState(seq)
				if err != nil {
					return err
				}
				if err := s.e.seqSet(seq.ID, st, seq.Sequence.Start, false); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// ownedSequences returns the sequences of table id's SERIAL and identity
// columns.
func (e *Engine) ownedSequences(id uint64) []*storage.CatalogEntry {
	var out []*storage.CatalogEntry
	for _, s := range e.cat.list(kindSequence) {
		if s.Sequence != nil && s.Sequence.OwnedBy == id {
			out = append(out, s)
		}
	}
	return out
}

// dropOwnedCheck refuses to drop a sequence a column default uses, as
// PostgreSQL does; with CASCADE the default goes.
func (e *Engine) dropOwnedCheck(ent *storage.CatalogEntry, cascade bool) error {
	if ent.Kind != kindSequence || ent.Sequence == nil {
		return nil
	}
	if ent.Sequence.OwnedBy == 0 {
		return e.seqUsers(ent)
	}
	t := e.cat.byIDGet(ent.Sequence.OwnedBy)
	if t == nil {
		return nil
	}
	if !cascade {
		return pgerror.New(pgcode.DependentObjectsStillExist, "cannot drop sequence %s because other objects depend on it", ent.Name).
			WithDetail("default value for column %s of table %s depends on sequence %s", ent.Sequence.OwnedCol, t.Name, ent.Name).
			WithHint("Use DROP ... CASCADE to drop the dependent objects too.")
	}
	nt := copyEntry(t)
	for i := range nt.Columns {
		if nt.Columns[i].Name == ent.Sequence.OwnedCol {
			nt.Columns[i].Default, nt.Columns[i].Identity = "", ""
		}
	}
	return e.replaceTable(nt)
}

// dropOwned drops the sequences owned by a dropped table.
func (e *Engine) dropOwned(ent *storage.CatalogEntry) {
	if ent.Kind == kindSequence {
		e.seqs.mu.Lock()
		delete(e.seqs.byID, ent.ID)
		e.seqs.mu.Unlock()
		return
	}
	if ent.Kind != kindTable {
		return
	}
	for _, s := range e.ownedSequences(ent.ID) {
		e.dropOne(s)
	}
}

// copyEntry returns a copy of a catalog entry whose column and constraint
// slices may be changed.
func copyEntry(ent *storage.CatalogEntry) *storage.CatalogEntry {
	c := *ent
	c.Owner = entryOwner(ent) // a rewritten table keeps its owner
	c.Columns = append([]storage.ColumnEntry(nil), ent.Columns...)
	c.Checks = append([]storage.CheckEntry(nil), ent.Checks...)
	c.Uniques = append([]storage.UniqueEntry(nil), ent.Uniques...)
	c.Indexes = append([]storage.IndexEntry(nil), ent.Indexes...)
	return &c
}

// replaceTable installs a changed entry of a running table (same id,
// same row shape): the catalog entry is persisted with the next epoch and
// the table's writer takes the new name and constraints. The caller runs
// inside the DDL pause.
func (e *Engine) replaceTable(nt *storage.CatalogEntry) error {
	return e.validateAndReplace(nt, nil)
}

// validateAndReplace runs check (if any) over the table's rows and, if it passes,
// installs nt, holding the writer's lock throughout so that no write
// slips in between. The caller runs inside the DDL pause.
func (e *Engine) validateAndReplace(nt *storage.CatalogEntry, check func(types.Row) error) error {
	cons, err := e.buildConstraints(nt)
	if err != nil {
		return err
	}
	nt.SQL = tableSQL(nt)
	tw, err := e.tableWriter(nt.ID)
	if err != nil {
		return err
	}
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if check != nil {
		if err := e.scanMatching(tw, nil, nil, func(_ []byte, r types.Row) error { return check(r) }); err != nil {
			return err
		}
	}
	return e.installTable(tw, nt, cons)
}

// installTable gives the writer the new entry's name and constraints and
// puts the entry in the catalog. The caller holds tw.mu.
func (e *Engine) installTable(tw *tableWriter, nt *storage.CatalogEntry, cons *tableConstraints) error {
	if err := tableInUse(tw); err != nil {
		return err
	}
	tw.name, tw.cols, tw.cons = nt.Name, nt.Cols(), cons
	if old := e.cat.byIDGet(nt.ID); old != nil && old.Name != nt.Name {
		e.cat.remove(old)
	}
	e.persist(nt)
	return nil
}

// tableSQL renders a table entry as CREATE TABLE, for SHOW CREATE TABLE
// after ALTER TABLE.
func tableSQL(ent *storage.CatalogEntry) string {
	var parts []string
	for _, c := range ent.Columns {
		p := pgQuoteIdent(c.Name) + " " + c.Type().String()
		if c.Identity != "" {
			p += " GENERATED " + strings.ToUpper(c.Identity) + " AS IDENTITY"
		} else if c.Default != "" {
			p += " DEFAULT " + c.Default
		}
		if c.NotNull {
			p += " NOT NULL"
		}
		parts = append(parts, p)
	}
	if len(ent.Key) > 0 {
		var ks []string
		for _, k := range ent.Key {
			ks = append(ks, pgQuoteIdent(ent.Columns[k].Name))
		}
		parts = append(parts, "PRIMARY KEY ("+strings.Join(ks, ", ")+")")
	}
	for _, u := range ent.Uniques {
		if u.Index {
			continue
		}
		var cs []string
		for _, k := range u.Cols {
			cs = append(cs, pgQuoteIdent(ent.Columns[k].Name))
		}
		parts = append(parts, "CONSTRAINT "+pgQuoteIdent(u.Name)+" UNIQUE ("+strings.Join(cs, ", ")+")")
	}
	for _, c := range ent.Checks {
		parts = append(parts, "CONSTRAINT "+pgQuoteIdent(c.Name)+" CHECK ("+c.Expr+")")
	}
	return "CREATE TABLE " + pgQuoteIdent(ent.Name) + " (" + strings.Join(parts, ", ") + ")"
}

// dependentsErr is the 2BP01 refusal of a change to a table that views
// or sinks read: they are planned by name and column, so Sluice does not
// carry the change through.
func (e *Engine) dependentsErr(what string, ent *storage.CatalogEntry) error {
	deps := e.cat.dependents(ent.ID)
	if len(deps) == 0 {
		return nil
	}
	var lines []string
	for _, d := range deps {
		lines = append(lines, fmt.Sprintf("%s %s depends on table %s", d.Kind, d.Name, ent.Name))
	}
	return pgerror.New(pgcode.DependentObjectsStillExist, "cannot %s because other objects depend on it", what).
		WithDetail("%s", strings.Join(lines, "\n")).
		WithHint("Sluice plans views and sinks by name: drop them (DROP ... CASCADE), alter the table, then create them again.")
}

// alterTable runs ALTER TABLE.
func (s *session) alterTable(ctx context.Context, x *parser.AlterTable, w pgwire.ResultWriter) error {
	if x.Action == "owner to" {
		return s.alterOwner(ctx, x, w)
	}
	e := s.e
	ent := e.cat.get(x.Name)
	if ent == nil && x.IfExists {
		return w.Notice(fmt.Sprintf("relation %q does not exist, skipping", x.Name))
	}
	ent, err := e.tableEntry(x.Name)
	if err != nil {
		return err
	}
	col := -1
	for i, c := range ent.Columns {
		if c.Name == x.Column {
			col = i
		}
	}
	if x.Action != "add column" && x.Action != "rename" && !strings.HasSuffix(x.Action, "constraint") && col < 0 {
		if x.Action == "drop column" && x.ColIfExists {
			return w.Notice(fmt.Sprintf("column %q of relation %q does not exist, skipping", x.Column, x.Name))
		}
		return pgerror.New(pgcode.UndefinedColumn, "column %q of relation %q does not exist", x.Column, x.Name)
	}
	nt := copyEntry(ent)
	switch x.Action {
	case "rename":
		if err := e.dependentsErr(fmt.Sprintf("rename table %s", ent.Name), ent); err != nil {
			return err
		}
		if exists, err := e.checkName(x.NewName, false); exists || err != nil {
			return err
		}
		nt.Name = x.NewName
	case "rename column":
		if err := e.dependentsErr(fmt.Sprintf("rename column %s of table %s", x.Column, ent.Name), ent); err != nil {
			return err
		}
		for _, c := range nt.Columns {
			if c.Name == x.NewName {
				return pgerror.New(pgcode.DuplicateColumn, "column %q of relation %q already exists", x.NewName, ent.Name)
			}
		}
		for _, ch := range nt.Checks {
			chx, err := parser.ParseExpr(ch.Expr)
			if err != nil {
				return err
			}
			for _, r := range columnRefs(chx) {
				if r == x.Column {
					return pgerror.Unsupported("renaming column %q, which check constraint %q uses", x.Column, ch.Name).
						WithHint("drop and re-create the table with the new name")
				}
			}
		}
		nt.Columns[col].Name = x.NewName
	case "set default":
		if nt.Columns[col].Identity != "" {
			return pgerror.New(pgcode.Syntax, "column %q of relation %q is an identity column", x.Column, ent.Name).
				WithHint("Use ALTER TABLE ... ALTER COLUMN ... DROP IDENTITY instead.")
		}
		nt.Columns[col].Default = x.DefaultText
	case "drop default":
		if nt.Columns[col].Identity != "" {
			return pgerror.New(pgcode.Syntax, "column %q of relation %q is an identity column", x.Column, ent.Name).
				WithHint("Use ALTER TABLE ... ALTER COLUMN ... DROP IDENTITY instead.")
		}
		nt.Columns[col].Default = ""
	case "drop not null":
		for _, k := range nt.Key {
			if k == col {
				return pgerror.New(pgcode.InvalidTableDefinition, "column %q is in a primary key", x.Column)
			}
		}
		if nt.Columns[col].Identity != "" {
			return pgerror.New(pgcode.Syntax, "column %q of relation %q is an identity column", x.Column, ent.Name)
		}
		nt.Columns[col].NotNull = false
	case "set not null":
		nt.Columns[col].NotNull = true
		return e.ddl(ctx, func() error {
			return e.validateAndReplace(nt, func(r types.Row) error {
				if r[col].IsNull() {
					return pgerror.New(pgcode.NotNullViolation, "column %q of relation %q contains null values", x.Column, ent.Name)
				}
				return nil
			})
		})
	case "add column", "drop column":
		return s.alterColumns(ctx, x, ent, col, w)
	case "add constraint":
		return e.addConstraint(ctx, x, ent)
	case "drop constraint":
		return e.dropConstraint(ctx, x, ent, w)
	default:
		return pgerror.Unsupported("ALTER TABLE %s", x.Action)
	}
	return e.ddl(ctx, func() error { return e.replaceTable(nt) })
}

// seqUsers refuses to drop a sequence a column default calls nextval on.
func (e *Engine) seqUsers(seq *storage.CatalogEntry) error {
	for _, t := range e.cat.list(kindTable) {
		for _, c := range t.Columns {
			if c.Default == "" {
				continue
			}
			x, err := parser.ParseExpr(c.Default)
			if err != nil {
				continue
			}
			v := &seqCallVisitor{}
			x.Accept(v)
			for _, n := range v.names {
				if seqNameOf(n) == seq.Name {
					return pgerror.New(pgcode.DependentObjectsStillExist, "cannot drop sequence %s because other objects depend on it", seq.Name).
						WithDetail("default value for column %s of table %s depends on sequence %s", c.Name, t.Name, seq.Name).
						WithHint("Use DROP ... CASCADE to drop the dependent objects too.")
				}
			}
		}
	}
	return nil
}

// seqCallVisitor collects the constant arguments of nextval calls.
type seqCallVisitor struct{ names []string }

func (v *seqCallVisitor) Enter(n ast.Node) (ast.Node, bool) {
	if f, ok := n.(*ast.FuncCallExpr); ok && f.FnName.L == "nextval" && len(f.Args) == 1 {
		if c, ok := f.Args[0].(ast.ValueExpr); ok {
			if s, ok := c.GetValue().(string); ok {
				v.names = append(v.names, s)
			}
		}
	}
	return n, false
}

func (v *seqCallVisitor) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// tableInUse refuses to change a table's definition while an open
// transaction block holds rows of it: they were not checked against the
// new definition (and a rebuilt table would not receive them). The caller
// holds tw.mu.
func tableInUse(tw *tableWriter) error {
	if len(tw.locks) > 0 {
		return pgerror.New("55006", "cannot ALTER TABLE \"%s\" because it is being used by an open transaction block", tw.name).
			WithHint("Commit or roll back the blocks that write the table, then retry.")
	}
	return nil
}
