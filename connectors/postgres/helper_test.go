package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"sluice/exec/connector"
	"sluice/sql/types"
)

// The machine's PostgreSQL (see tests/harness.go: EnsurePostgres).
const (
	testURL          = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable&connect_timeout=5"
	postgresStartCmd = `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`
)

var ensured struct {
	sync.Mutex
	ok bool
}

// ensurePostgres makes sure PostgreSQL accepts connections, starting it if
// it does not; it fails the test (never skips) if it cannot.
func ensurePostgres(t testing.TB) {
	t.Helper()
	ensured.Lock()
	defer ensured.Unlock()
	if ensured.ok {
		return
	}
	ping := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, testURL)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		return conn.Ping(ctx)
	}
	if ping() != nil {
		out, err := exec.Command("sh", "-c", postgresStartCmd).CombinedOutput()
		if err != nil {
			t.Fatalf("PostgreSQL is down and `%s` failed: %v\n%s", postgresStartCmd, err, out)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := ping()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("PostgreSQL still down 30s after `%s` (%s): %v", postgresStartCmd, out, err)
			}
			time.Sleep(100 * time.Millisecond) // polling, bounded by the deadline
		}
	}
	ensured.ok = true
}

// testDB connects to the test database; the connection closes with the test.
func testDB(t testing.TB) *pgx.Conn {
	t.Helper()
	ensurePostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testURL)
	if err != nil {
		t.Fatalf("connecting to PostgreSQL: %v", err)
	}
	t.Cleanup(func() { closeConn(conn) })
	return conn
}

// uniqueName returns prefix plus a random suffix and drops the table of
// that name when the test ends.
func uniqueName(t testing.TB, db *pgx.Conn, prefix string) string {
	t.Helper()
	name := fmt.Sprintf("%s_%08x", prefix, rand.Uint32())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := db.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
			t.Errorf("dropping %s: %v", name, err)
		}
	})
	return name
}

func exec1(t testing.TB, db *pgx.Conn, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// count returns the number of rows of table.
func count(t testing.TB, db *pgx.Conn, table string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(context.Background(), "SELECT count(*) FROM "+pgx.Identifier{table}.Sanitize()).Scan(&n); err != nil {
		t.Fatalf("counting %s: %v", table, err)
	}
	return n
}

// dump returns the rows of table as sorted text lines ("a|b|c", NULL as ∅).
func dump(t testing.TB, db *pgx.Conn, table string) []string {
	t.Helper()
	rows, err := db.Query(context.Background(), "SELECT * FROM "+pgx.Identifier{table}.Sanitize(), pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatalf("reading %s: %v", table, err)
	}
	var out []string
	for rows.Next() {
		vals := rows.RawValues()
		parts := make([]string, len(vals))
		for i, v := range vals {
			if v == nil {
				parts[i] = "∅"
			} else {
				parts[i] = string(v)
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("reading %s: %v", table, err)
	}
	sort.Strings(out)
	return out
}

// sinkConfig is a sink of (id BIGINT, v TEXT) into table.
func sinkConfig(table, mode string, keyed, appendOnly bool, extra ...string) connector.SinkConfig {
	cfg := connector.SinkConfig{
		Name:       "s_" + table,
		ID:         uint64(rand.Int64N(1 << 62)),
		Columns:    []types.Column{{Name: "id", Type: types.TInt8}, {Name: "v", Type: types.TText}},
		AppendOnly: appendOnly,
		Options:    map[string]string{"connector": "postgres", "url": testURL, "table": table},
		WriteMode:  mode,
	}
	if keyed {
		cfg.Key = []int{0}
		cfg.Options["primary_key"] = "id"
	}
	for i := 0; i+1 < len(extra); i += 2 {
		cfg.Options[extra[i]] = extra[i+1]
	}
	return cfg
}

func openSink(t testing.TB, cfg connector.SinkConfig) connector.Sink {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Factory{}.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func write(t testing.TB, s connector.Sink, epoch uint64, changes ...connector.Change) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Write(ctx, epoch, changes); err != nil {
		t.Fatalf("Write(epoch %d): %v", epoch, err)
	}
}

func row(id int64, v string) types.Row {
	return types.Row{types.NewInt(id), types.NewString(v)}
}

func ins(id int64, v string) connector.Change { return connector.Change{After: row(id, v)} }

func upd(id int64, old, v string) connector.Change {
	return connector.Change{Before: row(id, old), After: row(id, v)}
}

func del(id int64, old string) connector.Change { return connector.Change{Before: row(id, old)} }

func equalLines(t testing.TB, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\ngot:\n%s\nwant:\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
