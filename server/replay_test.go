package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"sluice/server/pgwire"
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
