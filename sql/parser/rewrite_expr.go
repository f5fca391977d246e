package parser

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// The expression half of the dialect layer (rewrite.go): Postgres
// precedence, operators, literals, function calls and the special forms
// (CASE, ARRAY, INTERVAL, extract, substring, position, trim, overlay).

// ---------------------------------------------------------------------
// Expressions

// binOpPrec returns the Postgres binding power of operator op.
func binOpPrec(op string) int {
	switch op {
	case "^":
		return pPow
	case "*", "/", "%":
		return pMul
	case "+", "-":
		return pAdd
	case "=", "<", ">", "<=", ">=", "<>", "!=":
		return pCmp
	}
	return pOther
}

// parseExpr parses an expression whose operators bind tighter than minPrec.
func (r *rewriter) parseExpr(minPrec int) expr {
	r.enter(r.tok())
	defer func() { r.depth-- }()
	left := r.prefix()
	for chain := 0; ; chain++ {
		t := r.tok()
		// Each pass applies one more operator to left, and the TiDB parser
		// nests a chain like 1+1+1… one level per operator: bound it as
		// deep nesting is bounded (the binder would refuse it anyway).
		if chain > maxChain {
			r.fail(pgerror.New(pgcode.Code("54001"), "stack depth limit exceeded").
				WithHint("The statement's expression has more than %d operators in a row.", maxChain).WithPosition(charPos(r.src, t.pos)))
		}
		switch {
		case t.isPunct("::"):
			if pCast <= minPrec {
				return left
			}
			r.i++
			tn := r.typeName()
			left = call("__pg_cast", t.pos, left.f, frag{syn(strLit(tn.name), tn.pos)})
		case t.isPunct("["):
			if pSub <= minPrec {
				return left
			}
			left = r.subscript(left)
		case t.isWord("collate"):
			if pCollate <= minPrec {
				return left
			}
			// Collations are ignored: COLLATE name is dropped.
			r.i++
			r.nameChainString()
		case t.isWord("at") && r.peek(1).isWord("time") && r.peek(2).isWord("zone"):
			if pAt <= minPrec {
				return left
			}
			r.i += 3
			right := r.parseExpr(pAt)
			left = call("__pg_at_time_zone", t.pos, left.f, right.f)
		case t.kind == tkOp || t.isWord("operator") && r.peek(1).isPunct("("):
			op, n := r.operatorAt(r.i)
			prec := binOpPrec(op)
			if prec <= minPrec {
				return left
			}
			r.i += n
			if prec == pCmp && (r.tok().isWord("any") || r.tok().isWord("some") || r.tok().isWord("all")) && r.peek(1).isPunct("(") {
				left = r.quantified(left, op, t)
				continue
			}
			right := r.parseExpr(prec)
			left = r.binop(op, t, left, right)
		case t.isWord("and"), t.isWord("or"):
			prec, lev := pAnd, levAnd
			if t.val == "or" {
				prec, lev = pOr, levOr
			}
			if prec <= minPrec {
				return left
			}
			r.i++
			right := r.parseExpr(prec)
			f := append(append(wrap(left, lev), syn(strings.ToUpper(t.val), t.pos)), wrap(right, lev+1)...)
			left = expr{f: f, lev: lev}
		case t.isWord("is"), t.isWord("isnull"), t.isWord("notnull"):
			if pIs <= minPrec {
				return left
			}
			left = r.isExpr(left)
		case t.isWord("not") && (r.peek(1).isWord("in") || r.peek(1).isWord("like") || r.peek(1).isWord("ilike") || r.peek(1).isWord("between") || r.peek(1).isWord("similar")),
			t.isWord("in"), t.isWord("like"), t.isWord("ilike"), t.isWord("between"), t.isWord("similar") && r.peek(1).isWord("to"):
			if pLike <= minPrec {
				return left
			}
			left = r.predicate(left)
		default:
			return left
		}
	}
}

// operatorAt returns the operator at toks[i] (a plain operator token or
// OPERATOR(schema.op)) and the number of tokens it spans.
func (r *rewriter) operatorAt(i int) (string, int) {
	t := r.toks[i]
	if t.kind == tkOp {
		return t.val, 1
	}
	// OPERATOR ( [schema .] op )
	j := i + 2
	for isName(r.toks[j]) && r.toks[j+1].isPunct(".") {
		j += 2
	}
	if r.toks[j].kind != tkOp {
		r.syntaxErr(r.toks[j])
	}
	if !r.toks[j+1].isPunct(")") {
		r.syntaxErr(r.toks[j+1])
	}
	return r.toks[j].val, j + 2 - i
}

