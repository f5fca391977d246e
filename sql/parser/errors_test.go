package parser

import (
	"errors"
	"strings"
	"testing"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

func TestErrors(t *testing.T) {
	for _, c := range []struct {
		in   string
		code pgcode.Code
		pos  int
		msg  string
	}{
		// positions agree with PostgreSQL 15
		{`SELECT * FORM t`, pgcode.Syntax, 10, `syntax error at or near "FORM"`},
		{`SELECT 1; SELECT * FORM t`, pgcode.Syntax, 20, `syntax error at or near "FORM"`},
		{"SELECT 1;\n\nSELECT * FORM t", pgcode.Syntax, 21, `syntax error at or near "FORM"`},
		{`SELECT 1 +`, pgcode.Syntax, 11, `syntax error at end of input`},
		{`SELECT 1 +; SELECT 2`, pgcode.Syntax, 11, `syntax error at or near ";"`},
		{`SELECT a FROM t WHERE`, pgcode.Syntax, 22, `syntax error at end of input`},
		{`SELECT a FROM t WHERE a = = 1`, pgcode.Syntax, 27, `syntax error at or near "="`},
		{`SELECT 'abc`, pgcode.Syntax, 8, `unterminated quoted string at or near "'abc"`},
		{`SELECT "abc`, pgcode.Syntax, 8, `unterminated quoted identifier at or near ""abc"`},
		{`SELECT /* abc`, pgcode.Syntax, 8, `unterminated /* comment at or near "/* abc"`},
		{`SELECT $$abc`, pgcode.Syntax, 8, `unterminated dollar-quoted string at or near "$$abc"`},
		{`SELECT ""`, pgcode.Syntax, 8, `zero-length delimited identifier at or near """"`},
		// positions count characters, not bytes
		{`SELECT 'ü', é FROM t WHERE x ~ 'y' AND AND`, pgcode.Syntax, 40, `syntax error at or near "AND"`},
		{`SELECT (1`, pgcode.Syntax, 10, `syntax error at end of input`},
		{`SELECT 1)`, pgcode.Syntax, 9, `syntax error at or near ")"`},
		{`SELECT x IN y`, pgcode.Syntax, 13, `syntax error at or near "y"`},
		{`SELECT count(*) FILTER (WHERE) FROM t`, pgcode.Syntax, 30, `syntax error at or near ")"`},
		{`FOO BAR`, pgcode.Syntax, 1, `syntax error at or near "FOO"`},
		{`DESCRIBE`, pgcode.Syntax, 9, `syntax error at end of input`},
		{`CREATE TABLE t (a int`, pgcode.Syntax, 22, `syntax error at end of input`},
		{`CREATE MATERIALIZED VIEW mv AS SELECT * FORM t`, pgcode.Syntax, 41, `syntax error at or near "FORM"`},
		{`CREATE MATERIALIZED VIEW mv AS`, pgcode.Syntax, 31, `syntax error at end of input`},
		{`CREATE TABLE t (a int DEFAULT 1 +)`, pgcode.Syntax, 34, `syntax error at or near ")"`},
		{`CREATE SINK s AS SELECT * FORM t WITH (connector='blackhole')`, pgcode.Syntax, 27, `syntax error at or near "FORM"`},
		{`SELECT * FROM TUMBLE(t, ts, INTERVAL '1' SECOND +)`, pgcode.Syntax, 50, `syntax error at or near ")"`},
		{`EXPLAIN SELECT * FORM t`, pgcode.Syntax, 18, `syntax error at or near "FORM"`},
		{`SELECT * FROM t LIMIT 1, 2`, pgcode.Syntax, 17, `LIMIT #,# syntax is not supported`},
		{`SELECT $0`, pgcode.UndefinedParameter, 8, `there is no parameter $0`},
		// unsupported
		{`WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x`, pgcode.FeatureNotSupported, 22, `WITH ... INSERT is not supported`},
		{`SELECT 1 RETURNING x`, pgcode.FeatureNotSupported, 10, `RETURNING is not supported`},
		{`ALTER VIEW v RENAME TO w`, pgcode.FeatureNotSupported, 7, `ALTER VIEW is not supported`},
		{`ALTER TABLE t ADD CONSTRAINT c FOREIGN KEY (a) REFERENCES u`, pgcode.FeatureNotSupported, 32, `ALTER TABLE ADD FOREIGN KEY is not supported`},
		{`SELECT a FROM t LIMIT a`, pgcode.FeatureNotSupported, 23, `LIMIT and OFFSET must be integer constants or parameters`},
		{`INSERT INTO t VALUES (1) ON CONFLICT (lower(a)) DO NOTHING`, pgcode.FeatureNotSupported, 39, `ON CONFLICT with an expression or collation in the target is not supported`},
		{`INSERT INTO t VALUES (1) ON CONFLICT DO UPDATE SET a = 1`, pgcode.Syntax, 48, `ON CONFLICT DO UPDATE requires inference specification or constraint name`},
		{`SELECT a <=> b`, pgcode.FeatureNotSupported, 10, `operator <=> is not supported`},
		{`SELECT B'101'`, pgcode.FeatureNotSupported, 8, `bit string literals are not supported`},
		{`SELECT * FROM a NATURAL FULL JOIN b`, pgcode.FeatureNotSupported, 17, `NATURAL FULL JOIN is not supported`},
		{`UPDATE t SET a = 1 FROM u`, pgcode.FeatureNotSupported, 20, `UPDATE ... FROM is not supported`},
		{`CREATE TABLE t (a int, b char(3))`, pgcode.FeatureNotSupported, 26, `type char(3) is not supported`},
		{`CREATE TABLE t (a int REFERENCES u)`, pgcode.FeatureNotSupported, 23, `column constraint REFERENCES is not supported`},
		{`DROP TYPE i`, pgcode.FeatureNotSupported, 6, `DROP TYPE is not supported`},
		// other codes
		{`CREATE TABLE t (a int, b foo)`, pgcode.UndefinedObject, 26, `type "foo" does not exist`},
		{`SELECT E'\xff'`, pgcode.CharacterNotInRepertoire, 8, `invalid byte sequence for encoding "UTF8"`},
		{"SELECT 'a\x00'", pgcode.CharacterNotInRepertoire, 10, `invalid byte sequence for encoding "UTF8": 0x00`},
	} {
		_, err := Parse(c.in)
		if err == nil {
			t.Errorf("Parse(%q) succeeded", c.in)
			continue
		}
		var pe *pgerror.Error
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q): %T %v, want *pgerror.Error", c.in, err, err)
			continue
		}
		if pe.Code != c.code || pe.Position != c.pos || pe.Message != c.msg {
			t.Errorf("Parse(%q) = %s %q at %d, want %s %q at %d", c.in, pe.Code, pe.Message, pe.Position, c.code, c.msg, c.pos)
		}
	}
}

