package ops

import (
	"bytes"
	"encoding/binary"
	"errors"
	"time"

	"sluice/exec/flow"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// A relation's change log (storage/changelog.go) is written by its
// Materialize at each checkpoint while the relation has a retention or a
// subscription: the epoch's net change of every key, as (row, diff)
// pairs, in chunks of about histChunkBytes under h/<rel>/<epoch>/<chunk>,
// in the epoch's own batch. So a committed epoch's log is exactly what the
// epoch did to the relation's rows, committed with them or not at all.
//
// The low mark (h/<rel>/<0>/<0>) is the epoch after which the log is
// complete: it is set when logging starts (the epoch before the first one
// logged), raised when old epochs are trimmed (older than the retention,
// once a second), and the whole log goes when logging stops (no retention
// and no subscription) or the view's query is replaced.

// histChunkBytes is the size at which an epoch's log is cut into chunks.
const histChunkBytes = 256 << 10

// histTrimEvery is how often the log is trimmed to its retention.
const histTrimEvery = time.Second

// histLog is a Materialize's writer of its relation's change log.
type histLog struct {
	rel     uint64
	db      *storage.DB
	h       *storage.RelHist
	on      bool // the log is complete from the low mark to the last epoch
	checked bool // the store was looked at (first checkpoint)
	epoch   uint64
	chunk   uint32
	count   uint64
	buf     []byte
	rbuf    []byte
	trimmed time.Time
	now     int64
}

func newHistLog(rel uint64, db *storage.DB) *histLog {
	return &histLog{rel: rel, db: db, h: db.Hist(rel)}
}

// begin starts epoch b's log; it reports whether the epoch is logged.
func (l *histLog) begin(b *flow.Barrier) (bool, error) {
	logging := l.h.Logging()
	if !l.checked {
		l.checked = true
		v, err := l.db.Get(storage.HistLoKey(l.rel))
		if err != nil {
			return false, err
		}
		// A low mark in the store: the log was written up to the last
		// committed epoch, which this run continues.
		l.on = v != nil
	}
	if !logging {
		if l.on {
			l.clear(b)
		}
		return false, nil
	}
	if !l.on {
		l.clear(b)
		b.W.Set(storage.HistLoKey(l.rel), binary.AppendUvarint(nil, b.Epoch-1))
		l.on = true
		l.trimmed = time.Now()
	}
	l.epoch, l.chunk, l.count, l.buf = b.Epoch, 0, 0, l.buf[:0]
	l.now = time.Now().UnixNano()
	return true, nil
}

// clear deletes the whole log in b.
func (l *histLog) clear(b *flow.Barrier) {
	b.W.DeleteRange(storage.HistLoKey(l.rel), storage.PrefixEnd(storage.Key(storage.SpaceHist, l.rel)))
	l.on = false
}

// reset empties the log at a replaced query: the rows before and after
// are not one relation's history. Subscriptions reading it end (their
// position is below the new low mark).
func (l *histLog) reset(b *flow.Barrier) {
	l.clear(b)
	if l.h.Logging() {
		b.W.Set(storage.HistLoKey(l.rel), binary.AppendUvarint(nil, b.Epoch))
		l.on = true
	}
}

// add logs row r with diff d.
func (l *histLog) add(b *flow.Barrier, r types.Row, d int64) {
	l.rbuf = types.EncodeRow(l.rbuf[:0], r)
	l.buf = binary.AppendVarint(l.buf, d)
	l.buf = binary.AppendUvarint(l.buf, uint64(len(l.rbuf)))
	l.buf = append(l.buf, l.rbuf...)
	l.count++
	if len(l.buf) >= histChunkBytes {
		l.flush(b)
	}
}

// change logs the change of one key from (row0, n0) to (row, n).
func (l *histLog) change(b *flow.Barrier, row0 types.Row, n0 int64, row types.Row, n int64) {
	switch {
	case n0 > 0 && n > 0 && bytes.Equal(types.EncodeRow(nil, row0), types.EncodeRow(nil, row)):
		if n != n0 {
			l.add(b, row, n-n0)
		}
	default:
		if n0 > 0 {
			l.add(b, row0, -n0)
		}
		if n > 0 {
			l.add(b, row, n)
		}
	}
}

// flush writes the chunk collected so far.
func (l *histLog) flush(b *flow.Barrier) {
	if l.count == 0 {
		return
	}
	v := binary.AppendUvarint(make([]byte, 0, len(l.buf)+20), uint64(l.now))
	v = binary.AppendUvarint(v, l.count)
	v = append(v, l.buf...)
	b.W.Set(storage.HistKey(l.rel, l.epoch, l.chunk), v)
	l.chunk++
	l.count, l.buf = 0, l.buf[:0]
}

var errStopScan = errors.New("stop")

// end writes the epoch's last chunk and, once a second, trims the epochs
// older than the retention.
func (l *histLog) end(b *flow.Barrier) error {
	l.flush(b)
	if time.Since(l.trimmed) < histTrimEvery {
		return nil
	}
	l.trimmed = time.Now()
	cutoff := uint64(time.Now().Add(-l.h.Keep()).UnixNano())
	var last uint64
	err := l.db.ScanRange(storage.HistKey(l.rel, 1, 0), storage.PrefixEnd(storage.Key(storage.SpaceHist, l.rel)), func(k, v []byte) error {
		t, n := binary.Uvarint(v)
		if n <= 0 {
			return pgerror.New(pgcode.DataCorrupted, "corrupt change log chunk")
		}
		if t >= cutoff {
			return errStopScan
		}
		last = storage.HistKeyEpoch(k)
		return nil
	})
	if err != nil && err != errStopScan {
		return err
	}
	if last > 0 {
		b.W.DeleteRange(storage.HistKey(l.rel, 1, 0), storage.HistEpochKey(l.rel, last+1))
		b.W.Set(storage.HistLoKey(l.rel), binary.AppendUvarint(nil, last))
	}
	return nil
}

// HistChange is one row of a relation's change log.
type HistChange struct {
	Row  types.Row
	Diff int64
}

// DecodeHistChunk decodes a change-log chunk: the commit time of its epoch
// (Unix nanoseconds) and its changes, appended to out.
func DecodeHistChunk(v []byte, out []HistChange) (int64, []HistChange, error) {
	bad := pgerror.New(pgcode.DataCorrupted, "corrupt change log chunk")
	t, n := binary.Uvarint(v)
	if n <= 0 {
		return 0, out, bad
	}
	v = v[n:]
	cnt, n := binary.Uvarint(v)
	if n <= 0 {
		return 0, out, bad
	}
	v = v[n:]
	for range cnt {
		d, n := binary.Varint(v)
		if n <= 0 {
			return 0, out, bad
		}
		v = v[n:]
		sz, n := binary.Uvarint(v)
		if n <= 0 || sz > uint64(len(v)-n) {
			return 0, out, bad
		}
		v = v[n:]
		r, err := types.DecodeRow(v[:sz])
		if err != nil {
			return 0, out, err
		}
		v = v[sz:]
		out = append(out, HistChange{Row: r, Diff: d})
	}
	return int64(t), out, nil
}
