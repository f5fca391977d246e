package ops

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"

	"sluice/exec/flow"
	"sluice/exec/limit"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// A large epoch (a COPY or INSERT … SELECT of a million rows enters a
// table's dataflow in one epoch, so that every view sees it at once) would
// hold every changed key in Materialize.dirty until its barrier, then
// again in flying and in the epoch's write batch. Instead, once the
// epoch's changes pass MatSpillBytes, Materialize writes them, sorted by
// key, to a run file in the store's ingest directory and forgets them. At
// the barrier the runs are merged in key order; each key's changes (in
// arrival order) are added to its multiplicity before the epoch, and the
// results go to a storage.SortedFile that the epoch's commit ingests with
// the rest of the epoch, atomically. Such an epoch's values are not kept
// in flying: the next checkpoint waits for its commit and reads them from
// the store. A crash leaves only files in the ingest directory, which
// the store removes when it opens.

// MatSpillBytes is the estimated size of an epoch's changes past which a
// table's Materialize spills them to a run file (its epochs are whole
// statements: a bulk load's is its every row).
var MatSpillBytes int64 = 8 << 20

// ViewSpillBytes is MatSpillBytes for a view's Materialize: a view's
// epochs are its query's changes over one checkpoint interval, often tens
// of megabytes (an aggregation's changed groups), and spilling such an
// epoch costs its next checkpoint a wait for the commit.
var ViewSpillBytes int64 = 64 << 20

// dirtyKeyBytes is the estimated cost of one changed key besides its row
// (the map entry, the matChange and the key's string).
const dirtyKeyBytes = 96

var matRunSeq atomic.Uint64

// noteDirty accounts a change of key k (new: the key was not changed in
// the epoch before) carrying row r (nil: none), and spills the epoch's
// changes once they pass MatSpillBytes.
func (m *Materialize) noteDirty(k []byte, isNew bool, r types.Row) {
	if isNew {
		m.dirtyBytes += int64(len(k)) + dirtyKeyBytes
	}
	if r != nil {
		m.dirtyBytes += limit.RowBytes(r)
	}
}

// maybeSpill writes the epoch's changes to a run once they are too large
// to hold.
func (m *Materialize) maybeSpill() error {
	limit := MatSpillBytes
	if m.View {
		limit = ViewSpillBytes
	}
	if m.db == nil || m.replacing || m.dirtyBytes < limit {
		return nil
	}
	return m.spillDirty()
}

// spillDirty writes the changes in dirty, in key order, to a new run file
// and empties dirty. A run record: uvarint key length, key, varint
// multiplicity change, uvarint 0 (no row) or 1 + the encoded row's
// length, the encoded row.
func (m *Materialize) spillDirty() error {
	keys := make([]string, 0, len(m.dirty))
	for k := range m.dirty {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	path := filepath.Join(m.db.BulkDir(), fmt.Sprintf("mat-%d-%d.run", m.rel, matRunSeq.Add(1)))
	f, err := os.Create(path)
	if err != nil {
		return pgerror.Wrap(err, pgcode.IOError, "create %s", path)
	}
	m.runs = append(m.runs, path)
	w := bufio.NewWriterSize(f, 1<<20)
	var buf, rbuf []byte
	for _, k := range keys {
		c := m.dirty[k]
		buf = binary.AppendUvarint(buf[:0], uint64(len(k)))
		buf = append(buf, k...)
		buf = binary.AppendVarint(buf, c.n)
		if c.row == nil {
			buf = binary.AppendUvarint(buf, 0)
		} else {
			rbuf = types.EncodeRow(rbuf[:0], c.row)
			buf = binary.AppendUvarint(buf, uint64(len(rbuf))+1)
			buf = append(buf, rbuf...)
		}
		w.Write(buf)
	}
	err = w.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return pgerror.Wrap(err, pgcode.IOError, "write %s", path)
	}
	clear(m.dirty)
	m.dirtyBytes = 0
	return nil
}

// removeRuns deletes the epoch's run files.
func (m *Materialize) removeRuns() {
	for _, p := range m.runs {
		os.Remove(p)
	}
	m.runs = nil
}

// Release implements flow.Releaser: a stopped job's runs go.
func (m *Materialize) Release() { m.removeRuns() }

// matRun reads a run file back.
type matRun struct {
	idx  int // the run's place in the epoch: later runs hold later changes
	path string
	f    *os.File
	r    *bufio.Reader
	key  []byte // nil at the end
	n    int64
	row  []byte // the encoded row; nil: none
}

func (r *matRun) next() error {
	kl, err := binary.ReadUvarint(r.r)
	if err == io.EOF {
		r.key = nil
		return nil
	}
	fail := func(err error) error { return pgerror.Wrap(err, pgcode.IOError, "read %s", r.path) }
	if err != nil {
		return fail(err)
	}
	r.key = make([]byte, kl)
	if _, err := io.ReadFull(r.r, r.key); err != nil {
		return fail(err)
	}
	if r.n, err = binary.ReadVarint(r.r); err != nil {
		return fail(err)
	}
	rl, err := binary.ReadUvarint(r.r)
	if err != nil {
		return fail(err)
	}
	r.row = nil
	if rl > 0 {
		r.row = make([]byte, rl-1)
		if _, err := io.ReadFull(r.r, r.row); err != nil {
			return fail(err)
		}
	}
	return nil
}

