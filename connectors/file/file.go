package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"sluice/connectors/internal/encode"
	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Factory is the file sink connector.
type Factory struct{}

func init() { connector.RegisterSink("file", Factory{}) }

const (
	tmpPrefix  = ".tmp-"
	partPrefix = "part-"
	epochWidth = 20 // digits of the largest uint64
	flushSize  = 1 << 20
)

type format int

const (
	formatPlain format = iota
	formatDebezium
	formatUpsert
)

// knownOptions are the options a file sink accepts: its own and those
// every sink shares.
var knownOptions = map[string]bool{
	"connector": true, "path": true, "primary_key": true,
	"delivery": true, "write_mode": true, "type": true, "force_append_only": true,
}

type config struct {
	dir    string
	format format
	csv    bool
	ext    string
	mode   string
}

func parse(cfg connector.SinkConfig) (*config, error) {
	for k := range cfg.Options {
		if !knownOptions[k] {
			return nil, connector.OptionError("file", k, "unknown option")
		}
	}
	if strings.TrimSpace(cfg.Options["path"]) == "" {
		return nil, connector.OptionError("file", "path", "is required (a directory)")
	}
	dir, err := cfg.Policy.FilePath("file", "path", cfg.Options["path"])
	if err != nil {
		return nil, err
	}
	c := &config{dir: dir, ext: "jsonl"}
	switch e := strings.ToUpper(cfg.Encode); e {
	case "", "JSON":
	case "CSV":
		c.csv, c.ext = true, "csv"
	default:
		return nil, pgerror.New(pgcode.FeatureNotSupported, "a file sink does not support ENCODE %s", cfg.Encode).
			WithHint("use ENCODE JSON or ENCODE CSV")
	}
	natural := connector.ModeAppend
	switch f := strings.ToUpper(cfg.Format); f {
	case "", "PLAIN":
		if !cfg.AppendOnly {
			return nil, pgerror.New(pgcode.FeatureNotSupported,
				"a file sink with FORMAT PLAIN needs an append-only input, and this one updates or deletes rows").
				WithHint("use FORMAT DEBEZIUM to write every change, or a keyed sink (FORMAT UPSERT with primary_key)")
		}
	case "DEBEZIUM", "UPSERT":
		if c.csv {
			return nil, pgerror.New(pgcode.FeatureNotSupported, "a file sink does not support FORMAT %s ENCODE CSV", f).
				WithHint("use ENCODE JSON")
		}
		c.format = formatDebezium
		if f == "UPSERT" {
			c.format, natural = formatUpsert, connector.ModeUpsert
			if len(cfg.Key) == 0 {
				return nil, connector.OptionError("file", "primary_key",
					"is required with FORMAT UPSERT: a delete is written as its key")
			}
		}
	default:
		return nil, pgerror.New(pgcode.FeatureNotSupported, "a file sink does not support FORMAT %s", cfg.Format).
			WithHint("use FORMAT PLAIN, DEBEZIUM or UPSERT")
	}
	c.mode = natural
	if m := strings.ToLower(cfg.WriteMode); m != "" && m != natural {
		return nil, connector.OptionError("file", "write_mode", "%q is not supported with this format: it writes in %s mode",
			cfg.WriteMode, natural)
	}
	return c, nil
}

// Validate implements connector.SinkFactory. It writes no file: it checks
// the path is under the policy's root and the directory, if it exists,
// holds no file the sink did not make.
func (Factory) Validate(cfg connector.SinkConfig) (connector.SinkPlan, error) {
	c, err := parse(cfg)
	if err != nil {
		return connector.SinkPlan{}, err
	}
	if err := (&Sink{cfg: cfg, c: c}).checkOwner(); err != nil {
		return connector.SinkPlan{}, err
	}
	return connector.SinkPlan{WriteMode: c.mode, Guarantee: connector.ExactlyOnce}, nil
}

