package tests

// The client matrix (issue 14, acceptance 7): the drivers, ORMs and tools
// people already have run one scripted session each against a real sluice
// process: DDL, parameterized DML, a transaction that commits and one that
// rolls back, a view, an exact round trip of every supported type, and the
// SQLSTATEs of common errors, plus what is particular to each client
// (binary formats, pipeline mode, COPY, reflection, metadata, completion).
//
// Every script is a list of named steps and reports, on stdout, one JSON
// line per step: {"step": "rollback", "ok": false, "error": "..."}. The
// scripts live in tests/clients/; the Go clients (pgx, lib/pq) and psql are
// driven from Go directly, with the same step protocol.
//
// Against Sluice, a client's pending list names the steps known not to work
// yet and why. A pending step still runs and must fail: if it passes, the
// test fails and asks for it to be removed from the list, so the lists only
// shrink and no broken step passes silently. TestClientMatrixPostgres runs
// every script against the machine's PostgreSQL 15 with no pending step,
// which shows that the scripts expect what PostgreSQL does.
//
// Where Sluice differs from PostgreSQL on purpose, the scripts say so and
// branch on CLIENT_TARGET: a view is CREATE MATERIALIZED VIEW on Sluice
// (maintained incrementally) and CREATE VIEW on PostgreSQL, and on Sluice a
// FLUSH makes acknowledged writes visible before a step checks them (the
// read_your_writes step checks the same without FLUSH). Sluice runs with a
// one-hour checkpoint interval, so that only FLUSH or read-your-writes make
// a write visible: the read_your_writes step fails or passes
// deterministically, never by the luck of a checkpoint.
//
// A client that is not installed fails its test (scripts/test.sh installs
// them all); nothing here skips.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// clientTarget is the server a client session runs against.
type clientTarget struct {
	name       string // "sluice" or "postgres"
	host, port string
	user, db   string
}

// sluice reports whether the target is Sluice (rather than PostgreSQL).
func (tg clientTarget) sluice() bool { return tg.name == "sluice" }

// url is a libpq-style connection URL for the target.
func (tg clientTarget) url() string {
	return "postgres://" + tg.user + "@" + net.JoinHostPort(tg.host, tg.port) + "/" + tg.db + "?sslmode=disable"
}

// env is the environment a client script runs with: the libpq variables
// (psycopg, psql, pgcli and node-postgres read them), the target's name and
// its URL.
func (tg clientTarget) env() []string {
	return append(os.Environ(),
		"PGHOST="+tg.host, "PGPORT="+tg.port, "PGUSER="+tg.user, "PGDATABASE="+tg.db,
		"PGSSLMODE=disable", "PGPASSWORD=", "PGOPTIONS=", "PGTZ=UTC", "PGCONNECT_TIMEOUT=10",
		"CLIENT_TARGET="+tg.name, "CLIENT_URL="+tg.url(),
		"PYTHONDONTWRITEBYTECODE=1", "PYTHONIOENCODING=utf-8")
}

// stepResult is one step a client session reported.
type stepResult struct {
	Step  string `json:"step"`
	OK    bool   `json:"ok"`
	Error string `json:"error"`
	// elapsed is how long the step took, for steps run from Go.
	elapsed time.Duration
}

// clientCase is one client of the matrix.
type clientCase struct {
	name string
	// steps are the steps the session must report, in order.
	steps []string
	// pending are the steps known to fail against Sluice, with the reason
	// (the issue item that fixes them).
	pending map[string]string
	// run runs the session against tg and returns what it reported.
	run func(t *testing.T, tg clientTarget) []stepResult
}

// commonSteps are the steps every driver session runs (psql and pgcli
// have their own).
var commonSteps = []string{
	"ddl",              // CREATE TABLE items/notes/types, the view over items
	"dml",              // parameterized INSERT, UPDATE, DELETE with row counts, then SELECT
	"read_your_writes", // INSERT then SELECT in the same session, no FLUSH
	"commit",           // a transaction that commits two INSERTs
	"view",             // the view's exact answer
	"rollback",         // a transaction whose INSERT and UPDATE are rolled back
	"types",            // every supported type through parameters and back
	"jsonb",            // jsonb printed as PostgreSQL prints it, and its operators
	"errors",           // 42P01, 42703, 23505, 42601, 22012, and the session survives
	"failed_tx",        // an error inside a block: 25P02 until ROLLBACK
}

// withSteps returns commonSteps followed by extra.
func withSteps(extra ...string) []string {
	return append(append([]string(nil), commonSteps...), extra...)
}

// clientDir is the directory holding the client scripts.
func clientDir(t *testing.T) string {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "tests", "clients")
}

// clientTimeout bounds one client session.
const clientTimeout = 90 * time.Second

// startClientServer starts the Sluice server a client session runs against.
func startClientServer(t *testing.T) clientTarget {
	t.Helper()
	srv := StartServer(t, Options{CheckpointInterval: time.Hour})
	return clientTarget{name: "sluice", host: srv.Host(), port: srv.Port(), user: "sluice", db: "sluice"}
}

