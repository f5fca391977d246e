package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"sluice/planner/cat"
	"sluice/server/pgwire"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// badCopyFormat is bad_copy_file_format.
const badCopyFormat pgcode.Code = "22P04"

// copyFrom runs COPY t (cols) FROM STDIN: it reads and parses the whole
// stream (text and CSV on the decode pipeline, copypipe.go), then inserts
// the rows as one statement: outside a transaction block of at least
// bulkMin rows on the bulk path (bulkinsert.go), else on the row path.
func (s *session) copyFrom(ctx context.Context, rel *cat.Relation, idx []int, cols []types.Column, opts *copyOpts, cp pgwire.Copier, w pgwire.ResultWriter) error {
	format := int16(0)
	if opts.format == copyBinary {
		format = 1
	}
	cr, err := cp.CopyIn(ctx, format, len(cols))
	if err != nil {
		return err
	}
	d := &copyDecoder{
		ctx: ctx, in: &chunkReader{src: cr}, opts: opts, rel: rel.Name,
		cols: cols, idx: idx, width: len(rel.Columns),
	}
	tw, err := s.e.tableWriter(rel.ID)
	if err != nil {
		return err
	}
	// Columns left out of the list take their defaults, evaluated in row
	// order: such a COPY decodes in one goroutine.
	defaults, err := s.copyDefaults(rel.ID, idx)
	if err != nil {
		return err
	}
	var n int
	if opts.format == copyBinary || s.tx != nil || defaults {
		var rows []types.Row
		if rows, err = d.decode(); err != nil {
			return err
		}
		if defaults {
			if err = s.fillDefaults(rel.ID, idx, rows); err != nil {
				return err
			}
		}
		n, err = s.insertRows(ctx, rel.ID, rows)
	} else if tw.cons == nil || len(tw.cons.uniques) == 0 {
		// Outside a transaction block the workers encode the rows for the
		// bulk insert as they decode them, and the rows spill to scratch
		// files (copyspill.go): memory does not grow with the rows.
		n, err = s.copySpilled(ctx, d, tw)
	} else {
		// UNIQUE constraints are checked over the rows in memory.
		b := &bulkLoad{tw: tw}
		if err := d.pipeline(tw, func(c *copyChunk) { b.add(c.enc) }); err != nil {
			return err
		}
		if b.rows >= bulkMin {
			n, err = s.bulkInsert(ctx, b)
		} else {
			n, err = s.insertInto(ctx, tw, b.allRows())
		}
	}
	if err != nil {
		return err
	}
	return w.Complete(commandTag("COPY", n))
}

// maxCopyRow bounds the bytes of one row of COPY data (MaxAllocSize).
var maxCopyRow = 1<<30 - 1

// chunkReader buffers the COPY data stream so that lines and binary
// fields may span CopyData messages.
type chunkReader struct {
	src pgwire.CopyReader
	buf []byte
	pos int
	eof bool
}

