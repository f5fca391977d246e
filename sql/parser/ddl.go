package parser

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file is Sluice's own parser for the streaming DDL (CREATE TABLE,
// SOURCE, MATERIALIZED VIEW, VIEW, SINK, FUNCTION; DROP) and the utility
// statements (SHOW, SET, RESET, EXPLAIN, BEGIN, ...). Embedded
// expressions and queries go through the rewriter and the TiDB parser.

// create parses CREATE ....
func (r *rewriter) create() Statement {
	r.expectWord("create")
	orReplace := false
	if r.tok().isWord("or") {
		r.i++
		r.expectWord("replace")
		orReplace = true
	}
	t := r.tok()
	switch {
	case t.isWord("table"):
		r.i++
		return r.createTable()
	case t.isWord("source"):
		r.i++
		return r.createSource()
	case t.isWord("materialized"):
		r.i++
		r.expectWord("view")
		return r.createMV(orReplace)
	case t.isWord("view"):
		r.i++
		return r.createView(orReplace)
	case t.isWord("sink"):
		r.i++
		return r.createSink()
	case t.isWord("function"):
		r.i++
		return r.createFunction(orReplace)
	case t.isWord("temp"), t.isWord("temporary"), t.isWord("unlogged"):
		r.unsupported(t, "CREATE %s TABLE is not supported", strings.ToUpper(t.val))
	case t.isWord("index"):
		r.i++
		return r.createIndex(false)
	case t.isWord("unique") && r.peek(1).isWord("index"):
		r.i += 2
		return r.createIndex(true)
	case t.isWord("sequence"):
		r.i++
		return r.createSequence()
	case t.isWord("schema"):
		r.i++
		return r.createSchema()
	case t.isWord("secret"):
		r.i++
		return r.createSecret()
	case t.kind == tkIdent:
		switch t.val {
		case "index", "unique", "schema", "database", "user", "role", "sequence", "type", "secret",
			"connection", "aggregate", "extension", "trigger", "subscription", "publication", "domain",
			"policy", "rule", "operator", "cast", "collation", "server", "procedure", "tablespace", "subscribe":
			r.unsupported(t, "CREATE %s is not supported", strings.ToUpper(t.val))
		}
	}
	r.syntaxErr(t)
	return nil
}

// ifNotExists parses an optional IF NOT EXISTS.
func (r *rewriter) ifNotExists() bool {
	if r.tok().isWord("if") && r.peek(1).isWord("not") && r.peek(2).isWord("exists") {
		r.i += 3
		return true
	}
	return false
}

// relBody is what CREATE TABLE and CREATE SOURCE share.
type relBody struct {
	cols       []ColumnDef
	pk         []string
	wm         *Watermark
	with       Options
	format     string
	encode     string
	fmtOpts    Options
	includes   []Include
	appendOnly bool
	checks     []CheckDef
	uniques    []UniqueDef
}

func (r *rewriter) createTable() Statement {
	ct := &CreateTable{IfNotExists: r.ifNotExists()}
	ct.Name = r.nameChainString()
	if r.tok().isWord("as") {
		r.unsupported(r.tok(), "CREATE TABLE AS is not supported")
	}
	if !r.tok().isPunct("(") {
		r.syntaxErr(r.tok())
	}
	b := r.relBody(true)
	ct.Columns, ct.PrimaryKey, ct.Watermark = b.cols, b.pk, b.wm
	ct.With, ct.Format, ct.Encode, ct.FormatOptions = b.with, b.format, b.encode, b.fmtOpts
	ct.Includes, ct.AppendOnly = b.includes, b.appendOnly
	ct.Checks, ct.Uniques = b.checks, b.uniques
	return ct
}

func (r *rewriter) createSource() Statement {
	cs := &CreateSource{IfNotExists: r.ifNotExists()}
	cs.Name = r.nameChainString()
	b := r.relBody(false)
	cs.Columns, cs.PrimaryKey, cs.Watermark = b.cols, b.pk, b.wm
	cs.With, cs.Format, cs.Encode, cs.FormatOptions = b.with, b.format, b.encode, b.fmtOpts
	cs.Includes = b.includes
	if len(b.checks) > 0 || len(b.uniques) > 0 {
		r.fail(pgerror.Unsupported("CHECK and UNIQUE constraints on a source").WithHint("a source's rows come from outside; filter them in a view"))
	}
	for _, c := range b.cols {
		if c.Default != nil || c.Unique || len(c.Checks) > 0 || c.Serial || c.Identity != "" {
			r.fail(pgerror.Unsupported("DEFAULT, UNIQUE, CHECK and identity columns on a source").WithHint("a source's rows come from outside; compute values in a view"))
		}
	}
	if b.appendOnly {
		r.fail(pgerror.New(pgcode.Syntax, "APPEND ONLY is not valid for CREATE SOURCE"))
	}
	return cs
}

