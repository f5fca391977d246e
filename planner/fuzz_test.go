package planner_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/planner"
	"sluice/sql/parser"
	"sluice/sql/pgerror"
)

// planSeeds are statements over testCatalog that reach the binder's
// corners: subqueries, CTEs, windows, set operations, DML with RETURNING
// and ON CONFLICT, table functions and parameters.
var planSeeds = []string{
	"SELECT * FROM orders",
	"SELECT customer, count(*), sum(amount) FROM orders WHERE id > $1 GROUP BY customer HAVING count(*) > 1 ORDER BY 2 DESC LIMIT 3",
	"SELECT o.id, c.region FROM orders o JOIN customers c ON o.customer = c.name LEFT JOIN revenue r ON r.region = c.region",
	"SELECT id FROM orders WHERE customer IN (SELECT name FROM customers WHERE region = 'north') AND EXISTS (SELECT 1 FROM revenue)",
	"SELECT (SELECT max(amount) FROM orders o2 WHERE o2.customer = o.customer) FROM orders o",
	"WITH x AS (SELECT id, amount FROM orders), y AS (SELECT * FROM x WHERE id > 1) SELECT count(*) FROM y",
	"WITH orders AS (SELECT * FROM orders WHERE id > 1) SELECT count(*) FROM orders",
	"SELECT id, rank() OVER (PARTITION BY customer ORDER BY amount DESC NULLS LAST) FROM orders",
	"SELECT name FROM customers UNION SELECT customer FROM orders UNION ALL SELECT region FROM revenue",
	"SELECT CASE WHEN amount > 10 THEN 'big' ELSE 'small' END, coalesce(customer, 'x'), amount::text || 'x' FROM orders",
	"SELECT * FROM generate_series(1, 10) AS s(i) WHERE i % 2 = 0",
	"SELECT * FROM unnest(ARRAY[1,2,3]) u, orders",
	"CREATE MATERIALIZED VIEW w AS SELECT window_start, count(*) FROM TUMBLE(bid, date_time, INTERVAL '10' SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE",
	"CREATE MATERIALIZED VIEW h AS SELECT auction, max(price) FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND) GROUP BY auction, window_start",
	"INSERT INTO orders (id, customer) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET customer = excluded.customer RETURNING *",
	"INSERT INTO orders SELECT id, name, 1, now() FROM customers, generate_series(1, 3) g(id)",
	"UPDATE orders SET amount = amount * 2 WHERE customer = (SELECT name FROM customers LIMIT 1) RETURNING id, amount",
	"DELETE FROM orders WHERE ts < now() - INTERVAL '1 day' RETURNING id",
	"SELECT $1::int + 1, ARRAY[1,2][1], extract(epoch FROM ts) FROM orders",
	"SELECT DISTINCT customer, amount FROM orders ORDER BY customer, amount DESC",
	"SELECT string_agg(customer, ',' ORDER BY id), array_agg(amount) FROM orders",
	"SELECT count(*) FILTER (WHERE amount > 1) FROM orders o CROSS JOIN customers c FULL JOIN revenue r ON true",
	"SELECT * FROM (SELECT * FROM (SELECT id FROM orders) a) b WHERE id = ANY(ARRAY[1,2])",
	"SELECT 1 WHERE 1 = 1 AND 2 = 2 OR NOT (3 < 4) AND NULL IS NULL AND 'a' LIKE 'b%'",
}

// FuzzPlan parses and binds a statement against the fixed test catalog
// (orders, customers, revenue, g and the Nexmark sources). Planning must
// never panic, and every error must carry a SQLSTATE that is not an
// internal (XX) one: an untagged error is a bug.
func FuzzPlan(f *testing.F) {
	for _, s := range planSeeds {
		f.Add(s)
	}
	for _, file := range []string{"testdata/explain", "testdata/timewindows"} {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, block := range strings.Split(string(data), "\nexplain\n")[1:] {
			if q, _, ok := strings.Cut(block, "\n----\n"); ok {
				f.Add(q)
			}
		}
	}
	f.Fuzz(func(t *testing.T, sql string) {
		if len(sql) > 4096 {
			return
		}
		st, err := parser.ParseOne(sql)
		if err != nil {
			return // FuzzParse checks the parser's errors
		}
		if err := planStatement(st); err != nil {
			code := pgerror.GetCode(err)
			if code == "" || code.IsInternal() {
				t.Fatalf("%q: error without a SQLSTATE (%q): %v", sql, code, err)
			}
		}
	})
}

// planStatement binds st as the server does (server/query.go), against
// testCatalog; statements other than queries, DML and materialized views
// are skipped.
func planStatement(st parser.Statement) error {
	p := &planner.Planner{Cat: testCatalog(), ParseType: parser.ParseType}
	switch x := st.(type) {
	case *parser.CreateMaterializedView:
		if x.Parsed != nil {
			p.TableFuncs, p.Nulls, p.ColumnAliases = x.Parsed.TableFuncs, x.Parsed.Nulls, x.Parsed.ColumnAliases
		}
		p.EmitOnWindowClose = x.EmitOnWindowClose
		_, err := p.PlanView(x.Query, 100, x.Name)
		return err
	case *parser.Query:
		p.Nulls, p.TableFuncs, p.ColumnAliases = x.Nulls, x.TableFuncs, x.ColumnAliases
		p.Returning, p.OnConflict, p.Overriding = x.Returning, x.OnConflict, x.Overriding
		var err error
		switch n := x.Node.(type) {
		case *ast.SelectStmt, *ast.SetOprStmt:
			_, err = p.PlanQuery(n)
		case *ast.InsertStmt:
			_, err = p.PlanInsert(n)
		case *ast.UpdateStmt:
			_, err = p.PlanUpdate(n)
		case *ast.DeleteStmt:
			_, err = p.PlanDelete(n)
		}
		return err
	}
	return nil
}

// TestPlanSeeds binds every fuzz seed, so the seeds stay valid statements
// over the test catalog (a seed that stops binding loses its coverage).
func TestPlanSeeds(t *testing.T) {
	for _, s := range planSeeds {
		st, err := parser.ParseOne(s)
		if err != nil {
			t.Errorf("%q: %v", s, err)
			continue
		}
		if err := planStatement(st); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
}

// TestCastChain plans long chains of casts: naming the output column took
// time exponential in the chain's length (60 casts never finished), and a
// chain 10,000 long must end with 54001 like any statement that deep.
func TestCastChain(t *testing.T) {
	for _, c := range []struct {
		n    int
		code string
	}{{60, ""}, {1000, ""}, {10_000, "54001"}} {
		st, err := parser.ParseOne("SELECT 1" + strings.Repeat("::int", c.n))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- planStatement(st) }()
		select {
		case err := <-done:
			if got := string(pgerror.GetCode(err)); (err == nil) != (c.code == "") || (err != nil && got != c.code) {
				t.Errorf("%d casts: got %v (%s), want SQLSTATE %q", c.n, err, got, c.code)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%d casts: not planned within 10 s", c.n)
		}
	}
}
