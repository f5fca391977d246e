package tests

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// rawConn is a hand-driven protocol connection for the wire phases: the
// battery writes any bytes it likes and checks every message the server
// sends back.
type rawConn struct {
	nc       net.Conn
	br       *bufio.Reader
	pid, key uint32
}

type rawMsg struct {
	typ  byte
	body []byte
}

// code returns the SQLSTATE of an ErrorResponse ("" if there is none).
func (m rawMsg) code() string {
	return errField(m.body, 'C')
}

func errField(body []byte, f byte) string {
	for len(body) > 0 && body[0] != 0 {
		t := body[0]
		end := 1
		for end < len(body) && body[end] != 0 {
			end++
		}
		if t == f {
			return string(body[1:end])
		}
		if end >= len(body) {
			break
		}
		body = body[end+1:]
	}
	return ""
}

func rawDial(addr string) (*rawConn, error) {
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	return &rawConn{nc: nc, br: bufio.NewReaderSize(nc, 4096)}, nil
}

func encode(msgs ...pgproto3.FrontendMessage) []byte {
	var b []byte
	for _, m := range msgs {
		var err error
		if b, err = m.Encode(b); err != nil {
			panic(err)
		}
	}
	return b
}

func startupBytes() []byte {
	return encode(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber,
		Parameters: map[string]string{"user": "sluice", "database": "sluice"}})
}

// startup logs in and reads up to the first ReadyForQuery, keeping the
// BackendKeyData.
func (c *rawConn) startup() error {
	if _, err := c.nc.Write(startupBytes()); err != nil {
		return err
	}
	msgs, err := c.readUntilReady(10 * time.Second)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		switch m.typ {
		case 'K':
			if len(m.body) >= 8 {
				c.pid, c.key = binary.BigEndian.Uint32(m.body), binary.BigEndian.Uint32(m.body[4:])
			}
		case 'E':
			return fmt.Errorf("startup: %s %s", m.code(), errField(m.body, 'M'))
		}
	}
	return nil
}

// errMalformed marks a message from the server that is not well formed.
var errMalformed = errors.New("server sent a malformed message")

// read reads one server message before the deadline.
func (c *rawConn) read(deadline time.Time) (rawMsg, error) {
	_ = c.nc.SetReadDeadline(deadline)
	var hdr [5]byte
	if _, err := io.ReadFull(c.br, hdr[:]); err != nil {
		return rawMsg{}, err
	}
	n := int(binary.BigEndian.Uint32(hdr[1:]))
	if n < 4 || n > 64<<20 || !strings.ContainsRune("123ACDEGHIKNRSTVWZcdnstv", rune(hdr[0])) {
		return rawMsg{}, fmt.Errorf("%w: type %q length %d", errMalformed, hdr[0], n)
	}
	body := make([]byte, n-4)
	if _, err := io.ReadFull(c.br, body); err != nil {
		return rawMsg{}, err
	}
	m := rawMsg{typ: hdr[0], body: body}
	if m.typ == 'E' && len(m.code()) != 5 {
		return m, fmt.Errorf("%w: ErrorResponse without a SQLSTATE: %q", errMalformed, body)
	}
	return m, nil
}

func (c *rawConn) readUntilReady(timeout time.Duration) ([]rawMsg, error) {
	deadline := time.Now().Add(timeout)
	var msgs []rawMsg
	for {
		m, err := c.read(deadline)
		if err != nil {
			return msgs, err
		}
		msgs = append(msgs, m)
		if m.typ == 'Z' {
			return msgs, nil
		}
	}
}

// drain reads until the server closes the connection, for at most timeout;
// it returns what was read and an error if the server hung or wrote a
// malformed message.
func (c *rawConn) drain(timeout time.Duration) ([]rawMsg, error) {
	deadline := time.Now().Add(timeout)
	var msgs []rawMsg
	for {
		m, err := c.read(deadline)
		switch {
		case err == nil:
			msgs = append(msgs, m)
			continue
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
			return msgs, nil
		case errors.Is(err, errMalformed):
			return msgs, err
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return msgs, fmt.Errorf("the server neither answered nor closed within %v", timeout)
		}
		return msgs, nil // connection reset: closed
	}
}