// binop builds a binary operator expression.
func (r *rewriter) binop(op string, t token, l, rt expr) expr {
	bin := func(text string, lev int) expr {
		f := append(append(wrap(l, lev), syn(text, t.pos)), wrap(rt, lev+1)...)
		return expr{f: f, lev: lev}
	}
	like := func(text string) expr {
		f := append(append(wrap(l, levBitOr), syn(text, t.pos)), wrap(rt, levUnary)...)
		return expr{f: f, lev: levPred}
	}
	switch op {
	case "+", "-":
		return bin(op, levAdd)
	case "*", "/", "%":
		return bin(op, levMul)
	case "=", "<", ">", "<=", ">=", "<>":
		return bin(op, levCmp)
	case "!=":
		return bin("<>", levCmp)
	case "||":
		// Not TiDB's pipes: with PipesAsConcat they become concat(), which
		// skips NULLs, while Postgres' || yields NULL.
		return call("__pg_concat", t.pos, l.f, rt.f)
	case "&":
		return bin("&", levBitAnd)
	case "|":
		return bin("|", levBitOr)
	case "<<", ">>":
		return bin(op, levShift)
	case "#":
		return bin("^", levBitXor)
	case "^":
		return call("power", t.pos, l.f, rt.f)
	case "~":
		return call("__pg_regex", t.pos, l.f, rt.f)
	case "~*":
		return call("__pg_regexi", t.pos, l.f, rt.f)
	case "!~":
		return not(call("__pg_regex", t.pos, l.f, rt.f), t.pos)
	case "!~*":
		return not(call("__pg_regexi", t.pos, l.f, rt.f), t.pos)
	case "~~":
		return like("LIKE")
	case "!~~":
		return like("NOT LIKE")
	case "~~*":
		return like("ILIKE")
	case "!~~*":
		return like("NOT ILIKE")
	case "^@":
		return call("starts_with", t.pos, l.f, rt.f)
	}
	if fn, ok := jsonOps[op]; ok {
		return call(fn, t.pos, l.f, rt.f)
	}
	r.unsupported(t, "operator %s is not supported", op)
	return expr{}
}

// jsonOps maps the JSON and array operators to marker functions.
var jsonOps = map[string]string{
	"->":  "__pg_json_get",
	"->>": "__pg_json_get_text",
	"#>":  "__pg_json_path",
	"#>>": "__pg_json_path_text",
	"@>":  "__pg_contains",
	"<@":  "__pg_contained_by",
	"?":   "__pg_json_exists",
	"?|":  "__pg_json_exists_any",
	"?&":  "__pg_json_exists_all",
	"&&":  "__pg_overlap",
	"#-":  "__pg_json_delete_path",
}

// quantified handles `left op ANY|SOME|ALL (subquery | array)`.
func (r *rewriter) quantified(left expr, op string, opTok token) expr {
	q := r.tok()
	r.i++
	n := r.peek(1)
	isSub := n.isWord("select") || n.isWord("with") || n.isWord("values")
	if isSub {
		if op == "!=" {
			op = "<>"
		}
		switch op {
		case "=", "<", ">", "<=", ">=", "<>":
		default:
			r.unsupported(opTok, "operator %s is not supported with %s", op, strings.ToUpper(q.val))
		}
		kw := "ANY"
		if q.val == "all" {
			kw = "ALL"
		}
		f := append(wrap(left, levCmp), syn(op, opTok.pos), syn(kw, q.pos))
		f = append(f, r.parenGroup(&level{atStart: true})...)
		return expr{f: f, lev: levCmp}
	}
	r.expectPunct("(")
	arr := r.parseExpr(0)
	r.expectPunct(")")
	fn := "__pg_any"
	if q.val == "all" {
		fn = "__pg_all"
	}
	return call(fn, q.pos, left.f, frag{syn(strLit(op), opTok.pos)}, arr.f)
}

// isExpr handles IS [NOT] NULL | TRUE | FALSE | UNKNOWN | DISTINCT FROM x,
// ISNULL and NOTNULL.
func (r *rewriter) isExpr(left expr) expr {
	t := r.tok()
	r.i++
	switch t.val {
	case "isnull":
		return expr{f: append(wrap(left, levCmp), syn("IS NULL", t.pos)), lev: levCmp}
	case "notnull":
		return expr{f: append(wrap(left, levCmp), syn("IS NOT NULL", t.pos)), lev: levCmp}
	}
	neg := false
	if r.tok().isWord("not") {
		neg = true
		r.i++
	}
	w := r.tok()
	isText := "IS"
	if neg {
		isText = "IS NOT"
	}
	switch {
	case w.isWord("null"):
		r.i++
		return expr{f: append(wrap(left, levCmp), syn(isText+" NULL", t.pos)), lev: levCmp}
	case w.isWord("true"), w.isWord("false"), w.isWord("unknown"):
		r.i++
		return expr{f: append(wrap(left, levCmp), syn(isText+" "+strings.ToUpper(w.val), t.pos)), lev: levIsBool}
	case w.isWord("distinct"):
		r.i++
		r.expectWord("from")
		right := r.parseExpr(pIs)
		e := call("__pg_distinct", t.pos, left.f, right.f)
		if neg {
			return not(e, t.pos)
		}
		return e
	case w.kind == tkIdent && (w.val == "document" || w.val == "normalized" || w.val == "of" || w.val == "json" || w.val == "nfc" || w.val == "nfd" || w.val == "nfkc" || w.val == "nfkd"):
		r.unsupported(w, "IS %s is not supported", strings.ToUpper(w.val))
	}
	r.syntaxErr(w)
	return expr{}
}