// relBody parses [( elements )] and the clauses after them.
func (r *rewriter) relBody(table bool) relBody {
	var b relBody
	if r.tok().isPunct("(") {
		r.i++
		if !r.tok().isPunct(")") {
			for {
				r.tableElement(&b)
				if r.tok().isPunct(",") {
					r.i++
					continue
				}
				break
			}
		}
		r.expectPunct(")")
	}
	for {
		t := r.tok()
		switch {
		case t.kind == tkEOF:
			r.checkColumns(&b)
			return b
		case t.isWord("append") && r.peek(1).isWord("only"):
			if !table {
				r.unsupported(t, "APPEND ONLY is only valid for CREATE TABLE")
			}
			r.i += 2
			b.appendOnly = true
		case t.isWord("on") && r.peek(1).isWord("conflict"):
			r.unsupported(t, "ON CONFLICT is not supported")
		case t.isWord("include"):
			r.i++
			what := r.tok()
			if what.kind != tkIdent {
				r.syntaxErr(what)
			}
			r.i++
			inc := Include{What: what.val}
			if r.tok().kind == tkString {
				inc.What += " " + r.tok().val
				r.i++
			}
			if r.tok().isWord("as") {
				r.i++
				a := r.tok()
				if !isName(a) {
					r.syntaxErr(a)
				}
				inc.Alias = a.val
				r.i++
			}
			b.includes = append(b.includes, inc)
		case t.isWord("with") && r.peek(1).isPunct("("):
			r.i++
			b.with = append(b.with, r.options()...)
		case t.isWord("format"):
			b.format, b.encode, b.fmtOpts = r.formatEncode()
		case t.isWord("row") && r.peek(1).isWord("format"):
			r.unsupported(t, "ROW FORMAT is not supported; use FORMAT ... ENCODE ...")
		case t.isWord("as"):
			r.unsupported(t, "CREATE TABLE AS is not supported")
		default:
			r.syntaxErr(t)
		}
	}
}

func (r *rewriter) checkColumns(b *relBody) {
	seen := map[string]bool{}
	for _, c := range b.cols {
		if seen[c.Name] {
			r.fail(pgerror.New(pgcode.DuplicateColumn, "column \"%s\" specified more than once", c.Name))
		}
		seen[c.Name] = true
	}
	for _, c := range b.cols {
		if c.PrimaryKey {
			if len(b.pk) > 0 && !(len(b.pk) == 1 && b.pk[0] == c.Name) {
				r.fail(pgerror.New(pgcode.InvalidObjectDefinition, "multiple primary keys for table are not allowed"))
			}
			b.pk = []string{c.Name}
		}
	}
	for k := range b.cols {
		for _, p := range b.pk {
			if b.cols[k].Name == p {
				b.cols[k].PrimaryKey = true
				b.cols[k].NotNull = true
			}
		}
	}
	for _, p := range b.pk {
		if !seen[p] && len(b.cols) > 0 {
			r.fail(pgerror.New(pgcode.UndefinedColumn, "column \"%s\" named in key does not exist", p))
		}
	}
}

// tableElement parses one column definition or table constraint.
func (r *rewriter) tableElement(b *relBody) {
	t := r.tok()
	switch {
	case t.isWord("primary") && r.peek(1).isWord("key"):
		r.i += 2
		if len(b.pk) > 0 {
			r.fail(pgerror.New(pgcode.InvalidObjectDefinition, "multiple primary keys for table are not allowed").WithPosition(charPos(r.src, t.pos)))
		}
		b.pk = r.identNames()
		return
	case t.isWord("constraint"):
		r.i++
		if !isName(r.tok()) {
			r.syntaxErr(r.tok())
		}
		name := r.tok().val
		r.i++
		switch {
		case r.tok().isWord("primary"):
			r.tableElement(b)
		case r.tok().isWord("unique"):
			r.i++
			b.uniques = append(b.uniques, UniqueDef{Name: name, Columns: r.identNames()})
		case r.tok().isWord("check"):
			c := r.checkClause()
			c.Name = name
			b.checks = append(b.checks, c)
		default:
			r.unsupported(r.tok(), "table constraints other than PRIMARY KEY, UNIQUE and CHECK are not supported")
		}
		return
	case t.isWord("unique"):
		r.i++
		b.uniques = append(b.uniques, UniqueDef{Columns: r.identNames()})
		return
	case t.isWord("check"):
		b.checks = append(b.checks, r.checkClause())
		return
	case t.isWord("foreign"), t.isWord("exclude"), t.isWord("like"):
		r.unsupported(t, "table constraint %s is not supported", strings.ToUpper(t.val))
	case t.isWord("watermark") && r.peek(1).isWord("for"):
		r.i += 2
		if b.wm != nil {
			r.unsupported(t, "only one WATERMARK is supported")
		}
		col := r.tok()
		if !isName(col) {
			r.syntaxErr(col)
		}
		r.i++
		r.expectWord("as")
		e := r.parseExpr(0)
		b.wm = &Watermark{Column: col.val, Expr: r.exprNode(e.f)}
		return
	}
	if !isName(t) {
		r.syntaxErr(t)
	}
	col := ColumnDef{Name: t.val}
	r.i++
	if st, ok := serialTypes[r.tok().val]; ok && r.tok().kind == tkIdent && !r.peek(1).isPunct("[") {
		r.i++
		col.Type, col.Serial, col.NotNull = st, true, true
	} else {
		tn := r.typeName()
		if tn.err != nil {
			r.fail(withPos(tn.err, charPos(r.src, tn.pos)))
		}
		col.Type = tn.t
	}
	r.columnConstraints(&col)
	b.cols = append(b.cols, col)
}

