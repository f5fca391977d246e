package server

import (
	"context"
	"runtime"
	"sync"

	"sluice/sql/types"
)

// The COPY FROM decode pipeline (text and CSV): the reader (the
// statement's copyDecoder, on its own goroutine) cuts the stream at line
// boundaries into chunks of whole lines; workers split, convert and, for a
// bulk insert, encode each chunk; the statement takes the chunks back in
// input order. An error names its line as the sequential decoder did: the
// first chunk in order that fails carries the first bad line, and an error
// of the reader (a malformed line ending, bad UTF-8, too many rows) comes
// after the chunk holding the lines before it.

// copyChunkLines is the lines of one chunk.
const copyChunkLines = bulkChunkRows

// copyChunk is a run of lines and, once decoded, their rows.
type copyChunk struct {
	data    []byte // the lines, back to back
	ends    []int  // the end of each line in data
	linenos []int  // each line's number
	rows    []types.Row
	enc     *bulkChunk // the rows encoded (a bulk insert)
	err     error      // the chunk's first error (or the reader's, after its lines)
	done    chan struct{}
}

// decode decodes the whole stream into rows.
func (d *copyDecoder) decode() ([]types.Row, error) {
	if d.opts.format == copyBinary {
		return d.decodeBinary()
	}
	var rows []types.Row
	err := d.pipeline(nil, func(c *copyChunk) { rows = append(rows, c.rows...) })
	return rows, err
}

// pipeline decodes every data line, calling f with each chunk's rows in
// order; with tw, chunks are also encoded for tw's bulk insert. It
// returns once its goroutines have ended (so the COPY stream is no longer
// read).
func (d *copyDecoder) pipeline(tw *tableWriter, f func(c *copyChunk)) error {
	ctx, cancel := context.WithCancel(d.ctx)
	defer cancel()
	nw := max(1, min(runtime.GOMAXPROCS(0), 4))
	work := make(chan *copyChunk, nw)
	order := make(chan *copyChunk, 2*nw)
	var wg sync.WaitGroup
	wg.Add(nw + 1)
	defer wg.Wait()
	for range nw {
		go func() {
			defer wg.Done()
			wd := d.clone()
			var scratch []byte
			for c := range work {
				wd.decodeChunk(c)
				if c.err == nil && tw != nil {
					c.enc, scratch = tw.encodeBulk(c.rows, scratch)
				}
				close(c.done)
			}
		}()
	}
	go func() {
		defer wg.Done()
		defer close(order)
		defer close(work)
		d.readChunks(ctx, order, work)
	}()
	for {
		var c *copyChunk
		select {
		case c = <-order:
		case <-ctx.Done():
			return ctx.Err()
		}
		if c == nil {
			return nil
		}
		select {
		case <-c.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if c.err != nil {
			return c.err
		}
		f(c)
	}
}

// clone returns a decoder of the same statement for a worker.
func (d *copyDecoder) clone() *copyDecoder {
	return &copyDecoder{ctx: d.ctx, opts: d.opts, rel: d.rel, cols: d.cols, idx: d.idx, width: d.width}
}

// readChunks reads the stream into chunks, handing each to the statement
// (order) and to a worker (work).
func (d *copyDecoder) readChunks(ctx context.Context, order, work chan<- *copyChunk) {
	c := newCopyChunk(0)
	send := func(toWorker bool) bool {
		select {
		case order <- c:
		case <-ctx.Done():
			return false
		}
		if !toWorker {
			close(c.done)
			return true
		}
		select {
		case work <- c:
			return true
		case <-ctx.Done():
			return false
		}
	}
	rows := 0
	err := d.lines(func() error {
		c.data = append(c.data, d.line...)
		c.ends = append(c.ends, len(c.data))
		c.linenos = append(c.linenos, d.lineno)
		rows++
		if len(c.ends) == copyChunkLines {
			size := len(c.data) // c is the worker's once sent
			if !send(true) {
				return ctx.Err()
			}
			c = newCopyChunk(size)
		}
		return d.checkSize(rows)
	})
	if len(c.ends) > 0 {
		if !send(true) {
			return
		}
		c = &copyChunk{done: make(chan struct{})}
	}
	if err != nil {
		c.err = err
		send(false)
	}
}

func newCopyChunk(size int) *copyChunk {
	return &copyChunk{done: make(chan struct{}), data: make([]byte, 0, size),
		ends: make([]int, 0, copyChunkLines), linenos: make([]int, 0, copyChunkLines)}
}

// decodeChunk splits and converts the lines of c into c.rows (stopping at
// the first bad line).
func (d *copyDecoder) decodeChunk(c *copyChunk) {
	c.rows = make([]types.Row, 0, len(c.ends))
	all := string(c.data)
	defer func() { d.lineStr = "" }()
	start := 0
	for i, end := range c.ends {
		d.line, d.lineno = c.data[start:end], c.linenos[i]
		d.lineStr = all[start:end]
		start = end
		if err := d.splitFields(); err != nil {
			c.err = err
			return
		}
		r, err := d.rowOf()
		if err != nil {
			c.err = err
			return
		}
		c.rows = append(c.rows, r)
	}
	c.data = nil
}