// fill appends the next chunk; it reports false at the end of the data.
func (r *chunkReader) fill() (bool, error) {
	if r.eof {
		return false, nil
	}
	b, err := r.src.Next()
	if err == io.EOF {
		r.eof = true
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if r.pos > 0 && r.pos >= len(r.buf)/2 {
		n := copy(r.buf, r.buf[r.pos:])
		r.buf, r.pos = r.buf[:n], 0
	}
	if held := len(r.buf) - r.pos; held+len(b) > maxCopyRow {
		// One row (a line, or a binary field) longer than PostgreSQL's
		// 1 GB string limit: refuse rather than grow without bound.
		return false, pgerror.New(pgcode.ProgramLimitExceeded, "out of memory").
			WithDetail("Cannot enlarge string buffer containing %d bytes by %d more bytes.", held, len(b))
	}
	r.buf = append(r.buf, b...)
	return true, nil
}

// need makes n bytes available; it reports false at the end of the data.
func (r *chunkReader) need(n int) (bool, error) {
	for len(r.buf)-r.pos < n {
		ok, err := r.fill()
		if !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}

// drain reads the rest of the data (after the end-of-data marker).
func (r *chunkReader) drain() error {
	r.buf, r.pos = r.buf[:0], 0
	for {
		ok, err := r.fill()
		if !ok || err != nil {
			return err
		}
		r.buf = r.buf[:0]
	}
}

// copyDecoder parses the rows of one COPY FROM.
type copyDecoder struct {
	ctx    context.Context
	in     *chunkReader
	opts   *copyOpts
	rel    string
	cols   []types.Column // the copied columns
	idx    []int          // their positions in the table
	width  int            // the table's width
	lineno int
	eol    byte // the text/CSV line ending: 0 unknown, '\n', '\r' or 'R' (\r\n)

	line   []byte  // the current line (without its ending)
	fields []field // its fields
	// lineStr is line as a string when the caller has one (a slice of its
	// chunk's string: one allocation per chunk rather than per row)
	lineStr string
	slab    []types.Datum
	sb      []byte
}

// field is one parsed text/CSV field.
type field struct {
	val    []byte
	null   bool
	quoted bool
	// raw: val is d.line[off:off+len(val)], so its string is a substring
	// of the line's (one allocation per row rather than per field)
	raw bool
	off int
}

// where returns PostgreSQL's CONTEXT for an error on the current line.
func (d *copyDecoder) where(col int, val []byte, null bool) string {
	switch {
	case col >= 0 && null:
		return fmt.Sprintf("COPY %s, line %d, column %s: null input", d.rel, d.lineno, d.cols[col].Name)
	case col >= 0 && d.opts.format == copyBinary:
		return fmt.Sprintf("COPY %s, line %d, column %s", d.rel, d.lineno, d.cols[col].Name)
	case col >= 0:
		return fmt.Sprintf("COPY %s, line %d, column %s: \"%s\"", d.rel, d.lineno, d.cols[col].Name, printable(val))
	case val != nil:
		return fmt.Sprintf("COPY %s, line %d: \"%s\"", d.rel, d.lineno, printable(val))
	}
	return fmt.Sprintf("COPY %s, line %d", d.rel, d.lineno)
}

// printable is limit_printout_length: at most 100 bytes (whole
// characters), then "...".
func printable(b []byte) string {
	const max = 100
	if len(b) <= max {
		return strings.ToValidUTF8(string(b), "?")
	}
	n := max
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return strings.ToValidUTF8(string(b[:n]), "?") + "..."
}

// lineErr is a 22P04 error naming the current line.
func (d *copyDecoder) lineErr(withLine bool, format string, args ...any) error {
	var line []byte
	if withLine {
		line = d.line
		if line == nil {
			line = []byte{}
		}
	}
	return pgerror.New(badCopyFormat, format, args...).WithWhere("%s", d.where(-1, line, false))
}

// withWhere sets the CONTEXT of err (keeping its code, 22P02 if it has
// none).
func withWhere(err error, where string) error {
	e := pgerror.Flatten(err)
	out := *e
	if out.Code.IsInternal() {
		out.Code = pgcode.InvalidTextRepresentation
	}
	out.Where = where
	return &out
}

// maxCopyValues bounds the values one COPY FROM holds in memory: every
// row is kept until the single insert at the end (about 1.7 KB of server
// memory per row of six columns), so an unbounded COPY could take the
// server down. Past it the COPY is refused and nothing is loaded.
var maxCopyValues = 32 << 20

func (d *copyDecoder) checkSize(rows int) error {
	if rows*max(d.width, 1) <= maxCopyValues {
		return nil
	}
	return pgerror.New(pgcode.ProgramLimitExceeded, "COPY FROM STDIN of more than %d values in one statement is not supported", maxCopyValues).
		WithHint("Split the data into several COPY statements of at most %d rows each.", maxCopyValues/max(d.width, 1)).
		WithWhere("%s", d.where(-1, nil, false))
}

// newRow returns a full-width row of NULLs, cut from a slab.
func (d *copyDecoder) newRow() types.Row {
	if len(d.slab) < d.width {
		// Small slabs: a slab is written right after it is allocated (and
		// zeroed), while it is still in the cache.
		d.slab = make([]types.Datum, d.width*max(1, 256/max(d.width, 1)))
	}
	r := d.slab[:d.width:d.width]
	d.slab = d.slab[d.width:]
	return r
}

// lines calls f for every data line of a text or CSV stream, in order,
// with d.line and d.lineno set: it skips (or with HEADER MATCH checks) the
// header and stops at the end-of-data marker.
func (d *copyDecoder) lines(f func() error) error {
	first := true
	for n := 0; ; n++ {
		if n&1023 == 0 {
			if err := d.ctx.Err(); err != nil {
				return err
			}
		}
		ok, err := d.readLine()
		if err != nil || !ok {
			return err
		}
		if first {
			first = false
			if d.opts.header {
				if d.opts.match {
					if err := d.matchHeader(); err != nil {
						return err
					}
				}
				continue
			}
		}
		if d.opts.format == copyCSV && len(d.line) == 2 && d.line[0] == '\\' && d.line[1] == '.' {
			return d.in.drain()
		}
		end := false
		if d.opts.format == copyText {
			if end, err = d.textEndMarker(); err != nil {
				return err
			}
			if end && len(d.line) == 0 {
				return d.in.drain()
			}
		}
		if err := f(); err != nil {
			return err
		}
		if end {
			return d.in.drain()
		}
	}
}

// textEndMarker handles `\.` in text format: alone on its line or at the
// end of a line it ends the data (the line, less the marker, is the last
// row); followed by anything else it is corrupt.
func (d *copyDecoder) textEndMarker() (bool, error) {
	l := d.line
	for i := 0; i < len(l); i++ {
		if l[i] != '\\' {
			continue
		}
		if i+1 < len(l) && l[i+1] == '.' {
			if i+2 != len(l) {
				return false, d.lineErr(false, "end-of-copy marker corrupt")
			}
			d.line = l[:i]
			return true, nil
		}
		i++
	}
	return false, nil
}

// readLine reads the next line (for CSV, a quoted field may hold line
// endings) into d.line; it reports false at the end of the data.
func (d *copyDecoder) readLine() (bool, error) {
	in := d.in
	csv := d.opts.format == copyCSV
	quote, escape := d.opts.quote, d.opts.escape
	inQuote, lastEsc := false, false
	i := in.pos
	d.lineno++
	start := d.lineno
	for {
		if i >= len(in.buf) {
			off := i - in.pos
			ok, err := in.fill()
			if err != nil {
				return false, err
			}
			i = in.pos + off
			if !ok {
				i = min(i, len(in.buf))
				if i == in.pos {
					d.lineno--
					return false, nil
				}
				// a last line without its ending
				d.line = in.buf[in.pos:i]
				in.pos = i
				if inQuote {
					d.lineno = start // PostgreSQL names the row's first line here
					return false, d.lineErr(true, "unterminated CSV quoted field")
				}
				return true, d.checkUTF8()
			}
			continue
		}
		c := in.buf[i]
		if csv {
			if inQuote && c == escape && escape != quote {
				lastEsc = !lastEsc
			}
			if c == quote && !lastEsc {
				inQuote = !inQuote
			}
			if c != escape {
				lastEsc = false
			}
			if inQuote {
				if c == '\n' {
					d.lineno++
				}
				i++
				continue
			}
		} else if c == '\\' {
			// the escaped byte is data, even a line ending
			i += 2
			continue
		}
		if c != '\n' && c != '\r' {
			i++
			continue
		}
		d.line = in.buf[in.pos:i]
		next := i + 1
		if c == '\r' {
			if next >= len(in.buf) {
				off := i - in.pos
				if _, err := in.fill(); err != nil {
					return false, err
				}
				i = in.pos + off
				d.line = in.buf[in.pos:i]
				next = i + 1
			}
			crlf := next < len(in.buf) && in.buf[next] == '\n'
			switch {
			case d.eol == 0 && crlf:
				d.eol = 'R'
			case d.eol == 0:
				d.eol = '\r'
			case d.eol == '\n' || (d.eol == 'R' && !crlf) || (d.eol == '\r' && crlf):
				return false, d.crlfErr(csv, "carriage return", `\r`)
			}
			if crlf {
				next++
			}
		} else {
			switch d.eol {
			case 0:
				d.eol = '\n'
			case '\r', 'R':
				return false, d.crlfErr(csv, "newline", `\n`)
			}
		}
		in.pos = next
		return true, d.checkUTF8()
	}
}

func (d *copyDecoder) crlfErr(csv bool, what, esc string) error {
	kind := "literal"
	hint := fmt.Sprintf("Use \"%s\" to represent %s.", esc, what)
	if csv {
		kind = "unquoted"
		hint = fmt.Sprintf("Use quoted CSV field to represent %s.", what)
	}
	return pgerror.New(badCopyFormat, "%s %s found in data", kind, what).WithHint("%s", hint).WithWhere("%s", d.where(-1, nil, false))
}

// validText reports whether b is UTF-8 without NUL bytes.
func validText(b []byte) bool {
	for _, c := range b {
		if c == 0 {
			return false
		}
	}
	return utf8.Valid(b)
}

// checkUTF8 rejects a line that is not UTF-8 (the only encoding).
func (d *copyDecoder) checkUTF8() error {
	if validText(d.line) {
		return nil
	}
	return d.badByte(d.line)
}

func (d *copyDecoder) badByte(b []byte) error {
	k := 0
	for k < len(b) {
		r, n := utf8.DecodeRune(b[k:])
		if r == utf8.RuneError && n <= 1 || r == 0 {
			break
		}
		k += n
	}
	bad := b[k:min(k+1, len(b))]
	var hex strings.Builder
	for i, c := range bad {
		if i > 0 {
			hex.WriteByte(' ')
		}
		fmt.Fprintf(&hex, "0x%02x", c)
	}
	return pgerror.New(pgcode.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\": %s", hex.String()).
		WithWhere("%s", d.where(-1, nil, false))
}

// splitFields splits d.line into d.fields.
func (d *copyDecoder) splitFields() error {
	d.fields = d.fields[:0]
	d.sb = d.sb[:0]
	if d.opts.format == copyCSV {
		return d.splitCSV()
	}
	return d.splitText()
}

// splitText is CopyReadAttributesText: fields end at an unescaped
// delimiter; a field whose raw text is the NULL string is NULL;
// backslash escapes are decoded.
func (d *copyDecoder) splitText() error {
	l, delim, null := d.line, d.opts.delim, d.opts.null
	start := 0
	for {
		i := start
		esc := false
		for i < len(l) && l[i] != delim {
			if l[i] == '\\' {
				esc = true
				i++
			}
			i++
		}
		i = min(i, len(l))
		raw := l[start:i]
		f := field{val: raw, raw: !esc, off: start}
		if string(raw) == null {
			f.null = true
		} else if esc {
			at := len(d.sb)
			d.sb = unescapeText(d.sb, raw)
			f.val = d.sb[at:]
			if !validText(f.val) {
				return withWhere(d.badByte(f.val), d.where(-1, d.line, false))
			}
		}
		d.fields = append(d.fields, f)
		if i >= len(l) {
			return nil
		}
		start = i + 1
	}
}

func unhexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// unescapeText decodes the backslash escapes of a text-format field.
func unescapeText(b, raw []byte) []byte {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			b = append(b, c)
			continue
		}
		i++
		if i >= len(raw) {
			b = append(b, '\\')
			break
		}
		c = raw[i]
		switch {
		case c >= '0' && c <= '7':
			v := c - '0'
			for k := 0; k < 2 && i+1 < len(raw) && raw[i+1] >= '0' && raw[i+1] <= '7'; k++ {
				i++
				v = v<<3 + raw[i] - '0'
			}
			b = append(b, v)
		case c == 'x' && i+1 < len(raw):
			if h, ok := unhexDigit(raw[i+1]); ok {
				i++
				v := h
				if i+1 < len(raw) {
					if h2, ok := unhexDigit(raw[i+1]); ok {
						i++
						v = v<<4 + h2
					}
				}
				b = append(b, v)
			} else {
				b = append(b, 'x')
			}
		case c == 'b':
			b = append(b, '\b')
		case c == 'f':
			b = append(b, '\f')
		case c == 'n':
			b = append(b, '\n')
		case c == 'r':
			b = append(b, '\r')
		case c == 't':
			b = append(b, '\t')
		case c == 'v':
			b = append(b, '\v')
		default:
			b = append(b, c)
		}
	}
	return b
}

