package eval

import (
	"testing"

	"sluice/sql/types"
)

// pgCase is one expression, what PostgreSQL 15 returns for it and the
// type pg_typeof gives it ("" when evaluating it fails).
type pgCase struct {
	expr, want, typ string
}

// deviations are the cases where Sluice deliberately or necessarily
// answers differently from PostgreSQL, with the reason.
var deviations = map[string]string{
	// Go's regexp ignores an empty match right after a non-empty one.
	"regexp_replace('aaa', 'a*', 'X', 'g')": "X",
	// Sluice's own answers.
	"version()":             ServerVersion,
	"current_schemas(true)": "{pg_catalog,public}", // no temporary schema
}

func TestPostgresCases(t *testing.T) {
	for _, c := range pgCases {
		want := c.want
		if d, ok := deviations[c.expr]; ok {
			want = d
		}
		got := evalSQL(c.expr, nil)
		if got != want {
			t.Errorf("%s\n\tgot  %s\n\twant %s", c.expr, got, want)
		}
	}
}

// TestPostgresTypes checks that resolution gives every expression the
// type Postgres gives it.
func TestPostgresTypes(t *testing.T) {
	for _, c := range pgCases {
		if c.typ == "" {
			continue
		}
		e, err := parseSQL(c.expr)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		got := typeOf(e.Type().Fam).String()
		if e.Type().Fam == types.Unknown {
			got = "unknown"
		}
		if got != c.typ && !(c.expr == "current_schemas(true)" && got == "text[]") { // no name[] in Sluice
			t.Errorf("%s: type %s, want %s", c.expr, got, c.typ)
		}
	}
}
