package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"sluice/server/pgwire"
	"sluice/storage"
)

// TestReplayLogsProgress: writes acknowledged after the last checkpoint
// are replayed from the table's log when the engine opens again, and the
// log says how many there are, how far the replay has got, and when it is
// committed (issue 18 item 6); the rows are all there afterwards.
func TestReplayLogsProgress(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(Config{DataDir: dir, CheckpointInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.Connect(context.Background(), pgwire.StartupInfo{User: "sluice", Database: "sluice"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := query(s, "CREATE TABLE r (k int PRIMARY KEY, v text)"); err != nil {
		t.Fatal(err)
	}
	const stmts = 40
	for i := range stmts {
		// VALUES, not a SELECT: a session's read waits for its last write's
		// checkpoint (read-your-writes)
		vals := make([]string, 50)
		for j := range vals {
			vals[j] = fmt.Sprintf("(%d, 'x')", i*50+j+1)
		}
		if _, err := query(s, "INSERT INTO r VALUES "+strings.Join(vals, ", ")); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if err := e.Close(); err != nil { // no checkpoint since the inserts
		t.Fatal(err)
	}

	old := replayLogEvery
	replayLogEvery = time.Millisecond
	defer func() { replayLogEvery = old }()
	var mu sync.Mutex
	var lines []string
	e, err = Open(Config{DataDir: dir, CheckpointInterval: time.Hour, Logf: func(f string, a ...any) {
		mu.Lock()
		lines = append(lines, fmt.Sprintf(f, a...))
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s, err = e.Connect(context.Background(), pgwire.StartupInfo{User: "sluice", Database: "sluice"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := query(s, "SELECT count(*), count(DISTINCT k) FROM r")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.rows, ","); got != "2000|2000" {
		t.Fatalf("after the replay: %s rows, want 2000|2000", got)
	}
	mu.Lock()
	defer mu.Unlock()
	var announced, done bool
	for _, l := range lines {
		announced = announced || l == fmt.Sprintf("replay: table r: %d logged writes after its checkpoint", stmts)
		done = done || strings.HasPrefix(l, "replay: the logged writes of 1 tables committed in ")
	}
	if !announced || !done {
		t.Fatalf("replay log lines missing (announced %v, committed %v):\n%s", announced, done, strings.Join(lines, "\n"))
	}
}

// TestRestoreLogsProgress: starting the jobs at start-up, which read their
// operators' state whole, logs the object being started and the state keys
// read so far every replayLogEvery, and the total at the end.
func TestRestoreLogsProgress(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(Config{DataDir: dir, CheckpointInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.Connect(context.Background(), pgwire.StartupInfo{User: "sluice", Database: "sluice"})
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]string, 3000)
	for i := range vals {
		vals[i] = fmt.Sprintf("(%d, %d)", i, i%10)
	}
	for _, q := range []string{"CREATE TABLE r (k int PRIMARY KEY, g int)", "INSERT INTO r VALUES " + strings.Join(vals, ", "),
		"CREATE MATERIALIZED VIEW per_g AS SELECT g, count(*) AS n FROM r GROUP BY g", "CREATE MATERIALIZED VIEW copy AS SELECT k, g FROM r", "FLUSH"} {
		if _, err := query(s, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s.Close()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	old := replayLogEvery
	replayLogEvery = time.Millisecond
	defer func() { replayLogEvery = old }()
	var mu sync.Mutex
	var lines []string
	logged := func(prefix string) string {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		return ""
	}
	// Hold the start of the last view until its progress line is logged.
	const progress = "load: starting materialized view copy (3 of 3 objects): "
	restoreHook = func(ent *storage.CatalogEntry) {
		if ent.Name != "copy" {
			return
		}
		for deadline := time.Now().Add(10 * time.Second); logged(progress) == "" && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond) // polling, bounded by the deadline
		}
	}
	defer func() { restoreHook = nil }()
	e, err = Open(Config{DataDir: dir, CheckpointInterval: time.Hour, Logf: func(f string, a ...any) {
		mu.Lock()
		lines = append(lines, fmt.Sprintf(f, a...))
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	p, done := logged(progress), logged("load: 3 objects started in ")
	mu.Lock()
	all := strings.Join(lines, "\n")
	mu.Unlock()
	if p == "" || done == "" {
		t.Fatalf("load lines missing:\n%s", all)
	}
	// Before copy: r's and per_g's materializations (3000 and 10 rows)
	// and per_g's aggregation state (10 groups); then copy's 3000 rows.
	var before, total int64
	if _, err := fmt.Sscanf(strings.TrimPrefix(p, progress), "%d state keys read", &before); err != nil {
		t.Fatalf("%q: %v", p, err)
	}
	if _, err := fmt.Sscanf(done[strings.LastIndex(done, ", ")+2:], "%d state keys read", &total); err != nil {
		t.Fatalf("%q: %v", done, err)
	}
	if before != 3020 || total != 6020 {
		t.Fatalf("keys read: %d before copy, %d in all:\n%s", before, total, all)
	}
	t.Logf("%s\n%s", p, done)
}
