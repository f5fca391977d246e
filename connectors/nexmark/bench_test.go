package nexmark

import (
	"context"
	"syscall"
	"testing"
	"time"

	"sluice/exec/connector"

	"sluice/sql/types"
)

// BenchmarkRead measures the source: unthrottled Reads of 1024 rows into a
// types.Batch. events/s counts stream events covered (all kinds), rows/s
// the rows of the table; allocs/op is per row.
func BenchmarkRead(b *testing.B) {
	for _, tt := range []string{"person", "auction", "bid"} {
		b.Run(tt, func(b *testing.B) {
			s, cols, err := parse(connectorConfig(tt))
			if err != nil {
				b.Fatal(err)
			}
			g, err := NewGenerator(s.gen)
			if err != nil {
				b.Fatal(err)
			}
			r := newReader(g, s, cols, time.Now)
			batch := types.NewBatch(1024)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			for rows := 0; rows < b.N; {
				batch.Rows, batch.Diffs = batch.Rows[:0], batch.Diffs[:0]
				n, err := r.Read(context.Background(), batch, min(1024, b.N-rows))
				if err != nil {
					b.Fatal(err)
				}
				rows += n
			}
			sec := b.Elapsed().Seconds()
			b.ReportMetric(float64(b.N)/sec, "rows/s")
			b.ReportMetric(float64(r.next)/sec, "events/s")
			// Per CPU-second of the process (GC included): what one core
			// does, whatever else shares the machine.
			b.ReportMetric(float64(r.next)/(cpuTime()-cpu).Seconds(), "events/cpu-s")
		})
	}
}

// BenchmarkFill measures a Read's work without the row allocation: the
// event generated and its Datums written into one reused row.
func BenchmarkFill(b *testing.B) {
	for _, tt := range []string{"person", "auction", "bid"} {
		b.Run(tt, func(b *testing.B) {
			s, cols, err := parse(connectorConfig(tt))
			if err != nil {
				b.Fatal(err)
			}
			g, err := NewGenerator(s.gen)
			if err != nil {
				b.Fatal(err)
			}
			r := newReader(g, s, cols, time.Now)
			row := make(types.Row, len(cols))
			var idx []int64 // the first 50 indexes of the kind, repeated by epoch
			for i := int64(0); len(idx) < 50; i++ {
				if g.Kind(i) == s.kind {
					idx = append(idx, i)
				}
			}
			b.ReportAllocs()
			cpu := cpuTime()
			for i := 0; i < b.N; i++ {
				n := idx[i%len(idx)] + int64(i/len(idx))*50
				if err := r.fill(row, n, g.pos(n)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(b.N)/(cpuTime()-cpu).Seconds(), "rows/cpu-s")
		})
	}
}

// BenchmarkGenerate measures the pure-Go generator filling an event struct
// (no row): ns/op per event of the kind.
func BenchmarkGenerate(b *testing.B) {
	g, err := NewGenerator(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	run := func(name string, gen func(i int64)) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := cpuTime()
			for i := 0; i < b.N; i++ {
				gen(int64(i))
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(b.N)/(cpuTime()-cpu).Seconds(), "events/cpu-s")
		})
	}
	var p Person
	var a Auction
	var x Bid
	run("person", func(i int64) { g.Person(i*50, &p) })
	run("auction", func(i int64) { g.Auction(i*50+1, &a) })
	run("bid", func(i int64) { g.Bid(i+4, &x) })
}

func connectorConfig(table string) connector.SourceConfig {
	return connector.SourceConfig{Name: table, Options: map[string]string{
		"connector": "nexmark", "nexmark.table.type": table, "nexmark.min.event.gap.in.ns": "0"}}
}

// cpuTime is the CPU time (user+system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
