package tests

// Differential testing against PostgreSQL (issue 17 item 9), in the manner
// of SQLancer and sqlsmith: random tables, data, DML sequences and queries
// (joins, aggregates, CASE, NULLs, window functions, scalar functions). Each
// query becomes a materialized view in Sluice and stays a plain query in the
// machine's PostgreSQL (a private database per run); random INSERT, UPDATE
// and DELETE statements go to both, and after every step each view and the
// same query as a plain SELECT in Sluice are compared with PostgreSQL's
// answer, as multisets (no query has ORDER BY), floats within a relative
// tolerance. A view Sluice refuses with 0A000 at CREATE counts as refused; a
// query both systems reject is skipped.
//
// CI runs a bounded, seeded slice. Longer:
//
//	SLUICE_DIFF_DURATION=1h go test -count=1 -timeout 0 -run TestDiffFuzz -v ./tests/
//
// (SLUICE_DIFF_SEED picks the first seed) prints queries tried, refused,
// mismatches and crashes. Every mismatch found is kept as a logic test.

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	diffTables        = 3
	diffViewsPerRound = 6
	diffStepsPerRound = 5
)

type diffStats struct {
	rounds, queries, refused, bothErr, compared, mismatches, crashes int
	refusals                                                         map[string]int // by message
}

func TestDiffFuzz(t *testing.T) {
	EnsurePostgres(t)
	dur := 0 * time.Second
	rounds := 12 // the CI slice: well under 60 s in a race build
	if s := os.Getenv("SLUICE_DIFF_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("SLUICE_DIFF_DURATION: %v", err)
		}
		dur, rounds = d, math.MaxInt
	}
	seed := int64(17)
	if s := os.Getenv("SLUICE_DIFF_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("SLUICE_DIFF_SEED: %v", err)
		}
		seed = v
	}
	srv := StartServer(t, Options{})
	pgURL := FreshPostgresDB(t, fmt.Sprintf("sluice_difffuzz_%d", os.Getpid())) // a private database per run
	sl := MustConnectMode(t, srv.ConnString(), pgx.QueryExecModeSimpleProtocol)
	pg := MustConnectMode(t, pgURL, pgx.QueryExecModeSimpleProtocol)
	st := diffStats{refusals: map[string]int{}}
	start := time.Now()
	for r := 0; r < rounds; r++ {
		if dur > 0 && time.Since(start) > dur {
			break
		}
		if !diffRound(t, srv, sl, pg, seed+int64(r), &st) {
			break
		}
		st.rounds++
	}
	t.Logf("differential: %d rounds, %d queries tried, %d refused (0A000), %d rejected by both, %d comparisons, %d mismatches, %d crashes, %s",
		st.rounds, st.queries, st.refused, st.bothErr, st.compared, st.mismatches, st.crashes, time.Since(start).Round(time.Second))
	for msg, n := range st.refusals {
		t.Logf("refused %d×: %s", n, msg)
	}
	if st.mismatches > 0 || st.crashes > 0 {
		t.Errorf("%d mismatches, %d crashes", st.mismatches, st.crashes)
	}
}

