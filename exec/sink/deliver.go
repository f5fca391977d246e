package sink

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"sluice/exec/connector"
	"sluice/storage"
)

// Deliverer writes a sink's committed epochs to its connector.
type Deliverer struct {
	ID      uint64
	Name    string
	Factory connector.SinkFactory
	Config  connector.SinkConfig
	DB      *storage.DB
	Logf    func(string, ...any)
	// Backoff bounds the wait between retries (defaults 100ms .. 5s).
	MinBackoff, MaxBackoff time.Duration
	// Mem, when set, is the writer's in-memory handoff (memlog.go).
	Mem *MemLog

	// next is the epoch to deliver next when every epoch before it is
	// known to be handled (0: not known; the log is read). Only Run's
	// goroutine uses it.
	next uint64

	notify chan struct{}
	once   sync.Once

	mu struct {
		sync.Mutex
		delivered uint64 // last epoch confirmed by the connector
		fromMem   int64  // epochs delivered from memory, not read from the log
		pending   int    // epochs in the log not yet confirmed (as of the last scan)
		failures  int    // consecutive failed attempts
		lastErr   string
		lastErrAt time.Time
		written   int64 // changes confirmed since start
		paused    error // set once delivery must wait for a person (restore.go)
		metrics   Metrics
	}
}

// CommitBuckets are the upper bounds, in seconds, of the commit latency
// histogram in Metrics.
var CommitBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// Metrics are a deliverer's counters since it started.
type Metrics struct {
	Bytes   int64 // bytes of the encoded changes handed to the connector
	Errors  int64 // failed attempts (connect, progress, write)
	Retries int64 // attempts made after a failure
	Commits int64 // epochs the connector confirmed
	// CommitCounts[i] counts the commits that took at most CommitBuckets[i]
	// (not cumulative; the last entry counts the rest); CommitSeconds is
	// their total time.
	CommitCounts  [13]int64
	CommitSeconds float64
}

// Metrics returns the deliverer's counters.
func (d *Deliverer) Metrics() Metrics {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mu.metrics
}

// Status is what SHOW SINKS reports about delivery.
type Status struct {
	Delivered uint64
	Pending   int
	Failures  int
	LastError string
	Written   int64
	// Paused is why delivery stopped for good until the sink is reset
	// ("" while it runs): see restore.go.
	Paused string
}

// Status returns the current delivery status.
func (d *Deliverer) Status() Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := Status{Delivered: d.mu.delivered, Pending: d.mu.pending, Failures: d.mu.failures, LastError: d.mu.lastErr, Written: d.mu.written}
	if d.mu.paused != nil {
		st.Paused = "SQLSTATE 55000: " + d.mu.paused.Error()
	}
	return st
}

func (d *Deliverer) init() {
	d.once.Do(func() {
		d.notify = make(chan struct{}, 1)
		if d.MinBackoff == 0 {
			d.MinBackoff = 100 * time.Millisecond
		}
		if d.MaxBackoff == 0 {
			d.MaxBackoff = 5 * time.Second
		}
	})
}

// Notify wakes the deliverer after an epoch was committed.
func (d *Deliverer) Notify() {
	d.init()
	select {
	case d.notify <- struct{}{}:
	default:
	}
}

// DeliveredKey is where the delivered epoch of sink id is kept.
func DeliveredKey(id uint64) []byte { return storage.Key(storage.SpacePosition, id) }

func (d *Deliverer) fail(err error) {
	d.mu.Lock()
	d.mu.failures++
	d.mu.metrics.Errors++
	first := d.mu.failures == 1
	d.mu.lastErr = err.Error()
	d.mu.lastErrAt = time.Now()
	d.mu.Unlock()
	if first && d.Logf != nil {
		d.Logf("sink %s: %v (retrying with backoff; pending epochs stay in the sink log)", d.Name, err)
	}
}

func (d *Deliverer) ok() {
	d.mu.Lock()
	recovered := d.mu.failures > 0
	d.mu.failures = 0
	d.mu.Unlock()
	if recovered && d.Logf != nil {
		d.Logf("sink %s: delivering again", d.Name)
	}
}

// sleep waits for the backoff of the current failure count.
func (d *Deliverer) sleep(ctx context.Context) error {
	d.mu.Lock()
	n := d.mu.failures
	d.mu.Unlock()
	wait := d.MinBackoff
	for i := 1; i < n && wait < d.MaxBackoff; i++ {
		wait *= 2
	}
	wait = min(wait, d.MaxBackoff)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		d.mu.Lock()
		d.mu.metrics.Retries++
		d.mu.Unlock()
		return nil
	}
}