func TestNestingLimit(t *testing.T) {
	ok := "SELECT " + strings.Repeat("(", 500) + "1" + strings.Repeat(")", 500)
	if _, err := Parse(ok); err != nil {
		t.Errorf("500 levels: %v", err)
	}
	for _, deep := range []string{
		"SELECT " + strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000),
		"SELECT " + strings.Repeat("NOT ", 5000) + "true",
		"SELECT " + strings.Repeat("f(", 5000) + "1" + strings.Repeat(")", 5000),
		"SELECT " + strings.Repeat("ARRAY[", 5000) + "1" + strings.Repeat("]", 5000),
	} {
		_, err := Parse(deep)
		if pgerror.GetCode(err) != "54001" {
			t.Errorf("deep nesting: %v", err)
		}
	}
}

// TestChainLimit: a chain of operators is refused past maxChain, before the
// TiDB parser nests one level per operator; a chain just under it parses.
func TestChainLimit(t *testing.T) {
	for _, op := range []string{"+1", " AND true", " || 'a'"} {
		if _, err := Parse("SELECT 1" + strings.Repeat(op, maxChain)); err != nil {
			t.Errorf("%d times %q: %v", maxChain, op, err)
		}
		_, err := Parse("SELECT 1" + strings.Repeat(op, maxChain+1))
		if pgerror.GetCode(err) != "54001" {
			t.Errorf("%d times %q: %v, want 54001", maxChain+1, op, err)
		}
	}
}

func TestParseOneCounts(t *testing.T) {
	for _, in := range []string{``, `;`, ` -- nothing`, `SELECT 1; SELECT 2`} {
		_, err := ParseOne(in)
		if pgerror.GetCode(err) != pgcode.Syntax {
			t.Errorf("ParseOne(%q) = %v, want 42601", in, err)
		}
	}
	if stmts, err := Parse(""); err != nil || len(stmts) != 0 {
		t.Errorf(`Parse("") = %v, %v`, stmts, err)
	}
}