// splitCSV is CopyReadAttributesCSV: quoted parts keep delimiters and line
// endings, the escape character escapes the quote (and itself) inside
// quotes; an unquoted field equal to the NULL string is NULL unless
// FORCE_NOT_NULL, a quoted one only with FORCE_NULL.
func (d *copyDecoder) splitCSV() error {
	o := d.opts
	l := d.line
	start := 0
	for col := 0; ; col++ {
		// Fast path: a field without quotes is a slice of the line.
		i := start
		for i < len(l) && l[i] != o.delim && l[i] != o.quote {
			i++
		}
		if i >= len(l) || l[i] == o.delim {
			raw := l[start:i]
			f := field{val: raw, raw: true, off: start}
			if string(raw) == o.null {
				f.null = !(col < len(o.forceNN) && o.forceNN[col])
			}
			d.fields = append(d.fields, f)
			if i >= len(l) {
				return nil
			}
			start = i + 1
			continue
		}
		at := len(d.sb)
		i = start
		quoted := false
		for i < len(l) && l[i] != o.delim {
			if l[i] != o.quote {
				d.sb = append(d.sb, l[i])
				i++
				continue
			}
			quoted = true
			i++
			for {
				if i >= len(l) {
					return d.lineErr(true, "unterminated CSV quoted field")
				}
				c := l[i]
				if c == o.escape && o.escape != o.quote && i+1 < len(l) && (l[i+1] == o.quote || l[i+1] == o.escape) {
					d.sb = append(d.sb, l[i+1])
					i += 2
					continue
				}
				if c == o.quote {
					if o.escape == o.quote && i+1 < len(l) && l[i+1] == o.quote {
						d.sb = append(d.sb, c)
						i += 2
						continue
					}
					i++
					break
				}
				d.sb = append(d.sb, c)
				i++
			}
		}
		raw := l[start:min(i, len(l))]
		f := field{val: d.sb[at:], quoted: quoted}
		isNull := string(raw) == o.null || (quoted && string(f.val) == o.null)
		switch {
		case !quoted && isNull:
			f.null = !(col < len(o.forceNN) && o.forceNN[col])
		case quoted && isNull:
			f.null = col < len(o.forceNull) && o.forceNull[col]
		}
		d.fields = append(d.fields, f)
		if i >= len(l) {
			return nil
		}
		start = i + 1
	}
}

