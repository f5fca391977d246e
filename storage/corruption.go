package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/sstable"
	"github.com/cockroachdb/pebble/vfs"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// CorruptFileError is a store file that fails its checksums. Open returns
// it (inside a DataCorrupted pgerror) instead of starting with part of the
// store missing.
type CorruptFileError struct {
	Path   string // the file
	Kind   string // "WAL", "MANIFEST" or "sstable"
	Offset int64  // the first bad byte found (-1: unknown)
	Detail string

	// For a WAL or MANIFEST, goodEnd is the end of the last whole record
	// before the damage.
	goodEnd int64
	// For an sstable, its file number and key range.
	fileNum           uint64
	smallest, largest []byte
}

func (e *CorruptFileError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("corrupt %s file %q at offset %d: %s", e.Kind, e.Path, e.Offset, e.Detail)
	}
	return fmt.Sprintf("corrupt %s file %q: %s", e.Kind, e.Path, e.Detail)
}

// checkingFS is the vfs.FS Pebble opens the store through: while on, each
// WAL and MANIFEST Pebble opens to replay is first read in full and
// checked (checkRecords); a file with a bad record before its end is not
// handed to Pebble, whose lenient reader would stop there and carry on.
// Only the files Pebble actually replays are checked: an obsolete WAL kept
// for recycling is never opened.
type checkingFS struct {
	vfs.FS
	on   atomic.Bool
	logf func(string, ...any)
	// accepted are damaged files a recovering start lets Pebble read
	// leniently (up to the damage).
	accepted map[string]bool
}

func (fs *checkingFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	if fs.on.Load() {
		if err := fs.check(name); err != nil {
			return nil, err
		}
	}
	return fs.FS.Open(name, opts...)
}

// recordFileKind returns "WAL" (with its log number) or "MANIFEST" for the
// names of Pebble's record files, "" otherwise.
func recordFileKind(name string) (string, uint32) {
	base := filepath.Base(name)
	if strings.HasPrefix(base, "MANIFEST-") {
		return "MANIFEST", 0
	}
	if n, ok := strings.CutSuffix(base, ".log"); ok {
		if num, err := strconv.ParseUint(n, 10, 64); err == nil {
			return "WAL", uint32(num)
		}
	}
	return "", 0
}

func (fs *checkingFS) check(name string) error {
	kind, logNum := recordFileKind(name)
	if kind == "" || fs.accepted[name] {
		return nil
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	d := checkRecords(data, logNum, kind == "MANIFEST")
	switch {
	case d == nil:
		return nil
	case d.after < 0:
		fs.logf("storage: %s %s ends in a torn record at offset %d (%s; a write cut short by a crash, never acknowledged): replaying the %d bytes before it",
			kind, name, d.offset, d.reason, d.goodEnd)
		return nil
	}
	detail := fmt.Sprintf("%s, with valid records after it (at offset %d): the file was damaged after it was written", d.reason, d.after)
	if d.after >= int64(len(data)) {
		detail = fmt.Sprintf("%s in its last record, which was written whole: the file was damaged after it was written", d.reason)
	}
	return &CorruptFileError{Path: name, Kind: kind, Offset: d.offset, goodEnd: d.goodEnd, Detail: detail}
}

// verifySSTables reads every block of every live sstable and checks its
// checksum (Pebble checks a block only when it reads it, so a damaged
// table would otherwise fail some read, or compaction, later).
func verifySSTables(pdb *pebble.DB, dir string) (n int, size uint64, err error) {
	levels, err := pdb.SSTables()
	if err != nil {
		return 0, 0, err
	}
	for _, level := range levels {
		for _, t := range level {
			if t.Virtual {
				continue
			}
			path := filepath.Join(dir, fmt.Sprintf("%06d.sst", uint64(t.FileNum)))
			n++
			size += t.Size
			if err := verifySSTable(path); err != nil {
				return n, size, &CorruptFileError{Path: path, Kind: "sstable", Offset: -1, Detail: err.Error(),
					fileNum: uint64(t.FileNum), smallest: t.Smallest.UserKey, largest: t.Largest.UserKey}
			}
		}
	}
	return n, size, nil
}

func verifySSTable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	readable, err := sstable.NewSimpleReadable(f)
	if err != nil {
		f.Close()
		return err
	}
	r, err := sstable.NewReader(readable, sstable.ReaderOptions{MergerName: countMerger.Name})
	if err != nil {
		readable.Close()
		return err
	}
	defer r.Close()
	return r.ValidateBlockChecksums()
}

// corruptError is the error Open returns for a damaged store.
func corruptError(dir string, c *CorruptFileError) error {
	return pgerror.Wrap(c, pgcode.DataCorrupted, "data directory %s is damaged", dir).
		WithHint("Nothing was changed. Restore the data directory from a backup, or start with --recover to move the damaged files aside into %s and start from what remains (see README, \"Storage faults\").",
			filepath.Join(dir, "corrupt-<time>"))
}

// asCorrupt finds a CorruptFileError in err, also one Pebble reports for
// a file it read itself (then with what Pebble says).
func asCorrupt(err error) (*CorruptFileError, bool) {
	var c *CorruptFileError
	if errors.As(err, &c) {
		return c, true
	}
	return nil, false
}

// quarantineDir returns (creating it) the folder damaged files are moved
// into by a recovering start.
func quarantineDir(dir string, at time.Time) (string, error) {
	q := filepath.Join(dir, "corrupt-"+at.UTC().Format("20060102T150405Z"))
	return q, os.MkdirAll(q, 0o755)
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		return err
	}
	f, err := os.Open(dst)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