// RunKey and RunSeq place the run in a storage.RunHeap: by its current
// key, then by its idx.
func (r *matRun) RunKey() []byte { return r.key }
func (r *matRun) RunSeq() int    { return r.idx }

// priorRaw returns key k's multiplicity and encoded row before this
// epoch's changes (the keys ascending: sk reads the stored ones).
func (m *Materialize) priorRaw(sk *storage.Seeker, k string, key []byte) (int64, []byte, error) {
	if w, ok := m.flying[k]; ok {
		if w.row == nil {
			return w.n, nil, nil
		}
		return w.n, types.EncodeRow(nil, w.row), nil
	}
	v, err := sk.Get(key)
	if err != nil || v == nil {
		return 0, nil, err
	}
	n, c := binary.Varint(v)
	if c <= 0 {
		return 0, nil, pgerror.New(pgcode.DataCorrupted, "corrupt relation value")
	}
	return n, v[c:], nil
}

// checkpointSpilled is Checkpoint for an epoch whose changes were
// spilled: it merges the runs (the changes still in dirty become the last
// one) and writes each key's new value to a sorted file of the epoch.
func (m *Materialize) checkpointSpilled(b *flow.Barrier, logging bool) error {
	defer m.removeRuns()
	if len(m.dirty) > 0 {
		if err := m.spillDirty(); err != nil {
			return err
		}
	}
	var h storage.RunHeap[*matRun]
	defer func() {
		for _, r := range h {
			r.f.Close()
		}
	}()
	for i, p := range m.runs {
		f, err := os.Open(p)
		if err != nil {
			return pgerror.Wrap(err, pgcode.IOError, "read %s", p)
		}
		r := &matRun{idx: i, path: p, f: f, r: bufio.NewReaderSize(f, 256<<10)}
		h = append(h, r)
		if err := r.next(); err != nil {
			return err
		}
		if r.key == nil {
			h = h[:len(h)-1]
			f.Close()
		}
	}
	heap.Init(&h)
	sf, err := b.W.NewSortedFile()
	if err != nil {
		return err
	}
	// The keys come in ascending order: one iterator reads the stored
	// values.
	sk, err := m.db.NewSeeker(m.prefix, storage.PrefixEnd(m.prefix))
	if err != nil {
		return err
	}
	defer sk.Close()
	var kbuf, vbuf []byte
	for h.Len() > 0 {
		k := h[0].key
		var dn int64
		var row []byte
		for h.Len() > 0 && bytes.Equal(h[0].key, k) {
			r := h[0]
			dn += r.n
			if r.row != nil {
				row = r.row
			}
			if err := r.next(); err != nil {
				return err
			}
			if r.key == nil {
				r.f.Close()
				heap.Pop(&h)
			} else {
				heap.Fix(&h, 0)
			}
		}
		kbuf = append(append(kbuf[:0], m.prefix...), k...)
		n0, row0, err := m.priorRaw(sk, string(k), kbuf)
		if err != nil {
			return err
		}
		n := n0 + dn
		if row == nil {
			row = row0
		}
		if logging {
			if err := m.logRaw(b, row0, n0, row, n); err != nil {
				return err
			}
		}
		switch {
		case n > 0 && row == nil:
			return pgerror.Newf(pgcode.Internal, "relation %d: a key holds %d rows but none was inserted", m.rel, n)
		case n > 0:
			vbuf = append(binary.AppendVarint(vbuf[:0], n), row...)
			sf.Set(kbuf, vbuf)
		default:
			sf.Delete(kbuf)
		}
	}
	if err := sf.Close(); err != nil {
		return err
	}
	// The next checkpoint reads this epoch's values from the store once
	// it has committed (awaitSpilled).
	m.spilledEpoch = b.Epoch
	if logging {
		return m.hist.end(b)
	}
	return nil
}

// logRaw logs one key's change with encoded rows.
func (m *Materialize) logRaw(b *flow.Barrier, raw0 []byte, n0 int64, raw []byte, n int64) error {
	var row0, row types.Row
	var err error
	if raw0 != nil {
		if row0, err = types.DecodeRow(raw0); err != nil {
			return err
		}
	}
	if raw != nil {
		if row, err = types.DecodeRow(raw); err != nil {
			return err
		}
	}
	m.hist.change(b, row0, n0, row, n)
	return nil
}

// awaitSpilled waits until the last spilled epoch has committed: its
// values are in the store only (not in flying), and a later epoch's
// changes are added to them.
func (m *Materialize) awaitSpilled() error {
	for m.spilledEpoch != 0 {
		ch, committed := m.db.Committed()
		if committed >= m.spilledEpoch {
			m.spilledEpoch = 0
			return nil
		}
		select {
		case <-ch:
		case <-m.Done:
			return pgerror.New(pgcode.AdminShutdown, "the materialization stopped while a checkpoint was committing")
		}
	}
	return nil
}
