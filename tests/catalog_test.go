package tests

// The catalog as a user sees it: SHOW, DESCRIBE, SHOW CREATE, EXPLAIN, and
// the catalog and views surviving a kill and a clean restart (issue 2,
// acceptance 4). Where the exact output format is Sluice's choice, these
// tests check only what any sensible format has: SHOW lists names in its
// first column, DESCRIBE starts each row with a column's name and type, SHOW
// CREATE ends its row with a statement that recreates the object, EXPLAIN
// prints a non-empty plan.

import (
	"context"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

const catalogSchemaSource = `CREATE SOURCE nums (id BIGINT, v BIGINT) WITH (connector = 'datagen',
	fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '20',
	fields.v.kind = 'random', fields.v.min = '1', fields.v.max = '100', fields.v.seed = '3',
	datagen.rows.per.second = '1000')`

var catalogSchema = []string{
	`CREATE TABLE orders (id BIGINT PRIMARY KEY, customer TEXT, amount NUMERIC(12,2), ts TIMESTAMP)`,
	`CREATE TABLE customers (name TEXT PRIMARY KEY, region TEXT)`,
	`CREATE TABLE notes (body TEXT)`,
	catalogSchemaSource,
	`CREATE MATERIALIZED VIEW revenue AS
		SELECT c.region, count(*) AS orders, sum(o.amount) AS total, max(o.amount) AS biggest
		FROM orders o JOIN customers c ON o.customer = c.name GROUP BY c.region`,
	`CREATE MATERIALIZED VIEW nums_total AS SELECT count(*) AS n, sum(id) AS s FROM nums`,
	`CREATE MATERIALIZED VIEW big_revenue AS SELECT region, total FROM revenue WHERE total > 10`,
}

// catalogSnapshot is what a user can see of the catalog and the views.
type catalogSnapshot struct {
	tables, sources, views []string
	contents               map[string][]string
}

var catalogQueries = []string{
	"SELECT region, orders, total, biggest FROM revenue",
	"SELECT n, s FROM nums_total",
	"SELECT region, total FROM big_revenue",
	"SELECT id, customer, amount, ts FROM orders",
	"SELECT body FROM notes",
}

func takeCatalogSnapshot(t *testing.T, conn *pgx.Conn, queries []string) catalogSnapshot {
	t.Helper()
	ExecAll(t, conn, "FLUSH")
	s := catalogSnapshot{
		tables:   firstColumn(t, conn, "SHOW TABLES"),
		sources:  firstColumn(t, conn, "SHOW SOURCES"),
		views:    firstColumn(t, conn, "SHOW MATERIALIZED VIEWS"),
		contents: map[string][]string{},
	}
	for _, q := range queries {
		s.contents[q] = queryLines(t, conn, q)
	}
	return s
}

func (s catalogSnapshot) diff(t *testing.T, other catalogSnapshot, when string) {
	t.Helper()
	for _, c := range []struct {
		what      string
		old, news []string
	}{{"SHOW TABLES", s.tables, other.tables}, {"SHOW SOURCES", s.sources, other.sources},
		{"SHOW MATERIALIZED VIEWS", s.views, other.views}} {
		if !equalLines(c.old, c.news) {
			t.Errorf("%s: %s changed (-before +after):\n%s", when, c.what, lineDiff(c.old, c.news))
		}
	}
	for q, rows := range s.contents {
		if !equalLines(rows, other.contents[q]) {
			t.Errorf("%s: %s changed (-before +after):\n%s", when, q, lineDiff(rows, other.contents[q]))
		}
	}
}

func firstColumn(t *testing.T, conn *pgx.Conn, sql string) []string {
	t.Helper()
	res, err := QueryText(context.Background(), conn, sql)
	if err != nil {
		t.Fatalf("%s: %s", sql, describeErr(err))
	}
	var out []string
	for _, r := range res.Rows {
		if len(r) == 0 {
			t.Fatalf("%s returned rows without columns", sql)
		}
		out = append(out, r[0])
	}
	sort.Strings(out)
	return out
}

func queryLines(t *testing.T, conn *pgx.Conn, sql string) []string {
	t.Helper()
	res, err := QueryText(context.Background(), conn, sql)
	if err != nil {
		t.Fatalf("%s: %s", sql, describeErr(err))
	}
	lines := res.Lines()
	sort.Strings(lines)
	return lines
}

// waitForLines polls a query (with FLUSH) until it returns want, or fails.
func waitForLines(t *testing.T, conn *pgx.Conn, sql string, want []string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ExecAll(t, conn, "FLUSH")
		got := queryLines(t, conn, sql)
		if equalLines(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s (-want +got):\n%s", sql, lineDiff(want, got))
		}
		time.Sleep(50 * time.Millisecond) // polling, bounded by deadline
	}
}

