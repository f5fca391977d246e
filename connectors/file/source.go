package file

// The 'file' source connector: JSON-lines or CSV files of a directory,
// optionally gzip-compressed, read in name order, with (file, byte offset,
// line) as the checkpointed position. The reader runs on the engine's
// goroutine: a local read never blocks for long, so no fetcher goroutine;
// the lines one Read takes are decoded in parallel (decode.go).

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sluice/connectors/internal/msgfmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"sluice/connectors/internal/chunkq"
	"sluice/connectors/internal/decode"
	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// SourceFactory is the file source connector.
type SourceFactory struct{}

func init() { connector.RegisterSource("file", SourceFactory{}) }

const (
	srcDefaultMaxBytes = 1 << 20
	srcDefaultPoll     = time.Second
	srcMinBuffer       = 256 << 10
	// srcBudget bounds the time one Read spends, so that barriers are not
	// held up behind a long file.
	srcBudget = 5 * time.Millisecond
)

var srcKnownOptions = map[string]bool{
	"connector": true, "path": true, "pattern": true, "on_error": true, "max.message.bytes": true,
	"poll.interval.ms": true, "csv.header": true, "format": true, "encode": true,
}

type srcConfig struct {
	name     string
	dir      string
	pattern  string
	cols     []types.Column
	enc      decode.Encoding
	onError  msgfmt.OnError
	maxBytes int
	poll     time.Duration
	header   bool // CSV files start with a header line
}

func srcParse(cfg connector.SourceConfig) (*srcConfig, error) {
	if len(cfg.Columns) == 0 {
		return nil, pgerror.New(pgcode.InvalidObjectDefinition, "a file source needs declared columns")
	}
	for k := range cfg.Options {
		if !srcKnownOptions[k] {
			return nil, pgerror.New(pgcode.InvalidParameterValue, "file option %s: unknown option", k).
				WithHint("file source options are path, pattern, on_error, max.message.bytes, poll.interval.ms and csv.header")
		}
	}
	get := func(k string) string { return strings.TrimSpace(cfg.Options[k]) }
	dir, err := cfg.Policy.FilePath("file", "path", get("path"))
	if err != nil {
		return nil, err
	}
	c := &srcConfig{name: cfg.Name, dir: dir, cols: cfg.Columns, maxBytes: srcDefaultMaxBytes, poll: srcDefaultPoll, header: true}
	c.pattern = get("pattern")
	if c.pattern == "" {
		c.pattern = "*"
	}
	if strings.ContainsRune(c.pattern, '/') {
		return nil, connector.OptionError("file", "pattern", "%q must match file names, not paths", c.pattern)
	}
	if _, err := filepath.Match(c.pattern, "x"); err != nil {
		return nil, connector.OptionError("file", "pattern", "%q is not a valid pattern: %v", c.pattern, err)
	}
	if c.onError, err = msgfmt.ParseOnError("file", get("on_error")); err != nil {
		return nil, err
	}
	if c.maxBytes, err = msgfmt.ParseMaxBytes("file", get("max.message.bytes"), c.maxBytes); err != nil {
		return nil, err
	}
	if v := get("poll.interval.ms"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10 || n > 3600_000 {
			return nil, connector.OptionError("file", "poll.interval.ms", "%q is not a number of milliseconds between 10 and 3600000", v)
		}
		c.poll = time.Duration(n) * time.Millisecond
	}
	switch v := strings.ToLower(get("csv.header")); v {
	case "", "true":
	case "false":
		c.header = false
	default:
		return nil, connector.OptionError("file", "csv.header", "%q is not 'true' or 'false'", v)
	}
	if f := strings.ToUpper(get("format")); f != "" && f != "PLAIN" {
		return nil, pgerror.New(pgcode.FeatureNotSupported, "file source does not support FORMAT %s", f).
			WithHint("a file source reads FORMAT PLAIN records")
	}
	enc, ok := decode.ParseEncoding(get("encode"))
	if !ok || enc.NeedsRegistry() {
		return nil, pgerror.New(pgcode.FeatureNotSupported, "file source does not support ENCODE %s", get("encode")).
			WithHint("use ENCODE JSON (JSON lines) or CSV")
	}
	c.enc = enc
	return c, nil
}

// Validate implements connector.SourceFactory. The directory need not
// exist yet: files are picked up when they appear.
func (SourceFactory) Validate(cfg connector.SourceConfig) ([]types.Column, error) {
	if _, err := srcParse(cfg); err != nil {
		return nil, err
	}
	return cfg.Columns, nil
}

