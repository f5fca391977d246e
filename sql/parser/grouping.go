package parser

// This file rewrites PostgreSQL's GROUP BY grouping elements, which the
// TiDB grammar does not have, onto reserved calls the planner expands
// (planner/groupingsets.go):
//
//	ROLLUP (e, (f, g))          __pg_rollup(e, __pg_gset(f, g))
//	CUBE (e, f)                 __pg_cube(e, f)
//	GROUPING SETS (e, (), …)    __pg_grouping_sets(e, __pg_gset(), …)
//	( )  and  (e, f)            __pg_gset()  and  __pg_gset(e, f)
//	GROUP BY DISTINCT …         GROUP BY __pg_group_distinct(), …
//
// GROUPING(e, …) is an ordinary call for TiDB and stays one.

// groupByClause reads GROUP BY [ALL | DISTINCT] element, … .
func (r *rewriter) groupByClause() frag {
	t := r.expectWord("group")
	r.expectWord("by")
	out := frag{syn("GROUP BY", t.pos)}
	switch {
	case r.tok().isWord("all"):
		r.i++
	case r.tok().isWord("distinct"):
		out = append(out, syn("__pg_group_distinct(),", r.tok().pos))
		r.i++
	}
	for {
		out = append(out, group(r.groupingElem(false)))
		if !r.tok().isPunct(",") {
			return out
		}
		out = append(out, exact(r.tok(), r.src))
		r.i++
	}
}

// groupingElem reads one grouping element. In ROLLUP and CUBE (inner) an
// element is an expression or a parenthesised list of them; elsewhere it
// may also be ROLLUP, CUBE, GROUPING SETS or the empty set ().
func (r *rewriter) groupingElem(inner bool) frag {
	t := r.tok()
	r.enter(t)
	defer func() { r.depth-- }()
	if !inner {
		switch {
		case (t.isWord("rollup") || t.isWord("cube")) && r.peek(1).isPunct("("):
			r.i++
			return r.groupingList("__pg_"+t.val, t.pos, true)
		case t.isWord("grouping") && r.peek(1).isWord("sets"):
			r.i += 2
			if !r.tok().isPunct("(") {
				r.syntaxErr(r.tok())
			}
			return r.groupingList("__pg_grouping_sets", t.pos, false)
		}
	}
	if t.isPunct("(") {
		// ( ) is the empty set; (e, f) a set of expressions. A single
		// parenthesised expression may go on, as in (a + b) * 2: read
		// it again as an expression.
		start := r.i
		r.i++
		if r.tok().isPunct(")") {
			if inner {
				r.syntaxErr(r.tok())
			}
			r.i++
			return call("__pg_gset", t.pos).f
		}
		var args []frag
		for {
			args = append(args, r.parseExpr(0).f)
			if !r.tok().isPunct(",") {
				break
			}
			r.i++
		}
		if r.tok().isPunct(")") && len(args) > 1 && endsGroupingElem(r.peek(1)) {
			r.i++
			return call("__pg_gset", t.pos, args...).f
		}
		r.i = start
	}
	return r.parseExpr(0).f
}

// groupingList reads the parenthesised element list of ROLLUP, CUBE
// (inner: expressions and lists) or GROUPING SETS as the call name(…).
func (r *rewriter) groupingList(name string, pos int, inner bool) frag {
	r.expectPunct("(")
	var args []frag
	for {
		args = append(args, r.groupingElem(inner))
		if !r.tok().isPunct(",") {
			break
		}
		r.i++
	}
	r.expectPunct(")")
	return call(name, pos, args...).f
}

// endsGroupingElem: t may follow a grouping element (so a parenthesised
// list before it is a set, not a row value that an operator continues).
func endsGroupingElem(t token) bool {
	switch {
	case t.kind == tkEOF, t.isPunct(","), t.isPunct(")"), t.isPunct(";"):
		return true
	case t.kind == tkIdent:
		switch t.val {
		case "having", "order", "window", "limit", "offset", "fetch", "union", "intersect", "except", "for":
			return true
		}
	}
	return false
}