// predicate handles [NOT] IN / LIKE / ILIKE / BETWEEN / SIMILAR TO.
func (r *rewriter) predicate(left expr) expr {
	start := r.tok()
	neg := false
	if start.isWord("not") {
		neg = true
		r.i++
	}
	t := r.tok()
	r.i++
	notText := ""
	if neg {
		notText = "NOT "
	}
	switch t.val {
	case "in":
		if !r.tok().isPunct("(") {
			r.syntaxErr(r.tok())
		}
		f := append(wrap(left, levBitOr), syn(notText+"IN", t.pos))
		f = append(f, r.parenGroup(&level{atStart: true})...)
		return expr{f: f, lev: levPred}
	case "like", "ilike":
		if r.tok().isWord("any") || r.tok().isWord("all") || r.tok().isWord("some") {
			r.unsupported(r.tok(), "%s %s is not supported", strings.ToUpper(t.val), strings.ToUpper(r.tok().val))
		}
		right := r.parseExpr(pLike)
		f := append(wrap(left, levBitOr), syn(notText+strings.ToUpper(t.val), t.pos))
		f = append(f, wrap(right, levUnary)...)
		if r.tok().isWord("escape") {
			e := r.tok()
			r.i++
			esc := r.tok()
			if esc.kind != tkString {
				r.unsupported(esc, "ESCAPE must be a string literal")
			}
			f = append(f, syn("ESCAPE", e.pos), r.stringPiece(esc))
			r.i++
		}
		return expr{f: f, lev: levPred}
	case "similar":
		r.expectWord("to")
		right := r.parseExpr(pLike)
		args := []frag{left.f, right.f}
		if r.tok().isWord("escape") {
			r.i++
			args = append(args, r.parseExpr(pLike).f)
		}
		e := call("__pg_similar", t.pos, args...)
		if neg {
			return not(e, start.pos)
		}
		return e
	case "between":
		sym := false
		if r.tok().isWord("symmetric") {
			sym = true
			r.i++
		} else if r.tok().isWord("asymmetric") {
			r.i++
		}
		lo := r.parseExpr(pLike)
		and := r.expectWord("and")
		hi := r.parseExpr(pLike)
		if sym {
			e := call("__pg_between_symmetric", t.pos, left.f, lo.f, hi.f)
			if neg {
				return not(e, start.pos)
			}
			return e
		}
		f := append(wrap(left, levBitOr), syn(notText+"BETWEEN", t.pos))
		f = append(f, wrap(lo, levBitOr)...)
		f = append(f, syn("AND", and.pos))
		f = append(f, wrap(hi, levPred)...)
		return expr{f: f, lev: levPred}
	}
	r.syntaxErr(t)
	return expr{}
}

// subscript handles expr[i] and expr[i:j].
func (r *rewriter) subscript(left expr) expr {
	open := r.expectPunct("[")
	var lo, hi frag
	slice := false
	if !r.tok().isPunct(":") {
		lo = r.parseExpr(0).f
	}
	if r.tok().isPunct(":") {
		slice = true
		r.i++
		if !r.tok().isPunct("]") {
			hi = r.parseExpr(0).f
		}
	}
	r.expectPunct("]")
	if !slice {
		// a[i][j]: one call with every index, so that a multidimensional
		// array is indexed as PostgreSQL indexes it.
		args := []frag{left.f, lo}
		for len(args) < 4 && r.tok().isPunct("[") && r.chainedIndex() {
			r.i++
			args = append(args, r.parseExpr(0).f)
			r.expectPunct("]")
		}
		return call("__pg_subscript", open.pos, args...)
	}
	null := frag{syn("NULL", open.pos)}
	if lo == nil {
		lo = null
	}
	if hi == nil {
		hi = null
	}
	return call("__pg_slice", open.pos, left.f, lo, hi)
}

