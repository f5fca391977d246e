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
