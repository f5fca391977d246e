package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sluice/exec/connector"
	"sluice/sql/types"
)

// BenchmarkWrite writes epochs of 100k rows (id BIGINT, name TEXT, price
// DOUBLE PRECISION, ts TIMESTAMP, amount NUMERIC(12,2)) in each write mode
// and reports rows/s. Keyed modes update the same 100k keys after the
// first epoch, so ON CONFLICT … DO UPDATE does the work.
//
//	go test -run '^$' -bench Write -benchtime 5x ./connectors/postgres/
func BenchmarkWrite(b *testing.B) {
	const rowsPerEpoch = 100_000
	for _, bc := range []struct {
		mode  string
		keyed bool
		rows  int
	}{
		{"append", false, rowsPerEpoch},
		{"transactional", false, rowsPerEpoch},
		{"upsert", true, rowsPerEpoch},
		{"transactional", true, rowsPerEpoch},
		{"transactional", true, 1}, // latency of a small epoch
	} {
		b.Run(fmt.Sprintf("%s/keyed=%v/rows=%d", bc.mode, bc.keyed, bc.rows), func(b *testing.B) {
			db := testDB(b)
			table := uniqueName(b, db, "bench")
			cfg := connector.SinkConfig{
				Name: "bench", ID: 1, AppendOnly: !bc.keyed, WriteMode: bc.mode,
				Columns: []types.Column{
					{Name: "id", Type: types.TInt8}, {Name: "name", Type: types.TText},
					{Name: "price", Type: types.TFloat8}, {Name: "ts", Type: types.TTimestamp},
					{Name: "amount", Type: types.T{Fam: types.Numeric, Prec: 12, Scale: 2}},
				},
				Options: map[string]string{"url": testURL, "table": table},
			}
			if bc.keyed {
				cfg.Key = []int{0}
			}
			if bc.mode == "transactional" {
				cfg.Options["progress.table"] = uniqueName(b, db, "benchprogress")
			}
			s := openSink(b, cfg)
			epoch := func(e int) []connector.Change {
				ch := make([]connector.Change, bc.rows)
				for i := range ch {
					ch[i] = connector.Change{After: types.Row{
						types.NewInt(int64(i)), types.NewString(fmt.Sprintf("name-%d-%d", i, e)),
						types.NewFloat(float64(i) * 1.5), types.NewTimestamp(time.Now().UnixMicro()),
						types.NewDecimal(int64(i*100+e), 2),
					}}
				}
				return ch
			}
			ctx := context.Background()
			if bc.keyed {
				if err := s.Write(ctx, 1, epoch(0)); err != nil {
					b.Fatal(err)
				}
			}
			epochs := make([][]connector.Change, 2)
			epochs[0], epochs[1] = epoch(1), epoch(2)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if err := s.Write(ctx, uint64(i+2), epochs[i%2]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*bc.rows)/time.Since(start).Seconds(), "rows/s")
		})
	}
}
