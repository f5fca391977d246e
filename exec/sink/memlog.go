package sink

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"sluice/exec/connector"
	"sluice/sql/types"
)

// MemLog hands the writer's epochs to the deliverer in memory, so that
// an epoch delivered soon after its checkpoint is not read back from the
// sink log and decoded again (the log is still written: it is what makes
// the epoch durable, and what a restarted deliverer reads).
//
// The writer adds every epoch it checkpoints, empty ones too, so that the
// deliverer can tell a run of consecutive epochs from one with a gap. The
// deliverer takes epoch e from memory only when it knows that every epoch
// before e is handled (delivered or empty) and e is committed; otherwise
// it reads the log, as after a restart. An epoch that would take the
// held changes' heap past the budget (SetMemLogBytes) is not kept: the gap
// sends the deliverer to the log until it has caught up.
type MemLog struct {
	mu     sync.Mutex
	epochs []memEpoch // ascending, consecutive
	bytes  int64      // log-entry bytes held
	heap   int64      // estimated heap bytes held (the bound)
}

type memEpoch struct {
	epoch   uint64
	changes []connector.Change
	chunks  [][]byte // or the epoch's log chunks (an append-only sink), decoded at delivery
	wire    bool     // chunks are the sink's own bytes of the changes (Writer.Wire), not log chunks
	count   int64    // the changes in chunks
	size    int64    // bytes of the changes' log entries
	heap    int64    // estimated heap bytes of the changes (changesHeap)
	dropped bool     // the changes were not kept: read the log
}

// memLogBytes bounds the heap the changes a MemLog holds take, as
// changesHeap estimates it (a change of four BIGINT/TIMESTAMP columns is
// 336 bytes in memory against 25 in the log: a bound on the
// log bytes, as before, let 64 MiB of log entries hold ~860 MiB of rows).
var memLogBytes atomic.Int64

func init() { memLogBytes.Store(32 << 20) }

// SetMemLogBytes sets the heap budget of every sink's MemLog (the
// server's memory split, cmd/sluice/memlimit.go).
func SetMemLogBytes(n int64) { memLogBytes.Store(n) }

// changesHeap estimates the heap bytes of changes: the slice, each row's
// datums and the bytes of their strings (strings shared with the
// source's buffers are counted as if owned).
func changesHeap(changes []connector.Change) int64 {
	const changeBytes, datumBytes = int64(unsafe.Sizeof(connector.Change{})), int64(unsafe.Sizeof(types.Datum{}))
	n := int64(cap(changes)) * changeBytes
	for _, c := range changes {
		for _, r := range [2]types.Row{c.Before, c.After} {
			n += int64(cap(r)) * datumBytes
			for i := range r {
				n += int64(len(r[i].S))
			}
		}
	}
	return n
}

// memLogEpochs bounds the epochs a MemLog holds (a sink that cannot
// deliver for a long time).
const memLogEpochs = 4096

// add records epoch e's changes (nil for an empty epoch).
func (m *MemLog) add(e uint64, changes []connector.Change, size int64) {
	heap := changesHeap(changes)
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.epochs); n > 0 && m.epochs[n-1].epoch+1 != e {
		m.clearLocked() // not the next epoch (a checkpoint that failed): start again
	}
	if len(m.epochs) >= memLogEpochs || m.heap+heap > memLogBytes.Load() {
		m.epochs = append(m.epochs, memEpoch{epoch: e, dropped: true})
		return
	}
	m.epochs = append(m.epochs, memEpoch{epoch: e, changes: changes, size: size, heap: heap})
	m.bytes += size
	m.heap += heap
}

// chunkStream hands over the changes of encoded chunks one chunk at a
// time: only one chunk's rows are decoded at once.
func chunkStream(chunks [][]byte) connector.Changes {
	return func(yield func([]connector.Change) error) error {
		var piece []connector.Change
		for _, c := range chunks {
			var err error
			if piece, err = decodeChanges(c, piece[:0]); err != nil {
				return err
			}
			if err := yield(piece); err != nil {
				return err
			}
			clear(piece)
		}
		return nil
	}
}

// addEncoded records epoch e's log chunks (none for an empty epoch): an
// append-only sink's, which the deliverer decodes (from memory) when it
// takes them. They are held in their encoded form, several times smaller
// than rows (changesHeap).
func (m *MemLog) addEncoded(e uint64, chunks [][]byte, size, count int64) {
	m.addChunks(e, chunks, size, count, false)
}

// addWire records epoch e's changes as the pieces of the sink's own bytes
// (Writer.Wire), which the deliverer hands to the sink as they are
// (connector.WireSink); size is still their log entries' size.
func (m *MemLog) addWire(e uint64, pieces [][]byte, size, count int64) {
	m.addChunks(e, pieces, size, count, true)
}

func (m *MemLog) addChunks(e uint64, chunks [][]byte, size, count int64, wire bool) {
	heap := int64(cap(chunks)) * 24
	for _, c := range chunks {
		heap += int64(cap(c))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.epochs); n > 0 && m.epochs[n-1].epoch+1 != e {
		m.clearLocked()
	}
	if len(m.epochs) >= memLogEpochs || m.heap+heap > memLogBytes.Load() {
		m.epochs = append(m.epochs, memEpoch{epoch: e, dropped: true})
		return
	}
	m.epochs = append(m.epochs, memEpoch{epoch: e, chunks: chunks, wire: wire, count: count, size: size, heap: heap})
	m.bytes += size
	m.heap += heap
}

func (m *MemLog) clearLocked() {
	clear(m.epochs)
	m.epochs, m.bytes, m.heap = m.epochs[:0], 0, 0
}

// takeHeld returns epoch e as held, if it is (ok), dropping every epoch
// before e: a keyed sink's changes, an append-only sink's log chunks
// (decoded by the deliverer) or its wire pieces.
func (m *MemLog) takeHeld(e uint64) (h memEpoch, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := 0
	for i < len(m.epochs) && m.epochs[i].epoch < e {
		m.bytes -= m.epochs[i].size
		m.heap -= m.epochs[i].heap
		i++
	}
	if i > 0 {
		n := copy(m.epochs, m.epochs[i:])
		clear(m.epochs[n:])
		m.epochs = m.epochs[:n]
	}
	if len(m.epochs) == 0 || m.epochs[0].epoch != e || m.epochs[0].dropped {
		return memEpoch{}, false
	}
	return m.epochs[0], true
}

// release drops epoch e, delivered, and any before it: their heap leaves
// the budget before the next epoch is added (two W1 epochs of log chunks
// do not fit it together, so the next one went to the log).
func (m *MemLog) release(e uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := 0
	for i < len(m.epochs) && m.epochs[i].epoch <= e {
		m.bytes -= m.epochs[i].size
		m.heap -= m.epochs[i].heap
		i++
	}
	n := copy(m.epochs, m.epochs[i:])
	clear(m.epochs[n:])
	m.epochs = m.epochs[:n]
}

// pending counts the held epochs with changes after epoch after (the one
// just delivered, if still held) up to epoch last.
func (m *MemLog) pending(after, last uint64) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.epochs {
		if e.epoch > after && e.epoch <= last && (e.dropped || len(e.changes) > 0 || len(e.chunks) > 0) {
			n++
		}
	}
	return n
}

// Held returns the epochs and bytes held (tests, metrics).
func (m *MemLog) Held() (epochs int, bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.epochs), m.bytes
}