// columnConstraints parses the constraints and options after a column's
// type.
func (r *rewriter) columnConstraints(col *ColumnDef) {
	name := ""
	for {
		c := r.tok()
		switch {
		case c.isWord("not") && r.peek(1).isWord("null"):
			r.i += 2
			col.NotNull = true
		case c.isWord("null"):
			r.i++
		case c.isWord("primary") && r.peek(1).isWord("key"):
			r.i += 2
			col.PrimaryKey = true
			col.NotNull = true
		case c.isWord("default"):
			r.i++
			start := r.tok().pos
			e := r.parseExpr(0)
			col.Default = r.exprNode(e.f)
			col.DefaultText = r.src[start:r.peek(-1).end]
		case c.isWord("constraint"):
			r.i++
			if !isName(r.tok()) {
				r.syntaxErr(r.tok())
			}
			name = r.tok().val
			r.i++
			continue
		case c.isWord("generated") && (r.peek(1).isWord("always") || r.peek(1).isWord("by")):
			r.i++
			if r.tok().isWord("always") {
				r.i++
				col.Identity = IdentityAlways
			} else {
				r.i++
				r.expectWord("default")
				col.Identity = IdentityByDefault
			}
			r.expectWord("as")
			if !r.tok().isWord("identity") {
				r.unsupported(r.tok(), "generated columns are not supported")
			}
			r.i++
			if r.tok().isPunct("(") {
				r.i++
				col.IdentityOpts = &CreateSequence{Type: col.Type, Increment: 1}
				r.seqOptions(col.IdentityOpts, true)
				r.expectPunct(")")
			}
			col.NotNull = true
		case c.isWord("as"):
			r.unsupported(c, "generated columns are not supported")
		case c.isWord("unique"):
			r.i++
			col.Unique, col.UniqueName = true, name
		case c.isWord("check"):
			ch := r.checkClause()
			ch.Name = name
			col.Checks = append(col.Checks, ch)
		case c.isWord("references"), c.isWord("collate"):
			r.unsupported(c, "column constraint %s is not supported", strings.ToUpper(c.val))
		default:
			return
		}
		name = ""
	}
}

// serialTypes are the pseudo-types SERIAL, BIGSERIAL and SMALLSERIAL: an
// integer column with a sequence default.
var serialTypes = map[string]types.T{
	"serial": types.TInt4, "serial4": types.TInt4, "bigserial": types.TInt8, "serial8": types.TInt8,
	"smallserial": types.TInt2, "serial2": types.TInt2,
}

// checkClause parses CHECK (expr) [NO INHERIT].
func (r *rewriter) checkClause() CheckDef {
	r.expectWord("check")
	open := r.expectPunct("(")
	e := r.parseExpr(0)
	end := r.peek(-1).end
	r.expectPunct(")")
	if r.tok().isWord("no") && r.peek(1).isWord("inherit") {
		r.i += 2
	}
	return CheckDef{Expr: r.exprNode(e.f), Text: strings.TrimSpace(r.src[open.end:end])}
}

// withPos returns err with a position if it is a pgerror without one.
func withPos(err error, pos int) error {
	if pe, ok := err.(*pgerror.Error); ok && pe.Position == 0 {
		cp := *pe
		cp.Position = pos
		return &cp
	}
	return err
}

// options parses ( key = value, ... ).
func (r *rewriter) options() Options {
	r.expectPunct("(")
	var opts Options
	if r.tok().isPunct(")") {
		r.i++
		return opts
	}
	for {
		key := r.optionKey()
		if !r.tok().isOp("=") {
			r.syntaxErr(r.tok())
		}
		r.i++
		opts = append(opts, Option{Key: key, Value: r.optionValue()})
		if r.tok().isPunct(",") {
			r.i++
			continue
		}
		r.expectPunct(")")
		return opts
	}
}

// optionKey reads a dotted option key (words, numbers or a string).
func (r *rewriter) optionKey() string {
	t := r.tok()
	if t.kind == tkString {
		r.i++
		return strings.ToLower(t.val)
	}
	var parts []string
	for {
		t := r.tok()
		switch t.kind {
		case tkIdent, tkQIdent, tkNumber:
			parts = append(parts, strings.ToLower(t.val))
			r.i++
		default:
			r.syntaxErr(t)
		}
		// numbers may swallow the dot ("a.1.b" lexes a . 1.b? no: "1." then
		// "b"); accept a number ending in '.' as a segment followed by a dot
		if last := parts[len(parts)-1]; strings.HasSuffix(last, ".") {
			parts[len(parts)-1] = strings.TrimSuffix(last, ".")
			continue
		}
		if r.tok().isPunct(".") {
			r.i++
			continue
		}
		return strings.Join(parts, ".")
	}
}