// Open implements connector.SinkFactory: it creates the directory if
// missing and removes the temporary files a crash left behind.
func (Factory) Open(ctx context.Context, cfg connector.SinkConfig) (connector.Sink, error) {
	c, err := parse(cfg)
	if err != nil {
		return nil, err
	}
	s := &Sink{cfg: cfg, c: c}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, s.ioError(err, "creating directory %s", c.dir)
	}
	if err := s.claim(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return nil, s.ioError(err, "reading directory %s", c.dir)
	}
	removed := false
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) && e.Type().IsRegular() {
			if err := os.Remove(filepath.Join(c.dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, s.ioError(err, "removing leftover %s", e.Name())
			}
			removed = true
		}
	}
	if removed {
		if err := syncDir(c.dir); err != nil {
			return nil, s.ioError(err, "syncing directory %s", c.dir)
		}
	}
	return s, nil
}

// Sink writes one file per epoch. Write and LastEpoch are called from one
// goroutine.
type Sink struct {
	cfg connector.SinkConfig
	c   *config
	buf []byte
}

var (
	_ connector.Sink        = (*Sink)(nil)
	_ connector.Progress    = (*Sink)(nil)
	_ connector.WireSink    = (*Sink)(nil)
	_ connector.WireEncoder = Factory{}
)

// WireEncoder implements connector.WireEncoder: a FORMAT PLAIN line
// depends only on its row, so the runtime may encode it while the epoch
// runs.
func (Factory) WireEncoder(cfg connector.SinkConfig) func(buf []byte, c connector.Change) ([]byte, error) {
	c, err := parse(cfg)
	if err != nil || c.format != formatPlain {
		return nil
	}
	cols := cfg.Columns
	return func(buf []byte, ch connector.Change) ([]byte, error) {
		if ch.After == nil || ch.Before != nil {
			return nil, errRetraction(cfg.Name)
		}
		return appendPlain(buf, cols, c.csv, ch.After), nil
	}
}

// appendPlain appends the FORMAT PLAIN line of row.
func appendPlain(buf []byte, cols []types.Column, csv bool, row types.Row) []byte {
	if csv {
		buf = encode.CSV(buf, cols, row)
	} else {
		buf = encode.JSON(buf, cols, row)
	}
	return append(buf, '\n')
}

func errRetraction(name string) error {
	return pgerror.New(pgcode.Internal,
		"file sink %s: FORMAT PLAIN got a retraction, but its input was planned append-only", name)
}

func (s *Sink) ioError(err error, format string, args ...any) error {
	return pgerror.Wrap(err, pgcode.IOError, "file sink %s: %s", s.cfg.Name, fmt.Sprintf(format, args...))
}

// partName is the file name of epoch's part file.
func partName(epoch uint64, ext string) string {
	return fmt.Sprintf("%s%0*d.%s", partPrefix, epochWidth, epoch, ext)
}

// Write implements connector.Sink.
func (s *Sink) Write(ctx context.Context, epoch uint64, changes []connector.Change) error {
	return s.WriteChanges(ctx, epoch, func(yield func([]connector.Change) error) error { return yield(changes) })
}

// WriteChanges implements connector.StreamSink: the part file is written
// piece by piece.
func (s *Sink) WriteChanges(ctx context.Context, epoch uint64, changes connector.Changes) error {
	return s.writePart(epoch, func(f *os.File) error { return s.writeFile(ctx, f, epoch, changes) })
}

// WriteWire implements connector.WireSink: the pieces are the epoch's
// lines (WireEncoder).
func (s *Sink) WriteWire(ctx context.Context, epoch uint64, pieces [][]byte) error {
	return s.writePart(epoch, func(f *os.File) error {
		if s.c.csv {
			if _, err := f.Write(s.csvHeader(s.buf[:0])); err != nil {
				return s.ioError(err, "writing %s", f.Name())
			}
		}
		for _, p := range pieces {
			if err := ctx.Err(); err != nil {
				return err
			}
			if _, err := f.Write(p); err != nil {
				return s.ioError(err, "writing %s", f.Name())
			}
		}
		return nil
	})
}

