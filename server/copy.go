package server

import (
	"context"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/planner/cat"
	"sluice/server/pgwire"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// COPY: COPY t [(cols)] FROM STDIN and COPY t [(cols)] | (query) TO
// STDOUT in the text, CSV and binary formats, over the COPY sub-protocol
// (pgwire.Copier). Options are checked as PostgreSQL's ProcessCopyOptions
// checks them, with its codes and messages. COPY FROM parses the whole
// stream first (copyfrom.go, on the decode pipeline of copypipe.go) and
// inserts every row as one statement (the bulk path of bulkinsert.go
// outside a transaction block), so a bad row loads nothing; the error names the line as
// PostgreSQL's CONTEXT does (`COPY t, line 3, column v: "abc"`). Server
// files and programs are refused: the server's file system is not the
// client's business (psql's \copy streams a client file through STDIN).

// Copy formats.
const (
	copyText = iota
	copyCSV
	copyBinary
)

// copyOpts are the checked options of one COPY.
type copyOpts struct {
	format     int
	header     bool
	match      bool // HEADER MATCH
	delim      byte
	null       string
	quote      byte
	escape     byte
	forceQuote []bool // per copied column (TO)
	forceNN    []bool // FORCE_NOT_NULL, per copied column (FROM)
	forceNull  []bool // FORCE_NULL, per copied column (FROM)
	// pending force lists, resolved once the copied columns are known
	fqList, fnnList, fnList []string
	fqStar                  bool
	// loc is the session's TimeZone: timestamptz text is read and
	// written in it (nil: UTC).
	loc *time.Location
}

func conflicting() error {
	return pgerror.New(pgcode.Syntax, "conflicting or redundant options")
}

// copyBool is defGetBoolean.
func copyBool(o parser.CopyOption) (bool, error) {
	if !o.HasValue && !o.IsList && !o.Star {
		return true, nil
	}
	switch strings.ToLower(o.Value) {
	case "true", "on", "1":
		return true, nil
	case "false", "off", "0":
		return false, nil
	}
	return false, pgerror.New(pgcode.Syntax, "%s requires a Boolean value", o.Name)
}

// copyString is defGetString.
func copyString(o parser.CopyOption) (string, error) {
	if !o.HasValue {
		return "", pgerror.New(pgcode.Syntax, "%s requires a parameter", o.Name)
	}
	return o.Value, nil
}

// validEncodings are PostgreSQL's encoding names (normalized: lower case,
// letters and digits only), so that a misspelt one is 22023 and a real
// one Sluice cannot convert is 0A000.
var validEncodings = wordSet(`sqlascii eucjp euccn euckr euctw eucjis2004 utf8 unicode mule
latin1 latin2 latin3 latin4 latin5 latin6 latin7 latin8 latin9 latin10 win1256 win1258 win866
win874 koi8r win1251 win1252 iso88595 iso88596 iso88597 iso88598 win1250 win1253 win1254 win1255
win1257 koi8u sjis big5 gbk uhc gb18030 johab shiftjis2004 iso885915 iso88591 iso88592 iso88593
iso88594 iso88599 iso885910 iso885913 iso885914 iso885916 koi8 alt win windows1252 windows1251
cp1252 cp1251 cp866 tcvn tcvn5712 vscii abc mskanji shiftjis`)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// copyOptions checks the options as ProcessCopyOptions does.
func copyOptions(x *parser.Copy) (*copyOpts, error) {
	o := &copyOpts{}
	var (
		fmtSet, freezeSet, headerSet, encSet bool
		delim, null, quote, escape           *string
		fqSet, fnnSet, fnSet                 bool
	)
	str := func(dst **string, op parser.CopyOption) error {
		if *dst != nil {
			return conflicting()
		}
		v, err := copyString(op)
		if err != nil {
			return err
		}
		*dst = &v
		return nil
	}
	list := func(set *bool, dst *[]string, op parser.CopyOption) error {
		if *set {
			return conflicting()
		}
		*set = true
		if !op.IsList {
			return pgerror.New(pgcode.InvalidParameterValue, "argument to option \"%s\" must be a list of column names", op.Name)
		}
		*dst = op.List
		return nil
	}
	for _, op := range x.Options {
		var err error
		switch op.Name {
		case "format":
			if fmtSet {
				return nil, conflicting()
			}
			fmtSet = true
			v, err := copyString(op)
			if err != nil {
				return nil, err
			}
			switch v {
			case "text":
				o.format = copyText
			case "csv":
				o.format = copyCSV
			case "binary":
				o.format = copyBinary
			default:
				return nil, pgerror.New(pgcode.InvalidParameterValue, "COPY format \"%s\" not recognized", v)
			}
		case "freeze":
			if freezeSet {
				return nil, conflicting()
			}
			freezeSet = true
			on, err := copyBool(op)
			if err != nil {
				return nil, err
			}
			if on && x.From {
				return nil, pgerror.New(pgcode.ObjectNotInPrerequisiteState, "cannot perform COPY FREEZE because the table was not created or truncated in the current subtransaction")
			}
		case "delimiter":
			err = str(&delim, op)
		case "null":
			err = str(&null, op)
		case "header":
			if headerSet {
				return nil, conflicting()
			}
			headerSet = true
			if op.HasValue && strings.ToLower(op.Value) == "match" {
				if !x.From {
					return nil, pgerror.Unsupported("cannot use \"%s\" with HEADER in COPY TO", op.Value)
				}
				o.header, o.match = true, true
				break
			}
			on, err := copyBool(op)
			if err != nil {
				return nil, pgerror.New(pgcode.Syntax, "%s requires a Boolean value or \"match\"", op.Name)
			}
			o.header = on
		case "quote":
			err = str(&quote, op)
		case "escape":
			err = str(&escape, op)
		case "force_quote":
			if fqSet {
				return nil, conflicting()
			}
			if op.Star {
				fqSet, o.fqStar = true, true
				break
			}
			err = list(&fqSet, &o.fqList, op)
		case "force_not_null":
			err = list(&fnnSet, &o.fnnList, op)
		case "force_null":
			err = list(&fnSet, &o.fnList, op)
		case "encoding":
			if encSet {
				return nil, conflicting()
			}
			encSet = true
			v, err := copyString(op)
			if err != nil {
				return nil, err
			}
			norm := strings.Map(func(r rune) rune {
				if r >= 'A' && r <= 'Z' {
					return r + 'a' - 'A'
				}
				if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
					return r
				}
				return -1
			}, v)
			if !validEncodings[norm] {
				return nil, pgerror.New(pgcode.InvalidParameterValue, "argument to option \"%s\" must be a valid encoding name", op.Name)
			}
			if norm != "utf8" && norm != "unicode" {
				return nil, pgerror.Unsupported("COPY with ENCODING '%s' is not supported: Sluice reads and writes UTF8 only", v).
					WithHint("Convert the data to UTF-8 (iconv), or leave out ENCODING.")
			}
		default:
			return nil, pgerror.New(pgcode.Syntax, "option \"%s\" not recognized", op.Name).WithPosition(op.Pos)
		}
		if err != nil {
			return nil, err
		}
	}
	bin, csv := o.format == copyBinary, o.format == copyCSV
	if bin && delim != nil {
		return nil, pgerror.New(pgcode.Syntax, "cannot specify DELIMITER in BINARY mode")
	}
	if bin && null != nil {
		return nil, pgerror.New(pgcode.Syntax, "cannot specify NULL in BINARY mode")
	}
	if bin && o.header {
		return nil, pgerror.Unsupported("cannot specify HEADER in BINARY mode")
	}
	o.delim, o.null = '\t', `\N`
	if csv {
		o.delim, o.null = ',', ""
	}
	if delim != nil {
		if len(*delim) != 1 {
			return nil, pgerror.Unsupported("COPY delimiter must be a single one-byte character")
		}
		o.delim = (*delim)[0]
	}
	if null != nil {
		o.null = *null
	}
	o.quote, o.escape = '"', '"'
	if quote != nil {
		if !csv {
			return nil, pgerror.Unsupported("COPY quote available only in CSV mode")
		}
		if len(*quote) != 1 {
			return nil, pgerror.Unsupported("COPY quote must be a single one-byte character")
		}
		o.quote, o.escape = (*quote)[0], (*quote)[0]
	}
	if escape != nil {
		if !csv {
			return nil, pgerror.Unsupported("COPY escape available only in CSV mode")
		}
		if len(*escape) != 1 {
			return nil, pgerror.Unsupported("COPY escape must be a single one-byte character")
		}
		o.escape = (*escape)[0]
	}
	if o.delim == '\n' || o.delim == '\r' {
		return nil, pgerror.New(pgcode.InvalidParameterValue, "COPY delimiter cannot be newline or carriage return")
	}
	if strings.ContainsAny(o.null, "\r\n") {
		return nil, pgerror.New(pgcode.InvalidParameterValue, "COPY null representation cannot use newline or carriage return")
	}
	if !csv && strings.IndexByte(`\.abcdefghijklmnopqrstuvwxyz0123456789`, o.delim) >= 0 {
		return nil, pgerror.New(pgcode.InvalidParameterValue, "COPY delimiter cannot be \"%s\"", string(o.delim))
	}
	if fqSet && !csv {
		return nil, pgerror.Unsupported("COPY force quote available only in CSV mode")
	}
	if fqSet && x.From {
		return nil, pgerror.Unsupported("COPY force quote only available using COPY TO")
	}
	if fnnSet && !csv {
		return nil, pgerror.Unsupported("COPY force not null available only in CSV mode")
	}
	if fnnSet && !x.From {
		return nil, pgerror.Unsupported("COPY force not null only available using COPY FROM")
	}
	if fnSet && !csv {
		return nil, pgerror.Unsupported("COPY force null available only in CSV mode")
	}
	if fnSet && !x.From {
		return nil, pgerror.Unsupported("COPY force null only available using COPY FROM")
	}
	if !bin && strings.IndexByte(o.null, o.delim) >= 0 {
		return nil, pgerror.Unsupported("COPY delimiter must not appear in the NULL specification")
	}
	if csv && o.delim == o.quote {
		return nil, pgerror.New(pgcode.InvalidParameterValue, "COPY delimiter and quote must be different")
	}
	if csv && strings.IndexByte(o.null, o.quote) >= 0 {
		return nil, pgerror.Unsupported("CSV quote character must not appear in the NULL specification")
	}
	return o, nil
}

