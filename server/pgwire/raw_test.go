package pgwire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgproto3/v2"
	"github.com/jackc/pgx/v5"
)

// rawClient speaks the protocol message by message.
type rawClient struct {
	t  *testing.T
	nc net.Conn
	fe *pgproto3.Frontend
}

func dialRaw(t *testing.T, ts *testServer) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawClient{t: t, nc: nc, fe: pgproto3.NewFrontend(pgproto3.NewChunkReader(nc), nc)}
}

// startRaw dials and completes a startup, returning the startup messages.
func startRaw(t *testing.T, ts *testServer) (*rawClient, []string) {
	t.Helper()
	c := dialRaw(t, ts)
	c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber,
		Parameters: map[string]string{"user": "raw", "database": "db"}})
	return c, c.recvUntilReady()
}

func (c *rawClient) send(msgs ...pgproto3.FrontendMessage) {
	c.t.Helper()
	var buf []byte
	for _, m := range msgs {
		var err error
		if buf, err = m.Encode(buf); err != nil {
			c.t.Fatal(err)
		}
	}
	c.write(buf)
}

func (c *rawClient) write(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

func (c *rawClient) recv() string {
	c.t.Helper()
	m, err := c.fe.Receive()
	if err != nil {
		c.t.Fatalf("receive: %v", err)
	}
	return describe(m)
}

// expect receives len(want) messages and checks their descriptions
// (a want ending in "*" matches a prefix).
func (c *rawClient) expect(want ...string) {
	c.t.Helper()
	for i, w := range want {
		got := c.recv()
		if got != w && !(strings.HasSuffix(w, "*") && strings.HasPrefix(got, w[:len(w)-1])) {
			c.t.Fatalf("message %d: got %q, want %q", i, got, w)
		}
	}
}

func (c *rawClient) recvUntilReady() []string {
	c.t.Helper()
	var msgs []string
	for {
		m := c.recv()
		msgs = append(msgs, m)
		if strings.HasPrefix(m, "ReadyForQuery") {
			return msgs
		}
	}
}

// expectClosed checks that the server closed the connection.
func (c *rawClient) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	n, err := c.nc.Read(b[:])
	for err == nil && n > 0 {
		c.t.Fatalf("expected close, read %q", b[:n])
	}
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || strings.Contains(fmt.Sprint(err), "reset") {
		return
	}
	c.t.Fatalf("expected close, got %v", err)
}

func describe(m pgproto3.BackendMessage) string {
	switch m := m.(type) {
	case *pgproto3.AuthenticationOk:
		return "AuthenticationOk"
	case *pgproto3.ParameterStatus:
		return "ParameterStatus " + m.Name + "=" + m.Value
	case *pgproto3.BackendKeyData:
		return "BackendKeyData"
	case *pgproto3.ReadyForQuery:
		return "ReadyForQuery " + string(m.TxStatus)
	case *pgproto3.ParseComplete:
		return "ParseComplete"
	case *pgproto3.BindComplete:
		return "BindComplete"
	case *pgproto3.CloseComplete:
		return "CloseComplete"
	case *pgproto3.NoData:
		return "NoData"
	case *pgproto3.PortalSuspended:
		return "PortalSuspended"
	case *pgproto3.EmptyQueryResponse:
		return "EmptyQueryResponse"
	case *pgproto3.CommandComplete:
		return "CommandComplete " + string(m.CommandTag)
	case *pgproto3.ParameterDescription:
		return fmt.Sprint("ParameterDescription ", m.ParameterOIDs)
	case *pgproto3.RowDescription:
		var fs []string
		for _, f := range m.Fields {
			fs = append(fs, fmt.Sprintf("%s:%d:%d:%d:%d", f.Name, f.DataTypeOID, f.DataTypeSize, f.TypeModifier, f.Format))
		}
		return "RowDescription " + strings.Join(fs, ",")
	case *pgproto3.DataRow:
		var vs []string
		for _, v := range m.Values {
			if v == nil {
				vs = append(vs, "NULL")
			} else {
				vs = append(vs, fmt.Sprintf("%q", v))
			}
		}
		return "DataRow " + strings.Join(vs, ",")
	case *pgproto3.ErrorResponse:
		s := fmt.Sprintf("ErrorResponse %s %s %s", m.Severity, m.Code, m.Message)
		if m.Position > 0 {
			s += fmt.Sprintf(" @%d", m.Position)
		}
		return s
	case *pgproto3.NoticeResponse:
		return fmt.Sprintf("NoticeResponse %s %s %s", m.Severity, m.Code, m.Message)
	}
	return fmt.Sprintf("%T", m)
}

