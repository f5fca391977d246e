package mysqlcdc

import (
	"context"
	"sync/atomic"
	"time"

	"sluice/exec/connector"
	"sluice/sql/types"
)

// chunk is a run of rows the worker hands the reader, with the position
// after them (or the error that ends the source).
type chunk struct {
	rows  []types.Row
	diffs []int64
	pos   position
	err   error
}

// chunkRows bounds a chunk's rows.
const chunkRows = 1024

// shared is what the reader and its worker both touch.
type shared struct {
	// status is the last transient error met (empty when healthy).
	status atomic.Pointer[string]
}

// reader is the source the engine reads. Read, Position, Seek, Committed,
// Status and Close are called from one goroutine; the worker goroutine it
// owns hands it chunks over a bounded channel.
type reader struct {
	cfg    *config
	pos    position // after the rows returned so far
	sh     *shared
	w      *worker // nil until the first Read
	chunks chan *chunk
	held   *chunk // taken from chunks, not yet returned
	fatal  error
	closed bool
}

var (
	_ connector.Seekable = (*reader)(nil)
	_ connector.Statuser = (*reader)(nil)
)

func newReader(c *config) *reader { return &reader{cfg: c, sh: &shared{}} }

// readWait bounds how long Read waits for a chunk when none is ready.
const readWait = 5 * time.Millisecond

// Read implements connector.Source. Chunks are taken whole: their rows
// and the position after them go together.
func (r *reader) Read(ctx context.Context, b *types.Batch, max int) (int, error) {
	if r.fatal != nil {
		return 0, r.fatal
	}
	if r.w == nil {
		r.chunks = make(chan *chunk, 64)
		r.w = startWorker(r.cfg, r.pos, r.sh, r.chunks)
	}
	n := 0
	var timer <-chan time.Time
	for n < max {
		c := r.held
		r.held = nil
		if c == nil {
			select {
			case c = <-r.chunks:
			default:
				if n > 0 {
					return n, nil
				}
				if timer == nil {
					timer = time.After(readWait)
				}
				select {
				case c = <-r.chunks:
				case <-timer:
					return 0, nil
				case <-ctx.Done():
					return 0, ctx.Err()
				}
			}
		}
		if c.err != nil {
			r.fatal = c.err
			if n > 0 {
				return n, nil
			}
			return 0, c.err
		}
		if n > 0 && n+len(c.rows) > max {
			r.held = c // whole chunks only: its rows and position go together
			return n, nil
		}
		for i, row := range c.rows {
			b.Add(row, c.diffs[i])
		}
		n += len(c.rows)
		r.pos = c.pos
	}
	return n, nil
}

// Position implements connector.Seekable.
func (r *reader) Position() []byte { return r.pos.encode() }

// Seek implements connector.Seekable: the worker (re)starts from pos.
func (r *reader) Seek(pos []byte) error {
	p, err := decodePosition(pos)
	if err != nil {
		return err
	}
	r.stopWorker()
	r.pos, r.fatal = p, nil
	return nil
}

// Status implements connector.Statuser: the last error the worker is
// retrying after, or "".
func (r *reader) Status() string {
	if s := r.sh.status.Load(); s != nil {
		return *s
	}
	return ""
}

func (r *reader) stopWorker() {
	if r.w == nil {
		return
	}
	r.w.stop()
	r.w, r.chunks, r.held = nil, nil, nil
}

// Close implements connector.Source.
func (r *reader) Close() error {
	r.stopWorker()
	if !r.closed {
		r.closed = true
		release(r.cfg.replicaID())
	}
	return nil
}