// chainedIndex reports whether the "[" at the cursor opens a plain index
// (no slice) that ends before the statement does.
func (r *rewriter) chainedIndex() bool {
	depth := 0
	for j := r.i; j < len(r.toks); j++ {
		t := r.toks[j]
		switch {
		case t.isPunct("[") || t.isPunct("("):
			depth++
		case t.isPunct("]") || t.isPunct(")"):
			depth--
			if depth == 0 {
				return true
			}
		case depth == 1 && t.isPunct(":"):
			return false
		case t.kind == tkEOF:
			return false
		}
	}
	return false
}

// prefix parses a prefix operator expression or a primary.
func (r *rewriter) prefix() expr {
	t := r.tok()
	if t.isWord("not") {
		r.i++
		return not(r.parseExpr(pNot), t.pos)
	}
	if t.kind == tkOp {
		switch t.val {
		case "-", "+", "~":
			r.i++
			operand := r.parseExpr(pUnary)
			return expr{f: frag{syn(t.val, t.pos), group(wrap(operand, levUnary))}, lev: levUnary}
		case "@":
			r.i++
			return call("abs", t.pos, r.parseExpr(pUnary).f)
		case "|/":
			r.i++
			return call("sqrt", t.pos, r.parseExpr(pUnary).f)
		case "||/":
			r.i++
			return call("cbrt", t.pos, r.parseExpr(pUnary).f)
		}
		r.syntaxErr(t)
	}
	return r.primary()
}

// stringPiece renders a string literal token.
func (r *rewriter) stringPiece(t token) piece {
	switch t.sub {
	case strBit, strHex:
		r.unsupported(t, "bit string literals are not supported")
	}
	if strings.IndexByte(t.val, 0) >= 0 {
		r.fail(pgerror.New(pgcode.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\": 0x00").WithPosition(charPos(r.src, t.pos)))
	}
	if !utf8.ValidString(t.val) {
		r.fail(pgerror.New(pgcode.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\"").WithPosition(charPos(r.src, t.pos)))
	}
	if lit := strLit(t.val); t.sub == strStd && r.src[t.pos:t.end] == lit {
		// plain literal: the text is the same for TiDB
		return exact(t, r.src)
	}
	return syn(strLit(t.val), t.pos)
}

// primary parses a primary expression.
func (r *rewriter) primary() expr {
	t := r.tok()
	switch t.kind {
	case tkNumber:
		r.i++
		if strings.HasSuffix(t.val, ".") {
			// TiDB's lexer misreads "5. AS x"; keep the literal in parentheses.
			return prim(frag{syn("(", t.pos), exact(t, r.src), syn(")", t.pos)})
		}
		if strings.ContainsAny(t.val, "eE") {
			// In PostgreSQL a literal with an exponent is a numeric
			// constant (1e30 prints 1000000000000000000000000000000, and
			// 1e400 is no overflow); TiDB's lexer reads it as a double.
			return call("__pg_cast", t.pos, frag{syn(strLit(t.val), t.pos)}, frag{syn(strLit("numeric"), t.pos)})
		}
		return prim(frag{exact(t, r.src)})
	case tkString:
		r.i++
		return prim(frag{r.stringPiece(t)})
	case tkParam:
		r.i++
		n, err := strconv.Atoi(t.val)
		if err != nil || n < 1 {
			r.fail(pgerror.New(pgcode.UndefinedParameter, "there is no parameter %s", r.src[t.pos:t.end]).WithPosition(charPos(r.src, t.pos)))
		}
		return call("__pg_param", t.pos, frag{syn(strconv.Itoa(n), t.pos)})
	case tkPunct:
		if t.isPunct("(") {
			g := prim(r.parenGroup(&level{atStart: true}))
			// (expr).field: a field of a composite value.
			for r.tok().isPunct(".") && (r.peek(1).kind == tkIdent || r.peek(1).kind == tkQIdent) {
				dot := r.tok()
				field := r.peek(1)
				r.i += 2
				g = call("__pg_field", dot.pos, g.f, frag{syn(strLit(field.val), field.pos)})
			}
			return g
		}
	case tkQIdent:
		return r.nameOrCall()
	case tkIdent:
		return r.word()
	}
	r.syntaxErr(t)
	return expr{}
}