// diffRound runs one seeded round; false if the server died (a crash).
func diffRound(t *testing.T, srv *Server, sl, pg *pgx.Conn, seed int64, st *diffStats) bool {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	ctx := context.Background()
	g := &diffGen{rng: rng, nextID: 1}
	exec := func(conn *pgx.Conn, q string) error {
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, err := QueryText(c, conn, q)
		return err
	}
	// A fresh schema: drop what the last round made.
	for i := 0; i < diffTables; i++ {
		for _, conn := range []*pgx.Conn{sl, pg} {
			_ = exec(conn, fmt.Sprintf("DROP TABLE IF EXISTS t%d CASCADE", i))
		}
	}
	for i := 0; i < diffTables; i++ {
		ddl := fmt.Sprintf("CREATE TABLE t%d (id INT PRIMARY KEY, a INT, b INT, c TEXT, d DOUBLE PRECISION, n NUMERIC)", i)
		for _, conn := range []*pgx.Conn{sl, pg} {
			if err := exec(conn, ddl); err != nil {
				t.Fatalf("seed %d: %s: %v", seed, ddl, err)
			}
		}
		for k := 0; k < 6; k++ {
			ins := g.insert(i)
			if err := exec(sl, ins); err != nil {
				t.Fatalf("seed %d: %s: %v", seed, ins, err)
			}
			if err := exec(pg, ins); err != nil {
				t.Fatalf("seed %d: postgres: %s: %v", seed, ins, err)
			}
		}
	}
	type view struct{ name, q string }
	var views []view
	for v := 0; v < diffViewsPerRound; v++ {
		q := g.query()
		st.queries++
		name := fmt.Sprintf("mv%d", v)
		pgErr := exec(pg, "SELECT * FROM ("+q+") AS x LIMIT 0")
		err := exec(sl, "CREATE MATERIALIZED VIEW "+name+" AS "+q)
		switch {
		case err == nil && pgErr != nil:
			st.mismatches++
			t.Errorf("seed %d: Sluice accepts what PostgreSQL rejects (%v):\n%s", seed, pgErr, q)
			_ = exec(sl, "DROP MATERIALIZED VIEW "+name)
			continue
		case err != nil && !srv.Running():
			st.crashes++
			t.Errorf("seed %d: the server died at CREATE:\n%s\n%s", seed, q, srv.Logs())
			return false
		case err != nil && pgErr != nil:
			st.bothErr++
			continue
		case err != nil && PgCode(err) == "0A000":
			st.refused++
			st.refusals[err.Error()]++
			continue
		case err != nil:
			st.mismatches++
			t.Errorf("seed %d: CREATE fails in Sluice (%v), PostgreSQL runs the query:\n%s", seed, err, q)
			continue
		}
		views = append(views, view{name, q})
	}
	compare := func(step string) bool {
		if err := exec(sl, "FLUSH"); err != nil {
			if !srv.Running() {
				st.crashes++
				t.Errorf("seed %d: the server died after %s\n%s", seed, step, srv.Logs())
				return false
			}
			t.Fatalf("seed %d: FLUSH: %v", seed, err)
		}
		for _, v := range views {
			want, err := diffRows(ctx, pg, v.q)
			if err != nil {
				continue // PostgreSQL fails at run time (overflow, division by zero): nothing to compare
			}
			for _, read := range []string{"SELECT * FROM " + v.name, v.q} {
				st.compared++
				got, err := diffRows(ctx, sl, read)
				// A view is maintained asynchronously: poll briefly.
				for deadline := time.Now().Add(3 * time.Second); (err != nil || !diffEqual(got, want)) && time.Now().Before(deadline) && read != v.q; {
					time.Sleep(50 * time.Millisecond)
					got, err = diffRows(ctx, sl, read)
				}
				if err != nil && !srv.Running() {
					st.crashes++
					t.Errorf("seed %d: the server died reading %s\n%s", seed, read, srv.Logs())
					return false
				}
				if err != nil || !diffEqual(got, want) {
					st.mismatches++
					if st.mismatches <= 20 {
						t.Errorf("seed %d after %s: %s\nquery: %s\nsluice (%v): %v\npostgres: %v", seed, step, read, v.q, err, diffHead(got), diffHead(want))
					}
				}
			}
		}
		return true
	}
	if !compare("the initial data") {
		return false
	}
	for s := 0; s < diffStepsPerRound; s++ {
		dml := g.dml()
		errS, errP := exec(sl, dml), exec(pg, dml)
		if (errS == nil) != (errP == nil) {
			if !srv.Running() {
				st.crashes++
				t.Errorf("seed %d: the server died at %s\n%s", seed, dml, srv.Logs())
				return false
			}
			st.mismatches++
			t.Errorf("seed %d: %s: sluice %v, postgres %v", seed, dml, errS, errP)
			return true // the two databases now differ: end the round
		}
		if !compare(dml) {
			return false
		}
	}
	for _, v := range views {
		_ = exec(sl, "DROP MATERIALIZED VIEW "+v.name)
	}
	return true
}

func diffRows(ctx context.Context, conn *pgx.Conn, q string) ([]string, error) {
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := QueryText(c, conn, q)
	if err != nil {
		return nil, err
	}
	lines := make([]string, len(res.Rows))
	for i, row := range res.Rows {
		lines[i] = strings.Join(row, "|")
	}
	sort.Strings(lines)
	return lines, nil
}

func diffHead(rows []string) []string {
	if len(rows) > 12 {
		return append(rows[:12:12], fmt.Sprintf("… %d rows", len(rows)))
	}
	return rows
}