// Open implements connector.SourceFactory.
func (SourceFactory) Open(_ context.Context, cfg connector.SourceConfig) (connector.Source, error) {
	c, err := srcParse(cfg)
	if err != nil {
		return nil, err
	}
	buf := c.maxBytes + 2
	if buf < srcMinBuffer {
		buf = srcMinBuffer
	}
	return &Source{cfg: c, buf: make([]byte, buf)}, nil
}

// Source reads the files of a directory. All calls come from the engine's
// goroutine (connector.Source); it owns no goroutine.
//
// Files are read in name order; a file is left for the next one when it
// ends and a later file exists (a writer appending to the newest file is
// followed; a last line without a newline is read once a later file
// appears), or, for a .gz file, at the end of its gzip stream. A file
// still being written as .gz is read up to what it holds and continued
// when it grows.
type Source struct {
	cfg *srcConfig

	// Position: the file being read (or the last one finished, done), the
	// byte offset of the first unread line (uncompressed for .gz), and the
	// number of lines consumed.
	name   string
	done   bool
	offset int64
	line   int64

	f       *os.File
	gz      *gzip.Reader
	r       io.Reader
	buf     []byte
	start   int
	end     int
	discard bool // inside a line longer than max.message.bytes
	header  bool // the current file's header line is still ahead
	reopen  bool // a .gz file ended early: reopen at offset when it grows

	listed   time.Time
	queue    []string // names after name, from the last listing
	pending  error
	failed   error // a bad line under on_error = 'fail': every Read returns it
	dead     chunkq.DeadLetters
	headerOK []string

	// The lines read but not yet decoded (decode.go).
	lines []srcLine
	arena []byte
	decs  []*srcDecoder
}

var (
	_ connector.Seekable         = (*Source)(nil)
	_ connector.DeadLetterSource = (*Source)(nil)
)

const posVersion = 1

// Position implements connector.Seekable: version, done flag, file name,
// byte offset, lines consumed.
func (s *Source) Position() []byte {
	b := []byte{posVersion, 0}
	if s.done {
		b[1] = 1
	}
	b = binary.AppendUvarint(b, uint64(len(s.name)))
	b = append(b, s.name...)
	b = binary.AppendUvarint(b, uint64(s.offset))
	return binary.AppendUvarint(b, uint64(s.line))
}

// Seek implements connector.Seekable. The file of the position must
// still exist unless it was finished: its unread rest would be lost.
func (s *Source) Seek(pos []byte) error {
	bad := pgerror.New(pgcode.DataCorrupted, "file source %s: unreadable checkpoint position", s.cfg.name)
	if len(pos) < 2 || pos[0] != posVersion {
		return bad
	}
	done := pos[1] == 1
	p := pos[2:]
	n, k := binary.Uvarint(p)
	if k <= 0 || uint64(len(p)-k) < n {
		return bad
	}
	name := string(p[k : k+int(n)])
	p = p[k+int(n):]
	off, k := binary.Uvarint(p)
	if k <= 0 {
		return bad
	}
	line, k2 := binary.Uvarint(p[k:])
	if k2 <= 0 {
		return bad
	}
	s.closeFile()
	s.name, s.done, s.offset, s.line = name, done, int64(off), int64(line)
	if name == "" || done {
		return nil
	}
	if err := s.openFile(); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return pgerror.New(pgcode.UndefinedFile, "file source %s: file %s, read up to byte %d at the last checkpoint, is gone", s.cfg.name, name, off).
				WithHint("Files must stay until the source has read them to the end; restore the file or drop and recreate the source.")
		}
		return err
	}
	return nil
}

func (s *Source) ioError(err error, what string) error {
	return pgerror.Wrap(err, pgcode.IOError, "file source %s: %s", s.cfg.name, what)
}

// openFile opens s.name and skips to s.offset.
func (s *Source) openFile() error {
	f, err := os.Open(filepath.Join(s.cfg.dir, s.name))
	if err != nil {
		return err
	}
	s.f, s.r = f, f
	s.start, s.end, s.discard, s.reopen = 0, 0, false, false
	s.header = s.cfg.enc == decode.CSV && s.cfg.header && s.offset == 0
	if strings.HasSuffix(s.name, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				// Not even a whole gzip header yet: try again when it grows.
				s.reopen = true
				return nil
			}
			f.Close()
			s.f, s.r = nil, nil
			return s.ioError(err, "file "+s.name+" is not gzip")
		}
		s.gz, s.r = zr, zr
		if _, err := io.CopyN(io.Discard, zr, s.offset); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				s.reopen = true
				return nil
			}
			return s.ioError(err, "reading "+s.name)
		}
		return nil
	}
	if _, err := f.Seek(s.offset, io.SeekStart); err != nil {
		return s.ioError(err, "seeking in "+s.name)
	}
	return nil
}