// word parses a primary that starts with an unquoted word.
func (r *rewriter) word() expr {
	t := r.tok()
	w := t.val
	next := r.peek(1)
	switch w {
	case "true", "false", "null":
		r.i++
		return prim(frag{syn(strings.ToUpper(w), t.pos)})
	case "default":
		r.i++
		return prim(frag{syn("DEFAULT", t.pos)})
	case "case":
		return r.caseExpr()
	case "cast":
		if next.isPunct("(") {
			r.i += 2
			e := r.parseExpr(0)
			r.expectWord("as")
			tn := r.typeName()
			r.expectPunct(")")
			return call("__pg_cast", t.pos, e.f, frag{syn(strLit(tn.name), tn.pos)})
		}
	case "array":
		if next.isPunct("[") {
			r.i++
			return r.arrayLit(t.pos)
		}
		if next.isPunct("(") {
			r.i++
			return call("__pg_array_subquery", t.pos, r.parenGroup(&level{atStart: true}))
		}
	case "exists":
		if next.isPunct("(") {
			r.i++
			f := frag{syn("EXISTS", t.pos)}
			return prim(append(f, r.parenGroup(&level{atStart: true})...))
		}
	case "interval":
		if next.kind == tkString || next.kind == tkNumber || next.isOp("-") && r.peek(2).kind == tkNumber {
			return r.intervalLit()
		}
	case "extract":
		if next.isPunct("(") {
			return r.extractExpr()
		}
	case "substring":
		if next.isPunct("(") {
			return r.substringExpr()
		}
	case "position":
		if next.isPunct("(") {
			return r.positionExpr()
		}
	case "trim":
		if next.isPunct("(") {
			return r.trimExpr()
		}
	case "overlay":
		if next.isPunct("(") {
			return r.overlayExpr()
		}
	case "row":
		if next.isPunct("(") {
			r.i++
			f := frag{syn("ROW", t.pos)}
			return prim(append(f, r.parenGroup(&level{atStart: true})...))
		}
	case "current_date", "current_time", "current_timestamp", "localtime", "localtimestamp":
		r.i++
		f := frag{syn(w, t.pos)}
		if r.tok().isPunct("(") {
			f = append(f, r.parenGroup(&level{})...)
		}
		return prim(f)
	case "current_user", "session_user", "user", "current_role", "current_schema", "current_catalog":
		if !next.isPunct("(") {
			r.i++
			name := w
			if w == "user" {
				name = "current_user"
			}
			return prim(frag{syn(name+"()", t.pos)})
		}
	}
	if typeStartWords[w] {
		if e, ok := r.typedLiteral(); ok {
			return e
		}
	}
	if pgReserved[w] && !exprKeywords[w] && !((w == "left" || w == "right") && next.isPunct("(")) {
		r.syntaxErr(t)
	}
	return r.nameOrCall()
}

// typedLiteral parses `type 'string'` (a typed literal) if it is one.
func (r *rewriter) typedLiteral() (expr, bool) {
	save := r.i
	tn, j, err := parseTypeName(r.src, r.toks, r.i)
	if err != nil || r.toks[j].kind != tkString || r.toks[j].sub == strBit || r.toks[j].sub == strHex {
		r.i = save
		return expr{}, false
	}
	s := r.toks[j]
	r.i = j + 1
	return call("__pg_cast", tn.pos, frag{r.stringPiece(s)}, frag{syn(strLit(tn.name), tn.pos)}), true
}

// typeName parses a type name at the current token.
func (r *rewriter) typeName() typeName {
	tn, j, err := parseTypeName(r.src, r.toks, r.i)
	if err != nil {
		r.fail(err)
	}
	r.i = j
	return tn
}

// nameOrCall parses a column reference a.b.c (or a.*) or a function call.
func (r *rewriter) nameOrCall() expr {
	var parts []token
	parts = append(parts, r.tok())
	r.i++
	star := false
	for r.tok().isPunct(".") {
		n := r.peek(1)
		if isName(n) {
			parts = append(parts, n)
			r.i += 2
			continue
		}
		if n.isOp("*") {
			star = true
			r.i += 2
		}
		break
	}
	if !star && r.tok().isPunct("(") {
		return r.funcCall(parts)
	}
	var f frag
	for k, p := range parts {
		if k > 0 {
			f = append(f, syn(".", p.pos))
		}
		f = append(f, identPiece(p))
	}
	if star {
		f = append(f, syn(".", parts[len(parts)-1].end), syn("*", parts[len(parts)-1].end))
	}
	return prim(f)
}

// funcName renders a function name. pg_catalog is dropped (and
// information_schema before an _pg_ helper); unquoted names
// stay unquoted (TiDB parses builtins such as count() by keyword) unless
// TiDB reserves the word.
func funcName(parts []token) string {
	if len(parts) > 1 && parts[0].kind == tkIdent && parts[0].val == "pg_catalog" {
		parts = parts[1:]
	}
	// information_schema's helpers (_pg_expandarray) are Sluice built-ins.
	if len(parts) == 2 && parts[0].kind == tkIdent && parts[0].val == "information_schema" && strings.HasPrefix(parts[1].val, "_pg_") {
		parts = parts[1:]
	}
	if len(parts) == 1 && parts[0].kind == tkIdent {
		if to, ok := pgAggRenames[parts[0].val]; ok {
			return to
		}
	}
	var sb strings.Builder
	for k, p := range parts {
		if k > 0 {
			sb.WriteByte('.')
		}
		last := k == len(parts)-1
		switch {
		case !last:
			sb.WriteString(quoteIdent(p.val))
		case p.kind == tkQIdent:
			sb.WriteString(quoteIdent(p.val))
		case len(parts) == 1 && (tidbReserved[p.val] && !tidbFuncKeywords[p.val] || tidbSeqFuncs[p.val] || tidbKeywordNames[p.val]):
			sb.WriteString(quoteIdent(p.val))
		default:
			sb.WriteString(p.val)
		}
	}
	return sb.String()
}

