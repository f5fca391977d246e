package tests

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestWindowDiff creates ~40 window-function views in Sluice (lag, lead,
// first_value, last_value, nth_value, ntile, percent_rank, cume_dist,
// ranks and aggregates over ROWS, RANGE and GROUPS frames with offsets,
// FOLLOWING bounds and EXCLUDE, named windows) over one table, applies
// seeded random inserts, updates (moving rows between partitions and
// into ties) and deletes to it and to the same table in the machine's
// PostgreSQL (database test, table win_diff), and after every step
// compares each view, and the same query as a plain SELECT in Sluice,
// with PostgreSQL's answer; halfway the server is killed (SIGKILL) and
// restarted. Queries whose answer depends on the order of
// peers (ROWS frames, lag, ntile, value functions) order by a unique key.
// SLUICE_WINDOW_DIFF_STEPS and SLUICE_WINDOW_DIFF_SEED run more or other.
func TestWindowDiff(t *testing.T) {
	EnsurePostgres(t)
	steps, seed := 12, int64(3)
	if s := os.Getenv("SLUICE_WINDOW_DIFF_STEPS"); s != "" {
		steps, _ = strconv.Atoi(s)
	}
	if s := os.Getenv("SLUICE_WINDOW_DIFF_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	ctx := context.Background()
	srv := StartServer(t, Options{})
	sl := MustConnectMode(t, srv.ConnString(), pgx.QueryExecModeSimpleProtocol)
	pg := MustConnectMode(t, PostgresURL("test"), pgx.QueryExecModeSimpleProtocol)
	exec := func(conn *pgx.Conn, q string) error {
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, err := QueryText(c, conn, q)
		return err
	}
	const ddl = "CREATE TABLE win_diff (id INT PRIMARY KEY, g INT, a INT, b INT, d DOUBLE PRECISION)"
	_ = exec(pg, "DROP TABLE IF EXISTS win_diff")
	t.Cleanup(func() { _ = exec(pg, "DROP TABLE IF EXISTS win_diff") })
	for _, conn := range []*pgx.Conn{sl, pg} {
		if err := exec(conn, ddl); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewSource(seed))
	val := func(n int) string {
		if rng.Intn(6) == 0 {
			return "NULL"
		}
		return strconv.Itoa(rng.Intn(n))
	}
	nextID := 1
	insert := func(k int) string {
		var vs []string
		for ; k > 0; k-- {
			d := "NULL"
			if rng.Intn(5) > 0 {
				d = fmt.Sprintf("%d.5", rng.Intn(20)-5)
			}
			vs = append(vs, fmt.Sprintf("(%d, %s, %s, %s, %s)", nextID, val(4), val(12), val(5), d))
			nextID++
		}
		return "INSERT INTO win_diff VALUES " + strings.Join(vs, ", ")
	}
	dml := func() string {
		id := 1 + rng.Intn(nextID)
		switch rng.Intn(7) {
		case 0, 1:
			return insert(1 + rng.Intn(4))
		case 2:
			return fmt.Sprintf("UPDATE win_diff SET g = %s WHERE id = %d", val(4), id) // moves partitions
		case 3:
			return fmt.Sprintf("UPDATE win_diff SET a = %s, d = d + 1 WHERE id %% 3 = %d", val(12), rng.Intn(3))
		case 4:
			return fmt.Sprintf("UPDATE win_diff SET a = a + 1 WHERE b = %d", rng.Intn(5))
		case 5:
			return fmt.Sprintf("DELETE FROM win_diff WHERE id = %d", id)
		}
		return fmt.Sprintf("DELETE FROM win_diff WHERE a = %d AND g = %d", rng.Intn(12), rng.Intn(4))
	}
	ins := insert(30)
	for _, conn := range []*pgx.Conn{sl, pg} {
		if err := exec(conn, ins); err != nil {
			t.Fatal(err)
		}
	}

	queries := windowDiffQueries(rng, 40)
	type view struct{ name, q string }
	var views []view
	refused := 0
	for i, q := range queries {
		name := fmt.Sprintf("win_v%d", i)
		if err := exec(pg, "SELECT * FROM ("+q+") AS x LIMIT 0"); err != nil {
			t.Fatalf("PostgreSQL rejects a generated query (%v):\n%s", err, q)
		}
		if err := exec(sl, "CREATE MATERIALIZED VIEW "+name+" AS "+q); err != nil {
			refused++
			t.Errorf("CREATE fails in Sluice (%v), PostgreSQL runs the query:\n%s", err, q)
			continue
		}
		views = append(views, view{name, q})
	}
	compared, mismatches := 0, 0
	compare := func(step string) {
		if err := exec(sl, "FLUSH"); err != nil {
			t.Fatalf("FLUSH after %s: %v\n%s", step, err, srv.Logs())
		}
		for _, v := range views {
			want, err := diffRows(ctx, pg, v.q)
			if err != nil {
				t.Fatalf("postgres: %v\n%s", err, v.q)
			}
			for _, read := range []string{"SELECT * FROM " + v.name, v.q} {
				compared++
				got, err := diffRows(ctx, sl, read)
				for deadline := time.Now().Add(3 * time.Second); (err != nil || !diffEqual(got, want)) && time.Now().Before(deadline) && read != v.q; {
					time.Sleep(50 * time.Millisecond)
					got, err = diffRows(ctx, sl, read)
				}
				if err != nil || !diffEqual(got, want) {
					mismatches++
					if mismatches <= 10 {
						t.Errorf("after %s: %s\nquery: %s\nsluice (%v): %v\npostgres: %v", step, read, v.q, err, diffHead(got), diffHead(want))
					}
				}
			}
		}
	}
	compare("the initial data")
	for s := 0; s < steps; s++ {
		if s == steps/2 {
			// Halfway, SIGKILL and restart: the views resume from their
			// checkpointed partitions and go on maintaining the same answers.
			if err := srv.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			sl = MustConnectMode(t, srv.ConnString(), pgx.QueryExecModeSimpleProtocol)
			compare("a restart")
		}
		q := dml()
		errS, errP := exec(sl, q), exec(pg, q)
		if (errS == nil) != (errP == nil) {
			t.Fatalf("%s: sluice %v, postgres %v", q, errS, errP)
		}
		compare(q)
	}
	t.Logf("window differential (seed %d): %d views (%d refused), %d steps, %d comparisons, %d mismatches",
		seed, len(views), refused, steps, compared, mismatches)
}

// windowDiffQueries generates n window queries over win_dt: one to three
// calls per query, each with a random function, partition, order and
// frame, chosen so that PostgreSQL's answer does not depend on the order
// of peers.
func windowDiffQueries(rng *rand.Rand, n int) []string {
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	type fn struct {
		call    string
		unique  bool // needs a unique order (its value depends on row positions)
		framed  bool // takes a frame
		ordered bool // needs an ORDER BY
	}
	fns := []fn{
		{"row_number()", true, false, true},
		{"rank()", false, false, false},
		{"dense_rank()", false, false, false},
		{"percent_rank()", false, false, false},
		{"cume_dist()", false, false, false},
		{"ntile(3)", true, false, true},
		{"ntile(1)", true, false, true},
		{"lag(a)", true, false, true},
		{"lag(a, 2, -1)", true, false, true},
		{"lead(b)", true, false, true},
		{"lead(d, 1, 0.25)", true, false, true},
		{"first_value(a)", true, true, true},
		{"last_value(b)", true, true, true},
		{"nth_value(a, 2)", true, true, true},
		{"count(*)", false, true, false},
		{"count(a)", false, true, false},
		{"sum(a)", false, true, false},
		{"sum(d)", false, true, false},
		{"min(b)", false, true, false},
		{"max(a)", false, true, false},
		{"avg(b)", false, true, false},
	}
	type frame struct {
		text   string
		unique bool // a ROWS frame: membership depends on positions
		single bool // a RANGE offset: exactly one ORDER BY column
	}
	frames := []frame{
		{"", false, false},
		{"ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING", true, false},
		{"ROWS BETWEEN UNBOUNDED PRECEDING AND 2 FOLLOWING", true, false},
		{"ROWS BETWEEN 2 FOLLOWING AND UNBOUNDED FOLLOWING", true, false},
		{"ROWS BETWEEN CURRENT ROW AND CURRENT ROW", true, false},
		{"ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING", true, false},
		{"RANGE BETWEEN 2 PRECEDING AND 1 FOLLOWING", false, true},
		{"RANGE BETWEEN CURRENT ROW AND 3 FOLLOWING", false, true},
		{"RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING", false, false},
		{"RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING", false, false},
		{"GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING", false, false},
		{"GROUPS BETWEEN CURRENT ROW AND 2 FOLLOWING", false, false},
		{"GROUPS BETWEEN 2 PRECEDING AND 1 PRECEDING", false, false},
	}
	excludes := []string{"", "", "", "EXCLUDE CURRENT ROW", "EXCLUDE GROUP", "EXCLUDE TIES", "EXCLUDE NO OTHERS"}
	var qs []string
	for len(qs) < n {
		part := pick("", "PARTITION BY g", "PARTITION BY b", "PARTITION BY g, b")
		var sel []string
		window := ""
		for c, k := 0, 1+rng.Intn(3); c < k; c++ {
			f := fns[rng.Intn(len(fns))]
			fr, ex := frame{}, ""
			if f.framed {
				fr = frames[rng.Intn(len(frames))]
				if fr.text != "" { // EXCLUDE belongs to a frame clause
					ex = pick(excludes...)
				}
			}
			key := pick("a", "a DESC", "b NULLS FIRST", "a DESC NULLS LAST", "d")
			if fr.single {
				key = pick("a", "a DESC", "b NULLS FIRST", "a DESC NULLS LAST")
			}
			// Aggregates over RANGE and GROUPS frames (any EXCLUDE: the
			// current row is a row, not a position) and ranks do not
			// depend on the order of peers; positions do.
			order := ""
			switch {
			case (f.unique || fr.unique) && fr.single:
				order = "ORDER BY id" // a RANGE offset over the unique key
			case f.unique || fr.unique:
				order = "ORDER BY " + key + ", id"
			case f.ordered || fr.text != "" || rng.Intn(4) > 0:
				order = "ORDER BY " + key
			}
			if strings.HasPrefix(fr.text, "GROUPS") && order == "" {
				order = "ORDER BY " + key
			}
			over := "(" + strings.TrimSpace(strings.Join([]string{part, order, fr.text, ex}, " ")) + ")"
			if c == 0 && rng.Intn(3) == 0 {
				// A named window: OVER w, or OVER (w frame).
				window = " WINDOW w AS (" + strings.TrimSpace(part+" "+order) + ")"
				over = "w"
				if fr.text != "" || ex != "" {
					over = "(" + strings.TrimSpace(strings.Join([]string{"w", fr.text, ex}, " ")) + ")"
				}
			}
			sel = append(sel, fmt.Sprintf("%s OVER %s AS f%d", f.call, over, c))
		}
		qs = append(qs, "SELECT id, g, a, b, "+strings.Join(sel, ", ")+" FROM win_diff"+window)
	}
	return qs
}
