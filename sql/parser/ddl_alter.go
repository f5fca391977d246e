package parser

import (
	"strconv"
	"strings"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file parses ALTER TABLE, TRUNCATE, CREATE/DROP INDEX, CREATE
// SEQUENCE and CREATE SCHEMA (the statement types are in
// statements_ddl.go).

// alterSource parses ALTER SOURCE [IF EXISTS] name ADD [COLUMN] [IF NOT
// EXISTS] column type, the one change of a source's definition built: a
// source's columns are what its decoders produce, and the jobs reading it
// decode with the columns they were planned with, so a new column is for
// the views created after it.
func (r *rewriter) alterSource() Statement {
	t := r.tok()
	r.i++
	a := &AlterTable{Source: true}
	if r.tok().isWord("if") && r.peek(1).isWord("exists") {
		r.i += 2
		a.IfExists = true
	}
	a.Name = r.nameChainString()
	w := r.tok()
	if !w.isWord("add") {
		what := "this form"
		if w.kind == tkIdent {
			what = strings.ToUpper(w.val)
		}
		r.fail(pgerror.Unsupported("ALTER SOURCE %s is not supported", what).WithPosition(charPos(r.src, w.pos)).
			WithHint("ALTER SOURCE … ADD COLUMN is; for another change create another source (CREATE SOURCE … with the same connector options) and the new views over it: the views over the old source keep running."))
	}
	r.i++
	if c := r.tok(); c.isWord("constraint") || c.isWord("unique") || c.isWord("check") || c.isWord("primary") || c.isWord("foreign") {
		r.unsupported(c, "ALTER SOURCE ADD %s is not supported", strings.ToUpper(c.val))
	}
	r.addColumn(a, t)
	d := a.Def
	if d.NotNull || d.PrimaryKey || d.Default != nil || d.Unique || len(d.Checks) > 0 || d.Serial || d.Identity != "" {
		r.fail(pgerror.Unsupported("a source column takes no constraint or default").WithPosition(charPos(r.src, t.pos)).
			WithHint("a source's values are what its records hold (NULL where a record has none); constrain them in a view"))
	}
	return a
}

// addColumn parses the rest of ADD [COLUMN] [IF NOT EXISTS] column into a
// (t: the statement's action token, for a syntax error).
func (r *rewriter) addColumn(a *AlterTable, t token) {
	if r.tok().isWord("column") {
		r.i++
	}
	a.Action = "add column"
	a.IfNotExists = r.ifNotExists()
	var b relBody
	r.tableElement(&b)
	if len(b.cols) != 1 {
		r.syntaxErr(t)
	}
	a.Def = b.cols[0]
	a.Column = a.Def.Name
}

// alterTable parses ALTER TABLE [IF EXISTS] [ONLY] name action.
func (r *rewriter) alterTable() Statement {
	r.expectWord("alter")
	t := r.tok()
	if t.isWord("secret") {
		r.i++
		return r.alterSecret()
	}
	if t.isWord("materialized") && r.peek(1).isWord("view") && !r.peek(2).isWord("if") &&
		(r.peek(3).isWord("as") || (r.peek(3).isPunct(".") && r.peek(5).isWord("as"))) {
		r.i += 2
		mv := &CreateMaterializedView{Alter: true, OrReplace: true}
		mv.Name = r.nameChainString()
		q, eowc := r.viewQuery()
		mv.Query, mv.QueryText, mv.Parsed, mv.EmitOnWindowClose = q.Node, q.Text(), q, eowc
		return mv
	}
	if (t.isWord("materialized") && r.peek(1).isWord("view")) || t.isWord("sink") {
		return r.alterResume()
	}
	if t.isWord("source") {
		return r.alterSource()
	}
	if !t.isWord("table") {
		if t.kind == tkIdent {
			r.unsupported(t, "ALTER %s is not supported", strings.ToUpper(t.val))
		}
		r.syntaxErr(t)
	}
	r.i++
	a := &AlterTable{}
	if r.tok().isWord("if") && r.peek(1).isWord("exists") {
		r.i += 2
		a.IfExists = true
	}
	if r.tok().isWord("only") {
		r.i++
	}
	a.Name = r.nameChainString()
	t = r.tok()
	if t.isWord("set") && r.peek(1).isPunct("(") {
		return r.alterRetention("TABLE", a.Name, a.IfExists)
	}
	switch {
	case t.isWord("add"):
		r.i++
		if c := r.tok(); c.isWord("constraint") || c.isWord("unique") || c.isWord("check") || c.isWord("primary") ||
			c.isWord("foreign") || c.isWord("exclude") {
			a.Action = "add constraint"
			name := ""
			if c.isWord("constraint") {
				r.i++
				name = r.name()
			}
			switch k := r.tok(); {
			case k.isWord("check"):
				ch := r.checkClause()
				ch.Name = name
				a.Check = &ch
			case k.isWord("unique") && r.peek(1).isPunct("("):
				r.i++
				a.Unique = &UniqueDef{Name: name, Columns: r.identNames()}
			case k.isWord("primary"), k.isWord("foreign"):
				r.unsupported(k, "ALTER TABLE ADD %s KEY is not supported", strings.ToUpper(k.val))
			case k.kind == tkIdent:
				r.unsupported(k, "ALTER TABLE ADD %s is not supported", strings.ToUpper(k.val))
			default:
				r.syntaxErr(k)
			}
			if r.tok().isWord("not") && r.peek(1).isWord("valid") {
				r.unsupported(r.tok(), "NOT VALID constraints are not supported")
			}
			break
		}
		r.addColumn(a, t)
	case t.isWord("drop"):
		r.i++
		if r.tok().isWord("constraint") {
			r.i++
			a.Action = "drop constraint"
			a.Constraint = r.dropTarget(a)
			break
		}
		if r.tok().isWord("column") {
			r.i++
		}
		a.Action = "drop column"
		a.Column = r.dropTarget(a)
	case t.isWord("rename"):
		r.i++
		switch {
		case r.tok().isWord("to"):
			r.i++
			a.Action = "rename"
			a.NewName = r.name()
		case r.tok().isWord("constraint"):
			r.unsupported(r.tok(), "ALTER TABLE RENAME CONSTRAINT is not supported")
		default:
			if r.tok().isWord("column") {
				r.i++
			}
			a.Action = "rename column"
			a.Column = r.name()
			r.expectWord("to")
			a.NewName = r.name()
		}
	case t.isWord("alter"):
		r.i++
		if r.tok().isWord("column") {
			r.i++
		}
		a.Column = r.name()
		w := r.tok()
		switch {
		case w.isWord("set") && r.peek(1).isWord("default"):
			r.i += 2
			start := r.tok().pos
			e := r.parseExpr(0)
			a.DefaultValue = r.exprNode(e.f)
			a.DefaultText = r.src[start:r.peek(-1).end]
			a.Action = "set default"
		case w.isWord("drop") && r.peek(1).isWord("default"):
			r.i += 2
			a.Action = "drop default"
		case w.isWord("set") && r.peek(1).isWord("not") && r.peek(2).isWord("null"):
			r.i += 3
			a.Action = "set not null"
		case w.isWord("drop") && r.peek(1).isWord("not") && r.peek(2).isWord("null"):
			r.i += 3
			a.Action = "drop not null"
		case w.kind == tkIdent:
			r.unsupported(w, "ALTER TABLE ALTER COLUMN %s is not supported", strings.ToUpper(w.val))
		default:
			r.syntaxErr(w)
		}
	case t.isWord("owner") && r.peek(1).isWord("to"):
		r.i += 2
		a.Action = "owner to"
		a.NewName = r.name()
	case t.kind == tkIdent:
		r.unsupported(t, "ALTER TABLE %s is not supported", strings.ToUpper(t.val))
	default:
		r.syntaxErr(t)
	}
	if r.tok().isPunct(",") {
		r.fail(pgerror.Unsupported("several actions in one ALTER TABLE are not supported").WithHint("use one ALTER TABLE per action").WithPosition(charPos(r.src, r.tok().pos)))
	}
	r.expectEOF()
	return a
}

// alterResume parses ALTER MATERIALIZED VIEW [IF EXISTS] name RESUME and
// ALTER SINK [IF EXISTS] name RESUME (after ALTER).
func (r *rewriter) alterResume() Statement {
	a := &AlterResume{Kind: "SINK"}
	if r.tok().isWord("materialized") {
		r.i++
		a.Kind = "MATERIALIZED VIEW"
	}
	r.i++
	if r.tok().isWord("if") && r.peek(1).isWord("exists") {
		r.i += 2
		a.IfExists = true
	}
	a.Name = r.nameChainString()
	if r.tok().isWord("set") && r.peek(1).isPunct("(") && a.Kind == "MATERIALIZED VIEW" {
		return r.alterRetention(a.Kind, a.Name, a.IfExists)
	}
	if t := r.tok(); !t.isWord("resume") {
		if t.kind == tkIdent {
			r.unsupported(t, "ALTER %s … %s is not supported (only RESUME)", a.Kind, strings.ToUpper(t.val))
		}
		r.syntaxErr(t)
	}
	r.i++
	r.expectEOF()
	return a
}

// name reads one identifier.
func (r *rewriter) name() string {
	t := r.tok()
	if !isName(t) {
		r.syntaxErr(t)
	}
	r.i++
	return t.val
}

// truncate parses TRUNCATE [TABLE] [ONLY] name [*] [, ...] [RESTART |
// CONTINUE IDENTITY] [CASCADE | RESTRICT].
func (r *rewriter) truncate() Statement {
	r.expectWord("truncate")
	tr := &Truncate{}
	if r.tok().isWord("table") {
		r.i++
	}
	for {
		if r.tok().isWord("only") {
			r.i++
		}
		tr.Names = append(tr.Names, r.nameChainString())
		if r.tok().isOp("*") {
			r.i++
		}
		if !r.tok().isPunct(",") {
			break
		}
		r.i++
	}
	for r.tok().kind != tkEOF {
		switch t := r.tok(); {
		case t.isWord("restart") && r.peek(1).isWord("identity"):
			r.i += 2
			tr.RestartIdentity = true
		case t.isWord("continue") && r.peek(1).isWord("identity"):
			r.i += 2
		case t.isWord("cascade"):
			r.i++
			tr.Cascade = true
		case t.isWord("restrict"):
			r.i++
		default:
			r.syntaxErr(t)
		}
	}
	return tr
}

// createIndex parses the rest of CREATE [UNIQUE] INDEX [CONCURRENTLY] [IF
// NOT EXISTS] [name] ON [ONLY] table [USING method] (keys) [INCLUDE (...)]
// [WITH (...)] [WHERE ...].
func (r *rewriter) createIndex(unique bool) Statement {
	ci := &CreateIndex{Unique: unique}
	if r.tok().isWord("concurrently") {
		r.i++
	}
	ci.IfNotExists = r.ifNotExists()
	if !r.tok().isWord("on") {
		ci.Name = r.name()
	}
	r.expectWord("on")
	if r.tok().isWord("only") {
		r.i++
	}
	ci.Table = r.nameChainString()
	if r.tok().isWord("using") {
		r.i++
		r.name()
	}
	r.expectPunct("(")
	for {
		t := r.tok()
		if isName(t) && (r.peek(1).isPunct(",") || r.peek(1).isPunct(")") || r.peek(1).isWord("asc") ||
			r.peek(1).isWord("desc") || r.peek(1).isWord("nulls")) {
			ci.Columns = append(ci.Columns, t.val)
			r.i++
		} else {
			ci.Exprs = true
			r.parseExpr(0)
		}
		for r.tok().isWord("asc") || r.tok().isWord("desc") || r.tok().isWord("nulls") || r.tok().isWord("first") || r.tok().isWord("last") {
			r.i++
		}
		if r.tok().isPunct(",") {
			r.i++
			continue
		}
		break
	}
	r.expectPunct(")")
	if r.tok().isWord("include") {
		r.i++
		r.identNames()
	}
	if r.tok().isWord("with") && r.peek(1).isPunct("(") {
		r.i++
		r.options()
	}
	if r.tok().isWord("where") {
		ci.Where = true
		r.i++
		r.parseExpr(0)
	}
	r.expectEOF()
	return ci
}

// createSequence parses the rest of CREATE SEQUENCE.
func (r *rewriter) createSequence() Statement {
	cs := &CreateSequence{IfNotExists: r.ifNotExists(), Type: types.TInt8, Increment: 1}
	cs.Name = r.nameChainString()
	r.seqOptions(cs, false)
	return cs
}

// seqOptions parses sequence options up to the end of the statement or,
// in an identity column's ( ... ), up to the closing parenthesis.
func (r *rewriter) seqOptions(cs *CreateSequence, inParens bool) {
	num := func() int64 {
		neg := false
		if r.tok().isOp("-") {
			neg = true
			r.i++
		}
		t := r.tok()
		if t.kind != tkNumber {
			r.syntaxErr(t)
		}
		r.i++
		n, err := strconv.ParseInt(t.val, 10, 64)
		if err != nil {
			r.fail(pgerror.New(pgcode.InvalidParameterValue, "invalid sequence value %s", t.val).WithPosition(charPos(r.src, t.pos)))
		}
		if neg {
			n = -n
		}
		return n
	}
	for r.tok().kind != tkEOF && !(inParens && r.tok().isPunct(")")) {
		t := r.tok()
		switch {
		case t.isWord("as") && !inParens:
			r.i++
			tn := r.typeName()
			if tn.err != nil {
				r.fail(withPos(tn.err, charPos(r.src, tn.pos)))
			}
			switch tn.t.Fam {
			case types.Int2, types.Int4, types.Int8:
			default:
				r.fail(pgerror.New(pgcode.InvalidParameterValue, "sequence type must be smallint, integer, or bigint"))
			}
			cs.Type = tn.t
		case t.isWord("increment"):
			r.i++
			if r.tok().isWord("by") {
				r.i++
			}
			cs.Increment = num()
			if cs.Increment == 0 {
				r.fail(pgerror.New(pgcode.InvalidParameterValue, "INCREMENT must not be zero"))
			}
		case t.isWord("start"):
			r.i++
			if r.tok().isWord("with") {
				r.i++
			}
			n := num()
			cs.Start = &n
		case t.isWord("minvalue"):
			r.i++
			n := num()
			cs.MinValue = &n
		case t.isWord("maxvalue"):
			r.i++
			n := num()
			cs.MaxValue = &n
		case t.isWord("no") && (r.peek(1).isWord("minvalue") || r.peek(1).isWord("maxvalue") || r.peek(1).isWord("cycle")):
			r.i += 2
		case t.isWord("cycle"):
			r.i++
			cs.Cycle = true
		case t.isWord("cache"):
			r.i++
			num()
		case t.isWord("owned") && r.peek(1).isWord("by"):
			r.i += 2
			r.nameChainString()
		case t.isWord("sequence") && r.peek(1).isWord("name") && inParens:
			r.i += 2
			r.nameChainString()
		default:
			r.syntaxErr(t)
		}
	}
}

// createSchema parses the rest of CREATE SCHEMA.
func (r *rewriter) createSchema() Statement {
	cs := &CreateSchema{IfNotExists: r.ifNotExists()}
	if r.tok().isWord("authorization") {
		r.unsupported(r.tok(), "CREATE SCHEMA AUTHORIZATION is not supported")
	}
	cs.Name = r.name()
	if r.tok().kind != tkEOF {
		r.fail(pgerror.Unsupported("CREATE SCHEMA with elements is not supported").WithHint("create the objects with their own statements").WithPosition(charPos(r.src, r.tok().pos)))
	}
	return cs
}

// dropTarget parses the rest of DROP [CONSTRAINT|COLUMN]: [IF EXISTS]
// name [CASCADE|RESTRICT], setting a's flags, and returns the name.
func (r *rewriter) dropTarget(a *AlterTable) string {
	if r.tok().isWord("if") && r.peek(1).isWord("exists") {
		r.i += 2
		a.ColIfExists = true
	}
	name := r.name()
	switch {
	case r.tok().isWord("cascade"):
		r.i++
		a.Cascade = true
	case r.tok().isWord("restrict"):
		r.i++
	}
	return name
}
