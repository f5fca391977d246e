package tests

// Failed jobs never skip data (issue 16, item 5): an operator made to fail
// by SLUICE_FAILPOINT stops its job at the last epoch it completed, the
// other jobs go on committing, and after ALTER … RESUME (or a restart) the
// job reads again from its own positions, so that its view equals a
// recomputation: nothing lost, nothing counted twice.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// viewStatus returns the Status and Last Error of view name in SHOW
// MATERIALIZED VIEWS.
func viewStatus(t *testing.T, conn *pgx.Conn, name string) (string, string) {
	t.Helper()
	res, err := QueryText(context.Background(), conn, "SHOW MATERIALIZED VIEWS")
	if err != nil {
		t.Fatalf("SHOW MATERIALIZED VIEWS: %v", err)
	}
	cols := res.ColumnNames()
	if strings.Join(cols, ",") != "Name,Rows,Errors,Status,Last Error" {
		t.Fatalf("SHOW MATERIALIZED VIEWS columns: %v", cols)
	}
	for _, r := range res.Rows {
		if r[0] == name {
			return r[3], r[4]
		}
	}
	t.Fatalf("SHOW MATERIALIZED VIEWS does not list %s", name)
	return "", ""
}

// noticeConn connects with a handler that collects NOTICE messages.
func noticeConn(t *testing.T, srv *Server) (*pgx.Conn, func() []string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(srv.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var notes []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		notes = append(notes, n.Message)
		mu.Unlock()
	}
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn, func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := notes
		notes = nil
		return out
	}
}

func execCode(conn *pgx.Conn, sql string) string {
	_, err := conn.Exec(context.Background(), sql)
	if err == nil {
		return "ok"
	}
	return PgCode(err)
}

