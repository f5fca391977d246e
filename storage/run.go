package storage

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble"
)

// Run is one writer's share of an epoch's writes, kept apart from the
// epoch's batch: an operator that writes much state at a barrier (a join's
// new rows) appends it here, in key order when it can, without a lock and
// without Pebble's batch encoding. When an epoch's runs are large, Commit
// writes the epoch as one sstable and ingests it (atomic like a batch, and
// the data is written once instead of to the WAL and again by the flush);
// otherwise it copies the runs into the batch.
//
// A run's writes apply after every write of the epoch's batch (whatever
// the order of the calls), and in their own order. A Run is used by one
// goroutine; it is done with once the operator's Checkpoint returns.
type Run struct {
	pool   *runPool
	chunks [][]byte // keys and values; a write never spans two chunks
	owned  [][]byte // values the run refers to without a copy (SetOwned)
	recs   []runRec
	n      int  // bytes of keys and values
	sorted bool // every key is greater than the one before
}

// runRec is one write: key chunks[c][off:off+kl], then its value (vl
// bytes), or, when own > 0, the value owned[own-1].
type runRec struct {
	c, off, kl, vl uint32
	own            uint32
	kind           opKind
}

type opKind uint8

const (
	opSet opKind = iota + 1
	opDelete
	opMerge
)

// runChunk is the size of a run's buffers: writes are appended to chunks
// rather than to one growing slice, which copied the whole run at every
// doubling (a tenth of Nexmark q20's CPU).
const runChunk = 1 << 20

// NewRun returns a run of this epoch's writes.
func (w *EpochWriter) NewRun() *Run {
	r := w.db.runs.get()
	w.mu.Lock()
	w.runs = append(w.runs, r)
	w.mu.Unlock()
	return r
}

// runPool keeps the buffers of committed runs for the next epochs: a large
// epoch's runs are a hundred megabytes, and fresh memory costs a page
// fault per page.
type runPool struct {
	mu     sync.Mutex
	runs   []*Run
	chunks [][]byte
}

const (
	runPoolRuns   = 16
	runPoolChunks = 256 // 256 MiB
)

func (p *runPool) get() *Run {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.runs); n > 0 {
		r := p.runs[n-1]
		p.runs[n-1] = nil
		p.runs = p.runs[:n-1]
		return r
	}
	return &Run{pool: p, sorted: true}
}

func (p *runPool) chunk(size int) []byte {
	if size > runChunk {
		return make([]byte, 0, size)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.chunks); n > 0 {
		c := p.chunks[n-1]
		p.chunks[n-1] = nil
		p.chunks = p.chunks[:n-1]
		return c
	}
	return make([]byte, 0, runChunk)
}

// put gives back committed runs.
func (p *runPool) put(runs []*Run) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range runs {
		for i, c := range r.chunks {
			if cap(c) == runChunk && len(p.chunks) < runPoolChunks {
				p.chunks = append(p.chunks, c[:0])
			}
			r.chunks[i] = nil
		}
		clear(r.owned) // not the pool's: their owners may still read them
		r.chunks, r.owned, r.recs, r.n, r.sorted = r.chunks[:0], r.owned[:0], r.recs[:0], 0, true
		if len(p.runs) < runPoolRuns {
			p.runs = append(p.runs, r)
		}
	}
}

func (r *Run) add(kind opKind, k, v []byte) {
	if r.sorted && len(r.recs) > 0 && bytes.Compare(r.key(len(r.recs)-1), k) >= 0 {
		r.sorted = false
	}
	size := len(k) + len(v)
	c := len(r.chunks) - 1
	if c < 0 || cap(r.chunks[c])-len(r.chunks[c]) < size {
		r.chunks = append(r.chunks, r.pool.chunk(size))
		c++
	}
	buf := r.chunks[c]
	off := len(buf)
	buf = append(buf, k...)
	r.chunks[c] = append(buf, v...)
	r.recs = append(r.recs, runRec{c: uint32(c), off: uint32(off), kl: uint32(len(k)), vl: uint32(len(v)), kind: kind})
	r.n += size
}

// Set records key=value.
func (r *Run) Set(k, v []byte) { r.add(opSet, k, v) }

// SetOwned records key=value without copying value, which must not change
// until the epoch is committed or discarded (the run copies only k): for
// a large value that is read-only from here on, such as a sink log chunk.
func (r *Run) SetOwned(k, v []byte) {
	r.add(opSet, k, nil)
	r.owned = append(r.owned, v)
	x := &r.recs[len(r.recs)-1]
	x.own, x.vl = uint32(len(r.owned)), uint32(len(v))
	r.n += len(v)
}

// Delete records the deletion of key.
func (r *Run) Delete(k []byte) { r.add(opDelete, k, nil) }

// Merge records adding the varint count delta to key's count (see
// EpochWriter.Merge).
func (r *Run) Merge(k []byte, delta int64) {
	var buf [binary.MaxVarintLen64]byte
	r.add(opMerge, k, binary.AppendVarint(buf[:0], delta))
}

// Len returns the number of writes.
func (r *Run) Len() int { return len(r.recs) }

func (r *Run) key(i int) []byte { return r.recKey(r.recs[i]) }

func (r *Run) value(i int) []byte {
	x := r.recs[i]
	if x.own > 0 {
		return r.owned[x.own-1]
	}
	return r.chunks[x.c][x.off+x.kl : x.off+x.kl+x.vl]
}

func (r *Run) recKey(x runRec) []byte { return r.chunks[x.c][x.off : x.off+x.kl] }

// sort puts the writes in key order, keeping the order of writes to one key.
func (r *Run) sort() {
	if r.sorted {
		return
	}
	slices.SortStableFunc(r.recs, func(a, b runRec) int {
		return bytes.Compare(r.recKey(a), r.recKey(b))
	})
	r.sorted = true
}

// bytes returns the size of the run's keys and values.
func (r *Run) bytes() int { return r.n }

// applyTo adds the run's writes to batch b, after its own.
func (r *Run) applyTo(b *pebble.Batch) {
	for i, x := range r.recs {
		switch x.kind {
		case opSet:
			b.Set(r.key(i), r.value(i), nil)
		case opDelete:
			b.Delete(r.key(i), nil)
		case opMerge:
			b.Merge(r.key(i), r.value(i), nil)
		}
	}
}
