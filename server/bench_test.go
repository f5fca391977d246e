package server

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	_ "sluice/connectors/datagen"
	"sluice/server/pgwire"
	"sluice/sql/types"
)

// discard is a ResultWriter that keeps the last row.
type discard struct{ last types.Row }

func (d *discard) Columns([]types.Column) error { return nil }
func (d *discard) Row(r types.Row) error        { d.last = r.Copy(); return nil }
func (d *discard) Complete(string) error        { return nil }
func (d *discard) Notice(string) error          { return nil }

func openBench(b *testing.B) (*Engine, pgwire.Session) {
	b.Helper()
	e, err := Open(Config{DataDir: b.TempDir(), CheckpointInterval: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	s, err := e.Connect(context.Background(), pgwire.StartupInfo{User: "sluice", Database: "sluice"})
	if err != nil {
		b.Fatal(err)
	}
	return e, s
}

func exec(b *testing.B, s pgwire.Session, sql string) types.Row {
	b.Helper()
	w := &discard{}
	if err := s.SimpleQuery(context.Background(), sql, w); err != nil {
		b.Fatalf("%s: %v", sql, err)
	}
	return w.last
}

// BenchmarkInsertJoinAgg measures rows/s from multi-row INSERTs through a
// join + aggregate view to a committed checkpoint (FLUSH).
func BenchmarkInsertJoinAgg(b *testing.B) {
	_, s := openBench(b)
	exec(b, s, `CREATE TABLE customers (name TEXT PRIMARY KEY, region TEXT)`)
	exec(b, s, `CREATE TABLE orders (id BIGINT PRIMARY KEY, customer TEXT, amount NUMERIC(12,2))`)
	exec(b, s, `CREATE MATERIALIZED VIEW revenue AS SELECT c.region, count(*) AS n, sum(o.amount) AS total
		FROM orders o JOIN customers c ON o.customer = c.name GROUP BY c.region`)
	var sb strings.Builder
	sb.WriteString("INSERT INTO customers VALUES ")
	for i := 0; i < 100; i++ {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, "('c%d', 'r%d')", i, i%10)
	}
	exec(b, s, sb.String())
	const batch = 1000
	rows := 0
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		sb.Reset()
		sb.WriteString("INSERT INTO orders VALUES ")
		for j := 0; j < batch; j++ {
			if j > 0 {
				sb.WriteString(",")
			}
			id := i*batch + j
			fmt.Fprintf(&sb, "(%d, 'c%d', %d.25)", id, id%100, id%1000)
		}
		exec(b, s, sb.String())
		rows += batch
	}
	exec(b, s, "FLUSH")
	el := time.Since(start)
	b.StopTimer()
	got := exec(b, s, "SELECT sum(n) FROM revenue")
	if got[0].I != int64(rows) {
		b.Fatalf("view counts %v rows, inserted %d", got[0], rows)
	}
	b.ReportMetric(float64(rows)/el.Seconds(), "rows/s")
}

// BenchmarkDatagenJoinAgg measures rows/s from an unthrottled datagen
// source through a join + aggregate view until every row is committed.
func BenchmarkDatagenJoinAgg(b *testing.B) {
	e, s := openBench(b)
	n := b.N * 1000
	exec(b, s, `CREATE TABLE regions (k BIGINT PRIMARY KEY, name TEXT)`)
	exec(b, s, `INSERT INTO regions SELECT 0, 'zero' UNION ALL SELECT 1, 'one' UNION ALL SELECT 2, 'two'`)
	exec(b, s, "FLUSH")
	exec(b, s, fmt.Sprintf(`CREATE SOURCE g (id BIGINT, k BIGINT, v BIGINT) WITH (connector = 'datagen',
		fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '%d',
		fields.k.kind = 'random', fields.k.min = '0', fields.k.max = '2', fields.v.min = '0', fields.v.max = '100',
		datagen.rows.per.second = '0')`, n))
	b.ResetTimer()
	start := time.Now()
	exec(b, s, `CREATE MATERIALIZED VIEW per_region AS SELECT r.name, count(*) AS n, sum(g.v) AS total
		FROM g JOIN regions r ON g.k = r.k GROUP BY r.name`)
	for {
		exec(b, s, "FLUSH")
		got := exec(b, s, "SELECT sum(n) FROM per_region")
		if !got[0].IsNull() && got[0].I == int64(n) {
			break
		}
		if time.Since(start) > 10*time.Minute {
			b.Fatalf("view has %v of %d rows", got[0], n)
		}
	}
	el := time.Since(start)
	b.StopTimer()
	_ = e
	b.ReportMetric(float64(n)/el.Seconds(), "rows/s")
}

// BenchmarkInsertThenSelect measures what read-your-writes adds: one
// INSERT, then a SELECT of the view over the table that must show it
// (read_your_writes on: the read waits for the INSERT's epoch, asked for at
// once), against the same pair reading the last committed epoch without
// waiting (off). It reports the pair's latency percentiles.
func BenchmarkInsertThenSelect(b *testing.B) {
	for _, ryw := range []string{"on", "off"} {
		b.Run("read_your_writes="+ryw, func(b *testing.B) {
			_, s := openBench(b)
			exec(b, s, `CREATE TABLE orders (id BIGINT PRIMARY KEY, customer TEXT, amount BIGINT)`)
			exec(b, s, `CREATE MATERIALIZED VIEW per_customer AS SELECT customer, count(*) AS n, sum(amount) AS total FROM orders GROUP BY customer`)
			exec(b, s, `SET read_your_writes = `+ryw)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				exec(b, s, fmt.Sprintf(`INSERT INTO orders VALUES (%d, 'c%d', %d)`, i, i%10, i))
				r := exec(b, s, fmt.Sprintf(`SELECT n FROM per_customer WHERE customer = 'c%d'`, i%10))
				lat = append(lat, time.Since(t0))
				if ryw == "on" && (r == nil || r[0].I != int64(i/10+1)) {
					b.Fatalf("read %v after insert %d, want %d", r, i, i/10+1)
				}
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
			b.ReportMetric(pct(0.5), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
		})
	}
}