func TestFailedJobNeverSkipsData(t *testing.T) {
	const rows = 30000
	start := time.Now()
	pgURL := FreshPostgresDB(t, "sluice_failstop")
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond,
		Env: []string{"SLUICE_FAILPOINT=op:HashAgg:4000:fails,op:Sink:6000:eo"}})
	conn, notices := noticeConn(t, srv)
	t.Logf("%v: started", time.Since(start).Round(time.Millisecond))
	ExecAll(t, conn,
		fmt.Sprintf(`CREATE SOURCE g (id BIGINT, v BIGINT) WITH (connector = 'datagen',
			fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '%d',
			fields.v.kind = 'random', fields.v.min = '0', fields.v.max = '9', fields.v.seed = '7',
			datagen.rows.per.second = '5000')`, rows),
		`CREATE MATERIALIZED VIEW fails AS SELECT v, count(*) AS n, sum(id) AS s FROM g GROUP BY v`,
		`CREATE MATERIALIZED VIEW ok AS SELECT v, count(*) AS n, sum(id) AS s FROM g GROUP BY v`,
		`CREATE MATERIALIZED VIEW total AS SELECT count(*) AS n FROM g`,
		// An EXACTLY_ONCE sink that fails itself, and one over the view
		// that fails (it stops and resumes with the view).
		`CREATE SINK eo FROM g WITH (connector = 'postgres', url = '`+pgURL+`', table = 'eo_plain', write_mode = 'transactional', delivery = 'EXACTLY_ONCE')`,
		`CREATE SINK eo_agg FROM fails WITH (connector = 'postgres', url = '`+pgURL+`', table = 'eo_agg', write_mode = 'upsert', primary_key = 'v', delivery = 'EXACTLY_ONCE')`)
	t.Logf("%v: created", time.Since(start).Round(time.Millisecond))
	waitFor(t, 30*time.Second, func() bool { st, _ := viewStatus(t, conn, "fails"); return st == "failed" }, "fails to fail")
	t.Logf("%v: %s", time.Since(start).Round(time.Millisecond), "fails to fail")
	st, lastErr := viewStatus(t, conn, "fails")
	if !strings.Contains(lastErr, "failpoint: HashAgg of fails after 4000 rows") {
		t.Fatalf("fails: status %s, last error %q", st, lastErr)
	}
	if st, _ := viewStatus(t, conn, "ok"); st != "running" {
		t.Fatalf("ok: status %s, want running", st)
	}
	waitFor(t, 10*time.Second, func() bool {
		return strings.Contains(srv.Logs(), "fails: failed; its state and source positions stay at epoch ")
	}, "the failure in the server's log")
	total := func() int64 {
		var n int64
		if err := conn.QueryRow(context.Background(), `SELECT coalesce(sum(n), 0) FROM total`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	frozen := queryLines(t, conn, `SELECT v, n, s FROM fails`)
	if n := len(notices()); n == 0 {
		t.Errorf("SELECT of a failed view sent no NOTICE")
	}
	waitFor(t, 30*time.Second, func() bool { return sinkStatus(t, conn, "eo") == "failed" }, "eo to fail")
	t.Logf("%v: %s", time.Since(start).Round(time.Millisecond), "eo to fail")
	if st := sinkStatus(t, conn, "eo_agg"); st != "failed" {
		t.Errorf("eo_agg, a sink of the failed view: %s, want failed", st)
	}
	// The other views keep committing while fails stays where it stopped.
	at := total()
	waitFor(t, 30*time.Second, func() bool { ExecAll(t, conn, "FLUSH"); return total() > at+2000 }, "total to advance")
	t.Logf("%v: %s", time.Since(start).Round(time.Millisecond), "total to advance")
	if got := queryLines(t, conn, `SELECT v, n, s FROM fails`); !equalLines(got, frozen) {
		t.Errorf("the failed view changed: %v, then %v", frozen, got)
	}
	var seen int64
	if err := conn.QueryRow(context.Background(), `SELECT coalesce(sum(n), 0) FROM fails`).Scan(&seen); err != nil {
		t.Fatal(err)
	}
	if seen > 4000 {
		t.Errorf("the failed view counts %d rows, more than the 4000 its aggregation saw", seen)
	}
	for sql, want := range map[string]string{
		`ALTER MATERIALIZED VIEW ok RESUME`:           "55000",
		`ALTER MATERIALIZED VIEW nosuch RESUME`:       "42P01",
		`ALTER SINK fails RESUME`:                     "42704",
		`ALTER MATERIALIZED VIEW IF EXISTS no RESUME`: "ok",
	} {
		if got := execCode(conn, sql); got != want {
			t.Errorf("%s: %s, want %s", sql, got, want)
		}
	}
	if got := execCode(conn, `ALTER SINK eo_agg RESUME`); got != "55000" {
		t.Errorf("RESUME of the sink of a failed view: %s, want 55000", got)
	}
	ExecAll(t, conn, `ALTER MATERIALIZED VIEW fails RESUME`, `ALTER SINK eo RESUME`)
	if st, _ := viewStatus(t, conn, "fails"); st != "running" {
		t.Fatalf("fails after RESUME: %s", st)
	}
	for _, s := range []string{"eo", "eo_agg"} {
		if st := sinkStatus(t, conn, s); st != "running" {
			t.Fatalf("%s after RESUME: %s", s, st)
		}
	}
	// Once the source is read to its end, fails equals its recomputation.
	want := queryLines(t, conn, `SELECT v, n, s FROM ok`)
	waitFor(t, 60*time.Second, func() bool {
		ExecAll(t, conn, "FLUSH")
		want = queryLines(t, conn, `SELECT v, n, s FROM ok`)
		return total() == rows && equalLines(queryLines(t, conn, `SELECT v, n, s FROM fails`), want)
	}, "fails to equal ok")
	t.Logf("%v: %s", time.Since(start).Round(time.Millisecond), "fails to equal ok")
	var n, s int64
	if err := conn.QueryRow(context.Background(), `SELECT sum(n), sum(s) FROM fails`).Scan(&n, &s); err != nil {
		t.Fatal(err)
	}
	if n != rows || s != rows*(rows+1)/2 {
		t.Errorf("fails counts %d rows summing to %d, want %d and %d", n, s, rows, rows*(rows+1)/2)
	}
	if st, _ := viewStatus(t, conn, "fails"); st != "running" {
		t.Errorf("fails: %s", st)
	}
	// The sinks: every row delivered once, the aggregate as the view.
	pg := MustConnect(t, pgURL)
	waitFor(t, 60*time.Second, func() bool {
		var n, d, s int64
		if err := pg.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT id), coalesce(sum(id), 0) FROM eo_plain`).Scan(&n, &d, &s); err != nil {
			t.Fatal(err)
		}
		if n > rows || n != d {
			t.Fatalf("eo_plain: %d rows, %d distinct ids: rows written twice", n, d)
		}
		return n == rows && s == rows*(rows+1)/2
	}, "eo_plain to hold every row once")
	t.Logf("%v: %s", time.Since(start).Round(time.Millisecond), "eo_plain to hold every row once")
	waitFor(t, 60*time.Second, func() bool {
		res, err := QueryText(context.Background(), pg, `SELECT v, n, s FROM eo_agg`)
		if err != nil {
			t.Fatal(err)
		}
		got := res.Lines()
		sort.Strings(got)
		return equalLines(got, want)
	}, "eo_agg to equal the view")
}

// sinkStatus returns the Status of sink name in SHOW SINKS.
func sinkStatus(t *testing.T, conn *pgx.Conn, name string) string {
	t.Helper()
	res, err := QueryText(context.Background(), conn, "SHOW SINKS")
	if err != nil {
		t.Fatalf("SHOW SINKS: %v", err)
	}
	cols := res.ColumnNames()
	if n := len(cols); n < 2 || cols[n-2] != "Status" || cols[n-1] != "Last Error" {
		t.Fatalf("SHOW SINKS columns: %v", cols)
	}
	for _, r := range res.Rows {
		if r[0] == name {
			return r[len(r)-2]
		}
	}
	t.Fatalf("SHOW SINKS does not list %s", name)
	return ""
}

func TestFailedTableViewResumes(t *testing.T) {
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond,
		Env: []string{"SLUICE_FAILPOINT=op:HashAgg:50:tv"}})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE TABLE t (id BIGINT PRIMARY KEY, g BIGINT)`,
		`CREATE MATERIALIZED VIEW tv AS SELECT g, count(*) AS n, sum(id) AS s FROM t GROUP BY g`,
		`CREATE MATERIALIZED VIEW tok AS SELECT g, count(*) AS n, sum(id) AS s FROM t GROUP BY g`)
	next := 1
	insert := func(conn *pgx.Conn, n int) {
		var vals []string
		for i := 0; i < n; i++ {
			vals = append(vals, fmt.Sprintf("(%d, %d)", next, next%7))
			next++
		}
		ExecAll(t, conn, `INSERT INTO t VALUES `+strings.Join(vals, ", "))
	}
	for i := 0; i < 10; i++ {
		insert(conn, 10)
		ExecAll(t, conn, "FLUSH")
	}
	waitFor(t, 30*time.Second, func() bool { st, _ := viewStatus(t, conn, "tv"); return st == "failed" }, "tv to fail")
	// Changes while tv is failed: inserts, updates, deletes.
	insert(conn, 100)
	ExecAll(t, conn, `UPDATE t SET g = g + 1 WHERE id % 5 = 0`, `DELETE FROM t WHERE id % 11 = 0`, "FLUSH")
	if st, _ := viewStatus(t, conn, "tok"); st != "running" {
		t.Fatalf("tok: %s", st)
	}
	// A restart removes the cause (the failpoint is gone): tv catches up
	// from its own position in the table's log.
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	srv.SetEnv("SLUICE_FAILPOINT=op:HashAgg:30:tv")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	conn = srv.Connect(t)
	waitFor(t, 30*time.Second, func() bool { st, _ := viewStatus(t, conn, "tv"); return st == "failed" }, "tv to fail again")
	insert(conn, 200)
	ExecAll(t, conn, `DELETE FROM t WHERE id % 13 = 0`, `UPDATE t SET g = 0 WHERE id % 17 = 0`, "FLUSH",
		`ALTER MATERIALIZED VIEW tv RESUME`)
	insert(conn, 50)
	ExecAll(t, conn, "FLUSH")
	want := []string{}
	var cnt, sum int64
	if err := conn.QueryRow(context.Background(), `SELECT count(*), sum(id) FROM t`).Scan(&cnt, &sum); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() bool {
		ExecAll(t, conn, "FLUSH")
		want = queryLines(t, conn, `SELECT g, count(*), sum(id) FROM t GROUP BY g`)
		return equalLines(queryLines(t, conn, `SELECT g, n, s FROM tv`), want) && equalLines(queryLines(t, conn, `SELECT g, n, s FROM tok`), want)
	}, "tv and tok to equal the table's recomputation")
	var n, s int64
	if err := conn.QueryRow(context.Background(), `SELECT sum(n), sum(s) FROM tv`).Scan(&n, &s); err != nil {
		t.Fatal(err)
	}
	if n != cnt || s != sum {
		t.Errorf("tv counts %d rows summing to %d; the table has %d rows summing to %d", n, s, cnt, sum)
	}
}