func (c *rawConn) closeWrite() {
	if tc, ok := c.nc.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

func codesOf(msgs []rawMsg) []string {
	var out []string
	for _, m := range msgs {
		if m.typ == 'E' {
			out = append(out, m.code())
		}
	}
	return out
}

// ---- wire garbage ----

// wireCase sends bytes after the startup (or instead of it) and says what
// the server must answer.
type wireCase struct {
	name    string
	startup bool   // log in first
	send    []byte // then send this
	// eof closes the client's write side after send; otherwise the server
	// must answer and close on its own.
	eof bool
	// codes the server must answer with, in order (a prefix of what it
	// sent); nil: any, as long as it is well formed.
	codes []string
}

func wireCases(rng *rand.Rand) []wireCase {
	q := func(s string) []byte { return encode(&pgproto3.Query{String: s}) }
	hdr := func(typ byte, n uint32, rest []byte) []byte {
		b := []byte{typ, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[1:], n)
		return append(b, rest...)
	}
	random := func(n int) []byte {
		b := make([]byte, n)
		rng.Read(b)
		return b
	}
	parse := encode(&pgproto3.Parse{Name: "s", Query: "SELECT $1::int + $2::int"})
	bind := func(params ...[]byte) []byte {
		return encode(&pgproto3.Bind{PreparedStatement: "s", Parameters: params})
	}
	sync := encode(&pgproto3.Sync{})
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	sslReq := []byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}
	startup31 := startupBytes()
	binary.BigEndian.PutUint32(startup31[4:], 3<<16|1)
	startup20 := startupBytes()
	binary.BigEndian.PutUint32(startup20[4:], 2<<16)
	manyParams := map[string]string{"user": "sluice", "database": "sluice"}
	for i := 0; i < 10_000; i++ {
		manyParams[fmt.Sprintf("p%d", i)] = "v"
	}
	return []wireCase{
		{name: "random-before-startup", send: random(512), eof: true},
		{name: "random-after-startup", startup: true, send: random(4096), eof: true},
		{name: "http-request", send: []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), eof: true},
		{name: "startup-length-huge", send: []byte{0x7f, 0xff, 0xff, 0xff, 0, 3, 0, 0}},
		{name: "startup-length-short", send: []byte{0, 0, 0, 4}},
		{name: "startup-protocol-2", send: startup20, codes: []string{"0A000"}},
		{name: "startup-protocol-3.1", send: startup31, eof: true},
		{name: "startup-no-user", send: encode(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber,
			Parameters: map[string]string{"database": "sluice"}}), codes: []string{"28000"}},
		{name: "startup-10000-params", send: encode(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber,
			Parameters: manyParams}), eof: true},
		{name: "ssl-request-twice", send: append(append([]byte{}, sslReq...), sslReq...), eof: true},
		{name: "cancel-request-short", send: []byte{0, 0, 0, 12, 0x04, 0xd2, 0x16, 0x2e, 0, 0, 0, 1}, eof: true},
		{name: "query-length-huge", startup: true, send: hdr('Q', 0x7fffffff, []byte("SELECT 1")), codes: []string{"08P01"}},
		{name: "query-length-negative", startup: true, send: hdr('Q', 0xfffffff0, []byte("SELECT 1")), codes: []string{"08P01"}},
		{name: "query-length-short", startup: true, send: hdr('Q', 3, nil), codes: []string{"08P01"}},
		{name: "query-length-plus-8", startup: true, send: cat(hdr('Q', 4+9+8, []byte("SELECT 1\x00")), q("SELECT 1")), eof: true},
		{name: "query-length-minus-4", startup: true, send: cat(hdr('Q', 4+9-4, []byte("SELECT 1\x00")), q("SELECT 1")), eof: true},
		{name: "query-no-terminator", startup: true, send: hdr('Q', 4+8, []byte("SELECT 1")), eof: true, codes: []string{"08P01"}},
		{name: "unknown-type", startup: true, send: hdr('y', 4, nil), codes: []string{"08P01"}},
		{name: "truncated-parse", startup: true, send: parse[:len(parse)/2], eof: true},
		{name: "truncated-header", startup: true, send: []byte{'Q', 0, 0}, eof: true},
		{name: "bind-too-few", startup: true, send: cat(parse, bind([]byte("1")), sync, q("SELECT 7")), eof: true,
			codes: []string{"08P01"}},
		{name: "bind-too-many", startup: true, send: cat(parse, bind([]byte("1"), []byte("2"), []byte("3")), sync, q("SELECT 7")), eof: true,
			codes: []string{"08P01"}},
		{name: "bind-format-counts", startup: true, send: cat(parse, encode(&pgproto3.Bind{PreparedStatement: "s",
			ParameterFormatCodes: []int16{0, 0, 0}, Parameters: [][]byte{[]byte("1"), []byte("2")}}), sync), eof: true, codes: []string{"08P01"}},
		{name: "bind-binary-garbage", startup: true, send: cat(parse, encode(&pgproto3.Bind{PreparedStatement: "s",
			ParameterFormatCodes: []int16{1}, Parameters: [][]byte{{1, 2, 3}, {0, 0, 0, 1}}}), sync), eof: true, codes: []string{"22P03"}},
		{name: "bind-unknown-statement", startup: true, send: cat(encode(&pgproto3.Bind{PreparedStatement: "nope"}), sync), eof: true,
			codes: []string{"26000"}},
		{name: "execute-before-bind", startup: true, send: cat(encode(&pgproto3.Execute{Portal: "nope"}), sync), eof: true,
			codes: []string{"34000"}},
		{name: "describe-unknown", startup: true, send: cat(encode(&pgproto3.Describe{ObjectType: 'S', Name: "nope"}), sync), eof: true,
			codes: []string{"26000"}},
		{name: "describe-bad-kind", startup: true, send: cat(encode(&pgproto3.Describe{ObjectType: 'X', Name: "nope"}), sync), eof: true},
		{name: "startup-again", startup: true, send: startupBytes(), eof: true},
		{name: "copy-data-outside-copy", startup: true, send: cat(encode(&pgproto3.CopyData{Data: []byte("1\n")}, &pgproto3.CopyDone{}), q("SELECT 1")), eof: true},
		{name: "function-call", startup: true, send: cat(encode(&pgproto3.FunctionCall{Function: 1}), q("SELECT 1")), eof: true},
		{name: "parse-10000-params", startup: true, send: cat(encode(&pgproto3.Parse{Query: "SELECT 1", ParameterOIDs: make([]uint32, 10000)}), sync), eof: true},
		{name: "sync-flood", startup: true, send: []byte(strings.Repeat(string(sync), 10000)), eof: true},
	}
}