// resolveForce turns the FORCE_* column lists into flags over the copied
// columns.
func (o *copyOpts) resolveForce(rel string, all, cols []types.Column) error {
	flags := func(names []string, what string) ([]bool, error) {
		if names == nil {
			return nil, nil
		}
		out := make([]bool, len(cols))
		for _, n := range names {
			found := false
			for i, c := range cols {
				if c.Name == n {
					out[i], found = true, true
				}
			}
			if !found {
				for _, c := range all {
					if c.Name == n {
						return nil, pgerror.New(pgcode.InvalidColumnReference, "%s column \"%s\" not referenced by COPY", what, n)
					}
				}
				return nil, pgerror.New(pgcode.UndefinedColumn, "column \"%s\" of relation \"%s\" does not exist", n, rel)
			}
		}
		return out, nil
	}
	var err error
	if o.fqStar {
		o.forceQuote = make([]bool, len(cols))
		for i := range o.forceQuote {
			o.forceQuote[i] = true
		}
	} else if o.forceQuote, err = flags(o.fqList, "FORCE_QUOTE"); err != nil {
		return err
	}
	if o.forceNN, err = flags(o.fnnList, "FORCE_NOT_NULL"); err != nil {
		return err
	}
	o.forceNull, err = flags(o.fnList, "FORCE_NULL")
	return err
}