// pgAggRenames are PostgreSQL aggregates TiDB's grammar reads otherwise:
// stddev and variance are MySQL's population ones there, and mode is a
// keyword. The planner turns the renamed calls back into the aggregates.
var pgAggRenames = map[string]string{"stddev": "__pg_stddev", "variance": "__pg_variance", "mode": "__pg_mode"}

// tidbSeqFuncs are sequence functions TiDB's grammar takes a table name
// in; quoted, they parse as ordinary calls with Postgres' text argument.
var tidbSeqFuncs = map[string]bool{"nextval": true, "setval": true, "lastval": true}

// funcCall parses the argument list and trailing clauses of a call.
func (r *rewriter) funcCall(parts []token) expr {
	name := funcName(parts)
	pos := parts[0].pos
	r.expectPunct("(")
	f := frag{syn(name+"(", pos)}
	var order []orderItem
	distinctMarker := false
	if r.tok().isOp("*") {
		f = append(f, exact(r.tok(), r.src))
		r.i++
	} else if !r.tok().isPunct(")") {
		if r.tok().isWord("distinct") {
			// TiDB takes DISTINCT only in its own aggregates; others get
			// the marker __pg_agg_distinct(agg(args)).
			if tidbDistinctAggs[name] {
				f = append(f, syn("DISTINCT", r.tok().pos))
			} else {
				distinctMarker = true
			}
			r.i++
		} else if r.tok().isWord("all") {
			r.i++
		}
		for k := 0; ; k++ {
			if r.tok().isWord("variadic") {
				r.unsupported(r.tok(), "VARIADIC is not supported")
			}
			if isName(r.tok()) && (r.peek(1).isOp("=>") || r.peek(1).isOp(":=")) {
				r.unsupported(r.tok(), "named function arguments are not supported")
			}
			if k > 0 {
				f = append(f, syn(",", r.toks[r.i-1].pos))
			}
			f = append(f, r.parseExpr(0).f...)
			if r.tok().isPunct(",") {
				r.i++
				continue
			}
			break
		}
		if r.tok().isWord("order") && r.peek(1).isWord("by") {
			r.i += 2
			order = r.orderItems()
		}
	}
	c := r.tok()
	if !c.isPunct(")") {
		r.syntaxErr(c)
	}
	r.i++
	f = append(f, syn(")", c.pos))
	e := prim(f)
	if distinctMarker {
		e = call("__pg_agg_distinct", pos, e.f)
	}
	if r.tok().isWord("within") && r.peek(1).isWord("group") && r.peek(2).isPunct("(") {
		if order != nil {
			r.unsupported(r.tok(), "cannot use multiple ORDER BY clauses with WITHIN GROUP")
		}
		r.i += 3
		r.expectWord("order")
		r.expectWord("by")
		order = r.orderItems()
		r.expectPunct(")")
	}
	if order != nil {
		args := []frag{e.f}
		for _, it := range order {
			dir := "asc"
			if it.desc {
				dir = "desc"
			}
			switch it.nulls {
			case 1:
				dir += " nulls first"
			case 2:
				dir += " nulls last"
			}
			args = append(args, it.e.f, frag{syn(strLit(dir), it.pos)})
		}
		e = call("__pg_agg_order", pos, args...)
	}
	var filter *expr
	if r.tok().isWord("filter") && r.peek(1).isPunct("(") {
		r.i += 2
		r.expectWord("where")
		cond := r.parseExpr(0)
		r.expectPunct(")")
		filter = &cond
	}
	if r.tok().isWord("over") {
		if order != nil {
			r.unsupported(r.tok(), "ORDER BY in the arguments of a window function is not supported")
		}
		ot := r.tok()
		r.i++
		e.f = append(e.f, syn("OVER", ot.pos))
		if isName(r.tok()) {
			e.f = append(e.f, identPiece(r.tok()))
			r.i++
		} else {
			outer, outerFramed := r.exclude, r.framed
			r.exclude, r.framed = "", false
			e.f = append(e.f, r.parenGroup(&level{window: true})...)
			if r.exclude != "" {
				e = call("__pg_exclude", pos, e.f, frag{syn(strLit(r.exclude), ot.pos)})
			}
			r.exclude, r.framed = outer, outerFramed
		}
	}
	if filter != nil {
		e = call("__pg_filter", pos, e.f, filter.f)
	}
	return e
}

