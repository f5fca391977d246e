package parser

import (
	"strings"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// RoleStmt is CREATE, ALTER or DROP of a role, in PostgreSQL's grammar:
//
//	CREATE ROLE|USER name [[WITH] option ...]
//	ALTER ROLE|USER name [WITH] option ...
//	ALTER ROLE|USER name RENAME TO new
//	DROP ROLE|USER [IF EXISTS] name [, ...]
//
// where option is LOGIN | NOLOGIN | SUPERUSER | NOSUPERUSER | CREATEROLE |
// NOCREATEROLE | INHERIT | [ENCRYPTED] PASSWORD 'x' | PASSWORD NULL. The
// other options of PostgreSQL (CREATEDB, REPLICATION, BYPASSRLS, CONNECTION
// LIMIT, VALID UNTIL, IN ROLE, ...) are refused with 0A000.
type RoleStmt struct {
	stmtText
	Action   string   // CREATE, ALTER or DROP
	User     bool     // written USER (CREATE USER implies LOGIN)
	Names    []string // the role (several for DROP)
	IfExists bool
	Options  []RoleOption
	RenameTo string // ALTER ... RENAME TO
}

// RoleOption is one option of CREATE/ALTER ROLE.
type RoleOption struct {
	Name  string // login, superuser, createrole, inherit, password
	Value bool   // false for the NO forms
	// Password is the PASSWORD's text; nil for PASSWORD NULL.
	Password *string
}

// roleStatement parses a role statement when the statement is one
// (CREATE|ALTER|DROP ROLE|USER); it returns nil otherwise.
func (r *rewriter) roleStatement() Statement {
	t, k := r.tok(), r.peek(1)
	if !(t.isWord("create") || t.isWord("alter") || t.isWord("drop")) || !(k.isWord("role") || k.isWord("user")) {
		return nil
	}
	if t.isWord("alter") && k.isWord("user") && r.peek(2).isWord("mapping") {
		return nil
	}
	if t.isWord("create") && k.isWord("user") && r.peek(2).isWord("mapping") {
		return nil
	}
	st := &RoleStmt{Action: strings.ToUpper(t.val), User: k.isWord("user")}
	r.i += 2
	if st.Action == "DROP" {
		if r.tok().isWord("if") && r.peek(1).isWord("exists") {
			r.i += 2
			st.IfExists = true
		}
		for {
			st.Names = append(st.Names, r.roleName())
			if !r.tok().isPunct(",") {
				break
			}
			r.i++
		}
		r.expectEOF()
		return st
	}
	st.Names = []string{r.roleName()}
	if st.Action == "ALTER" && r.tok().isWord("rename") {
		r.i++
		r.expectWord("to")
		st.RenameTo = r.roleName()
		r.expectEOF()
		return st
	}
	if st.Action == "ALTER" && (r.tok().isWord("set") || r.tok().isWord("reset") || r.tok().isWord("in")) {
		r.unsupported(r.tok(), "ALTER ROLE ... %s is not supported", strings.ToUpper(r.tok().val))
	}
	if r.tok().isWord("with") {
		r.i++
	}
	seen := map[string]bool{}
	for r.tok().kind != tkEOF {
		o := r.roleOption()
		if seen[o.Name] {
			r.fail(pgerror.New(pgcode.Syntax, "conflicting or redundant options").WithPosition(charPos(r.src, r.toks[r.i-1].pos)))
		}
		seen[o.Name] = true
		st.Options = append(st.Options, o)
	}
	if st.Action == "ALTER" && len(st.Options) == 0 {
		r.syntaxErr(r.tok())
	}
	return st
}

// roleName parses a role name (an identifier).
func (r *rewriter) roleName() string {
	t := r.tok()
	if !isName(t) {
		r.syntaxErr(t)
	}
	r.i++
	return t.val
}

// roleOption parses one option of CREATE/ALTER ROLE.
func (r *rewriter) roleOption() RoleOption {
	t := r.tok()
	if t.kind != tkIdent {
		r.syntaxErr(t)
	}
	r.i++
	switch t.val {
	case "login", "superuser", "createrole", "inherit":
		return RoleOption{Name: t.val, Value: true}
	case "nologin", "nosuperuser", "nocreaterole", "noinherit":
		if t.val == "noinherit" {
			r.unsupported(t, "NOINHERIT is not supported")
		}
		return RoleOption{Name: t.val[2:]}
	case "encrypted":
		if !r.tok().isWord("password") {
			r.syntaxErr(r.tok())
		}
		return r.roleOption()
	case "unencrypted":
		r.unsupported(t, "UNENCRYPTED PASSWORD is no longer supported")
	case "password":
		p := r.tok()
		switch {
		case p.isWord("null"):
			r.i++
			return RoleOption{Name: "password"}
		case p.kind == tkString:
			r.i++
			v := p.val
			return RoleOption{Name: "password", Password: &v}
		}
		r.syntaxErr(p)
	case "createdb", "nocreatedb", "replication", "noreplication", "bypassrls", "nobypassrls",
		"connection", "valid", "in", "role", "admin", "user", "sysid":
		r.fail(pgerror.Unsupported("role option %s is not supported", strings.ToUpper(t.val)).
			WithHint("Sluice roles support LOGIN, SUPERUSER, CREATEROLE and PASSWORD.").
			WithPosition(charPos(r.src, t.pos)))
	}
	r.syntaxErr(t)
	return RoleOption{}
}