// copyStmt runs COPY.
func (s *session) copyStmt(ctx context.Context, x *parser.Copy, w pgwire.ResultWriter) error {
	if x.Program {
		return pgerror.New(pgcode.InsufficientPrivilege, "must be superuser or have privileges of the pg_execute_server_program role to COPY to or from an external program").
			WithHint("Anyone can COPY to stdout or from stdin. psql's \\copy command also works for anyone.")
	}
	if x.File != "" {
		if x.From {
			return pgerror.New(pgcode.InsufficientPrivilege, "must be superuser or have privileges of the pg_read_server_files role to COPY from a file").
				WithHint("Anyone can COPY to stdout or from stdin. psql's \\copy command also works for anyone.")
		}
		return pgerror.New(pgcode.InsufficientPrivilege, "must be superuser or have privileges of the pg_write_server_files role to COPY to a file").
			WithHint("Anyone can COPY to stdout or from stdin. psql's \\copy command also works for anyone.")
	}
	if x.Where {
		return pgerror.Unsupported("COPY FROM ... WHERE is not supported").
			WithHint("Load the rows with COPY into a table, then INSERT INTO ... SELECT ... WHERE.")
	}
	opts, err := copyOptions(x)
	if err != nil {
		return err
	}
	opts.loc = s.loc
	cp, ok := w.(pgwire.Copier)
	if !ok {
		return pgerror.Unsupported("COPY is not supported here: the client connection cannot carry COPY data")
	}
	if x.Subscribe != nil {
		return s.copySubscribe(ctx, x, opts, cp)
	}
	if x.Query != nil {
		return s.copyQueryOut(ctx, x, opts, cp, w)
	}
	schema, name := "", x.Table
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		schema, name = name[:i], name[i+1:]
	}
	rel, err := s.catalogView().Resolve(schema, name)
	if err != nil {
		return err
	}
	if x.From {
		switch rel.Kind {
		case cat.Table:
		case cat.View:
			return pgerror.New(pgcode.WrongObjectType, "cannot copy to view \"%s\"", rel.Name).
				WithHint("To enable copying to a view, provide an INSTEAD OF INSERT trigger.")
		case cat.Source:
			return pgerror.New(pgcode.WrongObjectType, "cannot copy to source \"%s\"", rel.Name).
				WithHint("A source reads its rows from its connector; COPY into a table instead.")
		default:
			return pgerror.New(pgcode.WrongObjectType, "cannot copy to %s \"%s\"", rel.Kind, rel.Name)
		}
	} else if rel.Kind != cat.Table && rel.Kind != cat.System {
		return pgerror.New(pgcode.WrongObjectType, "cannot copy from %s \"%s\"", rel.Kind, rel.Name).
			WithHint("Try the COPY (SELECT ...) TO variant.")
	}
	idx, err := copyColumns(rel, x.Columns)
	if err != nil {
		return err
	}
	cols := make([]types.Column, len(idx))
	for i, k := range idx {
		cols[i] = rel.Columns[k]
	}
	if err := opts.resolveForce(rel.Name, rel.Columns, cols); err != nil {
		return err
	}
	if x.From {
		return s.copyFrom(ctx, rel, idx, cols, opts, cp, w)
	}
	q, err := parser.ParseOne(tableSelect(schema, rel.Name, cols))
	if err != nil {
		return err
	}
	return s.copyOut(ctx, q.(*parser.Query), opts, cp, w)
}