// tidbDistinctAggs are the aggregates whose DISTINCT TiDB parses itself.
var tidbDistinctAggs = wordSet("count sum avg min max")

// caseExpr parses CASE ... END.
func (r *rewriter) caseExpr() expr {
	t := r.expectWord("case")
	f := frag{syn("CASE", t.pos)}
	if !r.tok().isWord("when") {
		f = append(f, r.parseExpr(0).f...)
	}
	if !r.tok().isWord("when") {
		r.syntaxErr(r.tok())
	}
	for r.tok().isWord("when") {
		w := r.tok()
		r.i++
		f = append(f, syn("WHEN", w.pos))
		f = append(f, r.parseExpr(0).f...)
		th := r.expectWord("then")
		f = append(f, syn("THEN", th.pos))
		f = append(f, r.parseExpr(0).f...)
	}
	if r.tok().isWord("else") {
		e := r.tok()
		r.i++
		f = append(f, syn("ELSE", e.pos))
		f = append(f, r.parseExpr(0).f...)
	}
	end := r.expectWord("end")
	return prim(append(f, syn("END", end.pos)))
}

// arrayLit parses [a, b, ...] (after ARRAY, or nested) into __pg_array.
func (r *rewriter) arrayLit(pos int) expr {
	r.expectPunct("[")
	var args []frag
	for !r.tok().isPunct("]") {
		if r.tok().isPunct("[") {
			args = append(args, r.arrayLit(r.tok().pos).f)
		} else {
			args = append(args, r.parseExpr(0).f)
		}
		if r.tok().isPunct(",") {
			r.i++
			continue
		}
		if !r.tok().isPunct("]") {
			r.syntaxErr(r.tok())
		}
	}
	r.i++
	return call("__pg_array", pos, args...)
}

// intervalLit parses INTERVAL 'text' [fields] into __pg_interval('text').
func (r *rewriter) intervalLit() expr {
	t := r.expectWord("interval")
	v := r.tok()
	var text string
	switch v.kind {
	case tkString:
		if v.sub == strBit || v.sub == strHex {
			r.unsupported(v, "bit string literals are not supported")
		}
		text = v.val
		r.i++
	case tkNumber:
		text = v.val
		r.i++
	default: // '-' number
		text = "-" + r.peek(1).val
		r.i += 2
	}
	field := ""
	if f := r.tok(); f.kind == tkIdent && isIntervalField(unplural(f.val)) {
		field = unplural(f.val)
		r.i++
		if r.tok().isPunct("(") && r.peek(1).kind == tkNumber && r.peek(2).isPunct(")") {
			r.i += 3
		}
		if r.tok().isWord("to") && isIntervalField(r.peek(1).val) {
			field = r.peek(1).val
			r.i += 2
			if r.tok().isPunct("(") && r.peek(1).kind == tkNumber && r.peek(2).isPunct(")") {
				r.i += 3
			}
		}
	}
	if field != "" && isPlainNumber(strings.TrimSpace(text)) {
		text = strings.TrimSpace(text) + " " + field
	}
	return call("__pg_interval", t.pos, frag{syn(strLit(text), v.pos)})
}

// frameInterval handles INTERVAL '1' HOUR (or INTERVAL '1 hour') as a
// RANGE frame offset in a window spec, emitted in TiDB's own frame syntax
// INTERVAL '1' HOUR (ast.FrameBound with Expr and Unit).
func (r *rewriter) frameInterval() frag {
	t := r.expectWord("interval")
	v := r.tok()
	r.i++
	num, field := strings.TrimSpace(v.val), ""
	if f := r.tok(); f.kind == tkIdent && isIntervalField(unplural(f.val)) {
		field = unplural(f.val)
		r.i++
	} else if parts := strings.Fields(num); len(parts) == 2 && isIntervalField(unplural(strings.ToLower(parts[1]))) {
		num, field = parts[0], unplural(strings.ToLower(parts[1]))
	}
	if field == "" || !isPlainNumber(num) {
		r.unsupported(t, "this INTERVAL is not supported as a window frame offset")
	}
	return frag{syn("INTERVAL", t.pos), syn(strLit(num), v.pos), syn(strings.ToUpper(field), v.pos)}
}

// unplural accepts the MySQL-style plural field names (DAYS, HOURS, ...).
func unplural(w string) string {
	switch w {
	case "years", "months", "days", "hours", "minutes", "seconds":
		return w[:len(w)-1]
	}
	return w
}

