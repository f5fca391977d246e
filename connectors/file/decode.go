package file

// Parallel decoding: a Read queues the lines it takes (copied, so that
// the read buffer may move on), then decodes them on up to srcDecoders
// goroutines at once, and adds the rows in line order.

import (
	"fmt"
	"runtime"
	"sync"

	"sluice/connectors/internal/decode"
	"sluice/sql/types"
)

// srcDecoders is how many goroutines decode one Read's lines.
var srcDecoders = min(runtime.GOMAXPROCS(0), 4)

const (
	// srcLinesPerDecoder is the fewest lines worth another goroutine.
	srcLinesPerDecoder = 64
	// srcArenaBytes bounds the bytes of the lines one Read queues.
	srcArenaBytes = 8 << 20
)

// srcLine is a line read and not yet decoded, or a bad line (cause).
type srcLine struct {
	raw   []byte // in Source.arena
	name  string // its file
	line  int64  // its line number
	after int64  // the offset past it
	cause string // why it is bad ("": not known to be)
	row   types.Row
}

// srcDecoder is one decoding goroutine's state, kept between Reads.
type srcDecoder struct {
	dec   *decode.Decoder
	cols  []types.Column
	enc   decode.Encoding
	alloc types.RowAlloc
}

// queueLine queues ln (line s.line, ending at after) for decoding.
func (s *Source) queueLine(n *int, ln []byte, cause string, after int64) {
	at := len(s.arena)
	s.arena = append(s.arena, ln...)
	s.lines = append(s.lines, srcLine{raw: s.arena[at:len(s.arena):len(s.arena)], name: s.name, line: s.line, after: after, cause: cause})
	*n++
}

// queueTooLong queues the start of a line longer than max.message.bytes
// as a bad line.
func (s *Source) queueTooLong(n *int, raw []byte, after int64) {
	s.queueLine(n, raw, fmt.Sprintf("line longer than max.message.bytes (%d); raw bytes truncated", s.cfg.maxBytes), after)
}

// flush decodes the queued lines and adds their rows to b in order. A bad
// line is passed by (skip, dead_letter) or, under on_error = 'fail', ends
// the rows there: the position is set past it (as when lines were decoded
// one by one) and every later Read fails.
func (s *Source) flush(b *types.Batch) error {
	lines := s.lines
	if len(lines) == 0 {
		return nil
	}
	defer func() {
		clear(s.lines)
		s.lines, s.arena = s.lines[:0], s.arena[:0]
	}()
	s.decodeAll(lines)
	for i := range lines {
		l := &lines[i]
		if l.cause == "" {
			b.Add(l.row, 1)
			continue
		}
		if err := s.bad(l.name, l.line, l.cause, l.raw); err != nil {
			s.closeFile()
			s.name, s.done, s.offset, s.line = l.name, false, l.after, l.line
			s.failed = err
			return err
		}
	}
	return nil
}

// decodeAll decodes lines, split into contiguous parts among the
// decoders; this goroutine decodes the first part.
func (s *Source) decodeAll(lines []srcLine) {
	workers := max(1, min(srcDecoders, len(lines)/srcLinesPerDecoder))
	for len(s.decs) < workers {
		s.decs = append(s.decs, &srcDecoder{dec: decode.New(s.cfg.cols, s.cfg.enc, nil), cols: s.cfg.cols, enc: s.cfg.enc})
	}
	ncols := len(s.cfg.cols)
	per := (len(lines) + workers - 1) / workers
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		lo, hi := w*per, min(len(lines), (w+1)*per)
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func(d *srcDecoder, part []srcLine) {
			defer wg.Done()
			d.run(part, ncols)
		}(s.decs[w], lines[lo:hi])
	}
	s.decs[0].run(lines[:min(per, len(lines))], ncols)
	wg.Wait()
}

// run decodes lines into rows, or marks them bad.
func (d *srcDecoder) run(lines []srcLine, ncols int) {
	for i := 0; i < len(lines); {
		i = d.runFrom(lines, i, ncols)
	}
}

// runFrom decodes lines from i on. A decoder bug must not take the server
// down from a goroutine no one recovers: the line is bad, the decoder is
// replaced, and it returns the next line to decode.
func (d *srcDecoder) runFrom(lines []srcLine, i, ncols int) (next int) {
	defer func() {
		if p := recover(); p != nil {
			lines[i].cause = fmt.Sprintf("internal error decoding the line: %v", p)
			d.dec = decode.New(d.cols, d.enc, nil)
			next = i + 1
		}
	}()
	for ; i < len(lines); i++ {
		l := &lines[i]
		if l.cause != "" {
			continue
		}
		row := d.alloc.Row(ncols)
		if err := d.dec.Decode(l.raw, row); err != nil {
			l.cause = err.Error()
			continue
		}
		l.row = row
	}
	return i
}