// diffEqual compares two sorted multisets of rows; values that both parse
// as numbers are equal within a relative 1e-9 (float sums in another order).
func diffEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] == b[i] {
			continue
		}
		fa, fb := strings.Split(a[i], "|"), strings.Split(b[i], "|")
		if len(fa) != len(fb) {
			return false
		}
		for j := range fa {
			if fa[j] == fb[j] {
				continue
			}
			x, e1 := strconv.ParseFloat(fa[j], 64)
			y, e2 := strconv.ParseFloat(fb[j], 64)
			if e1 != nil || e2 != nil || math.Abs(x-y) > 1e-9*math.Max(1, math.Max(math.Abs(x), math.Abs(y))) {
				return false
			}
		}
	}
	return true
}

// diffGen generates tables' rows, DML and queries over t0..t2, each
// (id INT PRIMARY KEY, a INT, b INT, c TEXT, d DOUBLE PRECISION, n NUMERIC).
// Small domains make joins and groups meet; NULLs are frequent.
type diffGen struct {
	rng    *rand.Rand
	nextID int
}

func (g *diffGen) pick(xs ...string) string { return xs[g.rng.Intn(len(xs))] }

func (g *diffGen) lit(col string) string {
	if g.rng.Intn(6) == 0 {
		return "NULL"
	}
	switch col {
	case "a", "b":
		return strconv.Itoa(g.rng.Intn(7) - 2)
	case "c":
		return g.pick("'x'", "'y'", "'ab'", "''", "'Zz'", "'x y'")
	case "d":
		return g.pick("0.5", "-1.25", "3", "0", "2.75", "100.125")
	default: // n
		return g.pick("1.10", "-2", "0", "3.333", "10", "0.05")
	}
}

func (g *diffGen) insert(tab int) string {
	var rows []string
	for k := 1 + g.rng.Intn(3); k > 0; k-- {
		rows = append(rows, fmt.Sprintf("(%d, %s, %s, %s, %s, %s)", g.nextID, g.lit("a"), g.lit("b"), g.lit("c"), g.lit("d"), g.lit("n")))
		g.nextID++
	}
	return fmt.Sprintf("INSERT INTO t%d VALUES %s", tab, strings.Join(rows, ", "))
}

func (g *diffGen) dml() string {
	tab := g.rng.Intn(diffTables)
	switch g.rng.Intn(3) {
	case 0:
		return g.insert(tab)
	case 1:
		col := g.pick("a", "b", "c", "d", "n")
		val := g.lit(col)
		if col == "a" || col == "b" {
			val = g.pick(val, col+" + 1", "coalesce("+col+", 0) - 1")
		}
		return fmt.Sprintf("UPDATE t%d SET %s = %s WHERE %s", tab, col, val, g.pred("", 1))
	default:
		return fmt.Sprintf("DELETE FROM t%d WHERE %s", tab, g.pred("", 1))
	}
}

// intExpr is an integer expression over the columns of alias q ("" for
// none).
func (g *diffGen) intExpr(q string, depth int) string {
	col := func(c string) string {
		if q == "" {
			return c
		}
		return q + "." + c
	}
	if depth <= 0 {
		return g.pick(col("a"), col("b"), col("a"), strconv.Itoa(g.rng.Intn(5)))
	}
	switch g.rng.Intn(7) {
	case 0:
		return "(" + g.intExpr(q, depth-1) + " + " + g.intExpr(q, depth-1) + ")"
	case 1:
		return "(" + g.intExpr(q, depth-1) + " * " + g.intExpr(q, depth-1) + ")"
	case 2:
		return "coalesce(" + g.intExpr(q, depth-1) + ", " + strconv.Itoa(g.rng.Intn(3)) + ")"
	case 3:
		return "CASE WHEN " + g.pred(q, depth-1) + " THEN " + g.intExpr(q, depth-1) + " ELSE " + g.intExpr(q, depth-1) + " END"
	case 4:
		return "abs(" + g.intExpr(q, depth-1) + ")"
	case 5:
		return "nullif(" + g.intExpr(q, depth-1) + ", 1)"
	default:
		return "length(" + col("c") + ")"
	}
}

