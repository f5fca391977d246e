package parser

import (
	"strings"

	"sluice/sql/pgerror"
)

// Grant is GRANT or REVOKE of object privileges, in PostgreSQL's grammar:
//
//	GRANT {priv [, ...] | ALL [PRIVILEGES]}
//	      ON {[TABLE] name [, ...] | SEQUENCE name [, ...] | ALL TABLES IN SCHEMA s [, ...] | SCHEMA s [, ...]}
//	      TO {role | PUBLIC | CURRENT_USER | CURRENT_ROLE | SESSION_USER} [, ...]
//	      [WITH GRANT OPTION]
//	REVOKE [GRANT OPTION FOR] {priv [, ...] | ALL [PRIVILEGES]} ON ... FROM ... [CASCADE | RESTRICT]
//
// Column privileges, GRANTED BY, role membership (GRANT role TO role) and
// the other object kinds (FUNCTION, DATABASE, SEQUENCE, ...) are refused
// with 0A000. Whether a privilege fits the object kind is the server's
// check (0LP01, as PostgreSQL).
type Grant struct {
	stmtText
	Revoke bool
	// GrantOption is WITH GRANT OPTION (GRANT) or GRANT OPTION FOR (REVOKE).
	GrantOption bool
	// Privileges are lower-case privilege names; nil means ALL.
	Privileges []string
	// On is "table", "sequence", "schema" or "all tables" (ALL TABLES IN
	// SCHEMA).
	On string
	// Objects are the names as written (dotted), or the schemas.
	Objects []string
	// Grantees are role names; "public" is PUBLIC (a quoted "public" is
	// the role public, kept as `"public"`), current_user/session_user/
	// current_role stand for themselves.
	Grantees []string
	Cascade  bool
}

// privilegeWords are the privilege names PostgreSQL's grammar accepts.
var privilegeWords = wordSet(`select insert update delete truncate references
trigger usage create connect temporary temp execute maintain`)

// grant parses GRANT and REVOKE.
func (r *rewriter) grant() Statement {
	g := &Grant{Revoke: r.tok().isWord("revoke")}
	r.i++
	if g.Revoke && r.tok().isWord("grant") && r.peek(1).isWord("option") {
		r.i += 2
		r.expectWord("for")
		g.GrantOption = true
	}
	if r.tok().isWord("all") {
		r.i++
		if r.tok().isWord("privileges") {
			r.i++
		}
		if r.tok().isPunct("(") {
			r.refuse(r.tok(), "column privileges are not supported", "grant on the whole table, or create a view of the columns and grant on it")
		}
	} else {
		for {
			t := r.tok()
			if !isName(t) {
				r.syntaxErr(t)
			}
			if t.kind != tkIdent || !privilegeWords[t.val] {
				r.membership(t)
			}
			r.i++
			if r.tok().isPunct("(") {
				r.refuse(r.tok(), "column privileges are not supported", "grant on the whole table, or create a view of the columns and grant on it")
			}
			g.Privileges = append(g.Privileges, t.val)
			if !r.tok().isPunct(",") {
				break
			}
			r.i++
		}
	}
	if !r.tok().isWord("on") {
		// GRANT role TO role: a role's name may be a privilege word too.
		r.membership(r.tok())
	}
	r.i++
	switch t := r.tok(); {
	case t.isWord("table"):
		r.i++
		g.On = "table"
	case t.isWord("schema"):
		r.i++
		g.On = "schema"
	case t.isWord("sequence") && isName(r.peek(1)):
		r.i++
		g.On = "sequence"
	case t.isWord("all") && r.peek(1).isWord("tables"):
		r.i += 2
		r.expectWord("in")
		r.expectWord("schema")
		g.On = "all tables"
	case t.isWord("all"), t.isWord("function"), t.isWord("procedure"), t.isWord("routine"),
		t.isWord("database"), t.isWord("sequence"), t.isWord("domain"), t.isWord("type"),
		t.isWord("language"), t.isWord("large"), t.isWord("foreign"), t.isWord("tablespace"),
		t.isWord("parameter"):
		if isName(r.peek(1)) || r.peek(1).kind == tkEOF || t.isWord("all") {
			r.refuse(t, "GRANT and REVOKE ON "+strings.ToUpper(t.val)+objWord(r.peek(1))+" are not supported",
				"Sluice grants privileges on tables, views, materialized views, sources and schemas")
		}
		g.On = "table"
	default:
		g.On = "table"
	}
	for {
		g.Objects = append(g.Objects, r.nameChainString())
		if !r.tok().isPunct(",") {
			break
		}
		r.i++
	}
	if g.Revoke {
		r.expectWord("from")
	} else {
		r.expectWord("to")
	}
	for {
		t := r.tok()
		if r.tok().isWord("group") {
			r.i++
			t = r.tok()
		}
		if !isName(t) {
			r.syntaxErr(t)
		}
		name := t.val
		if t.kind == tkQIdent && (name == "public" || name == "current_user" || name == "session_user" || name == "current_role") {
			name = `"` + name + `"`
		}
		g.Grantees = append(g.Grantees, name)
		r.i++
		if !r.tok().isPunct(",") {
			break
		}
		r.i++
	}
	if !g.Revoke && r.tok().isWord("with") {
		r.i++
		r.expectWord("grant")
		r.expectWord("option")
		g.GrantOption = true
	}
	if r.tok().isWord("granted") {
		r.refuse(r.tok(), "GRANTED BY is not supported", "the current role is the grantor")
	}
	if g.Revoke {
		switch {
		case r.tok().isWord("cascade"):
			r.i++
			g.Cascade = true
		case r.tok().isWord("restrict"):
			r.i++
		}
	}
	r.expectEOF()
	return g
}

// objWord is " word" for the token after ON's object kind, when it names
// the kind (ALL SEQUENCES, LARGE OBJECT, FOREIGN DATA WRAPPER ...).
func objWord(t token) string {
	switch t.val {
	case "sequences", "functions", "procedures", "routines", "object", "data", "server":
		return " " + strings.ToUpper(t.val)
	}
	return ""
}

// membership refuses GRANT role TO role and REVOKE role FROM role.
func (r *rewriter) membership(t token) {
	r.refuse(t, "role membership (GRANT role TO role) is not supported",
		"grant privileges on tables and schemas to each role instead")
}

// refuse fails with 0A000 and a hint, positioned at t.
func (r *rewriter) refuse(t token, msg, hint string) {
	r.fail(pgerror.Unsupported("%s", msg).WithHint("%s", hint).WithPosition(charPos(r.src, t.pos)))
}
