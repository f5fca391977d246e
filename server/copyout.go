package server

import (
	"encoding/binary"
	"math"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// copyEncoder writes COPY TO rows in PostgreSQL's formats, one row per
// call (the bytes of one CopyData message, valid until the next call).
type copyEncoder struct {
	opts *copyOpts
	cols []types.Column
	buf  []byte
	tmp  []byte
	hdr  bool // binary: the file header is still to be written
}

// pgcopySignature starts a binary COPY file.
const pgcopySignature = "PGCOPY\n\xff\r\n\x00"

// start returns what precedes the rows: the header line of text/CSV with
// HEADER (its own message, as PostgreSQL sends it), nil otherwise. The
// binary file header goes with the first row (or the trailer).
func (e *copyEncoder) start() []byte {
	switch {
	case e.opts.format == copyBinary:
		e.hdr = true
		return nil
	case !e.opts.header:
		return nil
	}
	b := e.buf[:0]
	for i, c := range e.cols {
		if i > 0 {
			b = append(b, e.opts.delim)
		}
		if e.opts.format == copyCSV {
			b = e.appendCSV(b, c.Name, false, len(e.cols) == 1)
		} else {
			b = e.appendText(b, c.Name)
		}
	}
	b = append(b, '\n')
	e.buf = b
	return b
}

func (e *copyEncoder) binaryHeader(b []byte) []byte {
	if !e.hdr {
		return b
	}
	e.hdr = false
	b = append(b, pgcopySignature...)
	b = binary.BigEndian.AppendUint32(b, 0) // flags
	return binary.BigEndian.AppendUint32(b, 0)
}

// row encodes one row.
func (e *copyEncoder) row(r types.Row) ([]byte, error) {
	b := e.buf[:0]
	if e.opts.format == copyBinary {
		b = e.binaryHeader(b)
		b = binary.BigEndian.AppendUint16(b, uint16(len(e.cols)))
		for i, c := range e.cols {
			d := r[i]
			if d.IsNull() {
				b = binary.BigEndian.AppendUint32(b, math.MaxUint32)
				continue
			}
			at := len(b)
			b = append(b, 0, 0, 0, 0)
			var err error
			if b, err = types.EncodeBinary(b, d, c.Type); err != nil {
				return nil, err
			}
			if len(b)-at-4 > math.MaxInt32 {
				return nil, pgerror.New(pgcode.ProgramLimitExceeded, "value too large to send")
			}
			binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
		}
		e.buf = b
		return b, nil
	}
	csv := e.opts.format == copyCSV
	for i, c := range e.cols {
		if i > 0 {
			b = append(b, e.opts.delim)
		}
		d := r[i]
		if d.IsNull() {
			b = append(b, e.opts.null...)
			continue
		}
		e.tmp = types.AppendTextIn(e.tmp[:0], d, c.Type, e.opts.loc)
		if csv {
			b = e.appendCSV(b, string(e.tmp), e.opts.forceQuote != nil && e.opts.forceQuote[i], len(e.cols) == 1)
		} else {
			b = e.appendText(b, string(e.tmp))
		}
	}
	b = append(b, '\n')
	e.buf = b
	return b, nil
}

// end returns the binary trailer, nil for text and CSV.
func (e *copyEncoder) end() []byte {
	if e.opts.format != copyBinary {
		return nil
	}
	b := e.binaryHeader(e.buf[:0])
	b = append(b, 0xff, 0xff)
	e.buf = b
	return b
}

// appendText is CopyAttributeOutText: backslash escapes for the control
// characters, the backslash and the delimiter.
func (e *copyEncoder) appendText(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '\\' || c == e.opts.delim {
			switch c {
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\v':
				b = append(b, '\\', 'v')
			case '\\':
				b = append(b, '\\', '\\')
			default:
				if c == e.opts.delim {
					b = append(b, '\\', c)
				} else {
					b = append(b, c)
				}
			}
			continue
		}
		b = append(b, c)
	}
	return b
}

// appendCSV is CopyAttributeOutCSV: the value is quoted when forced, when
// it reads as the NULL string, when it holds the delimiter, the quote, a
// CR or an LF, and when it is `\.` alone on its line; inside quotes the
// quote and escape characters are escaped.
func (e *copyEncoder) appendCSV(b []byte, s string, force, single bool) []byte {
	o := e.opts
	quote := force || s == o.null || (single && s == `\.`)
	if !quote {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c == o.delim || c == o.quote || c == '\n' || c == '\r' {
				quote = true
				break
			}
		}
	}
	if !quote {
		return append(b, s...)
	}
	b = append(b, o.quote)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == o.quote || c == o.escape {
			b = append(b, o.escape)
		}
		b = append(b, c)
	}
	return append(b, o.quote)
}
