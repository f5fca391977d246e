package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/objstorage"
	"github.com/cockroachdb/pebble/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// An epoch whose runs hold at least DefaultIngestBytes is committed as an
// ingested sstable rather than a batch: a batch is written to the WAL,
// sorted into a flushable batch and then written again by the flush,
// while the sstable is written once, already in key order (Nexmark q20:
// the batch path was a quarter of the CPU). Smaller epochs are not worth
// a file. SLUICE_INGEST_BYTES overrides it (0: ingest every epoch, runs
// or not: how the crash tests exercise this path).
const DefaultIngestBytes = 4 << 20

// ingestFileBytes is the size of an epoch's sstables (Pebble's flushes
// split at 4 MiB by default; fewer, larger files cost fewer syncs).
const ingestFileBytes = 16 << 20

// ingestDir is where epoch sstables are written before Pebble takes them
// (a crash can leave one behind: Open removes them).
const ingestDir = "ingest"

// errNoIngest: the epoch holds a write the sstable path does not take; it
// commits as a batch.
var errNoIngest = errors.New("epoch cannot be ingested")

func ingestBytesFromEnv() int {
	if v := os.Getenv("SLUICE_INGEST_BYTES"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			return n
		}
	}
	return DefaultIngestBytes
}

// SetIngestBytes sets the size of runs from which an epoch is ingested,
// and the size of its files (0: the default).
func (db *DB) SetIngestBytes(n, file int) {
	db.ingestBytes = n
	db.ingestFileBytes = ingestFileBytes
	if file > 0 {
		db.ingestFileBytes = uint64(file)
	}
}

// clearIngestDir removes sstables left by an ingest a crash interrupted
// (their epoch did not commit).
func clearIngestDir(dir string) error {
	d := filepath.Join(dir, ingestDir)
	if err := os.RemoveAll(d); err != nil {
		return err
	}
	return os.MkdirAll(d, 0o755)
}

// entry is a key's net write in an epoch.
type entry struct {
	kind     opKind
	key, val []byte
}

// fold applies a later write (kind, val) to key's net write e, merging
// as Pebble would read the two.
func (db *DB) fold(e *entry, kind opKind, val []byte) error {
	if kind != opMerge || e.kind == 0 {
		e.kind, e.val = kind, val
		return nil
	}
	var m pebble.ValueMerger
	var err error
	includesBase := true
	switch e.kind {
	case opDelete: // merged onto nothing
		m, err = db.merger.Merge(e.key, val)
	case opSet:
		if m, err = db.merger.Merge(e.key, e.val); err == nil {
			err = m.MergeNewer(val)
		}
	case opMerge:
		includesBase = false
		if m, err = db.merger.Merge(e.key, e.val); err == nil {
			err = m.MergeNewer(val)
		}
	}
	if err != nil {
		return err
	}
	v, closer, err := m.Finish(includesBase)
	if err != nil {
		return err
	}
	e.val = bytes.Clone(v)
	if closer != nil {
		closer.Close()
	}
	if includesBase {
		e.kind = opSet
	}
	return nil
}

// span is a range deletion [start, end) and its place in the batch.
type span struct {
	start, end []byte
	idx        int
}

