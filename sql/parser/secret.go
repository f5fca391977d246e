package parser

import "strings"

// This file parses the secret statements (Materialize's and RisingWave's
// syntax) and the `SECRET name` references in connector options:
//
//	CREATE SECRET [IF NOT EXISTS] name [WITH (backend = 'meta')] AS 'value'
//	ALTER SECRET name [WITH (…)] AS 'value'
//	DROP SECRET [IF EXISTS] name, …   (a Drop of Kind "SECRET")
//	SHOW SECRETS                      (a Show of What "secrets")
//	… WITH (password = SECRET name)   (or password = secret.name)

// CreateSecret is CREATE SECRET. Its Text() holds the value: never log or
// show it (server/redact.go).
type CreateSecret struct {
	stmtText
	Name        string
	IfNotExists bool
	With        Options
	Value       string
}

// AlterSecret is ALTER SECRET name AS 'value'.
type AlterSecret struct {
	stmtText
	Name  string
	With  Options
	Value string
}

// secretRefPrefix starts an option value that refers to a secret; it
// equals exec/connector's (a server test checks), so the server passes
// options on unchanged and the connector layer resolves them.
const secretRefPrefix = "\x00secret:"

// SecretRef is the option value standing for a reference to secret name.
func SecretRef(name string) string { return secretRefPrefix + name }

// SecretRefName returns the secret an option value refers to.
func SecretRefName(v string) (string, bool) { return strings.CutPrefix(v, secretRefPrefix) }

// createSecret parses what follows CREATE SECRET.
func (r *rewriter) createSecret() Statement {
	cs := &CreateSecret{IfNotExists: r.ifNotExists()}
	cs.Name = r.name()
	cs.With, cs.Value = r.secretTail()
	return cs
}

// alterSecret parses what follows ALTER SECRET.
func (r *rewriter) alterSecret() Statement {
	as := &AlterSecret{}
	as.Name = r.name()
	as.With, as.Value = r.secretTail()
	return as
}

// secretTail parses [WITH (…)] AS 'value'.
func (r *rewriter) secretTail() (Options, string) {
	var with Options
	if r.tok().isWord("with") {
		r.i++
		with = r.options()
	}
	r.expectWord("as")
	t := r.tok()
	if t.kind != tkString {
		r.syntaxErr(t)
	}
	r.i++
	r.expectEOF()
	return with, t.val
}
