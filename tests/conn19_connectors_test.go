package tests

// End-to-end tests of the file, NATS and MQTT connectors through a real
// sluice process: the file source is exactly once across kill -9 (its
// (file, offset) position replays with the checkpoint), SHOW SOURCES and
// SHOW SINKS state each connector's guarantee, and the weakest-link check
// refuses an EXACTLY_ONCE sink over an MQTT source.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestFileSourceCrash streams JSON-lines files (one gzip) through a filter
// into a file sink while the server is SIGKILLed at random moments and new
// files arrive; in the end every matching record is in the sink exactly
// once.
func TestFileSourceCrash(t *testing.T) {
	root := t.TempDir()
	in, out := filepath.Join(root, "in"), filepath.Join(root, "out")
	os.MkdirAll(in, 0o755)
	const perFile, files = 40_000, 6
	writeFile := func(k int) {
		var sb strings.Builder
		for i := k * perFile; i < (k+1)*perFile; i++ {
			fmt.Fprintf(&sb, "{\"id\":%d,\"price\":%d,\"bidder\":\"b%d\"}\n", i, i%1000, i%7)
		}
		name := filepath.Join(in, fmt.Sprintf("bids-%02d.jsonl", k))
		if err := os.WriteFile(name+".tmp", []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Rename(name+".tmp", name) // a whole file appears at once
	}
	writeFile(0)
	writeFile(1)
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond, ExtraArgs: []string{"--file-root", root}})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE SOURCE bids (id BIGINT, price BIGINT, bidder TEXT) WITH (connector = 'file', path = 'in', pattern = '*.jsonl', poll.interval.ms = '50') FORMAT PLAIN ENCODE JSON`,
		`CREATE SINK hi AS SELECT id, price FROM bids WHERE price > 900 WITH (connector = 'file', path = 'out') FORMAT PLAIN ENCODE JSON`)
	res, err := QueryText(context.Background(), conn, "SHOW SOURCES")
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Lines(); len(got) != 1 || got[0] != "bids file 0 0 EXACTLY_ONCE ·" {
		t.Fatalf("SHOW SOURCES: %q", got)
	}
	conn.Close(context.Background())
	rng := rand.New(rand.NewSource(19))
	for k := 2; k < files; k++ {
		time.Sleep(time.Duration(50+rng.Intn(400)) * time.Millisecond)
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		writeFile(k) // arrives while the server is down
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
	}
	want := 0
	for i := 0; i < perFile*files; i++ {
		if i%1000 > 900 {
			want++
		}
	}
	var ids map[int64]int
	deadline := time.Now().Add(90 * time.Second)
	for {
		ids = map[int64]int{}
		n := 0
		names, _ := filepath.Glob(filepath.Join(out, "part-*"))
		sort.Strings(names)
		for _, name := range names {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if line == "" {
					continue
				}
				var r struct{ ID, Price int64 }
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatalf("%s: %q: %v", name, line, err)
				}
				if r.Price != r.ID%1000 || r.Price <= 900 {
					t.Fatalf("wrong row %q", line)
				}
				ids[r.ID]++
				n++
			}
		}
		if n >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	lost, dup := 0, 0
	for i := 0; i < perFile*files; i++ {
		if i%1000 <= 900 {
			continue
		}
		switch c := ids[int64(i)]; {
		case c == 0:
			lost++
		case c > 1:
			dup += c - 1
		}
	}
	t.Logf("%d rows expected, %d distinct in the sink, lost=%d duplicated=%d", want, len(ids), lost, dup)
	if lost != 0 || dup != 0 {
		t.Fatalf("lost=%d duplicated=%d", lost, dup)
	}
}

// TestBrokerConnectorGuarantees: an MQTT source is AT_MOST_ONCE in SHOW
// SOURCES, and a sink over it cannot claim more; an MQTT sink is
// AT_LEAST_ONCE and a NATS sink EXACTLY_ONCE in SHOW SINKS.
func TestBrokerConnectorGuarantees(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:1883", "127.0.0.1:4222"} {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			t.Fatalf("%s does not answer (mosquitto / nats-server with -js must run: /work/.library/env/machines/go-svc.md): %v", addr, err)
		}
		c.Close()
	}
	srv := StartServer(t, Options{})
	conn := srv.Connect(t)
	ctx := context.Background()
	ExecAll(t, conn,
		`CREATE SOURCE m (id BIGINT, v TEXT) WITH (connector = 'mqtt', server = 'tcp://127.0.0.1:1883', topic = 'sluice/e2e/m') FORMAT PLAIN ENCODE JSON`)
	res, err := QueryText(ctx, conn, "SHOW SOURCES")
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Lines(); len(got) != 1 || got[0] != "m mqtt 0 0 AT_MOST_ONCE ·" {
		t.Fatalf("SHOW SOURCES: %q", got)
	}
	_, err = conn.Exec(ctx, `CREATE SINK s1 FROM m WITH (connector = 'blackhole', delivery = 'EXACTLY_ONCE')`)
	if PgCode(err) != "22023" || !strings.Contains(err.Error(), "source m (connector mqtt)") {
		t.Fatalf("EXACTLY_ONCE over an MQTT source: %v", err)
	}
	ExecAll(t, conn,
		`CREATE SINK s2 FROM m WITH (connector = 'mqtt', server = 'tcp://127.0.0.1:1883', topic = 'sluice/e2e/out', delivery = 'AT_MOST_ONCE') FORMAT PLAIN ENCODE JSON`)
	ExecAll(t, conn, `CREATE SOURCE bid WITH (connector = 'nexmark', nexmark.table.type = 'bid', nexmark.event.num = '10')`)
	_, err = conn.Exec(ctx, `CREATE SINK s3 FROM bid WITH (connector = 'mqtt', server = 'tcp://127.0.0.1:1883', topic = 'sluice/e2e/out') FORMAT PLAIN ENCODE JSON`)
	if PgCode(err) != "22023" || !strings.Contains(err.Error(), "sink connector mqtt") {
		t.Fatalf("EXACTLY_ONCE MQTT sink: %v", err)
	}
	// A NATS sink into a stream of the test's own.
	nc, err := natsgo.Connect("nats://127.0.0.1:4222")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	stream := fmt.Sprintf("E2E%d", time.Now().UnixNano())
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{strings.ToLower(stream)}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	defer js.DeleteStream(context.Background(), stream)
	ExecAll(t, conn, `CREATE SINK s4 FROM bid WITH (connector = 'nats', server = 'nats://127.0.0.1:4222', subject = '`+strings.ToLower(stream)+`') FORMAT PLAIN ENCODE JSON`)
	st, _ := js.Stream(ctx, stream)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		info, err := st.Info(ctx)
		if err == nil && info.State.Msgs == 6 { // nexmark's first 10 events hold 6 bids
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the NATS sink published %d of 6 bids (%v)", info.State.Msgs, err)
		}
	}
	res, err = QueryText(ctx, conn, "SHOW SINKS")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("SHOW SINKS %v: %q", res.ColumnNames(), res.Lines())
	if got := strings.Join(res.Lines(), "\n"); !strings.Contains(got, "AT_MOST_ONCE") || !strings.Contains(got, "source m (connector mqtt)") ||
		!strings.Contains(got, "s4 nats") {
		t.Fatalf("SHOW SINKS: %q", got)
	}
}
