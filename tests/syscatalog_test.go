package tests

// sluice_catalog (issue 18, item 2): the running jobs and their operators
// as relations, queried and joined over the wire, whose figures move as
// rows flow.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestSluiceCatalog(t *testing.T) {
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE TABLE t (id BIGINT PRIMARY KEY, k BIGINT)`,
		`CREATE MATERIALIZED VIEW per_k AS SELECT k, count(*) AS n FROM t GROUP BY k`,
	)
	wantRows(t, conn, `SELECT name, kind, status FROM sluice_catalog.jobs ORDER BY id`,
		"t table running\nper_k materialized view running")
	// A join: the operators of each job, by kind.
	wantRows(t, conn, `SELECT j.name, o.operator, o.kind FROM sluice_catalog.jobs j JOIN sluice_catalog.operators o ON o.job_id = j.id
		WHERE j.name = 'per_k' ORDER BY o.operator`,
		"per_k 0-Subscribe Subscribe\nper_k 1-HashAgg HashAgg\nper_k 2-Project Project\nper_k 3-Materialize Materialize")
	// The edges join the operators at both ends.
	wantRows(t, conn, `SELECT f.kind, o.kind FROM sluice_catalog.edges e
		JOIN sluice_catalog.operators f ON f.job_id = e.job_id AND f.operator = e.from_operator
		JOIN sluice_catalog.operators o ON o.job_id = e.job_id AND o.operator = e.to_operator
		WHERE e.job = 'per_k' ORDER BY e.to_operator`,
		"Subscribe HashAgg\nHashAgg Project\nProject Materialize")
	var vals []string
	for i := 0; i < 500; i++ {
		vals = append(vals, fmt.Sprintf("(%d, %d)", i, i%5))
	}
	ExecAll(t, conn, `INSERT INTO t VALUES `+strings.Join(vals, ", "), `FLUSH`)
	waitFor(t, 10*time.Second, func() bool {
		got := queryLines(t, conn, `SELECT o.rows_in, o.rows_out, o.state_keys FROM sluice_catalog.operators o
			JOIN sluice_catalog.jobs j ON j.id = o.job_id WHERE j.name = 'per_k' AND o.kind = 'HashAgg'`)
		return len(got) == 1 && got[0] == "500 5 5"
	}, "the HashAgg's figures to reach 500 rows in, 5 out, 5 keys")
	wantRows(t, conn, `SELECT count(*) FROM pg_namespace WHERE nspname = 'sluice_catalog'`, "1")
	// The FLUSH above committed an epoch with the inserted rows' state.
	wantRows(t, conn, `SELECT count(*) > 0, bool_and(duration_ms >= commit_ms), bool_or(bytes > 0), bool_or(failed)
		FROM sluice_catalog.checkpoints WHERE started > now() - interval '1 hour'`, "t t t f")
}

// TestFusedWindowOperators: an aggregation over TUMBLE or HOP runs the
// windowing inside its HashAgg (one actor fewer, no rows allocated per
// window, issue 20): the job's operators have no window of their own, the
// edge goes from the input straight to the HashAgg, and the view's rows are
// those of the windows, deletes included. A window read by two consumers
// keeps its own actor.
func TestFusedWindowOperators(t *testing.T) {
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE TABLE fw (id BIGINT PRIMARY KEY, k BIGINT, ts TIMESTAMP)`,
		`CREATE MATERIALIZED VIEW fw_hop AS SELECT k, window_start, count(*) AS n
		 FROM HOP(fw, ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND) GROUP BY k, window_start`,
		`CREATE MATERIALIZED VIEW fw_two AS
		 WITH w AS (SELECT * FROM TUMBLE(fw, ts, INTERVAL '10' SECOND))
		 SELECT a.window_start, a.n, b.m FROM (SELECT window_start, count(*) AS n FROM w GROUP BY window_start) a
		 JOIN (SELECT window_start, max(k) AS m FROM w GROUP BY window_start) b ON a.window_start = b.window_start`,
		`INSERT INTO fw VALUES (1, 1, '2026-01-01 00:00:01'), (2, 1, '2026-01-01 00:00:07'), (3, 2, '2026-01-01 00:00:12'),
		 (4, 1, NULL), (5, 3, '2026-01-01 00:00:13')`,
		`DELETE FROM fw WHERE id = 5`,
		`FLUSH`,
	)
	wantRows(t, conn, `SELECT o.kind FROM sluice_catalog.jobs j JOIN sluice_catalog.operators o ON o.job_id = j.id
		WHERE j.name = 'fw_hop' ORDER BY o.operator`, "Subscribe\nHashAgg\nProject\nMaterialize")
	wantRows(t, conn, `SELECT f.kind, o.kind FROM sluice_catalog.edges e
		JOIN sluice_catalog.operators f ON f.job_id = e.job_id AND f.operator = e.from_operator
		JOIN sluice_catalog.operators o ON o.job_id = e.job_id AND o.operator = e.to_operator
		WHERE e.job = 'fw_hop' ORDER BY e.to_operator`, "Subscribe HashAgg\nHashAgg Project\nProject Materialize")
	wantRows(t, conn, `SELECT k, window_start, n FROM fw_hop ORDER BY k, window_start`,
		"1 2025-12-31 23:59:55 1\n1 2026-01-01 00:00:00 2\n1 2026-01-01 00:00:05 1\n2 2026-01-01 00:00:05 1\n2 2026-01-01 00:00:10 1")
	wantRows(t, conn, `SELECT string_agg(o.kind, ' ' ORDER BY o.operator) FROM sluice_catalog.jobs j JOIN sluice_catalog.operators o ON o.job_id = j.id
		WHERE j.name = 'fw_two'`, "Subscribe TimeWindow HashAgg Project HashAgg Project HashJoin Materialize")
	wantRows(t, conn, `SELECT window_start, n, m FROM fw_two ORDER BY window_start`,
		"2026-01-01 00:00:00 2 1\n2026-01-01 00:00:10 1 2")
}

