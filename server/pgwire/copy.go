package pgwire

import (
	"context"
	"encoding/binary"
	"io"
	"math"

	"github.com/jackc/pgproto3/v2"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// The COPY sub-protocol. A Session serves COPY ... FROM STDIN and COPY ...
// TO STDOUT through the Copier capability of the ResultWriter (see
// handler.go). Copy-in reads the client's messages on the connection's
// goroutine, inside the running statement, as PostgreSQL's CopyGetData
// does: CopyData carries bytes, CopyDone ends the data, CopyFail fails the
// statement with 57014, Flush and Sync are ignored (libpq sends a Sync
// right after an extended-protocol Execute without knowing the statement
// is a COPY, and another after CopyDone), and any other message is a
// protocol violation. Each CopyData message is bounded by
// Options.MaxMessageSize and read into the connection's reused buffer, so
// the wire layer holds one message at a time.

// copyIn sends CopyInResponse and returns the reader of the client's data.
func (c *conn) copyIn(ctx context.Context, format int16, ncols int) (CopyReader, error) {
	if ncols > math.MaxUint16 {
		return nil, pgerror.New(pgcode.ProgramLimitExceeded, "too many columns for COPY: %d", ncols)
	}
	m := &pgproto3.CopyInResponse{OverallFormat: byte(format), ColumnFormatCodes: make([]uint16, ncols)}
	for i := range m.ColumnFormatCodes {
		m.ColumnFormatCodes[i] = uint16(format)
	}
	if err := c.send(m); err != nil {
		return nil, err
	}
	if err := c.flush(); err != nil {
		return nil, err
	}
	return &copyReader{c: c, ctx: ctx}, nil
}

// copyReader reads the CopyData stream of one COPY FROM STDIN.
type copyReader struct {
	c    *conn
	ctx  context.Context
	buf  []byte // unread rest of the current CopyData message
	done bool   // CopyDone was read
	err  error  // sticky failure
}

// errLostSync ends a connection whose client sent something other than
// copy messages during COPY FROM STDIN.
var errLostSync = fatalf(pgcode.ProtocolViolation, "terminating connection because protocol synchronization was lost")

var errCopyEOF = fatalf(pgcode.ProtocolViolation, "unexpected EOF on client connection with an open transaction")

// Next returns the payload of the next CopyData message (valid until the
// next call; the rest of a message a Read left unread comes first), or
// io.EOF after CopyDone.
func (r *copyReader) Next() ([]byte, error) {
	if len(r.buf) > 0 {
		b := r.buf
		r.buf = nil
		return b, nil
	}
	if r.done {
		return nil, io.EOF
	}
	if r.err != nil {
		return nil, r.err
	}
	for {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			return nil, err
		}
		typ, body, err := r.c.readMessage()
		if err != nil {
			if !isFatal(err) {
				err = errCopyEOF
			}
			r.err = err
			return nil, err
		}
		switch typ {
		case 'd':
			if len(body) == 0 {
				continue
			}
			return body, nil
		case 'c':
			r.done = true
			return nil, io.EOF
		case 'f':
			var m pgproto3.CopyFail
			if err := decode(&m, body); err != nil {
				r.err = err
				return nil, err
			}
			r.err = pgerror.New(pgcode.QueryCanceled, "COPY from stdin failed: %s", m.Message)
			return nil, r.err
		case 'H', 'S':
			continue
		default:
			// As PostgreSQL: the message was read in the middle of the
			// copy, so after this error the connection ends (errLostSync).
			r.c.lostSync = true
			r.err = pgerror.New(pgcode.ProtocolViolation, "unexpected message type 0x%02X during COPY from stdin", typ)
			return nil, r.err
		}
	}
}

// Read implements io.Reader over the CopyData payloads.
func (r *copyReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	b, err := r.Next()
	if err != nil {
		return 0, err
	}
	n := copy(p, b)
	if n < len(b) {
		r.buf = b[n:]
	}
	return n, nil
}

// copyOut sends CopyOutResponse and returns the writer of the data.
func (c *conn) copyOut(format int16, ncols int) (CopyWriter, error) {
	if ncols > math.MaxUint16 {
		return nil, pgerror.New(pgcode.ProgramLimitExceeded, "too many columns for COPY: %d", ncols)
	}
	m := &pgproto3.CopyOutResponse{OverallFormat: byte(format), ColumnFormatCodes: make([]uint16, ncols)}
	for i := range m.ColumnFormatCodes {
		m.ColumnFormatCodes[i] = uint16(format)
	}
	if err := c.send(m); err != nil {
		return nil, err
	}
	return &copyWriter{c: c}, nil
}

// copyWriter sends one CopyData message per Write.
type copyWriter struct {
	c    *conn
	done bool
}

// Write sends p as one CopyData message.
func (w *copyWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, pgerror.New(pgcode.Internal, "pgwire: CopyData after CopyDone")
	}
	if len(p) > math.MaxInt32-4 {
		return 0, pgerror.New(pgcode.ProgramLimitExceeded, "COPY data message too large")
	}
	var hdr [5]byte
	hdr[0] = 'd'
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(p)+4))
	if err := w.c.write(hdr[:]); err != nil {
		return 0, err
	}
	if err := w.c.write(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush sends the CopyData written so far (a COPY that streams, such as
// COPY (SUBSCRIBE …), lets its client have each batch as it is made).
func (w *copyWriter) Flush() error { return w.c.flush() }

// Done sends CopyDone.
func (w *copyWriter) Done() error {
	if w.done {
		return nil
	}
	w.done = true
	return w.c.write([]byte{'c', 0, 0, 0, 4})
}

func (w *simpleWriter) CopyIn(ctx context.Context, format int16, ncols int) (CopyReader, error) {
	return w.c.copyIn(ctx, format, ncols)
}

func (w *simpleWriter) CopyOut(format int16, ncols int) (CopyWriter, error) {
	return w.c.copyOut(format, ncols)
}

func (w *portalWriter) CopyIn(ctx context.Context, format int16, ncols int) (CopyReader, error) {
	return w.c.copyIn(ctx, format, ncols)
}

func (w *portalWriter) CopyOut(format int16, ncols int) (CopyWriter, error) {
	return w.c.copyOut(format, ncols)
}
