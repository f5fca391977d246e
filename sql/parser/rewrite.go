package parser

import (
	"sort"
	"strconv"
	"strings"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// This file holds the Postgres-dialect layer: it reads the tokens of one
// Postgres statement and writes MySQL-grammar text for the TiDB parser,
// mapping Postgres-only syntax onto reserved __pg_* function calls (see
// doc.go for the list). It parses expressions with Postgres precedence and
// parenthesises them where TiDB's precedence would group them otherwise;
// statement structure it mostly copies, handling the clauses that differ.

// piece is a run of output text. pos is the byte offset in the user's text
// that it stands for; exact pieces map byte for byte onto the user's text.
type piece struct {
	s     string
	pos   int
	exact bool
	param int  // > 0: the piece is a '?' marker for parameter $param
	sub   frag // a nested fragment (s is then empty); keeps rewriting linear
}

// frag is a sequence of output pieces.
type frag []piece

// TiDB precedence levels of emitted expressions (higher binds tighter).
const (
	levOr      = 1
	levAnd     = 3
	levNot     = 4
	levIsBool  = 5  // IS [NOT] TRUE/FALSE/UNKNOWN
	levCmp     = 6  // comparisons, IS [NOT] NULL (TiDB BoolPri)
	levPred    = 7  // IN, LIKE, ILIKE, BETWEEN (TiDB PredicateExpr)
	levBitOr   = 8  // |
	levBitAnd  = 9  // &
	levShift   = 10 // << >>
	levAdd     = 11 // + -
	levMul     = 12 // * / %
	levBitXor  = 13 // ^ (Postgres #)
	levConcat  = 14 // || (TiDB SimpleExpr pipes SimpleExpr)
	levUnary   = 15
	levPrimary = 16
)

// Postgres binding powers (higher binds tighter).
const (
	pOr      = 1
	pAnd     = 2
	pNot     = 3
	pIs      = 4
	pCmp     = 5
	pLike    = 6 // BETWEEN IN LIKE ILIKE SIMILAR
	pOther   = 7 // any other operator
	pAdd     = 8
	pMul     = 9
	pPow     = 10
	pAt      = 11
	pCollate = 12
	pUnary   = 13
	pSub     = 14
	pCast    = 15
)

// expr is a rewritten expression with the TiDB level of its top operator.
type expr struct {
	f   frag
	lev int
}

// parseFailure carries an error out of the recursive descent.
type parseFailure struct{ err error }

// rewriter rewrites the tokens toks[lo:hi] of one statement.
type rewriter struct {
	src   string
	toks  []token // tokens of the statement, followed by one tkEOF token
	i     int
	nTF   int
	depth int
	tfs   []tfCall
	alias []aliasRec
	dml   *dmlTailState
	// overriding is INSERT's OVERRIDING SYSTEM|USER VALUE ("system",
	// "user" or "").
	overriding string
	// exclude is the EXCLUDE clause of the window spec being read
	// ("current row", "group", "ties", "no others"; "" if none), which
	// the TiDB parser does not know: the call becomes
	// __pg_exclude(call OVER (...), 'kind').
	exclude string
	// framed: a ROWS, RANGE or GROUPS frame was read in the window spec
	// (EXCLUDE without one is a syntax error, as in PostgreSQL).
	framed bool
}

// tfCall is a table function call in FROM.
type tfCall struct {
	placeholder string
	name        string
	args        []frag
	pos         int
}

// aliasRec is a FROM item alias with a column list; the alias is emitted as
// marker and restored after parsing.
type aliasRec struct {
	marker string
	name   string
	cols   []string
}

func newRewriter(src string, toks []token) *rewriter {
	// toks must end with an EOF token.
	return &rewriter{src: src, toks: toks}
}

func (r *rewriter) tok() token { return r.toks[r.i] }

func (r *rewriter) peek(k int) token {
	if r.i+k < len(r.toks) {
		return r.toks[r.i+k]
	}
	return r.toks[len(r.toks)-1]
}

func (r *rewriter) fail(err error) { panic(parseFailure{err}) }

// syntaxErr fails with a syntax error at token t.
func (r *rewriter) syntaxErr(t token) {
	r.fail(syntaxErrAt(r.src, t.pos, "%s", nearMsg(r.src, t)))
}

// unsupported fails with 0A000 positioned at t.
func (r *rewriter) unsupported(t token, format string, args ...any) {
	r.fail(pgerror.Unsupported(format, args...).WithPosition(charPos(r.src, t.pos)))
}

func (r *rewriter) expectWord(w string) token {
	t := r.tok()
	if !t.isWord(w) {
		r.syntaxErr(t)
	}
	r.i++
	return t
}

func (r *rewriter) expectPunct(p string) token {
	t := r.tok()
	if !t.isPunct(p) {
		r.syntaxErr(t)
	}
	r.i++
	return t
}

// Output helpers.

func exact(t token, src string) piece { return piece{s: src[t.pos:t.end], pos: t.pos, exact: true} }

func syn(s string, pos int) piece { return piece{s: s, pos: pos} }

func prim(f frag) expr { return expr{f: f, lev: levPrimary} }

// group packs a fragment into one piece, so that enclosing constructs copy
// one piece instead of the whole fragment.
func group(f frag) piece {
	pos := 0
	if len(f) > 0 {
		pos = f[0].pos
	}
	return piece{pos: pos, sub: f}
}

// wrap parenthesises e if its level is below min.
func wrap(e expr, min int) frag {
	if e.lev >= min {
		return e.f
	}
	pos := 0
	if len(e.f) > 0 {
		pos = e.f[0].pos
	}
	return frag{syn("(", pos), group(e.f), syn(")", pos)}
}

// call builds name(args...) as a primary.
func call(name string, pos int, args ...frag) expr {
	f := frag{syn(name+"(", pos)}
	for k, a := range args {
		if k > 0 {
			f = append(f, syn(",", pos))
		}
		f = append(f, group(a))
	}
	f = append(f, syn(")", pos))
	return prim(f)
}

// not builds NOT e.
func not(e expr, pos int) expr {
	return expr{f: frag{syn("NOT", pos), group(wrap(e, levNot))}, lev: levNot}
}

// strLit renders s as a TiDB string literal (standard quoting; the TiDB
// parser runs with NO_BACKSLASH_ESCAPES).
func strLit(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// quoteIdent renders a name as a TiDB backquoted identifier.
func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// identPiece renders an identifier token (folded or quoted) backquoted.
func identPiece(t token) piece { return syn(quoteIdent(t.val), t.pos) }

func isName(t token) bool { return t.kind == tkIdent || t.kind == tkQIdent }

// ---------------------------------------------------------------------
// Statement sequences

// level is the state of one nesting level (statement or parenthesised
// group) of the walker.
type level struct {
	atStart    bool
	inFrom     bool
	expectItem bool
	window     bool
	asof       bool // an ASOF join's right item was read: its ON follows
}

// walkSeq copies a sequence of clauses, rewriting what it recognises, up
// to the closing bracket of its level or the end of the statement.
func (r *rewriter) walkSeq(st *level) frag {
	var out frag
	for {
		t := r.tok()
		switch {
		case t.kind == tkEOF, t.isPunct(")"), t.isPunct("]"):
			return out
		case t.isPunct(";"):
			r.syntaxErr(t)
		case t.isPunct(","):
			out = append(out, exact(t, r.src))
			r.i++
			if st.inFrom {
				st.expectItem = true
			}
			continue
		case st.expectItem:
			out = append(out, r.fromItem(st)...)
			if st.asof {
				out = append(out, r.asofOn(st)...)
			}
		case st.window && r.framed && !r.plainFrameToken(t):
			r.fail(pgerror.Unsupported("an expression as a window frame offset is not supported").
				WithHint("Write the offset as a constant number or INTERVAL '…'.").
				WithPosition(charPos(r.src, t.pos)))
		case t.kind == tkIdent:
			out = append(out, r.walkWord(st)...)
		case t.kind == tkOp && (t.val == "*" || t.val == "="):
			out = append(out, exact(t, r.src))
			r.i++
		case t.kind == tkOp && isPrefixOp(t.val), t.kind != tkOp && t.kind != tkPunct, t.isPunct("("):
			out = append(out, r.parseExpr(0).f...)
		default:
			r.syntaxErr(t)
		}
		st.atStart = false
	}
}

func isPrefixOp(op string) bool {
	switch op {
	case "-", "+", "~", "@", "|/", "||/":
		return true
	}
	return false
}

// walkWord handles a word at the walker level.
func (r *rewriter) walkWord(st *level) frag {
	t := r.tok()
	w := t.val
	next := r.peek(1)
	kw := func() frag { r.i++; return frag{syn(w, t.pos)} }
	switch w {
	case "select":
		st.inFrom, st.expectItem = false, false
		r.i++
		out := frag{syn("SELECT", t.pos)}
		if r.tok().isWord("distinct") && r.peek(1).isWord("on") {
			// DISTINCT ON (e, …) becomes a first select item
			// __pg_distinct_on(e, …), which the planner takes out.
			pos := r.tok().pos
			r.i += 2
			r.expectPunct("(")
			var args []frag
			for {
				args = append(args, r.parseExpr(0).f)
				if !r.tok().isPunct(",") {
					break
				}
				r.i++
			}
			r.expectPunct(")")
			out = append(out, call("__pg_distinct_on", pos, args...).f...)
			out = append(out, syn(",", pos))
			return out
		}
		if r.tok().isWord("all") {
			r.i++
		}
		return out
	case "from":
		st.inFrom, st.expectItem = true, true
		return kw()
	case "where", "group", "having":
		st.inFrom, st.expectItem = false, false
		if w == "group" && next.isWord("by") {
			return r.groupByClause()
		}
		return kw()
	case "union", "intersect", "except":
		st.inFrom, st.expectItem = false, false
		r.i++
		out := frag{syn(w, t.pos)}
		if r.tok().isWord("all") || r.tok().isWord("distinct") {
			out = append(out, exact(r.tok(), r.src))
			r.i++
		}
		return out
	case "window":
		st.inFrom, st.expectItem = false, false
		return r.windowClause()
	case "order":
		if next.isWord("by") {
			st.inFrom, st.expectItem = false, false
			return r.orderBy()
		}
	case "limit", "offset", "fetch":
		st.inFrom, st.expectItem = false, false
		return r.limitClause()
	case "for":
		// FOR UPDATE / FOR SHARE / ...: row locking means nothing to a
		// streaming database; the clause is dropped.
		if next.isWord("update") || next.isWord("share") || next.isWord("no") || next.isWord("key") {
			for {
				t := r.tok()
				if t.kind == tkEOF || t.isPunct(")") || t.isPunct(";") {
					return nil
				}
				r.i++
			}
		}
		return kw()
	case "returning":
		if r.atDMLTail(st) {
			r.dmlTail()
			return nil
		}
		r.unsupported(t, "RETURNING is not supported")
	case "into":
		r.unsupported(t, "SELECT INTO is not supported")
	case "on":
		if r.atDMLTail(st) {
			r.dmlTail()
			return nil
		}
		if next.isWord("conflict") {
			r.unsupported(t, "ON CONFLICT is not supported")
		}
		return kw()
	case "asof":
		if n := r.asofJoinLen(); n > 0 {
			return r.asofJoin(st, n)
		}
	case "join", "inner", "cross", "outer":
		if w == "join" {
			st.expectItem = true
		}
		return kw()
	case "left", "right":
		if !next.isPunct("(") {
			return kw()
		}
	case "natural":
		if next.isWord("full") {
			r.unsupported(t, "NATURAL FULL JOIN is not supported")
		}
		return kw()
	case "full":
		// FULL [OUTER] JOIN is emitted as STRAIGHT_JOIN, whose Join node
		// has StraightJoin set: the binder reads that as FULL OUTER JOIN.
		r.i++
		if r.tok().isWord("outer") {
			r.i++
		}
		r.expectWord("join")
		st.expectItem = true
		return frag{syn("STRAIGHT_JOIN", t.pos)}
	case "as":
		r.i++
		n := r.tok()
		if n.isWord("not") && r.peek(1).isWord("materialized") {
			r.i += 2
			n = r.tok()
		} else if n.isWord("materialized") && r.peek(1).isPunct("(") {
			r.i++
			n = r.tok()
		}
		if isName(n) {
			r.i++
			return frag{syn("AS", t.pos), identPiece(n)}
		}
		return frag{syn("AS", t.pos)}
	case "with":
		return r.withClause()
	case "values":
		if next.isPunct("(") {
			return r.valuesRows(false)
		}
	case "insert":
		if st.atStart {
			return r.insertStmt()
		}
	case "update":
		if st.atStart {
			return r.updateStmt()
		}
	case "delete":
		if st.atStart {
			return r.deleteStmt()
		}
	case "table":
		if st.atStart && isName(next) {
			r.i++
			out := frag{syn("SELECT * FROM", t.pos)}
			return append(out, r.nameChain()...)
		}
	case "distinct":
		return kw()
	}
	if st.window && w == "interval" && (next.kind == tkString || next.kind == tkNumber) {
		return r.frameInterval()
	}
	if st.window && w == "exclude" {
		return r.excludeClause()
	}
	if st.window && (w == "rows" || w == "range" || w == "groups") {
		r.framed = true
	}
	if st.window && windowWords[w] {
		if w == "partition" {
			r.i++
			r.expectWord("by")
			return frag{syn("PARTITION BY", t.pos)}
		}
		return kw()
	}
	if exprKeywords[w] || !pgReserved[w] {
		return r.parseExpr(0).f
	}
	if (w == "left" || w == "right") && next.isPunct("(") {
		return r.parseExpr(0).f
	}
	return kw()
}

// nameChain reads a dotted name and renders its parts backquoted.
func (r *rewriter) nameChain() frag {
	t := r.tok()
	if !isName(t) {
		r.syntaxErr(t)
	}
	out := frag{identPiece(t)}
	r.i++
	for r.tok().isPunct(".") && isName(r.peek(1)) {
		out = append(out, syn(".", r.tok().pos), identPiece(r.peek(1)))
		r.i += 2
	}
	return out
}

// nameChainString reads a dotted name and returns it joined with dots.
func (r *rewriter) nameChainString() string {
	t := r.tok()
	if !isName(t) {
		r.syntaxErr(t)
	}
	s := t.val
	r.i++
	for r.tok().isPunct(".") && isName(r.peek(1)) {
		s += "." + r.peek(1).val
		r.i += 2
	}
	return s
}

// withClause handles WITH [RECURSIVE] name [(cols)] AS [[NOT] MATERIALIZED] (query), ...
func (r *rewriter) withClause() frag {
	t := r.tok()
	r.i++
	out := frag{syn("WITH", t.pos)}
	if r.tok().isWord("recursive") {
		out = append(out, syn("RECURSIVE", r.tok().pos))
		r.i++
	}
	for {
		n := r.tok()
		if !isName(n) {
			r.syntaxErr(n)
		}
		out = append(out, identPiece(n))
		r.i++
		if r.tok().isPunct("(") {
			out = append(out, r.identList()...)
		}
		as := r.expectWord("as")
		out = append(out, syn("AS", as.pos))
		if r.tok().isWord("not") && r.peek(1).isWord("materialized") {
			r.i += 2
		} else if r.tok().isWord("materialized") {
			r.i++
		}
		if !r.tok().isPunct("(") {
			r.syntaxErr(r.tok())
		}
		out = append(out, r.parenGroup(&level{atStart: true})...)
		if !r.tok().isPunct(",") {
			if n := r.tok(); n.isWord("insert") || n.isWord("update") || n.isWord("delete") {
				r.unsupported(n, "WITH ... %s is not supported", strings.ToUpper(n.val))
			}
			return out
		}
		out = append(out, exact(r.tok(), r.src))
		r.i++
	}
}

// identList reads ( name, ... ) and renders it with backquoted names.
func (r *rewriter) identList() frag {
	open := r.expectPunct("(")
	out := frag{syn("(", open.pos)}
	for {
		n := r.tok()
		if !isName(n) {
			r.syntaxErr(n)
		}
		out = append(out, identPiece(n))
		r.i++
		if r.tok().isPunct(",") {
			out = append(out, exact(r.tok(), r.src))
			r.i++
			continue
		}
		c := r.expectPunct(")")
		return append(out, syn(")", c.pos))
	}
}

// identNames reads ( name, ... ) and returns the names.
func (r *rewriter) identNames() []string {
	r.expectPunct("(")
	var names []string
	for {
		n := r.tok()
		if !isName(n) {
			r.syntaxErr(n)
		}
		names = append(names, n.val)
		r.i++
		if r.tok().isPunct(",") {
			r.i++
			continue
		}
		r.expectPunct(")")
		return names
	}
}

// parenGroup copies ( ... ) walking its contents with st.
func (r *rewriter) parenGroup(st *level) frag {
	open := r.expectPunct("(")
	r.enter(open)
	inner := r.walkSeq(st)
	r.depth--
	c := r.tok()
	if !c.isPunct(")") {
		r.syntaxErr(c)
	}
	r.i++
	return frag{syn("(", open.pos), group(inner), syn(")", c.pos)}
}

// maxDepth bounds the nesting of expressions and parentheses, so that a
// hostile statement cannot exhaust the goroutine stack.
const maxDepth = 2000

// maxChain bounds the operators applied in a row at one level of an
// expression (a + b + c …): the planner's binder refuses more than 10,000
// levels, and the dialect layer stops a longer chain before the TiDB parser
// builds a tree as deep as the chain is long.
const maxChain = 10000

// enter counts one level of nesting at t; the caller decrements r.depth.
func (r *rewriter) enter(t token) {
	r.depth++
	if r.depth > maxDepth {
		r.fail(pgerror.New(pgcode.Code("54001"), "stack depth limit exceeded").
			WithHint("The statement is nested too deeply.").WithPosition(charPos(r.src, t.pos)))
	}
}

// windowClause handles WINDOW name AS (spec) [, ...].
func (r *rewriter) windowClause() frag {
	t := r.expectWord("window")
	out := frag{syn("WINDOW", t.pos)}
	for {
		n := r.tok()
		if !isName(n) {
			r.syntaxErr(n)
		}
		r.i++
		as := r.expectWord("as")
		out = append(out, identPiece(n), syn("AS", as.pos))
		outer, outerFramed := r.exclude, r.framed
		r.exclude, r.framed = "", false
		out = append(out, r.parenGroup(&level{window: true})...)
		if r.exclude != "" {
			r.fail(pgerror.Unsupported("EXCLUDE in a WINDOW clause is not supported").
				WithHint("Write the EXCLUDE clause in the OVER (...) of each call, e.g. OVER (w ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE CURRENT ROW).").
				WithPosition(charPos(r.src, as.pos)))
		}
		r.exclude, r.framed = outer, outerFramed
		if !r.tok().isPunct(",") {
			return out
		}
		out = append(out, exact(r.tok(), r.src))
		r.i++
	}
}

// valuesRows handles VALUES (..), (..). In a query it becomes TiDB's
// VALUES ROW(..), ROW(..); after INSERT the rows stay plain.
func (r *rewriter) valuesRows(insert bool) frag {
	t := r.expectWord("values")
	out := frag{syn("VALUES", t.pos)}
	for {
		open := r.expectPunct("(")
		if insert {
			out = append(out, syn("(", open.pos))
		} else {
			out = append(out, syn("ROW(", open.pos))
		}
		for !r.tok().isPunct(")") {
			out = append(out, r.parseExpr(0).f...)
			if r.tok().isPunct(",") {
				out = append(out, exact(r.tok(), r.src))
				r.i++
				continue
			}
			if !r.tok().isPunct(")") {
				r.syntaxErr(r.tok())
			}
		}
		out = append(out, syn(")", r.tok().pos))
		r.i++
		if !r.tok().isPunct(",") {
			return out
		}
		out = append(out, exact(r.tok(), r.src))
		r.i++
	}
}

// fromItem handles one FROM item: a table, a derived table, a
// parenthesised join or a table function, with its alias.
func (r *rewriter) fromItem(st *level) frag {
	st.expectItem = false
	var out frag
	t := r.tok()
	lateral := false
	if t.isWord("lateral") {
		lateral = true
		r.i++
		t = r.tok()
	}
	if t.isWord("only") {
		r.i++
		t = r.tok()
	}
	switch {
	case t.isPunct("("):
		if lateral {
			out = append(out, syn("LATERAL", t.pos))
		}
		n := r.peek(1)
		if n.isWord("select") || n.isWord("with") || n.isWord("values") || n.isPunct("(") || n.isWord("table") {
			out = append(out, r.parenGroup(&level{atStart: true})...)
		} else {
			out = append(out, r.parenGroup(&level{inFrom: true, expectItem: true})...)
		}
	case isName(t):
		// name chain, maybe a function call
		j := r.i + 1
		for r.toks[j].isPunct(".") && isName(r.toks[j+1]) {
			j += 2
		}
		if r.toks[j].isPunct("(") {
			// a function in FROM is implicitly LATERAL: the keyword is dropped
			ph := r.tableFunc()
			out = append(out, syn(quoteIdent(ph), t.pos))
		} else {
			nc := r.nameChain()
			// t FOR SYSTEM_TIME AS OF PROCTIME(): a lookup (processing-time
			// temporal) join side, marked by its name.
			if r.tok().isWord("for") && r.peek(1).isWord("system_time") && r.peek(2).isWord("as") && r.peek(3).isWord("of") {
				r.i += 4
				if !(r.tok().isWord("proctime") || r.tok().isWord("now")) || !r.peek(1).isPunct("(") || !r.peek(2).isPunct(")") {
					r.unsupported(r.tok(), "FOR SYSTEM_TIME AS OF is supported only with PROCTIME()")
				}
				r.i += 3
				last := r.toks[r.i-8]
				nc[len(nc)-1] = syn(quoteIdent(LookupPrefix+last.val), last.pos)
			}
			out = append(out, nc...)
		}
	default:
		r.syntaxErr(t)
	}
	if r.tok().isWord("with") && r.peek(1).isWord("ordinality") {
		// unnest(a) WITH ORDINALITY: the table function
		// __pg_unnest_ordinality(a) (columns unnest, ordinality).
		if n := len(r.tfs); n > 0 && r.tfs[n-1].name == "unnest" && len(r.tfs[n-1].args) == 1 && out != nil {
			r.tfs[n-1].name = "__pg_unnest_ordinality"
			r.i += 2
		} else {
			r.unsupported(r.tok(), "WITH ORDINALITY is supported only for unnest(array)")
		}
	}
	if r.tok().isWord("tablesample") {
		r.unsupported(r.tok(), "TABLESAMPLE is not supported")
	}
	// alias
	a := r.tok()
	var alias token
	hasAlias := false
	if a.isWord("as") {
		r.i++
		alias = r.tok()
		if !isName(alias) {
			r.syntaxErr(alias)
		}
		r.i++
		hasAlias = true
	} else if a.kind == tkQIdent || a.kind == tkIdent && !pgReserved[a.val] && r.asofJoinLen() == 0 {
		alias = a
		r.i++
		hasAlias = true
	}
	if hasAlias {
		name := alias.val
		if r.tok().isPunct("(") {
			cols := r.identNames()
			marker := "__pg_alias__" + strconv.Itoa(len(r.alias)+1)
			r.alias = append(r.alias, aliasRec{marker: marker, name: name, cols: cols})
			name = marker
		}
		out = append(out, syn("AS", alias.pos), syn(quoteIdent(name), alias.pos))
	}
	return out
}

// LookupPrefix marks the table name of a lookup join side
// (t FOR SYSTEM_TIME AS OF PROCTIME()).
const LookupPrefix = "__pg_lookup__"

// tableFunc reads a function call in FROM and returns its placeholder
// table name.
func (r *rewriter) tableFunc() string {
	t := r.tok()
	var parts []string
	for {
		parts = append(parts, r.tok().val)
		r.i++
		if r.tok().isPunct(".") {
			r.i++
			continue
		}
		break
	}
	if len(parts) > 1 && parts[0] == "pg_catalog" {
		parts = parts[1:]
	}
	name := strings.Join(parts, ".")
	r.expectPunct("(")
	var args []frag
	for !r.tok().isPunct(")") {
		args = append(args, r.parseExpr(0).f)
		if r.tok().isPunct(",") {
			r.i++
			continue
		}
		if !r.tok().isPunct(")") {
			r.syntaxErr(r.tok())
		}
	}
	r.i++
	r.nTF++
	kind := "func"
	switch name {
	case "tumble", "hop", "session":
		kind = name
	}
	ph := "__pg_" + kind + "__" + strconv.Itoa(r.nTF)
	r.tfs = append(r.tfs, tfCall{placeholder: ph, name: name, args: args, pos: t.pos})
	return ph
}

// orderItem is one ORDER BY item.
type orderItem struct {
	e     expr
	desc  bool
	dir   bool // ASC or DESC written
	nulls int  // 0 default, 1 first, 2 last
	pos   int
}

func (r *rewriter) orderItems() []orderItem {
	var items []orderItem
	for {
		it := orderItem{pos: r.tok().pos}
		it.e = r.parseExpr(0)
		switch {
		case r.tok().isWord("asc"):
			it.dir = true
			r.i++
		case r.tok().isWord("desc"):
			it.dir, it.desc = true, true
			r.i++
		case r.tok().isWord("using"):
			r.i++
			op := r.tok()
			switch {
			case op.isOp("<"):
				it.dir = true
			case op.isOp(">"):
				it.dir, it.desc = true, true
			default:
				r.unsupported(op, "ORDER BY USING %s is not supported", r.src[op.pos:op.end])
			}
			r.i++
		}
		if r.tok().isWord("nulls") {
			switch {
			case r.peek(1).isWord("first"):
				it.nulls = 1
			case r.peek(1).isWord("last"):
				it.nulls = 2
			default:
				r.syntaxErr(r.peek(1))
			}
			r.i += 2
		}
		items = append(items, it)
		if !r.tok().isPunct(",") {
			return items
		}
		r.i++
	}
}

// orderBy handles ORDER BY items. NULLS FIRST/LAST wraps the item in the
// marker __pg_nulls(expr, 1|2), which the parser removes after TiDB parsed
// the text (recording Query.NullsOrder).
func (r *rewriter) orderBy() frag {
	t := r.expectWord("order")
	r.expectWord("by")
	out := frag{syn("ORDER BY", t.pos)}
	for k, it := range r.orderItems() {
		if k > 0 {
			out = append(out, syn(",", it.pos))
		}
		f := it.e.f
		if it.nulls != 0 {
			f = call("__pg_nulls", it.pos, it.e.f, frag{syn(strconv.Itoa(it.nulls), it.pos)}).f
		}
		out = append(out, f...)
		if it.dir {
			if it.desc {
				out = append(out, syn("DESC", it.pos))
			} else {
				out = append(out, syn("ASC", it.pos))
			}
		}
	}
	return out
}

// limitClause handles any order of LIMIT n|ALL, OFFSET m [ROWS] and FETCH
// {FIRST|NEXT} [n] {ROW|ROWS} ONLY, emitting TiDB's LIMIT n [OFFSET m].
func (r *rewriter) limitClause() frag {
	start := r.tok().pos
	var count, offset frag
	for {
		t := r.tok()
		switch {
		case t.isWord("limit"):
			r.i++
			if r.tok().isWord("all") || r.tok().isWord("null") {
				r.i++
				count = nil
				continue
			}
			count = r.limitValue()
		case t.isWord("offset"):
			r.i++
			offset = r.limitValue()
			if r.tok().isWord("row") || r.tok().isWord("rows") {
				r.i++
			}
		case t.isWord("fetch"):
			r.i++
			if !r.tok().isWord("first") && !r.tok().isWord("next") {
				r.syntaxErr(r.tok())
			}
			r.i++
			if r.tok().isWord("row") || r.tok().isWord("rows") {
				count = frag{syn("1", t.pos)}
			} else {
				count = r.limitValue()
			}
			if !r.tok().isWord("row") && !r.tok().isWord("rows") {
				r.syntaxErr(r.tok())
			}
			r.i++
			if r.tok().isWord("with") && r.peek(1).isWord("ties") {
				// WITH TIES travels in the count: TiDB's LIMIT takes only
				// a literal (see TiesBias).
				n, err := strconv.ParseUint(count[0].s, 10, 64)
				if len(count) != 1 || count[0].param != 0 || err != nil || n >= TiesBias {
					r.unsupported(r.tok(), "FETCH ... WITH TIES needs an integer constant count")
				}
				count = frag{syn(strconv.FormatUint(n+TiesBias, 10), count[0].pos)}
				r.i += 2
				continue
			}
			r.expectWord("only")
		default:
			if t.isPunct(",") && count != nil {
				r.fail(syntaxErrAt(r.src, start, "LIMIT #,# syntax is not supported").WithHint("Use separate LIMIT and OFFSET clauses."))
			}
			if count == nil && offset == nil {
				return nil
			}
			out := frag{syn("LIMIT", start)}
			if count == nil {
				out = append(out, syn("18446744073709551615", start))
			} else {
				out = append(out, count...)
			}
			if offset != nil {
				out = append(out, syn("OFFSET", start))
				out = append(out, offset...)
			}
			return out
		}
	}
}

// TiesBias is added to the count of FETCH FIRST n ROWS WITH TIES, the one
// form of the clause TiDB's grammar cannot carry: the planner reads a
// count in [TiesBias, 2*TiesBias) as n WITH TIES (LIMIT counts that large
// mean no limit in practice).
const TiesBias = 1 << 61

// limitValue reads an integer constant or a parameter ($n becomes a TiDB
// '?' marker: TiDB's LIMIT takes no expressions).
func (r *rewriter) limitValue() frag {
	t := r.tok()
	paren := false
	if t.isPunct("(") && (r.peek(1).kind == tkNumber || r.peek(1).kind == tkParam) && r.peek(2).isPunct(")") {
		paren = true
		r.i++
		t = r.tok()
	}
	var out frag
	switch t.kind {
	case tkNumber:
		if strings.ContainsAny(t.val, ".eE") {
			r.unsupported(t, "LIMIT and OFFSET must be integer constants or parameters")
		}
		out = frag{exact(t, r.src)}
	case tkParam:
		n, err := strconv.Atoi(t.val)
		if err != nil || n < 1 {
			r.fail(pgerror.New(pgcode.UndefinedParameter, "there is no parameter %s", r.src[t.pos:t.end]).WithPosition(charPos(r.src, t.pos)))
		}
		out = frag{{s: "?", pos: t.pos, param: n}}
	default:
		if t.kind == tkEOF {
			r.syntaxErr(t)
		}
		r.unsupported(t, "LIMIT and OFFSET must be integer constants or parameters")
	}
	r.i++
	if paren {
		r.expectPunct(")")
	}
	return out
}

// insertStmt handles INSERT INTO name [AS alias] [(cols)] {VALUES ... |
// query | DEFAULT VALUES}.
func (r *rewriter) insertStmt() frag {
	t := r.expectWord("insert")
	into := r.expectWord("into")
	out := frag{syn("INSERT", t.pos), syn("INTO", into.pos)}
	out = append(out, r.nameChain()...)
	if r.tok().isWord("as") {
		r.i++
		a := r.tok()
		if !isName(a) {
			r.syntaxErr(a)
		}
		r.i++
		out = append(out, syn("AS", a.pos), identPiece(a))
	}
	if r.tok().isPunct("(") && !r.peek(1).isWord("select") && !r.peek(1).isWord("with") && !r.peek(1).isWord("values") && !r.peek(1).isPunct("(") {
		out = append(out, r.identList()...)
	}
	if o := r.tok(); o.isWord("overriding") {
		r.i++
		w := r.tok()
		if !w.isWord("system") && !w.isWord("user") {
			r.syntaxErr(w)
		}
		r.i++
		r.expectWord("value")
		r.overriding = w.val
	}
	n := r.tok()
	switch {
	case n.isWord("default") && r.peek(1).isWord("values"):
		r.i += 2
		out = append(out, syn("() VALUES ()", n.pos))
	case n.isWord("values"):
		out = append(out, r.valuesRows(true)...)
	default:
		lv := &level{atStart: true}
		r.dml = &dmlTailState{top: lv, insert: true}
		out = append(out, r.walkSeq(lv)...)
		return out
	}
	r.dml = &dmlTailState{insert: true}
	r.dmlTail()
	return out
}

// updateStmt handles UPDATE [ONLY] name [[AS] alias] SET col = expr, ...
// [WHERE ...].
func (r *rewriter) updateStmt() frag {
	t := r.expectWord("update")
	out := frag{syn("UPDATE", t.pos)}
	if r.tok().isWord("only") {
		r.i++
	}
	out = append(out, r.nameChain()...)
	if r.tok().isWord("as") {
		r.i++
		a := r.tok()
		if !isName(a) {
			r.syntaxErr(a)
		}
		r.i++
		out = append(out, syn("AS", a.pos), identPiece(a))
	} else if a := r.tok(); isName(a) && !a.isWord("set") {
		r.i++
		out = append(out, syn("AS", a.pos), identPiece(a))
	}
	s := r.expectWord("set")
	out = append(out, syn("SET", s.pos))
	for {
		c := r.tok()
		if c.isPunct("(") {
			r.unsupported(c, "multiple-column UPDATE SET is not supported")
		}
		out = append(out, r.nameChain()...)
		if r.tok().isPunct("[") {
			r.unsupported(r.tok(), "UPDATE of array elements is not supported")
		}
		eq := r.tok()
		if !eq.isOp("=") {
			r.syntaxErr(eq)
		}
		r.i++
		out = append(out, syn("=", eq.pos))
		if r.tok().isWord("default") {
			out = append(out, syn("DEFAULT", r.tok().pos))
			r.i++
		} else {
			out = append(out, r.parseExpr(0).f...)
		}
		if !r.tok().isPunct(",") {
			break
		}
		out = append(out, exact(r.tok(), r.src))
		r.i++
	}
	if r.tok().isWord("from") {
		r.unsupported(r.tok(), "UPDATE ... FROM is not supported")
	}
	lv := &level{}
	r.dml = &dmlTailState{top: lv}
	return append(out, r.walkSeq(lv)...)
}

// deleteStmt handles DELETE FROM [ONLY] name [[AS] alias] [WHERE ...].
func (r *rewriter) deleteStmt() frag {
	t := r.expectWord("delete")
	f := r.expectWord("from")
	out := frag{syn("DELETE", t.pos), syn("FROM", f.pos)}
	if r.tok().isWord("only") {
		r.i++
	}
	out = append(out, r.nameChain()...)
	if r.tok().isWord("as") {
		r.i++
		a := r.tok()
		if !isName(a) {
			r.syntaxErr(a)
		}
		r.i++
		out = append(out, syn("AS", a.pos), identPiece(a))
	} else if a := r.tok(); a.kind == tkQIdent || a.kind == tkIdent && !pgReserved[a.val] {
		r.i++
		out = append(out, syn("AS", a.pos), identPiece(a))
	}
	if r.tok().isWord("using") {
		r.unsupported(r.tok(), "DELETE ... USING is not supported")
	}
	lv := &level{}
	r.dml = &dmlTailState{top: lv}
	return append(out, r.walkSeq(lv)...)
}

// ---------------------------------------------------------------------
// Rendering

// seg maps a run of output text back to the user's text.
type seg struct {
	out, pos, n int
	exact       bool
}

// rendered is rewritten text with its position map.
type rendered struct {
	text   string
	segs   []seg
	params map[int]int // offset of a '?' marker -> parameter number
	term   token       // the EOF token of the statement (its end)
}

// render joins pieces with single spaces where TiDB's lexer needs them.
func render(f frag, term token) rendered {
	w := &renderer{params: map[int]int{}}
	w.frag(f)
	return rendered{text: w.sb.String(), segs: w.segs, params: w.params, term: term}
}

type renderer struct {
	sb        strings.Builder
	segs      []seg
	params    map[int]int
	prev      byte
	prevPiece string
}

func (w *renderer) frag(f frag) {
	for _, p := range f {
		if p.sub != nil {
			w.frag(p.sub)
			continue
		}
		if p.s == "" {
			continue
		}
		first := p.s[0]
		if w.sb.Len() > 0 && w.prev != '(' && w.prevPiece != "." && w.prev != '[' &&
			first != ')' && first != ',' && p.s != "." && first != '(' && first != ']' {
			w.sb.WriteByte(' ')
		}
		if p.param > 0 {
			w.params[w.sb.Len()] = p.param
		}
		w.segs = append(w.segs, seg{out: w.sb.Len(), pos: p.pos, n: len(p.s), exact: p.exact})
		w.sb.WriteString(p.s)
		w.prev = p.s[len(p.s)-1]
		w.prevPiece = p.s
	}
}

// origPos maps an offset in the rewritten text to one in the user's text.
// The second result is false when off is at the end of the rewritten text.
func (rd rendered) origPos(off int) (int, bool) {
	if off >= len(rd.text) || len(rd.segs) == 0 {
		return rd.term.pos, false
	}
	k := sort.Search(len(rd.segs), func(i int) bool { return rd.segs[i].out > off }) - 1
	if k < 0 {
		k = 0
	}
	s := rd.segs[k]
	if s.exact && off-s.out < s.n {
		return s.pos + off - s.out, true
	}
	return s.pos, true
}

// excludeClause reads EXCLUDE CURRENT ROW | GROUP | TIES | NO OTHERS of a
// window frame into r.exclude, emitting nothing.
func (r *rewriter) excludeClause() frag {
	t := r.expectWord("exclude")
	if !r.framed {
		r.syntaxErr(t)
	}
	switch n := r.tok(); {
	case n.isWord("current"):
		r.i++
		r.expectWord("row")
		r.exclude = "current row"
	case n.isWord("group"):
		r.i++
		r.exclude = "group"
	case n.isWord("ties"):
		r.i++
		r.exclude = "ties"
	case n.isWord("no"):
		r.i++
		r.expectWord("others")
		r.exclude = "no others"
	default:
		r.syntaxErr(n)
	}
	return nil
}

// plainFrameToken reports whether t, in a window frame clause, is one the
// TiDB grammar takes: a frame word, INTERVAL '…' unit, or a number right
// before PRECEDING or FOLLOWING.
func (r *rewriter) plainFrameToken(t token) bool {
	if t.kind == tkIdent {
		return windowWords[t.val] || t.val == "interval" || t.val == "current" || t.isWord("row")
	}
	if t.kind == tkNumber {
		n := r.toks[r.i+1]
		return n.isWord("preceding") || n.isWord("following")
	}
	return false
}
