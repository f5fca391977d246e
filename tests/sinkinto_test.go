package tests

// Sinks into tables (CREATE SINK s INTO t … FROM v | AS query), over the
// wire: two sinks from two views into one table follow inserts, updates
// and deletes of their inputs exactly; the refusals carry their SQLSTATEs;
// and across kill -9 of a real server every epoch is applied once.

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// waitLines polls sql until its sorted lines equal want, for up to d.
func waitLines(t *testing.T, conn *pgx.Conn, d time.Duration, sql string, want []string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		got := queryLines(t, conn, sql)
		if equalLines(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s (-want +got):\n%s", sql, lineDiff(want, got))
		}
		time.Sleep(50 * time.Millisecond) // polling, bounded by the deadline
	}
}

// sinkIntoModel is the expected content of the target table of
// TestSinkIntoTable: a's rows with v > 0 as (id, 'a', v, 'dflt'), and per
// group of b (g + 1000, 'b', sum(v), 'dflt').
type sinkIntoModel struct {
	a map[int]int
	b map[int][2]int // id -> {g, v}
}

func (m *sinkIntoModel) lines() []string {
	var out []string
	for id, v := range m.a {
		if v > 0 {
			out = append(out, fmt.Sprintf("%d a %d dflt", id, v))
		}
	}
	sums := map[int]int{}
	for _, gv := range m.b {
		sums[gv[0]] += gv[1]
	}
	for g, s := range sums {
		out = append(out, fmt.Sprintf("%d b %d dflt", g+1000, s))
	}
	sort.Strings(out)
	return out
}

