package pgwire

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"log"
	"net"
	"sync"
	"time"
)

// Options configures a Server.
type Options struct {
	// MaxMessageSize bounds the declared length of a client message
	// (including its 4-byte length word). A longer message is answered
	// with a protocol-violation error and its connection closed, without
	// reading or allocating the body. Default 64 MiB.
	MaxMessageSize int
	// Logf logs server-side events (panics, accept errors). Default
	// log.Printf.
	Logf func(format string, args ...any)

	// Auth authenticates clients (auth.go); nil lets every user in as a
	// superuser.
	Auth Authenticator
	// AuthMD5 allows md5 password authentication for roles whose stored
	// password is an md5 hash (off: only SCRAM-SHA-256).
	AuthMD5 bool
	// TLS, when set, answers SSLRequest with 'S' (and accepts PostgreSQL
	// 17's direct TLS); TLSRequired then refuses plaintext TCP clients.
	TLS         *tls.Config
	TLSRequired bool
	// MaxConnections bounds the sessions (0: unlimited);
	// ReservedConnections of them are kept for superusers (limits.go).
	MaxConnections, ReservedConnections int
	// AuthTimeout bounds the time from accept to the end of
	// authentication (as authentication_timeout). Default 1 minute.
	AuthTimeout time.Duration
}

// DefaultMaxMessageSize is the MaxMessageSize used when Options leaves it 0.
const DefaultMaxMessageSize = 64 << 20

const (
	// defaultAuthTimeout bounds the time a client may take to send its
	// startup packet and authenticate (as Postgres' authentication_timeout).
	defaultAuthTimeout = time.Minute
	// shutdownGrace is how long Serve waits, after cancelling every
	// connection's statement and waking every reader, before it closes
	// the connections that have not finished.
	shutdownGrace = 2 * time.Second
)

// Server serves the Postgres wire protocol for a Handler.
type Server struct {
	h    Handler
	opts Options

	mu   sync.Mutex
	keys map[uint32]*conn // backend pid -> connection, for CancelRequest

	slots   slots    // session slots (limits.go)
	mockKey [32]byte // keys the mock SCRAM salts of unknown users (auth.go)
}

// NewServer returns a Server serving h.
func NewServer(h Handler, opts Options) *Server {
	if opts.MaxMessageSize <= 0 {
		opts.MaxMessageSize = DefaultMaxMessageSize
	}
	if opts.Logf == nil {
		opts.Logf = log.Printf
	}
	if opts.AuthTimeout <= 0 {
		opts.AuthTimeout = defaultAuthTimeout
	}
	s := &Server{h: h, opts: opts, keys: make(map[uint32]*conn)}
	rand.Read(s.mockKey[:])
	if mk, ok := opts.Auth.(interface{ MockKey() []byte }); ok {
		copy(s.mockKey[:], mk.MockKey()) // stable across restarts (auth.go)
	}
	return s
}

// connSet is the set of live connections accepted by one Serve call.
type connSet struct {
	mu sync.Mutex
	m  map[*conn]struct{}
}

func (cs *connSet) add(c *conn) {
	cs.mu.Lock()
	cs.m[c] = struct{}{}
	cs.mu.Unlock()
}

func (cs *connSet) remove(c *conn) {
	cs.mu.Lock()
	delete(cs.m, c)
	cs.mu.Unlock()
}

func (cs *connSet) each(f func(c *conn)) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for c := range cs.m {
		f(c)
	}
}

// Serve accepts connections on ln and serves each in its own goroutine. It
// returns when ctx is done (returning nil) or when accepting fails for good,
// for instance because ln was closed (returning that error). Before
// returning it closes ln, cancels every running statement, closes every
// connection and waits for all of its goroutines.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var wg sync.WaitGroup
	conns := &connSet{m: make(map[*conn]struct{})}

	// The closer goroutine unblocks Accept when ctx is done.
	acceptDone := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-ctx.Done():
		case <-acceptDone:
		}
		ln.Close()
	}()

	var err error
	var backoff time.Duration
	for {
		nc, aerr := ln.Accept()
		if aerr != nil {
			if ctx.Err() != nil {
				break
			}
			if isTemporary(aerr) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.opts.Logf("pgwire: accept error: %v; retrying in %v", aerr, backoff)
				t := time.NewTimer(backoff)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
				}
				continue
			}
			err = aerr
			break
		}
		backoff = 0
		c := newConn(s, nc, ctx)
		conns.add(c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conns.remove(c)
			c.serve()
		}()
	}
	close(acceptDone)
	cancel()

	// Shut down: every connection's context is now cancelled (which
	// cancels running statements); wake readers so they notice.
	conns.each(func(c *conn) { c.raw.SetReadDeadline(time.Now()) })
	all := make(chan struct{})
	go func() { // owned: Serve waits on all below
		wg.Wait()
		close(all)
	}()
	t := time.NewTimer(shutdownGrace)
	defer t.Stop()
	select {
	case <-all:
	case <-t.C:
		conns.each(func(c *conn) { c.raw.Close() })
		<-all
	}
	return err
}

func isTemporary(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	var te interface{ Temporary() bool }
	if errors.As(err, &te) && te.Temporary() {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// register gives c a fresh, unique backend key.
func (s *Server) register(c *conn) {
	var b [8]byte
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		rand.Read(b[:])
		pid := binary.BigEndian.Uint32(b[:4]) & 0x7fffffff // a positive int32, like a real pid
		if pid == 0 || s.keys[pid] != nil {
			continue
		}
		c.pid, c.secret = pid, binary.BigEndian.Uint32(b[4:])
		s.keys[pid] = c
		return
	}
}

func (s *Server) unregister(c *conn) {
	s.mu.Lock()
	if c.pid != 0 && s.keys[c.pid] == c {
		delete(s.keys, c.pid)
	}
	s.mu.Unlock()
}

// cancel cancels the running statement of the connection with the given
// backend key, if there is one.
func (s *Server) cancel(pid, secret uint32) {
	s.mu.Lock()
	c := s.keys[pid]
	s.mu.Unlock()
	if c == nil || subtle.ConstantTimeEq(int32(c.secret), int32(secret)) != 1 {
		return
	}
	c.cancelStatement()
}
