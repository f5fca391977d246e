package parser

import (
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// ASOF [LEFT [OUTER]] JOIN (RisingWave's syntax) is written for the TiDB
// parser as a plain [LEFT] JOIN whose ON condition is wrapped in the
// marker call __pg_asof(cond): the planner takes the marker out and checks
// the condition (equalities and exactly one inequality).

// AsOfMarker is the function that wraps an ASOF join's ON condition.
const AsOfMarker = "__pg_asof"

// asofJoinLen returns the number of tokens of ASOF [LEFT [OUTER]] JOIN at
// the current token, or 0 if there is none.
func (r *rewriter) asofJoinLen() int {
	if !r.tok().isWord("asof") {
		return 0
	}
	k := 1
	if r.peek(k).isWord("left") {
		k++
		if r.peek(k).isWord("outer") {
			k++
		}
	}
	if !r.peek(k).isWord("join") {
		return 0
	}
	return k + 1
}

// asofJoin rewrites ASOF [LEFT [OUTER]] JOIN (asofJoinLen n > 0): the
// level expects the right item and then its ON condition.
func (r *rewriter) asofJoin(st *level, n int) frag {
	t := r.tok()
	kw := "JOIN"
	if r.peek(1).isWord("left") {
		kw = "LEFT JOIN"
	}
	r.i += n
	st.expectItem, st.asof = true, true
	return frag{syn(kw, t.pos)}
}

// asofOn rewrites the ON condition of an ASOF join, which must follow its
// right item.
func (r *rewriter) asofOn(st *level) frag {
	st.asof = false
	t := r.tok()
	if !t.isWord("on") {
		r.fail(pgerror.New(pgcode.Syntax, "ASOF JOIN requires an ON condition").
			WithHint("write ON a.key = b.key AND a.ts >= b.ts: at least one equality and exactly one inequality").
			WithPosition(charPos(r.src, t.pos)))
	}
	r.i++
	cond := r.parseExpr(0)
	return append(frag{syn("ON", t.pos)}, call(AsOfMarker, t.pos, cond.f).f...)
}
