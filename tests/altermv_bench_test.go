package tests

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BenchmarkAlterMViewProjection compares changing the projection above a
// join+aggregate over N rows (ALTER MATERIALIZED VIEW … AS, which keeps
// the aggregation's state) with building the view from scratch (CREATE
// MATERIALIZED VIEW, which reads all N rows). N is SLUICE_ALTER_BENCH_ROWS
// (default 1,000,000), the groups SLUICE_ALTER_BENCH_GROUPS (default
// 10,000). It reports both times and alter/create in percent.
//
//	SLUICE_ALTER_BENCH_ROWS=10000000 go test -run '^$' -bench AlterMViewProjection -benchtime 1x -timeout 60m ./tests/
func BenchmarkAlterMViewProjection(b *testing.B) {
	rows, groups := envInt("SLUICE_ALTER_BENCH_ROWS", 1_000_000), envInt("SLUICE_ALTER_BENCH_GROUPS", 10_000)
	srv := StartServer(b, Options{PlainBuild: true})
	conn := srv.Connect(b)
	ctx := context.Background()
	benchExec(b, conn,
		`CREATE TABLE a (id BIGINT PRIMARY KEY, k BIGINT, v BIGINT)`,
		`CREATE TABLE g (k BIGINT PRIMARY KEY, name TEXT)`,
		fmt.Sprintf(`INSERT INTO g SELECT i, 'g' || i FROM generate_series(0, %d) AS i`, groups-1),
	)
	for lo := 0; lo < rows; lo += 500_000 {
		hi := min(lo+500_000, rows)
		benchExec(b, conn, fmt.Sprintf(`INSERT INTO a SELECT i, i %% %d, i %% 1000 FROM generate_series(%d, %d) AS i`, groups, lo, hi-1))
	}
	query := func(proj string) string {
		return `SELECT g.name, count(*) AS n, ` + proj + ` AS total FROM a JOIN g ON a.k = g.k GROUP BY g.name`
	}
	var create, alter []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("v%d", i)
		t0 := time.Now()
		benchExec(b, conn, `CREATE MATERIALIZED VIEW `+name+` AS `+query(`sum(a.v)`))
		create = append(create, time.Since(t0))
		amvCheckCount(b, conn, name, groups)
		t0 = time.Now()
		benchExec(b, conn, `ALTER MATERIALIZED VIEW `+name+` AS `+query(`sum(a.v) * 2`))
		alter = append(alter, time.Since(t0))
		amvCheckCount(b, conn, name, groups)
		b.StopTimer()
		benchExec(b, conn, `DROP MATERIALIZED VIEW `+name)
		b.StartTimer()
	}
	med := func(ds []time.Duration) time.Duration {
		s := append([]time.Duration(nil), ds...)
		for i := range s {
			for j := i; j > 0 && s[j] < s[j-1]; j-- {
				s[j], s[j-1] = s[j-1], s[j]
			}
		}
		return s[len(s)/2]
	}
	c, a := med(create), med(alter)
	b.ReportMetric(c.Seconds(), "create-s")
	b.ReportMetric(a.Seconds(), "alter-s")
	b.ReportMetric(100*a.Seconds()/c.Seconds(), "alter/create-%")
	b.Logf("%d rows, %d groups: CREATE %v, ALTER (projection) %v, %.1f%% (medians of %d)", rows, groups, c, a, 100*a.Seconds()/c.Seconds(), b.N)
	_ = conn.Close(ctx)
}

// benchExec runs long statements (ExecAll allows 30 s each).
func benchExec(b *testing.B, conn *pgx.Conn, stmts ...string) {
	b.Helper()
	for _, st := range stmts {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		_, err := conn.Exec(ctx, st)
		cancel()
		if err != nil {
			b.Fatalf("%s: %v", st, err)
		}
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func amvCheckCount(b *testing.B, conn *pgx.Conn, view string, want int) {
	b.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM `+view).Scan(&n); err != nil {
		b.Fatal(err)
	}
	if n != want {
		b.Fatalf("%s has %d rows, want %d", view, n, want)
	}
}
