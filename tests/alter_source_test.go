package tests

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestAlterSourceAddColumn: producers start sending a new field; ALTER
// SOURCE … ADD COLUMN lets new views read it (NULL in the records before
// it), while the views created before keep their columns and rows, also
// across a kill -9 and a restart from their stored plans; SHOW CREATE
// SOURCE shows the column.
func TestAlterSourceAddColumn(t *testing.T) {
	b := StartBroker(t, 1, "ev")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	produce := func(value string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ev", Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(`{"id":1,"v":"a","score":10}`) // the field is there before the column
	produce(`{"id":2,"v":"b"}`)

	s := StartServer(t, Options{})
	conn := s.ConnectSimple(t)
	ExecAll(t, conn,
		`CREATE SOURCE ev (id BIGINT, v TEXT) INCLUDE offset
		   WITH (connector = 'kafka', topic = 'ev', properties.bootstrap.server = '`+b.Addr+`')
		   FORMAT PLAIN ENCODE JSON`,
		`CREATE MATERIALIZED VIEW old_v AS SELECT * FROM ev`,
		`CREATE MATERIALIZED VIEW cnt AS SELECT count(*) AS n FROM ev`,
	)
	check := func(conn *pgx.Conn, what, sql string, want ...string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
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
	check(conn, "view before", "SELECT * FROM old_v ORDER BY id", "1 a 0", "2 b 1")

	ExecAll(t, conn, `ALTER SOURCE ev ADD COLUMN score INT`)
	if _, err := conn.Exec(ctx, `ALTER SOURCE ev ADD COLUMN score INT`); PgCode(err) != "42701" {
		t.Fatalf("adding the column again: %v, want 42701", err)
	}
	ExecAll(t, conn, `ALTER SOURCE ev ADD COLUMN IF NOT EXISTS score INT`)
	produce(`{"id":3,"v":"c","score":30}`)
	ExecAll(t, conn, `CREATE MATERIALIZED VIEW new_v AS SELECT id, v, score FROM ev`)
	check(conn, "new view", "SELECT * FROM new_v ORDER BY id", "1 a 10", "2 b NULL", "3 c 30")
	check(conn, "old view", "SELECT * FROM old_v ORDER BY id", "1 a 0", "2 b 1", "3 c 2")
	check(conn, "old aggregate", "SELECT n FROM cnt", "3")
	res, err := QueryText(ctx, conn, "SHOW CREATE SOURCE ev")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(res.Lines(), "\n"); !strings.Contains(got, "(id BIGINT, v TEXT, score INT)") {
		t.Fatalf("SHOW CREATE SOURCE: %s", got)
	}
	// The source's columns for a new query: the new one last.
	check(conn, "columns", `SELECT column_name FROM information_schema.columns WHERE table_name = 'ev' ORDER BY ordinal_position`,
		"id", "v", "_offset", "score")

	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	produce(`{"id":4,"v":"d","score":40}`)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	conn = s.ConnectSimple(t)
	check(conn, "new view after restart", "SELECT * FROM new_v ORDER BY id", "1 a 10", "2 b NULL", "3 c 30", "4 d 40")
	check(conn, "old view after restart", "SELECT * FROM old_v ORDER BY id", "1 a 0", "2 b 1", "3 c 2", "4 d 3")
	check(conn, "old aggregate after restart", "SELECT n FROM cnt", "4")
	ExecAll(t, conn, `CREATE MATERIALIZED VIEW later AS SELECT sum(score) AS s FROM ev`)
	check(conn, "a view created after the restart", "SELECT s FROM later", "80")
}
