package storage

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/cockroachdb/pebble"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// SortedFile is one writer's share of an epoch's writes kept on disk
// rather than in memory: an operator with more state to write at a
// barrier than it may hold (a materialization of a million-row statement)
// writes it here in strictly ascending key order. Like a Run's, its writes
// apply after every write of the epoch's batch and runs; the commit merges
// them into the epoch's ingested sstables, reading the file once, so the
// epoch stays one atomic step while its memory stays bounded. The file
// lives in the ingest directory (Open empties it: a crash before the
// commit leaves nothing behind) and is removed once the epoch is
// committed or discarded. A SortedFile is used by one goroutine and is
// done with once Close returns.
type SortedFile struct {
	path string
	f    *os.File
	bw   *bufio.Writer
	last []byte
	n    int64 // bytes written
	err  error
	hdr  [1 + 2*binary.MaxVarintLen64]byte
}

var sortedSeq atomic.Uint64

// NewSortedFile returns a file of this epoch's writes, to be filled in key
// order and closed before the operator's Checkpoint returns.
func (w *EpochWriter) NewSortedFile() (*SortedFile, error) {
	path := filepath.Join(w.db.dir, ingestDir, fmt.Sprintf("sorted-%d.wr", sortedSeq.Add(1)))
	f, err := os.Create(path)
	if err != nil {
		return nil, pgerror.Wrap(err, pgcode.IOError, "create %s", path)
	}
	sf := &SortedFile{path: path, f: f, bw: bufio.NewWriterSize(f, 1<<20)}
	w.mu.Lock()
	w.files = append(w.files, sf)
	w.mu.Unlock()
	return sf, nil
}

func (s *SortedFile) add(kind opKind, k, v []byte) {
	if s.err != nil {
		return
	}
	if s.last != nil && bytes.Compare(s.last, k) >= 0 {
		s.err = pgerror.Newf(pgcode.Internal, "sorted epoch file %s: key out of order", s.path)
		return
	}
	s.last = append(s.last[:0], k...)
	h := append(s.hdr[:0], byte(kind))
	h = binary.AppendUvarint(h, uint64(len(k)))
	h = binary.AppendUvarint(h, uint64(len(v)))
	s.bw.Write(h)
	s.bw.Write(k)
	if _, err := s.bw.Write(v); err != nil {
		s.err = pgerror.Wrap(err, pgcode.IOError, "write %s", s.path)
	}
	s.n += int64(len(h) + len(k) + len(v))
}

// Set records key=value; keys must ascend.
func (s *SortedFile) Set(k, v []byte) { s.add(opSet, k, v) }

// Delete records the deletion of key; keys must ascend.
func (s *SortedFile) Delete(k []byte) { s.add(opDelete, k, nil) }

// Close flushes the file (it is synced by the sstables the commit writes
// from it, not here) and returns the first error of its writes.
func (s *SortedFile) Close() error {
	if s.f == nil {
		return s.err
	}
	if err := s.bw.Flush(); err != nil && s.err == nil {
		s.err = pgerror.Wrap(err, pgcode.IOError, "write %s", s.path)
	}
	if err := s.f.Close(); err != nil && s.err == nil {
		s.err = pgerror.Wrap(err, pgcode.IOError, "write %s", s.path)
	}
	s.f = nil
	return s.err
}

// remove deletes the file.
func (s *SortedFile) remove() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	os.Remove(s.path)
}

func removeFiles(files []*SortedFile) {
	for _, f := range files {
		f.remove()
	}
}

// sortedReader reads a SortedFile back in key order.
type sortedReader struct {
	path string
	f    *os.File
	r    *bufio.Reader
	cur  entry // the current write; cur.key nil at the end
}

func openSorted(s *SortedFile) (*sortedReader, error) {
	if s.err != nil {
		return nil, s.err
	}
	if s.f != nil {
		return nil, pgerror.Newf(pgcode.Internal, "sorted epoch file %s not closed", s.path)
	}
	f, err := os.Open(s.path)
	if err != nil {
		return nil, pgerror.Wrap(err, pgcode.IOError, "read %s", s.path)
	}
	r := &sortedReader{path: s.path, f: f, r: bufio.NewReaderSize(f, 1<<20)}
	if err := r.next(); err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

// next reads the following write; each gets fresh buffers, so that an
// entry folded from it stays valid.
func (r *sortedReader) next() error {
	kind, err := r.r.ReadByte()
	if err == io.EOF {
		r.cur = entry{}
		return nil
	}
	fail := func(err error) error { return pgerror.Wrap(err, pgcode.IOError, "read %s", r.path) }
	if err != nil {
		return fail(err)
	}
	kl, err := binary.ReadUvarint(r.r)
	if err != nil {
		return fail(err)
	}
	vl, err := binary.ReadUvarint(r.r)
	if err != nil {
		return fail(err)
	}
	buf := make([]byte, kl+vl)
	if _, err := io.ReadFull(r.r, buf); err != nil {
		return fail(err)
	}
	r.cur = entry{kind: opKind(kind), key: buf[:kl:kl], val: buf[kl:]}
	return nil
}

func (r *sortedReader) close() { r.f.Close() }

// fileMerge reads an epoch's sorted files together, in key order; of
// several writes to one key, the later file's applies later.
type fileMerge struct {
	db *DB
	rs []*sortedReader
}

func (db *DB) openFiles(files []*SortedFile) (*fileMerge, error) {
	m := &fileMerge{db: db}
	for _, f := range files {
		r, err := openSorted(f)
		if err != nil {
			m.close()
			return nil, err
		}
		m.rs = append(m.rs, r)
	}
	return m, nil
}

func (m *fileMerge) close() {
	for _, r := range m.rs {
		r.close()
	}
}

// minKey returns the smallest current key; nil when every file is done.
func (m *fileMerge) minKey() []byte {
	var k []byte
	for _, r := range m.rs {
		if r.cur.key != nil && (k == nil || bytes.Compare(r.cur.key, k) < 0) {
			k = r.cur.key
		}
	}
	return k
}

// fold applies every file's writes to x.key onto x, in file order, and
// moves past them.
func (m *fileMerge) fold(x *entry) error {
	for _, r := range m.rs {
		for r.cur.key != nil && bytes.Equal(r.cur.key, x.key) {
			if err := m.db.fold(x, r.cur.kind, r.cur.val); err != nil {
				return err
			}
			if err := r.next(); err != nil {
				return err
			}
		}
	}
	return nil
}

// before writes, through write, every file key smaller than k (nil: all
// of them).
func (m *fileMerge) before(k []byte, write func(entry) error) error {
	for {
		mk := m.minKey()
		if mk == nil || (k != nil && bytes.Compare(mk, k) >= 0) {
			return nil
		}
		x := entry{key: mk}
		if err := m.fold(&x); err != nil {
			return err
		}
		if err := write(x); err != nil {
			return err
		}
	}
}

// applyFiles adds the files' writes to batch b, after its own: the commit
// of an epoch that cannot be ingested.
func (db *DB) applyFiles(b *pebble.Batch, files []*SortedFile) error {
	m, err := db.openFiles(files)
	if err != nil {
		return err
	}
	defer m.close()
	return m.before(nil, func(x entry) error {
		switch x.kind {
		case opSet:
			return b.Set(x.key, x.val, nil)
		case opDelete:
			return b.Delete(x.key, nil)
		default:
			return b.Merge(x.key, x.val, nil)
		}
	})
}

// filesBytes returns the size of the files' writes.
func filesBytes(files []*SortedFile) int {
	n := 0
	for _, f := range files {
		n += int(f.n)
	}
	return n
}