func TestRawStartup(t *testing.T) {
	ts := startServer(t, Options{}, false)
	c, msgs := startRaw(t, ts)
	want := []string{
		"AuthenticationOk",
		"ParameterStatus DateStyle=ISO, MDY",
		"ParameterStatus IntervalStyle=postgres",
		"ParameterStatus TimeZone=UTC",
		"ParameterStatus application_name=",
		"ParameterStatus client_encoding=UTF8",
		"ParameterStatus integer_datetimes=on",
		"ParameterStatus is_superuser=on",
		"ParameterStatus server_encoding=UTF8",
		"ParameterStatus server_version=15.0",
		"ParameterStatus session_authorization=raw",
		"ParameterStatus standard_conforming_strings=on",
		"BackendKeyData",
		"ReadyForQuery I",
	}
	if strings.Join(msgs, "\n") != strings.Join(want, "\n") {
		t.Fatalf("startup:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
	c.send(&pgproto3.Query{String: "SELECT 1"})
	c.expect("RowDescription ?column?:23:4:-1:0", `DataRow "1"`, "CommandComplete SELECT 1", "ReadyForQuery I")
	c.send(&pgproto3.Terminate{})
	c.expectClosed()
}

func TestRawStartupErrors(t *testing.T) {
	ts := startServer(t, Options{}, false)

	// No user.
	c := dialRaw(t, ts)
	c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"database": "x"}})
	c.expect("ErrorResponse FATAL 28000 no PostgreSQL user name specified in startup packet")
	c.expectClosed()

	// Protocol 2.0.
	c = dialRaw(t, ts)
	c.write([]byte{0, 0, 0, 9, 0, 2, 0, 0, 0})
	c.expect("ErrorResponse FATAL 0A000 unsupported frontend protocol 2.0: server supports 3.0 to 3.0")
	c.expectClosed()

	// Protocol 3.2 with a protocol option: NegotiateProtocolVersion, then on in 3.0.
	c = dialRaw(t, ts)
	var b []byte
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, 3<<16|2)
	for _, s := range []string{"user", "neg", "_pq_.frob", "1", ""} {
		b = append(append(b, s...), 0)
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)))
	c.write(b)
	want := []byte{'v', 0, 0, 0, 22, 0, 0, 0, 0, 0, 0, 0, 1}
	want = append(want, "_pq_.frob\x00"...)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c.nc, got); err != nil || string(got) != string(want) {
		t.Fatalf("NegotiateProtocolVersion: %q %v, want %q", got, err, want)
	}
	c.fe = pgproto3.NewFrontend(pgproto3.NewChunkReader(c.nc), c.nc)
	c.recvUntilReady()

	// Bad layout.
	c = dialRaw(t, ts)
	c.write([]byte{0, 0, 0, 12, 0, 3, 0, 0, 'u', 's', 'e', 'r'})
	c.expect("ErrorResponse FATAL 08P01 invalid startup packet layout: expected terminator as last byte")
	c.expectClosed()
}

func TestRawSSLRequest(t *testing.T) {
	ts := startServer(t, Options{}, false)
	for _, reqs := range [][]pgproto3.FrontendMessage{
		{&pgproto3.SSLRequest{}},
		{&pgproto3.GSSEncRequest{}, &pgproto3.SSLRequest{}},
	} {
		c := dialRaw(t, ts)
		for _, r := range reqs {
			c.send(r)
			var b [1]byte
			if _, err := io.ReadFull(c.nc, b[:]); err != nil || b[0] != 'N' {
				t.Fatalf("%T answered %q, %v", r, b, err)
			}
		}
		c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "u"}})
		c.recvUntilReady()
		c.send(&pgproto3.Query{String: "SELECT 'ok'"})
		c.expect("RowDescription*", `DataRow "ok"`, "CommandComplete SELECT 1", "ReadyForQuery I")
	}
}

