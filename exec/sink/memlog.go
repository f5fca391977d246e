package sink

import (
	"sync"

	"sluice/exec/connector"
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
// it reads the log, as after a restart. An epoch that would take the held
// changes past memLogBytes is not kept: the gap sends the deliverer to
// the log until it has caught up.
type MemLog struct {
	mu     sync.Mutex
	epochs []memEpoch // ascending, consecutive
	bytes  int64
}

type memEpoch struct {
	epoch   uint64
	changes []connector.Change
	size    int64 // bytes of the changes' log entries
	dropped bool  // the changes were not kept: read the log
}

// memLogBytes bounds the encoded bytes of the changes a MemLog holds.
var memLogBytes int64 = 64 << 20

// memLogEpochs bounds the epochs a MemLog holds (a sink that cannot
// deliver for a long time).
const memLogEpochs = 4096

// add records epoch e's changes (nil for an empty epoch).
func (m *MemLog) add(e uint64, changes []connector.Change, size int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.epochs); n > 0 && m.epochs[n-1].epoch+1 != e {
		m.clearLocked() // not the next epoch (a checkpoint that failed): start again
	}
	if len(m.epochs) >= memLogEpochs || m.bytes+size > memLogBytes {
		changes, size = nil, 0
		m.epochs = append(m.epochs, memEpoch{epoch: e, dropped: true})
		return
	}
	m.epochs = append(m.epochs, memEpoch{epoch: e, changes: changes, size: size})
	m.bytes += size
}

func (m *MemLog) clearLocked() {
	clear(m.epochs)
	m.epochs, m.bytes = m.epochs[:0], 0
}

// take returns the changes of epoch e if they are held (ok), dropping
// every epoch before e; empty is true for an epoch without changes.
func (m *MemLog) take(e uint64) (changes []connector.Change, size int64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := 0
	for i < len(m.epochs) && m.epochs[i].epoch < e {
		m.bytes -= m.epochs[i].size
		i++
	}
	if i > 0 {
		n := copy(m.epochs, m.epochs[i:])
		clear(m.epochs[n:])
		m.epochs = m.epochs[:n]
	}
	if len(m.epochs) == 0 || m.epochs[0].epoch != e || m.epochs[0].dropped {
		return nil, 0, false
	}
	return m.epochs[0].changes, m.epochs[0].size, true
}

// pending counts the held epochs with changes after epoch delivered and
// up to epoch last. (take leaves the epoch it returns held until the next
// take: once delivered it is no longer pending.)
func (m *MemLog) pending(delivered, last uint64) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.epochs {
		if e.epoch > delivered && e.epoch <= last && (e.dropped || len(e.changes) > 0) {
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
