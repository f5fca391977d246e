package tests

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// idleRSSBound is the most an idle server (no jobs) may keep resident
// (issue 16: under 100 MiB).
const idleRSSBound = 100 << 10 // KiB

// TestMemoryIdleRSS starts a real server with no jobs and measures its
// resident memory after start-up, and checks the start-up log shows how
// --memory-limit is divided.
func TestMemoryIdleRSS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	srv := StartServer(t, Options{ExtraArgs: []string{"--memory-limit", "1GiB"}})
	conn := srv.Connect(t)
	ExecAll(t, conn, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)", "INSERT INTO t VALUES (1, 'a')")
	time.Sleep(3 * time.Second) // a few checkpoints
	rss := procStatusKiB(t, srv.Pid(), "VmRSS")
	t.Logf("idle VmRSS: %d MiB", rss>>10)
	if rss > idleRSSBound {
		t.Fatalf("idle server holds %d MiB resident, want under %d MiB", rss>>10, idleRSSBound>>10)
	}
	want := "memory limit 1024 MiB: Go heap soft limit 864 MiB (of which operator state cache 216 MiB), store block cache 64 MiB, memtables 3 x 32 MiB"
	if !strings.Contains(srv.Logs(), want) {
		t.Fatalf("start-up log lacks the memory split %q:\n%s", want, srv.Logs())
	}
}

// TestMemoryLimitRefused: a limit below the minimum, or not a size, stops
// the server at start with the reason.
func TestMemoryLimitRefused(t *testing.T) {
	for _, c := range []struct{ arg, want string }{
		{"64MiB", "below the minimum of 128 MiB"},
		{"1XB", `unknown unit "XB"`},
	} {
		srv := NewServer(t, Options{ExtraArgs: []string{"--memory-limit", c.arg}})
		err := srv.Start()
		if err == nil {
			t.Fatalf("--memory-limit %s: the server started", c.arg)
		}
		if !strings.Contains(srv.Logs(), c.want) {
			t.Fatalf("--memory-limit %s: log lacks %q:\n%s", c.arg, c.want, srv.Logs())
		}
	}
}