func TestRawOversizedMessage(t *testing.T) {
	ts := startServer(t, Options{MaxMessageSize: 1024}, false)

	// A message of exactly the limit is fine.
	c, _ := startRaw(t, ts)
	c.send(&pgproto3.Query{String: "SELECT 1" + strings.Repeat(" ", 1024-4-9)})
	c.expect("RowDescription*", `DataRow "1"`, "CommandComplete SELECT 1", "ReadyForQuery I")

	for _, tc := range []struct {
		typ  byte
		len  uint32
		want string
	}{
		{'Q', 1025, "message too large"},
		{'Q', 0xffffffff, "message too large"},
		{'B', 0x7fffffff, "message too large"},
		{'S', 9000, "message too large"}, // Sync is never that long, but it is under the small-message limit... of 1024
		{'Q', 3, "invalid message length"},
		{'S', 0, "invalid message length"},
	} {
		c, _ := startRaw(t, ts)
		c.write(binary.BigEndian.AppendUint32([]byte{tc.typ}, tc.len))
		c.expect("ErrorResponse FATAL 08P01 " + tc.want)
		c.expectClosed()
	}

	// With the default limit, a small message type may still not be long.
	ts = startServer(t, Options{}, false)
	c, _ = startRaw(t, ts)
	c.write(binary.BigEndian.AppendUint32([]byte{'E'}, 1<<20))
	c.expect("ErrorResponse FATAL 08P01 message too large")
	c.expectClosed()
}

// A large declared length is only allocated as its bytes arrive.
func TestLargeMessageNotPreallocated(t *testing.T) {
	srv := NewServer(newFakeHandler(), Options{})
	if srv.opts.MaxMessageSize != 64<<20 {
		t.Fatalf("default MaxMessageSize %d", srv.opts.MaxMessageSize)
	}
	msg := binary.BigEndian.AppendUint32([]byte{'Q'}, 60<<20)
	msg = append(msg, "SELECT 1"...)
	c := newConn(srv, &memConn{r: bytes.NewReader(msg)}, context.Background())
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, err := c.readMessage()
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("readMessage: %v", err)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 8<<20 {
		t.Fatalf("allocated %d bytes for a truncated 60 MiB message", d)
	}
}