// copyColumns resolves a COPY column list to column indexes (every column
// when names is nil).
func copyColumns(rel *cat.Relation, names []string) ([]int, error) {
	if names == nil {
		idx := make([]int, len(rel.Columns))
		for i := range idx {
			idx[i] = i
		}
		return idx, nil
	}
	idx := make([]int, 0, len(names))
	seen := map[int]bool{}
	for _, n := range names {
		k := -1
		for i, c := range rel.Columns {
			if c.Name == n {
				k = i
				break
			}
		}
		if k < 0 {
			return nil, pgerror.New(pgcode.UndefinedColumn, "column \"%s\" of relation \"%s\" does not exist", n, rel.Name)
		}
		if seen[k] {
			return nil, pgerror.New(pgcode.DuplicateColumn, "column \"%s\" specified more than once", n)
		}
		seen[k] = true
		idx = append(idx, k)
	}
	return idx, nil
}

// tableSelect is the query COPY t (cols) TO reads.
func tableSelect(schema, table string, cols []types.Column) string {
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteIdent(c.Name))
	}
	b.WriteString(" FROM ")
	if schema != "" {
		b.WriteString(quoteIdent(schema) + ".")
	}
	b.WriteString(quoteIdent(table))
	return b.String()
}

// copyQueryOut runs COPY (query) TO STDOUT.
func (s *session) copyQueryOut(ctx context.Context, x *parser.Copy, opts *copyOpts, cp pgwire.Copier, w pgwire.ResultWriter) error {
	switch x.Query.Node.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
	default:
		return pgerror.Unsupported("COPY query must have a RETURNING clause")
	}
	return s.copyOut(ctx, x.Query, opts, cp, w)
}

