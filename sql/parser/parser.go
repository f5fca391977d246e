package parser

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"

	tidb "github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// sqlMode is the SQL mode of the TiDB parser: || concatenates, backslash is
// an ordinary character in strings, and "x" is an identifier.
const sqlMode = mysql.ModePipesAsConcat | mysql.ModeNoBackslashEscapes | mysql.ModeANSIQuotes

var tidbPool = sync.Pool{New: func() any {
	p := tidb.New()
	p.SetSQLMode(sqlMode)
	return p
}}

// Parse splits sql into statements on top-level semicolons (respecting
// quotes, dollar quotes and comments) and parses each one. Errors are
// *pgerror.Error values; syntax errors (42601) carry the 1-based character
// position in sql.
func Parse(sql string) ([]Statement, error) {
	toks, err := lex(sql)
	if err != nil {
		return nil, err
	}
	var stmts []Statement
	start := 0
	for k, t := range toks {
		if t.kind != tkEOF && !t.isPunct(";") {
			continue
		}
		if k > start {
			st, err := parseStatement(sql, stmtTokens(toks[start:k], t))
			if err != nil {
				return nil, err
			}
			stmts = append(stmts, st)
		}
		start = k + 1
	}
	return stmts, nil
}

// stmtTokens returns toks followed by an EOF token standing at term (the
// terminating semicolon or the end of the input).
func stmtTokens(toks []token, term token) []token {
	out := make([]token, len(toks)+1)
	copy(out, toks)
	out[len(toks)] = token{kind: tkEOF, pos: term.pos, end: term.end}
	return out
}

// ParseOne parses exactly one statement; zero or several are a 42601 error.
func ParseOne(sql string) (Statement, error) {
	stmts, err := Parse(sql)
	if err != nil {
		return nil, err
	}
	switch len(stmts) {
	case 1:
		return stmts[0], nil
	case 0:
		return nil, pgerror.New(pgcode.Syntax, "syntax error at end of input: empty statement").WithPosition(charPos(sql, len(sql)))
	}
	return nil, pgerror.New(pgcode.Syntax, "expected one statement, got %d", len(stmts))
}

// ParseExpr parses one scalar expression, such as a WATERMARK expression,
// a column default or a test input, into a TiDB expression (with the same
// rewrites as in queries).
func ParseExpr(sql string) (ast.ExprNode, error) {
	toks, err := lex(sql)
	if err != nil {
		return nil, err
	}
	var e ast.ExprNode
	err = catch(func() {
		r := newRewriter(sql, toks)
		if r.tok().kind == tkEOF {
			r.syntaxErr(r.tok())
		}
		x := r.parseExpr(0)
		if r.tok().kind != tkEOF {
			r.syntaxErr(r.tok())
		}
		e = r.exprNode(x.f)
	})
	return e, err
}

// catch runs f and returns the error of a parseFailure panic. Any other
// panic (a bug here or in the TiDB parser) becomes an XX000 error rather
// than taking the server down.
func catch(f func()) (err error) {
	defer func() {
		if x := recover(); x != nil {
			if pf, ok := x.(parseFailure); ok {
				err = pf.err
				return
			}
			err = pgerror.New(pgcode.Internal, "internal error in the SQL parser: %v", x)
		}
	}()
	f()
	return nil
}

// stmtKeywords are Postgres statements Sluice does not support.
var stmtKeywords = wordSet(`alter grant revoke truncate prepare execute
listen notify unlisten vacuum analyze analyse lock savepoint release comment
cluster reindex checkpoint declare close move call do import load refresh
security merge reassign cancel kill recover alter`)

// parseStatement parses the tokens of one statement (ending with EOF).
func parseStatement(src string, toks []token) (st Statement, err error) {
	err = catch(func() { st = newRewriter(src, toks).statement() })
	if err != nil {
		return nil, err
	}
	if ts, ok := st.(textSetter); ok {
		ts.setText(src[toks[0].pos:toks[len(toks)-2].end])
	}
	return st, nil
}