// Run delivers until ctx ends.
func (d *Deliverer) Run(ctx context.Context) error {
	d.init()
	v, err := d.DB.Get(DeliveredKey(d.ID))
	if err != nil {
		return err
	}
	if len(v) == 8 {
		d.mu.Lock()
		d.mu.delivered = binary.BigEndian.Uint64(v)
		d.mu.Unlock()
	}
	if why := d.DB.SinkPaused(d.ID); why != "" {
		return d.pause(ctx, errors.New(why), false /* already recorded */)
	}
	var s connector.Sink
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	for ctx.Err() == nil {
		if s == nil {
			s, err = d.open(ctx)
			var pe *pausedError
			if errors.As(err, &pe) {
				return d.pause(ctx, pe, true)
			}
			if err != nil {
				d.countPending()
				d.fail(err)
				if d.sleep(ctx) != nil {
					return nil
				}
				continue
			}
		}
		more, err := d.deliverOne(ctx, s)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			d.fail(err)
			// A fresh connection next time: the old one may be broken.
			s.Close()
			s = nil
			if d.sleep(ctx) != nil {
				return nil
			}
			continue
		}
		if more {
			continue
		}
		select {
		case <-ctx.Done():
		case <-d.notify:
		case <-time.After(time.Second):
		}
	}
	return nil
}

func (d *Deliverer) open(ctx context.Context) (connector.Sink, error) {
	s, err := d.Factory.Open(ctx, d.Config)
	if err != nil {
		return nil, fmt.Errorf("connecting: %w", err)
	}
	if p, ok := s.(connector.Progress); ok {
		last, err := p.LastEpoch(ctx)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("reading progress: %w", err)
		}
		if err := d.checkProgress(last); err != nil {
			s.Close()
			return nil, err
		}
		d.mu.Lock()
		if last > d.mu.delivered {
			d.mu.delivered = last
		}
		d.mu.Unlock()
	}
	return s, nil
}

var errStop = errors.New("stop")

// countPending counts the epochs in the log (up to 65) for Status, and
// the newest of them, while the sink cannot be reached.
func (d *Deliverer) countPending() {
	epochs := map[uint64]struct{}{}
	_ = d.DB.Scan(LogPrefix(d.ID), func(k, _ []byte) error {
		if e, ok := epochOf(d.ID, k); ok {
			epochs[e] = struct{}{}
			if len(epochs) > 64 {
				return errStop
			}
		}
		return nil
	})
	d.mu.Lock()
	d.mu.pending = len(epochs)
	d.mu.Unlock()
}

// FromMemory returns how many epochs were delivered from memory.
func (d *Deliverer) FromMemory() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mu.fromMem
}

// deliverOne writes the oldest epoch in the log, if any, and reports
// whether more may be waiting.
func (d *Deliverer) deliverOne(ctx context.Context, s connector.Sink) (bool, error) {
	if d.Mem != nil && d.next != 0 {
		committed := d.DB.CommittedEpoch()
		for d.next <= committed {
			h, ok := d.Mem.takeHeld(d.next)
			var changes []connector.Change
			var stream connector.Changes
			var pieces [][]byte
			count := 0
			switch _, wires := s.(connector.WireSink); {
			case !ok:
			case h.wire && len(h.chunks) > 0:
				// The sink's own bytes (Writer.Wire): as they are.
				pieces, count = h.chunks, int(h.count)
				ok = wires // else read the log
			case len(h.chunks) > 0:
				if _, streams := s.(connector.StreamSink); streams {
					// An append-only sink's epoch goes to a streaming
					// sink a log chunk at a time.
					stream, count = chunkStream(h.chunks), int(h.count)
					break
				}
				for _, c := range h.chunks {
					var err error
					if changes, err = decodeChanges(c, changes); err != nil {
						return false, err
					}
				}
				count = len(changes)
			default:
				changes, count = h.changes, len(h.changes)
			}
			if !ok {
				d.next = 0 // not held: read the log
				break
			}
			if count == 0 {
				d.next++ // an empty epoch: nothing in the log
				continue
			}
			more, err := d.writeStream(ctx, s, d.next, changes, stream, pieces, count, h.size, 0, true)
			if err != nil {
				return false, err
			}
			d.Mem.release(d.next)
			d.next++
			return more || d.next <= committed, nil
		}
		if d.next != 0 {
			return false, nil
		}
	}
	prefix := LogPrefix(d.ID)
	// Every epoch up to committed is in the log or was empty: once the log
	// is found empty, the next epoch to deliver is the one after it.
	committed := d.DB.CommittedEpoch()
	var epoch uint64
	var changes []connector.Change
	var size int64
	epochs := map[uint64]struct{}{}
	// A sink that takes an epoch in pieces gets the log's chunks decoded
	// one at a time: the epoch is held encoded (a large epoch decoded
	// whole was most of W1's peak memory), as from memory.
	_, streams := s.(connector.StreamSink)
	var chunks [][]byte
	count := 0
	err := d.DB.Scan(prefix, func(k, v []byte) error {
		e, ok := epochOf(d.ID, k)
		if !ok {
			return nil
		}
		epochs[e] = struct{}{}
		if epoch == 0 {
			epoch = e
		}
		if e != epoch {
			if len(epochs) > 64 {
				return errStop // enough to count for status; the rest is read later
			}
			return nil
		}
		var err error
		size += int64(len(v))
		if streams {
			n, err := countChanges(v)
			count += n
			chunks = append(chunks, bytes.Clone(v))
			return err
		}
		changes, err = decodeChanges(v, changes)
		return err
	})
	if err != nil && !errors.Is(err, errStop) {
		return false, err
	}
	d.mu.Lock()
	d.mu.pending = len(epochs)
	d.mu.Unlock()
	if epoch == 0 {
		if d.Mem != nil {
			d.next = committed + 1
		}
		return false, nil
	}
	if streams {
		return d.writeStream(ctx, s, epoch, nil, chunkStream(chunks), nil, count, size, len(epochs), false)
	}
	return d.write(ctx, s, epoch, changes, size, len(epochs), false)
}