// postgresClientTarget makes a fresh database on the machine's PostgreSQL.
func postgresClientTarget(t *testing.T, client string) clientTarget {
	t.Helper()
	FreshPostgresDB(t, "clients_"+client)
	host, port, _ := net.SplitHostPort(PostgresAddr)
	return clientTarget{name: "postgres", host: host, port: port, user: "postgres", db: "clients_" + client}
}

// runClientCase runs c against a fresh Sluice server and checks its steps
// against the pending list.
func runClientCase(t *testing.T, c clientCase) {
	tg := startClientServer(t)
	checkSteps(t, c, tg, c.run(t, tg))
}

// TestClientMatrixPostgres runs every session against the machine's
// PostgreSQL: every step must pass there.
func TestClientMatrixPostgres(t *testing.T) {
	for _, c := range clientCases() {
		t.Run(c.name, func(t *testing.T) {
			tg := postgresClientTarget(t, c.name)
			checkSteps(t, c, tg, c.run(t, tg))
		})
	}
}

// clientCases is the matrix, for TestClientMatrixPostgres.
func clientCases() []clientCase {
	return []clientCase{psycopg2Case, psycopg3Case, sqlalchemyCase, sqlalchemy2Psycopg2Case, sqlalchemy2PsycopgCase,
		pgjdbcCase, nodePostgresCase, libpqCase, pgxCase, psqlCase, pgcliCase}
}

// checkSteps compares what a session reported with what it must report: on
// PostgreSQL every step passes; on Sluice every step passes except the
// pending ones, which must fail.
func checkSteps(t *testing.T, c clientCase, tg clientTarget, got []stepResult) {
	t.Helper()
	byName := map[string]stepResult{}
	for _, r := range got {
		if _, dup := byName[r.Step]; dup {
			t.Errorf("%s: step %q reported twice", c.name, r.Step)
		}
		byName[r.Step] = r
	}
	known := map[string]bool{}
	for _, s := range c.steps {
		known[s] = true
	}
	for _, r := range got {
		if !known[r.Step] {
			t.Errorf("%s: reported step %q is not in the case's step list", c.name, r.Step)
		}
	}
	for name := range c.pending {
		if !known[name] {
			t.Errorf("%s: pending step %q is not in the case's step list", c.name, name)
		}
	}
	var passed, pending []string
	for _, s := range c.steps {
		r, ok := byName[s]
		if !ok {
			t.Errorf("%s: step %s was not reported (the session ended early)", c.name, s)
			continue
		}
		if r.elapsed > time.Second {
			t.Logf("%s: step %s took %v", c.name, s, r.elapsed.Round(time.Millisecond))
		}
		reason, isPending := c.pending[s]
		switch {
		case !tg.sluice() && !r.OK:
			t.Errorf("%s against PostgreSQL: step %s: %s", c.name, s, r.Error)
		case !tg.sluice() || (r.OK && !isPending):
			passed = append(passed, s)
		case r.OK && isPending:
			t.Errorf("%s: step %s passes now: remove it from the pending list (%s)", c.name, s, reason)
		case !r.OK && isPending:
			pending = append(pending, s)
			t.Logf("%s: pending step %s (%s) fails: %s", c.name, s, reason, r.Error)
		default:
			t.Errorf("%s: step %s: %s", c.name, s, r.Error)
		}
	}
	t.Logf("%s against %s: passed %s; pending %s", c.name, tg.name, strings.Join(passed, " "), strings.Join(pending, " "))
}

// runScript runs a client script and collects the steps it reports. A
// script that exits non-zero (a crash outside a step, a missing module)
// fails the test with its output.
func runScript(t *testing.T, tg clientTarget, dir string, name string, args ...string) []stepResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = tg.env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	results := parseSteps(t, stdout.Bytes())
	if err != nil {
		t.Errorf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	} else if testing.Verbose() && stderr.Len() > 0 {
		t.Logf("%s stderr:\n%s", name, stderr.String())
	}
	return results
}

// parseSteps reads the JSON step lines of a session's output; other lines
// are logged.
func parseSteps(t *testing.T, out []byte) []stepResult {
	t.Helper()
	var results []stepResult
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte(`{"step"`)) {
			continue
		}
		var r stepResult
		if err := json.Unmarshal(line, &r); err != nil {
			t.Errorf("bad step line %q: %v", line, err)
			continue
		}
		results = append(results, r)
	}
	return results
}

// stepRunner runs the steps of a session written in Go, with the same
// reporting as the scripts: a step is a function returning an error.
type stepRunner struct {
	results []stepResult
}

// step runs fn as the step name; a panic fails the step, not the test.
func (r *stepRunner) step(name string, fn func() error) {
	start := time.Now()
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v", p)
			}
		}()
		return fn()
	}()
	res := stepResult{Step: name, OK: err == nil, elapsed: time.Since(start)}
	if err != nil {
		res.Error = describeErr(err)
	}
	r.results = append(r.results, res)
}

// mustHave fails the test loudly when a client program is not installed.
func mustHave(t *testing.T, program, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(program)
	if err != nil {
		t.Fatalf("%s is not installed (Debian package %s; scripts/test.sh installs it): %v", program, pkg, err)
	}
	return p
}