// mutatedExchange returns a valid exchange with some bytes changed: a byte
// flipped, a length field rewritten, a message cut short or repeated.
func mutatedExchange(rng *rand.Rand) []byte {
	exchanges := [][]pgproto3.FrontendMessage{
		{&pgproto3.Query{String: "SELECT id, v FROM t ORDER BY id"}},
		{&pgproto3.Parse{Name: "p", Query: "SELECT $1::int + 1, $2::text"}, &pgproto3.Describe{ObjectType: 'S', Name: "p"},
			&pgproto3.Bind{PreparedStatement: "p", ParameterFormatCodes: []int16{1, 0},
				Parameters: [][]byte{{0, 0, 0, 5}, []byte("x")}, ResultFormatCodes: []int16{0}},
			&pgproto3.Execute{}, &pgproto3.Sync{}},
		{&pgproto3.Parse{Query: "SELECT * FROM generate_series(1, 100)"}, &pgproto3.Bind{DestinationPortal: "c"},
			&pgproto3.Execute{Portal: "c", MaxRows: 7}, &pgproto3.Execute{Portal: "c", MaxRows: 7},
			&pgproto3.Close{ObjectType: 'P', Name: "c"}, &pgproto3.Sync{}},
		{&pgproto3.Query{String: "BEGIN; INSERT INTO t VALUES (70, 'w'); ROLLBACK"}},
		{&pgproto3.Query{String: "COPY t (id, v) FROM STDIN"}, &pgproto3.CopyData{Data: []byte("71\tz\n")}, &pgproto3.CopyDone{},
			&pgproto3.Query{String: "DELETE FROM t WHERE id = 71"}},
	}
	b := encode(exchanges[rng.Intn(len(exchanges))]...)
	for m := 1 + rng.Intn(3); m > 0; m-- {
		switch rng.Intn(5) {
		case 0, 1: // flip a byte
			b[rng.Intn(len(b))] ^= byte(1 + rng.Intn(255))
		case 2: // rewrite a length field (the one after the first byte, or any 4 bytes)
			if len(b) < 9 {
				continue
			}
			i := rng.Intn(len(b) - 4)
			if rng.Intn(2) == 0 {
				i = 1
			}
			binary.BigEndian.PutUint32(b[i:], []uint32{0, 3, 5, 0x7fffffff, 0xffffffff, uint32(rng.Intn(1 << 20))}[rng.Intn(6)])
		case 3: // cut
			b = b[:rng.Intn(len(b))+1]
		case 4: // repeat a slice
			i := rng.Intn(len(b))
			j := i + rng.Intn(len(b)-i)
			b = append(b[:j:j], append(append([]byte{}, b[i:j]...), b[j:]...)...)
		}
	}
	return b
}

