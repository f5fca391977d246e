package tests

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLateRowsDroppedAndCounted: a Kafka source with WATERMARK FOR ts AS
// ts - INTERVAL '4' SECOND drops a record more than 4 s behind the
// largest time seen before it, counts it in SHOW SOURCES, and keeps a
// record that is out of order but within the delay; an EMIT ON WINDOW
// CLOSE view over TUMBLE emits only windows the watermark has passed.
func TestLateRowsDroppedAndCounted(t *testing.T) {
	b := StartBroker(t, 1, "clicks")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, v := range []string{
		`{"id":1,"ts":"2026-01-01 00:00:01"}`,
		`{"id":2,"ts":"2026-01-01 00:00:12"}`,
		`{"id":3,"ts":"2026-01-01 00:00:09"}`, // 3 s behind 00:00:12: kept
		`{"id":4,"ts":"2026-01-01 00:00:05"}`, // 7 s behind: late, dropped
		`{"id":5,"ts":"2026-01-01 00:00:25"}`, // closes the windows before 00:00:20
	} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "clicks", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	s := StartServer(t, Options{})
	conn := s.ConnectSimple(t)
	ExecAll(t, conn,
		`CREATE SOURCE clicks (id BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '4' SECOND)
		   WITH (connector = 'kafka', topic = 'clicks', properties.bootstrap.server = '`+b.Addr+`')
		   FORMAT PLAIN ENCODE JSON`,
		`CREATE MATERIALIZED VIEW all_clicks AS SELECT id FROM clicks`,
		`CREATE MATERIALIZED VIEW per_window AS
		   SELECT window_start, count(*) AS n, sum(id) AS ids FROM TUMBLE(clicks, ts, INTERVAL '10' SECOND)
		   GROUP BY window_start EMIT ON WINDOW CLOSE`,
	)
	check := func(what, sql string, want ...string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			if _, err := QueryText(ctx, conn, "FLUSH"); err != nil {
				t.Fatal(err)
			}
			res, err := QueryText(ctx, conn, sql)
			if err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
			if got := res.Lines(); equalLines(got, want) {
				return
			} else if time.Now().After(deadline) {
				t.Fatalf("%s: got %q, want %q", what, got, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	check("rows kept", "SELECT id FROM all_clicks ORDER BY id", "1", "2", "3", "5")
	check("closed windows", "SELECT window_start, n, ids FROM per_window ORDER BY 1",
		"2026-01-01 00:00:00 2 4", "2026-01-01 00:00:10 1 2") // ids 1, 3 and 2; 5 waits for its window to close
	res, err := QueryText(ctx, conn, "SHOW SOURCES")
	if err != nil {
		t.Fatal(err)
	}
	// Each job reads the source with its own reader: two jobs, one late row each.
	if got := res.Lines(); len(got) != 1 || got[0] != "clicks kafka 0 2 EXACTLY_ONCE" {
		t.Fatalf("SHOW SOURCES: %q (columns %v), want the late row counted by each of the two readers", got, res.ColumnNames())
	}
}