// optionValue reads a string, a (signed) number or a bare word.
func (r *rewriter) optionValue() string {
	t := r.tok()
	switch {
	case t.kind == tkString:
		r.i++
		return t.val
	case t.kind == tkNumber:
		r.i++
		return t.val
	case (t.isOp("-") || t.isOp("+")) && r.peek(1).kind == tkNumber:
		r.i += 2
		if t.val == "-" {
			return "-" + r.peek(-1).val
		}
		return r.peek(-1).val
	case t.isWord("secret") && isName(r.peek(1)):
		// password = SECRET name (RisingWave): a reference, resolved when
		// the options reach the connector.
		r.i += 2
		return SecretRef(r.peek(-1).val)
	case t.isWord("secret") && r.peek(1).isPunct(".") && isName(r.peek(2)) && !r.peek(3).isPunct("."):
		// password = secret.name, the same reference.
		r.i += 3
		return SecretRef(r.peek(-1).val)
	case t.kind == tkIdent || t.kind == tkQIdent:
		r.i++
		v := r.src[t.pos:t.end]
		if t.kind == tkQIdent {
			v = t.val
		}
		// secret references etc.: keep following words of a dotted name
		for r.tok().isPunct(".") && isName(r.peek(1)) {
			v += "." + r.peek(1).val
			r.i += 2
		}
		return v
	}
	r.syntaxErr(t)
	return ""
}

// formatEncode parses FORMAT x ENCODE y [( options )] [KEY ENCODE z].
func (r *rewriter) formatEncode() (string, string, Options) {
	r.expectWord("format")
	f := r.tok()
	if f.kind != tkIdent {
		r.syntaxErr(f)
	}
	r.i++
	r.expectWord("encode")
	e := r.tok()
	if e.kind != tkIdent {
		r.syntaxErr(e)
	}
	r.i++
	var opts Options
	if r.tok().isPunct("(") {
		opts = r.options()
	}
	if r.tok().isWord("key") && r.peek(1).isWord("encode") && r.peek(2).kind == tkIdent {
		opts = append(opts, Option{Key: "key.encode", Value: strings.ToUpper(r.peek(2).val)})
		r.i += 3
	}
	return strings.ToUpper(f.val), strings.ToUpper(e.val), opts
}

// viewQuery finds the query of CREATE [MATERIALIZED] VIEW: everything after
// AS, less a trailing EMIT ON WINDOW CLOSE.
func (r *rewriter) viewQuery() (*Query, bool) {
	r.expectWord("as")
	lo := r.i
	hi := len(r.toks) - 1 // EOF
	eowc := false
	if hi-lo >= 4 && r.toks[hi-4].isWord("emit") && r.toks[hi-3].isWord("on") && r.toks[hi-2].isWord("window") && r.toks[hi-1].isWord("close") {
		hi -= 4
		eowc = true
	}
	if hi <= lo {
		r.i = hi
		r.syntaxErr(r.toks[hi])
	}
	q := r.subQuery(lo, hi)
	r.i = len(r.toks) - 1
	return q, eowc
}

func (r *rewriter) createMV(orReplace bool) Statement {
	mv := &CreateMaterializedView{IfNotExists: r.ifNotExists(), OrReplace: orReplace}
	mv.Name = r.nameChainString()
	if r.tok().isWord("with") && r.peek(1).isPunct("(") {
		r.unsupported(r.tok(), "CREATE MATERIALIZED VIEW ... WITH (...) is not supported")
	}
	q, eowc := r.viewQuery()
	mv.Query, mv.QueryText, mv.Parsed, mv.EmitOnWindowClose = q.Node, q.Text(), q, eowc
	return mv
}

func (r *rewriter) createView(orReplace bool) Statement {
	v := &CreateView{IfNotExists: r.ifNotExists(), OrReplace: orReplace}
	v.Name = r.nameChainString()
	if r.tok().isPunct("(") {
		v.Columns = r.identNames()
	}
	q, eowc := r.viewQuery()
	v.Query, v.QueryText, v.Parsed, v.EmitOnWindowClose = q.Node, q.Text(), q, eowc
	return v
}

