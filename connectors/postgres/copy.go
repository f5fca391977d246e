package postgres

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// colType is how one Sluice type is stored in PostgreSQL: the column type
// auto.create and the staging tables declare, its OID, and the type whose
// binary form types.EncodeBinary must produce for it.
type colType struct {
	sql string
	oid uint32
	enc types.T
}

// pgColumnType maps a Sluice type to its PostgreSQL column type.
func pgColumnType(t types.T) colType {
	switch t.Fam {
	case types.Bool:
		return colType{"BOOLEAN", 16, t}
	case types.Int2:
		return colType{"SMALLINT", 21, t}
	case types.Int4:
		return colType{"INTEGER", 23, t}
	case types.Int8:
		return colType{"BIGINT", 20, t}
	case types.Float4:
		return colType{"REAL", 700, t}
	case types.Float8:
		return colType{"DOUBLE PRECISION", 701, t}
	case types.Numeric:
		if t.Prec > 0 {
			s := t.Scale
			if s < 0 {
				s = 0
			}
			return colType{fmt.Sprintf("NUMERIC(%d,%d)", t.Prec, s), 1700, t}
		}
		return colType{"NUMERIC", 1700, t}
	case types.Varchar:
		if t.Prec > 0 {
			return colType{fmt.Sprintf("VARCHAR(%d)", t.Prec), 1043, t}
		}
		return colType{"VARCHAR", 1043, t}
	case types.Bytea:
		return colType{"BYTEA", 17, t}
	case types.Date:
		return colType{"DATE", 1082, t}
	case types.Time:
		return colType{"TIME", 1083, t}
	case types.Timestamp:
		return colType{"TIMESTAMP", 1114, t}
	case types.TimestampTZ:
		return colType{"TIMESTAMPTZ", 1184, t}
	case types.Interval:
		return colType{"INTERVAL", 1186, t}
	case types.JSONB:
		return colType{"JSONB", 3802, t}
	case types.UUID:
		return colType{"UUID", 2950, t}
	case types.Oid, types.RegClass:
		// A regclass number means nothing in another database: keep the OID.
		return colType{"OID", 26, types.TOid}
	case types.Char:
		return colType{`"char"`, 18, t}
	case types.TextArray:
		return colType{"TEXT[]", 1009, t}
	}
	if types.IsElemArray(t.Fam) || t.Fam == types.BoolArray || t.Fam == types.Int2Array {
		// integer[], numeric[], …: the same array type there, sent in
		// binary with its element type's oid.
		return colType{strings.ToUpper(t.String()), t.OID(), t}
	}
	// Text, and catalog names (which PostgreSQL would cut at 63 bytes).
	return colType{"TEXT", 25, types.TText}
}

// pgcopyHeader starts a binary COPY stream: signature, flags, extension length.
var pgcopyHeader = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")

// copyChunk is how many bytes the reader encodes ahead.
const copyChunk = 256 << 10

// copyReader streams rows as PostgreSQL binary COPY data, encoding them
// as pgconn reads. pgconn reads it from its own goroutine and may stop
// reading at any time, so a copyReader is used for one COPY only.
type copyReader struct {
	rows  []types.Row
	cols  []int     // positions of the columns to send, in COPY order
	types []types.T // the encoding type of each sent column
	next  int       // next row to encode
	buf   []byte
	off   int // read position in buf
	state uint8
	err   error // an encoding error, given to pgconn as the reader's error

	// mu is held by Read, which pgconn calls from its own goroutine.
	mu struct {
		sync.Mutex
		stopped bool // Read refuses to run
	}
}

const (
	copyHeader = iota
	copyRows
	copyDone
)

func newCopyReader(rows []types.Row, cols []int, ts []types.T) *copyReader {
	return &copyReader{rows: rows, cols: cols, types: ts, buf: make([]byte, 0, copyChunk+4096)}
}

// copyFrom runs one COPY … FROM STDIN of rows (their columns cols,
// encoded as ts). A value that cannot be encoded fails the COPY and is
// the error returned, with its own SQLSTATE.
func copyFrom(ctx context.Context, conn *pgx.Conn, sql string, rows []types.Row, cols []int, ts []types.T) error {
	r := newCopyReader(rows, cols, ts)
	_, err := conn.PgConn().CopyFrom(ctx, r, sql)
	// When the connection fails, pgconn returns without waiting for its
	// reading goroutine; rows belong to the caller again once Write
	// returns, so wait out a Read in progress and refuse later ones.
	r.mu.Lock()
	r.mu.stopped = true
	encErr := r.err
	r.mu.Unlock()
	if err != nil && encErr != nil {
		return encErr
	}
	return err
}

// Read implements io.Reader.
func (r *copyReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.stopped {
		return 0, io.ErrClosedPipe
	}
	for r.off == len(r.buf) {
		if r.state == copyDone {
			return 0, io.EOF
		}
		if err := r.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.buf[r.off:])
	r.off += n
	return n, nil
}

// fill encodes the next chunk of rows into buf.
func (r *copyReader) fill() error {
	buf := r.buf[:0]
	r.off = 0
	if r.state == copyHeader {
		buf = append(buf, pgcopyHeader...)
		r.state = copyRows
	}
	for len(buf) < copyChunk && r.next < len(r.rows) {
		row := r.rows[r.next]
		r.next++
		buf = binary.BigEndian.AppendUint16(buf, uint16(len(r.cols)))
		for i, pos := range r.cols {
			d := row[pos]
			if d.IsNull() {
				buf = binary.BigEndian.AppendUint32(buf, 0xFFFFFFFF)
				continue
			}
			at := len(buf)
			buf = append(buf, 0, 0, 0, 0)
			var err error
			if buf, err = types.EncodeBinary(buf, d, r.types[i]); err != nil {
				r.buf = buf[:0]
				r.err = pgerror.Wrap(err, pgcode.Internal, "column %d", pos+1)
				return r.err
			}
			binary.BigEndian.PutUint32(buf[at:], uint32(len(buf)-at-4))
		}
	}
	if r.next == len(r.rows) {
		buf = append(buf, 0xFF, 0xFF) // trailer: field count -1
		r.state = copyDone
	}
	r.buf = buf
	return nil
}
