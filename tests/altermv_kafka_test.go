package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// amvPoll waits until query q gives want (sorted lines).
func amvPoll(t *testing.T, srv *Server, q string, want []string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := amvRows(t, srv, q)
		if strings.Join(got, "\n") == strings.Join(want, "\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s:\n%s\nwant:\n%s", q, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		time.Sleep(50 * time.Millisecond) // polling, bounded by deadline
	}
}

// TestAlterMViewKafkaKeepsAggregate proves that a changed projection above
// a join and an aggregation over a Kafka source is built from the
// aggregation's state: the broker is down during ALTER, so no record can
// be read again, yet the view at once holds the new projection of every
// group; after the broker is back, new records update it.
func TestAlterMViewKafkaKeepsAggregate(t *testing.T) {
	b := StartBroker(t, 2, "in")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const records = 2000
	produce := func(from, to int) {
		t.Helper()
		var rs []*kgo.Record
		for i := from; i < to; i++ {
			rs = append(rs, &kgo.Record{Value: []byte(fmt.Sprintf(`{"id":%d,"k":%d,"v":%d}`, i, i%4, i))})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, records)
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE SOURCE s (id BIGINT, k BIGINT, v BIGINT) WITH (connector = 'kafka', topic = 'in', properties.bootstrap.server = '`+b.Addr+`', scan.startup.mode = 'earliest') FORMAT PLAIN ENCODE JSON`,
		`CREATE TABLE names (k BIGINT PRIMARY KEY, name TEXT)`,
		`INSERT INTO names VALUES (0, 'a'), (1, 'b'), (2, 'c'), (3, 'd')`,
		`CREATE MATERIALIZED VIEW kv AS SELECT names.name, count(*) AS n, sum(s.v) AS total FROM s JOIN names ON s.k = names.k GROUP BY names.name`,
	)
	want := func(n int, scale int64) []string {
		var out []string
		for k := 0; k < 4; k++ {
			var c, sum int64
			for i := 0; i < n; i++ {
				if i%4 == k {
					c++
					sum += int64(i)
				}
			}
			out = append(out, fmt.Sprintf("%c %d %d", 'a'+k, c, sum*scale))
		}
		return out
	}
	amvPoll(t, srv, `SELECT * FROM kv`, want(records, 1))

	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	ExecAll(t, conn, `ALTER MATERIALIZED VIEW kv AS SELECT names.name, count(*) AS n, sum(s.v) * 3 AS total FROM s JOIN names ON s.k = names.k GROUP BY names.name`)
	if got := amvRows(t, srv, `SELECT * FROM kv`); strings.Join(got, "\n") != strings.Join(want(records, 3), "\n") {
		t.Fatalf("right after ALTER, with the broker down:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want(records, 3), "\n"))
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	// A Kafka reader that started while the broker was down does not
	// always find it again (a limit of the Kafka source, not of ALTER):
	// restart the server, which also shows the new plan runs from its
	// stored state.
	_ = conn.Close(context.Background())
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	amvPoll(t, srv, `SELECT * FROM kv`, want(records, 3))
	produce(records, records+400)
	amvPoll(t, srv, `SELECT * FROM kv`, want(records+400, 3))
}
