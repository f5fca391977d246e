package tests

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestGroupingSetsDiff maintains views of GROUPING SETS, ROLLUP and CUBE
// (duplicate sets, nested ROLLUP and CUBE inside GROUPING SETS, the empty
// set, GROUP BY a, ROLLUP(b, c), composite elements, GROUP BY DISTINCT,
// GROUPING() in the select list and HAVING, DISTINCT and FILTER aggregates,
// a self-join below) through runViewDiff: after every random change each
// view, and its query as a plain SELECT, must equal PostgreSQL's answer;
// the NULLs of rolled-up columns and the NULLs in the data are both there,
// told apart by GROUPING().
func TestGroupingSetsDiff(t *testing.T) {
	views := []string{
		"SELECT g, h, count(*), sum(a), grouping(g, h) FROM gs_t GROUP BY ROLLUP (g, h)",
		"SELECT g, h, count(a), min(n), max(h), grouping(h, g) AS gid FROM gs_t GROUP BY CUBE (g, h)",
		"SELECT g, count(*), sum(n) FROM gs_t GROUP BY GROUPING SETS ((g), (g), ())",
		"SELECT g, h, a % 3 AS r, count(*), grouping(g, h, a % 3) FROM gs_t GROUP BY g, ROLLUP (h, a % 3)",
		"SELECT g, h, sum(a), grouping(g), grouping(h) FROM gs_t GROUP BY GROUPING SETS (g, ROLLUP (g, h), (), CUBE (h))",
		"SELECT g, h, count(*) FROM gs_t GROUP BY ROLLUP (g, h) HAVING count(*) > 2 OR grouping(g) = 1",
		"SELECT g, h, avg(a), count(DISTINCT a), sum(a) FILTER (WHERE a > 0) FROM gs_t GROUP BY ROLLUP ((g, h))",
		"SELECT count(*), sum(a), max(n) FROM gs_t GROUP BY GROUPING SETS ((), ())",
		"SELECT g, stddev(a), bit_or(a), grouping(g) FROM gs_t GROUP BY ROLLUP (g)",
		"SELECT CASE WHEN grouping(h) = 1 THEN '(all)' ELSE h END AS hh, g, count(*) FROM gs_t WHERE a IS NOT NULL GROUP BY DISTINCT ROLLUP (g, h), ROLLUP (g)",
		"SELECT g + 1 AS g1, h, max(n), min(a) FROM gs_t GROUP BY CUBE (g + 1, h)",
		"SELECT x.g, y.h, count(*), sum(y.a) FROM gs_t x JOIN gs_t y ON x.a = y.g GROUP BY ROLLUP (x.g, y.h)",
		"SELECT g, h, coalesce(h, 'null h') AS hn, count(*) FROM gs_t GROUP BY GROUPING SETS ((g, h), (h), ROLLUP (g))",
	}
	compared, mismatches := runViewDiff(t, "gs_t", views)
	t.Logf("%d views, %d steps and a restart, %d comparisons, %d mismatches", len(views), viewDiffSteps+2, compared, mismatches)
}

// viewDiffSteps is the number of random DML steps of runViewDiff.
const viewDiffSteps = 40

