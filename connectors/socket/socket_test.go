package socket

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

var testCols = []types.Column{{Name: "id", Type: types.TInt8}, {Name: "v", Type: types.TText}}

func open(t *testing.T, kv ...string) *source {
	t.Helper()
	opts := map[string]string{"connector": "socket", "port": "0"}
	for i := 0; i+1 < len(kv); i += 2 {
		opts[kv[i]] = kv[i+1]
	}
	cfg := connector.SourceConfig{Name: "sock", Columns: testCols, Options: opts}
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

func dial(t *testing.T, s *source) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func send(t *testing.T, c net.Conn, data string) {
	t.Helper()
	if _, err := c.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
}

func rowString(row types.Row) string {
	var parts []string
	for i, c := range testCols {
		if row[i].IsNull() {
			parts = append(parts, "NULL")
		} else {
			parts = append(parts, types.FormatText(row[i], c.Type))
		}
	}
	return strings.Join(parts, "|")
}

// readN reads until n rows arrived, or fails after a deadline.
func readN(t *testing.T, s *source, n int) []string {
	t.Helper()
	var out []string
	for deadline := time.Now().Add(10 * time.Second); len(out) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("read %d of %d rows: %v", len(out), n, out)
		}
		b := types.NewBatch(10)
		k, err := s.Read(context.Background(), b, 10)
		if err != nil {
			t.Fatal(err)
		}
		if k != b.Len() || k > 10 {
			t.Fatalf("Read = %d with %d rows", k, b.Len())
		}
		for i, r := range b.Rows {
			if b.Diffs[i] != 1 {
				t.Fatalf("diff %d", b.Diffs[i])
			}
			out = append(out, rowString(r))
		}
	}
	return out
}

