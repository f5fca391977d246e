package kafka

import (
	"context"
	"fmt"
	"strconv"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"sluice/sql/types"
)

var benchBidCols = []types.Column{
	{Name: "auction", Type: types.TInt8},
	{Name: "bidder", Type: types.TInt8},
	{Name: "price", Type: types.TInt8},
	{Name: "channel", Type: types.TVarchar},
	{Name: "url", Type: types.TVarchar},
	{Name: "date_time", Type: types.TTimestamp},
	{Name: "extra", Type: types.TVarchar},
}

// BenchmarkSourceBidJSON reads 200,000 Nexmark-like JSON bids from one
// partition of a kfake broker through the source, fetch to rows, with one
// decoding goroutine and with the default (SLUICE_BENCH_DECODERS sets
// neither: the sub-benchmarks name them). Compare with interleaved
// -count runs; cpu-ns/record is the whole process, broker included.
func BenchmarkSourceBidJSON(b *testing.B) {
	const n = 200_000
	addr := srcTestCluster(b, 1, "bids")
	cl := srcTestClient(b, addr, kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(0))
	recs := make([]*kgo.Record, 0, 10_000)
	for i := range n {
		v := fmt.Sprintf(`{"auction":%d,"bidder":%d,"price":%d,"channel":"Google","url":"https://www.nexmark.com/zyid/aaa/dmzn/item.htm?query=1","date_time":"2015-07-15 00:00:%02d.%03d","extra":"vjpmqokvnqhgefnkszsmbxpyxqnpdobccbtwhtsgvbjzdvvmenxxqt"}`,
			1000+i%997, 2000+i%1999, 100+i, (i/1000)%60, i%1000)
		recs = append(recs, srcRec("bids", 0, "", v))
		if len(recs) == cap(recs) {
			srcProduce(b, cl, recs...)
			recs = recs[:0]
		}
	}
	srcProduce(b, cl, recs...)
	for _, w := range []int{1, srcDecoders} {
		b.Run("decoders="+strconv.Itoa(w), func(b *testing.B) {
			old := srcDecoders
			srcDecoders = w
			defer func() { srcDecoders = old }()
			cpu := benchCPU()
			for b.Loop() {
				r := srcOpen(b, benchBidCols, nil, srcOpts(addr, "bids", "scan.startup.mode", "earliest"))
				batch := types.NewBatch(1024)
				for got := 0; got < n; {
					batch.Rows, batch.Diffs = batch.Rows[:0], batch.Diffs[:0]
					k, err := r.Read(context.Background(), batch, 1024)
					if err != nil {
						b.Fatal(err)
					}
					got += k
				}
				r.Close()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(benchCPU()-cpu)/float64(n*b.N), "cpu-ns/record")
		})
	}
}

func benchCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