// phaseWire runs the named wire cases and cfg.wireCases mutated exchanges.
func (b *battery) phaseWire(t *testing.T) {
	run := func(name string, wc wireCase) {
		c, err := rawDial(b.srv.Addr)
		if err != nil {
			b.problem(t, "%s: dial: %v", name, err)
			return
		}
		defer c.nc.Close()
		if wc.startup {
			if err := c.startup(); err != nil {
				b.problem(t, "%s: startup: %v", name, err)
				return
			}
		}
		b.statements.Add(1)
		_ = c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.nc.Write(wc.send); err != nil && wc.codes != nil {
			b.problem(t, "%s: write: %v", name, err)
			return
		}
		if wc.eof {
			c.closeWrite()
		}
		msgs, err := c.drain(10 * time.Second)
		if err != nil {
			b.problem(t, "%s: %v", name, err)
			return
		}
		got := codesOf(msgs)
		for _, code := range got {
			b.countCode(code)
		}
		if wc.codes != nil && (len(got) < len(wc.codes) || strings.Join(got[:len(wc.codes)], ",") != strings.Join(wc.codes, ",")) {
			b.problem(t, "%s: the server answered SQLSTATEs %q, want %q first", name, got, wc.codes)
		}
	}
	for _, wc := range wireCases(b.rng) {
		run(wc.name, wc)
	}
	for i := 0; i < b.cfg.wireCases; i++ {
		run(fmt.Sprintf("mutated-%d", i), wireCase{startup: true, send: mutatedExchange(b.rng), eof: true})
		if b.tooMany() {
			t.Fatalf("too many problems, stopping the phase")
		}
	}
	// A statement-level protocol error leaves the session usable: the
	// same connection answers a query after the Sync.
	c, err := rawDial(b.srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.nc.Close()
	if err := c.startup(); err != nil {
		t.Fatal(err)
	}
	wc := wireCases(b.rng)
	var bindTooFew []byte
	for _, w := range wc {
		if w.name == "bind-too-few" {
			bindTooFew = w.send
		}
	}
	if _, err := c.nc.Write(bindTooFew); err != nil {
		t.Fatal(err)
	}
	var codes, rows []string
	for range 2 { // the failed Bind's cycle, then SELECT 7's
		msgs, err := c.readUntilReady(10 * time.Second)
		if err != nil {
			b.problem(t, "bind with too few parameters ended the session: %v (SQLSTATEs %q)", err, codesOf(msgs))
			return
		}
		codes = append(codes, codesOf(msgs)...)
		for _, m := range msgs {
			if m.typ == 'D' && len(m.body) > 6 {
				rows = append(rows, string(m.body[6:]))
			}
		}
	}
	if strings.Join(codes, ",") != "08P01" || strings.Join(rows, ",") != "7" {
		b.problem(t, "bind with too few parameters, then SELECT 7: SQLSTATEs %q rows %q, want 08P01 then 7", codes, rows)
	}
}

// ---- connection storms ----

// phaseConcurrent opens cfg.concurrent pgx connections at once; when all
// are in, each runs the sentinel query, and every one must get its answer.
func (b *battery) phaseConcurrent(t *testing.T) {
	n := b.cfg.concurrent
	connStr := strings.Replace(b.srv.ConnString(), "connect_timeout=5", "connect_timeout=60", 1)
	var wg sync.WaitGroup
	var connected, answered atomic.Int64
	start := make(chan struct{})
	errs := make(chan error, n)
	began := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			conn, err := Connect(ctx, connStr)
			if err != nil {
				errs <- fmt.Errorf("connect: %w", err)
				return
			}
			defer conn.Close(context.Background())
			connected.Add(1)
			<-start
			var cnt, sum int64
			var agg string
			if err := conn.QueryRow(ctx, sentinelSQL).Scan(&cnt, &sum, &agg); err != nil {
				errs <- fmt.Errorf("query: %w", err)
				return
			}
			if got := fmt.Sprintf("%d|%d|%s", cnt, sum, agg); got != sentinelWant {
				errs <- fmt.Errorf("query answered %q", got)
				return
			}
			answered.Add(1)
		}()
	}
	// Release the queries once every connection is in (or has failed).
	deadline := time.Now().Add(120 * time.Second)
	for connected.Load()+int64(len(errs)) < int64(n) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	connectTime := time.Since(began)
	close(start)
	wg.Wait()
	close(errs)
	b.statements.Add(int64(n))
	t.Logf("storm: %d connections in %v, %d answered after %v", connected.Load(), connectTime.Round(time.Millisecond),
		answered.Load(), time.Since(began).Round(time.Millisecond))
	seen := map[string]int{}
	for err := range errs {
		seen[err.Error()]++
	}
	for msg, cnt := range seen {
		b.problem(t, "concurrent storm: %d connections: %s", cnt, msg)
	}
}