func (g *diffGen) pred(q string, depth int) string {
	col := func(c string) string {
		if q == "" {
			return c
		}
		return q + "." + c
	}
	switch g.rng.Intn(8) {
	case 0:
		return g.intExpr(q, depth) + g.pick(" = ", " < ", " >= ", " <> ") + g.intExpr(q, depth)
	case 1:
		return col(g.pick("a", "b", "c", "d", "n")) + g.pick(" IS NULL", " IS NOT NULL")
	case 2:
		if depth > 0 {
			return "(" + g.pred(q, depth-1) + g.pick(" AND ", " OR ") + g.pred(q, depth-1) + ")"
		}
		return col("a") + " > 0"
	case 3:
		return "NOT (" + col("b") + " < 2)"
	case 4:
		return col("c") + g.pick(" LIKE 'x%'", " = 'ab'", " > 'x'", " IN ('y', 'Zz')")
	case 5:
		return col("d") + g.pick(" > 1", " <= 0.5", " BETWEEN 0 AND 3")
	case 6:
		return col("a") + g.pick(" IN (1, 2, NULL)", " NOT IN (0, 3)", " BETWEEN -1 AND 2")
	default:
		return col("n") + g.pick(" > 0", " < 3.333", " = 10")
	}
}

// scalar is an expression of any type for a SELECT list.
func (g *diffGen) scalar(q string) string {
	col := func(c string) string {
		if q == "" {
			return c
		}
		return q + "." + c
	}
	switch g.rng.Intn(9) {
	case 0, 1:
		return g.intExpr(q, 2)
	case 2:
		return g.pick("upper", "lower", "length", "md5") + "(" + col("c") + ")"
	case 3:
		return col("c") + " || " + g.pick("'-'", col("c"), "'x'")
	case 4:
		return col("d") + g.pick(" * 2", " + 1.5", " / 4", "")
	case 5:
		return col("n") + g.pick(" * 2", " + 1", " / 3", "")
	case 6:
		return g.pred(q, 1)
	case 7:
		return g.pick("round("+col("n")+", 1)", "floor("+col("d")+")", "greatest("+col("a")+", "+col("b")+")", "least("+col("a")+", 0)")
	default:
		return "CASE " + col("a") + " WHEN 1 THEN 'one' WHEN 2 THEN 'two' ELSE " + col("c") + " END"
	}
}

func (g *diffGen) agg(q string) string {
	col := func(c string) string {
		if q == "" {
			return c
		}
		return q + "." + c
	}
	switch g.rng.Intn(10) {
	case 0:
		return "count(*)"
	case 1:
		return "count(" + col(g.pick("a", "c", "d")) + ")"
	case 2:
		return "sum(" + g.intExpr(q, 1) + ")"
	case 3:
		return g.pick("min", "max") + "(" + col(g.pick("a", "b", "c", "d", "n")) + ")"
	case 4:
		return "avg(" + col(g.pick("a", "n")) + ")"
	case 5:
		return "sum(" + col("n") + ")"
	case 6:
		return "count(DISTINCT " + col(g.pick("a", "c")) + ")"
	case 7:
		return "sum(" + col("a") + ") FILTER (WHERE " + g.pred(q, 0) + ")"
	case 8:
		return "bool_or(" + g.pred(q, 0) + ")"
	default:
		return "sum(" + col("d") + ")"
	}
}