func (r *rewriter) createSink() Statement {
	s := &CreateSink{IfNotExists: r.ifNotExists()}
	s.Name = r.nameChainString()
	if r.tok().isWord("into") {
		// RisingWave's sink into a Sluice table:
		// INTO t [(cols)] FROM x | AS query.
		r.i++
		s.Into = r.nameChainString()
		if r.tok().isPunct("(") {
			s.IntoColumns = r.identNames()
		}
	}
	switch t := r.tok(); {
	case t.isWord("from"):
		r.i++
		s.From = r.nameChainString()
	case t.isWord("as"):
		r.i++
		lo := r.i
		depth := 0
		hi := -1
		for j := lo; r.toks[j].kind != tkEOF; j++ {
			switch {
			case r.toks[j].isPunct("("):
				depth++
			case r.toks[j].isPunct(")"):
				depth--
			case depth == 0 && j > lo && r.toks[j].isWord("with") && r.toks[j+1].isPunct("("):
				hi = j
			}
			if hi >= 0 {
				break
			}
		}
		if hi < 0 {
			hi = len(r.toks) - 1
			for j := lo; j < hi; j++ {
				if r.toks[j].isWord("format") && r.toks[j+1].kind == tkIdent && r.toks[j+2].isWord("encode") {
					hi = j
					break
				}
			}
		}
		end := hi
		if hi-lo >= 4 && r.toks[hi-4].isWord("emit") && r.toks[hi-3].isWord("on") && r.toks[hi-2].isWord("window") && r.toks[hi-1].isWord("close") {
			end -= 4
			s.EmitOnWindowClose = true
		}
		if end <= lo {
			r.i = end
			r.syntaxErr(r.toks[end])
		}
		q := r.subQuery(lo, end)
		s.Query, s.QueryText, s.Parsed = q.Node, q.Text(), q
		r.i = hi
	default:
		r.syntaxErr(t)
	}
	for {
		t := r.tok()
		switch {
		case t.kind == tkEOF:
			return s
		case t.isWord("with") && r.peek(1).isPunct("("):
			r.i++
			s.With = append(s.With, r.options()...)
		case t.isWord("format"):
			s.Format, s.Encode, s.FormatOptions = r.formatEncode()
		default:
			r.syntaxErr(t)
		}
	}
}

// createFunction parses CREATE [OR REPLACE] FUNCTION.
func (r *rewriter) createFunction(orReplace bool) Statement {
	cf := &CreateFunction{OrReplace: orReplace, Language: "sql"}
	cf.Name = r.nameChainString()
	r.expectPunct("(")
	for !r.tok().isPunct(")") {
		cf.Args = append(cf.Args, r.funcArg())
		if r.tok().isPunct(",") {
			r.i++
			continue
		}
		if !r.tok().isPunct(")") {
			r.syntaxErr(r.tok())
		}
	}
	r.i++
	if !r.tok().isWord("returns") {
		r.syntaxErr(r.tok())
	}
	r.i++
	if r.tok().isWord("table") || r.tok().isWord("setof") {
		r.unsupported(r.tok(), "RETURNS %s is not supported", strings.ToUpper(r.tok().val))
	}
	tn := r.typeName()
	if tn.err != nil {
		r.fail(withPos(tn.err, charPos(r.src, tn.pos)))
	}
	cf.Returns = tn.t
	var bodyTok *token
	var returnFrag frag
	for {
		t := r.tok()
		switch {
		case t.kind == tkEOF:
			return r.finishFunction(cf, bodyTok, returnFrag)
		case t.isWord("language"):
			r.i++
			l := r.tok()
			if !isName(l) && l.kind != tkString {
				r.syntaxErr(l)
			}
			cf.Language = strings.ToLower(l.val)
			r.i++
		case t.isWord("as"):
			r.i++
			b := r.tok()
			if b.kind != tkString {
				r.syntaxErr(b)
			}
			bodyTok = &b
			r.i++
			if r.tok().isPunct(",") { // AS 'obj_file', 'link_symbol'
				r.i++
				if r.tok().kind != tkString {
					r.syntaxErr(r.tok())
				}
				r.i++
			}
		case t.isWord("return"):
			r.i++
			start := r.tok()
			e := r.parseExpr(0)
			returnFrag = e.f
			cf.Body = r.src[start.pos:r.toks[r.i-1].end]
		case t.isWord("immutable"), t.isWord("stable"), t.isWord("volatile"), t.isWord("strict"),
			t.isWord("leakproof"), t.isWord("window"):
			r.i++
		case t.isWord("not") && r.peek(1).isWord("leakproof"):
			r.i += 2
		case t.isWord("called") || t.isWord("returns") && r.peek(1).isWord("null"):
			// CALLED ON NULL INPUT | RETURNS NULL ON NULL INPUT
			for !r.tok().isWord("input") {
				if r.tok().kind == tkEOF {
					r.syntaxErr(r.tok())
				}
				r.i++
			}
			r.i++
		case t.isWord("parallel"), t.isWord("cost"), t.isWord("rows"):
			r.i += 2
		case t.isWord("security"), t.isWord("external") && r.peek(1).isWord("security"):
			for r.tok().isWord("external") || r.tok().isWord("security") || r.tok().isWord("definer") || r.tok().isWord("invoker") {
				r.i++
			}
		case t.isWord("using") && r.peek(1).isWord("link"):
			r.i += 2
			if r.tok().kind != tkString {
				r.syntaxErr(r.tok())
			}
			r.i++
		case t.isWord("with") && r.peek(1).isPunct("("):
			r.i++
			r.options()
		default:
			r.syntaxErr(t)
		}
	}
}

