package parser

import (
	"math"
	"strconv"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/sql/pgerror"
)

// This file parses the statements of server-side cursors, as Postgres's
// grammar has them: DECLARE, FETCH, MOVE and CLOSE.

// Scroll options of DECLARE.
const (
	ScrollDefault = iota // neither SCROLL nor NO SCROLL
	ScrollYes
	ScrollNo
)

// DeclareCursor is DECLARE name [BINARY] [ASENSITIVE | INSENSITIVE]
// [[NO] SCROLL] CURSOR [{WITH | WITHOUT} HOLD] FOR query.
type DeclareCursor struct {
	stmtText
	Name   string
	Binary bool
	Scroll int // ScrollDefault, ScrollYes or ScrollNo
	Hold   bool
	Query  *Query
	// Subscribe is DECLARE … CURSOR FOR SUBSCRIBE …; Query is nil then.
	Subscribe *Subscribe
}

// FetchDir is the direction of a FETCH or MOVE, reduced to the four that
// Postgres executes.
type FetchDir uint8

// Fetch directions.
const (
	FetchForward  FetchDir = iota // Count rows forward (NEXT, n, FORWARD n, ALL)
	FetchBackward                 // Count rows backward (PRIOR, BACKWARD n)
	FetchAbsolute                 // row Count (FIRST = 1, LAST = -1; negative: from the end)
	FetchRelative                 // row Count from the current one
)

// FetchAll is the Count of ALL, FORWARD ALL and BACKWARD ALL.
const FetchAll = math.MaxInt64

// Fetch is FETCH or MOVE (Move set) [direction] [FROM | IN] name. A
// negative count of FORWARD is BACKWARD and the reverse, as in Postgres.
type Fetch struct {
	stmtText
	Move  bool
	Dir   FetchDir
	Count int64
	Name  string
	// Timeout is WITH (timeout = '…'): how long a FETCH from a SUBSCRIBE
	// cursor waits for a row (Materialize's option).
	Timeout    string
	HasTimeout bool
}

// CloseCursor is CLOSE name | ALL.
type CloseCursor struct {
	stmtText
	Name string
	All  bool
}

// declareCursor parses DECLARE.
func (r *rewriter) declareCursor() Statement {
	r.expectWord("declare")
	d := &DeclareCursor{Name: r.cursorName()}
	sens := ""
	for {
		t := r.tok()
		switch {
		case t.isWord("binary"):
			d.Binary = true
		case t.isWord("insensitive"), t.isWord("asensitive"):
			if sens != "" && sens != t.val {
				r.fail(pgerror.New("42P11", "cannot specify both INSENSITIVE and ASENSITIVE").WithPosition(charPos(r.src, t.pos)))
			}
			sens = t.val
		case t.isWord("scroll"):
			if d.Scroll == ScrollNo {
				r.fail(pgerror.New("42P11", "cannot specify both SCROLL and NO SCROLL").WithPosition(charPos(r.src, t.pos)))
			}
			d.Scroll = ScrollYes
		case t.isWord("no") && r.peek(1).isWord("scroll"):
			if d.Scroll == ScrollYes {
				r.fail(pgerror.New("42P11", "cannot specify both SCROLL and NO SCROLL").WithPosition(charPos(r.src, t.pos)))
			}
			d.Scroll = ScrollNo
			r.i++
		default:
			goto cursor
		}
		r.i++
	}
cursor:
	r.expectWord("cursor")
	switch {
	case r.tok().isWord("with"):
		r.i++
		r.expectWord("hold")
		d.Hold = true
	case r.tok().isWord("without"):
		r.i++
		r.expectWord("hold")
	}
	r.expectWord("for")
	lo := r.i
	first := r.tok()
	if r.isSubscribe() {
		d.Subscribe = r.subscribe(len(r.toks) - 1)
		return d
	}
	if !(first.isPunct("(") || first.isWord("select") || first.isWord("with") || first.isWord("values") || first.isWord("table")) {
		r.syntaxErr(first)
	}
	q := r.subQuery(lo, len(r.toks)-1)
	switch q.Node.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
	default:
		r.syntaxErr(first) // WITH … INSERT: DECLARE takes a SELECT
	}
	d.Query = q
	r.i = len(r.toks) - 1
	return d
}

// fetch parses FETCH and MOVE.
func (r *rewriter) fetch() Statement {
	f := &Fetch{Move: r.tok().isWord("move"), Dir: FetchForward, Count: 1}
	r.i++
	t := r.tok()
	// A direction word followed by the end of the statement is the
	// cursor's name (FETCH next), as Postgres reads it.
	direction := t.kind == tkIdent && r.peek(1).kind != tkEOF
	switch {
	case direction && t.isWord("next"):
		r.i++
	case direction && t.isWord("prior"):
		r.i++
		f.Dir = FetchBackward
	case direction && t.isWord("first"):
		r.i++
		f.Dir = FetchAbsolute
	case direction && t.isWord("last"):
		r.i++
		f.Dir, f.Count = FetchAbsolute, -1
	case direction && t.isWord("absolute"):
		r.i++
		f.Dir, f.Count = FetchAbsolute, r.signedCount()
	case direction && t.isWord("relative"):
		r.i++
		f.Dir, f.Count = FetchRelative, r.signedCount()
	case direction && t.isWord("all"):
		r.i++
		f.Count = FetchAll
	case direction && (t.isWord("forward") || t.isWord("backward")):
		r.i++
		if t.val == "backward" {
			f.Dir = FetchBackward
		}
		switch n := r.tok(); {
		case n.isWord("all"):
			r.i++
			f.Count = FetchAll
		case n.kind == tkNumber, n.isOp("-"), n.isOp("+"):
			f.Count = r.signedCount()
		}
	case t.kind == tkNumber, t.isOp("-"), t.isOp("+"):
		f.Count = r.signedCount()
	}
	if f.Dir == FetchForward || f.Dir == FetchBackward {
		if f.Count < 0 {
			f.Count = -f.Count
			f.Dir = 1 - f.Dir
		}
	}
	if r.tok().isWord("from") || r.tok().isWord("in") {
		r.i++
	}
	f.Name = r.cursorName()
	if r.tok().isWord("with") {
		r.i++
		t := r.tok()
		for _, o := range r.options() {
			if o.Key != "timeout" {
				r.unsupported(t, "FETCH option %q is not supported", o.Key)
			}
			f.Timeout, f.HasTimeout = o.Value, true
		}
	}
	r.expectEOF()
	return f
}

// closeCursor parses CLOSE name | ALL.
func (r *rewriter) closeCursor() Statement {
	r.expectWord("close")
	if r.tok().isWord("all") {
		r.i++
		r.expectEOF()
		return &CloseCursor{All: true}
	}
	c := &CloseCursor{Name: r.cursorName()}
	r.expectEOF()
	return c
}

// cursorName reads a cursor's name (an identifier).
func (r *rewriter) cursorName() string {
	t := r.tok()
	if !isName(t) {
		r.syntaxErr(t)
	}
	r.i++
	return t.val
}

// signedCount reads an optionally signed integer constant.
func (r *rewriter) signedCount() int64 {
	neg := false
	if t := r.tok(); t.isOp("-") || t.isOp("+") {
		neg = t.val == "-"
		r.i++
	}
	t := r.tok()
	if t.kind != tkNumber {
		r.syntaxErr(t)
	}
	n, err := strconv.ParseInt(t.val, 10, 64)
	if err != nil || n > math.MaxInt32 {
		// Postgres's grammar takes an int4 constant here.
		r.syntaxErr(t)
	}
	r.i++
	if neg {
		n = -n
	}
	return n
}