// batchEntries returns the net writes of batch b in key order, and its
// range deletions merged into disjoint spans. A point write that a later
// range deletion covers is folded with a deletion; the spans delete only
// older data (in an ingested sstable, a range deletion does not delete the
// points of its own file).
func (db *DB) batchEntries(b *pebble.Batch) ([]entry, []span, error) {
	type op struct {
		key, val []byte
		kind     opKind
		idx      int
	}
	var ops []op
	var dels []span
	r := b.Reader()
	for idx := 0; ; idx++ {
		kind, k, v, ok, err := r.Next()
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			break
		}
		switch kind {
		case pebble.InternalKeyKindSet:
			ops = append(ops, op{k, v, opSet, idx})
		case pebble.InternalKeyKindDelete:
			ops = append(ops, op{k, nil, opDelete, idx})
		case pebble.InternalKeyKindMerge:
			ops = append(ops, op{k, v, opMerge, idx})
		case pebble.InternalKeyKindRangeDelete:
			dels = append(dels, span{k, v, idx})
		default:
			return nil, nil, errNoIngest
		}
	}
	// By key, then in batch order: idx is unique, so an unstable sort
	// gives the stable order (pdqsort, where the stable sort's merges cost
	// a tenth of a checkpoint-heavy query's CPU).
	slices.SortFunc(ops, func(a, b op) int {
		if c := bytes.Compare(a.key, b.key); c != 0 {
			return c
		}
		return a.idx - b.idx
	})
	var out []entry
	for i := 0; i < len(ops); {
		j := i + 1
		for j < len(ops) && bytes.Equal(ops[j].key, ops[i].key) {
			j++
		}
		e := entry{key: ops[i].key}
		for k := i; k < j; k++ {
			for _, d := range dels {
				// A deletion covering the key between its writes.
				if d.idx < ops[k].idx && (k == i || d.idx > ops[k-1].idx) && covers(d, e.key) {
					if err := db.fold(&e, opDelete, nil); err != nil {
						return nil, nil, err
					}
					break
				}
			}
			if err := db.fold(&e, ops[k].kind, ops[k].val); err != nil {
				return nil, nil, err
			}
		}
		for _, d := range dels {
			if d.idx > ops[j-1].idx && covers(d, e.key) {
				e.kind, e.val = opDelete, nil
				break
			}
		}
		out = append(out, e)
		i = j
	}
	// Union of the spans: they share the file's sequence number, so
	// overlapping ones delete what their union does.
	slices.SortFunc(dels, func(a, b span) int { return bytes.Compare(a.start, b.start) })
	merged := dels[:0]
	for _, d := range dels {
		if bytes.Compare(d.start, d.end) >= 0 {
			continue
		}
		if n := len(merged); n > 0 && bytes.Compare(d.start, merged[n-1].end) <= 0 {
			if bytes.Compare(d.end, merged[n-1].end) > 0 {
				merged[n-1].end = d.end
			}
			continue
		}
		merged = append(merged, d)
	}
	return out, merged, nil
}

func covers(d span, k []byte) bool {
	return bytes.Compare(d.start, k) <= 0 && bytes.Compare(k, d.end) < 0
}

// orderRuns returns the runs in key order, each sorted, none empty and no
// two overlapping (overlapping runs are combined into one, in their order).
func orderRuns(runs []*Run) []*Run {
	var rs []*Run
	for _, r := range runs {
		if r.Len() > 0 {
			r.sort()
			rs = append(rs, r)
		}
	}
	byFirst := slices.Clone(rs)
	slices.SortStableFunc(byFirst, func(a, b *Run) int { return bytes.Compare(a.key(0), b.key(0)) })
	for i := 1; i < len(byFirst); i++ {
		if bytes.Compare(byFirst[i-1].key(byFirst[i-1].Len()-1), byFirst[i].key(0)) >= 0 {
			// Combined, in their order: the chunks are shared, not copied.
			all := &Run{pool: rs[0].pool}
			for _, r := range rs {
				base, obase := uint32(len(all.chunks)), uint32(len(all.owned))
				all.chunks = append(all.chunks, r.chunks...)
				all.owned = append(all.owned, r.owned...)
				for _, x := range r.recs {
					x.c += base
					if x.own > 0 {
						x.own += obase
					}
					all.recs = append(all.recs, x)
				}
				all.n += r.n
			}
			all.sort()
			return []*Run{all}
		}
	}
	return byFirst
}

