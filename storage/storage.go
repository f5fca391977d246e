package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/sstable"
	"github.com/cockroachdb/pebble/vfs"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// Key spaces.
const (
	SpaceMeta     = 'm'
	SpaceCatalog  = 'c'
	SpaceState    = 's'
	SpacePosition = 'p'
	SpaceRelation = 'v'
	SpaceLog      = 'l'
	SpaceWrite    = 'w'
	// SpaceSinkLog holds each sink's committed, not yet delivered output:
	// k/<sink id>/<epoch>/<chunk>.
	SpaceSinkLog = 'k'
	// SpaceDeadLetter holds bad source records kept by on_error =
	// 'dead_letter': d/<source op id>/<sequence>.
	SpaceDeadLetter = 'd'
)

// DB is Sluice's durable store.
type DB struct {
	pdb *pebble.DB
	dir string

	// merger and writerOpts write epoch sstables (ingest.go); epochs
	// whose runs reach ingestBytes are ingested.
	merger          *pebble.Merger
	writerOpts      sstable.WriterOptions
	ingestBytes     int
	ingestFileBytes uint64
	runs            runPool

	mu struct {
		sync.Mutex
		snap      *Snapshot
		committed uint64
		// commitCh is closed at the next commit (changelog.go).
		commitCh chan struct{}
	}
	hist hists
	// lastEpochBytes is the size of the last committed epoch's batch: the
	// next one starts with that room, up to maxEpochPrealloc, instead of
	// regrowing (and copying) its buffer many times.
	lastEpochBytes atomic.Int64
	scanned        atomic.Int64 // Scanned
	cache          StateCache
	space          *spaceGuard

	// commitMu is held while an epoch commits and while a backup links
	// the store's files (backup.go): a backup sits at an epoch boundary.
	commitMu sync.Mutex
	// reclaim runs the compactions that return dropped objects' space
	// (reclaim.go).
	reclaim reclaimer
}

// OpenOptions are how Open treats a damaged store.
type OpenOptions struct {
	// Recover starts from what remains of a damaged store instead of
	// refusing to start: see recover.go for what it does to each kind of
	// file. Everything it does is logged through Logf.
	Recover bool
	// Logf receives what Open found and did, and later the store's
	// stalls and faults (nil: discarded).
	Logf func(format string, args ...any)
	// ReserveBytes is the free space writes leave for the store's own
	// work (0: DefaultReserveBytes; see space.go).
	ReserveBytes uint64
	// Memory is what Pebble's caches may use (zero fields: the defaults).
	Memory MemorySizes
}

// MemorySizes are the memory Pebble may hold: its block cache, and the
// size of each memtable, of which up to MemTables fill before writes wait
// for a flush.
type MemorySizes struct {
	BlockCacheBytes int64
	MemTableBytes   uint64
	MemTables       int
}

// Default sizes of Pebble's memory.
const (
	DefaultBlockCacheBytes = 128 << 20
	DefaultMemTableBytes   = 64 << 20
	DefaultMemTables       = 2
)

func (m MemorySizes) withDefaults() MemorySizes {
	if m.BlockCacheBytes <= 0 {
		m.BlockCacheBytes = DefaultBlockCacheBytes
	}
	if m.MemTableBytes == 0 {
		m.MemTableBytes = DefaultMemTableBytes
	}
	if m.MemTables <= 0 {
		m.MemTables = DefaultMemTables
	}
	return m
}

// Open opens (or creates) the store in dir, refusing a damaged one.
func Open(dir string) (*DB, error) { return OpenWith(dir, OpenOptions{}) }