// statement dispatches on the first words of a statement.
func (r *rewriter) statement() Statement {
	t := r.tok()
	if t.isPunct("(") {
		return r.query()
	}
	if t.kind != tkIdent {
		r.syntaxErr(t)
	}
	if st := r.roleStatement(); st != nil { // role.go
		return st
	}
	switch t.val {
	case "select", "with", "values", "table", "insert", "update", "delete":
		return r.query()
	case "create":
		return r.create()
	case "drop":
		return r.drop()
	case "alter":
		return r.alterTable()
	case "truncate":
		return r.truncate()
	case "show":
		return r.show()
	case "set":
		return r.set()
	case "reset":
		return r.reset()
	case "describe", "desc":
		r.i++
		name := r.nameChainString()
		r.expectEOF()
		return &Describe{Name: name}
	case "explain":
		return r.explain()
	case "copy":
		return r.copyStmt()
	case "grant", "revoke":
		return r.grant()
	case "subscribe":
		return r.subscribeStatement()
	case "flush":
		r.i++
		r.expectEOF()
		return &Flush{}
	case "cancel":
		if w := r.peek(1); w.isWord("job") || w.isWord("jobs") {
			return r.cancelJobs()
		}
	case "backup":
		r.i++
		if !r.tok().isWord("to") {
			r.syntaxErr(r.tok())
		}
		r.i++
		d := r.tok()
		if d.kind != tkString {
			r.syntaxErr(d)
		}
		r.i++
		r.expectEOF()
		return &Backup{Dir: d.val}
	case "begin", "start":
		return r.begin()
	case "commit", "end":
		r.i++
		r.optTransactionWord()
		c := &Commit{Chain: r.optChain()}
		r.expectEOF()
		return c
	case "rollback", "abort":
		r.i++
		if r.tok().isWord("prepared") {
			r.unsupported(r.tok(), "ROLLBACK PREPARED is not supported")
		}
		r.optTransactionWord()
		if t.val == "rollback" && r.tok().isWord("to") {
			r.i++
			if r.tok().isWord("savepoint") {
				r.i++
			}
			rb := &Rollback{To: r.savepointName()}
			r.expectEOF()
			return rb
		}
		rb := &Rollback{Chain: r.optChain()}
		r.expectEOF()
		return rb
	case "savepoint":
		r.i++
		sp := &Savepoint{Name: r.savepointName()}
		r.expectEOF()
		return sp
	case "release":
		r.i++
		if r.tok().isWord("savepoint") {
			r.i++
		}
		rl := &Release{Name: r.savepointName()}
		r.expectEOF()
		return rl
	case "discard":
		r.i++
		w := r.tok()
		switch {
		case w.isWord("all"), w.isWord("plans"), w.isWord("sequences"), w.isWord("temp"), w.isWord("temporary"):
			r.i++
		default:
			r.syntaxErr(w)
		}
		r.expectEOF()
		return &Discard{}
	case "declare":
		return r.declareCursor()
	case "fetch", "move":
		return r.fetch()
	case "close":
		return r.closeCursor()
	case "deallocate":
		r.i++
		if r.tok().isWord("prepare") {
			r.i++
		}
		if r.tok().isWord("all") {
			r.i++
			r.expectEOF()
			return &Deallocate{All: true}
		}
		n := r.tok()
		if !isName(n) {
			r.syntaxErr(n)
		}
		r.i++
		r.expectEOF()
		return &Deallocate{Name: n.val}
	}
	if stmtKeywords[t.val] {
		r.unsupported(t, "%s is not supported", strings.ToUpper(t.val))
	}
	r.syntaxErr(t)
	return nil
}

// cancelJobs parses CANCEL JOB | JOBS id [, …].
func (r *rewriter) cancelJobs() Statement {
	r.i += 2
	c := &CancelJobs{}
	for {
		t := r.tok()
		if t.kind != tkNumber {
			r.syntaxErr(t)
		}
		id, err := strconv.ParseUint(t.val, 10, 64)
		if err != nil {
			r.syntaxErr(t)
		}
		c.IDs = append(c.IDs, id)
		r.i++
		if !r.tok().isPunct(",") {
			break
		}
		r.i++
	}
	r.expectEOF()
	return c
}

func (r *rewriter) expectEOF() {
	if r.tok().kind != tkEOF {
		r.syntaxErr(r.tok())
	}
}

func (r *rewriter) optTransactionWord() {
	if r.tok().isWord("work") || r.tok().isWord("transaction") {
		r.i++
	}
}

// optChain parses an optional AND [NO] CHAIN and reports AND CHAIN.
func (r *rewriter) optChain() bool {
	if r.tok().isWord("and") {
		r.i++
		no := false
		if r.tok().isWord("no") {
			r.i++
			no = true
		}
		r.expectWord("chain")
		return !no
	}
	return false
}

