// Package sink owns the way from a job's changes to an external system.
//
// The Writer operator, the root of a sink's job, turns each epoch's
// changes into the connector's Change list (net per key for keyed sinks)
// and writes it into the sink log with the checkpoint: k/<sink>/<epoch>/<chunk>.
// The output of epoch N is therefore durable exactly when N is.
//
// The Deliverer, one goroutine per sink, hands committed epochs to the
// connector in epoch order (from memory, handed over by the writer, while
// it keeps up: memlog.go), retries with backoff while the external system
// is down (the log keeps growing on disk; checkpoints go on), and deletes
// an epoch from the log only once the connector has confirmed it, recording
// the delivered epoch under p/<sink>. After a crash it starts again from
// the log: an epoch whose confirmation was lost is written again, which
// the connector makes harmless (a progress marker or keyed writes).
package sink

import (
	"encoding/binary"
	"sync/atomic"

	"sluice/exec/connector"
	"sluice/exec/flow"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// chunkChanges bounds the changes per sink log value.
const chunkChanges = 2048

// maxKeptBuf bounds the chunk buffer a Writer keeps between checkpoints.
const maxKeptBuf = 4 << 20

// Writer is the root operator of a sink's job.
type Writer struct {
	id      uint64
	key     []int // nil: every change is its own entry
	discard bool

	changes []connector.Change
	// An append-only sink (no key) encodes its changes as they come:
	// enc holds the epoch's full log chunks, cur the one being filled
	// (curN changes), so that the epoch's rows are not held until the
	// checkpoint (README, "Memory").
	enc  [][]byte
	cur  []byte
	curN int
	// encTotal counts the changes of enc and cur.
	encTotal int64
	byKey    map[string]int
	keyBuf   []byte
	buf      []byte // a sink log chunk being encoded

	// Logged counts changes written to the sink log; Epochs the epochs
	// that had any; Dropped the changes a discarding sink threw away.
	Logged, Epochs, Dropped atomic.Int64
	// LastEpoch is the newest epoch with changes in the log.
	LastEpoch atomic.Uint64
	// Mem, when set, receives every epoch's changes for its deliverer.
	Mem *MemLog
	// Wire, when set with Mem (an append-only sink of a
	// connector.WireEncoder), also encodes each change in the sink's own
	// bytes as it comes: wenc holds the epoch's full pieces, wcur the one
	// being filled. Mem gets those, so that delivery from memory neither
	// decodes the log chunks nor encodes rows; the log chunks, which the
	// store copies, are kept for the next epoch (free).
	Wire func(buf []byte, c connector.Change) ([]byte, error)
	wenc [][]byte
	wcur []byte
	free [][]byte
	// The wire bytes are several times the log's (a JSON line against
	// binary values): an epoch whose bytes would not fit the MemLog's
	// budget is not encoded so (wireOff), and Mem gets its log chunks, as
	// without Wire. wireBytes counts the epoch's bytes; wireRatio is the
	// last wire epoch's bytes per log byte, from which the next epoch's
	// size is foretold from this one's.
	wireOff   bool
	wireBytes int64
	wireRatio float64
}

// maxFreeBufs bounds the log chunk buffers a Writer keeps for reuse.
const maxFreeBufs = 8 << 20

// NewWriter returns the writer of sink id. With a key, the changes of an
// epoch are netted per key; with discard nothing is kept.
func NewWriter(id uint64, key []int, discard bool) *Writer {
	return &Writer{id: id, key: key, discard: discard, byKey: map[string]int{}}
}

// Terminal implements flow.Collector.
func (w *Writer) Terminal() bool { return true }

// Process implements flow.Operator.
func (w *Writer) Process(_ int, b *types.Batch, _ *flow.Emitter) error {
	if w.discard {
		w.Dropped.Add(int64(len(b.Rows)))
		return nil
	}
	if w.key == nil {
		for i, row := range b.Rows {
			d := b.Diffs[i]
			for ; d > 0; d-- {
				if err := w.encode(connector.Change{After: row}); err != nil {
					return err
				}
			}
			for ; d < 0; d++ {
				if err := w.encode(connector.Change{Before: row}); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for i, row := range b.Rows {
		d := b.Diffs[i]
		w.keyBuf = w.keyBuf[:0]
		for _, c := range w.key {
			w.keyBuf = types.AppendKey(w.keyBuf, row[c])
		}
		idx, ok := w.byKey[string(w.keyBuf)]
		if !ok {
			idx = len(w.changes)
			w.changes = append(w.changes, connector.Change{})
			w.byKey[string(w.keyBuf)] = idx
		}
		c := &w.changes[idx]
		switch {
		case d > 0:
			c.After = row
		case d < 0:
			// A retraction of the row this epoch inserted cancels it;
			// of another row, it retracts the older one (an update whose
			// insert came first).
			if c.After != nil && rowsEqual(c.After, row) {
				c.After = nil
			} else if c.Before == nil {
				c.Before = row
			}
		}
	}
	return nil
}

// Checkpoint implements flow.Operator: the epoch's net changes go into
// the sink log.
func (w *Writer) Checkpoint(b *flow.Barrier, _ *flow.Emitter) error {
	if w.discard {
		return nil
	}
	if w.key == nil {
		return w.checkpointEncoded(b)
	}
	// The store copies what it is given, so one buffer serves every chunk
	// (and every epoch), and the changes handed to Mem are the epoch's,
	// counted before: no slice grows by copying itself.
	buf := w.buf[:0]
	var kept []connector.Change // the changes logged, for Mem
	if w.Mem != nil && len(w.changes) > 0 {
		kept = make([]connector.Change, 0, len(w.changes))
	}
	var size int64
	chunk, n, total := uint32(0), 0, int64(0)
	flush := func() {
		if n == 0 {
			return
		}
		b.W.Set(LogKey(w.id, b.Epoch, chunk), buf)
		size += int64(len(buf))
		buf, n = buf[:0], 0
		chunk++
	}
	for _, c := range w.changes {
		if c.Before == nil && c.After == nil {
			continue
		}
		if c.Before != nil && c.After != nil && rowsEqual(c.Before, c.After) {
			continue
		}
		buf = appendChange(buf, c)
		if w.Mem != nil {
			kept = append(kept, c)
		}
		n++
		total++
		if n >= chunkChanges {
			flush()
		}
	}
	flush()
	if cap(buf) <= maxKeptBuf {
		w.buf = buf[:0]
	} else {
		w.buf = nil // a chunk of huge rows: do not hold its buffer
	}
	if w.Mem != nil {
		w.Mem.add(b.Epoch, kept, size)
	}
	if total > 0 {
		w.Logged.Add(total)
		w.Epochs.Add(1)
		w.LastEpoch.Store(b.Epoch)
	}
	clear(w.changes)
	w.changes = w.changes[:0]
	clear(w.byKey)
	return nil
}

// encode appends c to the epoch's current log chunk (and wire piece),
// starting a new one after chunkChanges changes.
func (w *Writer) encode(c connector.Change) error {
	if w.cur == nil {
		w.cur = w.newChunk()
	}
	w.cur = appendChange(w.cur, c)
	if w.Wire != nil && !w.wireOff {
		if w.wcur == nil {
			w.wcur = make([]byte, 0, chunkCap(w.wenc))
		}
		n := len(w.wcur)
		var err error
		if w.wcur, err = w.Wire(w.wcur, c); err != nil {
			return err
		}
		limit := memLogBytes.Load()
		if w.wireRatio == 0 {
			limit /= 4 // not measured yet: the first epoch wastes little
		}
		if w.wireBytes += int64(len(w.wcur) - n); w.wireBytes > limit {
			// Too large to hold: the log chunks go to Mem, and the ratio
			// of the bytes so far keeps the next epochs from trying.
			logged := len(w.cur)
			for _, c := range w.enc {
				logged += len(c)
			}
			w.wireRatio = float64(w.wireBytes) / float64(logged)
			w.wireOff, w.wenc, w.wcur = true, nil, nil
		}
	}
	w.curN++
	w.encTotal++
	if w.curN >= chunkChanges {
		w.closeChunk()
	}
	return nil
}

// closeChunk ends the current log chunk and its wire piece.
func (w *Writer) closeChunk() {
	w.enc = append(w.enc, w.cur)
	w.cur, w.curN = nil, 0
	if w.Wire != nil && !w.wireOff {
		w.wenc = append(w.wenc, w.wcur)
		w.wcur = nil
	}
}

// newChunk returns an empty log chunk: a kept one, or one with the room of
// the last full one.
func (w *Writer) newChunk() []byte {
	if n := len(w.free); n > 0 {
		c := w.free[n-1]
		w.free[n-1] = nil
		w.free = w.free[:n-1]
		return c[:0]
	}
	return make([]byte, 0, chunkCap(w.enc))
}

// chunkCap is the room of a new chunk: the size of the last full one.
func chunkCap(full [][]byte) int {
	if n := len(full); n > 0 {
		return min(len(full[n-1])+len(full[n-1])/16, maxKeptBuf)
	}
	return 4 << 10
}

// checkpointEncoded writes an append-only sink's encoded chunks to the
// log and hands them (or the wire pieces) to Mem: those are the
// deliverer's from here (the store copies what it is given).
func (w *Writer) checkpointEncoded(b *flow.Barrier) error {
	if w.curN > 0 {
		w.closeChunk()
	}
	// The chunks of an epoch large enough to be ingested (storage), handed
	// to Mem (read-only from here), go to a run of the epoch that refers
	// to them (storage.Run.SetOwned): no copy, and the epoch is ingested
	// as an sstable instead of passing through the batch, the WAL and a
	// memtable. Chunks the writer keeps for the next epoch, and a small
	// epoch's, are copied into the batch (a run's buffers stay in its
	// pool).
	handed := w.Mem != nil && (w.Wire == nil || w.wireOff)
	var size int64
	for _, chunk := range w.enc {
		size += int64(len(chunk))
	}
	if handed && len(w.enc) > 0 && size >= int64(b.W.IngestBytes()) {
		run := b.W.NewRun()
		for i, chunk := range w.enc {
			run.SetOwned(LogKey(w.id, b.Epoch, uint32(i)), chunk)
		}
	} else {
		for i, chunk := range w.enc {
			b.W.Set(LogKey(w.id, b.Epoch, uint32(i)), chunk)
		}
	}
	switch {
	case w.Mem != nil && w.Wire != nil && !w.wireOff:
		w.Mem.addWire(b.Epoch, w.wenc, size, w.encTotal)
		if size > 0 {
			w.wireRatio = float64(w.wireBytes) / float64(size)
		}
	case w.Mem != nil:
		w.Mem.addEncoded(b.Epoch, w.enc, size, w.encTotal)
	}
	if w.encTotal > 0 {
		w.Logged.Add(w.encTotal)
		w.Epochs.Add(1)
		w.LastEpoch.Store(b.Epoch)
	}
	if !handed {
		// Nobody else holds the log chunks: keep some for the next epoch.
		kept := 0
		for _, c := range w.free {
			kept += cap(c)
		}
		for _, c := range w.enc {
			if kept+cap(c) > maxFreeBufs {
				break
			}
			kept += cap(c)
			w.free = append(w.free, c[:0])
		}
	}
	if handed {
		w.enc = nil // Mem's now
	} else {
		clear(w.enc)
		w.enc = w.enc[:0]
	}
	w.wenc, w.curN, w.encTotal = nil, 0, 0
	// The next epoch is encoded for the wire if one of this one's size
	// would take at most half the budget.
	w.wireOff = w.wireRatio*float64(size) > float64(memLogBytes.Load()/2)
	w.wireBytes = 0
	return nil
}

func rowsEqual(a, b types.Row) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].IsNull() != b[i].IsNull() || (!a[i].IsNull() && types.Compare(a[i], b[i]) != 0) {
			return false
		}
	}
	return true
}

// LogPrefix returns the prefix of sink id's log.
func LogPrefix(id uint64) []byte { return storage.Key(storage.SpaceSinkLog, id) }

// LogKey returns the key of one chunk of sink id's output for epoch.
func LogKey(id, epoch uint64, chunk uint32) []byte {
	k := LogPrefix(id)
	k = binary.BigEndian.AppendUint64(k, epoch)
	return binary.BigEndian.AppendUint32(k, chunk)
}

// epochOf returns the epoch of a log key of sink id.
func epochOf(id uint64, k []byte) (uint64, bool) {
	p := len(LogPrefix(id))
	if len(k) < p+12 {
		return 0, false
	}
	return binary.BigEndian.Uint64(k[p:]), true
}

const (
	hasBefore = 1
	hasAfter  = 2
)

func appendChange(buf []byte, c connector.Change) []byte {
	var flags byte
	if c.Before != nil {
		flags |= hasBefore
	}
	if c.After != nil {
		flags |= hasAfter
	}
	buf = append(buf, flags)
	for _, r := range []types.Row{c.Before, c.After} {
		if r == nil {
			continue
		}
		start := len(buf)
		buf = append(buf, 0, 0, 0, 0)
		buf = types.EncodeRow(buf, r)
		binary.BigEndian.PutUint32(buf[start:], uint32(len(buf)-start-4))
	}
	return buf
}

// decodeChanges appends the changes of one log chunk to out.
func decodeChanges(v []byte, out []connector.Change) ([]connector.Change, error) {
	var slab types.RowAlloc // the chunk's rows share allocations
	for len(v) > 0 {
		flags := v[0]
		v = v[1:]
		var c connector.Change
		for _, bit := range []byte{hasBefore, hasAfter} {
			if flags&bit == 0 {
				continue
			}
			if len(v) < 4 {
				return nil, corrupt()
			}
			n := int(binary.BigEndian.Uint32(v))
			if len(v) < 4+n {
				return nil, corrupt()
			}
			r, err := types.DecodeRowIn(v[4:4+n], &slab)
			if err != nil {
				return nil, err
			}
			if bit == hasBefore {
				c.Before = r
			} else {
				c.After = r
			}
			v = v[4+n:]
		}
		out = append(out, c)
	}
	return out, nil
}

// countChanges returns the number of changes in one log chunk, without
// decoding their rows.
func countChanges(v []byte) (int, error) {
	n := 0
	for len(v) > 0 {
		flags := v[0]
		v = v[1:]
		for _, bit := range []byte{hasBefore, hasAfter} {
			if flags&bit == 0 {
				continue
			}
			if len(v) < 4 {
				return 0, corrupt()
			}
			l := int(binary.BigEndian.Uint32(v))
			if len(v) < 4+l {
				return 0, corrupt()
			}
			v = v[4+l:]
		}
		n++
	}
	return n, nil
}

func corrupt() error { return pgerror.New(pgcode.DataCorrupted, "corrupt sink log entry") }