// OpenWith opens (or creates) the store in dir. Every WAL and MANIFEST
// Pebble replays is checked record by record first, and every sstable's
// blocks after it opened: a damaged file is a DataCorrupted error naming
// it, with nothing changed on disk, unless o.Recover.
func OpenWith(dir string, o OpenOptions) (*DB, error) {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.ReserveBytes == 0 {
		o.ReserveBytes = DefaultReserveBytes
	}
	rs := &recoverState{dir: dir, logf: o.Logf, accepted: map[string]bool{}, mem: o.Memory.withDefaults()}
	for attempt := 0; ; attempt++ {
		db, err := open(dir, rs, newSpaceGuard(dir, o.ReserveBytes, o.Logf))
		c, ok := asCorrupt(err)
		if !ok {
			if err != nil && pebble.IsCorruptionError(err) {
				return nil, pgerror.Wrap(err, pgcode.DataCorrupted, "data directory %s is damaged", dir).
					WithHint("Nothing was changed. Restore the data directory from a backup (see README, \"Storage faults\").")
			}
			if err == nil {
				if err = db.checkFormat(o.Recover, o.Logf); err != nil {
					db.Close()
					return nil, err
				}
			}
			return db, err
		}
		if !o.Recover {
			return nil, corruptError(dir, c)
		}
		if attempt >= 16 {
			return nil, pgerror.Wrap(c, pgcode.DataCorrupted, "data directory %s: --recover gave up after %d damaged files", dir, attempt)
		}
		if err := rs.recover(c); err != nil {
			return nil, pgerror.Wrap(err, pgcode.DataCorrupted, "data directory %s: recovering from %s", dir, c.Error())
		}
	}
}