// writePart makes epoch's part file: write fills a temporary file, which
// is synced and renamed into place (nothing if the part exists: a replay).
func (s *Sink) writePart(epoch uint64, write func(f *os.File) error) error {
	final := filepath.Join(s.c.dir, partName(epoch, s.c.ext))
	switch _, err := os.Lstat(final); {
	case err == nil:
		return nil // applied before: a replay
	case !errors.Is(err, fs.ErrNotExist):
		return s.ioError(err, "checking %s", final)
	}
	f, err := os.CreateTemp(s.c.dir, tmpPrefix+strconv.FormatUint(epoch, 10)+"-*")
	if err != nil {
		return s.ioError(err, "creating a temporary file")
	}
	tmp := f.Name()
	if err := write(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return s.ioError(err, "syncing %s", tmp)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return s.ioError(err, "closing %s", tmp)
	}
	connector.Crashpoint("sink-before-commit")
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return s.ioError(err, "renaming %s to %s", tmp, final)
	}
	if err := syncDir(s.c.dir); err != nil {
		// The rename may not be durable: fail, so that the epoch is
		// written again; the replay sees the part file if it survived.
		return s.ioError(err, "syncing directory %s", s.c.dir)
	}
	return nil
}

// writeFile writes the lines of one epoch to f.
func (s *Sink) writeFile(ctx context.Context, f *os.File, epoch uint64, changes connector.Changes) error {
	buf := s.buf[:0]
	if s.c.csv {
		buf = s.csvHeader(buf)
	}
	err := changes(func(piece []connector.Change) error {
		var err error
		buf, err = s.appendLines(ctx, f, buf, epoch, piece)
		return err
	})
	if err != nil {
		return err
	}
	if _, err := f.Write(buf); err != nil {
		return s.ioError(err, "writing %s", f.Name())
	}
	s.buf = buf[:0]
	return nil
}

// csvHeader appends the CSV header line.
func (s *Sink) csvHeader(buf []byte) []byte {
	for i, c := range s.cfg.Columns {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = encode.CSVField(buf, c.Name)
	}
	return append(buf, '\n')
}

// appendLines appends the lines of changes to buf, writing buf to f
// whenever it passes flushSize.
func (s *Sink) appendLines(ctx context.Context, f *os.File, buf []byte, epoch uint64, changes []connector.Change) ([]byte, error) {
	cols := s.cfg.Columns
	for _, ch := range changes {
		switch s.c.format {
		case formatPlain:
			if ch.After == nil || ch.Before != nil {
				return nil, errRetraction(s.cfg.Name)
			}
			buf = appendPlain(buf, cols, s.c.csv, ch.After)
		case formatDebezium:
			buf = append(encode.Debezium(buf, cols, ch.Before, ch.After, epoch), '\n')
		case formatUpsert:
			switch {
			case ch.After != nil:
				buf = append(encode.JSON(buf, cols, ch.After), '\n')
			case ch.Before != nil:
				buf = append(appendDelete(buf, cols, s.cfg.Key, ch.Before), '\n')
			default:
				continue
			}
		}
		if len(buf) >= flushSize {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if _, err := f.Write(buf); err != nil {
				return nil, s.ioError(err, "writing %s", f.Name())
			}
			buf = buf[:0]
		}
	}
	return buf, nil
}

// appendDelete appends {"__op":"delete",<key columns of row>}: the key
// object of encode.KeyJSON with the marker spliced in at its front.
func appendDelete(buf []byte, cols []types.Column, key []int, row types.Row) []byte {
	buf = append(buf, `{"__op":"delete"`...)
	at := len(buf)
	buf = encode.KeyJSON(buf, cols, key, row) // {…}
	if len(buf)-at == 2 {                     // {} (no key columns)
		return append(buf[:at], '}')
	}
	buf[at] = ','
	return buf
}

// LastEpoch implements connector.Progress: the highest epoch with a part
// file, 0 if there is none.
func (s *Sink) LastEpoch(ctx context.Context) (uint64, error) {
	entries, err := os.ReadDir(s.c.dir)
	if err != nil {
		return 0, s.ioError(err, "reading directory %s", s.c.dir)
	}
	var last uint64
	suffix := "." + s.c.ext
	for _, e := range entries {
		name := e.Name()
		digits, ok := strings.CutPrefix(name, partPrefix)
		if !ok {
			continue
		}
		digits, ok = strings.CutSuffix(digits, suffix)
		if !ok || len(digits) != epochWidth {
			continue
		}
		if n, err := strconv.ParseUint(digits, 10, 64); err == nil && n > last {
			last = n
		}
	}
	return last, nil
}

// Close implements connector.Sink.
func (s *Sink) Close() error { return nil }

// syncDir makes the entries of dir (a rename, a removal) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
