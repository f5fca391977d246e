package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// Disk space. Pebble v1.1 cannot survive a failed write of its WAL or
// MANIFEST: the WAL writer keeps the error and fails every later commit,
// and a failed MANIFEST write ends the process (Logger.Fatalf). So Sluice
// keeps Pebble from ever meeting a full disk: every write first checks the
// free space of the data directory's file system (statfs, about a
// microsecond) and is refused with 53100 when what would remain is below a
// reserve, kept for the store's own work — flushing the memtables (2 x 64
// MiB), the WAL growing to a memtable's size (70 MiB), compactions and the
// MANIFEST.
// Reads never touch the reserve. A refused DML statement fails; an epoch
// commit (a checkpoint) waits for space, logging once, and carries on by
// itself when space returns: nothing is lost and nothing restarts.
//
// If Pebble meets an I/O error all the same (another process filled the
// disk between the check and the write faster than the reserve), the store
// is marked failed: every later write is refused with the error, reads go
// on, and the process stays up; a restart recovers from the last durable
// state.

// DefaultReserveBytes is the free space writes leave for the store's own
// work unless told otherwise.
const DefaultReserveBytes = 256 << 20

// spaceGuard checks free space before writes.
type spaceGuard struct {
	dir     string
	reserve atomic.Uint64
	wal     atomic.Pointer[string] // the WAL writes go to (for messages)
	failed  atomic.Pointer[error]  // set once Pebble failed a write
	logf    func(string, ...any)
	// statfs is syscall.Statfs (a test may replace it).
	statfs func(string, *syscall.Statfs_t) error
}

func newSpaceGuard(dir string, reserve uint64, logf func(string, ...any)) *spaceGuard {
	g := &spaceGuard{dir: dir, logf: logf, statfs: syscall.Statfs}
	g.reserve.Store(reserve)
	return g
}

// free returns the bytes an unprivileged writer may still use.
func (g *spaceGuard) free() (uint64, error) {
	var st syscall.Statfs_t
	if err := g.statfs(g.dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

func (g *spaceGuard) file() string {
	if p := g.wal.Load(); p != nil {
		return *p
	}
	return g.dir
}

// check returns nil when a write of need bytes leaves the reserve free,
// else a DiskFull error (or the error that failed the store).
func (g *spaceGuard) check(need uint64) error {
	if err := g.failed.Load(); err != nil {
		return *err
	}
	free, err := g.free()
	if err != nil {
		return nil // cannot tell: let the write try
	}
	reserve := g.reserve.Load()
	if free >= reserve && free-reserve >= need {
		return nil
	}
	return pgerror.New(pgcode.DiskFull, "could not write to file %q: No space left on device", g.file()).
		WithDetail("%.1f MiB are free on the file system of %s; Sluice keeps %d MiB free for the store's own flushes and compactions.",
			float64(free)/(1<<20), g.dir, reserve>>20).
		WithHint("Check free disk space. Writes resume by themselves once there is room.")
}

// fail marks the store failed after Pebble reported an I/O error.
func (g *spaceGuard) fail(err error) {
	e := error(pgerror.Wrap(err, pgcode.IOError, "the store failed a write and accepts no more until Sluice restarts (reads go on)").
		WithHint("Free disk space and restart Sluice: it recovers from the last durable state."))
	if isNoSpace(err) {
		e = pgerror.Wrap(err, pgcode.DiskFull, "could not write to file %q: No space left on device; the store accepts no more writes until Sluice restarts (reads go on)", g.file()).
			WithHint("Free disk space and restart Sluice: it recovers from the last durable state.")
	}
	if g.failed.CompareAndSwap(nil, &e) {
		g.logf("storage: %v", e)
	}
}

// isNoSpace reports whether err is the file system being full (or over
// quota).
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// writeError tags an error of a Pebble write.
func (g *spaceGuard) writeError(err error, format string, args ...any) error {
	if isNoSpace(err) {
		return pgerror.Wrap(err, pgcode.DiskFull, "could not write to file %q", g.file()).WithHint("Check free disk space.")
	}
	return pgerror.Wrap(err, pgcode.IOError, format, args...)
}

// waitForSpace blocks until a write of need bytes fits (logging once what
// it waits for), ctx ends, or the store fails.
func (g *spaceGuard) waitForSpace(ctx context.Context, need uint64, what string) error {
	err := g.check(need)
	if err == nil {
		return nil
	}
	if pgerror.GetCode(err) != pgcode.DiskFull || g.failed.Load() != nil {
		return err
	}
	start := time.Now()
	g.logf("storage: %s waits for disk space: %v (%s)", what, err, pgerror.Flatten(err).Detail)
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return pgerror.Wrap(ctx.Err(), pgcode.DiskFull, "%s: gave up waiting for disk space", what)
		case <-t.C:
		}
		err := g.check(need)
		if err == nil {
			g.logf("storage: %s resumes: disk space is back after %v", what, time.Since(start).Round(time.Millisecond))
			return nil
		}
		if pgerror.GetCode(err) != pgcode.DiskFull || g.failed.Load() != nil {
			return err
		}
	}
}