// check opens the store read-only (nothing on disk changes) through
// checkingFS, which checks each WAL and MANIFEST Pebble replays, then
// verifies every live sstable's checksums.
func check(dir string, rs *recoverState) error {
	if ms, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*")); len(ms) == 0 {
		return nil // a new store
	}
	opts := pebbleOptions(newSpaceGuard(dir, 0, rs.logf), rs.mem)
	defer opts.Cache.Unref()
	opts.ReadOnly = true
	cfs := &checkingFS{FS: opts.FS, logf: rs.logf, accepted: rs.accepted}
	opts.FS = cfs
	cfs.on.Store(true)
	pdb, err := pebble.Open(dir, opts)
	cfs.on.Store(false)
	if err != nil {
		if _, ok := asCorrupt(err); ok {
			return err
		}
		if pebble.IsCorruptionError(err) {
			return err
		}
		return pgerror.Wrap(err, pgcode.IOError, "open data directory %s", dir)
	}
	defer pdb.Close()
	start := time.Now()
	n, size, err := verifySSTables(pdb, dir)
	if err != nil {
		return err
	}
	if n > 0 {
		rs.logf("storage: verified the checksums of %d sstables (%.1f MiB) in %v", n, float64(size)/(1<<20), time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// wrapFS, when set (by tests), wraps the file system Pebble writes through.
var wrapFS func(vfs.FS) vfs.FS

func pebbleOptions(g *spaceGuard, m MemorySizes) *pebble.Options {
	m = m.withDefaults()
	opts := &pebble.Options{
		Cache:                       pebble.NewCache(m.BlockCacheBytes),
		MemTableSize:                m.MemTableBytes,
		MemTableStopWritesThreshold: m.MemTables,
		Merger:                      countMerger,
		Logger:                      pebbleLogger{g},
		Cleaner:                     noRecycleCleaner{}, // space.go
	}
	g.listenWAL(opts)
	opts.FS = vfs.Default
	if wrapFS != nil {
		opts.FS = wrapFS(opts.FS)
	}
	opts.FS = guardFS{FS: opts.FS, g: g}
	// Operator state is write-heavy and short-lived (rows come and go
	// within windows and joins): letting L0 grow to 8 files before
	// compacting it, and leaving the two top levels uncompressed, roughly
	// halves the compaction work (Nexmark q20 over 10M events: 222K ->
	// 317K events/s, 8.1 -> 5.4 CPU-s per million).
	opts.L0CompactionThreshold = 8
	opts.L0StopWritesThreshold = 24
	opts.Levels = make([]pebble.LevelOptions, 7)
	for i := range opts.Levels {
		// Bloom filters on every level: spilled operator state is read
		// back by point lookups, most of them for keys a level does not
		// hold (a group seen for the first time), which the filter
		// answers without reading a block.
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		opts.Levels[i].FilterType = pebble.TableFilter
		opts.Levels[i].Compression = pebble.SnappyCompression
		if i < 2 {
			opts.Levels[i].Compression = pebble.NoCompression
		}
	}
	opts.EnsureDefaults()
	return opts
}

func open(dir string, rs *recoverState, g *spaceGuard) (*DB, error) {
	if err := check(dir, rs); err != nil {
		return nil, err
	}
	opts := pebbleOptions(g, rs.mem)
	defer opts.Cache.Unref()
	if rs.archive {
		// A recovering start keeps the files Pebble finds obsolete (in
		// <dir>/archive) rather than deleting them.
		opts.Cleaner = pebble.ArchiveCleaner{}
	}
	pdb, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, pgerror.Wrap(err, pgcode.IOError, "open data directory %s", dir)
	}
	if err := clearIngestDir(dir); err != nil {
		pdb.Close()
		return nil, pgerror.Wrap(err, pgcode.IOError, "open data directory %s", dir)
	}
	db := &DB{pdb: pdb, dir: dir, space: g, merger: countMerger, ingestBytes: ingestBytesFromEnv(), ingestFileBytes: ingestFileBytes}
	db.writerOpts = opts.MakeWriterOptions(0, pdb.FormatMajorVersion().MaxTableFormat())
	db.writerOpts.Cache = nil
	db.cache.limit.Store(DefaultStateCacheBytes)
	db.cache.full = make(chan struct{}, 1)
	v, err := db.getRaw([]byte("m/epoch"))
	if err != nil {
		pdb.Close()
		return nil, err
	}
	if v != nil {
		e, n := binary.Uvarint(v)
		if n <= 0 {
			pdb.Close()
			return nil, pgerror.New(pgcode.DataCorrupted, "corrupt epoch record")
		}
		db.mu.committed = e
	}
	db.mu.snap = newSnapshot(pdb.NewSnapshot(), db.mu.committed)
	return db, nil
}

// Close closes the store.
func (db *DB) Close() error {
	db.reclaim.stop()
	db.mu.Lock()
	if db.mu.snap != nil {
		db.mu.snap.release()
		db.mu.snap = nil
	}
	db.mu.Unlock()
	return db.pdb.Close()
}

// CommittedEpoch returns the last committed epoch (0 before the first).
func (db *DB) CommittedEpoch() uint64 {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.mu.committed
}

func (db *DB) getRaw(key []byte) ([]byte, error) {
	v, closer, err := db.pdb.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, pgerror.Wrap(err, pgcode.IOError, "read")
	}
	out := bytes.Clone(v)
	closer.Close()
	return out, nil
}

// Get reads the latest value of key (not snapshot-isolated); nil if absent.
func (db *DB) Get(key []byte) ([]byte, error) { return db.getRaw(key) }

// Scan calls f for every key with the given prefix in the latest state, in
// key order. The slices are valid only during the call.
func (db *DB) Scan(prefix []byte, f func(k, v []byte) error) error {
	return db.ScanRange(prefix, PrefixEnd(prefix), f)
}

// Scanned is how many keys DB.Scan and DB.ScanRange have read since the
// store was opened (operators read their state whole when a job starts:
// the start-up reports its progress by it). It moves every
// scannedFlushEvery keys of a scan and at its end.
func (db *DB) Scanned() int64 { return db.scanned.Load() }

// scannedFlushEvery is how many keys a scan reads between updates of
// DB.scanned (one atomic add per key would tax every scan).
const scannedFlushEvery = 4096

// countingScan wraps f to count the keys it sees into db.scanned; flush
// adds what is left.
func (db *DB) countingScan(f func(k, v []byte) error) (func(k, v []byte) error, func()) {
	var n int64
	return func(k, v []byte) error {
			if n++; n == scannedFlushEvery {
				db.scanned.Add(n)
				n = 0
			}
			return f(k, v)
		}, func() {
			db.scanned.Add(n)
		}
}

