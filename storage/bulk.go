package storage

import (
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/sstable"
	"github.com/cockroachdb/pebble/vfs"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// Bulk loads (a COPY FROM) bypass the write batch: the loader spills its
// rows to scratch files in the ingest directory while it reads them,
// then writes them, in key order, as sstables (BulkFile) that IngestBulk
// makes visible and durable at once. A crash before the ingestion leaves
// only files in the ingest directory, which Open removes.

// BulkDir returns the directory for a bulk load's scratch files (emptied
// when the store opens).
func (db *DB) BulkDir() string { return filepath.Join(db.dir, ingestDir) }

// BulkFile is one sstable of a bulk load, written in strictly ascending
// key order.
type BulkFile struct {
	path string
	sw   *sstable.Writer
}

// NewBulkFile creates the sstable name in BulkDir.
func (db *DB) NewBulkFile(name string) (*BulkFile, error) {
	path := filepath.Join(db.BulkDir(), name)
	f, err := vfs.Default.Create(path)
	if err != nil {
		return nil, pgerror.Wrap(err, pgcode.IOError, "create %s", path)
	}
	return &BulkFile{path: path, sw: sstable.NewWriter(newFileWritable(f), db.writerOpts)}, nil
}

// Set adds a key, greater than every key before it.
func (f *BulkFile) Set(k, v []byte) error {
	if err := f.sw.Set(k, v); err != nil {
		return pgerror.Wrap(err, pgcode.IOError, "write %s", f.path)
	}
	return nil
}

// Size returns the file's size so far, about.
func (f *BulkFile) Size() uint64 { return f.sw.EstimatedSize() }

// Close finishes and syncs the file.
func (f *BulkFile) Close() error {
	if f.sw == nil {
		return nil
	}
	err := f.sw.Close()
	f.sw = nil
	if err != nil {
		return pgerror.Wrap(err, pgcode.IOError, "write %s", f.path)
	}
	return nil
}

// Scan calls fn with each key and value of the closed file, in order
// (a load rewriting a file it wrote: its keys changed, or its rows become
// sorted runs). The slices are valid during the call only.
func (f *BulkFile) Scan(fn func(k, v []byte) error) error {
	file, err := os.Open(f.path)
	if err != nil {
		return pgerror.Wrap(err, pgcode.IOError, "read %s", f.path)
	}
	readable, err := sstable.NewSimpleReadable(file)
	if err != nil {
		file.Close()
		return pgerror.Wrap(err, pgcode.IOError, "read %s", f.path)
	}
	r, err := sstable.NewReader(readable, sstable.ReaderOptions{MergerName: countMerger.Name})
	if err != nil {
		readable.Close()
		return pgerror.Wrap(err, pgcode.IOError, "read %s", f.path)
	}
	defer r.Close()
	it, err := r.NewIter(nil, nil)
	if err != nil {
		return pgerror.Wrap(err, pgcode.IOError, "read %s", f.path)
	}
	for k, lv := it.First(); k != nil; k, lv = it.Next() {
		v, _, err := lv.Value(nil)
		if err != nil {
			it.Close()
			return pgerror.Wrap(err, pgcode.IOError, "read %s", f.path)
		}
		if err := fn(k.UserKey, v); err != nil {
			it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return pgerror.Wrap(err, pgcode.IOError, "read %s", f.path)
	}
	return nil
}

// Remove closes and deletes the file (a load that failed).
func (f *BulkFile) Remove() {
	f.Close()
	os.Remove(f.path)
}

// IngestBulk makes files (closed; their key ranges must not overlap)
// part of the store at once and durably. On failure it removes them.
func (db *DB) IngestBulk(files []*BulkFile) error {
	paths := make([]string, 0, len(files))
	var size uint64
	for _, f := range files {
		if st, err := os.Stat(f.path); err == nil {
			size += uint64(st.Size())
		}
		paths = append(paths, f.path)
	}
	err := db.space.check(size)
	if err == nil {
		if err = db.pdb.Ingest(paths); err != nil {
			err = pgerror.Wrap(err, pgcode.IOError, "ingest")
		}
	}
	if err != nil {
		for _, p := range paths {
			os.Remove(p)
		}
	}
	return err
}
