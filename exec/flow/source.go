package flow

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// sourceBase is what every source actor shares: the barrier inbox, pause
// handling and its position key.
type sourceBase struct {
	Name     string
	Out      *Output
	coord    *Coordinator
	posKey   []byte
	barriers chan *Barrier
	resume   chan struct{}
	OnError  func(error)
	// Share, if set, gives the job's own barrier (its share of the epoch)
	// for each barrier injected.
	Share ShareFunc
	// Stats receives the source's figures (stats.go); set it to nil
	// before Run for none.
	Stats *SourceStats

	// passed is the last epoch whose barrier the source has emitted;
	// phase what its goroutine is doing (Phase*): the stuck-barrier
	// report reads both.
	passed atomic.Uint64
	phase  atomic.Int32
}

// SetPassed records that every epoch up to e is behind the source (set
// before Run, to the last epoch injected when it joins the graph).
func (s *sourceBase) SetPassed(e uint64) { s.passed.Store(e) }

// Progress names the source actor, the last epoch whose barrier it
// emitted and what it is doing (Phase*), for the stuck-barrier report.
func (s *sourceBase) Progress() (name string, passed uint64, phase int32) {
	return s.Name, s.passed.Load(), s.phase.Load()
}

// sendData sends a batch downstream, counting it and the time blocked.
func (s *sourceBase) sendData(ctx context.Context, m Msg) error {
	prev := s.phase.Swap(PhaseSending)
	defer s.phase.Store(prev)
	if s.Stats == nil {
		return s.Out.Send(ctx, m)
	}
	t := time.Now()
	err := s.Out.Send(ctx, m)
	s.Stats.BlockedNanos.Add(time.Since(t).Nanoseconds())
	s.Stats.Rows.Add(int64(len(m.Batch.Rows)))
	s.Stats.Batches.Add(1)
	return err
}

func newSourceBase(name string, opID uint64, coord *Coordinator) sourceBase {
	return sourceBase{
		Name:     name,
		Out:      &Output{},
		coord:    coord,
		posKey:   storage.Key(storage.SpacePosition, opID),
		barriers: make(chan *Barrier, 2*maxInflight+4),
		resume:   make(chan struct{}, 1),
		Stats:    &SourceStats{Started: time.Now()},
	}
}

// InjectBarrier implements SourceActor.
func (s *sourceBase) InjectBarrier(b *Barrier) {
	if s.Share != nil {
		b = s.Share(b)
	}
	s.barriers <- b
}

// Resume implements SourceActor.
func (s *sourceBase) Resume() {
	select {
	case s.resume <- struct{}{}:
	default:
	}
}