type reader interface {
	NewIter(*pebble.IterOptions) (*pebble.Iterator, error)
}

func scan(r reader, prefix []byte, f func(k, v []byte) error) error {
	return scanRange(r, prefix, PrefixEnd(prefix), f)
}

func scanRange(r reader, lo, hi []byte, f func(k, v []byte) error) error {
	return scanRangeDir(r, lo, hi, false, f)
}

// scanRangeDir calls f for every key of r in [lo, hi), in ascending key
// order or, with desc, descending.
func scanRangeDir(r reader, lo, hi []byte, desc bool, f func(k, v []byte) error) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return pgerror.Wrap(err, pgcode.IOError, "scan")
	}
	first, next := it.First, it.Next
	if desc {
		first, next = it.Last, it.Prev
	}
	for ok := first(); ok; ok = next() {
		if err := f(it.Key(), it.Value()); err != nil {
			it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return pgerror.Wrap(err, pgcode.IOError, "scan")
	}
	return nil
}

// PrefixEnd returns the first key after every key with prefix p.
func PrefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// Key builds a key: space tag, '/', an 8-byte big-endian id, then rest.
func Key(space byte, id uint64, rest ...[]byte) []byte {
	n := 10
	for _, r := range rest {
		n += len(r)
	}
	k := make([]byte, 0, n)
	k = append(k, space, '/')
	k = binary.BigEndian.AppendUint64(k, id)
	for _, r := range rest {
		k = append(k, r...)
	}
	return k
}

// Commit applies w atomically and durably as epoch e, then publishes a new
// snapshot for readers.
func (db *DB) Commit(w *EpochWriter, e uint64) error {
	return db.CommitCtx(context.Background(), w, e)
}

// CommitCtx is Commit, waiting (until ctx ends) while the disk lacks room
// for the epoch and the reserve (space.go): a checkpoint stalls on a full
// disk and resumes when space returns.
func (db *DB) CommitCtx(ctx context.Context, w *EpochWriter, e uint64) error {
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	w.mu.Lock()
	b, runs, files, reclaim := w.b, w.runs, w.files, w.reclaim
	w.mu.Unlock()
	if b == nil {
		return fmt.Errorf("epoch %d committed twice", e)
	}
	defer removeFiles(files)
	n := filesBytes(files)
	for _, r := range runs {
		n += r.bytes()
	}
	if err := db.space.waitForSpace(ctx, uint64(b.Len()+n), fmt.Sprintf("the checkpoint of epoch %d", e)); err != nil {
		return err
	}
	w.mu.Lock()
	w.b, w.runs, w.files, w.reclaim = nil, nil, nil, nil
	w.mu.Unlock()
	b.Set([]byte("m/epoch"), binary.AppendUvarint(nil, e), nil)
	db.lastEpochBytes.Store(int64(b.Len()))
	ingested := false
	// An epoch with sorted files is ingested whatever its size: the files
	// are what its writers could not hold in memory.
	if len(files) > 0 || (n >= db.ingestBytes && (n > 0 || db.ingestBytes == 0)) {
		err := db.commitIngest(b, runs, files, e)
		switch {
		case err == nil:
			if err := db.space.failed.Load(); err != nil {
				return *err // the MANIFEST or WAL failed (guardFS)
			}
			ingested = true
		case !errors.Is(err, errNoIngest):
			return db.space.writeError(err, "commit epoch %d", e)
		}
	}
	if !ingested {
		for _, r := range runs {
			r.applyTo(b)
		}
		if err := db.applyFiles(b, files); err != nil {
			return err
		}
		if err := b.Commit(pebble.Sync); err != nil {
			db.space.fail(err)
			return db.space.writeError(err, "commit epoch %d", e)
		}
		if err := db.space.failed.Load(); err != nil {
			return *err // the WAL failed: the epoch is not durable (guardFS)
		}
	}
	b.Close()
	db.runs.put(runs)
	snap := newSnapshot(db.pdb.NewSnapshot(), e)
	db.mu.Lock()
	old := db.mu.snap
	db.mu.snap = snap
	db.mu.committed = e
	db.notifyCommitLocked()
	db.mu.Unlock()
	if old != nil {
		old.release()
	}
	if len(reclaim) > 0 {
		db.reclaim.compact(db, reclaim)
	}
	return nil
}

