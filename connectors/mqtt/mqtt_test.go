package mqtt

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

const broker = "tcp://127.0.0.1:1883"

var cols = []types.Column{{Name: "id", Type: types.TInt8}, {Name: "v", Type: types.TText}}

// mosquittoUp makes sure the machine's mosquitto answers, starting it if
// it is down, and fails loudly otherwise.
func mosquittoUp(t *testing.T) {
	t.Helper()
	if c, err := net.DialTimeout("tcp", "127.0.0.1:1883", time.Second); err == nil {
		c.Close()
		return
	}
	if out, err := exec.Command("mosquitto", "-d", "-c", "/etc/mosquitto/mosquitto.conf").CombinedOutput(); err != nil {
		t.Fatalf("mosquitto is down and does not start: %v %s", err, out)
	}
	waitPort(t, "127.0.0.1:1883")
}

func waitPort(t *testing.T, addr string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing answers on %s", addr)
		}
	}
}

func srcOpts(topic string, kv ...string) map[string]string {
	opts := map[string]string{"connector": "mqtt", "server": broker, "topic": topic}
	for i := 0; i+1 < len(kv); i += 2 {
		opts[kv[i]] = kv[i+1]
	}
	return opts
}

func openSource(t *testing.T, opts map[string]string) *source {
	t.Helper()
	cfg := connector.SourceConfig{Name: "ms", Columns: cols, Options: opts}
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

func openSink(t *testing.T, opts map[string]string) connector.Sink {
	t.Helper()
	cfg := connector.SinkConfig{Name: "mk", Columns: cols, AppendOnly: true, Options: opts}
	if _, err := (SinkFactory{}).Validate(cfg); err != nil {
		t.Fatal(err)
	}
	sk, err := SinkFactory{}.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sk.Close() })
	return sk
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

func changes(from, to int) ([]connector.Change, []string) {
	var out []connector.Change
	var want []string
	for i := from; i < to; i++ {
		out = append(out, connector.Change{After: types.Row{types.NewInt(int64(i)), types.NewString(fmt.Sprintf("r%d", i))}})
		want = append(want, fmt.Sprintf("%d:r%d", i, i))
	}
	return out, want
}

// TestSinkToSource publishes through the sink and reads through the source
// (QoS 1 on one broker keeps the order).
func TestSinkToSource(t *testing.T) {
	mosquittoUp(t)
	topic := fmt.Sprintf("sluice/test/%d", time.Now().UnixNano())
	s := openSource(t, srcOpts(topic))
	sk := openSink(t, srcOpts(topic))
	ch, want := changes(0, 50)
	if err := sk.Write(context.Background(), 1, ch); err != nil {
		t.Fatal(err)
	}
	got, err := readN(t, s, 50)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("got %d rows %v, err %v", len(got), got, err)
	}
}

func TestSourceBadRecords(t *testing.T) {
	mosquittoUp(t)
	topic := fmt.Sprintf("sluice/test/%d", time.Now().UnixNano())
	skip := openSource(t, srcOpts(topic, "on_error", "skip"))
	fail := openSource(t, srcOpts(topic))
	pub := exec.Command("mosquitto_pub", "-h", "127.0.0.1", "-p", "1883", "-q", "1", "-t", topic, "-l")
	pub.Stdin = strings.NewReader("{\"id\":1,\"v\":\"a\"}\n{broken\n{\"id\":2,\"v\":\"b\"}\n")
	if out, err := pub.CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_pub: %v %s", err, out)
	}
	got, err := readN(t, skip, 2)
	if err != nil || !slices.Equal(got, []string{"1:a", "2:b"}) {
		t.Fatalf("skip: %v %v", got, err)
	}
	if d := skip.TakeDeadLetters(nil); len(d) != 1 || d[0].Topic != topic || string(d[0].Raw) != "{broken" {
		t.Fatalf("dead letters %+v", d)
	}
	got, err = readN(t, fail, 2)
	if e := pgerror.Flatten(err); e == nil || e.Code != pgcode.InvalidTextRepresentation || !slices.Equal(got, []string{"1:a"}) {
		t.Fatalf("fail: %v %v", got, err)
	}
}

func TestGuarantees(t *testing.T) {
	if w := (SourceFactory{}).Unreplayable(connector.SourceConfig{}); !strings.Contains(w, "cannot replay") {
		t.Fatalf("source: %q", w)
	}
	for qos, want := range map[string]connector.Guarantee{"1": connector.AtLeastOnce, "0": connector.AtMostOnce} {
		p, err := (SinkFactory{}).Validate(connector.SinkConfig{Name: "mk", Columns: cols, AppendOnly: true, Options: srcOpts("a/b", "qos", qos)})
		if err != nil || p.Guarantee != want || p.Why == "" {
			t.Fatalf("qos %s: %+v %v", qos, p, err)
		}
	}
	_, err := (SinkFactory{}).Validate(connector.SinkConfig{Name: "mk", Columns: cols, AppendOnly: true, Options: srcOpts("a/#")})
	if pgerror.GetCode(err) != pgcode.InvalidParameterValue {
		t.Fatalf("wildcard sink topic: %v", err)
	}
}

func TestBrokerDownAndWrongCredentials(t *testing.T) {
	opts := srcOpts("a/b")
	opts["server"] = "tcp://127.0.0.1:1"
	if _, err := (SourceFactory{}).Open(context.Background(), connector.SourceConfig{Name: "ms", Columns: cols, Options: opts}); pgerror.GetCode(err) != pgcode.SQLClientUnableToEstablishSQLConnection {
		t.Fatalf("broker down: %v", err)
	}
	// A private mosquitto with a password file.
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if out, err := exec.Command("mosquitto_passwd", "-c", "-b", pw, "u", "right").CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_passwd: %v %s", err, out)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	conf := filepath.Join(dir, "m.conf")
	text := fmt.Sprintf("listener %d 127.0.0.1\nallow_anonymous false\npassword_file %s\n", port, pw)
	if os.Getuid() == 0 {
		text += "user root\n" // else it drops to user mosquitto, who cannot read the test's directory
	}
	os.WriteFile(conf, []byte(text), 0o644)
	cmd := exec.Command("mosquitto", "-c", conf)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitPort(t, fmt.Sprintf("127.0.0.1:%d", port))
	opts = srcOpts("a/b", "username", "u", "password", "wrong")
	opts["server"] = fmt.Sprintf("tcp://127.0.0.1:%d", port)
	_, err := (SourceFactory{}).Open(context.Background(), connector.SourceConfig{Name: "ms", Columns: cols, Options: opts})
	if e := pgerror.Flatten(err); e == nil || e.Code != pgcode.InvalidPassword || strings.Contains(e.Message, "wrong") {
		t.Fatalf("wrong password: %v", err)
	}
	opts["password"] = "right"
	s := openSource(t, opts)
	sk := openSink(t, opts)
	ch, want := changes(0, 3)
	if err := sk.Write(context.Background(), 1, ch); err != nil {
		t.Fatal(err)
	}
	if got, err := readN(t, s, 3); err != nil || !slices.Equal(got, want) {
		t.Fatalf("with the right password: %v %v", got, err)
	}
}
