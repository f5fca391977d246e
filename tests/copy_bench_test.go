package tests

// BenchmarkCopyLoad loads the same CSV through COPY ... FROM STDIN into
// Sluice and into the machine's PostgreSQL (a fresh table in db test,
// dropped after) and reports the median rows/s of each:
//
//	go test ./tests/ -run '^$' -bench BenchmarkCopyLoad -benchtime 1x -v
//
// (SLUICE_COPY_ROWS changes the 1,000,000 rows). The clock runs from the COPY statement to
// its acknowledgement: durable in Sluice (one synced write), committed in
// PostgreSQL.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

const copyBenchDDL = `CREATE TABLE %s (id BIGINT PRIMARY KEY, customer TEXT, amount NUMERIC(12,2),
	qty INT, ts TIMESTAMP, note TEXT)`

var copyBenchData = sync.OnceValue(func() []byte {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("SLUICE_COPY_ROWS")); err == nil && v > 0 {
		n = v
	}
	var b bytes.Buffer
	b.WriteString("id,customer,amount,qty,ts,note\n")
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= n; i++ {
		note := "ok"
		switch i % 10 {
		case 3:
			note = `"late, again"`
		case 7:
			note = ""
		}
		fmt.Fprintf(&b, "%d,customer_%d,%d.%02d,%d,%s,%s\n", i, i%5000, i%100000, i%100, i%50,
			base.Add(time.Duration(i)*time.Second).Format("2006-01-02 15:04:05"), note)
	}
	return b.Bytes()
})

// BenchmarkCopyLoad alternates the targets itself (sub-benchmarks with
// -count would run all of one target first, under different machine
// load): SLUICE_COPY_ROUNDS rounds (default 3) of sluice then postgres,
// each a fresh table (and a fresh Sluice server), reporting the median
// rows/s of each.
func BenchmarkCopyLoad(b *testing.B) {
	data := copyBenchData()
	rows := bytes.Count(data, []byte{'\n'}) - 1
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("SLUICE_COPY_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	EnsurePostgres(b)
	ctx := context.Background()
	pg, err := Connect(ctx, PostgresURL("test"))
	if err != nil {
		b.Fatalf("connecting to PostgreSQL: %v", err)
	}
	defer pg.Close(ctx)
	load := func(conn *pgx.Conn, table string) float64 {
		if _, err := conn.Exec(ctx, fmt.Sprintf(copyBenchDDL, table)); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		tag, err := conn.PgConn().CopyFrom(ctx, bytes.NewReader(data), "COPY "+table+" FROM STDIN (FORMAT csv, HEADER)")
		el := time.Since(start)
		if err != nil || tag.RowsAffected() != int64(rows) {
			b.Fatalf("COPY: %v, %s", tag, errText(err))
		}
		if _, err := conn.Exec(ctx, "DROP TABLE "+table); err != nil {
			b.Fatal(err)
		}
		return float64(rows) / el.Seconds()
	}
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		var sl, pq []float64
		for r := 0; r < rounds; r++ {
			srv := StartServer(b, Options{})
			conn, err := Connect(ctx, srv.ConnString())
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			sl = append(sl, load(conn, "copy_bench"))
			b.StopTimer()
			conn.Close(ctx)
			if err := srv.Stop(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			pq = append(pq, load(pg, fmt.Sprintf("copy_bench_%d", os.Getpid())))
			b.StopTimer()
			b.Logf("round %d: sluice %.0f rows/s, postgres %.0f rows/s", r+1, sl[r], pq[r])
		}
		b.ReportMetric(median(sl), "sluice_rows/s")
		b.ReportMetric(median(pq), "postgres_rows/s")
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