// WriteBatch is a set of writes outside the epoch protocol (DML), applied
// atomically and durably by WriteSync.
type WriteBatch struct{ b *pebble.Batch }

// Set records key=value.
func (w *WriteBatch) Set(k, v []byte) { w.b.Set(k, v, nil) }

// Delete records the deletion of key.
func (w *WriteBatch) Delete(k []byte) { w.b.Delete(k, nil) }

// DeleteRange records the deletion of keys in [start, end).
func (w *WriteBatch) DeleteRange(start, end []byte) { w.b.DeleteRange(start, end, nil) }

// ScanRange calls f for every key in [lo, hi) in the latest state.
func (db *DB) ScanRange(lo, hi []byte, f func(k, v []byte) error) error {
	cf, flush := db.countingScan(f)
	defer flush()
	return scanRange(db.pdb, lo, hi, cf)
}

// ScanRangeDesc calls f for every key in [lo, hi) in the latest state, in
// descending key order (an aggregation's max reads its largest stored
// values first).
func (db *DB) ScanRangeDesc(lo, hi []byte, f func(k, v []byte) error) error {
	cf, flush := db.countingScan(f)
	defer flush()
	return scanRangeDir(db.pdb, lo, hi, true, cf)
}

// Existing calls found(i) for every keys[i] present in the latest state;
// keys must be sorted ascending. It seeks from key to key, so checking a
// bulk load against a table costs one seek per key, and nothing more once
// the keys pass the table's last key.
func (db *DB) Existing(keys [][]byte, found func(i int)) error {
	if len(keys) == 0 {
		return nil
	}
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: keys[0], UpperBound: append(bytes.Clone(keys[len(keys)-1]), 0)})
	if err != nil {
		return pgerror.Wrap(err, pgcode.IOError, "scan")
	}
	valid := it.First()
	for i, k := range keys {
		if !valid {
			break
		}
		c := bytes.Compare(it.Key(), k)
		if c < 0 {
			valid = it.SeekGE(k)
			if !valid {
				break
			}
			c = bytes.Compare(it.Key(), k)
		}
		if c == 0 {
			found(i)
		}
	}
	if err := it.Close(); err != nil {
		return pgerror.Wrap(err, pgcode.IOError, "scan")
	}
	return nil
}

// Seeker reads keys in ascending order from the latest state as of its
// creation, moving one iterator forward: a merge that looks up each of
// its keys (a materialization's checkpoint of a large epoch) pays a seek
// where the keys are far apart and nothing past the last stored key,
// where a Get builds an iterator each time.
type Seeker struct {
	it      *pebble.Iterator
	valid   bool
	started bool
}

// NewSeeker returns a Seeker over [lo, hi).
func (db *DB) NewSeeker(lo, hi []byte) (*Seeker, error) {
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, pgerror.Wrap(err, pgcode.IOError, "scan")
	}
	return &Seeker{it: it}, nil
}

// Get returns a copy of key's value (nil if absent); each key must be
// above the one before.
func (s *Seeker) Get(key []byte) ([]byte, error) {
	switch {
	case !s.started:
		s.valid, s.started = s.it.SeekGE(key), true
	case s.valid && bytes.Compare(s.it.Key(), key) < 0:
		s.valid = s.it.SeekGE(key)
	}
	if !s.valid {
		if err := s.it.Error(); err != nil {
			return nil, pgerror.Wrap(err, pgcode.IOError, "read")
		}
		return nil, nil
	}
	if !bytes.Equal(s.it.Key(), key) {
		return nil, nil
	}
	return bytes.Clone(s.it.Value()), nil
}

