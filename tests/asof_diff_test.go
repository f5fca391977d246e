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

// TestAsOfDiff creates ASOF JOIN and ASOF LEFT JOIN views in Sluice (each
// of >=, >, <=, <, the inequality written either way round, a computed
// key, an aggregate over the join) over two tables, applies seeded random
// inserts, updates (of the key, the time and the payload) and deletes to
// both tables and to the same tables in the machine's PostgreSQL (database
// test, tables asof20_l and asof20_r), and after every step compares each
// view, and the same query as a plain SELECT in Sluice, with PostgreSQL's
// answer to the query written with a LATERAL subquery (… ORDER BY ts DESC
// LIMIT 1); halfway the server is killed (SIGKILL) and restarted. Right
// times are unique (NULLs aside), so that the nearest right row is one row
// in both systems. SLUICE_ASOF_DIFF_STEPS and SLUICE_ASOF_DIFF_SEED run
// more or other.
func TestAsOfDiff(t *testing.T) {
	EnsurePostgres(t)
	steps, seed := 40, int64(7)
	if s := os.Getenv("SLUICE_ASOF_DIFF_STEPS"); s != "" {
		steps, _ = strconv.Atoi(s)
	}
	if s := os.Getenv("SLUICE_ASOF_DIFF_SEED"); s != "" {
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
	ddl := []string{
		"CREATE TABLE asof20_l (id INT PRIMARY KEY, k INT, ts INT, v INT)",
		"CREATE TABLE asof20_r (id INT PRIMARY KEY, k INT, ts INT, w INT)",
	}
	drop := func() { _ = exec(pg, "DROP TABLE IF EXISTS asof20_l, asof20_r") }
	drop()
	t.Cleanup(drop)
	for _, conn := range []*pgx.Conn{sl, pg} {
		for _, q := range ddl {
			if err := exec(conn, q); err != nil {
				t.Fatal(err)
			}
		}
	}
	rng := rand.New(rand.NewSource(seed))
	maybe := func(s string) string {
		if rng.Intn(8) == 0 {
			return "NULL"
		}
		return s
	}
	usedT := map[int]bool{} // right times in use: each at most once
	freeT := func() int {
		for {
			if x := rng.Intn(400); !usedT[x] {
				usedT[x] = true
				return x
			}
		}
	}
	nextID := [2]int{1, 1}
	rightTs := map[int]int{} // right id -> its time (absent: NULL or deleted)
	insert := func(side, n int) string {
		var vs []string
		for ; n > 0; n-- {
			id := nextID[side]
			nextID[side]++
			k := maybe(strconv.Itoa(rng.Intn(4)))
			if side == 0 {
				vs = append(vs, fmt.Sprintf("(%d, %s, %s, %d)", id, k, maybe(strconv.Itoa(rng.Intn(400))), rng.Intn(100)))
				continue
			}
			ts := "NULL"
			if rng.Intn(10) > 0 {
				x := freeT()
				rightTs[id] = x
				ts = strconv.Itoa(x)
			}
			vs = append(vs, fmt.Sprintf("(%d, %s, %s, %d)", id, k, ts, rng.Intn(100)))
		}
		return fmt.Sprintf("INSERT INTO asof20_%s VALUES %s", []string{"l", "r"}[side], strings.Join(vs, ", "))
	}
	dml := func() string {
		side := rng.Intn(2)
		tbl := []string{"asof20_l", "asof20_r"}[side]
		id := 1 + rng.Intn(nextID[side])
		switch rng.Intn(8) {
		case 0, 1, 2:
			return insert(side, 1+rng.Intn(5))
		case 3:
			return fmt.Sprintf("UPDATE %s SET k = %s WHERE id = %d", tbl, maybe(strconv.Itoa(rng.Intn(4))), id)
		case 4:
			if side == 1 {
				delete(usedT, rightTs[id]) // the old time is free once replaced
				x := freeT()
				rightTs[id] = x
				return fmt.Sprintf("UPDATE asof20_r SET ts = %d WHERE id = %d", x, id)
			}
			return fmt.Sprintf("UPDATE asof20_l SET ts = ts + %d WHERE k = %d", rng.Intn(50)-25, rng.Intn(4))
		case 5:
			return fmt.Sprintf("UPDATE %s SET %s = %s + 1 WHERE id %% 3 = %d", tbl, []string{"v", "w"}[side], []string{"v", "w"}[side], rng.Intn(3))
		case 6:
			return fmt.Sprintf("DELETE FROM %s WHERE id = %d", tbl, id)
		}
		return fmt.Sprintf("DELETE FROM %s WHERE k = %d AND id %% 4 = %d", tbl, rng.Intn(4), rng.Intn(4))
	}
	for _, q := range []string{insert(0, 40), insert(1, 25)} {
		for _, conn := range []*pgx.Conn{sl, pg} {
			if err := exec(conn, q); err != nil {
				t.Fatal(err)
			}
		}
	}

	type view struct{ name, sluice, postgres string }
	var views []view
	const cols = "l.id, l.k, l.ts, l.v, r.id AS rid, r.ts AS rts, r.w"
	for i, op := range []string{">=", ">", "<=", "<"} {
		dir := "DESC"
		if op[0] == '<' {
			dir = "ASC"
		}
		for _, left := range []bool{false, true} {
			asof, lat := "ASOF JOIN", "CROSS JOIN LATERAL"
			on := ""
			if left {
				asof, lat, on = "ASOF LEFT JOIN", "LEFT JOIN LATERAL", " ON true"
			}
			cond := fmt.Sprintf("l.k = r.k AND l.ts %s r.ts", op)
			if i%2 == 1 { // the inequality written from the right side
				cond = fmt.Sprintf("r.ts %s l.ts AND r.k = l.k", map[string]string{">": "<", "<": ">"}[op])
			}
			views = append(views, view{
				name:   fmt.Sprintf("asof20_v%d_%t", i, left),
				sluice: fmt.Sprintf("SELECT %s FROM asof20_l l %s asof20_r r ON %s", cols, asof, cond),
				postgres: fmt.Sprintf("SELECT %s FROM asof20_l l %s (SELECT * FROM asof20_r r WHERE r.k = l.k AND l.ts %s r.ts ORDER BY r.ts %s LIMIT 1) r%s",
					cols, lat, op, dir, on),
			})
		}
	}
	views = append(views,
		view{"asof20_expr",
			"SELECT " + cols + " FROM asof20_l l ASOF LEFT JOIN asof20_r r ON l.k + 1 = r.k + 1 AND l.ts - 10 >= r.ts",
			"SELECT " + cols + " FROM asof20_l l LEFT JOIN LATERAL (SELECT * FROM asof20_r r WHERE r.k = l.k AND l.ts - 10 >= r.ts ORDER BY r.ts DESC LIMIT 1) r ON true"},
		view{"asof20_agg",
			"SELECT l.k, count(*) AS n, count(r.id) AS matched, sum(r.w) AS w FROM asof20_l l ASOF LEFT JOIN asof20_r r ON l.k = r.k AND l.ts >= r.ts GROUP BY l.k",
			"SELECT l.k, count(*) AS n, count(r.id) AS matched, sum(r.w) AS w FROM asof20_l l LEFT JOIN LATERAL (SELECT * FROM asof20_r r WHERE r.k = l.k AND l.ts >= r.ts ORDER BY r.ts DESC LIMIT 1) r ON true GROUP BY l.k"},
	)
	for _, v := range views {
		if err := exec(sl, "CREATE MATERIALIZED VIEW "+v.name+" AS "+v.sluice); err != nil {
			t.Fatalf("CREATE %s: %v", v.name, err)
		}
	}
	compared, mismatches := 0, 0
	compare := func(step string) {
		if err := exec(sl, "FLUSH"); err != nil {
			t.Fatalf("FLUSH after %s: %v\n%s", step, err, srv.Logs())
		}
		for _, v := range views {
			want, err := diffRows(ctx, pg, v.postgres)
			if err != nil {
				t.Fatalf("postgres: %v\n%s", err, v.postgres)
			}
			for _, read := range []string{"SELECT * FROM " + v.name, v.sluice} {
				compared++
				got, err := diffRows(ctx, sl, read)
				for deadline := time.Now().Add(3 * time.Second); (err != nil || !diffEqual(got, want)) && time.Now().Before(deadline) && read != v.sluice; {
					time.Sleep(50 * time.Millisecond)
					got, err = diffRows(ctx, sl, read)
				}
				if err != nil || !diffEqual(got, want) {
					mismatches++
					if mismatches <= 10 {
						t.Errorf("after %s: %s\nsluice (%v): %v\npostgres: %v", step, read, err, diffHead(got), diffHead(want))
					}
				}
			}
		}
	}
	compare("the initial data")
	for s := 0; s < steps; s++ {
		if s == steps/2 {
			// Halfway, SIGKILL and restart: the views resume from their
			// checkpointed state and go on maintaining the same answers.
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
	if compared == 0 {
		t.Fatal("nothing compared")
	}
	t.Logf("ASOF differential (seed %d): %d views, %d steps, %d comparisons, %d mismatches",
		seed, len(views), steps, compared, mismatches)
}
