package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// wantCode runs sql and checks it fails with SQLSTATE code and a message
// holding every one of mentions; it returns the error.
func wantCode(t *testing.T, conn *pgx.Conn, sql, code string, mentions ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := QueryText(ctx, conn, sql)
	if err == nil {
		t.Errorf("%s: succeeded, want SQLSTATE %s", sql, code)
		return nil
	}
	if PgCode(err) != code {
		t.Errorf("%s: %v (SQLSTATE %s), want SQLSTATE %s", sql, err, PgCode(err), code)
	}
	for _, m := range mentions {
		if !strings.Contains(errorText(err), m) {
			t.Errorf("%s: error %q does not mention %q", sql, errorText(err), m)
		}
	}
	return err
}

// errorText is an error's message with its detail and hint.
func errorText(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Message + "\n" + pe.Detail + "\n" + pe.Hint
	}
	return err.Error()
}

// TestFunctionNoShadowing: one session's CREATE FUNCTION abs(…) never
// changes what abs(-5) returns for another (built-ins win for unqualified
// names, as if pg_catalog came first on every search path); the user's
// function is public.abs; functions live in schemas (pg_proc.pronamespace)
// and are dropped by their qualified name.
func TestFunctionNoShadowing(t *testing.T) {
	srv := StartServer(t, Options{})
	mallory, victim := srv.Connect(t), srv.Connect(t)
	ExecAll(t, mallory,
		`CREATE FUNCTION abs(x int) RETURNS int LANGUAGE SQL AS $$ SELECT 42 $$`,
		`CREATE FUNCTION lower(x text) RETURNS text LANGUAGE SQL AS $$ SELECT 'pwned' $$`,
		`CREATE SCHEMA s`,
		`CREATE FUNCTION s.twice(x int) RETURNS int LANGUAGE SQL AS $$ SELECT x * 2 $$`,
	)
	for _, conn := range []*pgx.Conn{victim, mallory} {
		if got := queryLines(t, conn, `SELECT abs(-5), lower('ABC'), pg_catalog.abs(-7)`); strings.Join(got, "|") != "5 abc 7" {
			t.Errorf("built-ins after a user's abs/lower: got %q, want [5 abc 7]", got)
		}
	}
	if got := queryLines(t, victim, `SELECT public.abs(-5), public.lower('ABC'), s.twice(21)`); strings.Join(got, "|") != "42 pwned 42" {
		t.Errorf("qualified user functions: got %q, want [42 pwned 42]", got)
	}
	// A view planned after the user's abs still uses the built-in.
	ExecAll(t, victim, `CREATE TABLE n (v INT)`, `INSERT INTO n VALUES (-3)`,
		`CREATE MATERIALIZED VIEW nv AS SELECT abs(v) AS a FROM n`, `FLUSH`)
	if got := queryLines(t, victim, `SELECT a FROM nv`); strings.Join(got, "|") != "3" {
		t.Errorf("view over abs: got %q, want [3]", got)
	}
	got := queryLines(t, victim, `SELECT p.proname, n.nspname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE p.proname IN ('twice', 'abs') AND p.prolang = 14 ORDER BY 1`)
	if strings.Join(got, "|") != "abs public|twice s" {
		t.Errorf("pg_proc of user functions: got %q, want [abs public, twice s]", got)
	}
	wantCode(t, victim, `SELECT s.nosuch(1)`, "42883")
	wantCode(t, victim, `CREATE FUNCTION abs(x int) RETURNS int LANGUAGE SQL AS $$ SELECT 1 $$`, "42723", "already exists")
	wantCode(t, victim, `CREATE FUNCTION pg_catalog.abs(x int) RETURNS int LANGUAGE SQL AS $$ SELECT 1 $$`, "42501", "permission denied")
	wantCode(t, victim, `CREATE FUNCTION pg_catalog.myf(x int) RETURNS int LANGUAGE SQL AS $$ SELECT 1 $$`, "42501")
	ExecAll(t, mallory, `DROP FUNCTION s.twice`, `DROP FUNCTION abs`)
	wantCode(t, victim, `SELECT s.twice(1)`, "42883")
	wantCode(t, victim, `SELECT public.abs(1)`, "42883")
	if got := queryLines(t, victim, `SELECT abs(-5)`); strings.Join(got, "|") != "5" {
		t.Errorf("abs after DROP: got %q", got)
	}
}