// commitIngest writes the epoch (batch b, then runs, then sorted files)
// as sstables and ingests them: all of it becomes visible, and durable, at
// once.
func (db *DB) commitIngest(b *pebble.Batch, runs []*Run, files []*SortedFile, e uint64) error {
	pts, dels, err := db.batchEntries(b)
	if err != nil {
		return err
	}
	fm, err := db.openFiles(files)
	if err != nil {
		return err
	}
	defer fm.close()
	runs = orderRuns(runs)
	// The epoch is split into files of ingestFileBytes, each of them
	// spanning only its keys, as a flush splits a memtable: one file over
	// the whole key space would overlap every file below it, and each
	// compaction of it rewrite them all. Range deletions would overlap
	// the files they span: an epoch with any is one file.
	var paths []string
	var sw *sstable.Writer
	open := func() error {
		path := filepath.Join(db.dir, ingestDir, fmt.Sprintf("epoch-%d-%d.sst", e, len(paths)))
		f, err := vfs.Default.Create(path)
		if err != nil {
			return err
		}
		paths = append(paths, path)
		sw = sstable.NewWriter(newFileWritable(f), db.writerOpts)
		return nil
	}
	closeFile := func() error {
		err := sw.Close() // syncs the file
		sw = nil
		return err
	}
	writeOne := func(x entry) error {
		if sw == nil {
			if err := open(); err != nil {
				return err
			}
		}
		var err error
		switch x.kind {
		case opSet:
			err = sw.Set(x.key, x.val)
		case opDelete:
			err = sw.Delete(x.key)
		default:
			err = sw.Merge(x.key, x.val)
		}
		if err == nil && len(dels) == 0 && sw.EstimatedSize() >= db.ingestFileBytes {
			err = closeFile()
		}
		return err
	}
	// write adds the files' writes in key order: those before x, then
	// x's own after the batch's and the runs'.
	write := func(x entry) error {
		if err := fm.before(x.key, writeOne); err != nil {
			return err
		}
		if err := fm.fold(&x); err != nil {
			return err
		}
		return writeOne(x)
	}
	err = func() error {
		ri, rp := 0, 0 // the next run write: runs[ri], record rp
		for pi := 0; pi < len(pts) || ri < len(runs); {
			var x entry
			c := -1 // the batch's key comes first
			if ri < len(runs) && pi == len(pts) {
				c = 1
			} else if ri < len(runs) {
				c = bytes.Compare(pts[pi].key, runs[ri].key(rp))
			}
			if c <= 0 {
				x = pts[pi]
				pi++
			}
			if c >= 0 {
				r := runs[ri]
				if c > 0 {
					x = entry{key: r.key(rp)}
				}
				// The run's writes to the key, after the batch's.
				for {
					if err := db.fold(&x, r.recs[rp].kind, r.value(rp)); err != nil {
						return err
					}
					rp++
					if rp == r.Len() {
						ri, rp = ri+1, 0
						break
					}
					if !bytes.Equal(r.key(rp), x.key) {
						break
					}
				}
			}
			if err := write(x); err != nil {
				return err
			}
		}
		if err := fm.before(nil, writeOne); err != nil {
			return err
		}
		for _, d := range dels {
			if sw == nil {
				if err := open(); err != nil {
					return err
				}
			}
			if err := sw.DeleteRange(d.start, d.end); err != nil {
				return err
			}
		}
		return nil
	}()
	if sw != nil {
		if cerr := closeFile(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = db.pdb.Ingest(paths)
	}
	if err != nil {
		for _, p := range paths {
			os.Remove(p)
		}
	}
	return err
}

// fileWritable is the sstable writer's output: Pebble's own writes each
// 4 KiB block with a system call (a third of an ingested epoch's cost);
// this buffers a megabyte. Finish syncs the file.
type fileWritable struct {
	f  vfs.File
	bw *bufio.Writer
}

var _ objstorage.Writable = (*fileWritable)(nil)

func newFileWritable(f vfs.File) *fileWritable {
	return &fileWritable{f: f, bw: bufio.NewWriterSize(f, 1<<20)}
}

func (w *fileWritable) Write(p []byte) error {
	_, err := w.bw.Write(p)
	return err
}

func (w *fileWritable) Finish() error {
	err := w.bw.Flush()
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (w *fileWritable) Abort() { w.f.Close() }
