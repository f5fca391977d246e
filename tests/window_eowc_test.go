package tests

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestWindowEOWCDiff: window functions with EMIT ON WINDOW CLOSE over a
// Kafka source with a watermark (ts - 4 s), records out of order within
// the delay and with ties in time. Each row of the view must be final
// when it appears: polled while the records come, a row once seen never
// changes or leaves. The server is killed (SIGKILL) after the first half
// and restarted. At the end the view must hold exactly the rows of the
// same query run by PostgreSQL over the same records whose time is
// before the final watermark, each once; the rows at or after it are not
// emitted yet. Functions that look past the current row are refused.
func TestWindowEOWCDiff(t *testing.T) {
	EnsurePostgres(t)
	b, cl, ctx := clicksTopic(t)
	rng := rand.New(rand.NewSource(17))
	const n = 400
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type rec struct {
		id, k, v int
		ts       time.Time
	}
	var recs []rec
	for i := 0; i < n; i++ {
		// 500 ms apart on average, up to 3 s out of order (the delay is
		// 4 s: none late), every fifth on the previous one's time (ties).
		at := base.Add(time.Duration(i)*500*time.Millisecond - time.Duration(rng.Intn(3000))*time.Millisecond)
		if i%5 == 4 {
			at = recs[i-1].ts
		}
		recs = append(recs, rec{id: i, k: rng.Intn(4), v: rng.Intn(100) - 20, ts: at})
	}
	produce := func(rs []rec) {
		for _, r := range rs {
			v := fmt.Sprintf(`{"id":%d,"k":%d,"v":%d,"ts":"%s"}`, r.id, r.k, r.v, r.ts.Format("2006-01-02 15:04:05.000"))
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "clicks", Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	const query = `SELECT id, k, ts, v,
	  row_number() OVER (PARTITION BY k ORDER BY ts, id) AS rn,
	  rank() OVER (PARTITION BY k ORDER BY ts) AS rk,
	  lag(v, 2, -1) OVER (PARTITION BY k ORDER BY ts, id) AS lg,
	  sum(v) OVER (PARTITION BY k ORDER BY ts, id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s3,
	  max(v) OVER (PARTITION BY k ORDER BY ts) AS mx,
	  first_value(v) OVER (PARTITION BY k ORDER BY ts, id) AS fv
	FROM clicks`
	srv := StartServer(t, Options{})
	conn := srv.ConnectSimple(t)
	ExecAll(t, conn,
		`CREATE SOURCE clicks (id BIGINT, k INT, v INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '4' SECOND)
		   WITH (connector = 'kafka', topic = 'clicks', properties.bootstrap.server = '`+b.Addr+`')
		   FORMAT PLAIN ENCODE JSON`,
		`CREATE MATERIALIZED VIEW closed AS `+query+` EMIT ON WINDOW CLOSE`)
	for _, bad := range []string{
		`SELECT id, lead(v) OVER (ORDER BY ts) FROM clicks EMIT ON WINDOW CLOSE`,
		`SELECT id, sum(v) OVER (ORDER BY ts ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING) FROM clicks EMIT ON WINDOW CLOSE`,
		`SELECT id, row_number() OVER (ORDER BY ts DESC) FROM clicks EMIT ON WINDOW CLOSE`,
		`SELECT id, row_number() OVER (ORDER BY id) FROM clicks EMIT ON WINDOW CLOSE`,
		`SELECT id, cume_dist() OVER (ORDER BY ts) FROM clicks EMIT ON WINDOW CLOSE`,
	} {
		if _, err := QueryText(ctx, conn, "CREATE MATERIALIZED VIEW bad AS "+bad); err == nil || !strings.Contains(err.Error(), "0A000") {
			t.Fatalf("%s: %v", bad, err)
		}
	}
	seen := map[string]string{} // id -> the row as first seen
	poll := func() int {
		t.Helper()
		res, err := QueryText(ctx, conn, "SELECT id, k, ts, v, rn, rk, lg, s3, mx, fv FROM closed")
		if err != nil {
			t.Fatalf("%v\n%s", err, srv.Logs())
		}
		ids := map[string]bool{}
		for _, line := range res.Lines() {
			id := strings.Fields(line)[0]
			if ids[id] {
				t.Fatalf("row %s twice in the view", id)
			}
			ids[id] = true
			if was, ok := seen[id]; ok && was != line {
				t.Fatalf("row %s changed after it was emitted: %q, then %q", id, was, line)
			}
			seen[id] = line
		}
		for id := range seen {
			if !ids[id] {
				t.Fatalf("row %s left the view after it was emitted", id)
			}
		}
		return len(ids)
	}
	polls := 0
	for _, half := range [][]rec{recs[:n/2], recs[n/2:]} {
		for i := 0; i < len(half); i += 20 {
			produce(half[i:min(i+20, len(half))])
			poll()
			polls++
		}
		if polls <= n/40 {
			if err := srv.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			conn = srv.ConnectSimple(t)
		}
	}
	// PostgreSQL's answer: the rows before the final watermark.
	var maxTs time.Time
	for _, r := range recs {
		if r.ts.After(maxTs) {
			maxTs = r.ts
		}
	}
	wm := maxTs.Add(-4 * time.Second)
	pg := MustConnect(t, FreshPostgresDB(t, "window_eowc"))
	ExecAll(t, pg, "CREATE TABLE clicks (id BIGINT, k INT, v INT, ts TIMESTAMP)")
	var vals []string
	for _, r := range recs {
		vals = append(vals, fmt.Sprintf("(%d, %d, %d, '%s')", r.id, r.k, r.v, r.ts.Format("2006-01-02 15:04:05.000")))
	}
	ExecAll(t, pg, "INSERT INTO clicks VALUES "+strings.Join(vals, ", "))
	want := queryLines(t, pg, fmt.Sprintf("SELECT * FROM (%s) q WHERE ts < '%s'", query, wm.Format("2006-01-02 15:04:05.000")))
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := QueryText(ctx, conn, "FLUSH"); err != nil {
			t.Fatal(err)
		}
		poll()
		got := queryLines(t, conn, "SELECT id, k, ts, v, rn, rk, lg, s3, mx, fv FROM closed")
		if strings.Join(got, "\n") == strings.Join(want, "\n") {
			t.Logf("window functions on window close: %d of %d rows emitted (the rest after the watermark %s), each final when first seen over %d polls, a SIGKILL midway, equal to PostgreSQL's",
				len(got), n, wm.Format("15:04:05.000"), polls)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("view (%d rows) != PostgreSQL's rows before the watermark (%d):\n%s", len(got), len(want), diffLines(want, got, 20))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestJoinEOWCDiff: a LEFT and a FULL window join of two Kafka sources
// (TUMBLE of 10 s on each, joined on window_start and a key) with EMIT ON
// WINDOW CLOSE. An outer join's NULL-padded row is emitted only once its
// window has closed (a match that comes before that replaces it, with no
// retraction), so every row is final when first seen; the server is
// killed (SIGKILL) midway. After a record far in the future on both
// sides closes every window, each view equals PostgreSQL's answer to the
// same join over the same records (date_bin for TUMBLE).
func TestJoinEOWCDiff(t *testing.T) {
	EnsurePostgres(t)
	b, cl, ctx := brokerClient(t, "imps", "clks")
	rng := rand.New(rand.NewSource(23))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type rec struct {
		topic string
		id, k int
		ts    time.Time
	}
	var recs []rec
	for i := 0; i < 300; i++ {
		// 300 ms apart, up to 1.5 s out of order (the delay is 2 s).
		at := base.Add(time.Duration(i)*300*time.Millisecond - time.Duration(rng.Intn(1500))*time.Millisecond)
		topic := "imps"
		if rng.Intn(3) == 0 {
			topic = "clks"
		}
		recs = append(recs, rec{topic: topic, id: i, k: rng.Intn(5), ts: at})
	}
	last := base.Add(time.Hour)
	produce := func(rs []rec) {
		for _, r := range rs {
			v := fmt.Sprintf(`{"id":%d,"k":%d,"ts":"%s"}`, r.id, r.k, r.ts.Format("2006-01-02 15:04:05.000"))
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: r.topic, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	const left = `SELECT i.window_start AS ws, i.k, i.id AS imp, c.id AS clk
	  FROM TUMBLE(imps, ts, INTERVAL '10' SECOND) AS i LEFT JOIN TUMBLE(clks, ts, INTERVAL '10' SECOND) AS c
	  ON i.window_start = c.window_start AND i.k = c.k`
	const full = `SELECT i.window_start AS iws, c.window_start AS cws, i.id AS imp, c.id AS clk
	  FROM TUMBLE(imps, ts, INTERVAL '10' SECOND) AS i FULL JOIN TUMBLE(clks, ts, INTERVAL '10' SECOND) AS c
	  ON i.window_start = c.window_start AND i.k = c.k`
	srv := StartServer(t, Options{})
	conn := srv.ConnectSimple(t)
	src := func(name string) string {
		return `CREATE SOURCE ` + name + ` (id BIGINT, k INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
		   WITH (connector = 'kafka', topic = '` + name + `', properties.bootstrap.server = '` + b.Addr + `') FORMAT PLAIN ENCODE JSON`
	}
	ExecAll(t, conn, src("imps"), src("clks"),
		`CREATE MATERIALIZED VIEW lj AS `+left+` EMIT ON WINDOW CLOSE`,
		`CREATE MATERIALIZED VIEW fj AS `+full+` EMIT ON WINDOW CLOSE`)
	if _, err := QueryText(ctx, conn, `CREATE MATERIALIZED VIEW bad AS SELECT i.id, c.id FROM imps i LEFT JOIN clks c ON i.k = c.k EMIT ON WINDOW CLOSE`); err == nil || !strings.Contains(err.Error(), "0A000") {
		t.Fatalf("a join on no watermarked key: %v", err)
	}
	seen := map[string]map[string]int{"lj": {}, "fj": {}}
	poll := func() {
		t.Helper()
		for view, was := range seen {
			now := map[string]int{}
			for _, line := range queryLines(t, conn, "SELECT * FROM "+view) {
				now[line]++
			}
			for line, n := range was {
				if now[line] < n {
					t.Fatalf("%s: row %q left the view after it was emitted (a non-final row)", view, line)
				}
			}
			seen[view] = now
		}
	}
	polls := 0
	for half, rs := range [][]rec{recs[:150], recs[150:]} {
		for i := 0; i < len(rs); i += 15 {
			produce(rs[i:min(i+15, len(rs))])
			poll()
			polls++
		}
		if half == 0 {
			if err := srv.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			conn = srv.ConnectSimple(t)
		}
	}
	produce([]rec{{topic: "imps", id: 1000, k: 99, ts: last}, {topic: "clks", id: 1001, k: 99, ts: last}})
	pg := MustConnect(t, FreshPostgresDB(t, "join_eowc"))
	ExecAll(t, pg, "CREATE TABLE imps (id BIGINT, k INT, ts TIMESTAMP)", "CREATE TABLE clks (id BIGINT, k INT, ts TIMESTAMP)")
	for _, r := range recs {
		ExecAll(t, pg, fmt.Sprintf("INSERT INTO %s VALUES (%d, %d, '%s')", r.topic, r.id, r.k, r.ts.Format("2006-01-02 15:04:05.000")))
	}
	pgTumble := func(q string) string {
		for _, s := range []string{"imps", "clks"} {
			q = strings.ReplaceAll(q, "TUMBLE("+s+", ts, INTERVAL '10' SECOND)",
				"(SELECT *, date_bin('10 seconds', ts, TIMESTAMP '2026-01-01') AS window_start FROM "+s+")")
		}
		return q
	}
	for _, c := range []struct{ view, q string }{{"lj", left}, {"fj", full}} {
		want := queryLines(t, pg, pgTumble(c.q))
		deadline := time.Now().Add(30 * time.Second)
		for {
			poll()
			var got []string
			for _, line := range queryLines(t, conn, "SELECT * FROM "+c.view) {
				if !strings.Contains(line, "01:00:00") { // the closing records' windows are still open
					got = append(got, line)
				}
			}
			if strings.Join(got, "\n") == strings.Join(want, "\n") {
				t.Logf("%s on window close: %d rows, each final when first seen over %d polls, a SIGKILL midway, equal to PostgreSQL's", c.view, len(got), polls)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s (%d rows) != PostgreSQL's (%d):\n%s", c.view, len(got), len(want), diffLines(want, got, 20))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}