func TestTwoClients(t *testing.T) {
	s := open(t)
	a, b := dial(t, s), dial(t, s)
	var want []string
	for i := 0; i < 30; i++ {
		c := a
		if i%2 == 1 {
			c = b
		}
		send(t, c, fmt.Sprintf("{\"id\":%d,\"v\":\"x%d\"}\n", i, i))
		want = append(want, fmt.Sprintf("%d|x%d", i, i))
	}
	// A blank line is nothing; CRLF endings and a last line without a
	// newline (at the end of the connection) are records.
	send(t, a, "\r\n{\"id\":100}\r\n")
	send(t, b, `{"id":101,"v":"end"}`)
	b.Close()
	want = append(want, "100|NULL", "101|end")
	got := readN(t, s, len(want))
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
	// Idle reads return at once.
	for i := 0; i < 10; i++ {
		start := time.Now()
		if n, err := s.Read(context.Background(), types.NewBatch(10), 10); n != 0 || err != nil {
			t.Fatalf("idle Read = %d, %v", n, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("idle Read took %v", d)
		}
	}
}

func TestBadLines(t *testing.T) {
	lines := "{\"id\":1,\"v\":\"a\"}\n" +
		"{\"id\":\"x\"}\n" + // line 2: wrong type
		"{\"id\":2,\"v\":\"b\"}\n" +
		"{broken\n" + // line 4
		"{\"id\":3,\"v\":\"" + strings.Repeat("y", 100) + "\"}\n" + // line 5: too long
		"{\"id\":4,\"v\":\"\xff\"}\n" + // line 6: bad UTF-8
		"{\"id\":5}\n"
	for _, mode := range []string{"skip", "dead_letter"} {
		t.Run(mode, func(t *testing.T) {
			s := open(t, "on_error", mode, "max.message.bytes", "64")
			send(t, dial(t, s), lines)
			got := readN(t, s, 3)
			if want := []string{"1|a", "2|b", "5|NULL"}; !slices.Equal(got, want) {
				t.Fatalf("got %v want %v", got, want)
			}
			dead := s.TakeDeadLetters(nil)
			if len(dead) != 4 {
				t.Fatalf("dead letters %v", dead)
			}
			for i, want := range []struct {
				line  int64
				cause string
			}{{2, "column id: expected a number"}, {4, "invalid JSON"}, {5, "longer than max.message.bytes (64)"}, {6, "invalid UTF-8"}} {
				d := dead[i]
				if d.Topic != "socket" || d.Partition != 0 || d.Offset != want.line || !strings.Contains(d.Error, want.cause) || len(d.Raw) == 0 {
					t.Errorf("dead letter %d: %+v", i, d)
				}
			}
			if string(dead[1].Raw) != "{broken" || len(dead[2].Raw) != 64 {
				t.Errorf("raw %q %q", dead[1].Raw, dead[2].Raw)
			}
		})
	}
	t.Run("fail", func(t *testing.T) {
		s := open(t)
		send(t, dial(t, s), lines)
		var err error
		var got []string
		for deadline := time.Now().Add(10 * time.Second); err == nil && time.Now().Before(deadline); {
			b := types.NewBatch(10)
			_, err = s.Read(context.Background(), b, 10)
			for _, r := range b.Rows {
				got = append(got, rowString(r))
			}
		}
		if err == nil || pgerror.GetCode(err) != pgcode.InvalidTextRepresentation ||
			!strings.Contains(err.Error(), "topic socket partition 0 offset 2: column id: expected a number") {
			t.Fatalf("got %v", err)
		}
		if !slices.Equal(got, []string{"1|a"}) {
			t.Errorf("rows before the error: %v", got)
		}
	})
}

func TestCSVLines(t *testing.T) {
	s := open(t, "encode", "csv")
	send(t, dial(t, s), "1,a\n2,\"b,c\"\n3,\n")
	got := readN(t, s, 3)
	if want := []string{"1|a", "2|b,c", "3|NULL"}; !slices.Equal(got, want) {
		t.Fatalf("got %v", got)
	}
}

func TestNotReplayable(t *testing.T) {
	var f connector.SourceFactory = SourceFactory{}
	u, ok := f.(connector.Unreplayable)
	if !ok || !strings.Contains(u.Unreplayable(connector.SourceConfig{}), "cannot replay") {
		t.Fatal("the socket source must say it is not replayable")
	}
	s := open(t)
	if _, ok := any(s).(connector.Seekable); ok {
		t.Fatal("the socket source must not be Seekable")
	}
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		kv   []string
		code pgcode.Code
	}{
		{[]string{"port", ""}, pgcode.InvalidParameterValue},
		{[]string{"port", "70000"}, pgcode.InvalidParameterValue},
		{[]string{"on_error", "retry"}, pgcode.InvalidParameterValue},
		{[]string{"topic", "x"}, pgcode.InvalidParameterValue},
		{[]string{"format", "upsert"}, pgcode.FeatureNotSupported},
		{[]string{"encode", "avro"}, pgcode.FeatureNotSupported},
	} {
		opts := map[string]string{"connector": "socket", "port": "1"}
		opts[tc.kv[0]] = tc.kv[1]
		_, err := SourceFactory{}.Validate(connector.SourceConfig{Name: "s", Columns: testCols, Options: opts})
		if pgerror.GetCode(err) != tc.code {
			t.Errorf("%v: %v", tc.kv, err)
		}
	}
	// A port in use is a clear error at Open.
	s := open(t)
	_, port, _ := net.SplitHostPort(s.addr())
	_, err := SourceFactory{}.Open(context.Background(), connector.SourceConfig{Name: "s2", Columns: testCols,
		Options: map[string]string{"port": port}})
	if pgerror.GetCode(err) != pgcode.ConnectionException {
		t.Errorf("port in use: %v", err)
	}
}

// TestClose checks that Close ends the listener, the connections and
// every goroutine, even with a client blocked on a full buffer.
func TestClose(t *testing.T) {
	before := runtime.NumGoroutine()
	opts := map[string]string{"port": "0"}
	src, err := SourceFactory{}.Open(context.Background(), connector.SourceConfig{Name: "s", Columns: testCols, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	s := src.(*source)
	c, err := net.Dial("tcp", s.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Fill the chunk buffer: nobody reads.
	line := strings.Repeat(`{"id":1,"v":"x"}`+"\n", 1000)
	go func() {
		for i := 0; i < 100; i++ {
			if _, err := c.Write([]byte(line)); err != nil {
				return
			}
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); len(s.chunks) < cap(s.chunks); {
		if time.Now().After(deadline) {
			t.Fatal("the chunk buffer never filled")
		}
		time.Sleep(5 * time.Millisecond)
	}
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs")
	}
	if _, err := net.Dial("tcp", s.addr()); err == nil {
		t.Error("still listening after Close")
	}
	c.Close()
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines before, %d after Close", before, runtime.NumGoroutine())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