// runViewDiff creates table (id INT PRIMARY KEY, g INT, h TEXT, a INT,
// n NUMERIC) in Sluice and in a private database of the machine's
// PostgreSQL, and views over it in Sluice (named <table>_v<i>); then, over
// no rows, 160 rows and after each of viewDiffSteps seeded random inserts,
// updates and deletes (whole groups and the whole table included) applied
// to both, with a kill -9 and restart halfway, it compares each view and
// its query as a plain SELECT in Sluice with PostgreSQL's answer as a
// multiset of rows. Mismatches are reported as errors and counted.
func runViewDiff(t *testing.T, table string, views []string) (compared, mismatches int) {
	t.Helper()
	EnsurePostgres(t)
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond})
	ctx := context.Background()
	sl := MustConnectMode(t, srv.ConnString(), pgx.QueryExecModeSimpleProtocol)
	pg := MustConnectMode(t, FreshPostgresDB(t, fmt.Sprintf("grouping20_%s_%d", table, os.Getpid())), pgx.QueryExecModeSimpleProtocol)
	exec := func(conn *pgx.Conn, q string) error {
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, err := QueryText(c, conn, q)
		return err
	}
	ddl := "CREATE TABLE " + table + " (id INT PRIMARY KEY, g INT, h TEXT, a INT, n NUMERIC)"
	for _, conn := range []*pgx.Conn{sl, pg} {
		if err := exec(conn, ddl); err != nil {
			t.Fatal(err)
		}
	}
	for i, q := range views {
		if err := exec(sl, fmt.Sprintf("CREATE MATERIALIZED VIEW %s_v%d AS %s", table, i, q)); err != nil {
			t.Fatalf("view %d: %s: %v", i, q, err)
		}
	}

	rng := rand.New(rand.NewSource(20))
	nextID := 1
	val := func(col string) string {
		if rng.Intn(7) == 0 {
			return "NULL" // NULLs in the data, beside those of rolled-up columns
		}
		switch col {
		case "g":
			return fmt.Sprint(rng.Intn(4))
		case "h":
			return fmt.Sprintf("'%c'", 'p'+rng.Intn(3))
		case "a":
			return fmt.Sprint(rng.Intn(21) - 10)
		default: // n
			return fmt.Sprintf("%d.%02d", rng.Intn(200)-100, rng.Intn(100))
		}
	}
	insert := func(k int) string {
		var rows []string
		for ; k > 0; k-- {
			rows = append(rows, fmt.Sprintf("(%d, %s, %s, %s, %s)", nextID, val("g"), val("h"), val("a"), val("n")))
			nextID++
		}
		return "INSERT INTO " + table + " VALUES " + strings.Join(rows, ", ")
	}
	cols := []string{"g", "h", "a", "n"}
	dml := func(step int) string {
		if step == viewDiffSteps/2 {
			return "DELETE FROM " + table // every group goes; the empty sets' rows stay
		}
		switch r := rng.Intn(10); {
		case r < 4:
			return insert(1 + rng.Intn(10))
		case r < 6:
			c := cols[rng.Intn(len(cols))]
			return fmt.Sprintf("UPDATE %s SET %s = %s WHERE id %% 7 = %d", table, c, val(c), rng.Intn(7))
		case r < 7:
			return fmt.Sprintf("UPDATE %s SET g = %s WHERE g = %d", table, val("g"), rng.Intn(4))
		case r < 9:
			return fmt.Sprintf("DELETE FROM %s WHERE id %% 9 = %d", table, rng.Intn(9))
		default:
			return fmt.Sprintf("DELETE FROM %s WHERE h = %s", table, val("h")) // a whole group
		}
	}

	compare := func(step string) {
		if err := exec(sl, "FLUSH"); err != nil {
			t.Fatalf("FLUSH: %v", err)
		}
		for i, q := range views {
			want, err := diffRows(ctx, pg, q)
			if err != nil {
				t.Fatalf("postgres: %s: %v", q, err)
			}
			for _, read := range []string{fmt.Sprintf("SELECT * FROM %s_v%d", table, i), q} {
				compared++
				got, err := diffRows(ctx, sl, read)
				// A view is maintained asynchronously: poll briefly.
				for deadline := time.Now().Add(3 * time.Second); (err != nil || !diffEqual(got, want)) && time.Now().Before(deadline) && read != q; {
					time.Sleep(50 * time.Millisecond)
					got, err = diffRows(ctx, sl, read)
				}
				if err != nil || !diffEqual(got, want) {
					mismatches++
					if mismatches <= 10 {
						t.Errorf("after %s: %s\nquery: %s\nsluice (%v): %v\npostgres: %v", step, read, q, err, diffHead(got), diffHead(want))
					}
				}
			}
		}
	}
	compare("no rows") // the empty sets' rows of an empty table
	for k := 0; k < 4; k++ {
		ins := insert(40)
		for _, conn := range []*pgx.Conn{sl, pg} {
			if err := exec(conn, ins); err != nil {
				t.Fatalf("%s: %v", ins, err)
			}
		}
	}
	compare("the initial 160 rows")
	for s := 0; s < viewDiffSteps; s++ {
		if s == viewDiffSteps/2 {
			sl.Close(ctx)
			if err := srv.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			sl = MustConnectMode(t, srv.ConnString(), pgx.QueryExecModeSimpleProtocol)
			compare("a kill -9 and restart")
		}
		q := dml(s)
		errS, errP := exec(sl, q), exec(pg, q)
		if (errS == nil) != (errP == nil) {
			t.Fatalf("%s: sluice %v, postgres %v", q, errS, errP)
		}
		compare(q)
	}
	return compared, mismatches
}