func (g *diffGen) query() string {
	tab := fmt.Sprintf("t%d", g.rng.Intn(diffTables))
	switch g.rng.Intn(9) {
	case 8:
		return g.lateral(tab)
	case 7:
		return g.groupingSets(tab)
	case 0: // filter and project
		return fmt.Sprintf("SELECT id, %s AS e1, %s AS e2 FROM %s WHERE %s", g.scalar(""), g.scalar(""), tab, g.pred("", 2))
	case 1: // aggregate
		key := g.pick("a", "c", "a % 2", "b IS NULL", "coalesce(c, 'none')")
		q := fmt.Sprintf("SELECT %s AS k, %s AS g1, %s AS g2 FROM %s", key, g.agg(""), g.agg(""), tab)
		if g.rng.Intn(2) == 0 {
			q += " WHERE " + g.pred("", 1)
		}
		if g.rng.Intn(4) == 0 {
			q += " GROUP BY 1"
		} else {
			q += " GROUP BY " + key
		}
		if g.rng.Intn(3) == 0 {
			q += " HAVING count(*) > 1"
		}
		return q
	case 2: // global aggregate
		return fmt.Sprintf("SELECT %s AS g1, %s AS g2 FROM %s WHERE %s", g.agg(""), g.agg(""), tab, g.pred("", 1))
	case 3, 4: // join
		other := fmt.Sprintf("t%d", g.rng.Intn(diffTables))
		kind := g.pick("JOIN", "LEFT JOIN", "JOIN", "RIGHT JOIN", "FULL JOIN")
		on := g.pick("x.a = y.a", "x.a = y.b", "x.c = y.c", "x.a = y.a AND x.b < y.b")
		if g.rng.Intn(2) == 0 {
			return fmt.Sprintf("SELECT x.id AS xid, y.id AS yid, %s AS e1, %s AS e2 FROM %s x %s %s y ON %s WHERE %s",
				g.scalar("x"), g.scalar("y"), tab, kind, other, on, g.pick(g.pred("x", 1), "true", "y.id IS NULL OR "+g.pred("y", 0)))
		}
		return fmt.Sprintf("SELECT x.a AS k, %s AS g1, %s AS g2 FROM %s x %s %s y ON %s GROUP BY x.a",
			g.agg("y"), g.agg("x"), tab, kind, other, on)
	case 5:
		return g.topN(tab)
	default: // window functions
		part := g.pick("a", "c", "b % 2")
		fn := g.pick("row_number()", "rank()", "dense_rank()", "sum(b)", "count(*)", "max(d)", "lag(a)", "lead(c)", "first_value(c)")
		return fmt.Sprintf("SELECT id, a, %s OVER (PARTITION BY %s ORDER BY id) AS w FROM %s WHERE %s", fn, part, tab, g.pred("", 1))
	}
}

// groupingSets is an aggregation over grouping sets: ROLLUP, CUBE,
// GROUPING SETS with a repeated set and the empty set, ROLLUP nested in
// GROUPING SETS, a plain column crossed with ROLLUP, a composite element;
// GROUPING() in the select list and in HAVING.
func (g *diffGen) groupingSets(tab string) string {
	k1 := g.pick("a", "c", "a % 2")
	k2 := g.pick("b % 3", "c", "b IS NULL")
	if k1 == k2 {
		k2 = "b % 3"
	}
	var by string
	switch g.rng.Intn(6) {
	case 0:
		by = fmt.Sprintf("ROLLUP (%s, %s)", k1, k2)
	case 1:
		by = fmt.Sprintf("CUBE (%s, %s)", k1, k2)
	case 2:
		by = fmt.Sprintf("GROUPING SETS ((%s, %s), (%s), (%s), ())", k1, k2, k1, k1)
	case 3:
		by = fmt.Sprintf("%s, ROLLUP (%s)", k1, k2)
	case 4:
		by = fmt.Sprintf("GROUPING SETS (%s, ROLLUP (%s, %s), ())", k2, k1, k2)
	default:
		by = fmt.Sprintf("ROLLUP ((%s, %s))", k1, k2)
	}
	q := fmt.Sprintf("SELECT %s AS k1, %s AS k2, grouping(%s, %s) AS gid, %s AS g1, %s AS g2 FROM %s",
		k1, k2, k1, k2, g.agg(""), g.agg(""), tab)
	if g.rng.Intn(2) == 0 {
		q += " WHERE " + g.pred("", 1)
	}
	q += " GROUP BY " + by
	if g.rng.Intn(3) == 0 {
		q += fmt.Sprintf(" HAVING count(*) > 1 OR grouping(%s) = 1", k1)
	}
	return q
}

