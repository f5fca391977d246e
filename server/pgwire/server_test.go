package pgwire

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// testServer is a Server serving a fakeHandler on 127.0.0.1.
type testServer struct {
	h    *fakeHandler
	srv  *Server
	addr string
	port int

	mu   sync.Mutex
	logs []string
}

func (ts *testServer) logged(substr string) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, l := range ts.logs {
		if strings.Contains(l, substr) {
			return true
		}
	}
	return false
}

// startServer starts a server and stops it (checking it stops cleanly and
// logged no panic unless allowPanic) when the test ends.
func startServer(t testing.TB, opts Options, allowPanic bool) *testServer {
	t.Helper()
	ts := &testServer{h: newFakeHandler()}
	opts.Logf = func(format string, args ...any) {
		ts.mu.Lock()
		ts.logs = append(ts.logs, fmt.Sprintf(format, args...))
		ts.mu.Unlock()
	}
	ts.srv = NewServer(ts.h, opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.addr = ln.Addr().String()
	ts.port = ln.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ts.srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Serve did not return after cancel")
		}
		if !allowPanic && ts.logged("panic") {
			t.Errorf("server logged a panic: %v", ts.logs)
		}
		if c, n := ts.h.connects.Load(), ts.h.closes.Load(); c != n {
			t.Errorf("%d sessions connected, %d closed", c, n)
		}
	})
	return ts
}

func (ts *testServer) connString(db string, extra ...string) string {
	s := fmt.Sprintf("postgres://tester@%s/%s?sslmode=disable&connect_timeout=5", ts.addr, db)
	for _, e := range extra {
		s += "&" + e
	}
	return s
}