// pebbleLogger is Pebble's logger: Pebble's informational lines go to the
// standard logger as before; a Fatalf caused by an I/O error (a failed
// MANIFEST write) marks the store failed instead of ending the process,
// while any other Fatalf (a broken invariant) still ends it.
type pebbleLogger struct{ g *spaceGuard }

func (l pebbleLogger) Infof(format string, args ...any) {
	_ = log.Output(2, fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	for _, a := range args {
		if err, ok := a.(error); ok && isIOError(err) {
			l.g.fail(fmt.Errorf("pebble: %s: %w", msg, err))
			return
		}
	}
	_ = log.Output(2, msg)
	os.Exit(1)
}

func isIOError(err error) bool {
	var pe *fs.PathError
	var errno syscall.Errno
	return errors.As(err, &pe) || errors.As(err, &errno)
}

// listenWAL keeps the guard's WAL name current.
func (g *spaceGuard) listenWAL(opts *pebble.Options) {
	logger := opts.Logger
	opts.EventListener = &pebble.EventListener{
		WALCreated: func(info pebble.WALCreateInfo) {
			p := info.Path
			g.wal.Store(&p)
		},
		BackgroundError: func(err error) {
			if isNoSpace(err) {
				g.logf("storage: background work of the store stopped on a full disk, retried later: %v", err)
				return
			}
			logger.Infof("background error: %s", err)
		},
	}
}

// SetDiskReserve sets the free space writes leave for the store's own
// work, in bytes.
func (db *DB) SetDiskReserve(n uint64) { db.space.reserve.Store(n) }

// WriteRefused returns the error writes get now (53100 while free space is
// below the reserve, or the error that failed the store), else nil.
func (db *DB) WriteRefused() error { return db.space.check(0) }

// guardFS is the file system Pebble writes through: a failed write or
// sync of the WAL or the MANIFEST marks the store failed. Pebble v1.1 does
// not always report a failed WAL write to the commit that made it: a
// synced commit returned success while its WAL write had failed with
// ENOSPC, its row was readable, and it was gone after a restart
// (TestWALWriteFailsOnFullDisk). So WriteSync and Commit look at the mark
// after Pebble returns, and never acknowledge a write made after the WAL
// failed.
type guardFS struct {
	vfs.FS
	g *spaceGuard
}

func (fs guardFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return f, err
	}
	if kind, _ := recordFileKind(name); kind != "" {
		return guardFile{File: f, g: fs.g}, nil
	}
	return f, nil
}

func (fs guardFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	return fs.wrap(name, f, err)
}

func (fs guardFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname)
	return fs.wrap(newname, f, err)
}

func (fs guardFS) OpenReadWrite(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, opts...)
	return fs.wrap(name, f, err)
}

type guardFile struct {
	vfs.File
	g *spaceGuard
}

func (f guardFile) check(err error) error {
	if err != nil {
		f.g.fail(err)
	}
	return err
}

func (f guardFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	return n, f.check(err)
}

func (f guardFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	return n, f.check(err)
}

// maxPreallocate caps how much of a WAL or MANIFEST Pebble reserves ahead
// of its writes. Pebble v1.1 preallocates 110% of the memtable size for
// each WAL (70 MiB with Sluice's 64 MiB memtables), which made an empty
// server's data directory 71 MB; with the cap it is about 4 MB. The cost
// is an fallocate call every 4 MiB of WAL instead of every 70 MiB.
const maxPreallocate = 4 << 20

// noRecycleCleaner deletes obsolete files as pebble.DeleteCleaner does,
// and keeps Pebble from recycling WAL files: Pebble v1.1 keeps up to three
// obsolete WALs to write over later, each as large as the largest epoch
// batch it held (a 100 MB view's backfill left a 100 MB WAL behind after
// the view was dropped), and has no option against it but this: it does
// not recycle when the cleaner needs the files' contents, a marker that
// only pebble.ArchiveCleaner carries. Embedded one level deeper than
// DeleteCleaner, ArchiveCleaner lends the marker and nothing else.
type noRecycleCleaner struct {
	pebble.DeleteCleaner
	archiveMarker
}

type archiveMarker struct{ pebble.ArchiveCleaner }

func (f guardFile) Preallocate(off, n int64) error {
	return f.check(f.File.Preallocate(off, min(n, maxPreallocate)))
}

func (f guardFile) Sync() error { return f.check(f.File.Sync()) }

func (f guardFile) SyncData() error { return f.check(f.File.SyncData()) }

func (f guardFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	return full, f.check(err)
}

// DiskUsage returns the bytes the files under dir occupy on disk (their
// allocated blocks, preallocation included, as du counts them).
func DiskUsage(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed under us (a compaction)
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		} else {
			n += info.Size()
		}
		return nil
	})
	return n, err
}
