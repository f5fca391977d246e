package nats

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

const server = "nats://127.0.0.1:4222"

var cols = []types.Column{{Name: "id", Type: types.TInt8}, {Name: "v", Type: types.TText}}

// natsUp makes sure the machine's nats-server (JetStream) answers,
// starting it if it is down, and fails loudly otherwise.
func natsUp(t *testing.T) jetstream.JetStream {
	t.Helper()
	if c, err := net.DialTimeout("tcp", "127.0.0.1:4222", time.Second); err == nil {
		c.Close()
	} else {
		out, err := exec.Command("start-stop-daemon", "--start", "--oknodo", "--background", "--exec", "/usr/sbin/nats-server", "--",
			"-a", "127.0.0.1", "-p", "4222", "-js", "-sd", "/var/lib/nats-server", "-l", "/var/log/nats-server.log").CombinedOutput()
		if err != nil {
			t.Fatalf("nats-server is down and does not start: %v %s", err, out)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			if c, err := net.DialTimeout("tcp", "127.0.0.1:4222", time.Second); err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("nats-server started but does not answer on 127.0.0.1:4222")
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	nc, err := natsgo.Connect(server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// newStream makes a stream of its own for the test (removed after it).
func newStream(t *testing.T, js jetstream.JetStream) (name, subject string) {
	t.Helper()
	name = fmt.Sprintf("T%d", time.Now().UnixNano())
	subject = strings.ToLower(name) + ".in"
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name) + ".>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { js.DeleteStream(context.Background(), name) })
	return name, subject
}

func openSource(t *testing.T, kv ...string) *source {
	t.Helper()
	opts := map[string]string{"connector": "nats", "server": server}
	for i := 0; i+1 < len(kv); i += 2 {
		opts[kv[i]] = kv[i+1]
	}
	cfg := connector.SourceConfig{Name: "ns", Columns: cols, Options: opts}
	if _, err := (SourceFactory{}).Validate(cfg); err != nil {
		t.Fatal(err)
	}
	s, err := SourceFactory{}.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*source)
}

func readN(t *testing.T, s *source, want int) ([]string, error) {
	t.Helper()
	var got []string
	for deadline := time.Now().Add(10 * time.Second); len(got) < want && time.Now().Before(deadline); {
		b := types.NewBatch(16)
		n, err := s.Read(context.Background(), b, min(16, want-len(got)))
		for _, r := range b.Rows[:n] {
			got = append(got, fmt.Sprintf("%d:%s", r[0].I, r[1].S))
		}
		if err != nil {
			return got, err
		}
	}
	return got, nil
}

func publish(t *testing.T, js jetstream.JetStream, subject string, msgs ...string) {
	t.Helper()
	for _, m := range msgs {
		if _, err := js.Publish(context.Background(), subject, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
}

func rows(from, to int) ([]string, []string) {
	var msgs, want []string
	for i := from; i < to; i++ {
		msgs = append(msgs, fmt.Sprintf(`{"id":%d,"v":"r%d"}`, i, i))
		want = append(want, fmt.Sprintf("%d:r%d", i, i))
	}
	return msgs, want
}

func TestSourceReadSeekBadRecords(t *testing.T) {
	js := natsUp(t)
	stream, subject := newStream(t, js)
	msgs, want := rows(0, 30)
	publish(t, js, subject, msgs[:10]...)
	publish(t, js, subject, "{broken")
	publish(t, js, subject, msgs[10:]...)
	s := openSource(t, "stream", stream, "on_error", "skip")
	got, err := readN(t, s, 12)
	if err != nil || !slices.Equal(got, want[:12]) {
		t.Fatalf("got %v %v", got, err)
	}
	if d := s.TakeDeadLetters(nil); len(d) != 1 || d[0].Offset != 11 || d[0].Topic != subject {
		t.Fatalf("dead letters %+v", d)
	}
	pos := s.Position()
	s.Close()
	// A new reader at the position reads the rest exactly once.
	s2 := openSource(t, "stream", stream, "on_error", "skip")
	if err := s2.Seek(pos); err != nil {
		t.Fatal(err)
	}
	got, err = readN(t, s2, 18)
	if err != nil || !slices.Equal(got, want[12:]) {
		t.Fatalf("after seek got %v %v", got, err)
	}
	// on_error = fail names the subject and sequence.
	s3 := openSource(t, "stream", stream)
	got, err = readN(t, s3, 30)
	if e := pgerror.Flatten(err); e == nil || e.Code != pgcode.InvalidTextRepresentation || !strings.Contains(e.Message, "offset 11") || len(got) != 10 {
		t.Fatalf("fail: %d rows, %v", len(got), err)
	}
}

func TestSourceBadServerAndStream(t *testing.T) {
	js := natsUp(t)
	open := func(kv ...string) error {
		opts := map[string]string{"connector": "nats"}
		for i := 0; i+1 < len(kv); i += 2 {
			opts[kv[i]] = kv[i+1]
		}
		s, err := SourceFactory{}.Open(context.Background(), connector.SourceConfig{Name: "ns", Columns: cols, Options: opts})
		if err == nil {
			s.Close()
		}
		return err
	}
	// Nothing listens on port 1: a clear connection error.
	if err := open("server", "nats://127.0.0.1:1", "stream", "X"); pgerror.GetCode(err) != pgcode.SQLClientUnableToEstablishSQLConnection {
		t.Fatalf("server down: %v", err)
	}
	if err := open("server", server, "stream", "NO_SUCH_STREAM_19"); pgerror.GetCode(err) != pgcode.UndefinedObject {
		t.Fatalf("no stream: %v", err)
	}
	_ = js
}

func TestSinkExactlyOnceWithinWindow(t *testing.T) {
	js := natsUp(t)
	stream, subject := newStream(t, js)
	cfg := connector.SinkConfig{Name: "nk", ID: 7, Columns: cols, AppendOnly: true,
		Options: map[string]string{"connector": "nats", "server": server, "subject": subject}}
	if _, err := (SinkFactory{}).Validate(cfg); err != nil {
		t.Fatal(err)
	}
	sk, err := SinkFactory{}.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sk.Close()
	ch := func(from, to int) []connector.Change {
		var out []connector.Change
		for i := from; i < to; i++ {
			out = append(out, connector.Change{After: types.Row{types.NewInt(int64(i)), types.NewString(fmt.Sprintf("r%d", i))}})
		}
		return out
	}
	ctx := context.Background()
	if err := sk.Write(ctx, 1, ch(0, 5)); err != nil {
		t.Fatal(err)
	}
	if err := sk.Write(ctx, 2, ch(5, 8)); err != nil {
		t.Fatal(err)
	}
	// Epoch 2 again (a retry after a crash): de-duplicated.
	if err := sk.Write(ctx, 2, ch(5, 8)); err != nil {
		t.Fatal(err)
	}
	st, _ := js.Stream(ctx, stream)
	info, err := st.Info(ctx)
	if err != nil || info.State.Msgs != 8 {
		t.Fatalf("stream holds %d messages (want 8): %v", info.State.Msgs, err)
	}
	if e, err := sk.(connector.Progress).LastEpoch(ctx); err != nil || e != 2 {
		t.Fatalf("LastEpoch = %d, %v", e, err)
	}
	// The source reads back exactly what the sink wrote.
	s := openSource(t, "stream", stream)
	got, err := readN(t, s, 8)
	_, want := rows(0, 8)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("read back %v %v", got, err)
	}
}

// privateServer starts a nats-server of the test's own with a password on
// a free port (stopped after the test).
func privateServer(t *testing.T, args ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("/usr/sbin/nats-server", append([]string{"-a", "127.0.0.1", "-p", fmt.Sprint(port)}, args...)...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot start nats-server: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return "nats://" + addr
		}
		if time.Now().After(deadline) {
			t.Fatal("private nats-server does not answer")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestWrongCredentials(t *testing.T) {
	url := privateServer(t, "--user", "u", "--pass", "right")
	opts := map[string]string{"connector": "nats", "server": url, "stream": "S", "user": "u", "password": "wrong"}
	_, err := SourceFactory{}.Open(context.Background(), connector.SourceConfig{Name: "ns", Columns: cols, Options: opts})
	if e := pgerror.Flatten(err); e == nil || e.Code != pgcode.InvalidPassword || strings.Contains(e.Message, "wrong") {
		t.Fatalf("wrong password: %v", err)
	}
	cfg := connector.SinkConfig{Name: "nk", Columns: cols, AppendOnly: true,
		Options: map[string]string{"connector": "nats", "server": url, "subject": "a.b", "user": "u", "password": "wrong"}}
	if _, err := (SinkFactory{}).Open(context.Background(), cfg); pgerror.GetCode(err) != pgcode.InvalidPassword {
		t.Fatalf("sink, wrong password: %v", err)
	}
}

// TestSourceServerLostMidStream kills a private JetStream server while the
// source reads, restarts it on the same store and port, and checks that
// every message comes exactly once.
func TestSourceServerLostMidStream(t *testing.T) {
	dir := t.TempDir()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	start := func() *exec.Cmd {
		cmd := exec.Command("/usr/sbin/nats-server", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-js", "-sd", dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
				c.Close()
				return cmd
			}
			if time.Now().After(deadline) {
				t.Fatal("private nats-server does not answer")
			}
		}
	}
	cmd := start()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	pub := func(from, to int) {
		nc, err := natsgo.Connect(url)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		if _, err := js.CreateOrUpdateStream(context.Background(), jetstream.StreamConfig{Name: "L", Subjects: []string{"l.>"}, Storage: jetstream.FileStorage}); err != nil {
			t.Fatal(err)
		}
		msgs, _ := rows(from, to)
		publish(t, js, "l.x", msgs...)
	}
	pub(0, 20)
	s := openSource(t, "server", url, "stream", "L")
	got, err := readN(t, s, 20)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	cmd = start()
	pub(20, 40)
	more, err := readN(t, s, 20)
	if err != nil {
		t.Fatal(err)
	}
	_, want := rows(0, 40)
	if got = append(got, more...); !slices.Equal(got, want) {
		t.Fatalf("after the server came back: %d rows %v", len(got), got)
	}
}
