package socket

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sluice/connectors/internal/msgfmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"sluice/connectors/internal/chunkq"
	"sluice/connectors/internal/decode"
	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// SourceFactory is the socket source connector.
type SourceFactory struct{}

func init() { connector.RegisterSource("socket", SourceFactory{}) }

var _ connector.Unreplayable = SourceFactory{}

const (
	defaultMaxBytes = 1 << 20
	// chunkLines bounds the lines of one chunk; chunkBuffer the chunks
	// waiting for Read (with the line limit, the bound on memory).
	chunkLines  = 256
	chunkBuffer = 16
)

// provenanceTopic is the topic of a bad line's provenance.
const provenanceTopic = "socket"

type config struct {
	name     string
	cols     []types.Column
	port     int
	onError  msgfmt.OnError
	maxBytes int
	enc      decode.Encoding
}

func parse(cfg connector.SourceConfig) (*config, error) {
	if len(cfg.Columns) == 0 {
		return nil, pgerror.New(pgcode.InvalidObjectDefinition, "a socket source needs declared columns")
	}
	for k := range cfg.Options {
		switch k {
		case "connector", "port", "on_error", "max.message.bytes", "format", "encode":
		default:
			return nil, connector.OptionError("socket", k, "unknown option")
		}
	}
	get := func(k string) string { return strings.TrimSpace(cfg.Options[k]) }
	c := &config{name: cfg.Name, cols: cfg.Columns, maxBytes: defaultMaxBytes}
	p := get("port")
	if p == "" {
		return nil, connector.OptionError("socket", "port", "is required")
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 65535 {
		return nil, connector.OptionError("socket", "port", "%q is not a TCP port", p)
	}
	c.port = n
	if c.onError, err = msgfmt.ParseOnError("socket", get("on_error")); err != nil {
		return nil, err
	}
	if c.maxBytes, err = msgfmt.ParseMaxBytes("socket", get("max.message.bytes"), c.maxBytes); err != nil {
		return nil, err
	}
	if f := strings.ToUpper(get("format")); f != "" && f != "PLAIN" {
		return nil, pgerror.New(pgcode.FeatureNotSupported, "socket source does not support FORMAT %s", f).
			WithHint("a socket source reads FORMAT PLAIN records")
	}
	enc, ok := decode.ParseEncoding(get("encode"))
	if !ok || enc.NeedsRegistry() {
		return nil, pgerror.New(pgcode.FeatureNotSupported, "socket source does not support ENCODE %s", get("encode")).
			WithHint("use ENCODE JSON or CSV")
	}
	c.enc = enc
	if err := cfg.Policy.CheckListenPort("socket", c.port); err != nil {
		return nil, err
	}
	return c, nil
}

// Validate implements connector.SourceFactory. It does not listen.
func (SourceFactory) Validate(cfg connector.SourceConfig) ([]types.Column, error) {
	if _, err := parse(cfg); err != nil {
		return nil, err
	}
	return cfg.Columns, nil
}

// Unreplayable implements connector.Unreplayable.
func (SourceFactory) Unreplayable(connector.SourceConfig) string {
	return "the socket source cannot replay records after a restart (no offsets)"
}

// Open implements connector.SourceFactory: it listens on 127.0.0.1:port.
func (SourceFactory) Open(_ context.Context, cfg connector.SourceConfig) (connector.Source, error) {
	c, err := parse(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)))
	if err != nil {
		return nil, pgerror.Wrap(err, pgcode.ConnectionException, "socket source %s cannot listen on port %d", c.name, c.port)
	}
	if c.port == 0 {
		// The system picked the port: it too must be in the allowed range.
		if err := cfg.Policy.CheckListenPort("socket", ln.Addr().(*net.TCPAddr).Port); err != nil {
			ln.Close()
			return nil, err
		}
	}
	s := &source{cfg: c, ln: ln, done: make(chan struct{}), chunks: make(chan *chunk, chunkBuffer)}
	s.mu.conns = map[net.Conn]struct{}{}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// chunk is a run of lines from one connection.
type chunk struct {
	items []item
}

// item is one line: its row, or the bad record it was.
type item struct {
	row types.Row
	bad *connector.DeadLetter
}

// source is a listening socket source. Read and Close are called from the
// engine's goroutine; accept and serve run on goroutines it owns.
type source struct {
	cfg    *config
	ln     net.Listener
	done   chan struct{} // closed by Close
	chunks chan *chunk
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		closed bool
		conns  map[net.Conn]struct{}
	}

	// Read side.
	cur     *chunk
	item    int
	pending error
	dead    chunkq.DeadLetters
	take    chunkq.Taker[*chunk]
}

var _ connector.DeadLetterSource = (*source)(nil)

// addr returns the address the source listens on (tests use port 0).
func (s *source) addr() string { return s.ln.Addr().String() }