// TestConfinedFileSink: file sinks write only under --file-root (by
// default <data-dir>/files); "..", absolute paths elsewhere and symlinks
// out are refused with 42501 and a hint naming --file-root; a directory
// holding a file the sink did not make is refused and the file untouched.
func TestConfinedFileSink(t *testing.T) {
	srv := StartServer(t, Options{CheckpointInterval: 200 * time.Millisecond})
	conn := srv.Connect(t)
	root := filepath.Join(srv.DataDir, "files")
	ExecAll(t, conn, `CREATE TABLE t (id INT PRIMARY KEY, v TEXT)`)
	sink := func(name, path string) string {
		return fmt.Sprintf(`CREATE SINK %s FROM t WITH (connector = 'file', path = '%s') FORMAT DEBEZIUM ENCODE JSON`, name, path)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"../../etc/x", "../files_evil", outside, filepath.Join(outside, "x"), "link/x", "link", "a/../../../x", "/etc"} {
		wantCode(t, conn, sink("s_bad", path), "42501", "outside the file root", "--file-root")
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 0 {
		t.Errorf("a refused sink wrote into %s: %v", outside, entries)
	}

	// A directory with a file the sink did not make.
	foreign := filepath.Join(root, "foreign")
	if err := os.MkdirAll(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(foreign, "part-00000000000000000001.jsonl")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantCode(t, conn, sink("s_foreign", "foreign"), "58P02", "was not made by this sink")
	wantCode(t, conn, sink("s_foreign", filepath.Join(root, "foreign")), "58P02", "was not made by this sink")

	// A relative path lands under the root; an absolute one inside it too.
	ExecAll(t, conn, sink("s_good", "out/good"), sink("s_abs", filepath.Join(root, "abs")),
		`INSERT INTO t VALUES (1, 'a'), (2, 'b')`, `FLUSH`)
	for _, dir := range []string{filepath.Join(root, "out", "good"), filepath.Join(root, "abs")} {
		waitFor(t, 30*time.Second, func() bool {
			m, _ := filepath.Glob(filepath.Join(dir, "part-*.jsonl"))
			return len(m) > 0
		}, "part files in "+dir)
	}
	// Another sink may not take a directory a sink owns.
	wantCode(t, conn, sink("s_steal", "out/good"), "58P02", "belongs to another sink")
	if b, err := os.ReadFile(victim); err != nil || string(b) != "precious\n" {
		t.Errorf("foreign file after the refusals: %q, %v", b, err)
	}
	// The owner restarts over its own directory.
	conn = srv.StopRestart(t, conn)
	ExecAll(t, conn, `INSERT INTO t VALUES (3, 'c')`, `FLUSH`)
	waitFor(t, 30*time.Second, func() bool {
		var rows int
		m, _ := filepath.Glob(filepath.Join(root, "abs", "part-*.jsonl"))
		for _, f := range m {
			b, _ := os.ReadFile(f)
			rows += strings.Count(string(b), "\n")
		}
		return rows == 3
	}, "3 rows in the sink's files after the restart")
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond) // polling, bounded by the deadline
	}
}

