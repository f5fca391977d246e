package tests

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Proc is a helper process of a test, such as a Kafka broker or a Redis
// server, that the test kills and starts again with the same arguments (so
// on the same port and data directory). Start, Kill and Stop may be called
// from any goroutine, but not concurrently with each other.
type Proc struct {
	t    testing.TB
	name string
	argv []string
	// ready reports whether a started process serves; it is polled until
	// it returns nil. marker, when set, is a line prefix the process
	// prints on stdout when it serves, checked instead.
	ready  func() error
	marker string
	logs   *logBuffer

	mu struct {
		sync.Mutex
		proc *process
		seen chan struct{} // closed when the current run printed marker
	}
}

// NewProc prepares a helper process; ready is polled after each start
// until it returns nil. The process is killed when the test ends, and its
// output goes to the test log if the test failed.
func NewProc(t testing.TB, name string, argv []string, ready func() error) *Proc {
	t.Helper()
	p := &Proc{t: t, name: name, argv: argv, ready: ready, logs: newLogBuffer()}
	t.Cleanup(func() {
		_ = p.Kill()
		if t.Failed() {
			t.Logf("%s output (last %d KiB):\n%s", name, logTail>>10, p.logs.Tail(logTail))
		}
	})
	return p
}

// Start starts the process and waits until it serves.
func (p *Proc) Start() error {
	p.mu.Lock()
	if p.mu.proc != nil {
		select {
		case <-p.mu.proc.done:
		default:
			p.mu.Unlock()
			return fmt.Errorf("%s already running", p.name)
		}
	}
	fmt.Fprintf(p.logs, "\n=== %s start at %s: %s\n", p.name, time.Now().Format("15:04:05.000"), strings.Join(p.argv, " "))
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	seen := make(chan struct{})
	if p.marker != "" {
		cmd.Stdout = &markerWriter{w: p.logs, marker: []byte(p.marker), seen: seen}
	} else {
		cmd.Stdout = p.logs
	}
	cmd.Stderr = p.logs
	cmd.SysProcAttr = sysProcAttr(nil)
	if err := cmd.Start(); err != nil {
		p.mu.Unlock()
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	proc := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		proc.waitErr = cmd.Wait()
		close(proc.done)
	}()
	p.mu.proc = proc
	p.mu.seen = seen
	p.mu.Unlock()

	deadline := time.After(startTimeout)
	for {
		var err error
		if p.marker != "" {
			select {
			case <-seen:
			default:
				err = errors.New("not announced yet")
			}
		} else {
			err = p.ready()
		}
		if err == nil {
			return nil
		}
		select {
		case <-proc.done:
			return fmt.Errorf("%s exited before serving (%v):\n%s", p.name, proc.waitErr, p.logs.Tail(logTail))
		case <-deadline:
			return fmt.Errorf("%s not serving within %v (last error: %v):\n%s", p.name, startTimeout, err, p.logs.Tail(logTail))
		case <-seen:
		case <-time.After(20 * time.Millisecond): // polling, bounded by deadline
		}
	}
}

// Kill sends SIGKILL to the process (and its group) and waits for it. It
// is a no-op when the process is not running.
func (p *Proc) Kill() error {
	p.mu.Lock()
	proc := p.mu.proc
	p.mu.proc = nil
	p.mu.Unlock()
	if proc == nil {
		return nil
	}
	fmt.Fprintf(p.logs, "\n=== %s SIGKILL at %s\n", p.name, time.Now().Format("15:04:05.000"))
	_ = proc.signalGroup(syscall.SIGKILL)
	<-proc.done
	return nil
}

// markerWriter passes output on and closes seen once a line starting with
// marker has gone by.
type markerWriter struct {
	w      *logBuffer
	marker []byte
	seen   chan struct{}
	line   []byte
	done   bool
}

func (m *markerWriter) Write(b []byte) (int, error) {
	n, err := m.w.Write(b)
	if m.done {
		return n, err
	}
	m.line = append(m.line, b...)
	for {
		i := bytes.IndexByte(m.line, '\n')
		if i < 0 {
			break
		}
		if bytes.HasPrefix(m.line[:i], m.marker) {
			m.done = true
			close(m.seen)
			m.line = nil
			break
		}
		m.line = m.line[i+1:]
	}
	return n, err
}

// ---------------------------------------------------------------------------
// The Kafka-protocol broker.

// Broker is a testbroker process (cmd/testbroker: franz-go's kfake with a
// data directory, every produce fsynced) on a fixed 127.0.0.1 port. Killed
// and started again it keeps its topics, records, producer ids and
// transactions, as a real broker does.
type Broker struct {
	*Proc
	Addr    string // host:port, the bootstrap server
	DataDir string
}

// StartBroker builds cmd/testbroker (once per test binary) and starts a
// broker whose topics created on first use have the given number of
// partitions; topics are created at once.
func StartBroker(t testing.TB, partitions int, topics ...string) *Broker {
	t.Helper()
	bin := Tool(t, "./cmd/testbroker")
	b := &Broker{Addr: FreeAddr(t), DataDir: filepath.Join(t.TempDir(), "kafka")}
	argv := []string{bin, "--listen", b.Addr, "--data-dir", b.DataDir, "--partitions", strconv.Itoa(partitions)}
	if len(topics) > 0 {
		argv = append(argv, "--topics", strings.Join(topics, ","))
	}
	b.Proc = NewProc(t, "testbroker "+b.Addr, argv, nil)
	b.marker = "listening on "
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	return b
}

// ---------------------------------------------------------------------------
// A private Redis server.

// StartPrivateRedis starts a redis-server of the machine on a free port,
// with no persistence, for a test that stops and starts it.
func StartPrivateRedis(t testing.TB) (*Proc, string) {
	t.Helper()
	addr := FreeAddr(t)
	argv := []string{"redis-server", "--port", portOf(addr), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir()}
	p := NewProc(t, "redis-server "+addr, argv, func() error { return pingRedisAt(addr) })
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	return p, addr
}