// rowOf turns the fields of the current line into a table row.
func (d *copyDecoder) rowOf() (types.Row, error) {
	if len(d.fields) > len(d.cols) {
		if len(d.cols) == 0 && len(d.fields) == 1 && len(d.fields[0].val) == 0 {
			return d.newRow(), nil
		}
		return nil, d.lineErr(true, "extra data after last expected column")
	}
	r := d.newRow()
	line := d.lineStr
	for i := range d.cols {
		// As PostgreSQL: values convert in column order, so a bad value
		// before the missing one is what is reported.
		if i >= len(d.fields) {
			return nil, d.lineErr(true, "missing data for column \"%s\"", d.cols[i].Name)
		}
		f := d.fields[i]
		if f.null {
			continue
		}
		var str string
		if f.raw {
			if line == "" {
				line = string(d.line)
			}
			str = line[f.off : f.off+len(f.val)]
		} else {
			str = string(f.val)
		}
		v, err := types.ParseTextIn(str, d.cols[i].Type, d.opts.loc)
		if err != nil {
			return nil, withWhere(err, d.where(i, f.val, false))
		}
		r[d.idx[i]] = v
	}
	return r, nil
}

// matchHeader is HEADER MATCH: the header line names the copied columns.
func (d *copyDecoder) matchHeader() error {
	if err := d.splitFields(); err != nil {
		return err
	}
	if len(d.fields) != len(d.cols) {
		return d.lineErr(true, "wrong number of fields in header line: got %d, expected %d", len(d.fields), len(d.cols))
	}
	for i, f := range d.fields {
		if f.null {
			return d.lineErr(true, "column name mismatch in header line field %d: got null value (\"%s\"), expected \"%s\"", i+1, f.val, d.cols[i].Name)
		}
		if string(f.val) != d.cols[i].Name {
			return d.lineErr(true, "column name mismatch in header line field %d: got \"%s\", expected \"%s\"", i+1, f.val, d.cols[i].Name)
		}
	}
	return nil
}

