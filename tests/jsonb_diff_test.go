package tests

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestJSONBDifferential parses, prints, orders and compares random JSON
// documents (duplicate keys, numbers with trailing zeros and exponents,
// escapes, nesting) in Sluice and in PostgreSQL and requires the same
// answers: the canonical text, jsonb_typeof, the order of every pair,
// equality, containment and the key-existence operators.
func TestJSONBDifferential(t *testing.T) {
	EnsurePostgres(t)
	srv := StartServer(t, Options{})
	rng := rand.New(rand.NewSource(14))
	docs := make([]string, 120)
	for i := range docs {
		docs[i] = randJSON(rng, 0)
	}
	// A few fixed near-equal pairs.
	docs = append(docs, `1`, `1.0`, `1.00e0`, `[]`, `null`, `{}`, `[1]`, `"1"`, `{"a":1,"a":2}`, `{"a":2}`)
	var values []string
	for i, d := range docs {
		values = append(values, fmt.Sprintf("(%d, '%s'::jsonb)", i, strings.ReplaceAll(d, "'", "''")))
	}
	list := "(VALUES " + strings.Join(values, ", ") + ")"
	vals := list + " AS v(i, j)"
	queries := []string{
		"SELECT i, j::text, jsonb_typeof(j) FROM " + vals + " ORDER BY i",
		"SELECT i FROM " + vals + " ORDER BY j, i",
		"SELECT a.i, b.i, a.j < b.j, a.j = b.j, a.j @> b.j FROM " + list + " AS a(i, j), " + list +
			" AS b(i, j) WHERE a.i % 7 = b.i % 5 ORDER BY 1, 2",
		"SELECT i, j ? 'a', j ?| ARRAY['b', 'c'], j ?& ARRAY['a', 'b'], j -> 'a', j ->> 0, j #> '{a,0}' FROM " + vals + " ORDER BY i",
		"SELECT i, j || '[1, {\"a\": 2}]', j || '{\"a\": [3]}', jsonb_strip_nulls(j), j #- '{0}' FROM " + vals + " WHERE jsonb_typeof(j) IN ('object', 'array') ORDER BY i",
		"SELECT count(DISTINCT j) FROM " + vals,
	}
	run := func(connString string) []string {
		conn := MustConnect(t, connString)
		var out []string
		for _, q := range queries {
			rows, err := conn.Query(context.Background(), q, pgx.QueryExecModeSimpleProtocol)
			if err != nil {
				t.Fatalf("%.80s…: %v", q, err)
			}
			for rows.Next() {
				vs, err := rows.Values()
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, fmt.Sprint(vs...))
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("%.80s…: %v", q, err)
			}
			out = append(out, "--")
		}
		return out
	}
	got := run(srv.ConnString())
	want := run(FreshPostgresDB(t, "sluice_jsonb_diff"))
	if len(got) != len(want) {
		t.Fatalf("%d result lines, PostgreSQL %d", len(got), len(want))
	}
	bad := 0
	for i := range got {
		if got[i] != want[i] {
			bad++
			if bad <= 10 {
				t.Errorf("sluice:   %s\npostgres: %s", got[i], want[i])
			}
		}
	}
	t.Logf("%d documents, %d result lines, %d differ", len(docs), len(got), bad)
}

func randJSON(rng *rand.Rand, depth int) string {
	n := rng.Intn(10)
	if depth > 2 {
		n = rng.Intn(6)
	}
	switch n {
	case 0:
		return "null"
	case 1:
		return []string{"true", "false"}[rng.Intn(2)]
	case 2, 3:
		return []string{"0", "-0", "1", "1.0", "1.50", "2", "10", "-3.25", "1e2", "1E-2", "0.000", "123456789012345678901234567890"}[rng.Intn(12)]
	case 4, 5:
		return []string{`"a"`, `"b"`, `""`, `"é\n"`, `"\u0041"`, `"x\"y"`, `"aa"`, `"\\\\"`}[rng.Intn(8)]
	case 6, 7:
		k := rng.Intn(4)
		parts := make([]string, k)
		for i := range parts {
			parts[i] = randJSON(rng, depth+1)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	k := rng.Intn(4)
	parts := make([]string, k)
	keys := []string{"a", "b", "c", "aa", "ab", "", "é"}
	for i := range parts {
		parts[i] = fmt.Sprintf("%q: %s", keys[rng.Intn(len(keys))], randJSON(rng, depth+1))
	}
	return "{" + strings.Join(parts, ",") + "}"
}