// savepointName parses a savepoint's name (an identifier, folded as
// identifiers are).
func (r *rewriter) savepointName() string {
	t := r.tok()
	if !isName(t) {
		r.syntaxErr(t)
	}
	r.i++
	return t.val
}

// query rewrites and parses the statement as a query.
func (r *rewriter) query() *Query {
	f := r.walkSeq(&level{atStart: true})
	r.expectEOF()
	rd := render(f, r.tok())
	q := &Query{Rewritten: rd.text}
	q.Node = r.tidbParse(rd)
	r.finishQuery(q, rd)
	r.finishDML(q)
	return q
}

// subQuery parses toks[lo:hi] of the statement as a query; term is the
// token after it.
func (r *rewriter) subQuery(lo, hi int) *Query {
	sub := newRewriter(r.src, stmtTokens(r.toks[lo:hi], r.toks[hi]))
	if sub.tok().kind == tkEOF {
		sub.syntaxErr(sub.tok())
	}
	q := sub.query()
	q.setText(r.src[r.toks[lo].pos:r.toks[hi-1].end])
	return q
}

// tidbParse hands rendered text to the TiDB parser and maps its errors.
func (r *rewriter) tidbParse(rd rendered) ast.StmtNode {
	p := tidbPool.Get().(*tidb.Parser)
	stmts, _, err := p.ParseSQL(rd.text)
	// The parser reuses its result slice: read it before the parser goes
	// back to the pool.
	var stmt ast.StmtNode
	if err == nil && len(stmts) == 1 {
		stmt = stmts[0]
	}
	n := len(stmts)
	tidbPool.Put(p)
	if err != nil {
		r.fail(r.mapTiDBError(err, rd))
	}
	if n != 1 {
		r.fail(pgerror.New(pgcode.Syntax, "syntax error").WithPosition(charPos(r.src, r.toks[0].pos)))
	}
	return stmt
}

// exprNode parses a rewritten expression with TiDB.
func (r *rewriter) exprNode(f frag) ast.ExprNode {
	pos := 0
	if len(f) > 0 {
		pos = f[0].pos
	}
	full := append(frag{syn("SELECT", pos)}, f...)
	rd := render(full, r.tok())
	node := r.tidbParse(rd)
	sel, ok := node.(*ast.SelectStmt)
	if !ok || sel.Fields == nil || len(sel.Fields.Fields) != 1 || sel.From != nil || sel.Fields.Fields[0].Expr == nil {
		r.fail(pgerror.New(pgcode.Syntax, "syntax error in expression").WithPosition(charPos(r.src, pos)))
	}
	e := sel.Fields.Fields[0].Expr
	q := &Query{}
	e.Accept(&postVisitor{q: q, params: rd.params})
	return e
}

var tidbErrRE = regexp.MustCompile(`^line (\d+) column (\d+) near "`)
var totalLenRE = regexp.MustCompile(`\(total length (\d+)\)\s*$`)

// tidbErrOffset finds the offset in text of the token a TiDB syntax error
// points at, from the error's `near "..."` excerpt (the rest of the text).
func tidbErrOffset(msg, text string) (int, bool) {
	loc := tidbErrRE.FindStringIndex(msg)
	if loc == nil {
		return 0, false
	}
	rest := msg[loc[1]:]
	if m := totalLenRE.FindStringSubmatch(rest); m != nil {
		n, _ := strconv.Atoi(m[1])
		if n <= len(text) {
			return len(text) - n, true
		}
	}
	// rest is near-text + `"` + extra + " "
	if strings.HasSuffix(rest, "\" ") {
		v := rest[:len(rest)-2]
		if strings.HasSuffix(text, v) {
			return len(text) - len(v), true
		}
	}
	for o := 0; o <= len(text); o++ {
		suf := text[o:]
		if strings.HasPrefix(rest, suf) && len(rest) > len(suf) && rest[len(suf)] == '"' {
			return o, true
		}
	}
	return 0, false
}

