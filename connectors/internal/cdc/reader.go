package cdc

// The exec connector adapter: a Reader the engine reads, over a Worker
// goroutine that runs the connector's session and retries.

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"sluice/connectors/internal/chunkq"
	"sluice/exec/connector"
	"sluice/sql/types"
)

// Chunk is a run of rows the worker hands the reader, with the position
// after them (or the error that ends the source).
type Chunk[P any] struct {
	Rows  []types.Row
	Diffs []int64
	Pos   P
	Err   error
}

// ChunkRows bounds a chunk's rows.
const ChunkRows = 1024

// Config is what a connector gives NewReader.
type Config[P any] struct {
	// Session connects and reads from w.Pos() until an error, handing
	// chunks to w.Send. It returns when ctx ends.
	Session func(ctx context.Context, w *Worker[P]) error
	// Transient reports whether retrying may cure an error of Session;
	// any other error ends the source.
	Transient func(error) bool
	Encode    func(P) []byte
	Decode    func([]byte) (P, error)
	// Release is called once, by the first Close.
	Release func()
}

// Reader is the source the engine reads. Read, Position, Seek, Status and
// Close are called from one goroutine; the worker goroutine it owns (from
// the first Read until Seek or Close) hands it chunks over a bounded
// channel.
type Reader[P any] struct {
	cfg    Config[P]
	pos    P // after the rows returned so far
	status atomic.Pointer[string]
	w      *Worker[P] // nil until the first Read
	chunks chan *Chunk[P]
	held   *Chunk[P] // taken from chunks, not yet returned
	taker  chunkq.Taker[*Chunk[P]]
	fatal  error
	closed bool
}

var (
	_ connector.Seekable = (*Reader[int])(nil)
	_ connector.Statuser = (*Reader[int])(nil)
)

// NewReader returns a reader at the zero position (a fresh source).
func NewReader[P any](cfg Config[P]) *Reader[P] { return &Reader[P]{cfg: cfg} }

// Read implements connector.Source. Chunks are taken whole: their rows
// and the position after them go together.
func (r *Reader[P]) Read(ctx context.Context, b *types.Batch, max int) (int, error) {
	if r.fatal != nil {
		return 0, r.fatal
	}
	if r.w == nil {
		r.chunks = make(chan *Chunk[P], 64)
		r.w = r.startWorker()
	}
	n := 0
	for n < max {
		c := r.held
		r.held = nil
		if c == nil {
			var ok bool
			var err error
			c, ok, err = r.taker.Next(ctx, r.chunks, n == 0)
			if err != nil {
				return 0, err
			}
			if !ok {
				return n, nil
			}
		}
		if c.Err != nil {
			r.fatal = c.Err
			if n > 0 {
				return n, nil
			}
			return 0, c.Err
		}
		if n > 0 && n+len(c.Rows) > max {
			r.held = c // whole chunks only: its rows and position go together
			return n, nil
		}
		for i, row := range c.Rows {
			b.Add(row, c.Diffs[i])
		}
		n += len(c.Rows)
		r.pos = c.Pos
	}
	return n, nil
}

// Position implements connector.Seekable.
func (r *Reader[P]) Position() []byte { return r.cfg.Encode(r.pos) }

// Seek implements connector.Seekable: the worker (re)starts from pos.
func (r *Reader[P]) Seek(pos []byte) error {
	p, err := r.cfg.Decode(pos)
	if err != nil {
		return err
	}
	r.stopWorker()
	r.pos, r.fatal = p, nil
	return nil
}

// Status implements connector.Statuser: the last error the worker is
// retrying after, or "".
func (r *Reader[P]) Status() string {
	if s := r.status.Load(); s != nil {
		return *s
	}
	return ""
}

func (r *Reader[P]) stopWorker() {
	if r.w == nil {
		return
	}
	r.w.stop()
	r.w, r.chunks, r.held = nil, nil, nil
}

// Close implements connector.Source.
func (r *Reader[P]) Close() error {
	r.stopWorker()
	if !r.closed {
		r.closed = true
		if r.cfg.Release != nil {
			r.cfg.Release()
		}
	}
	return nil
}

// Worker is the goroutine that reads the upstream for a Reader: it runs
// the connector's session from the reader's position and retries.
type Worker[P any] struct {
	cfg    *Config[P]
	status *atomic.Pointer[string]
	out    chan<- *Chunk[P]
	pos    P // after the last chunk sent
	cancel context.CancelFunc
	done   chan struct{}
}

func (r *Reader[P]) startWorker() *Worker[P] {
	ctx, cancel := context.WithCancel(context.Background())
	w := &Worker[P]{cfg: &r.cfg, status: &r.status, out: r.chunks, pos: r.pos, cancel: cancel, done: make(chan struct{})}
	go w.run(ctx)
	return w
}

// stop ends the worker and waits for it.
func (w *Worker[P]) stop() {
	w.cancel()
	<-w.done
}

const (
	backoffMin = 100 * time.Millisecond
	backoffMax = 3 * time.Second
)

func (w *Worker[P]) run(ctx context.Context) {
	defer close(w.done)
	backoff := backoffMin
	for {
		err := w.cfg.Session(ctx, w)
		if ctx.Err() != nil {
			return
		}
		if !w.cfg.Transient(err) {
			select {
			case w.out <- &Chunk[P]{Err: err}:
			case <-ctx.Done():
			}
			return
		}
		msg := err.Error()
		w.status.Store(&msg)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(2*backoff, backoffMax)
	}
}

// Pos is the position after the last chunk sent: where a session starts.
func (w *Worker[P]) Pos() P { return w.pos }

// Send hands a chunk to the reader and records its position.
func (w *Worker[P]) Send(ctx context.Context, c *Chunk[P]) error {
	select {
	case w.out <- c:
		w.pos = c.Pos
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Healthy clears the status: the session reads the upstream.
func (w *Worker[P]) Healthy() { w.status.Store(nil) }

// Claims holds the ids (a replication slot, a replica's server id) read
// by this process's open readers: such an id has one reader.
type Claims struct {
	mu   sync.Mutex
	held map[string]bool
}

// Claim takes id; false if another reader holds it.
func (c *Claims) Claim(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held[id] {
		return false
	}
	if c.held == nil {
		c.held = map[string]bool{}
	}
	c.held[id] = true
	return true
}

// Release gives id back.
func (c *Claims) Release(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.held, id)
}
