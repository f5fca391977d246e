package server

import (
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"sluice/exec/connector"
	"sluice/sql/parser"
	"sluice/sql/pgerror"
	"sluice/storage"
)

// Redaction: the passwords inside connector options (the password of a
// URL's userinfo, options named password, sasl.password, *.secret, token,
// …) and the values of secrets are never shown. SQL texts (SHOW CREATE)
// have the literal of each such option replaced by '********' (a `SECRET
// name` reference stays as written: it names, it does not reveal);
// option lists (pg_foreign_table) show ********; free text (errors sent to
// clients, SHOW SINKS' last error, the server's log) has every occurrence
// of a known secret string replaced by ********.

const mask = "********"

// minRedactLen is the shortest secret string replaced in free text:
// shorter ones would mangle ordinary words (SQL texts and option lists
// are masked by option, whatever the length).
const minRedactLen = 4

// sensitiveKey reports whether an option's value is a credential.
func sensitiveKey(k string) bool {
	k = strings.ToLower(k)
	for _, w := range []string{"password", "passwd", "secret", "token", "credential", "jaas.config",
		"access_key", "access.key", "private_key", "private.key", "api_key", "api.key", "apikey", "passphrase"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// urlPassword returns the password of a URL's userinfo
// (scheme://user:password@host…), if any.
func urlPassword(v string) (string, bool) {
	i := strings.Index(v, "://")
	if i < 0 {
		return "", false
	}
	rest := v[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return "", false
	}
	_, pw, ok := strings.Cut(rest[:at], ":")
	if !ok || pw == "" {
		return "", false
	}
	return pw, true
}

// redactOptionValue returns v as it may be shown for option k.
func redactOptionValue(k, v string) string {
	if _, ok := connector.SecretRefName(v); ok {
		name, _ := connector.SecretRefName(v)
		return "SECRET " + name
	}
	if sensitiveKey(k) {
		return mask
	}
	if pw, ok := urlPassword(v); ok {
		return strings.Replace(v, ":"+pw+"@", ":"+mask+"@", 1)
	}
	return v
}

// sqlLiteral quotes s as a SQL string literal.
func sqlLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// redactSQL masks the credentials of the connector options in a CREATE
// statement's text.
func redactSQL(sql string) string {
	st, err := parser.ParseOne(sql)
	if err != nil {
		return sql
	}
	var opts parser.Options
	switch x := st.(type) {
	case *parser.CreateSink:
		opts = append(append(opts, x.With...), x.FormatOptions...)
	case *parser.CreateSource:
		opts = append(append(opts, x.With...), x.FormatOptions...)
	case *parser.CreateTable:
		opts = append(append(opts, x.With...), x.FormatOptions...)
	case *parser.CreateSecret:
		return "CREATE SECRET " + quoteIdent(x.Name) + " AS " + sqlLiteral(mask)
	default:
		return sql
	}
	for _, o := range opts {
		if _, ok := connector.SecretRefName(o.Value); ok {
			continue
		}
		if shown := redactOptionValue(o.Key, o.Value); shown != o.Value {
			sql = strings.ReplaceAll(sql, sqlLiteral(o.Value), sqlLiteral(shown))
		}
	}
	return sql
}

// optionSecrets appends the credentials among opts: sensitive options'
// values, URL passwords and the values of referenced secrets.
func (e *Engine) optionSecrets(out []string, opts map[string]string) []string {
	for k, v := range opts {
		if name, ok := connector.SecretRefName(v); ok {
			if val, err := e.secretValue(name); err == nil {
				out = append(out, val)
				if pw, ok := urlPassword(val); ok {
					out = append(out, pw)
				}
			}
			continue
		}
		if sensitiveKey(k) {
			out = append(out, v)
		}
		if pw, ok := urlPassword(v); ok {
			out = append(out, pw)
		}
	}
	return out
}

// knownSecrets returns every credential the catalog holds (longest first),
// plus those of extra.
func (e *Engine) knownSecrets(extra ...map[string]string) []string {
	var out []string
	for _, ent := range e.cat.list("") {
		switch ent.Kind {
		case kindSecret:
			if v, err := e.secretValue(strings.TrimPrefix(ent.Name, "secret:")); err == nil {
				out = append(out, v)
				if pw, ok := urlPassword(v); ok {
					out = append(out, pw)
				}
			}
		default:
			out = e.optionSecrets(out, ent.Options)
		}
	}
	for _, opts := range extra {
		out = e.optionSecrets(out, opts)
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// redactWith replaces every secret of secrets in s.
func redactWith(s string, secrets []string) string {
	for _, v := range secrets {
		if len(v) >= minRedactLen && strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, mask)
		}
	}
	return s
}

// redactText masks every known credential in s.
func (e *Engine) redactText(s string) string { return redactWith(s, e.knownSecrets()) }

// stmtOptions returns the connector options a statement carries (its
// credentials may not be in the catalog yet).
func stmtOptions(st parser.Statement) map[string]string {
	var opts parser.Options
	switch x := st.(type) {
	case *parser.CreateSink:
		opts = x.With
	case *parser.CreateSource:
		opts = x.With
	case *parser.CreateTable:
		opts = x.With
	case *parser.CreateSecret:
		return map[string]string{"secret": x.Value}
	case *parser.AlterSecret:
		return map[string]string{"secret": x.Value}
	default:
		return nil
	}
	m := make(map[string]string, len(opts))
	for _, o := range opts {
		m[o.Key] = o.Value
	}
	return m
}

// redactErr masks the credentials of the catalog and of statement st in
// an error's message, detail and hint; the SQLSTATE is kept.
func (e *Engine) redactErr(err error, st parser.Statement) error {
	if err == nil {
		return nil
	}
	secrets := e.knownSecrets(stmtOptions(st))
	pe := pgerror.Flatten(err)
	msg, detail, hint := redactWith(pe.Message, secrets), redactWith(pe.Detail, secrets), redactWith(pe.Hint, secrets)
	if msg == pe.Message && detail == pe.Detail && hint == pe.Hint {
		return err
	}
	cp := *pe
	cp.Message, cp.Detail, cp.Hint = msg, detail, hint
	return &cp
}

// redactingLogf wraps the server's log so that no credential reaches it;
// the engine is attached once open (before, nothing holds credentials but
// the catalog being loaded, whose entries are not logged).
type redactingLogf struct {
	e    atomic.Pointer[Engine]
	logf func(string, ...any)
}

func (r *redactingLogf) Logf(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if e := r.e.Load(); e != nil {
		s = e.redactText(s)
	}
	r.logf("%s", s)
}

// redactedOptions returns a source's or sink's options as they may be
// shown, for pg_foreign_table.
func redactedOptions(ent *storage.CatalogEntry) map[string]string {
	out := make(map[string]string, len(ent.Options))
	for k, v := range ent.Options {
		out[k] = redactOptionValue(k, v)
	}
	return out
}
