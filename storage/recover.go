package storage

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble"
)

// recoverState is what a recovering start (OpenOptions.Recover) has done
// so far. For each damaged file Open finds, recover moves the damage out
// of the way, keeping a copy of every file it changes or removes in
// <dir>/corrupt-<time>/, logs what may be lost, and Open tries again:
//
//   - a WAL with a bad record before its end: replay stops at the bad
//     record, as if the crash had happened there. The WAL is moved aside
//     and replaced by its records before the damage; later WALs are moved
//     aside too (their writes came after the lost ones). Writes
//     acknowledged after the bad record are lost.
//   - a damaged MANIFEST: Pebble reads it up to the bad record, so the
//     store is as it was before the edits after it (flushes and
//     compactions). The files that leaves unreferenced are moved to
//     <dir>/archive instead of being deleted. Writes that only those
//     edits held are lost.
//   - an sstable that fails a checksum: the store is rebuilt from what
//     reads: every key is copied, as Pebble reads it, into a fresh store
//     that replaces the old one (whose files go to the quarantine folder);
//     the damaged table's range is read forward up to the damaged block
//     and backward down to it. The keys in between are lost and are named
//     in the log by key space and object id.
type recoverState struct {
	dir      string
	logf     func(string, ...any)
	accepted map[string]bool
	archive  bool
	quar     string
	at       time.Time
	mem      MemorySizes // Pebble's memory (OpenOptions.Memory)
}

func (rs *recoverState) quarantine() (string, error) {
	if rs.quar != "" {
		return rs.quar, nil
	}
	rs.at = time.Now()
	q, err := quarantineDir(rs.dir, rs.at)
	if err != nil {
		return "", err
	}
	rs.quar = q
	return q, nil
}

func (rs *recoverState) recover(c *CorruptFileError) error {
	if c.Kind == "MANIFEST" && c.goodEnd == 0 {
		return fmt.Errorf("the first record of %s, the snapshot of the store's files that every later record amends, is damaged: there is nothing to start from; restore the data directory from a backup (nothing was changed)", c.Path)
	}
	q, err := rs.quarantine()
	if err != nil {
		return err
	}
	rs.logf("storage: RECOVER: %v", c)
	switch c.Kind {
	case "WAL":
		return rs.recoverWAL(c, q)
	case "MANIFEST":
		if err := copyFile(c.Path, filepath.Join(q, filepath.Base(c.Path))); err != nil {
			return err
		}
		rs.accepted[c.Path] = true
		rs.archive = true
		rs.logf("storage: RECOVER: copied %s to %s; reading it only up to offset %d: the flushes and compactions recorded after that are undone, writes that only they held are LOST, and sstables they made are moved to %s instead of being deleted",
			c.Path, q, c.goodEnd, filepath.Join(rs.dir, "archive"))
		return nil
	case "sstable":
		return rs.rebuildWithout(c, q)
	}
	return fmt.Errorf("cannot recover a damaged %s file", c.Kind)
}