// funcArg parses [IN] [name] type.
func (r *rewriter) funcArg() FuncArg {
	if r.tok().isWord("in") {
		r.i++
	}
	if t := r.tok(); t.isWord("out") || t.isWord("inout") || t.isWord("variadic") {
		r.unsupported(t, "%s arguments are not supported", strings.ToUpper(t.val))
	}
	// Try the whole argument as a type; otherwise the first word is a name.
	save := r.i
	tn, j, err := parseTypeName(r.src, r.toks, r.i)
	if err == nil && tn.err == nil && (r.toks[j].isPunct(",") || r.toks[j].isPunct(")")) {
		r.i = j
		return FuncArg{Type: tn.t}
	}
	r.i = save
	n := r.tok()
	if !isName(n) {
		r.syntaxErr(n)
	}
	r.i++
	tn = r.typeName()
	if tn.err != nil {
		r.fail(withPos(tn.err, charPos(r.src, tn.pos)))
	}
	if r.tok().isWord("default") || r.tok().isOp("=") {
		r.unsupported(r.tok(), "argument defaults are not supported")
	}
	return FuncArg{Name: n.val, Type: tn.t}
}

// finishFunction parses a SQL function body into BodyExpr.
func (r *rewriter) finishFunction(cf *CreateFunction, body *token, ret frag) Statement {
	if body == nil && ret == nil {
		r.fail(pgerror.New(pgcode.InvalidObjectDefinition, "no function body specified"))
	}
	if body != nil && ret != nil {
		r.fail(pgerror.New(pgcode.Syntax, "duplicate function body specified"))
	}
	if ret != nil {
		cf.BodyExpr = r.exprNode(ret)
		return cf
	}
	cf.Body = body.val
	if cf.Language != "sql" {
		return cf
	}
	e, err := parseBodyExpr(cf.Body)
	if err != nil {
		if pe, ok := err.(*pgerror.Error); ok {
			cp := *pe
			cp.Position = charPos(r.src, body.pos)
			cp.Message = pe.Message + " (in function body)"
			r.fail(&cp)
		}
		r.fail(err)
	}
	cf.BodyExpr = e
	return cf
}

// parseBodyExpr parses a SQL function body: `SELECT expr`, `RETURN expr`
// or a bare expression, with an optional trailing semicolon.
func parseBodyExpr(body string) (e ast.ExprNode, err error) {
	toks, err := lex(body)
	if err != nil {
		return nil, err
	}
	// drop trailing semicolons
	n := len(toks) - 1
	for n > 0 && toks[n-1].isPunct(";") {
		n--
	}
	toks = stmtTokens(toks[:n], toks[len(toks)-1])
	err = catch(func() {
		r := newRewriter(body, toks)
		if r.tok().isWord("select") || r.tok().isWord("return") {
			r.i++
		}
		if r.tok().kind == tkEOF {
			r.syntaxErr(r.tok())
		}
		x := r.parseExpr(0)
		if r.tok().kind != tkEOF {
			r.unsupported(r.tok(), "SQL function bodies other than SELECT <expression> are not supported")
		}
		e = r.exprNode(x.f)
	})
	return e, err
}

// drop parses DROP kind [IF EXISTS] name, ... [CASCADE | RESTRICT].
func (r *rewriter) drop() Statement {
	r.expectWord("drop")
	d := &Drop{}
	t := r.tok()
	switch {
	case t.isWord("table"), t.isWord("source"), t.isWord("view"), t.isWord("sink"), t.isWord("function"),
		t.isWord("index"), t.isWord("sequence"), t.isWord("schema"), t.isWord("secret"):
		d.Kind = strings.ToUpper(t.val)
		if t.isWord("index") && r.peek(1).isWord("concurrently") {
			r.i++
		}
		r.i++
	case t.isWord("materialized") && r.peek(1).isWord("view"):
		d.Kind = "MATERIALIZED VIEW"
		r.i += 2
	case t.kind == tkIdent:
		r.unsupported(t, "DROP %s is not supported", strings.ToUpper(t.val))
	default:
		r.syntaxErr(t)
	}
	if r.tok().isWord("if") && r.peek(1).isWord("exists") {
		r.i += 2
		d.IfExists = true
	}
	for {
		d.Names = append(d.Names, r.nameChainString())
		if d.Kind == "FUNCTION" && r.tok().isPunct("(") {
			// argument types: skipped
			depth := 0
			for {
				t := r.tok()
				if t.kind == tkEOF {
					r.syntaxErr(t)
				}
				r.i++
				if t.isPunct("(") {
					depth++
				} else if t.isPunct(")") {
					depth--
					if depth == 0 {
						break
					}
				}
			}
		}
		if r.tok().isPunct(",") {
			r.i++
			continue
		}
		break
	}
	switch {
	case r.tok().isWord("cascade"):
		d.Cascade = true
		r.i++
	case r.tok().isWord("restrict"):
		r.i++
	}
	r.expectEOF()
	return d
}

