package server

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"sluice/exec/connector"
	"sluice/server/pgwire"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// ALTER SOURCE … ADD COLUMN (issue 16 item 3). A source's columns are
// what its decoders produce from each record (a JSON field by name, a CSV
// field by position, an Avro or Protobuf field by name): a producer that
// starts sending a new field needs a column to read it into. The jobs
// already reading the source run from their stored plans, whose source
// nodes list the columns they were planned with, so they go on exactly as
// before (also after a restart); views created after the ALTER see the
// column, NULL in records without the field. The connector validates the
// widened definition as it did the CREATE (a format that cannot produce
// the column refuses it), and the catalog keeps the source's CREATE text
// with the column added to its list, so that SHOW CREATE SOURCE gives
// what a new source would be created with.

// alterSource runs ALTER SOURCE … ADD COLUMN.
func (s *session) alterSource(ctx context.Context, x *parser.AlterTable, w pgwire.ResultWriter) error {
	e := s.e
	ent := e.cat.get(x.Name)
	if ent == nil {
		if x.IfExists {
			return w.Notice(fmt.Sprintf("relation %q does not exist, skipping", x.Name))
		}
		return pgerror.New(pgcode.UndefinedTable, "relation %q does not exist", x.Name)
	}
	if ent.Kind != kindSource {
		return pgerror.New(pgcode.WrongObjectType, "%q is not a source", x.Name).
			WithHint("ALTER %s … ADD COLUMN changes a %s", strings.ToUpper(ent.Kind), ent.Kind)
	}
	for _, c := range ent.Columns {
		if strings.EqualFold(c.Name, x.Column) {
			if x.IfNotExists {
				return w.Notice(fmt.Sprintf("column %q of relation %q already exists, skipping", x.Column, ent.Name))
			}
			return pgerror.New(pgcode.DuplicateColumn, "column %q of relation %q already exists", x.Column, ent.Name)
		}
	}
	def := columnDefText(x.Text())
	if def == "" {
		return pgerror.New(pgcode.Syntax, "cannot read the column definition of %q", x.Text())
	}
	text, err := addSourceColumnSQL(ent.SQL, def)
	if err != nil {
		return err
	}
	f, err := connector.LookupSource(ent.Connector)
	if err != nil {
		return err
	}
	declared := make([]types.Column, 0, len(ent.Columns)+1)
	for _, c := range ent.Columns {
		declared = append(declared, types.Column{Name: c.Name, Type: c.Type()})
	}
	declared = append(declared, types.Column{Name: x.Column, Type: x.Def.Type})
	resolved, err := e.policy().ResolveOptions(ent.Options)
	if err != nil {
		return err
	}
	cols, err := f.Validate(connector.SourceConfig{Name: ent.Name, Columns: declared, Key: ent.Key, Options: resolved, Policy: e.policy()})
	if err != nil {
		return err
	}
	var ccols []storage.ColumnEntry
	for _, c := range cols {
		ccols = append(ccols, storage.ColumnOf(c))
	}
	return e.ddl(ctx, func() error {
		cur := e.cat.get(x.Name)
		if cur == nil || cur.ID != ent.ID || len(cur.Columns) != len(ent.Columns) {
			return pgerror.New(pgcode.SerializationFailure, "source %q changed during ALTER SOURCE", x.Name).
				WithHint("Retry the statement.")
		}
		nt := copyEntry(cur)
		nt.Columns, nt.SQL = ccols, text
		e.persist(nt)
		return nil
	})
}

// addColumnRE finds the column definition of ALTER SOURCE … ADD [COLUMN]
// [IF NOT EXISTS] def.
var addColumnRE = regexp.MustCompile(`(?is)\badd\s+(?:column\s+)?(?:if\s+not\s+exists\s+)?(.*?)[\s;]*$`)

// columnDefText returns the column definition of an ALTER SOURCE … ADD
// COLUMN statement's text, as written ("" if none).
func columnDefText(stmt string) string {
	m := addColumnRE.FindStringSubmatch(stmt)
	if m == nil {
		return ""
	}
	return strings.TrimSpace(m[1])
}

// createSourceHeadRE matches CREATE SOURCE [IF NOT EXISTS] name up to the
// opening parenthesis of its column list.
var createSourceHeadRE = regexp.MustCompile(`(?is)^\s*create\s+source\s+(?:if\s+not\s+exists\s+)?(?:"(?:[^"]|"")*"|[^\s(."]+)(?:\s*\.\s*(?:"(?:[^"]|"")*"|[^\s(."]+))*\s*\(`)

// addSourceColumnSQL returns the CREATE SOURCE text sql with column
// definition def added at the end of its column list. A source declared
// without a column list (its columns come from a schema) has none to add
// to.
func addSourceColumnSQL(sql, def string) (string, error) {
	loc := createSourceHeadRE.FindStringIndex(sql)
	if loc == nil {
		return "", pgerror.Unsupported("ALTER SOURCE ADD COLUMN on a source without declared columns").
			WithHint("its columns come from its schema; create another source to read a changed schema")
	}
	depth, i := 1, loc[1]
	for ; i < len(sql) && depth > 0; i++ {
		switch c := sql[i]; c {
		case '(':
			depth++
		case ')':
			depth--
		case '\'', '"':
			j := i + 1
			for j < len(sql) && (sql[j] != c || (j+1 < len(sql) && sql[j+1] == c)) {
				if sql[j] == c {
					j++ // a doubled quote
				}
				j++
			}
			i = j
		}
	}
	if depth != 0 {
		return "", pgerror.New(pgcode.DataCorrupted, "the stored definition of the source has an unbalanced column list")
	}
	close := i - 1 // the list's ')'
	body := strings.TrimSpace(sql[loc[1]:close])
	sep := ", "
	if body == "" {
		sep = ""
	}
	// A table constraint (PRIMARY KEY (…), WATERMARK FOR …) may close the
	// list; a column after it is still a column.
	end := len(strings.TrimRight(sql[:close], " \t\r\n"))
	return sql[:end] + sep + def + sql[end:], nil
}
