package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"sluice/server/pgwire"
)

// copyWriter is a ResultWriter with the Copier capability whose copy-in
// data is a fixed buffer, cut into 64 KiB messages as psql sends them.
type copyWriter struct {
	discard
	data []byte
	tag  string
}

func (w *copyWriter) Complete(tag string) error { w.tag = tag; return nil }

func (w *copyWriter) CopyIn(ctx context.Context, format int16, ncols int) (pgwire.CopyReader, error) {
	return &chunks{data: w.data}, nil
}

func (w *copyWriter) CopyOut(format int16, ncols int) (pgwire.CopyWriter, error) {
	return nil, fmt.Errorf("not in this benchmark")
}

type chunks struct{ data []byte }

func (c *chunks) Next() ([]byte, error) {
	if len(c.data) == 0 {
		return nil, io.EOF
	}
	n := min(len(c.data), 64<<10)
	b := c.data[:n]
	c.data = c.data[n:]
	return b, nil
}

func (c *chunks) Read(p []byte) (int, error) {
	b, err := c.Next()
	n := copy(p, b)
	c.data = append(b[n:], c.data...)
	return n, err
}

// BenchmarkCopyFromCSV measures COPY FROM STDIN of a CSV file of
// 100,000 rows into a table with a primary key, in process (no wire).
func BenchmarkCopyFromCSV(b *testing.B) {
	_, s := openBench(b)
	var data bytes.Buffer
	const rows = 100_000
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= rows; i++ {
		fmt.Fprintf(&data, "%d,customer_%d,%d.%02d,%d,%s,ok\n", i, i%5000, i%100000, i%100, i%50,
			base.Add(time.Duration(i)*time.Second).Format("2006-01-02 15:04:05"))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		exec(b, s, fmt.Sprintf(`CREATE TABLE cb%d (id BIGINT PRIMARY KEY, customer TEXT, amount NUMERIC(12,2), qty INT, ts TIMESTAMP, note TEXT)`, i))
		w := &copyWriter{data: data.Bytes()}
		b.StartTimer()
		if err := s.SimpleQuery(context.Background(), fmt.Sprintf("COPY cb%d FROM STDIN (FORMAT csv)", i), w); err != nil {
			b.Fatal(err)
		}
		if w.tag != fmt.Sprintf("COPY %d", rows) {
			b.Fatalf("tag %q", w.tag)
		}
	}
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
}