// phaseIdle holds cfg.idle logged-in connections that do nothing; with all
// of them open a new client connects and works, and a busy session (the
// sentinel) goes on.
func (b *battery) phaseIdle(t *testing.T) {
	n := b.cfg.idle
	conns := make([]*rawConn, n)
	var next, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	began := time.Now()
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				c, err := rawDial(b.srv.Addr)
				if err == nil {
					if err = c.startup(); err != nil {
						c.nc.Close()
					}
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				conns[i] = c
			}
		}()
	}
	wg.Wait()
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.nc.Close()
			}
		}
	}()
	t.Logf("idle: %d connections logged in in %v (%d failed), server RSS %d MiB", n-int(failed.Load()),
		time.Since(began).Round(time.Millisecond), failed.Load(), b.rss(t)>>10)
	if failed.Load() > 0 {
		b.problem(t, "idle storm: %d of %d connections failed, first: %v", failed.Load(), n, firstErr.Load())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := Connect(ctx, b.srv.ConnString())
	if err != nil {
		b.problem(t, "with %d idle connections a new client cannot connect: %v", n, err)
		return
	}
	defer conn.Close(context.Background())
	var cnt, sum int64
	var agg string
	if err := conn.QueryRow(ctx, sentinelSQL).Scan(&cnt, &sum, &agg); err != nil {
		b.problem(t, "with %d idle connections a new client's query: %v", n, err)
	}
	// The idle sessions are still alive and answer.
	for _, c := range conns[:min(len(conns), 20)] {
		if c == nil {
			continue
		}
		if _, err := c.nc.Write(encode(&pgproto3.Query{String: "SELECT 1"})); err != nil {
			b.problem(t, "an idle session was closed: %v", err)
			continue
		}
		if _, err := c.readUntilReady(10 * time.Second); err != nil {
			b.problem(t, "an idle session does not answer: %v", err)
		}
	}
}
