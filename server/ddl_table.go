package server

import (
	"fmt"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/storage"
)

// This file turns CREATE TABLE's constraints, defaults, SERIAL and
// identity columns into the table's catalog entry, naming constraints and
// sequences as PostgreSQL does (t_col_check, t_check, t_col_key,
// t_col_seq).

// tableExtras is what CREATE TABLE adds to a table entry beyond columns
// and key.
type tableExtras struct {
	checks  []storage.CheckEntry
	uniques []storage.UniqueEntry
	// seqs are the sequences of SERIAL and identity columns, created with
	// the table (OwnedBy filled in then).
	seqs []*storage.CatalogEntry
}

// tableExtrasOf checks and names the constraints of CREATE TABLE x and
// sets the defaults and identities of cols.
func (e *Engine) tableExtrasOf(x *parser.CreateTable, cols []storage.ColumnEntry, key []int) (*tableExtras, error) {
	te := &tableExtras{}
	// Constraints are named after the bare table name; sequences live in
	// the table's schema.
	sch, bare := splitQualified(x.Name)
	taken := map[string]bool{bare + "_pkey": len(key) > 0}
	colIdx := map[string]int{}
	for i, c := range cols {
		colIdx[c.Name] = i
	}
	choose := func(given string, base string) (string, error) {
		if given != "" {
			if taken[given] {
				return "", pgerror.New(pgcode.DuplicateObject, "constraint %q for relation %q already exists", given, bare)
			}
			taken[given] = true
			return given, nil
		}
		return uniqueName(base, func(n string) bool { return taken[n] || e.cat.get(n) != nil }, taken), nil
	}
	addCheck := func(c parser.CheckDef) error {
		if len(c.Text) == 0 {
			return pgerror.New(pgcode.Syntax, "empty CHECK constraint")
		}
		refs := columnRefs(c.Expr)
		base := bare + "_check"
		if len(refs) == 1 {
			base = bare + "_" + refs[0] + "_check"
		}
		name, err := choose(c.Name, base)
		if err != nil {
			return err
		}
		te.checks = append(te.checks, storage.CheckEntry{Name: name, Expr: c.Text})
		return nil
	}
	addUnique := func(given string, names []string) error {
		var idx []int
		for _, n := range names {
			i, ok := colIdx[n]
			if !ok {
				return pgerror.New(pgcode.UndefinedColumn, "column %q named in key does not exist", n)
			}
			idx = append(idx, i)
		}
		name, err := choose(given, bare+"_"+strings.Join(names, "_")+"_key")
		if err != nil {
			return err
		}
		te.uniques = append(te.uniques, storage.UniqueEntry{Name: name, Cols: idx})
		return nil
	}
	for i, d := range x.Columns {
		for _, c := range d.Checks {
			if err := addCheck(c); err != nil {
				return nil, err
			}
		}
		if d.Unique {
			if err := addUnique(d.UniqueName, []string{d.Name}); err != nil {
				return nil, err
			}
		}
		if d.Default != nil && (d.Serial || d.Identity != "") {
			what := "serial"
			if d.Identity != "" {
				what = "identity"
			}
			return nil, pgerror.New(pgcode.Syntax, "multiple default values specified for column %q of table %q", d.Name, bare).
				WithHint("a %s column takes its default from its sequence", what)
		}
		cols[i].Default = d.DefaultText
		cols[i].Identity = d.Identity
		if d.Serial || d.Identity != "" {
			name := uniqueName(x.Name+"_"+d.Name+"_seq", func(n string) bool { return e.cat.get(n) != nil }, nil)
			o := d.IdentityOpts
			if o == nil {
				o = &parser.CreateSequence{Increment: 1}
			}
			def, err := sequenceEntry(d.Type, o.Increment, o.Start, o.MinValue, o.MaxValue, o.Cycle)
			if err != nil {
				return nil, err
			}
			def.OwnedCol = d.Name
			qname := pgQuoteIdent(name)
			if sch != "" {
				_, n := splitQualified(name)
				qname = pgQuoteIdent(sch) + "." + pgQuoteIdent(n)
			}
			te.seqs = append(te.seqs, &storage.CatalogEntry{Kind: kindSequence, Name: name, Sequence: def,
				SQL: "CREATE SEQUENCE " + qname})
			cols[i].Default = fmt.Sprintf("nextval(%s)", quoteLiteral(qname))
			cols[i].NotNull = true
		}
	}
	for _, c := range x.Checks {
		if err := addCheck(c); err != nil {
			return nil, err
		}
	}
	for _, u := range x.Uniques {
		if err := addUnique(u.Name, u.Columns); err != nil {
			return nil, err
		}
	}
	// Bind everything once now, so that errors come from CREATE TABLE.
	probe := &storage.CatalogEntry{Name: x.Name, Columns: cols, Key: key, Checks: te.checks, Uniques: te.uniques}
	if _, err := e.buildConstraints(probe); err != nil {
		return nil, err
	}
	return te, nil
}

// apply fills in a new table entry ent (its ID allocated) and persists its
// sequences. It runs inside the DDL pause.
func (te *tableExtras) apply(e *Engine, ent *storage.CatalogEntry) {
	ent.Checks, ent.Uniques = te.checks, te.uniques
	for _, s := range te.seqs {
		s.ID = e.cat.allocID()
		s.Sequence.OwnedBy = ent.ID
		e.persist(s)
	}
}

// uniqueName returns base, or base1, base2, ... the first not taken;
// the name is recorded in record when it is not nil.
func uniqueName(base string, taken func(string) bool, record map[string]bool) string {
	name := base
	for i := 1; taken(name); i++ {
		name = fmt.Sprintf("%s%d", base, i)
	}
	if record != nil {
		record[name] = true
	}
	return name
}

// columnRefs lists the distinct columns an expression references.
func columnRefs(x ast.ExprNode) []string {
	v := &colRefVisitor{seen: map[string]bool{}}
	x.Accept(v)
	return v.names
}

type colRefVisitor struct {
	seen  map[string]bool
	names []string
}

func (v *colRefVisitor) Enter(n ast.Node) (ast.Node, bool) {
	if c, ok := n.(*ast.ColumnNameExpr); ok && !v.seen[c.Name.Name.O] {
		v.seen[c.Name.Name.O] = true
		v.names = append(v.names, c.Name.Name.O)
	}
	return n, false
}

func (v *colRefVisitor) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// pgQuoteIdent quotes a name as PostgreSQL's quote_ident does.
func pgQuoteIdent(s string) string {
	plain := s != ""
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r == '_' || (i > 0 && r >= '0' && r <= '9')) {
			plain = false
		}
	}
	if plain {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