// copyOut runs a query and streams its rows out as COPY data.
func (s *session) copyOut(ctx context.Context, q *parser.Query, opts *copyOpts, cp pgwire.Copier, w pgwire.ResultWriter) error {
	p := s.plannerWith(nil)
	p.Nulls = q.Nulls
	p.TableFuncs = q.TableFuncs
	pq, err := p.PlanQuery(q.Node)
	if err != nil {
		return err
	}
	if len(p.Params) > 0 {
		return pgerror.New(pgcode.UndefinedParameter, "there is no parameter $1")
	}
	cols := pq.Columns
	if opts.forceQuote == nil && opts.fqStar {
		opts.forceQuote = make([]bool, len(cols))
		for i := range opts.forceQuote {
			opts.forceQuote[i] = true
		}
	} else if opts.fqList != nil && opts.forceQuote == nil {
		// COPY (query): FORCE_QUOTE names the query's columns.
		if err := opts.resolveForce("", cols, cols); err != nil {
			return err
		}
	}
	if err := s.awaitReads(ctx); err != nil {
		return err
	}
	rows, err := s.e.selectRows(ctx, pq, s.evalCtx(nil), s.txSnapshot())
	if err != nil {
		return err
	}
	cw, enc, err := startCopyOut(cp, opts, cols)
	if err != nil {
		return err
	}
	for i, r := range rows {
		if i&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		b, err := enc.row(r)
		if err != nil {
			return err
		}
		if _, err := cw.Write(b); err != nil {
			return err
		}
	}
	if b := enc.end(); b != nil {
		if _, err := cw.Write(b); err != nil {
			return err
		}
	}
	if err := cw.Done(); err != nil {
		return err
	}
	return w.Complete(commandTag("COPY", len(rows)))
}

// startCopyOut begins a COPY TO STDOUT of cols (CopyOutResponse in the
// options' format, then the encoder's header, if any).
func startCopyOut(cp pgwire.Copier, opts *copyOpts, cols []types.Column) (pgwire.CopyWriter, *copyEncoder, error) {
	format := int16(0)
	if opts.format == copyBinary {
		format = 1
	}
	cw, err := cp.CopyOut(format, len(cols))
	if err != nil {
		return nil, nil, err
	}
	enc := &copyEncoder{opts: opts, cols: cols}
	if b := enc.start(); b != nil {
		if _, err := cw.Write(b); err != nil {
			return nil, nil, err
		}
	}
	return cw, enc, nil
}