// Close releases the iterator.
func (s *Seeker) Close() error {
	if err := s.it.Close(); err != nil {
		return pgerror.Wrap(err, pgcode.IOError, "scan")
	}
	return nil
}

// NewWriteBatch returns an empty write batch.
func (db *DB) NewWriteBatch() *WriteBatch { return &WriteBatch{b: db.pdb.NewBatch()} }

// NewWriteBatchSize returns an empty write batch with room for about size
// bytes of keys and values (a bulk load: the batch does not grow by
// copying).
func (db *DB) NewWriteBatchSize(size int) *WriteBatch {
	return &WriteBatch{b: db.pdb.NewBatchWithSize(size)}
}

// WriteSync applies w atomically and durably (group-committed with
// concurrent writers by Pebble).
// A write that would leave less free disk space than the reserve is
// refused with 53100 (space.go).
func (db *DB) WriteSync(w *WriteBatch) error {
	defer w.b.Close()
	if err := db.space.check(uint64(w.b.Len())); err != nil {
		return err
	}
	if err := w.b.Commit(pebble.Sync); err != nil {
		// Pebble's WAL writer keeps a failed write's error for good.
		db.space.fail(err)
		return db.space.writeError(err, "write")
	}
	// Pebble may report success for a write its WAL failed (guardFS).
	if err := db.space.failed.Load(); err != nil {
		return *err
	}
	return nil
}

// WriteLazy applies w atomically without waiting for the WAL's fsync: it
// becomes durable with the next synced write (an epoch's commit, a
// WriteSync), which syncs the WAL up to and past it. For records that a
// crash may lose because they can be rebuilt (a sink's delivered epoch,
// which its external system's progress also holds).
func (db *DB) WriteLazy(w *WriteBatch) error {
	defer w.b.Close()
	if err := db.space.check(uint64(w.b.Len())); err != nil {
		return err
	}
	if err := w.b.Commit(pebble.NoSync); err != nil {
		db.space.fail(err)
		return db.space.writeError(err, "write")
	}
	if err := db.space.failed.Load(); err != nil {
		return *err
	}
	return nil
}

// maxEpochPrealloc caps the room an epoch's batch starts with. Up to
// eight epochs may be in flight, each holding its batch from injection to
// commit: preallocating a large last epoch's size for each (it was up to
// 256 MiB) held eight times that in unused buffers while checkpoints were
// slow (TestMemoryGroupBySpills: 50 MB of empty batches, peak RSS 514 MiB
// under a 256 MiB limit). A larger epoch grows its buffer by doubling.
const maxEpochPrealloc = 4 << 20

// NewEpochWriter returns the collector of one epoch's writes.
func (db *DB) NewEpochWriter() *EpochWriter {
	return &EpochWriter{db: db, b: db.pdb.NewBatchWithSize(int(min(db.lastEpochBytes.Load(), maxEpochPrealloc)))}
}

// Snapshot returns the latest committed snapshot; call Release when done.
func (db *DB) Snapshot() *Snapshot {
	db.mu.Lock()
	s := db.mu.snap
	s.refs.Add(1)
	db.mu.Unlock()
	return s
}

// EpochWriter collects the writes of one epoch from many operators; it is
// safe for concurrent use.
type EpochWriter struct {
	db      *DB
	mu      sync.Mutex
	b       *pebble.Batch
	runs    []*Run
	files   []*SortedFile // written in key order on disk (sorted.go)
	reclaim []keyRange    // Reclaim's ranges, compacted after the commit
}

// Set records key=value.
func (w *EpochWriter) Set(k, v []byte) {
	w.mu.Lock()
	w.b.Set(k, v, nil)
	w.mu.Unlock()
}

// Delete records the deletion of key.
func (w *EpochWriter) Delete(k []byte) {
	w.mu.Lock()
	w.b.Delete(k, nil)
	w.mu.Unlock()
}