func TestRawGarbage(t *testing.T) {
	ts := startServer(t, Options{}, false)
	rng := rand.New(rand.NewSource(1))
	for i := range 20 {
		c := dialRaw(t, ts)
		b := make([]byte, 1+rng.Intn(2000))
		rng.Read(b)
		if i%2 == 0 {
			b[0], b[1] = 0, 0 // a plausible length
		}
		c.nc.Write(b)
		c.nc.(*net.TCPConn).CloseWrite()
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadAll(c.nc); err != nil && !strings.Contains(err.Error(), "reset") {
			t.Fatalf("garbage %d: %v", i, err)
		}
	}

	for _, tc := range []struct {
		name string
		msg  []byte
		want string
	}{
		{"unknown type", []byte{'z', 0, 0, 0, 4}, "ErrorResponse FATAL 08P01 invalid frontend message type 122"},
		{"password after startup", []byte{'p', 0, 0, 0, 4}, "ErrorResponse FATAL 08P01 invalid frontend message type 112"},
		{"truncated bind", []byte{'B', 0, 0, 0, 6, 0, 0}, "ErrorResponse FATAL 08P01 invalid message format"},
		{"negative param length", []byte{'B', 0, 0, 0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfb, 0, 0, 0, 0},
			"ErrorResponse FATAL 08P01 invalid message format"},
		{"sync with body", []byte{'S', 0, 0, 0, 5, 0}, "ErrorResponse FATAL 08P01 invalid message format"},
		{"query without terminator", []byte{'Q', 0, 0, 0, 5, 'x'}, "ErrorResponse FATAL 08P01 invalid message format"},
		{"bad describe", []byte{'D', 0, 0, 0, 6, 'X', 0}, "ErrorResponse FATAL 08P01 invalid DESCRIBE message subtype 88"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := startRaw(t, ts)
			c.write(tc.msg)
			c.expect(tc.want)
			c.expectClosed()
		})
	}

	// A NUL inside a query string: ERROR, as PostgreSQL (the message is
	// framed correctly), and the session goes on; in the extended protocol
	// after the next Sync.
	t.Run("NUL in query", func(t *testing.T) {
		c, _ := startRaw(t, ts)
		c.write([]byte("Q\x00\x00\x00\x11SELECT 'a\x00b'\x00"))
		c.expect("ErrorResponse ERROR 08P01 invalid message format", "ReadyForQuery I")
		c.write([]byte("P\x00\x00\x00\x14\x00SELECT 'a\x00b'\x00\x00\x00"))
		c.send(&pgproto3.Sync{})
		c.expect("ErrorResponse ERROR 08P01 invalid message format", "ReadyForQuery I")
		c.send(&pgproto3.Query{String: "SELECT 1"})
		c.expect("RowDescription ?column?:23:4:-1:0", `DataRow "1"`, "CommandComplete SELECT 1", "ReadyForQuery I")
	})

	// The server still serves.
	conn, err := pgx.Connect(testCtx(t), ts.connString("db"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var one int
	if err := conn.QueryRow(testCtx(t), "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
}

func TestRawTerminate(t *testing.T) {
	ts := startServer(t, Options{}, false)
	c, _ := startRaw(t, ts)
	c.send(&pgproto3.Terminate{})
	c.expectClosed()
	deadline := time.Now().Add(5 * time.Second)
	for ts.h.closes.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("session not closed")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRawSimpleQuery(t *testing.T) {
	ts := startServer(t, Options{}, false)
	c, _ := startRaw(t, ts)
	c.send(&pgproto3.Query{String: " ;; "})
	c.expect("EmptyQueryResponse", "ReadyForQuery I")
	c.send(&pgproto3.Query{String: "SELECT 1 AS a; NOTICE hi; SET TimeZone = 'Asia/Tokyo'; SELECT nosuchcol; SELECT 2"})
	c.expect("RowDescription a:23:4:-1:0", `DataRow "1"`, "CommandComplete SELECT 1",
		"NoticeResponse NOTICE 00000 hi", "CommandComplete DO",
		"CommandComplete SET",
		"ParameterStatus TimeZone=Asia/Tokyo",
		"ErrorResponse ERROR 42703 column \"nosuchcol\" does not exist @63",
		"ReadyForQuery I")
	c.send(&pgproto3.Query{String: "BEGIN"})
	c.expect("CommandComplete BEGIN", "ReadyForQuery T")
	c.send(&pgproto3.Query{String: "COMMIT"})
	c.expect("CommandComplete COMMIT", "ReadyForQuery I")
	c.send(&pgproto3.FunctionCall{Function: 1})
	c.expect("ErrorResponse ERROR 0A000 function call protocol is not supported", "ReadyForQuery I")
	// Copy messages outside COPY are ignored.
	c.send(&pgproto3.CopyData{Data: []byte("x")}, &pgproto3.CopyDone{}, &pgproto3.Query{String: "SELECT 3"})
	c.expect("RowDescription*", `DataRow "3"`, "CommandComplete SELECT 1", "ReadyForQuery I")
	// A simple query drops the unnamed statement.
	c.send(&pgproto3.Parse{Query: "SELECT 4"}, &pgproto3.Sync{}, &pgproto3.Query{String: "SELECT 5"},
		&pgproto3.Bind{}, &pgproto3.Sync{})
	c.expect("ParseComplete", "ReadyForQuery I", "RowDescription*", `DataRow "5"`, "CommandComplete SELECT 1", "ReadyForQuery I",
		"ErrorResponse ERROR 26000 unnamed prepared statement does not exist", "ReadyForQuery I")
}

func TestRawExtended(t *testing.T) {
	ts := startServer(t, Options{}, false)
	c, _ := startRaw(t, ts)

	// Named statement, Describe statement and portal, binary results.
	c.send(
		&pgproto3.Parse{Name: "s", Query: "SELECT $1::bigint AS a, $2 AS b", ParameterOIDs: []uint32{0, 25}},
		&pgproto3.Describe{ObjectType: 'S', Name: "s"},
		&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s", ParameterFormatCodes: []int16{0},
			Parameters: [][]byte{[]byte("7"), nil}, ResultFormatCodes: []int16{1, 0}},
		&pgproto3.Describe{ObjectType: 'P', Name: "p"},
		&pgproto3.Execute{Portal: "p"},
		&pgproto3.Sync{},
	)
	c.expect("ParseComplete",
		"ParameterDescription [20 25]",
		"RowDescription a:20:8:-1:0,b:25:-1:-1:0",
		"BindComplete",
		"RowDescription a:20:8:-1:1,b:25:-1:-1:0",
		`DataRow "\x00\x00\x00\x00\x00\x00\x00\a",NULL`,
		"CommandComplete SELECT 1",
		"ReadyForQuery I")

	// Statements without rows: NoData.
	c.send(&pgproto3.Parse{Name: "ins", Query: "INSERT INTO t VALUES (1)"},
		&pgproto3.Describe{ObjectType: 'S', Name: "ins"},
		&pgproto3.Bind{PreparedStatement: "ins"},
		&pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Execute{},
		&pgproto3.Execute{},
		&pgproto3.Sync{})
	c.expect("ParseComplete", "ParameterDescription []", "NoData", "BindComplete", "NoData", "CommandComplete INSERT 0 1",
		"ErrorResponse ERROR 55000 portal \"\" cannot be run", "ReadyForQuery I")

	// Duplicate statement name; an error skips everything up to Sync.
	c.send(&pgproto3.Parse{Name: "s", Query: "SELECT 1"},
		&pgproto3.Bind{PreparedStatement: "s", Parameters: [][]byte{[]byte("1"), []byte("x")}},
		&pgproto3.Execute{},
		&pgproto3.Sync{},
		&pgproto3.Bind{PreparedStatement: "s", Parameters: [][]byte{[]byte("1"), []byte("x")}},
		&pgproto3.Execute{},
		&pgproto3.Sync{})
	c.expect("ErrorResponse ERROR 42P05 prepared statement \"s\" already exists", "ReadyForQuery I",
		"BindComplete", `DataRow "1","x"`, "CommandComplete SELECT 1", "ReadyForQuery I")

	// Row limits: a suspended portal resumes on the next Execute, even across Syncs in a transaction.
	c.send(&pgproto3.Query{String: "BEGIN"})
	c.expect("CommandComplete BEGIN", "ReadyForQuery T")
	c.send(&pgproto3.Parse{Query: "SELECT generate_series(1, 5)"},
		&pgproto3.Bind{DestinationPortal: "cur"},
		&pgproto3.Execute{Portal: "cur", MaxRows: 2},
		&pgproto3.Execute{Portal: "cur", MaxRows: 2},
		&pgproto3.Flush{})
	c.expect("ParseComplete", "BindComplete", `DataRow "1"`, `DataRow "2"`, "PortalSuspended", `DataRow "3"`, `DataRow "4"`, "PortalSuspended")
	c.send(&pgproto3.Sync{})
	c.expect("ReadyForQuery T")
	c.send(&pgproto3.Execute{Portal: "cur", MaxRows: 2}, &pgproto3.Execute{Portal: "cur", MaxRows: 2}, &pgproto3.Sync{})
	c.expect(`DataRow "5"`, "CommandComplete SELECT 1", "CommandComplete SELECT 0", "ReadyForQuery T")
	c.send(&pgproto3.Bind{DestinationPortal: "cur"}, &pgproto3.Sync{})
	c.expect("ErrorResponse ERROR 42P03 portal \"cur\" already exists", "ReadyForQuery T")
	c.send(&pgproto3.Query{String: "COMMIT"})
	c.expect("CommandComplete COMMIT", "ReadyForQuery I")
	// Portals end with the transaction.
	c.send(&pgproto3.Execute{Portal: "cur"}, &pgproto3.Sync{})
	c.expect("ErrorResponse ERROR 34000 portal \"cur\" does not exist", "ReadyForQuery I")

	// A limit equal to the row count completes; a limit of 0 means all.
	c.send(&pgproto3.Parse{Query: "SELECT generate_series(1, 5)"},
		&pgproto3.Bind{},
		&pgproto3.Execute{MaxRows: 5},
		&pgproto3.Bind{},
		&pgproto3.Execute{MaxRows: 4},
		&pgproto3.Execute{},
		&pgproto3.Sync{})
	c.expect("ParseComplete", "BindComplete", `DataRow "1"`, `DataRow "2"`, `DataRow "3"`, `DataRow "4"`, `DataRow "5"`, "CommandComplete SELECT 5",
		"BindComplete", `DataRow "1"`, `DataRow "2"`, `DataRow "3"`, `DataRow "4"`, "PortalSuspended", `DataRow "5"`, "CommandComplete SELECT 1",
		"ReadyForQuery I")

	// Re-parsing the unnamed statement replaces it; Close; Close of a missing object is fine.
	c.send(&pgproto3.Parse{Query: "SELECT 'replaced'"},
		&pgproto3.Bind{},
		&pgproto3.Execute{},
		&pgproto3.Close{ObjectType: 'S', Name: "s"},
		&pgproto3.Close{ObjectType: 'P', Name: ""},
		&pgproto3.Close{ObjectType: 'S', Name: "nope"},
		&pgproto3.Execute{},
		&pgproto3.Sync{})
	c.expect("ParseComplete", "BindComplete", `DataRow "replaced"`, "CommandComplete SELECT 1",
		"CloseComplete", "CloseComplete", "CloseComplete",
		"ErrorResponse ERROR 34000 unnamed portal does not exist", "ReadyForQuery I")
	c.send(&pgproto3.Describe{ObjectType: 'S', Name: "s"}, &pgproto3.Sync{})
	c.expect("ErrorResponse ERROR 26000 prepared statement \"s\" does not exist", "ReadyForQuery I")

	// Empty statements.
	c.send(&pgproto3.Parse{Query: " ; ", ParameterOIDs: []uint32{23}},
		&pgproto3.Describe{ObjectType: 'S'},
		&pgproto3.Bind{Parameters: [][]byte{[]byte("1")}},
		&pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Execute{},
		&pgproto3.Sync{})
	c.expect("ParseComplete", "ParameterDescription [23]", "NoData", "BindComplete", "NoData", "EmptyQueryResponse", "ReadyForQuery I")

	// Parameter count and format count mismatches.
	c.send(&pgproto3.Parse{Name: "two", Query: "SELECT $1::int, $2::int"},
		&pgproto3.Bind{PreparedStatement: "two", Parameters: [][]byte{[]byte("1")}},
		&pgproto3.Sync{},
		&pgproto3.Bind{PreparedStatement: "two", ParameterFormatCodes: []int16{0, 0, 0}, Parameters: [][]byte{[]byte("1"), []byte("2")}},
		&pgproto3.Sync{},
		&pgproto3.Bind{PreparedStatement: "two", ParameterFormatCodes: []int16{0, 1}, Parameters: [][]byte{[]byte("1"), {0, 0, 0, 2}}},
		&pgproto3.Execute{},
		&pgproto3.Sync{})
	c.expect("ParseComplete",
		"ErrorResponse ERROR 08P01 bind message supplies 1 parameters, but prepared statement \"two\" requires 2", "ReadyForQuery I",
		"ErrorResponse ERROR 08P01 bind message has 3 parameter formats but 2 parameters", "ReadyForQuery I",
		"BindComplete", `DataRow "1","2"`, "CommandComplete SELECT 1", "ReadyForQuery I")

	// An execution error discards the rest up to Sync; Terminate works while skipping.
	c.send(&pgproto3.Parse{Query: "SELECT nosuchcol"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	c.expect("ErrorResponse ERROR 42703 column \"nosuchcol\" does not exist @8", "ReadyForQuery I")
	c.send(&pgproto3.Bind{PreparedStatement: "missing"}, &pgproto3.Query{String: "SELECT 1"}, &pgproto3.Terminate{})
	c.expect("ErrorResponse ERROR 26000 prepared statement \"missing\" does not exist")
	c.expectClosed()
}

func TestRawCancel(t *testing.T) {
	ts := startServer(t, Options{}, false)
	c, msgs := startRaw(t, ts)
	_ = msgs
	// Find the backend key.
	c2 := dialRaw(t, ts)
	c2.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "u"}})
	var pid, secret uint32
	for {
		m, err := c2.fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if k, ok := m.(*pgproto3.BackendKeyData); ok {
			pid, secret = k.ProcessID, k.SecretKey
		}
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	cancel := func(pid, secret uint32) {
		cc := dialRaw(t, ts)
		cc.send(&pgproto3.CancelRequest{ProcessID: pid, SecretKey: secret})
		cc.expectClosed()
	}
	// Nothing is running: a cancel does nothing.
	cancel(pid, secret)
	c2.send(&pgproto3.Query{String: "SELECT pg_sleep_forever()"})
	<-ts.h.sleeping
	cancel(pid, secret+1) // wrong secret
	cancel(pid+1, secret) // wrong pid
	c.send(&pgproto3.Query{String: "SELECT 1"})
	c.expect("RowDescription*", `DataRow "1"`, "CommandComplete SELECT 1", "ReadyForQuery I")
	cancel(pid, secret)
	c2.expect("RowDescription*", "ErrorResponse ERROR 57014 canceling statement due to user request", "ReadyForQuery I")
	c2.send(&pgproto3.Query{String: "SELECT 2"})
	c2.expect("RowDescription*", `DataRow "2"`, "CommandComplete SELECT 1", "ReadyForQuery I")
}

func TestRawPanic(t *testing.T) {
	ts := startServer(t, Options{}, true)
	c, _ := startRaw(t, ts)
	c.send(&pgproto3.Query{String: "PANIC"})
	c.expect("ErrorResponse FATAL XX000 internal error")
	c.expectClosed()
	if !ts.logged("panic serving") || !ts.logged("fake engine panic") {
		t.Errorf("panic not logged: %v", ts.logs)
	}
	c, _ = startRaw(t, ts)
	c.send(&pgproto3.Query{String: "SELECT 1"})
	c.expect("RowDescription*", `DataRow "1"`, "CommandComplete SELECT 1", "ReadyForQuery I")
}

func TestShutdown(t *testing.T) {
	h := newFakeHandler()
	srv := NewServer(h, Options{Logf: t.Logf})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	ts := &testServer{h: h, addr: ln.Addr().String()}

	idle, _ := startRaw(t, ts)
	busy, _ := startRaw(t, ts)
	busy.send(&pgproto3.Query{String: "SELECT pg_sleep_forever()"})
	<-h.sleeping
	half := dialRaw(t, ts) // never sends its startup packet
	half.write([]byte{0, 0})
	time.Sleep(10 * time.Millisecond)

	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("shutdown took %v", d)
	}
	idle.expect("ErrorResponse FATAL 57P01 terminating connection due to administrator command")
	idle.expectClosed()
	busy.expect("RowDescription*", "ErrorResponse FATAL 57P01 terminating connection due to administrator command")
	busy.expectClosed()
	half.expectClosed()
	if c, n := h.connects.Load(), h.closes.Load(); c != 2 || n != 2 {
		t.Errorf("%d sessions connected, %d closed", c, n)
	}
	if _, err := net.Dial("tcp", ts.addr); err == nil {
		t.Errorf("listener still open")
	}
}

func TestListenerClosed(t *testing.T) {
	srv := NewServer(newFakeHandler(), Options{Logf: t.Logf})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), ln) }()
	ts := &testServer{addr: ln.Addr().String()}
	c, _ := startRaw(t, ts)
	ln.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
	c.expect("ErrorResponse FATAL 57P01*")
	c.expectClosed()
}

func TestRawFlushDuringStatement(t *testing.T) {
	ts := startServer(t, Options{}, false)
	c := dialRaw(t, ts)
	c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "u"}})
	var pid, secret uint32
	for {
		m, err := c.fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if k, ok := m.(*pgproto3.BackendKeyData); ok {
			pid, secret = k.ProcessID, k.SecretKey
		}
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	// The row arrives while the statement is still running.
	c.send(&pgproto3.Parse{Query: "SELECT stream_forever()"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	c.expect("ParseComplete", "BindComplete", `DataRow "first"`)
	cc := dialRaw(t, ts)
	cc.send(&pgproto3.CancelRequest{ProcessID: pid, SecretKey: secret})
	cc.expectClosed()
	c.expect("ErrorResponse ERROR 57014 canceling statement due to user request", "ReadyForQuery I")
}