func (rs *recoverState) recoverWAL(c *CorruptFileError, q string) error {
	data, err := os.ReadFile(c.Path)
	if err != nil {
		return err
	}
	if err := os.Rename(c.Path, filepath.Join(q, filepath.Base(c.Path))); err != nil {
		return err
	}
	if err := writeSynced(c.Path, data[:c.goodEnd]); err != nil {
		return err
	}
	rs.logf("storage: RECOVER: moved %s to %s and put back its first %d bytes (the records before the damage): the %d bytes after them are not replayed, and writes acknowledged in them are LOST",
		c.Path, q, c.goodEnd, int64(len(data))-c.goodEnd)
	// Later WALs hold writes made after the lost ones: replaying them
	// would apply a store history with a hole in it.
	_, num := recordFileKind(c.Path)
	ents, err := os.ReadDir(rs.dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		kind, n := recordFileKind(e.Name())
		if kind != "WAL" || n <= num {
			continue
		}
		p := filepath.Join(rs.dir, e.Name())
		if info, err := e.Info(); err == nil {
			rs.logf("storage: RECOVER: moved the later WAL %s (%d bytes) to %s: writes acknowledged in it are LOST", p, info.Size(), q)
		}
		if err := os.Rename(p, filepath.Join(q, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// rebuildWithout copies every key of the store outside the damaged
// table's range into a fresh store, then swaps it in.
func (rs *recoverState) rebuildWithout(c *CorruptFileError, q string) error {
	opts := pebbleOptions(newSpaceGuard(rs.dir, 0, rs.logf), rs.mem)
	defer opts.Cache.Unref()
	opts.Cleaner = pebble.ArchiveCleaner{}
	old, err := pebble.Open(rs.dir, opts)
	if err != nil {
		return err
	}
	fresh := filepath.Join(rs.dir, "rebuild-"+rs.at.UTC().Format("20060102T150405Z"))
	if err := os.RemoveAll(fresh); err != nil {
		old.Close()
		return err
	}
	nopts := pebbleOptions(newSpaceGuard(rs.dir, 0, rs.logf), rs.mem)
	defer nopts.Cache.Unref()
	ndb, err := pebble.Open(fresh, nopts)
	if err != nil {
		old.Close()
		return err
	}
	var kept int64
	copyRange := func(lo, hi []byte) error {
		it, err := old.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return err
		}
		b := ndb.NewBatch()
		for ok := it.First(); ok; ok = it.Next() {
			b.Set(it.Key(), it.Value(), nil)
			kept++
			if b.Len() >= 4<<20 {
				if err := b.Commit(pebble.NoSync); err != nil {
					it.Close()
					return err
				}
				b = ndb.NewBatch()
			}
		}
		if err := it.Close(); err != nil {
			b.Close()
			return err
		}
		return b.Commit(pebble.NoSync)
	}
	after := append(bytes.Clone(c.largest), 0)
	err = copyRange(nil, c.smallest)
	if err == nil {
		err = copyRange(after, nil)
	}
	// Inside the table's range, keep what reads: forward from its
	// smallest key up to the first damaged block, and backward from its
	// largest key down to the last one. Only the keys between are lost.
	lostLo, lostHi := c.smallest, c.largest
	if err == nil {
		lostLo, lostHi, err = copyReadable(old, ndb, c.smallest, after, &kept)
	}
	if err == nil {
		err = ndb.Flush()
	}
	cerr := ndb.Close()
	old.Close()
	if err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copying the readable keys: %w", err)
	}
	// Swap: the old store's files go to the quarantine folder, the fresh
	// store's files take their place.
	ents, err := os.ReadDir(rs.dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if isPebbleFile(e.Name()) {
			if err := os.Rename(filepath.Join(rs.dir, e.Name()), filepath.Join(q, e.Name())); err != nil {
				return err
			}
		}
	}
	nents, err := os.ReadDir(fresh)
	if err != nil {
		return err
	}
	for _, e := range nents {
		if err := os.Rename(filepath.Join(fresh, e.Name()), filepath.Join(rs.dir, e.Name())); err != nil {
			return err
		}
	}
	if err := os.Remove(fresh); err != nil {
		return err
	}
	if err := syncDir(rs.dir); err != nil {
		return err
	}
	rs.logf("storage: RECOVER: rebuilt the store without the damaged part of %s: kept %d keys; the keys between %s and %s that could not be read are LOST (%s); the old store's files are in %s",
		c.Path, kept, describeKey(lostLo), describeKey(lostHi), describeRange(lostLo, lostHi), q)
	return nil
}

// isPebbleFile reports whether name is one of Pebble's files in a data
// directory.
func isPebbleFile(name string) bool {
	switch {
	case name == "LOCK" || name == "CURRENT" || name == "archive":
		return true
	case strings.HasPrefix(name, "MANIFEST-"), strings.HasPrefix(name, "OPTIONS-"), strings.HasPrefix(name, "marker."):
		return true
	case strings.HasSuffix(name, ".sst"), strings.HasSuffix(name, ".log"):
		return true
	}
	return false
}

var spaceNames = map[byte]string{
	SpaceMeta: "store metadata", SpaceCatalog: "catalog entries", SpaceState: "operator state",
	SpacePosition: "source positions", SpaceRelation: "table and view rows", SpaceLog: "table write logs",
	SpaceWrite: "table rows (write side)", SpaceSinkLog: "undelivered sink output", SpaceDeadLetter: "dead letters",
}

// describeKey names a key by its space and object id.
func describeKey(k []byte) string {
	if len(k) >= 10 && k[1] == '/' {
		if name, ok := spaceNames[k[0]]; ok {
			return fmt.Sprintf("%c/%d (%s of object %d)", k[0], beUint64(k[2:10]), name, beUint64(k[2:10]))
		}
	}
	return strconv.Quote(string(k))
}

// describeRange names the key spaces a lost range touches.
func describeRange(lo, hi []byte) string {
	if len(lo) == 0 || len(hi) == 0 {
		return "unknown key spaces"
	}
	var parts []string
	for sp, name := range spaceNames {
		if sp >= lo[0] && sp <= hi[0] {
			parts = append(parts, name)
		}
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		return "no known key space"
	}
	return "touches " + strings.Join(parts, ", ")
}

func beUint64(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// copyReadable copies the keys of [lo, hi) that old can read into ndb:
// forward from lo until a read fails, then backward from hi down to the
// last key copied. It returns the bounds of the keys it could not read:
// everything strictly between them is lost.
func copyReadable(old, ndb *pebble.DB, lo, hi []byte, kept *int64) (lostLo, lostHi []byte, err error) {
	b := ndb.NewBatch()
	defer func() {
		if err == nil {
			err = b.Commit(pebble.NoSync)
		} else {
			b.Close()
		}
	}()
	it, err := old.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, nil, err
	}
	lostLo = lo
	for ok := it.First(); ok; ok = it.Next() {
		lostLo = bytes.Clone(it.Key())
		b.Set(it.Key(), it.Value(), nil)
		*kept++
	}
	ferr := it.Close()
	if ferr == nil {
		return lostLo, lostLo, nil // all of it read
	}
	it, err = old.NewIter(&pebble.IterOptions{LowerBound: append(bytes.Clone(lostLo), 0), UpperBound: hi})
	if err != nil {
		return nil, nil, err
	}
	lostHi = hi
	for ok := it.Last(); ok; ok = it.Prev() {
		lostHi = bytes.Clone(it.Key())
		b.Set(it.Key(), it.Value(), nil)
		*kept++
	}
	_ = it.Close() // the damaged block ends the backward pass too
	return lostLo, lostHi, nil
}