// Merge records adding the varint count delta to key's varint count (a
// missing key counts 0; a key whose count reaches 0 disappears), without
// reading it: how spilled operator state takes changes.
func (w *EpochWriter) Merge(k []byte, delta int64) {
	var buf [binary.MaxVarintLen64]byte
	w.mu.Lock()
	w.b.Merge(k, binary.AppendVarint(buf[:0], delta), nil)
	w.mu.Unlock()
}

// DeleteRange records the deletion of [start, end).
func (w *EpochWriter) DeleteRange(start, end []byte) {
	w.mu.Lock()
	w.b.DeleteRange(start, end, nil)
	w.mu.Unlock()
}

// Len returns the size in bytes of the writes collected so far (ingested
// runs not included).
func (w *EpochWriter) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.b == nil {
		return 0
	}
	return w.b.Len()
}

// IngestBytes is the size of an epoch's runs from which it is committed
// as ingested sstables (DB.SetIngestBytes, SLUICE_INGEST_BYTES).
func (w *EpochWriter) IngestBytes() int { return w.db.ingestBytes }

// Apply adds every write of the local batch b (which it closes).
func (w *EpochWriter) Apply(b *pebble.Batch) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.b.Apply(b, nil)
	b.Close()
	return err
}

// Snapshot is a consistent, committed view of the store.
type Snapshot struct {
	s     *pebble.Snapshot
	Epoch uint64
	refs  refcount
}

func newSnapshot(s *pebble.Snapshot, e uint64) *Snapshot {
	sn := &Snapshot{s: s, Epoch: e}
	sn.refs.Add(1)
	return sn
}

// Release gives the snapshot back.
func (s *Snapshot) Release() { s.release() }

func (s *Snapshot) release() {
	if s.refs.Add(-1) == 0 {
		s.s.Close()
	}
}

// Get reads key in the snapshot; nil if absent.
func (s *Snapshot) Get(key []byte) ([]byte, error) {
	v, closer, err := s.s.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, pgerror.Wrap(err, pgcode.IOError, "read")
	}
	out := bytes.Clone(v)
	closer.Close()
	return out, nil
}

// Scan calls f for every key with prefix in the snapshot, in order.
func (s *Snapshot) Scan(prefix []byte, f func(k, v []byte) error) error {
	return scan(s.s, prefix, f)
}

// ScanRange calls f for keys in [lo, hi).
func (s *Snapshot) ScanRange(lo, hi []byte, f func(k, v []byte) error) error {
	return scanRange(s.s, lo, hi, f)
}

// NewShareWriter returns an empty writer for one job's part of an epoch:
// the job's operators write into it, and at commit the coordinator either
// absorbs it into the epoch (Absorb) or, when the job failed during the
// epoch, drops it (Discard), so that a failed job's state and source
// positions stay at the last epoch it completed.
func (db *DB) NewShareWriter() *EpochWriter {
	return &EpochWriter{db: db, b: db.pdb.NewBatch()}
}

// Absorb adds every write of share s to w, after w's own writes, and
// empties s. s must not be written concurrently.
func (w *EpochWriter) Absorb(s *EpochWriter) error {
	s.mu.Lock()
	b, runs, files := s.b, s.runs, s.files
	s.b, s.runs, s.files = nil, nil, nil
	s.mu.Unlock()
	if b == nil {
		return fmt.Errorf("share absorbed twice")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.runs = append(w.runs, runs...)
	w.files = append(w.files, files...)
	if b.Empty() {
		return b.Close()
	}
	err := w.b.Apply(b, nil)
	b.Close()
	return err
}

// Discard drops every write of share s.
func (s *EpochWriter) Discard() {
	s.mu.Lock()
	b, runs, files := s.b, s.runs, s.files
	s.b, s.runs, s.files = nil, nil, nil
	s.mu.Unlock()
	if b != nil {
		b.Close()
	}
	s.db.runs.put(runs)
	removeFiles(files)
}