// write hands epoch's changes to the connector unless it has them
// already, then removes the epoch from the log and records it delivered.
// logged is how many epochs the log scan saw (Status).
func (d *Deliverer) write(ctx context.Context, s connector.Sink, epoch uint64, changes []connector.Change, size int64, logged int, fromMem bool) (bool, error) {
	return d.writeStream(ctx, s, epoch, changes, nil, nil, len(changes), size, logged, fromMem)
}

// writeStream is write with the changes given either whole, as a
// stream of count changes (to a StreamSink) or as the sink's own bytes of
// them (pieces, to a WireSink).
func (d *Deliverer) writeStream(ctx context.Context, s connector.Sink, epoch uint64, changes []connector.Change, stream connector.Changes, pieces [][]byte, count int, size int64, logged int, fromMem bool) (bool, error) {
	prefix := LogPrefix(d.ID)
	d.mu.Lock()
	delivered := d.mu.delivered
	d.mu.Unlock()
	var took time.Duration
	if epoch > delivered && count > 0 {
		t := time.Now()
		var err error
		switch {
		case pieces != nil:
			err = s.(connector.WireSink).WriteWire(ctx, epoch, pieces)
		case stream != nil:
			err = s.(connector.StreamSink).WriteChanges(ctx, epoch, stream)
		default:
			err = s.Write(ctx, epoch, changes)
		}
		if err != nil {
			return false, fmt.Errorf("epoch %d: %w", epoch, err)
		}
		took = time.Since(t)
		connector.Crashpoint("sink-after-write")
		d.ok()
	}
	wb := d.DB.NewWriteBatch()
	lo := binary.BigEndian.AppendUint64(append([]byte(nil), prefix...), epoch)
	wb.DeleteRange(lo, binary.BigEndian.AppendUint64(append([]byte(nil), prefix...), epoch+1))
	if epoch > delivered {
		wb.Set(DeliveredKey(d.ID), binary.BigEndian.AppendUint64(nil, epoch))
	}
	// A sink that keeps its own progress (connector.Progress) is asked
	// for it at every connect, and write skips what it confirmed: losing
	// this record in a crash costs a skipped epoch, not a duplicate, so it
	// need not wait for an fsync (the next checkpoint's synced commit makes
	// it durable). The fsync was on the path of every epoch's delivery: at
	// 50 ms checkpoints it delayed the next epoch's transaction.
	write := d.DB.WriteSync
	if _, ok := s.(connector.Progress); ok {
		write = d.DB.WriteLazy
	}
	if err := write(wb); err != nil {
		return false, err
	}
	d.mu.Lock()
	if epoch > d.mu.delivered {
		d.mu.delivered = epoch
		d.mu.written += int64(count)
		if count > 0 {
			m := &d.mu.metrics
			m.Bytes += size
			m.Commits++
			sec := took.Seconds()
			m.CommitSeconds += sec
			i := 0
			for i < len(CommitBuckets) && sec > CommitBuckets[i] {
				i++
			}
			m.CommitCounts[i]++
		}
	}
	if fromMem {
		d.mu.fromMem++
		d.mu.pending = d.Mem.pending(epoch, d.DB.CommittedEpoch())
	} else {
		d.mu.pending = max(0, logged-1)
	}
	d.mu.Unlock()
	return true, nil
}
