package tests

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// TestViewFoldAggDifferential maintains string_agg, array_agg, jsonb_agg
// and jsonb_object_agg (with ORDER BY inside, DISTINCT and FILTER) in a
// materialized view under random inserts, updates and deletes, and after
// every round compares the view with the same query run by the machine's
// PostgreSQL over the same table; halfway the server is SIGKILLed and
// restarted, so the groups' multisets must come back from the last
// checkpoint. The view must equal PostgreSQL's answer after every round.
func TestViewFoldAggDifferential(t *testing.T) {
	EnsurePostgres(t)
	srv := StartServer(t, Options{})
	ctx := context.Background()
	sl := srv.Connect(t)
	pg := MustConnect(t, FreshPostgresDB(t, "sluice_fold_agg"))
	const table = "CREATE TABLE f (id int PRIMARY KEY, g int, v text, n int, b boolean, j jsonb)"
	// Every ORDER BY is total (ends in the unique id) or orders whole
	// equal inputs (sv, abo: their multiplicities count), as it must be
	// for two systems to agree.
	const query = `SELECT g,
  string_agg(v, '|' ORDER BY n DESC NULLS LAST, id) AS s,
  string_agg(DISTINCT v, ',' ORDER BY v) AS sd,
  string_agg(v, ';' ORDER BY v) AS sv,
  array_agg(b ORDER BY b NULLS FIRST) AS abo,
  array_agg(n ORDER BY id) AS a,
  array_agg(v ORDER BY v NULLS FIRST, id) FILTER (WHERE n > 2) AS af,
  array_agg(b ORDER BY id) AS ab,
  jsonb_agg(j ORDER BY id DESC) AS ja,
  jsonb_agg(n ORDER BY n, id) FILTER (WHERE b) AS jn,
  jsonb_object_agg('k' || id, v ORDER BY id) AS jo,
  count(*) AS c
FROM f GROUP BY g`
	ExecAll(t, sl, table, "CREATE MATERIALIZED VIEW fv AS "+query)
	ExecAll(t, pg, table)

	rng := rand.New(rand.NewSource(1414))
	live := map[int]bool{}
	nextID := 1
	texts := []string{"a", "b", "c", "d d", `q"t`, "", "NULL"}
	vals := func() []string {
		v := "NULL"
		if x := texts[rng.Intn(len(texts))]; x != "NULL" {
			v = "'" + strings.ReplaceAll(x, "'", "''") + "'"
		}
		n := "NULL"
		if rng.Intn(6) > 0 {
			n = fmt.Sprint(rng.Intn(8))
		}
		b := []string{"true", "false", "NULL"}[rng.Intn(3)]
		j := []string{"NULL", "'null'", "'1.50'", `'{"x": [1, "y"]}'`, "'[]'", `'"s"'`}[rng.Intn(6)]
		return []string{fmt.Sprint(rng.Intn(4)), v, n, b, j}
	}
	row := func(id int) string { return fmt.Sprintf("(%d, %s)", id, strings.Join(vals(), ", ")) }
	pick := func() (int, bool) {
		for id := range live {
			return id, true
		}
		return 0, false
	}
	exec := func(stmt string) {
		t.Helper()
		ExecAll(t, sl, stmt)
		ExecAll(t, pg, stmt)
	}
	rounds, changes := 24, 0
	for round := 0; round < rounds; round++ {
		for k := 0; k < 12; k++ {
			switch op := rng.Intn(10); {
			case op < 5 || len(live) < 5:
				var rows []string
				for m := rng.Intn(3) + 1; m > 0; m-- {
					rows = append(rows, row(nextID))
					live[nextID] = true
					nextID++
				}
				exec("INSERT INTO f VALUES " + strings.Join(rows, ", "))
			case op < 8:
				id, _ := pick()
				x := vals()
				exec(fmt.Sprintf("UPDATE f SET g = %s, v = %s, n = %s, b = %s, j = %s WHERE id = %d", x[0], x[1], x[2], x[3], x[4], id))
			default:
				id, _ := pick()
				delete(live, id)
				exec(fmt.Sprintf("DELETE FROM f WHERE id = %d", id))
			}
			changes++
		}
		if round == rounds/2 {
			ExecAll(t, sl, "FLUSH")
			sl.Close(ctx)
			if err := srv.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			sl = srv.Connect(t)
		}
		ExecAll(t, sl, "FLUSH")
		want := queryLines(t, pg, query+" ORDER BY g")
		got := queryLines(t, sl, "SELECT * FROM fv ORDER BY g")
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("round %d (%d changes): the view differs from PostgreSQL\nsluice:\n%s\npostgres:\n%s",
				round, changes, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	t.Logf("rounds=%d changes=%d rows=%d restarts=1 differing=0", rounds, changes, len(live))
}