// show parses SHOW ....
func (r *rewriter) show() Statement {
	r.expectWord("show")
	t := r.tok()
	switch {
	case t.isWord("create"):
		r.i++
		k := r.tok()
		sc := &ShowCreate{}
		switch {
		case k.isWord("table"), k.isWord("source"), k.isWord("view"), k.isWord("sink"):
			sc.Kind = strings.ToUpper(k.val)
			r.i++
		case k.isWord("materialized") && r.peek(1).isWord("view"):
			sc.Kind = "MATERIALIZED VIEW"
			r.i += 2
		default:
			r.syntaxErr(k)
		}
		sc.Name = r.nameChainString()
		r.expectEOF()
		return sc
	case t.isWord("tables"), t.isWord("sources"), t.isWord("views"), t.isWord("sinks"), t.isWord("functions"), t.isWord("all"):
		r.i++
		r.showTail()
		return &Show{What: strings.ToUpper(t.val)}
	case t.isWord("jobs"):
		r.i++
		r.expectEOF()
		return &Show{What: "JOBS"}
	case t.isWord("materialized") && r.peek(1).isWord("views"):
		r.i += 2
		r.showTail()
		return &Show{What: "MATERIALIZED VIEWS"}
	case t.isWord("columns") && r.peek(1).isWord("from"):
		r.i += 2
		name := r.nameChainString()
		r.expectEOF()
		return &Describe{Name: name}
	case t.isWord("time") && r.peek(1).isWord("zone"):
		r.i += 2
		r.expectEOF()
		return &Show{What: "timezone"}
	case t.isWord("transaction") && r.peek(1).isWord("isolation") && r.peek(2).isWord("level"):
		r.i += 3
		r.expectEOF()
		return &Show{What: "transaction_isolation"}
	case t.isWord("session") && r.peek(1).isWord("authorization"):
		r.i += 2
		r.expectEOF()
		return &Show{What: "session_authorization"}
	}
	if !isName(t) {
		r.syntaxErr(t)
	}
	name := strings.ToLower(r.nameChainString())
	r.expectEOF()
	return &Show{What: name}
}

// showTail accepts and ignores FROM schema / LIKE pattern after SHOW TABLES.
func (r *rewriter) showTail() {
	if r.tok().isWord("from") || r.tok().isWord("in") {
		r.i++
		r.nameChainString()
	}
	if r.tok().isWord("like") {
		r.i++
		if r.tok().kind != tkString {
			r.syntaxErr(r.tok())
		}
		r.i++
	}
	r.expectEOF()
}

// set parses SET ....
func (r *rewriter) set() Statement {
	r.expectWord("set")
	s := &Set{}
	switch {
	case r.tok().isWord("session") && r.peek(1).isWord("characteristics"):
		r.i += 2
		r.expectWord("as")
		r.expectWord("transaction")
		s.Name = "transaction_characteristics"
		s.Value = r.restText()
		return s
	case r.tok().isWord("session") && r.peek(1).isWord("authorization"), r.tok().isWord("role"):
		r.unsupported(r.tok(), "SET %s is not supported", strings.ToUpper(r.tok().val))
	case r.tok().isWord("local"):
		s.Local = true
		r.i++
	case r.tok().isWord("session"):
		r.i++
	}
	t := r.tok()
	switch {
	case t.isWord("transaction"):
		r.i++
		s.Name = "transaction"
		s.Value = r.restText()
		return s
	case t.isWord("time") && r.peek(1).isWord("zone"):
		r.i += 2
		s.Name = "timezone"
		if r.tok().isWord("local") || r.tok().isWord("default") {
			r.i++
			s.Default = true
			r.expectEOF()
			return s
		}
		if r.tok().isWord("interval") {
			r.unsupported(r.tok(), "SET TIME ZONE INTERVAL is not supported")
		}
		s.Value = r.setValues()
		return s
	case t.isWord("names"):
		r.i++
		s.Name = "client_encoding"
		s.Value = r.setValues()
		return s
	case t.isWord("schema"):
		r.i++
		s.Name = "search_path"
		s.Value = r.setValues()
		return s
	}
	if !isName(t) {
		r.syntaxErr(t)
	}
	s.Name = strings.ToLower(r.nameChainString())
	if !r.tok().isWord("to") && !r.tok().isOp("=") {
		r.syntaxErr(r.tok())
	}
	r.i++
	if r.tok().isWord("default") && r.peek(1).kind == tkEOF {
		r.i++
		s.Default = true
		return s
	}
	s.Value = r.setValues()
	return s
}

// restText returns the original text of the remaining tokens.
func (r *rewriter) restText() string {
	if r.tok().kind == tkEOF {
		r.syntaxErr(r.tok())
	}
	start := r.tok().pos
	end := r.toks[len(r.toks)-2].end
	r.i = len(r.toks) - 1
	return r.src[start:end]
}

