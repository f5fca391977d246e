package tests

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKafkaSourceFormats runs Kafka sources end to end through views:
// FORMAT UPSERT (a record per key replaces the row, a tombstone deletes
// it), the record's metadata as INCLUDE columns, and on_error =
// 'dead_letter' (bad records kept in sluice_dead_letters and counted in
// SHOW SOURCES while the good ones around them arrive), surviving a kill -9.
func TestKafkaSourceFormats(t *testing.T) {
	b := StartBroker(t, 1, "users", "events")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	produce := func(topic, key, value string) {
		t.Helper()
		r := &kgo.Record{Topic: topic, Value: []byte(value)}
		if key != "" {
			r.Key = []byte(key)
		}
		if value == "" {
			r.Value = nil // tombstone
		}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce("users", `{"id":1}`, `{"id":1,"name":"ann","score":10}`)
	produce("users", `{"id":2}`, `{"id":2,"name":"bob","score":20}`)
	produce("users", `{"id":1}`, `{"id":1,"name":"ann","score":15}`)
	produce("users", `{"id":3}`, `{"id":3,"name":"cy","score":30}`)
	produce("users", `{"id":2}`, "")
	produce("events", "", `{"id":1,"v":"a"}`)
	produce("events", "", `{"id":2,"v":`) // broken JSON
	produce("events", "", `{"id":"x","v":"b"}`)
	produce("events", "", `{"id":3,"v":"c"}`)

	s := StartServer(t, Options{})
	conn := s.ConnectSimple(t)
	ExecAll(t, conn,
		`CREATE SOURCE users (id BIGINT, name TEXT, score BIGINT, PRIMARY KEY (id))
		   WITH (connector = 'kafka', topic = 'users', properties.bootstrap.server = '`+b.Addr+`')
		   FORMAT UPSERT ENCODE JSON`,
		`CREATE MATERIALIZED VIEW user_scores AS SELECT id, name, score FROM users`,
		`CREATE MATERIALIZED VIEW score_total AS SELECT count(*) AS n, sum(score) AS total FROM users`,
		`CREATE SOURCE events (id BIGINT, v TEXT) INCLUDE partition INCLUDE offset
		   WITH (connector = 'kafka', topic = 'events', properties.bootstrap.server = '`+b.Addr+`',
		         on_error = 'dead_letter')
		   FORMAT PLAIN ENCODE JSON`,
		`CREATE MATERIALIZED VIEW ev AS SELECT id, v, _partition, _offset FROM events`,
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
			got := res.Lines()
			if equalLines(got, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: got %q, want %q", what, got, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	check("upsert view", "SELECT id, name, score FROM user_scores ORDER BY id", "1 ann 15", "3 cy 30")
	check("upsert aggregate", "SELECT n, total FROM score_total", "2 45")
	check("plain view with metadata", "SELECT id, v, _partition, _offset FROM ev ORDER BY id", "1 a 0 0", "3 c 0 3")
	check("dead letters", `SELECT source, topic, "partition", "offset" FROM sluice_dead_letters ORDER BY 4`,
		"events events 0 1", "events events 0 2")
	check("dead letters per source, with the jobs", `SELECT d.source, count(*), j.kind FROM sluice_catalog.dead_letters d
		JOIN sluice_catalog.jobs j ON j.name = 'ev' GROUP BY d.source, j.kind`, "events 2 materialized view")

	// After kill -9 and more records: nothing doubled, the new ones applied.
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	produce("users", `{"id":3}`, `{"id":3,"name":"cy","score":31}`)
	produce("events", "", `not json`)
	produce("events", "", `{"id":4,"v":"d"}`)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	conn = s.ConnectSimple(t)
	check("upsert view after restart", "SELECT id, name, score FROM user_scores ORDER BY id", "1 ann 15", "3 cy 31")
	check("upsert aggregate after restart", "SELECT n, total FROM score_total", "2 46")
	check("plain view after restart", "SELECT id, v, _offset FROM ev ORDER BY id", "1 a 0", "3 c 3", "4 d 5")
	check("dead letters after restart", `SELECT "offset", error <> '' FROM sluice_dead_letters ORDER BY 1`,
		"1 t", "2 t", "4 t")
}
