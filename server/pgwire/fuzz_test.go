package pgwire

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgproto3/v2"
)

// memConn is a net.Conn whose client sends a fixed byte stream and then
// hangs up; what the server writes is kept.
type memConn struct {
	r io.Reader
	w bytes.Buffer
}

func (c *memConn) Read(b []byte) (int, error)       { return c.r.Read(b) }
func (c *memConn) Write(b []byte) (int, error)      { return c.w.Write(b) }
func (c *memConn) Close() error                     { return nil }
func (c *memConn) LocalAddr() net.Addr              { return nil }
func (c *memConn) RemoteAddr() net.Addr             { return nil }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

func encodeMsgs(tb testing.TB, msgs ...pgproto3.FrontendMessage) []byte {
	var b []byte
	for _, m := range msgs {
		var err error
		if b, err = m.Encode(b); err != nil {
			tb.Fatal(err)
		}
	}
	return b
}

// FuzzConn feeds random bytes as a client's message stream after a valid
// startup. The server must not panic (even a recovered one), hang, or write
// a malformed message.
func FuzzConn(f *testing.F) {
	for _, seed := range [][]pgproto3.FrontendMessage{
		{&pgproto3.Query{String: "SELECT 1"}},
		{&pgproto3.Query{String: "SELECT 1; SELECT * FROM things; NOTICE x; SET a = 'b'; SELECT nosuchcol"}, &pgproto3.Terminate{}},
		{&pgproto3.Query{String: " ; "}, &pgproto3.Query{String: "BEGIN"}, &pgproto3.Query{String: "COMMIT"}},
		{
			&pgproto3.Parse{Name: "s", Query: "SELECT $1::bigint, $2::text, $3", ParameterOIDs: []uint32{0, 25, 16}},
			&pgproto3.Describe{ObjectType: 'S', Name: "s"},
			&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s", ParameterFormatCodes: []int16{1, 0, 1},
				Parameters: [][]byte{{0, 0, 0, 0, 0, 0, 0, 1}, []byte("x"), {1}}, ResultFormatCodes: []int16{1}},
			&pgproto3.Describe{ObjectType: 'P', Name: "p"},
			&pgproto3.Execute{Portal: "p"},
			&pgproto3.Sync{},
		},
		{
			&pgproto3.Parse{Query: "SELECT generate_series(1, 10)"},
			&pgproto3.Bind{DestinationPortal: "c"},
			&pgproto3.Execute{Portal: "c", MaxRows: 3},
			&pgproto3.Flush{},
			&pgproto3.Execute{Portal: "c", MaxRows: 3},
			&pgproto3.Close{ObjectType: 'P', Name: "c"},
			&pgproto3.Close{ObjectType: 'S'},
			&pgproto3.Sync{},
		},
		{
			&pgproto3.Parse{Query: "SELECT nosuchcol"},
			&pgproto3.Bind{},
			&pgproto3.Execute{},
			&pgproto3.Sync{},
			&pgproto3.FunctionCall{Function: 1},
			&pgproto3.CopyData{Data: []byte("x")},
		},
	} {
		f.Add(encodeMsgs(f, seed...))
	}
	f.Add([]byte{'Q', 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{'B', 0, 0, 0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfb, 0, 0, 0, 0})

	startup := encodeMsgs(f, &pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber,
		Parameters: map[string]string{"user": "fuzz", "database": "db"}})

	f.Fuzz(func(t *testing.T, data []byte) {
		h := newFakeHandler()
		h.fuzzing = true
		var panics atomic.Int32
		srv := NewServer(h, Options{MaxMessageSize: 1 << 20, Logf: func(format string, args ...any) {
			if strings.Contains(format, "panic") {
				panics.Add(1)
				t.Logf(format, args...)
			}
		}})
		nc := &memConn{r: io.MultiReader(bytes.NewReader(startup), bytes.NewReader(data))}
		c := newConn(srv, nc, context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.serve()
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("connection did not finish")
		}
		if panics.Load() > 0 {
			t.Fatal("server panicked")
		}
		if h.connects.Load() != h.closes.Load() {
			t.Fatal("session not closed")
		}
		// Everything the server wrote is well-formed.
		out := nc.w.Bytes()
		for len(out) > 0 {
			if len(out) < 5 {
				t.Fatalf("server wrote a truncated message: %q", out)
			}
			n := 1 + int(binary.BigEndian.Uint32(out[1:]))
			if n < 5 || n > len(out) {
				t.Fatalf("server wrote a bad message length: %q", out)
			}
			fe := pgproto3.NewFrontend(pgproto3.NewChunkReader(bytes.NewReader(out[:n])), io.Discard)
			if _, err := fe.Receive(); err != nil {
				t.Fatalf("server wrote a bad message %q: %v", out[:n], err)
			}
			out = out[n:]
		}
	})
}