// TestCatalogSurvivesRestart kills the server and stops it cleanly; each
// time the catalog, the tables and the views come back as they were, and
// the views keep being maintained.
func TestCatalogSurvivesRestart(t *testing.T) {
	srv := StartServer(t, Options{})
	conn := srv.Connect(t)
	ExecAll(t, conn, catalogSchema...)
	ExecAll(t, conn,
		`INSERT INTO customers VALUES ('ann', 'north'), ('bob', 'south')`,
		`INSERT INTO orders VALUES (1, 'ann', 10.50, '2024-03-01 10:00:00'), (2, 'bob', 7, '2024-03-01 11:00:00')`,
		`INSERT INTO notes VALUES ('a'), ('a'), ('b')`)
	waitForLines(t, conn, "SELECT n, s FROM nums_total", []string{"20 210"})
	before := takeCatalogSnapshot(t, conn, catalogQueries)
	if want := []string{"customers", "notes", "orders"}; !equalLines(before.tables, want) {
		t.Errorf("SHOW TABLES: %v, want %v", before.tables, want)
	}
	if want := []string{"nums"}; !equalLines(before.sources, want) {
		t.Errorf("SHOW SOURCES: %v, want %v", before.sources, want)
	}
	if want := []string{"big_revenue", "nums_total", "revenue"}; !equalLines(before.views, want) {
		t.Errorf("SHOW MATERIALIZED VIEWS: %v, want %v", before.views, want)
	}

	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	conn = srv.Connect(t)
	before.diff(t, takeCatalogSnapshot(t, conn, catalogQueries), "after kill -9")

	// Still maintained: a change after the restart reaches a view over a view.
	ExecAll(t, conn, `INSERT INTO orders VALUES (3, 'bob', 5, '2024-03-02 09:00:00')`)
	waitForLines(t, conn, "SELECT region, total FROM big_revenue", []string{"north 10.50", "south 12.00"})
	ExecAll(t, conn, `DROP MATERIALIZED VIEW big_revenue`)
	remaining := append([]string{}, catalogQueries[:2]...)
	remaining = append(remaining, catalogQueries[3:]...)
	after := takeCatalogSnapshot(t, conn, remaining)

	if err := srv.Stop(); err != nil {
		t.Errorf("clean shutdown: %v", err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	conn = srv.Connect(t)
	after.diff(t, takeCatalogSnapshot(t, conn, remaining), "after a clean restart")
	if _, err := QueryText(context.Background(), conn, "SELECT * FROM big_revenue"); PgCode(err) != "42P01" {
		t.Errorf("a dropped view came back after a restart: %s", errText(err))
	}
}

// TestDescribe checks that DESCRIBE lists every column, in order, each row
// starting with the column's name and type.
func TestDescribe(t *testing.T) {
	srv := StartServer(t, Options{})
	conn := srv.Connect(t)
	ExecAll(t, conn, catalogSchema...)
	bigint := `(?i)^(bigint|int8)$`
	text := `(?i)^(text|varchar|character varying)$`
	numeric := `(?i)^(numeric|decimal)(\(\d+,\s*\d+\))?$`
	for _, c := range []struct {
		rel  string
		cols [][2]string // name, type pattern
	}{
		{"orders", [][2]string{{"id", bigint}, {"customer", text}, {"amount", `(?i)^(numeric|decimal)\(12,\s*2\)$`},
			{"ts", `(?i)^timestamp( without time zone)?$`}}},
		{"notes", [][2]string{{"body", text}}},
		{"nums", [][2]string{{"id", bigint}, {"v", bigint}}},
		{"revenue", [][2]string{{"region", text}, {"orders", bigint}, {"total", numeric}, {"biggest", numeric}}},
	} {
		res, err := QueryText(context.Background(), conn, "DESCRIBE "+c.rel)
		if err != nil {
			t.Errorf("DESCRIBE %s: %s", c.rel, describeErr(err))
			continue
		}
		if len(res.Rows) < len(c.cols) || len(res.Fields) < 2 {
			t.Errorf("DESCRIBE %s: %d rows of %d columns, want at least %d rows of 2:\n%s",
				c.rel, len(res.Rows), len(res.Fields), len(c.cols), indent(strings.Join(res.Lines(), "\n")))
			continue
		}
		for i, col := range c.cols {
			row := res.Rows[i]
			if row[0] != col[0] || !regexp.MustCompile(col[1]).MatchString(row[1]) {
				t.Errorf("DESCRIBE %s row %d: %q %q, want %s %s", c.rel, i+1, row[0], row[1], col[0], col[1])
			}
		}
	}
	if _, err := QueryText(context.Background(), conn, "DESCRIBE nope"); PgCode(err) != "42P01" {
		t.Errorf("DESCRIBE nope: %s, want 42P01", errText(err))
	}
}

// TestShowCreateRoundTrip drops each object and recreates it from the text
// SHOW CREATE gave: it must come back with the same columns and contents.
func TestShowCreateRoundTrip(t *testing.T) {
	srv := StartServer(t, Options{})
	conn := srv.Connect(t)
	ExecAll(t, conn, catalogSchema...)
	ExecAll(t, conn,
		`INSERT INTO customers VALUES ('ann', 'north'), ('bob', 'south')`,
		`INSERT INTO orders VALUES (1, 'ann', 10.50, '2024-03-01 10:00:00'), (2, 'bob', 17, '2024-03-01 11:00:00')`)
	waitForLines(t, conn, "SELECT n, s FROM nums_total", []string{"20 210"})

	showCreate := func(kind, name string) string {
		t.Helper()
		sql := "SHOW CREATE " + kind + " " + name
		res, err := QueryText(context.Background(), conn, sql)
		if err != nil {
			t.Fatalf("%s: %s", sql, describeErr(err))
		}
		if len(res.Rows) != 1 {
			t.Fatalf("%s: %d rows, want 1", sql, len(res.Rows))
		}
		stmt := res.Rows[0][len(res.Rows[0])-1]
		if !regexp.MustCompile(`(?is)^\s*CREATE\b.*\b` + name + `\b`).MatchString(stmt) {
			t.Fatalf("%s: last column %q is not a CREATE statement for %s", sql, stmt, name)
		}
		return stmt
	}
	describe := func(name string) []string {
		t.Helper()
		res, err := QueryText(context.Background(), conn, "DESCRIBE "+name)
		if err != nil {
			t.Fatalf("DESCRIBE %s: %s", name, describeErr(err))
		}
		return res.Lines()
	}

	// Views, top down (each is dropped before what it reads from).
	for _, v := range []struct{ name, query string }{
		{"big_revenue", "SELECT region, total FROM big_revenue"},
		{"revenue", "SELECT region, orders, total, biggest FROM revenue"},
		{"nums_total", "SELECT n, s FROM nums_total"},
	} {
		stmt := showCreate("MATERIALIZED VIEW", v.name)
		desc := describe(v.name)
		ExecAll(t, conn, "FLUSH")
		rows := queryLines(t, conn, v.query)
		dependents := ""
		if v.name == "revenue" {
			dependents = " CASCADE" // big_revenue was recreated above
		}
		ExecAll(t, conn, "DROP MATERIALIZED VIEW "+v.name+dependents)
		ExecAll(t, conn, stmt)
		if got := describe(v.name); !equalLines(got, desc) {
			t.Errorf("%s recreated from SHOW CREATE: DESCRIBE differs (-before +after):\n%s", v.name, lineDiff(desc, got))
		}
		waitForLines(t, conn, v.query, rows)
	}

	// A table and a source, once nothing depends on them.
	ExecAll(t, conn, "DROP MATERIALIZED VIEW nums_total", "DROP MATERIALIZED VIEW revenue CASCADE")
	for _, r := range []struct{ kind, name string }{{"TABLE", "orders"}, {"TABLE", "notes"}, {"SOURCE", "nums"}} {
		stmt := showCreate(r.kind, r.name)
		desc := describe(r.name)
		ExecAll(t, conn, "DROP "+r.kind+" "+r.name, stmt)
		if got := describe(r.name); !equalLines(got, desc) {
			t.Errorf("%s recreated from SHOW CREATE: DESCRIBE differs (-before +after):\n%s", r.name, lineDiff(desc, got))
		}
	}
	// The recreated source still produces the same rows.
	ExecAll(t, conn, `CREATE MATERIALIZED VIEW nums_total AS SELECT count(*) AS n, sum(id) AS s FROM nums`)
	waitForLines(t, conn, "SELECT n, s FROM nums_total", []string{"20 210"})
}

// TestExplain checks that EXPLAIN prints a plan for a view and a SELECT,
// and creates nothing.
func TestExplain(t *testing.T) {
	srv := StartServer(t, Options{})
	conn := srv.Connect(t)
	ExecAll(t, conn, catalogSchema...)
	for _, c := range []struct {
		sql  string
		want []string // patterns the plan must contain
	}{
		{`EXPLAIN CREATE MATERIALIZED VIEW x AS
			SELECT c.region, count(*) AS n FROM orders o JOIN customers c ON o.customer = c.name GROUP BY c.region`,
			[]string{`(?i)join`, `(?i)agg|group`, `(?i)orders`, `(?i)customers`}},
		{`EXPLAIN SELECT region, count(*) FROM customers GROUP BY region`, []string{`(?i)customers`}},
		{`EXPLAIN SELECT * FROM revenue WHERE total > 1`, []string{`(?i)revenue`}},
	} {
		res, err := QueryText(context.Background(), conn, c.sql)
		if err != nil {
			t.Errorf("%s: %s", c.sql, describeErr(err))
			continue
		}
		plan := strings.Join(res.Lines(), "\n")
		if len(res.Rows) == 0 || strings.TrimSpace(plan) == "" {
			t.Errorf("%s: empty plan", c.sql)
			continue
		}
		expectMatches(t, c.sql, plan, c.want...)
	}
	if _, err := QueryText(context.Background(), conn, "SELECT * FROM x"); PgCode(err) != "42P01" {
		t.Errorf("EXPLAIN CREATE MATERIALIZED VIEW created the view: %s", errText(err))
	}
}

// TestViewErrorsAreVisible checks that a runtime error inside a view (a
// division by zero) leaves a NULL, keeps the view running, and is counted
// where a user can see it: a column of SHOW MATERIALIZED VIEWS whose name
// says "error" and holds a count.
func TestViewErrorsAreVisible(t *testing.T) {
	srv := StartServer(t, Options{})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE TABLE e (id INT PRIMARY KEY, a INT, b INT)`,
		`CREATE MATERIALIZED VIEW ratio AS SELECT id, a / b AS q FROM e`,
		`CREATE MATERIALIZED VIEW fine AS SELECT id FROM e`,
		`INSERT INTO e VALUES (1, 6, 3), (2, 1, 0)`)
	waitForLines(t, conn, "SELECT id, q FROM ratio", []string{"1 2", "2 NULL"})
	first := viewErrorCount(t, conn, "ratio")
	if first < 1 {
		t.Errorf("ratio: %d errors counted after a division by zero, want at least 1", first)
	}
	if n := viewErrorCount(t, conn, "fine"); n != 0 {
		t.Errorf("fine: %d errors counted, want 0", n)
	}
	ExecAll(t, conn, `INSERT INTO e VALUES (3, 5, 0), (4, 8, 2)`)
	waitForLines(t, conn, "SELECT id, q FROM ratio", []string{"1 2", "2 NULL", "3 NULL", "4 4"})
	if n := viewErrorCount(t, conn, "ratio"); n <= first {
		t.Errorf("ratio: error count went from %d to %d after another division by zero", first, n)
	}
}

func viewErrorCount(t *testing.T, conn *pgx.Conn, view string) int64 {
	t.Helper()
	res, err := QueryText(context.Background(), conn, "SHOW MATERIALIZED VIEWS")
	if err != nil {
		t.Fatalf("SHOW MATERIALIZED VIEWS: %s", describeErr(err))
	}
	col := -1
	for i, name := range res.ColumnNames() {
		if regexp.MustCompile(`(?i)^(errors?|error[ _]count)$`).MatchString(name) {
			col = i
		}
	}
	if col < 0 {
		t.Fatalf("SHOW MATERIALIZED VIEWS has no error count column: %v", res.ColumnNames())
	}
	for _, row := range res.Rows {
		if row[0] == view {
			return mustInt(t, row[col])
		}
	}
	t.Fatalf("SHOW MATERIALIZED VIEWS does not list %s", view)
	return 0
}