// decodeBinary reads the binary format: the PGCOPY header, then tuples of
// (int16 field count, per field int32 length or -1 and the value in its
// type's binary format), ending with a -1 field count.
func (d *copyDecoder) decodeBinary() ([]types.Row, error) {
	in := d.in
	short := func() error {
		return pgerror.New(badCopyFormat, "unexpected EOF in COPY data").WithWhere("%s", d.where(-1, nil, false))
	}
	hdrErr := func(msg string) error { return pgerror.New(badCopyFormat, "%s", msg) }
	if ok, err := in.need(len(pgcopySignature)); err != nil {
		return nil, err
	} else if !ok || string(in.buf[in.pos:in.pos+len(pgcopySignature)]) != pgcopySignature {
		return nil, hdrErr("COPY file signature not recognized")
	}
	in.pos += len(pgcopySignature)
	if ok, err := in.need(4); err != nil {
		return nil, err
	} else if !ok {
		return nil, hdrErr("invalid COPY file header (missing flags)")
	}
	flags := binary.BigEndian.Uint32(in.buf[in.pos:])
	in.pos += 4
	if flags&(1<<16) != 0 {
		return nil, hdrErr("invalid COPY file header (WITH OIDS)")
	}
	if flags&0xffff0000 != 0 {
		return nil, hdrErr("unrecognized critical flags in COPY file header")
	}
	if ok, err := in.need(4); err != nil {
		return nil, err
	} else if !ok {
		return nil, hdrErr("invalid COPY file header (missing length)")
	}
	ext := int(int32(binary.BigEndian.Uint32(in.buf[in.pos:])))
	in.pos += 4
	if ext < 0 {
		return nil, hdrErr("invalid COPY file header (wrong length)")
	}
	if ok, err := in.need(ext); err != nil {
		return nil, err
	} else if !ok {
		return nil, hdrErr("invalid COPY file header (wrong length)")
	}
	in.pos += ext

	var rows []types.Row
	for {
		if len(rows)&1023 == 0 {
			if err := d.ctx.Err(); err != nil {
				return nil, err
			}
		}
		d.lineno++
		ok, err := in.need(2)
		if err != nil {
			return nil, err
		}
		if !ok {
			if len(in.buf) == in.pos {
				return rows, nil // no trailer: PostgreSQL accepts the end of the data too
			}
			return nil, short()
		}
		n := int(int16(binary.BigEndian.Uint16(in.buf[in.pos:])))
		in.pos += 2
		if n == -1 {
			if ok, err := in.need(1); err != nil {
				return nil, err
			} else if ok {
				return nil, pgerror.New(badCopyFormat, "received copy data after EOF marker").WithWhere("%s", d.where(-1, nil, false))
			}
			return rows, nil
		}
		if n != len(d.cols) {
			return nil, pgerror.New(badCopyFormat, "row field count is %d, expected %d", n, len(d.cols)).WithWhere("%s", d.where(-1, nil, false))
		}
		r := d.newRow()
		for i, c := range d.cols {
			if ok, err := in.need(4); err != nil {
				return nil, err
			} else if !ok {
				return nil, short()
			}
			flen := int(int32(binary.BigEndian.Uint32(in.buf[in.pos:])))
			in.pos += 4
			if flen == -1 {
				continue
			}
			if flen < 0 {
				return nil, pgerror.New(badCopyFormat, "invalid field size").WithWhere("%s", d.where(i, nil, false))
			}
			if ok, err := in.need(flen); err != nil {
				return nil, err
			} else if !ok {
				return nil, short()
			}
			v, err := types.DecodeBinary(in.buf[in.pos:in.pos+flen], c.Type)
			in.pos += flen
			if err != nil {
				e := pgerror.Flatten(err)
				code := e.Code
				if code.IsInternal() {
					code = pgcode.InvalidBinaryRepresentation
				}
				return nil, pgerror.New(code, "incorrect binary data format").WithDetail("%s", e.Message).WithWhere("%s", d.where(i, nil, false))
			}
			r[d.idx[i]] = v
		}
		rows = append(rows, r)
		if err := d.checkSize(len(rows)); err != nil {
			return nil, err
		}
	}
}
