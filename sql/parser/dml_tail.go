package parser

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// This file parses the clauses Postgres puts after the body of INSERT,
// UPDATE and DELETE and MySQL's grammar lacks: ON CONFLICT and RETURNING.
// They are cut out of the text handed to TiDB and parsed on their own
// (Query.OnConflict, Query.Returning).

// dmlTailState is the rewriter's record of the clauses.
type dmlTailState struct {
	// top is the walker level of the statement's own clauses: RETURNING
	// or ON CONFLICT met there (not in a subquery) ends the body.
	top       *level
	insert    bool
	returning frag
	retPos    int
	hasRet    bool
	conflict  *OnConflict
}

// atDMLTail reports whether the word at the walker's level st starts ON
// CONFLICT or RETURNING of the statement being rewritten.
func (r *rewriter) atDMLTail(st *level) bool {
	if r.dml == nil || r.dml.top != st {
		return false
	}
	t := r.tok()
	return t.isWord("returning") || (r.dml.insert && t.isWord("on") && r.peek(1).isWord("conflict"))
}

// dmlTail parses [ON CONFLICT ...] [RETURNING ...] up to the end of the
// statement.
func (r *rewriter) dmlTail() {
	if r.dml == nil {
		r.dml = &dmlTailState{}
	}
	if t := r.tok(); t.isWord("on") && r.peek(1).isWord("conflict") {
		if !r.dml.insert {
			r.syntaxErr(t)
		}
		r.i += 2
		r.dml.conflict = r.onConflict()
	}
	if t := r.tok(); t.isWord("returning") {
		r.i++
		r.dml.hasRet = true
		r.dml.retPos = t.pos
		if r.tok().kind == tkEOF {
			r.syntaxErr(r.tok())
		}
		r.dml.returning = r.walkSeq(&level{})
	}
	r.expectEOF()
}

func (r *rewriter) onConflict() *OnConflict {
	oc := &OnConflict{}
	switch t := r.tok(); {
	case t.isPunct("("):
		r.i++
		for {
			n := r.tok()
			if !isName(n) || !(r.peek(1).isPunct(",") || r.peek(1).isPunct(")")) {
				r.unsupported(n, "ON CONFLICT with an expression or collation in the target is not supported")
			}
			oc.Columns = append(oc.Columns, n.val)
			r.i++
			if r.tok().isPunct(",") {
				r.i++
				continue
			}
			break
		}
		r.expectPunct(")")
		if r.tok().isWord("where") {
			r.unsupported(r.tok(), "ON CONFLICT with a partial index predicate is not supported")
		}
	case t.isWord("on") && r.peek(1).isWord("constraint"):
		r.i += 2
		oc.Constraint = r.name()
	}
	r.expectWord("do")
	switch t := r.tok(); {
	case t.isWord("nothing"):
		r.i++
		oc.DoNothing = true
		return oc
	case t.isWord("update"):
		r.i++
	default:
		r.syntaxErr(t)
	}
	if len(oc.Columns) == 0 && oc.Constraint == "" {
		r.fail(pgerror.New(pgcode.Syntax, "ON CONFLICT DO UPDATE requires inference specification or constraint name").
			WithHint("For example, ON CONFLICT (column_name).").WithPosition(charPos(r.src, r.tok().pos)))
	}
	r.expectWord("set")
	for {
		c := r.tok()
		if c.isPunct("(") {
			r.unsupported(c, "multiple-column UPDATE SET is not supported")
		}
		col := r.name()
		if r.tok().isPunct(".") || r.tok().isPunct("[") {
			r.unsupported(r.tok(), "assignment to a field or element in ON CONFLICT DO UPDATE is not supported")
		}
		eq := r.tok()
		if !eq.isOp("=") {
			r.syntaxErr(eq)
		}
		r.i++
		a := Assignment{Column: col}
		if r.tok().isWord("default") && (r.peek(1).isPunct(",") || r.peek(1).kind == tkEOF || r.peek(1).isWord("where") || r.peek(1).isWord("returning")) {
			r.i++
		} else {
			a.Expr = r.exprNode(r.parseExpr(0).f)
		}
		oc.Sets = append(oc.Sets, a)
		if !r.tok().isPunct(",") {
			break
		}
		r.i++
	}
	if r.tok().isWord("where") {
		r.i++
		oc.Where = r.exprNode(r.parseExpr(0).f)
	}
	return oc
}

// finishDML parses the RETURNING list and attaches the tail clauses to q.
func (r *rewriter) finishDML(q *Query) {
	q.Overriding = r.overriding
	if r.dml == nil {
		return
	}
	q.OnConflict = r.dml.conflict
	if !r.dml.hasRet {
		return
	}
	full := append(frag{syn("SELECT", r.dml.retPos)}, r.dml.returning...)
	rd := render(full, r.tok())
	sel, ok := r.tidbParse(rd).(*ast.SelectStmt)
	if !ok || sel.Fields == nil || sel.From != nil || sel.Where != nil || sel.GroupBy != nil || sel.OrderBy != nil || sel.Limit != nil {
		r.fail(pgerror.New(pgcode.Syntax, "syntax error in RETURNING").WithPosition(charPos(r.src, r.dml.retPos)))
	}
	for _, f := range sel.Fields.Fields {
		if f.Expr != nil {
			f.Expr.Accept(&postVisitor{q: &Query{}, params: rd.params})
		}
	}
	q.Returning = &Returning{Fields: sel.Fields.Fields}
}
