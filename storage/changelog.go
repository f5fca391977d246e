package storage

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"
)

// SpaceHist holds relations' committed change logs, which SUBSCRIBE reads:
// h/<relation id>/<epoch>/<chunk> -> a chunk of the epoch's changes (the
// encoding is exec/ops's). A relation's Materialize writes them in the
// epoch's own atomic commit, so the log of a committed epoch is exactly the
// change that epoch made to the relation's rows. The key of epoch 0,
// h/<rel>/<0>/<0>, holds the log's low mark: the epoch after which every
// epoch's changes are in the log (a missing key: no log).
const SpaceHist = 'h'

// HistKey returns the key of chunk c of relation rel's changes in epoch e.
func HistKey(rel, e uint64, c uint32) []byte {
	k := Key(SpaceHist, rel)
	k = append(k, '/')
	k = binary.BigEndian.AppendUint64(k, e)
	k = append(k, '/')
	return binary.BigEndian.AppendUint32(k, c)
}

// HistEpochKey returns the first key of relation rel's changes in epoch e.
func HistEpochKey(rel, e uint64) []byte {
	k := Key(SpaceHist, rel)
	k = append(k, '/')
	return binary.BigEndian.AppendUint64(k, e)
}

// HistLoKey is the key of relation rel's low mark.
func HistLoKey(rel uint64) []byte { return HistKey(rel, 0, 0) }

// HistKeyEpoch returns the epoch of a change-log key.
func HistKeyEpoch(k []byte) uint64 {
	if len(k) < 19 {
		return 0
	}
	return binary.BigEndian.Uint64(k[11:19])
}

// RelHist is the in-memory side of a relation's change log, shared by its
// Materialize (which writes the log) and its subscriptions (which read
// it). The log is written for every epoch while the relation has a
// retention or at least one subscription.
type RelHist struct {
	// Subs counts the running subscriptions of the relation.
	Subs atomic.Int32
	// Retention is how long a committed epoch's changes stay in the log
	// (ALTER … SET (retention = …)); 0: only while subscriptions run, and
	// then MinRetention.
	Retention atomic.Int64
}

// MinRetention is how long changes stay in the log of a relation without
// a retention while subscriptions read it: a subscription that falls
// further behind than that (a client not reading) is ended with an error
// rather than buffered.
const MinRetention = 30 * time.Second

// Logging reports whether the relation's changes are being logged.
func (h *RelHist) Logging() bool { return h.Subs.Load() > 0 || h.Retention.Load() > 0 }

// Keep returns how long the log keeps an epoch's changes.
func (h *RelHist) Keep() time.Duration {
	if r := time.Duration(h.Retention.Load()); r > 0 {
		return r
	}
	return MinRetention
}

// hists is the DB's registry of RelHists.
type hists struct {
	mu   sync.Mutex
	rels map[uint64]*RelHist
}

// Hist returns relation rel's RelHist, creating it on first use.
func (db *DB) Hist(rel uint64) *RelHist {
	db.hist.mu.Lock()
	defer db.hist.mu.Unlock()
	if db.hist.rels == nil {
		db.hist.rels = map[uint64]*RelHist{}
	}
	h := db.hist.rels[rel]
	if h == nil {
		h = &RelHist{}
		db.hist.rels[rel] = h
	}
	return h
}

// ForgetHist drops relation rel's RelHist (the relation is dropped; its
// log's keys go with the relation's other ranges).
func (db *DB) ForgetHist(rel uint64) {
	db.hist.mu.Lock()
	defer db.hist.mu.Unlock()
	delete(db.hist.rels, rel)
}

// Committed returns a channel closed when the next epoch commits, and the
// epoch committed now: a reader that finds nothing new after that epoch
// waits on the channel, with no polling.
func (db *DB) Committed() (<-chan struct{}, uint64) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.mu.commitCh == nil {
		db.mu.commitCh = make(chan struct{})
	}
	return db.mu.commitCh, db.mu.committed
}

// notifyCommit wakes the waiters of Committed; db.mu is held.
func (db *DB) notifyCommitLocked() {
	if db.mu.commitCh != nil {
		close(db.mu.commitCh)
		db.mu.commitCh = nil
	}
}