// TestSocketSourcePorts: socket sources listen only on --socket-ports
// (default 10000-65535), never below 1024; the flag refuses privileged
// ports.
func TestSocketSourcePorts(t *testing.T) {
	srv := StartServer(t, Options{})
	conn := srv.Connect(t)
	src := func(name string, port int) string {
		return fmt.Sprintf(`CREATE SOURCE %s (id BIGINT) WITH (connector = 'socket', port = '%d')`, name, port)
	}
	for _, port := range []int{80, 1023, 5432, 9999} {
		wantCode(t, conn, src("s_bad", port), "42501", "may not listen on port", "--socket-ports")
	}
	ExecAll(t, conn, `CREATE SOURCE s_any (id BIGINT) WITH (connector = 'socket', port = '0')`)

	narrow := StartServer(t, Options{ExtraArgs: []string{"--socket-ports", "20000-20010"}})
	nconn := narrow.Connect(t)
	wantCode(t, nconn, src("s_out", 20011), "42501", "20000-20010")
	wantCode(t, nconn, src("s_out", 10000), "42501")

	bad := NewServer(t, Options{ExtraArgs: []string{"--socket-ports", "80-2000"}})
	if err := bad.Start(); err == nil {
		t.Fatalf("sluice started with --socket-ports 80-2000")
	}
	if !strings.Contains(bad.Logs(), "privileged") {
		t.Errorf("--socket-ports 80-2000: log does not say why:\n%s", bad.Logs())
	}
}

// TestConnectorAllowHosts: with --connector-allow-hosts, postgres, redis
// and kafka connectors reach only the listed hosts and ports (42501 at
// CREATE otherwise).
func TestConnectorAllowHosts(t *testing.T) {
	pgURL := FreshPostgresDB(t, "sluice_allow_hosts")
	srv := StartServer(t, Options{ExtraArgs: []string{"--connector-allow-hosts", "127.0.0.1:5432,localhost"}})
	conn := srv.Connect(t)
	ExecAll(t, conn, `CREATE TABLE t (id INT PRIMARY KEY, v TEXT)`)
	pgSink := func(name, url string) string {
		return fmt.Sprintf(`CREATE SINK %s FROM t WITH (connector = 'postgres', url = '%s', table = '%s', primary_key = 'id')`, name, url, name)
	}
	wantCode(t, conn, pgSink("p_host", strings.Replace(pgURL, "127.0.0.1", "127.0.0.2", 1)), "42501", "127.0.0.2:5432", "--connector-allow-hosts")
	wantCode(t, conn, pgSink("p_port", strings.Replace(pgURL, ":5432", ":5433", 1)), "42501", "127.0.0.1:5433")
	wantCode(t, conn, `CREATE SINK r FROM t WITH (connector = 'redis', redis.url = 'redis://127.0.0.1:6379/0', primary_key = 'id')`,
		"42501", "127.0.0.1:6379")
	wantCode(t, conn, `CREATE SINK k FROM t WITH (connector = 'kafka', topic = 'x', properties.bootstrap.server = '127.0.0.1:9092', primary_key = 'id') FORMAT UPSERT ENCODE JSON`,
		"42501", "127.0.0.1:9092")
	wantCode(t, conn, `CREATE SOURCE ks (id INT) WITH (connector = 'kafka', topic = 'x', properties.bootstrap.server = '10.1.2.3:9092') FORMAT PLAIN ENCODE JSON`,
		"42501", "10.1.2.3:9092")
	// Any port of a host listed without one.
	ExecAll(t, conn, `CREATE SINK r2 FROM t WITH (connector = 'redis', redis.url = 'redis://localhost:1/0', primary_key = 'id')`)
	ExecAll(t, conn, pgSink("p_ok", pgURL), `INSERT INTO t VALUES (1, 'a')`, `FLUSH`)
	pg := MustConnect(t, pgURL)
	waitFor(t, 30*time.Second, func() bool {
		var n int
		return pg.QueryRow(context.Background(), `SELECT count(*) FROM p_ok`).Scan(&n) == nil && n == 1
	}, "the row in PostgreSQL")

	// Restarted with a narrower list, the server does not reach the
	// hosts it no longer may: it refuses to start, naming the sink.
	conn.Close(context.Background())
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	for i, a := range srv.args {
		if a == "127.0.0.1:5432,localhost" {
			srv.args[i] = "127.0.0.1:6379"
		}
	}
	if err := srv.Start(); err == nil {
		t.Fatalf("sluice started with sinks to hosts --connector-allow-hosts no longer lists")
	}
	if logs := srv.Logs(); !strings.Contains(logs, `restoring sink "r2": redis connector may not connect to localhost:1`) {
		t.Errorf("the refused start does not say why:\n%s", logs)
	}
}