func isPlainNumber(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' || s[0] == '+' {
		s = s[1:]
	}
	digits, dot := 0, false
	for i := 0; i < len(s); i++ {
		switch {
		case isDigit(s[i]):
			digits++
		case s[i] == '.' && !dot:
			dot = true
		default:
			return false
		}
	}
	return digits > 0
}

// extractExpr parses extract(field FROM expr) into __pg_extract('field', expr).
func (r *rewriter) extractExpr() expr {
	t := r.expectWord("extract")
	r.expectPunct("(")
	fld := r.tok()
	if fld.kind != tkIdent && fld.kind != tkString && fld.kind != tkQIdent {
		r.syntaxErr(fld)
	}
	r.i++
	r.expectWord("from")
	e := r.parseExpr(0)
	r.expectPunct(")")
	return call("__pg_extract", t.pos, frag{syn(strLit(strings.ToLower(fld.val)), fld.pos)}, e.f)
}

// substringExpr parses substring(s FROM a FOR b) and its variants into
// substring(s, a[, b]).
func (r *rewriter) substringExpr() expr {
	t := r.expectWord("substring")
	r.expectPunct("(")
	s := r.parseExpr(0)
	var from, forr frag
	switch {
	case r.tok().isPunct(","):
		args := []frag{s.f}
		for r.tok().isPunct(",") {
			r.i++
			args = append(args, r.parseExpr(0).f)
		}
		r.expectPunct(")")
		return call("substring", t.pos, args...)
	case r.tok().isWord("similar"):
		r.unsupported(r.tok(), "substring(... SIMILAR ...) is not supported")
	}
	for k := 0; k < 2; k++ {
		if r.tok().isWord("from") && from == nil {
			r.i++
			from = r.parseExpr(0).f
		} else if r.tok().isWord("for") && forr == nil {
			r.i++
			forr = r.parseExpr(0).f
		}
	}
	r.expectPunct(")")
	if from == nil && forr == nil {
		return call("substring", t.pos, s.f)
	}
	if from == nil {
		from = frag{syn("1", t.pos)}
	}
	if forr == nil {
		return call("substring", t.pos, s.f, from)
	}
	return call("substring", t.pos, s.f, from, forr)
}

// positionExpr parses position(a IN b) into __pg_position(a, b).
func (r *rewriter) positionExpr() expr {
	t := r.expectWord("position")
	r.expectPunct("(")
	a := r.parseExpr(pLike)
	r.expectWord("in")
	b := r.parseExpr(0)
	r.expectPunct(")")
	return call("__pg_position", t.pos, a.f, b.f)
}

// trimExpr parses trim([BOTH|LEADING|TRAILING] [chars] FROM s) and the
// comma forms.
func (r *rewriter) trimExpr() expr {
	t := r.expectWord("trim")
	r.expectPunct("(")
	dir := ""
	if w := r.tok(); w.isWord("both") || w.isWord("leading") || w.isWord("trailing") {
		dir = strings.ToUpper(w.val)
		r.i++
	}
	var chars, s frag
	if r.tok().isWord("from") {
		r.i++
		s = r.parseExpr(0).f
	} else {
		first := r.parseExpr(0).f
		switch {
		case r.tok().isWord("from"):
			r.i++
			chars = first
			s = r.parseExpr(0).f
		case r.tok().isPunct(","):
			r.i++
			s, chars = first, r.parseExpr(0).f
		default:
			s = first
		}
	}
	r.expectPunct(")")
	fn := "btrim"
	switch dir {
	case "LEADING":
		fn = "ltrim"
	case "TRAILING":
		fn = "rtrim"
	}
	if chars == nil {
		return call(fn, t.pos, s)
	}
	return call(fn, t.pos, s, chars)
}

// overlayExpr parses overlay(a PLACING b FROM c [FOR d]) into
// __pg_overlay(a, b, c[, d]).
func (r *rewriter) overlayExpr() expr {
	t := r.expectWord("overlay")
	r.expectPunct("(")
	a := r.parseExpr(0)
	if r.tok().isPunct(",") {
		args := []frag{a.f}
		for r.tok().isPunct(",") {
			r.i++
			args = append(args, r.parseExpr(0).f)
		}
		r.expectPunct(")")
		return call("__pg_overlay", t.pos, args...)
	}
	r.expectWord("placing")
	b := r.parseExpr(0)
	r.expectWord("from")
	c := r.parseExpr(0)
	args := []frag{a.f, b.f, c.f}
	if r.tok().isWord("for") {
		r.i++
		args = append(args, r.parseExpr(0).f)
	}
	r.expectPunct(")")
	return call("__pg_overlay", t.pos, args...)
}