// setValues parses a comma-separated list of SET values.
func (r *rewriter) setValues() string {
	var vals []string
	for {
		t := r.tok()
		switch {
		case t.kind == tkString:
			vals = append(vals, t.val)
			r.i++
		case t.kind == tkNumber:
			vals = append(vals, t.val)
			r.i++
		case (t.isOp("-") || t.isOp("+")) && r.peek(1).kind == tkNumber:
			v := r.peek(1).val
			if t.val == "-" {
				v = "-" + v
			}
			vals = append(vals, v)
			r.i += 2
		case t.kind == tkIdent:
			v := r.nameChainString()
			vals = append(vals, v)
		case t.kind == tkQIdent:
			vals = append(vals, `"`+strings.ReplaceAll(t.val, `"`, `""`)+`"`)
			r.i++
		default:
			r.syntaxErr(t)
		}
		if r.tok().isPunct(",") {
			r.i++
			continue
		}
		r.expectEOF()
		return strings.Join(vals, ", ")
	}
}

// reset parses RESET name | ALL.
func (r *rewriter) reset() Statement {
	r.expectWord("reset")
	s := &Set{Default: true}
	t := r.tok()
	switch {
	case t.isWord("time") && r.peek(1).isWord("zone"):
		r.i += 2
		s.Name = "timezone"
	case t.isWord("session") && r.peek(1).isWord("authorization"), t.isWord("role"):
		r.unsupported(t, "RESET %s is not supported", strings.ToUpper(t.val))
	case isName(t):
		s.Name = strings.ToLower(r.nameChainString())
	default:
		r.syntaxErr(t)
	}
	r.expectEOF()
	return s
}

// explain parses EXPLAIN [ANALYZE] [VERBOSE] [( options )] statement.
func (r *rewriter) explain() Statement {
	r.expectWord("explain")
	ex := &Explain{}
	if r.tok().isPunct("(") && r.peek(1).kind == tkIdent && !r.peek(1).isWord("select") && !r.peek(1).isWord("with") && !r.peek(1).isWord("values") {
		r.i++
		for {
			o := r.tok()
			if o.kind != tkIdent {
				r.syntaxErr(o)
			}
			r.i++
			on := true
			switch v := r.tok(); {
			case v.isWord("true"), v.isWord("on"), v.is(tkNumber, "1"):
				r.i++
			case v.isWord("false"), v.isWord("off"), v.is(tkNumber, "0"):
				on = false
				r.i++
			case v.kind == tkIdent || v.kind == tkString: // FORMAT TEXT etc.
				r.i++
			}
			switch o.val {
			case "analyze", "analyse":
				ex.Analyze = on
			case "verbose":
				ex.Verbose = on
			}
			if r.tok().isPunct(",") {
				r.i++
				continue
			}
			r.expectPunct(")")
			break
		}
	} else {
		if r.tok().isWord("analyze") || r.tok().isWord("analyse") {
			ex.Analyze = true
			r.i++
		}
		if r.tok().isWord("verbose") {
			ex.Verbose = true
			r.i++
		}
	}
	if r.tok().kind == tkEOF {
		r.syntaxErr(r.tok())
	}
	lo := r.i
	sub := newRewriter(r.src, r.toks[lo:])
	var inner Statement
	inner = sub.statement()
	if ts, ok := inner.(textSetter); ok {
		ts.setText(r.src[r.toks[lo].pos:r.toks[len(r.toks)-2].end])
	}
	if _, ok := inner.(*Explain); ok {
		r.syntaxErr(r.toks[lo])
	}
	ex.Stmt = inner
	r.i = len(r.toks) - 1
	return ex
}

// begin parses BEGIN [WORK | TRANSACTION] [modes] and START TRANSACTION [modes].
// isolationLevel parses the level of ISOLATION LEVEL: SERIALIZABLE,
// REPEATABLE READ, READ COMMITTED or READ UNCOMMITTED.
func (r *rewriter) isolationLevel() string {
	t := r.tok()
	switch {
	case t.isWord("serializable"):
		r.i++
		return "serializable"
	case t.isWord("repeatable") && r.peek(1).isWord("read"):
		r.i += 2
		return "repeatable read"
	case t.isWord("read") && r.peek(1).isWord("committed"):
		r.i += 2
		return "read committed"
	case t.isWord("read") && r.peek(1).isWord("uncommitted"):
		r.i += 2
		return "read uncommitted"
	}
	r.syntaxErr(t)
	return ""
}

func (r *rewriter) begin() Statement {
	b := &Begin{}
	if r.tok().isWord("start") {
		r.i++
		r.expectWord("transaction")
	} else {
		r.i++
		r.optTransactionWord()
	}
	for r.tok().kind != tkEOF {
		t := r.tok()
		switch {
		case t.isWord("isolation") && r.peek(1).isWord("level"):
			r.i += 2
			b.Isolation = r.isolationLevel()
		case t.isWord("read") && r.peek(1).isWord("only"):
			b.ReadOnly = true
			r.i += 2
		case t.isWord("read") && r.peek(1).isWord("write"):
			r.i += 2
		case t.isWord("not") && r.peek(1).isWord("deferrable"):
			r.i += 2
		case t.isWord("deferrable"):
			r.i++
		case t.isPunct(","):
			r.i++
		default:
			r.syntaxErr(t)
		}
	}
	return b
}