func (s *Source) closeFile() {
	if s.f != nil {
		s.f.Close()
	}
	s.f, s.gz, s.r = nil, nil, nil
	s.start, s.end, s.discard = 0, 0, false
}

// list returns the names matching the pattern after s.name, in order.
func (s *Source) list() ([]string, error) {
	ents, err := os.ReadDir(s.cfg.dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, s.ioError(err, "listing "+s.cfg.dir)
	}
	var out []string
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		n := e.Name()
		if ok, _ := filepath.Match(s.cfg.pattern, n); !ok || n <= s.name && s.name != "" {
			continue
		}
		if n == s.name {
			continue
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// laterFile returns the first file after the current one: from the last
// listing while it has such names, else from a new listing (at most once
// per poll interval). "" means none yet.
func (s *Source) laterFile() (string, error) {
	for len(s.queue) > 0 && s.name != "" && s.queue[0] <= s.name {
		s.queue = s.queue[1:]
	}
	if len(s.queue) > 0 {
		return s.queue[0], nil
	}
	if time.Since(s.listed) < s.cfg.poll {
		return "", nil
	}
	s.listed = time.Now()
	names, err := s.list()
	if err != nil || len(names) == 0 {
		return "", err
	}
	s.queue = names
	return names[0], nil
}

// fill reads more bytes of the current file into the buffer.
func (s *Source) fill() (int, error) {
	if s.start > 0 {
		s.end = copy(s.buf, s.buf[s.start:s.end])
		s.start = 0
	}
	if s.end == len(s.buf) {
		return 0, nil
	}
	n, err := s.r.Read(s.buf[s.end:])
	s.end += n
	return n, err
}

// Read implements connector.Source.
func (s *Source) Read(ctx context.Context, b *types.Batch, max int) (int, error) {
	if s.failed != nil {
		return 0, s.failed
	}
	if s.pending != nil {
		err := s.pending
		s.pending = nil
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	n, err := s.read(b, max)
	if err != nil && n > 0 {
		// The rows before the failure go out first.
		s.pending = err
		return n, nil
	}
	return n, err
}

// read reads up to max lines, then decodes them (flush): a bad line
// under on_error = 'fail' ends the rows there.
func (s *Source) read(b *types.Batch, max int) (int, error) {
	before := b.Len()
	err := s.readLines(b, max)
	if ferr := s.flush(b); ferr != nil {
		err = ferr // it comes before err in the stream
	}
	return b.Len() - before, err
}

// readLines queues up to max lines for decoding.
func (s *Source) readLines(b *types.Batch, max int) error {
	deadline := time.Now().Add(srcBudget)
	n := 0
	for n < max {
		if s.f == nil {
			next, err := s.laterFile()
			if err != nil {
				return err
			}
			if next == "" {
				return nil
			}
			s.name, s.done, s.offset, s.line = next, false, 0, 0
			if err := s.openFile(); err != nil {
				if errors.Is(err, os.ErrNotExist) {
					s.done = true // listed and gone before it was opened: nothing read
					continue
				}
				return err
			}
		}
		if s.reopen {
			if time.Since(s.listed) < s.cfg.poll {
				return nil
			}
			s.listed = time.Now()
			s.closeFile()
			if err := s.openFile(); err != nil {
				return err
			}
			if s.reopen {
				return nil
			}
		}
		i := bytes.IndexByte(s.buf[s.start:s.end], '\n')
		if i < 0 {
			if s.end-s.start == len(s.buf) {
				// A line longer than the buffer: cut it, pass it as bad,
				// and drop the rest of it.
				if !s.discard {
					s.line++
					s.queueTooLong(&n, s.buf[:min(s.cfg.maxBytes, len(s.buf))], s.offset+int64(s.end-s.start))
				}
				s.discard = true
				s.offset += int64(s.end - s.start)
				s.start, s.end = 0, 0
				continue
			}
			got, err := s.fill()
			if got > 0 {
				continue
			}
			if err == nil {
				continue
			}
			if !errors.Is(err, io.EOF) {
				if s.gz != nil && errors.Is(err, io.ErrUnexpectedEOF) {
					// A .gz file still being written: read on when it grows.
					s.reopen = true
					s.start, s.end = 0, 0
					return nil
				}
				return s.ioError(err, "reading "+s.name)
			}
			// The end of what the file holds now.
			if s.gz == nil {
				next, lerr := s.laterFile()
				if lerr != nil {
					return lerr
				}
				if next == "" {
					return nil // follow the file as it grows
				}
				// A later file exists: the writer has moved on. Read
				// what grew meanwhile, then the last line without its
				// newline.
				if got, err := s.fill(); got > 0 || (err != nil && !errors.Is(err, io.EOF)) {
					if err != nil && !errors.Is(err, io.EOF) {
						return s.ioError(err, "reading "+s.name)
					}
					continue
				}
			}
			if s.end > s.start && !s.discard {
				if err := s.take(b, &n, s.buf[s.start:s.end], s.offset+int64(s.end-s.start)); err != nil {
					return err
				}
			}
			s.offset += int64(s.end - s.start)
			s.closeFile()
			s.done = true
			continue
		}
		ln := s.buf[s.start : s.start+i]
		s.start += i + 1
		if s.discard {
			s.discard = false
			s.offset += int64(i + 1)
			continue
		}
		if k := len(ln); k > 0 && ln[k-1] == '\r' {
			ln = ln[:k-1]
		}
		if len(ln) > s.cfg.maxBytes {
			s.line++
			s.queueTooLong(&n, ln[:s.cfg.maxBytes], s.offset+int64(i+1))
			s.offset += int64(i + 1)
			continue
		}
		if err := s.take(b, &n, ln, s.offset+int64(i+1)); err != nil {
			s.offset += int64(i + 1)
			return err
		}
		s.offset += int64(i + 1)
		if (n&63 == 0 && time.Now().After(deadline)) || len(s.arena) >= srcArenaBytes {
			break
		}
	}
	return nil
}

// take queues one line (s.line not yet counted) for decoding; after is
// the offset past it. A CSV header is checked at once, after the lines
// before it are decoded.
func (s *Source) take(b *types.Batch, n *int, ln []byte, after int64) error {
	s.line++
	if k := len(ln); k > 0 && ln[k-1] == '\r' {
		ln = ln[:k-1]
	}
	if len(bytes.TrimSpace(ln)) == 0 {
		return nil // blank lines separate nothing
	}
	if s.header {
		s.header = false
		if err := s.flush(b); err != nil {
			return err
		}
		return s.checkHeader(ln)
	}
	s.queueLine(n, ln, "", after)
	return nil
}

// checkHeader compares a CSV header with the declared columns: a file
// whose columns are in another order would fill the wrong columns.
func (s *Source) checkHeader(ln []byte) error {
	fields := strings.Split(string(ln), ",")
	ok := len(fields) == len(s.cfg.cols)
	var want []string
	for i, c := range s.cfg.cols {
		want = append(want, c.Name)
		if ok && !strings.EqualFold(strings.Trim(strings.TrimSpace(fields[i]), `"`), c.Name) {
			ok = false
		}
	}
	if ok {
		return nil
	}
	return pgerror.New(pgcode.InvalidTextRepresentation, "file source %s: file %s has the CSV header %q, not the declared columns %s",
		s.cfg.name, s.name, string(ln), strings.Join(want, ",")).
		WithHint("Declare the columns in the file's order, or set csv.header = 'false' for files without a header line.")
}

// bad passes a bad line by (on_error skip or dead_letter) or returns the
// error that stops the source (fail; after the rows already read).
func (s *Source) bad(name string, line int64, cause string, raw []byte) error {
	if s.cfg.onError == msgfmt.Fail {
		return connector.BadRecord(s.cfg.name, name, 0, line, cause)
	}
	s.dead.Add(connector.DeadLetter{Topic: name, Partition: 0, Offset: line, Error: cause, Raw: append([]byte(nil), raw...)})
	return nil
}

// TakeDeadLetters implements connector.DeadLetterSource.
func (s *Source) TakeDeadLetters(buf []connector.DeadLetter) []connector.DeadLetter {
	return s.dead.Take(buf)
}

// Close implements connector.Source.
func (s *Source) Close() error {
	s.closeFile()
	return nil
}