// TestLagHistory: sluice_catalog.lag_history samples every source's and
// sink's lag each second. A Redis sink whose server is down falls behind
// epoch by epoch (its lag grows in the history), and catches up once the
// server is back (its last sample is 0); the table feeding it is sampled
// as a source.
func TestLagHistory(t *testing.T) {
	redis, addr := StartPrivateRedis(t)
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE TABLE lag_t (id BIGINT PRIMARY KEY, k BIGINT)`,
		`CREATE MATERIALIZED VIEW lag_per_k AS SELECT k, count(*) AS n FROM lag_t GROUP BY k`,
		fmt.Sprintf(`CREATE SINK lag_sink FROM lag_per_k WITH (connector = 'redis', redis.url = 'redis://%s/0', primary_key = 'k')`, addr),
	)
	if err := redis.Kill(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		ExecAll(t, conn, fmt.Sprintf(`INSERT INTO lag_t VALUES (%d, %d)`, i, i%3), `FLUSH`)
	}
	lagOf := func() []string { // in the order sampled (queryLines sorts)
		res, err := QueryText(context.Background(), conn, `SELECT lag FROM sluice_catalog.lag_history WHERE kind = 'sink' AND name = 'lag_sink' ORDER BY sampled`)
		if err != nil {
			t.Fatal(err)
		}
		return res.Lines()
	}
	waitFor(t, 20*time.Second, func() bool {
		l := lagOf()
		n := 0
		if len(l) > 0 {
			fmt.Sscan(l[len(l)-1], &n)
		}
		return n >= 5
	}, "the sink's lag to reach 5 epochs while Redis is down")
	if err := redis.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if l := lagOf(); len(l) > 0 && l[len(l)-1] == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sink's lag is not back to 0 a minute after Redis is back: %v; SHOW SINKS: %v", lagOf(), queryLines(t, conn, "SHOW SINKS"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	l := lagOf()
	peak := 0
	for _, s := range l {
		var n int
		fmt.Sscan(s, &n)
		peak = max(peak, n)
	}
	if peak < 5 {
		t.Fatalf("the sink's lag history %v never reached 5", l)
	}
	wantRows(t, conn, `SELECT count(*) > 1, min(lag) FROM sluice_catalog.lag_history WHERE kind = 'source' AND name = 'lag_t'`, "t 0")
	wantRows(t, conn, `SELECT count(DISTINCT h.sampled) > 1 FROM sluice_catalog.lag_history h JOIN sluice_catalog.jobs j ON j.name = h.job WHERE j.kind = 'sink'`, "t")
	t.Logf("the sink's lag over %d samples peaked at %d epochs", len(l), peak)
}
