package tests

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
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
	b, cl, ctx := clicksTopic(t)
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
	if got := res.Lines(); len(got) != 1 || got[0] != "clicks kafka 0 2 EXACTLY_ONCE ·" {
		t.Fatalf("SHOW SOURCES: %q (columns %v), want the late row counted by each of the two readers", got, res.ColumnNames())
	}
}

// TestEmitOnWindowCloseSinks: EMIT ON WINDOW CLOSE reaches sinks in both
// forms users write (issue 20 item 6): `CREATE SINK … AS SELECT … EMIT ON
// WINDOW CLOSE`, and `CREATE SINK … FROM v` of a plain view created with
// EMIT ON WINDOW CLOSE over TUMBLE (planned with the view's table
// functions; it failed with `table function __pg_tumble__1`). Each writes
// the closed windows once, final, into an append-only file sink; a plain
// view whose EMIT ON WINDOW CLOSE has nothing to close is refused (it was
// accepted and the clause dropped).
func TestEmitOnWindowCloseSinks(t *testing.T) {
	b, cl, ctx := clicksTopic(t)
	for _, v := range []string{
		`{"id":1,"ts":"2026-01-01 00:00:01"}`,
		`{"id":2,"ts":"2026-01-01 00:00:12"}`,
		`{"id":3,"ts":"2026-01-01 00:00:09"}`,
		`{"id":5,"ts":"2026-01-01 00:00:25"}`, // closes the windows before 00:00:20
	} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "clicks", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	s := StartServer(t, Options{})
	conn := s.ConnectSimple(t)
	win := `SELECT window_start, count(*) AS n, sum(id) AS ids FROM TUMBLE(clicks, ts, INTERVAL '10' SECOND) GROUP BY window_start`
	ExecAll(t, conn,
		`CREATE SOURCE clicks (id BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '4' SECOND)
		   WITH (connector = 'kafka', topic = 'clicks', properties.bootstrap.server = '`+b.Addr+`')
		   FORMAT PLAIN ENCODE JSON`,
		`CREATE SINK as_eowc AS `+win+` EMIT ON WINDOW CLOSE WITH (connector = 'file', path = 'as_eowc') FORMAT PLAIN ENCODE JSON`,
		`CREATE VIEW closed AS `+win+` EMIT ON WINDOW CLOSE`,
		`CREATE SINK from_view FROM closed WITH (connector = 'file', path = 'from_view') FORMAT PLAIN ENCODE JSON`,
		`CREATE MATERIALIZED VIEW closed_mv AS SELECT * FROM closed`,
		`CREATE SINK as_eowc_kafka AS `+win+` EMIT ON WINDOW CLOSE WITH (connector = 'kafka', topic = 'eowc20_as_eowc',
		   properties.bootstrap.server = '`+b.Addr+`', delivery = 'EXACTLY_ONCE') FORMAT PLAIN ENCODE JSON`,
		`CREATE SINK from_view_kafka FROM closed WITH (connector = 'kafka', topic = 'eowc20_from_view',
		   properties.bootstrap.server = '`+b.Addr+`', delivery = 'EXACTLY_ONCE') FORMAT PLAIN ENCODE JSON`,
	)
	want := []string{`{"window_start":"2026-01-01 00:00:00","n":2,"ids":4}`, `{"window_start":"2026-01-01 00:00:10","n":1,"ids":2}`}
	// The Kafka sinks: a read_committed consumer sees each closed window
	// once (append-only records, no retraction of an earlier value).
	readers := map[string]*eoTopicReader{}
	checkTopics := func() {
		t.Helper()
		for _, topic := range []string{"eowc20_as_eowc", "eowc20_from_view"} {
			r := readers[topic]
			if r == nil {
				r = newEOTopicReader(t, b.Addr, topic)
				readers[topic] = r
			}
			var got []string
			for deadline := time.Now().Add(30 * time.Second); ; {
				r.poll(t)
				got = got[:0]
				for _, rec := range r.recs {
					got = append(got, string(rec.Value))
				}
				sort.Strings(got)
				if len(got) >= len(want) || time.Now().After(deadline) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if !equalLines(got, want) {
				t.Fatalf("topic %s holds %q, want %q", topic, got, want)
			}
		}
	}
	checkTopics()
	for _, dir := range []string{"as_eowc", "from_view"} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			got := fileSinkLines(t, filepath.Join(s.DataDir, "files", dir))
			sort.Strings(got)
			if equalLines(got, want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sink %s wrote %q, want %q", dir, got, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		res, err := QueryText(ctx, conn, "SELECT window_start, n, ids FROM closed_mv ORDER BY 1")
		if err != nil {
			t.Fatal(err)
		}
		got := res.Lines()
		if equalLines(got, []string{"2026-01-01 00:00:00 2 4", "2026-01-01 00:00:10 1 2"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("closed_mv: %q", got)
		}
	}
	// A bounded scan (scan.bounded = 'latest') ends at the topic's end
	// when it started: its watermark then closes the last window too.
	ExecAll(t, conn,
		`CREATE SOURCE clicks_b (id BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '4' SECOND)
		   WITH (connector = 'kafka', topic = 'clicks', properties.bootstrap.server = '`+b.Addr+`', scan.bounded = 'latest')
		   FORMAT PLAIN ENCODE JSON`,
		`CREATE MATERIALIZED VIEW bounded_windows AS SELECT window_start, count(*) AS n, sum(id) AS ids
		   FROM TUMBLE(clicks_b, ts, INTERVAL '10' SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE`)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "clicks", Value: []byte(`{"id":6,"ts":"2026-01-01 00:00:26"}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		res, err := QueryText(ctx, conn, "SELECT window_start, n, ids FROM bounded_windows ORDER BY 1")
		if err != nil {
			t.Fatal(err)
		}
		got := res.Lines()
		if equalLines(got, []string{"2026-01-01 00:00:00 2 4", "2026-01-01 00:00:10 1 2", "2026-01-01 00:00:20 1 5"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bounded_windows: %q", got)
		}
	}
	// Checkpoints later, with another row in (its window stays open for
	// these sinks), each closed window is still there once.
	checkTopics()
	for _, bad := range []string{
		`CREATE VIEW nothing_to_close AS SELECT id FROM clicks EMIT ON WINDOW CLOSE`,
		`CREATE SINK nothing_to_close AS SELECT id FROM clicks EMIT ON WINDOW CLOSE WITH (connector = 'file', path = 'x')`,
	} {
		if _, err := conn.Exec(ctx, bad); sqlState(err) != "0A000" {
			t.Fatalf("%s: %v, want 0A000", bad, err)
		}
	}
}

// fileSinkLines returns the lines of a file sink's part files.
func fileSinkLines(t *testing.T, dir string) []string {
	t.Helper()
	parts, _ := filepath.Glob(filepath.Join(dir, "part-*"))
	var lines []string
	for _, p := range parts {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" {
				lines = append(lines, l)
			}
		}
	}
	return lines
}

// clicksTopic starts a broker with a topic "clicks" and a client of it;
// the context ends with the test, after at most two minutes.
func clicksTopic(t *testing.T) (*Broker, *kgo.Client, context.Context) {
	t.Helper()
	return brokerClient(t, "clicks")
}

// brokerClient starts a broker with topics (one partition each) and a
// client of it; the context ends with the test, after at most two minutes.
func brokerClient(t *testing.T, topics ...string) (*Broker, *kgo.Client, context.Context) {
	t.Helper()
	b := StartBroker(t, 1, topics...)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return b, cl, ctx
}