// emitBarrier saves pos, forwards b, reports it and, for a pause barrier,
// waits to be resumed.
func (s *sourceBase) emitBarrier(ctx context.Context, b *Barrier, pos []byte, seq uint64) error {
	if pos != nil {
		b.W.Set(s.posKey, pos)
	}
	if err := s.Out.Send(ctx, Msg{Kind: MsgBarrier, Barrier: b, Pos: seq}); err != nil {
		return err
	}
	if b.Pause {
		select { // drop a stale token from before this pause
		case <-s.resume:
		default:
		}
	}
	s.coord.Collect(b.Epoch)
	s.passed.Store(b.Epoch)
	if b.Pause {
		select {
		case <-s.resume:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// ReaderSource runs a connector's source reader.
type ReaderSource struct {
	sourceBase
	src   connector.Source
	seek  connector.Seekable
	dls   connector.DeadLetterSource
	meter connector.Metered
	eof   bool

	// KeepDeadLetters stores bad records (on_error = 'dead_letter') with
	// the checkpoint under d/<op>/<epoch>/<n>; otherwise they are only
	// counted (skip).
	KeepDeadLetters bool
	// SourceID and SourceName name the source read.
	SourceID   uint64
	SourceName string
	// BadRecords counts the bad records passed by.
	BadRecords atomic.Int64
	// Late counts the rows dropped because their event time was behind
	// the source's watermark when they were read.
	Late atomic.Int64
	// Failpoint, if set, is called with the row count of each read (tests:
	// a call that blocks holds the source's barriers).
	Failpoint func(ctx context.Context, rows int) error
	// Halt stops reading (the barriers still pass): set when the job
	// failed, so that nothing is read that its discarded epochs lose.
	Halt atomic.Bool
	opID uint64
	// dataEpoch is the epoch of the rows read last (the one after the
	// last barrier emitted then); holdTimer paces a held source (see
	// overLimit).
	dataEpoch uint64
	holdTimer *time.Timer
	// held: the source has held since its last read; futile: a hold
	// ended over the limit, so it holds no more until the cache is under
	// it (overLimit); holds counts the reads held.
	held, futile bool
	holds        int
	dead         []connector.DeadLetter
	wm           *sourceWatermark
	// commit is the source's Committer (nil: none); pending holds the
	// positions saved at barriers whose epochs have not committed yet.
	commit  connector.Committer
	pending []pendingPos
}

// pendingPos is a position saved at the barrier of epoch.
type pendingPos struct {
	epoch uint64
	pos   []byte
}

// Status returns the source's own status (connector.Statuser), or "".
func (r *ReaderSource) Status() string {
	if st, ok := r.src.(connector.Statuser); ok {
		return st.Status()
	}
	return ""
}

// notifyCommitted hands the source the position of the newest committed
// epoch it saved one at. A halted reader (its job failed, its later
// shares discarded) notifies nothing more: Halt is set before the failed
// job's shares are discarded, so reading it after Committed catches them.
func (r *ReaderSource) notifyCommitted() {
	if r.commit == nil || len(r.pending) == 0 {
		return
	}
	c := r.coord.Committed()
	if r.Halt.Load() {
		r.pending = nil
		return
	}
	i := 0
	for i < len(r.pending) && r.pending[i].epoch <= c {
		i++
	}
	if i == 0 {
		return
	}
	r.commit.Committed(r.pending[i-1].pos)
	r.pending = append(r.pending[:0], r.pending[i:]...)
}

// sourceWatermark is the event-time state of a source with a WATERMARK:
// the largest event time read, saved with the position, so that after
// recovery the same rows are late as before.
type sourceWatermark struct {
	col     int
	delay   int64
	key     []byte
	max     int64
	has     bool // max is set
	sent    int64
	sentAny bool
}

// EndOfTime is the watermark of a bounded source that has ended: later
// than any event time, with room for operators to add window sizes and
// gaps to it without overflow.
const EndOfTime = math.MaxInt64 / 2

// value returns the watermark implied by the rows read so far.
func (w *sourceWatermark) value() int64 { return w.max - w.delay }

// SetWatermark gives the source a watermark on column col, delay
// microseconds behind the largest value read, and restores the largest
// value saved at the last checkpoint. Call it before Run.
func (r *ReaderSource) SetWatermark(db *storage.DB, col int, delay int64) error {
	w := &sourceWatermark{col: col, delay: delay, key: append(append([]byte(nil), r.posKey...), 'w')}
	v, err := db.Get(w.key)
	if err != nil {
		return err
	}
	if v != nil {
		m, n := binary.Varint(v)
		if n <= 0 {
			return pgerror.New(pgcode.DataCorrupted, "corrupt source watermark")
		}
		w.max, w.has = m, true
	}
	r.wm = w
	return nil
}

// dropLate removes the late rows of b in place, counting them, and
// advances the largest event time read. A row is late when its time is
// below the watermark of the rows before it; NULL times are never late.
func (r *ReaderSource) dropLate(b *types.Batch) {
	w := r.wm
	j := 0
	var late int64
	for i, row := range b.Rows {
		if d := row[w.col]; d.K == types.KTimestamp || d.K == types.KTimestampTZ {
			if w.has && d.I < w.value() {
				late++
				continue
			}
			if !w.has || d.I > w.max {
				w.max, w.has = d.I, true
			}
		}
		if j != i { // rows move only once one was late
			b.Rows[j], b.Diffs[j] = row, b.Diffs[i]
		}
		j++
	}
	if late > 0 {
		clear(b.Rows[j:])
		b.Rows, b.Diffs = b.Rows[:j], b.Diffs[:j]
		r.Late.Add(late)
	}
}

// sendWatermark sends the current watermark if it is above the last one sent.
func (r *ReaderSource) sendWatermark(ctx context.Context) error {
	w := r.wm
	if w == nil || !w.has || (w.sentAny && w.value() <= w.sent) {
		return nil
	}
	w.sent, w.sentAny = w.value(), true
	return r.Out.Send(ctx, Msg{Kind: MsgWatermark, Watermark: Watermark{Col: w.col, Ts: w.sent}})
}

// DeadLetterKey returns the key of the n-th bad record kept by source
// operator opID in epoch.
func DeadLetterKey(opID, epoch uint64, n uint32) []byte {
	return storage.Key(storage.SpaceDeadLetter, opID, binary.BigEndian.AppendUint64(nil, epoch), binary.BigEndian.AppendUint32(nil, n))
}

// EncodeDeadLetter encodes a kept bad record (a row: source name, topic,
// partition, offset, error, raw bytes).
func EncodeDeadLetter(source string, d connector.DeadLetter) []byte {
	return types.EncodeRow(nil, types.Row{types.NewString(source), types.NewString(d.Topic), types.NewInt(int64(d.Partition)),
		types.NewInt(d.Offset), types.NewString(d.Error), types.NewBytes(d.Raw)})
}

func (r *ReaderSource) takeDead() {
	if r.dls == nil {
		return
	}
	before := len(r.dead)
	r.dead = r.dls.TakeDeadLetters(r.dead)
	r.BadRecords.Add(int64(len(r.dead) - before))
	if !r.KeepDeadLetters {
		r.dead = r.dead[:0]
	}
}

func (r *ReaderSource) barrier(ctx context.Context, b *Barrier) error {
	r.takeDead()
	for i, d := range r.dead {
		b.W.Set(DeadLetterKey(r.opID, b.Epoch, uint32(i)), EncodeDeadLetter(r.SourceName, d))
	}
	clear(r.dead)
	r.dead = r.dead[:0]
	if r.meter != nil && r.Stats != nil {
		m := r.meter.Meter()
		r.Stats.Bytes.Store(m.Bytes)
		lag := make([]Lag, len(m.Lag))
		for i, l := range m.Lag {
			lag[i] = Lag{Partition: l.Partition, Behind: l.Behind}
		}
		r.Stats.setLag(lag)
	}
	if r.wm != nil {
		// The watermark goes first, so that what it closes belongs to this
		// epoch, and the largest time read is saved with the position.
		if err := r.sendWatermark(ctx); err != nil {
			return err
		}
		if r.wm.has {
			b.W.Set(r.wm.key, binary.AppendVarint(nil, r.wm.max))
		}
	}
	pos := r.position()
	if r.commit != nil && pos != nil && !r.Halt.Load() {
		r.pending = append(r.pending, pendingPos{epoch: b.Epoch, pos: pos})
	}
	return r.emitBarrier(ctx, b, pos, 0)
}

// NewReaderSource wraps src; if it is Seekable and a position was saved
// under opID, it seeks there first.
func NewReaderSource(db *storage.DB, coord *Coordinator, name string, opID uint64, src connector.Source) (*ReaderSource, error) {
	r := &ReaderSource{sourceBase: newSourceBase(name, opID, coord), src: src, opID: opID}
	r.dls, _ = src.(connector.DeadLetterSource)
	r.commit, _ = src.(connector.Committer)
	r.meter, _ = src.(connector.Metered)
	if r.meter == nil {
		r.Stats.Bytes.Store(-1)
	}
	if sk, ok := src.(connector.Seekable); ok {
		r.seek = sk
		pos, err := db.Get(r.posKey)
		if err != nil {
			return nil, err
		}
		if pos != nil {
			if err := sk.Seek(pos); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// Run reads and forwards batches, emitting barriers between them, until ctx ends.
func (r *ReaderSource) Run(ctx context.Context) error {
	defer r.src.Close()
	// A restored watermark goes out before any row read after it.
	if err := r.sendWatermark(ctx); err != nil {
		return nil
	}
	for {
		// Barriers first: they must not wait behind a busy source.
		select {
		case b := <-r.barriers:
			if err := r.barrier(ctx, b); err != nil {
				return err
			}
			continue
		case <-ctx.Done():
			return nil
		default:
		}
		if r.eof || r.Halt.Load() {
			select {
			case b := <-r.barriers:
				if err := r.barrier(ctx, b); err != nil {
					return err
				}
			case <-ctx.Done():
				return nil
			}
			continue
		}
		r.notifyCommitted()
		if r.overLimit() {
			if err := r.hold(ctx); err != nil {
				return err
			}
			continue
		}
		b := types.NewBatch(1024)
		r.phase.Store(PhaseReading)
		n, err := r.src.Read(ctx, b, 1024)
		if n > 0 {
			r.dataEpoch, r.held = r.passed.Load()+1, false
		}
		if err == nil && n > 0 && r.Failpoint != nil {
			if ferr := r.Failpoint(ctx, n); ferr != nil {
				return nil // only a stopping job ends a blocked failpoint
			}
		}
		r.phase.Store(PhaseReceiving)
		ended := false
		if errors.Is(err, io.EOF) {
			r.eof = true
			ended = true
		} else if err != nil {
			if r.OnError != nil {
				r.OnError(err)
			}
			r.eof = true // stop reading; keep forwarding barriers
		}
		r.takeDead()
		if n > 0 && r.wm != nil {
			r.dropLate(b)
		}
		if len(b.Rows) > 0 {
			if err := r.sendData(ctx, Msg{Kind: MsgData, Batch: b}); err != nil {
				return nil
			}
			if err := r.sendWatermark(ctx); err != nil {
				return nil
			}
		} else if n > 0 {
			continue // every row was late
		}
		if ended && r.wm != nil {
			// A bounded source that has ended will never read another
			// row: its watermark goes to the end of time, so that every
			// window still open closes (EMIT ON WINDOW CLOSE emits it).
			ended = false
			r.wm.sent, r.wm.sentAny = EndOfTime, true
			if err := r.Out.Send(ctx, Msg{Kind: MsgWatermark, Watermark: Watermark{Col: r.wm.col, Ts: EndOfTime}}); err != nil {
				return nil
			}
		}
		if len(b.Rows) == 0 && n == 0 && !r.eof {
			select {
			case b := <-r.barriers:
				if err := r.barrier(ctx, b); err != nil {
					return err
				}
			case <-time.After(2 * time.Millisecond):
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// overLimit reports whether the source should hold its reads: the
// operators' state is over the state cache's limit, and the epoch of the
// rows it read last has not both committed and been followed by a
// barrier's checkpoint, at which the operators evict the state that
// epoch made clean. Reading on would only add state that cannot be
// evicted yet (the overshoot of the epochs in flight); once that
// checkpoint has committed too, the source reads on whatever the cache
// holds, so that state that cannot be evicted never stops it.
//
// A hold is futile when that checkpoint has committed and the cache is
// still over its limit: what holds it cannot be evicted (state of
// operators that do not spill, or of other sources' epochs). The source
// then stops holding until the cache is under its limit again, rather than
// waiting two checkpoints for every batch.
func (r *ReaderSource) overLimit() bool {
	c := r.coord.db.StateCache()
	if c.Used() <= c.Limit() {
		r.futile = false
		return false
	}
	if r.futile || r.dataEpoch == 0 {
		return false
	}
	if r.coord.db.CommittedEpoch() < r.dataEpoch+1 {
		return true
	}
	r.futile = r.held
	return false
}

// holdPoll is how often a held source looks at the cache again.
const holdPoll = 5 * time.Millisecond

// hold waits a little for the state cache, asking for the barriers whose
// commits let the operators evict, and forwards a barrier if one comes.
// The time counts as blocked (backpressure).
func (r *ReaderSource) hold(ctx context.Context) error {
	if !r.held {
		r.held = true
		r.holds++
	}
	r.coord.RequestBarrier()
	prev := r.phase.Swap(PhaseHeld)
	defer r.phase.Store(prev)
	start := time.Now()
	if r.holdTimer == nil {
		r.holdTimer = time.NewTimer(holdPoll)
	} else {
		r.holdTimer.Reset(holdPoll)
	}
	defer func() {
		if r.Stats != nil {
			r.Stats.BlockedNanos.Add(time.Since(start).Nanoseconds())
		}
	}()
	select {
	case b := <-r.barriers:
		r.holdTimer.Stop()
		return r.barrier(ctx, b)
	case <-r.holdTimer.C:
	case <-ctx.Done():
	}
	return nil
}

func (r *ReaderSource) position() []byte {
	if r.seek == nil {
		return nil
	}
	return r.seek.Position()
}

// TableChunk is one acknowledged DML statement's changes with its log
// sequence. A nil Batch is read from the table's log when the source sends
// it: a bulk statement's chunks wait in the queue as sequence numbers, not
// rows, and are decoded one at a time as the dataflow takes them (its
// channels are bounded), so that memory does not grow with the
// statement.
type TableChunk struct {
	Seq   uint64
	Batch *types.Batch
}

// TableSource emits a table's changes: first the logged changes after the
// checkpointed position (recovery), then what DML pushes.
//
// A barrier takes exactly the chunks pushed before it was injected: Push
// runs under Coordinator.Atomic and injection excludes it, so the last
// sequence pushed when a barrier is injected (its cut) divides the chunks
// of one epoch from the next, and a transaction's chunks for several
// tables all fall on the same side.
type TableSource struct {
	sourceBase
	db      *storage.DB
	decode  func([]byte) (*types.Batch, error)
	tableID uint64
	queue   chan TableChunk
	backlog []TableChunk
	pos     uint64
	lastSeq uint64
	replay  int           // len(backlog) at startup (Run empties backlog)
	pushed  atomic.Uint64 // the sequence of the last chunk pushed
	cuts    chan uint64   // each injected barrier's cut, in barrier order
	sent    atomic.Uint64 // the sequence of the last chunk sent
	// KeepLog leaves the deletion of the log up to each barrier's position
	// to the owner (exec/job trims it at commit, holding back what a
	// failed subscriber has not committed yet); positions are recorded
	// for CutOf.
	KeepLog bool
	cutMu   sync.Mutex
	cutOf   map[uint64]uint64 // epoch -> position at its barrier (KeepLog)
}

// CutOf returns (and forgets) the log position at epoch e's barrier;
// false if this source emitted no barrier e (KeepLog only).
func (t *TableSource) CutOf(e uint64) (uint64, bool) {
	t.cutMu.Lock()
	defer t.cutMu.Unlock()
	p, ok := t.cutOf[e]
	delete(t.cutOf, e)
	return p, ok
}

// Sent returns the sequence of the last chunk sent to the subscribers
// (at startup: the checkpointed position).
func (t *TableSource) Sent() uint64 { return t.sent.Load() }

// TableID returns the table's id.
func (t *TableSource) TableID() uint64 { return t.tableID }

// NewTableSource creates the change source of table tableID and loads the
// log entries after its checkpointed position.
func NewTableSource(db *storage.DB, coord *Coordinator, name string, tableID uint64, decode func([]byte) (*types.Batch, error)) (*TableSource, error) {
	t := &TableSource{sourceBase: newSourceBase(name, tableID, coord), db: db, decode: decode, tableID: tableID,
		queue: make(chan TableChunk, 4096), cutOf: map[uint64]uint64{}}
	t.cuts = make(chan uint64, cap(t.barriers))
	t.Stats.Bytes.Store(-1)
	pos, err := db.Get(t.posKey)
	if err != nil {
		return nil, err
	}
	if pos != nil {
		t.pos = decodeSeq(pos)
	}
	prefix := storage.Key(storage.SpaceLog, tableID)
	err = db.Scan(prefix, func(k, v []byte) error {
		seq := decodeSeq(k[len(prefix):])
		if seq <= t.pos {
			return nil
		}
		// Checked here, decoded again when sent: a large replay is not
		// held in memory.
		if _, err := decode(v); err != nil {
			return err
		}
		t.backlog = append(t.backlog, TableChunk{Seq: seq})
		return nil
	})
	t.lastSeq = t.pos
	t.sent.Store(t.pos)
	if n := len(t.backlog); n > 0 {
		t.lastSeq = t.backlog[n-1].Seq
	}
	t.pushed.Store(t.lastSeq)
	t.replay = len(t.backlog)
	return t, err
}

// Backlog returns the number of logged changes after the checkpoint that
// the source replays when it starts.
func (t *TableSource) Backlog() int { return t.replay }

// LastSeq returns the highest log sequence found at startup: the next
// DML statement takes the one after it.
func (t *TableSource) LastSeq() uint64 { return t.lastSeq }

// InjectBarrier implements SourceActor: the barrier's cut is the last
// chunk pushed before it.
func (t *TableSource) InjectBarrier(b *Barrier) {
	t.cuts <- t.pushed.Load()
	t.sourceBase.InjectBarrier(b)
}

// maxTableLag is how many chunks a table's writers may run ahead of its
// dataflow while the operators' state is over the state cache's limit
// (AwaitRoom); a bulk chunk holds up to 4,096 rows.
const maxTableLag = 8

// tableStall is how long AwaitRoom waits for a dataflow that does not
// move (a failed or stopped job) before it lets the writer on.
const tableStall = 2 * time.Second

// AwaitRoom holds a writer of the table, before it pushes its chunks,
// while the operators' state is over the state cache's limit and the
// dataflow is more than maxTableLag chunks behind the table's writes. A
// barrier takes every chunk pushed before it, and the state an epoch adds
// cannot be evicted before the epoch commits: a writer far ahead of the
// dataflow (a bulk load) would make one epoch of all it wrote, and the
// state of all of it resident at once. The writes are durable already;
// only their acknowledgement waits. It returns when ctx ends, or when the
// dataflow has not taken a chunk for tableStall.
func (t *TableSource) AwaitRoom(ctx context.Context) {
	c := t.coord.db.StateCache()
	var timer *time.Timer
	last, since := t.sent.Load(), time.Now()
	for c.Used() > c.Limit() && t.pushed.Load() > t.sent.Load()+maxTableLag {
		if s := t.sent.Load(); s != last {
			last, since = s, time.Now()
		} else if time.Since(since) > tableStall {
			return
		}
		if timer == nil {
			timer = time.NewTimer(holdPoll)
			defer timer.Stop()
		} else {
			timer.Reset(holdPoll)
		}
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
	}
}

// Push hands an acknowledged DML chunk to the source (blocking when the
// queue is full). Chunks are pushed in sequence order, under
// Coordinator.Atomic.
func (t *TableSource) Push(ctx context.Context, c TableChunk) error {
	select {
	case t.queue <- c:
		t.pushed.Store(c.Seq)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run forwards changes and barriers until ctx ends.
func (t *TableSource) Run(ctx context.Context) error {
	for _, c := range t.backlog {
		if err := t.send(ctx, c); err != nil {
			return nil
		}
	}
	t.backlog = nil
	// barrier sends the chunks up to its cut (they are in the queue: they
	// were pushed before it was injected), then the barrier.
	barrier := func(b *Barrier, cut uint64) error {
		for t.pos < cut {
			select {
			case c := <-t.queue:
				if err := t.send(ctx, c); err != nil {
					return err
				}
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if t.KeepLog {
			t.cutMu.Lock()
			t.cutOf[b.Epoch] = t.pos
			t.cutMu.Unlock()
		} else {
			b.W.DeleteRange(LogRange(t.tableID, t.pos))
		}
		return t.emitBarrier(ctx, b, encodeSeq(t.pos), t.pos)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case c := <-t.queue:
			// A chunk pushed after a barrier was injected belongs after it:
			// that barrier is already waiting (injection happens before
			// such a push), so take the waiting barriers whose cut comes
			// before the chunk first.
			sent := false
			for !sent && len(t.barriers) > 0 {
				b, cut := <-t.barriers, <-t.cuts
				if c.Seq <= cut {
					if err := t.send(ctx, c); err != nil {
						return nil
					}
					sent = true
				}
				if err := barrier(b, cut); err != nil {
					return nil
				}
			}
			if !sent {
				if err := t.send(ctx, c); err != nil {
					return nil
				}
			}
		case b := <-t.barriers:
			if err := barrier(b, <-t.cuts); err != nil {
				return nil
			}
		}
	}
}

// lazySendRows is the most rows of a chunk read from the log that one
// message carries: a bulk chunk of 4,096 rows goes in four, so that a
// channel's 16 messages hold a quarter of the rows they would.
const lazySendRows = 1024

func (t *TableSource) send(ctx context.Context, c TableChunk) error {
	lazy := c.Batch == nil
	if lazy {
		v, err := t.db.Get(storage.Key(storage.SpaceLog, t.tableID, encodeSeq(c.Seq)))
		if err == nil && v == nil {
			err = pgerror.Newf(pgcode.Internal, "table %d: log entry %d is missing", t.tableID, c.Seq)
		}
		if err == nil {
			c.Batch, err = t.decode(v)
		}
		if err != nil {
			if t.OnError != nil {
				t.OnError(err)
			}
			return err
		}
	}
	t.pos = c.Seq
	t.sent.Store(c.Seq)
	b := c.Batch
	if !lazy || b.Len() <= lazySendRows {
		return t.sendData(ctx, Msg{Kind: MsgData, Batch: b, Pos: c.Seq})
	}
	// Each part has its own slices: a consumed part's rows can go.
	for i := 0; i < b.Len(); i += lazySendRows {
		j := min(i+lazySendRows, b.Len())
		part := &types.Batch{Rows: slices.Clone(b.Rows[i:j]), Diffs: slices.Clone(b.Diffs[i:j])}
		clear(b.Rows[i:j])
		if err := t.sendData(ctx, Msg{Kind: MsgData, Batch: part, Pos: c.Seq}); err != nil {
			return err
		}
	}
	return nil
}

// LogRange returns the keys of table id's log entries up to sequence upto.
func LogRange(id, upto uint64) (lo, hi []byte) {
	return storage.Key(storage.SpaceLog, id), storage.Key(storage.SpaceLog, id, encodeSeq(upto+1))
}

func encodeSeq(s uint64) []byte {
	return []byte{byte(s >> 56), byte(s >> 48), byte(s >> 40), byte(s >> 32), byte(s >> 24), byte(s >> 16), byte(s >> 8), byte(s)}
}

func decodeSeq(b []byte) uint64 {
	if len(b) < 8 {
		return 0
	}
	var s uint64
	for _, x := range b[:8] {
		s = s<<8 | uint64(x)
	}
	return s
}

// EncodeSeq returns the 8-byte big-endian form of a log sequence.
func EncodeSeq(s uint64) []byte { return encodeSeq(s) }

// Close closes the reader of a source that never ran.
func (r *ReaderSource) Close() error { return r.src.Close() }