func (s *source) accept() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient failure (out of file descriptors): pause.
			select {
			case <-s.done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		s.mu.Lock()
		if s.mu.closed {
			s.mu.Unlock()
			conn.Close()
			return
		}
		s.mu.conns[conn] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(conn)
	}
}

// serve reads the lines of one connection until it ends or the source
// closes.
func (s *source) serve(conn net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.mu.conns, conn)
		s.mu.Unlock()
		conn.Close()
	}()
	br := bufio.NewReaderSize(conn, 64<<10)
	dec := decode.New(s.cfg.cols, s.cfg.enc, nil)
	ncols := len(s.cfg.cols)
	var slab []types.Datum
	var buf []byte
	var lineNo int64
	c := &chunk{}
	for {
		var tooLong bool
		var err error
		buf, tooLong, err = readLine(br, buf, s.cfg.maxBytes)
		if len(buf) > 0 || tooLong || err == nil {
			lineNo++
		}
		switch {
		case tooLong:
			c.items = append(c.items, item{bad: s.deadLetter(lineNo,
				fmt.Sprintf("line longer than max.message.bytes (%d); raw bytes truncated", s.cfg.maxBytes), buf)})
		case len(buf) > 0:
			if len(slab) < ncols {
				slab = make([]types.Datum, ncols*chunkLines)
			}
			row := slab[:ncols:ncols]
			if derr := dec.Decode(buf, row); derr != nil {
				c.items = append(c.items, item{bad: s.deadLetter(lineNo, derr.Error(), buf)})
			} else {
				slab = slab[ncols:]
				c.items = append(c.items, item{row: row})
			}
		}
		// Hand over what is decoded when no more is buffered: a chunk
		// holds the lines that arrived together.
		if len(c.items) > 0 && (err != nil || br.Buffered() == 0 || len(c.items) >= chunkLines) {
			select {
			case s.chunks <- c:
			case <-s.done:
				return
			}
			c = &chunk{}
		}
		if err != nil {
			return
		}
	}
}

func (s *source) deadLetter(line int64, cause string, raw []byte) *connector.DeadLetter {
	return &connector.DeadLetter{Topic: provenanceTopic, Partition: 0, Offset: line, Error: cause, Raw: append([]byte(nil), raw...)}
}

// readLine reads one line into buf without its line ending. A line
// longer than max is cut to max bytes and reported as tooLong (the rest
// is discarded). err is set at the end of the connection, after a last
// line without a newline.
func readLine(br *bufio.Reader, buf []byte, max int) (line []byte, tooLong bool, err error) {
	buf = buf[:0]
	for {
		frag, e := br.ReadSlice('\n')
		if !tooLong {
			buf = append(buf, frag...) // a fragment is at most the reader's buffer
			if len(buf) > max+2 {      // more than max bytes and "\r\n"
				buf, tooLong = buf[:max], true
			}
		}
		if e == bufio.ErrBufferFull {
			continue
		}
		if !tooLong {
			if n := len(buf); n > 0 && buf[n-1] == '\n' {
				buf = buf[:n-1]
			}
			if n := len(buf); n > 0 && buf[n-1] == '\r' {
				buf = buf[:n-1]
			}
			if len(buf) > max {
				buf, tooLong = buf[:max], true
			}
		}
		return buf, tooLong, e
	}
}

// Read implements connector.Source.
func (s *source) Read(ctx context.Context, b *types.Batch, max int) (int, error) {
	if s.pending != nil {
		err := s.pending
		s.pending = nil
		return 0, err
	}
	n := 0
	waited := false
	for n < max {
		if s.cur == nil {
			mayWait := n == 0 && !waited
			waited = waited || mayWait
			c, ok, err := s.take.Next(ctx, s.chunks, mayWait)
			if err != nil {
				return 0, err
			}
			if !ok {
				return n, nil
			}
			s.cur, s.item = c, 0
		}
		c := s.cur
		for s.item < len(c.items) && n < max {
			it := &c.items[s.item]
			if it.bad != nil {
				if s.cfg.onError == msgfmt.Fail {
					err := connector.BadRecord(s.cfg.name, it.bad.Topic, it.bad.Partition, it.bad.Offset, it.bad.Error)
					s.item++ // a socket cannot give the line again
					if n > 0 {
						s.pending = err
						return n, nil
					}
					return 0, err
				}
				s.dead.Add(*it.bad)
				s.item++
				continue
			}
			b.Add(it.row, 1)
			n++
			s.item++
		}
		if s.item == len(c.items) {
			s.cur = nil
		}
	}
	return n, nil
}

// TakeDeadLetters implements connector.DeadLetterSource.
func (s *source) TakeDeadLetters(buf []connector.DeadLetter) []connector.DeadLetter {
	return s.dead.Take(buf)
}

// Close implements connector.Source: it stops listening, closes every
// connection and waits for the goroutines.
func (s *source) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.closed = true
	for c := range s.mu.conns {
		c.Close()
	}
	s.mu.Unlock()
	close(s.done)
	err := s.ln.Close()
	s.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