// mapTiDBError turns a TiDB parse error into a positioned 42601.
func (r *rewriter) mapTiDBError(err error, rd rendered) error {
	var pe *pgerror.Error
	if errors.As(err, &pe) {
		return pe
	}
	msg := err.Error()
	off, ok := tidbErrOffset(msg, rd.text)
	if !ok {
		return pgerror.New(pgcode.Syntax, "syntax error: %s", stripTiDBPrefix(msg)).WithPosition(charPos(r.src, r.toks[0].pos))
	}
	orig, inText := rd.origPos(off)
	if !inText {
		t := rd.term
		return syntaxErrAt(r.src, t.pos, "%s", nearMsg(r.src, t))
	}
	// the user's token at orig
	t := r.toks[len(r.toks)-1]
	for _, x := range r.toks {
		if x.kind == tkEOF {
			break
		}
		if x.pos <= orig && orig < x.end || x.pos >= orig {
			t = x
			break
		}
	}
	return syntaxErrAt(r.src, t.pos, "%s", nearMsg(r.src, t))
}

func stripTiDBPrefix(msg string) string {
	if i := strings.Index(msg, "]"); i >= 0 && strings.HasPrefix(msg, "[") {
		return strings.TrimSpace(msg[i+1:])
	}
	return msg
}

// finishQuery undoes the markers the rewriter left in the TiDB AST and
// parses the arguments of table functions.
func (r *rewriter) finishQuery(q *Query, rd rendered) {
	v := &postVisitor{q: q, params: rd.params, aliases: map[string]aliasRec{}}
	for _, a := range r.alias {
		v.aliases[a.marker] = a
	}
	q.nulls = map[*ast.ByItem]int{}
	q.ColumnAliases = map[*ast.TableSource][]string{}
	q.Node.Accept(v)
	q.TableFuncs = map[string]TableFunc{}
	for _, tf := range r.tfs {
		tfn := TableFunc{Name: tf.name}
		if len(tf.args) > 0 {
			full := frag{syn("SELECT", tf.pos)}
			for k, a := range tf.args {
				if k > 0 {
					full = append(full, syn(",", tf.pos))
				}
				full = append(full, a...)
			}
			rd := render(full, r.tok())
			sel, ok := r.tidbParse(rd).(*ast.SelectStmt)
			if !ok || len(sel.Fields.Fields) != len(tf.args) {
				r.fail(pgerror.New(pgcode.Syntax, "syntax error in arguments of %s", tf.name).WithPosition(charPos(r.src, tf.pos)))
			}
			for _, fld := range sel.Fields.Fields {
				fld.Expr.Accept(&postVisitor{q: &Query{}, params: rd.params})
				tfn.Args = append(tfn.Args, fld.Expr)
			}
		}
		q.TableFuncs[tf.placeholder] = tfn
	}
}

// postVisitor fixes up a TiDB AST after parsing.
type postVisitor struct {
	q       *Query
	params  map[int]int
	aliases map[string]aliasRec
}

// Enter implements ast.Visitor.
func (v *postVisitor) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ParamMarkerExpr:
		x.N = v.params[x.Offset]
	case *ast.OrderByClause:
		for _, it := range x.Items {
			k := unwrapNulls(it)
			v.q.NullsOrder = append(v.q.NullsOrder, k)
			if v.q.nulls != nil {
				v.q.nulls[it] = k
			}
		}
	case *ast.TableSource:
		if a, ok := v.aliases[x.AsName.O]; ok && v.q.ColumnAliases != nil {
			x.AsName = ast.NewCIStr(a.name)
			v.q.ColumnAliases[x] = a.cols
		}
	}
	return n, false
}

// Leave implements ast.Visitor.
func (v *postVisitor) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// unwrapNulls removes the __pg_nulls(expr, k) marker of an ORDER BY item and
// returns k (0 if there is none).
func unwrapNulls(it *ast.ByItem) int {
	fc, ok := it.Expr.(*ast.FuncCallExpr)
	if !ok || fc.FnName.L != "__pg_nulls" || len(fc.Args) != 2 {
		return 0
	}
	k := 0
	if ve, ok := fc.Args[1].(*ValueExpr); ok {
		if n, ok := ve.Val.(int64); ok {
			k = int(n)
		}
	}
	inner := fc.Args[0]
	if ve, ok := inner.(*ValueExpr); ok && !ve.IsBool() {
		switch n := ve.Val.(type) {
		case int64:
			it.Expr = &ast.PositionExpr{N: int(n)}
			return k
		case uint64:
			it.Expr = &ast.PositionExpr{N: int(n)}
			return k
		}
	}
	it.Expr = inner
	return k
}