func TestSinkIntoTable(t *testing.T) {
	srv := StartServer(t, Options{})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE TABLE a (id BIGINT PRIMARY KEY, v INT)`,
		`CREATE TABLE b (id BIGINT PRIMARY KEY, g INT, v INT)`,
		`CREATE TABLE t (id BIGINT PRIMARY KEY, src TEXT, v BIGINT, note TEXT DEFAULT 'dflt')`,
		`CREATE MATERIALIZED VIEW va AS SELECT id, 'a' AS src, v FROM a WHERE v > 0`,
		`CREATE MATERIALIZED VIEW vb AS SELECT g, sum(v) AS s FROM b GROUP BY g`,
		`CREATE SINK sa INTO t (id, src, v) FROM va`,
		`CREATE SINK sb INTO t (id, src, v) AS SELECT g + 1000, 'b', s FROM vb`,
		// A view over the target sees the sunk rows.
		`CREATE MATERIALIZED VIEW tsum AS SELECT src, count(*) AS n, sum(v) AS s FROM t GROUP BY src`,
	)
	m := &sinkIntoModel{a: map[int]int{}, b: map[int][2]int{}}
	rng := rand.New(rand.NewSource(7))
	check := func(step string) {
		t.Helper()
		want := m.lines()
		waitLines(t, conn, 60*time.Second, `SELECT id, src, v, note FROM t`, want)
		sums := map[string][2]int{}
		for _, l := range want {
			f := strings.Fields(l)
			var v int
			fmt.Sscan(f[2], &v)
			s := sums[f[1]]
			sums[f[1]] = [2]int{s[0] + 1, s[1] + v}
		}
		var tw []string
		for src, s := range sums {
			tw = append(tw, fmt.Sprintf("%s %d %d", src, s[0], s[1]))
		}
		sort.Strings(tw)
		waitLines(t, conn, 60*time.Second, `SELECT src, n, s FROM tsum`, tw)
		t.Logf("%s: t has %d rows as expected", step, len(want))
	}
	for round := 0; round < 6; round++ {
		var stmts []string
		for i := 0; i < 25; i++ {
			id := rng.Intn(40)
			switch op := rng.Intn(4); {
			case op == 0 && len(m.a) > 0:
				if _, ok := m.a[id]; ok {
					stmts = append(stmts, fmt.Sprintf("DELETE FROM a WHERE id = %d", id))
					delete(m.a, id)
				}
			case op == 1:
				v := rng.Intn(21) - 5
				if _, ok := m.a[id]; ok {
					stmts = append(stmts, fmt.Sprintf("UPDATE a SET v = %d WHERE id = %d", v, id))
				} else {
					stmts = append(stmts, fmt.Sprintf("INSERT INTO a VALUES (%d, %d)", id, v))
				}
				m.a[id] = v
			case op == 2:
				g, v := rng.Intn(5), rng.Intn(100)
				if _, ok := m.b[id]; ok {
					stmts = append(stmts, fmt.Sprintf("UPDATE b SET g = %d, v = %d WHERE id = %d", g, v, id))
				} else {
					stmts = append(stmts, fmt.Sprintf("INSERT INTO b VALUES (%d, %d, %d)", id, g, v))
				}
				m.b[id] = [2]int{g, v}
			default:
				if _, ok := m.b[id]; ok {
					stmts = append(stmts, fmt.Sprintf("DELETE FROM b WHERE id = %d", id))
					delete(m.b, id)
				}
			}
		}
		ExecAll(t, conn, stmts...)
		check(fmt.Sprintf("round %d (%d statements)", round, len(stmts)))
	}

	res, err := QueryText(context.Background(), conn, `SHOW SINKS`)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rows {
		if r[1] != "table" || r[2] != "EXACTLY_ONCE" || r[4] != "EXACTLY_ONCE" || r[10] != "running" {
			t.Errorf("SHOW SINKS row %v: want connector table, EXACTLY_ONCE declared and effective, running", r)
		}
	}
	if len(res.Rows) != 2 {
		t.Errorf("SHOW SINKS has %d rows, want 2", len(res.Rows))
	}

	ExecAll(t, conn,
		`CREATE SOURCE gen (id BIGINT) WITH (connector = 'datagen', fields.id.kind = 'sequence', fields.id.start = '1', datagen.rows.per.second = '1000')`,
		`CREATE TABLE nopk (x BIGINT)`,
		`CREATE MATERIALIZED VIEW over_t AS SELECT id, src, v FROM t`)
	for _, c := range []struct{ sql, code string }{
		{`CREATE SINK e1 INTO va FROM a`, "42809"},                                      // a view
		{`CREATE SINK e2 INTO gen AS SELECT 1::bigint`, "42809"},                        // a source
		{`CREATE SINK e3 INTO t (id, src, v) AS SELECT id, 'x', 'abc' FROM a`, "42804"}, // text into bigint
		{`CREATE SINK e4 INTO t (id, src, v) AS SELECT id, 'x', v FROM t`, "42P17"},     // reads its target
		{`CREATE SINK e5 INTO a AS SELECT id, v::int FROM over_t`, "42P17"},             // a ← sa… t ← over_t
		{`CREATE SINK e6 INTO nopk AS SELECT v::bigint FROM a`, "0A000"},                // retractions, no key
		{`CREATE SINK e7 INTO t (src, v) AS SELECT 'x', v FROM a`, "0A000"},             // key not written
		{`CREATE SINK e8 INTO t (id, nope) AS SELECT id, 1 FROM a`, "42703"},
		{`CREATE SINK e9 INTO missing FROM va`, "42P01"},
		{`CREATE SINK e10 INTO t FROM va`, "42601"}, // 3 columns for 4
		{`DROP TABLE t`, "2BP01"},
	} {
		_, err := QueryText(context.Background(), conn, c.sql)
		if got := PgCode(err); got != c.code {
			t.Errorf("%s: SQLSTATE %q (%v), want %s", c.sql, got, err, c.code)
		}
	}
	// An append-only sink into a table without a key: each row once.
	ExecAll(t, conn, `CREATE SINK s_gen INTO nopk AS SELECT id FROM gen WHERE id <= 50`)
	var want []string
	for i := 1; i <= 50; i++ {
		want = append(want, fmt.Sprint(i))
	}
	sort.Strings(want)
	waitLines(t, conn, 60*time.Second, `SELECT x FROM nopk`, want)
	// The rows the cycle refusals did not write are not there.
	check("after the refusals")
	ExecAll(t, conn, `DROP TABLE t CASCADE`, `DROP TABLE nopk CASCADE`)
	res, err = QueryText(context.Background(), conn, `SHOW SINKS`)
	if err != nil || len(res.Rows) != 0 {
		t.Fatalf("SHOW SINKS after DROP TABLE … CASCADE: %v %v, want no sinks", res, err)
	}
}

// TestSinkIntoCrash kills a real server with SIGKILL several times while
// two append-only sinks from a datagen source write into one table
// without a key, and a sink of an aggregate over a table written by a
// client writes into a keyed table. At the end each generated id is in
// the first table once per sink (lost=0 duplicated=0), and the keyed
// table equals the aggregate computed from its input.
func TestSinkIntoCrash(t *testing.T) {
	const n = 6000 // generated ids per sink
	kills := 4
	srv := StartServer(t, Options{CheckpointInterval: 200 * time.Millisecond})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE SOURCE g (id BIGINT) WITH (connector = 'datagen', fields.id.kind = 'sequence', fields.id.start = '1', datagen.rows.per.second = '800')`,
		`CREATE TABLE events (id BIGINT, src TEXT)`,
		fmt.Sprintf(`CREATE SINK s_one INTO events AS SELECT id, 'one' FROM g WHERE id <= %d`, n),
		fmt.Sprintf(`CREATE SINK s_two INTO events AS SELECT id, 'two' FROM g WHERE id <= %d`, n),
		`CREATE TABLE src (id BIGINT PRIMARY KEY, g INT, v BIGINT)`,
		`CREATE TABLE tot (g INT PRIMARY KEY, n BIGINT, s BIGINT)`,
		`CREATE MATERIALIZED VIEW agg AS SELECT g, count(*) AS n, sum(v) AS s FROM src GROUP BY g`,
		`CREATE SINK s_agg INTO tot FROM agg`,
	)
	conn.Close(context.Background())

	// A writer inserts and deletes rows of src while the server lives;
	// src itself is the truth the keyed target is checked against.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewSource(3))
		var c *pgx.Conn
		for id := 1; ctx.Err() == nil; id++ {
			if c == nil {
				var err error
				if c, err = Connect(ctx, srv.ConnString()); err != nil {
					c = nil
					time.Sleep(50 * time.Millisecond) // the server is restarting
					continue
				}
			}
			sql := fmt.Sprintf("INSERT INTO src VALUES (%d, %d, %d)", id, rng.Intn(7), rng.Intn(1000))
			if id%4 == 0 {
				sql = fmt.Sprintf("DELETE FROM src WHERE id = %d", id-1-rng.Intn(3))
			}
			if _, err := c.Exec(ctx, sql); err != nil {
				c.Close(context.Background())
				c = nil
				continue
			}
			mu.Lock()
			acked++
			mu.Unlock()
		}
		if c != nil {
			c.Close(context.Background())
		}
	}()
	rng := rand.New(rand.NewSource(11))
	// Killed at the named point between a sink's table commit and the
	// deliverer's own record of it: the epoch must not be applied again.
	fired := 0
	for k := 0; k < 3; k++ {
		if err := srv.Kill(); err != nil {
			t.Fatalf("kill before crashpoint %d: %v", k+1, err)
		}
		hit := 3 + rng.Intn(10)
		srv.SetEnv(fmt.Sprintf("SLUICE_CRASHPOINT=sink-after-write:%d", hit))
		if err := srv.StartNoWait(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			if exited, _ := srv.Exited(); exited {
				fired++
				_ = srv.Kill() // clears the exited process
				break
			}
			if time.Now().After(deadline) {
				t.Logf("crashpoint sink-after-write:%d not reached in 30 s; killing", hit)
				if err := srv.Kill(); err != nil {
					t.Fatal(err)
				}
				break
			}
			time.Sleep(20 * time.Millisecond) // polling, bounded by the deadline
		}
		srv.SetEnv()
		if err := srv.Restart(); err != nil {
			t.Fatalf("restart after crashpoint %d: %v", k+1, err)
		}
	}
	if fired == 0 {
		t.Fatalf("the crashpoint sink-after-write never fired")
	}
	for k := 0; k < kills; k++ {
		time.Sleep(time.Duration(500+rng.Intn(1500)) * time.Millisecond) // a random moment mid-stream
		if err := srv.Kill(); err != nil {
			t.Fatalf("kill %d: %v", k+1, err)
		}
		if err := srv.Restart(); err != nil {
			t.Fatalf("restart %d: %v", k+1, err)
		}
	}
	time.Sleep(time.Second)
	cancel()
	wg.Wait()

	conn = srv.Connect(t)
	defer conn.Close(context.Background())
	count := func(sql string) int64 {
		var v int64
		if err := conn.QueryRow(context.Background(), sql).Scan(&v); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return v
	}
	deadline := time.Now().Add(3 * time.Minute)
	for count(fmt.Sprintf(`SELECT count(*) FROM (SELECT DISTINCT id, src FROM events WHERE id <= %d) d`, n)) < 2*n && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond) // polling, bounded by the deadline
	}
	// Let the sinks apply what they hold after the last id, if anything.
	ExecAll(t, conn, "FLUSH", "FLUSH")
	total := count(`SELECT count(*) FROM events`)
	distinct := count(`SELECT count(*) FROM (SELECT DISTINCT id, src FROM events) d`)
	inRange := count(fmt.Sprintf(`SELECT count(*) FROM (SELECT DISTINCT id, src FROM events WHERE id BETWEEN 1 AND %d AND src IN ('one', 'two')) d`, n))
	lost, duplicated, wrong := 2*n-inRange, total-distinct, distinct-inRange
	want := queryLines(t, conn, `SELECT g, count(*), sum(v) FROM src GROUP BY g`)
	waitLines(t, conn, 60*time.Second, `SELECT g, n, s FROM tot`, want)
	mu.Lock()
	t.Logf("crashpoints=%d kills=%d writes acked=%d events=%d lost=%d duplicated=%d wrong=%d tot groups=%d (equal to src's aggregate)",
		fired, kills, acked, total, lost, duplicated, wrong, len(want))
	mu.Unlock()
	if lost != 0 || duplicated != 0 || wrong != 0 {
		t.Fatalf("lost=%d duplicated=%d wrong=%d", lost, duplicated, wrong)
	}
}