// lateral is a LATERAL subquery correlated by an equality with the FROM
// item before it, inner or LEFT JOIN … ON true, with or without a
// per-row ORDER BY … LIMIT (a total order).
func (g *diffGen) lateral(tab string) string {
	if g.rng.Intn(3) == 0 { // a set-returning function of the row before it
		fn := g.pick("unnest(ARRAY[x.a, x.b, x.a + 1])", "unnest(ARRAY[x.c, upper(x.c)])", "generate_series(1, x.a % 4)",
			"generate_series(x.b, x.b + 2)")
		join := g.pick("CROSS JOIN LATERAL", ",", "JOIN LATERAL")
		on := ""
		if join == "JOIN LATERAL" {
			on = " ON " + g.pick("true", "u.v IS NOT NULL", "x.id % 2 = 0")
		}
		if strings.HasPrefix(fn, "unnest") && g.rng.Intn(2) == 0 {
			return fmt.Sprintf("SELECT x.id, u.v, u.n FROM %s x %s %s WITH ORDINALITY AS u(v, n)%s WHERE %s", tab, join, fn, on, g.pred("x", 1))
		}
		return fmt.Sprintf("SELECT x.id, u.v FROM %s x %s %s AS u(v)%s WHERE %s", tab, join, fn, on, g.pred("x", 1))
	}
	other := fmt.Sprintf("t%d", g.rng.Intn(diffTables))
	key := g.pick("a", "b", "c")
	join, on := g.pick("CROSS JOIN LATERAL", ", LATERAL", "LEFT JOIN LATERAL"), ""
	if join == "LEFT JOIN LATERAL" {
		on = " ON true"
	}
	limit := ""
	if g.rng.Intn(3) > 0 {
		limit = fmt.Sprintf(" ORDER BY y.b%s, y.id%s LIMIT %d", g.pick("", " DESC", " NULLS FIRST"), g.pick("", " DESC"), 1+g.rng.Intn(3))
	}
	return fmt.Sprintf("SELECT x.id, s.id AS sid, s.e FROM %s x %s (SELECT y.id, %s AS e FROM %s y WHERE y.%s = x.%s AND %s%s) s%s WHERE %s",
		tab, join, g.scalar("y"), other, key, key, g.pred("y", 0), limit, on, g.pred("x", 1))
}

// topN is a Top-N query: ORDER BY … LIMIT [OFFSET], FETCH FIRST … WITH
// TIES, over rows or groups, DISTINCT ON, per group (a correlated
// subquery's LIMIT, a row-number filter). Each order is total (it ends
// with a unique column) unless WITH TIES keeps every peer, so PostgreSQL's
// answer is one set.
func (g *diffGen) topN(tab string) string {
	dir := func() string {
		return g.pick("", " DESC", " NULLS FIRST", " DESC NULLS LAST", " ASC NULLS LAST")
	}
	limit := func() string {
		l := fmt.Sprintf(" LIMIT %d", g.rng.Intn(5))
		if g.rng.Intn(3) == 0 {
			l += fmt.Sprintf(" OFFSET %d", g.rng.Intn(4))
		}
		return l
	}
	switch g.rng.Intn(6) {
	case 0: // rows
		key := g.pick("a", "b", "c", "d", "n", g.intExpr("", 1))
		return fmt.Sprintf("SELECT id, a, %s AS e1 FROM %s WHERE %s ORDER BY %s%s, id%s%s",
			g.scalar(""), tab, g.pred("", 1), key, dir(), dir(), limit())
	case 1: // WITH TIES: every peer of the last row is in
		key := g.pick("a", "b", "c", "a % 2", "coalesce(b, 0)")
		return fmt.Sprintf("SELECT id, %s AS k, c FROM %s WHERE %s ORDER BY %s%s FETCH FIRST %d ROWS WITH TIES",
			key, tab, g.pred("", 1), key, dir(), 1+g.rng.Intn(4))
	case 2: // groups
		key := g.pick("a", "c", "b % 3")
		return fmt.Sprintf("SELECT %s AS k, count(*) AS g1, %s AS g2 FROM %s GROUP BY 1 ORDER BY g1%s, k%s%s",
			key, g.agg(""), tab, dir(), dir(), limit())
	case 3: // DISTINCT ON: each key's first row
		key := g.pick("a", "c", "b % 2", "a IS NULL")
		return fmt.Sprintf("SELECT DISTINCT ON (%s) %s AS k, id, b FROM %s WHERE %s ORDER BY %s%s, b%s, id%s",
			key, key, tab, g.pred("", 1), key, dir(), dir(), dir())
	case 4: // per group: a correlated subquery's LIMIT
		other := fmt.Sprintf("t%d", g.rng.Intn(diffTables))
		return fmt.Sprintf("SELECT id, a, c FROM %s x WHERE %s %s (SELECT y.id FROM %s y WHERE y.%s = x.%s ORDER BY y.b%s, y.id%s%s)",
			tab, g.pick("id", "b"), g.pick("IN", "NOT IN"), other, g.pick("a", "c"), g.pick("a", "c"), dir(), dir(), limit())
	default: // per group: a row-number filter over a partition
		part := g.pick("a", "c", "b % 2")
		return fmt.Sprintf("SELECT id, a, b FROM (SELECT id, a, b, row_number() OVER (PARTITION BY %s ORDER BY b%s, id) AS rn FROM %s WHERE %s) s WHERE rn <= %d",
			part, dir(), tab, g.pred("", 1), 1+g.rng.Intn(3))
	}
}
