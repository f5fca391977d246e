package kafka

// The EXACTLY_ONCE kafka sink: one Kafka transaction per epoch with
// franz-go's transactional producer. Every use of franz-go (kgo, kmsg,
// kerr) in the sink is in this file; kafka-go cannot put a producer id
// and epoch on a record batch.
//
// Write(epoch N) begins a transaction, produces the epoch's records and a
// progress record {"sink":ID,"epoch":N} keyed by the transactional.id to
// partition 0 of progress.topic, flushes and commits. Kafka makes the
// records and the progress record visible to read_committed readers
// together or not at all. Recovery: a new client's InitProducerID with the
// same transactional.id fences every older producer with it and aborts a
// transaction one of them left open; the coordinator answers it only
// after a commit in progress has completed (CONCURRENT_TRANSACTIONS,
// retried by kgo). Only then is the progress topic read (read_committed,
// backwards from its end), so the last committed epoch it shows is final,
// and Write skips every epoch up to it.
//
// Failures. Any error aborts the transaction (best effort, bounded),
// closes the client and forgets the last epoch, so that the next Write,
// which the runtime makes with the same epoch, starts from a fresh
// producer and a fresh read of the progress topic (a commit whose answer
// was lost may have been applied). Fencing is the exception: a producer
// fenced by a newer one with the same transactional.id before its
// transaction could time out is a zombie; it stops for good instead of
// re-initialising, which would fence the live one in turn.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

const (
	// sinkAbortTimeout bounds the abort after a failed Write.
	sinkAbortTimeout = 2 * time.Second
	// sinkMaxStall is how long a transaction may go without Kafka
	// acknowledging anything (at most half the transaction timeout)
	// before Write gives up, so that it fails in about this time when
	// Kafka is down rather than at the end of the transaction timeout,
	// while a large epoch that makes progress may take longer. kgo's
	// record timeout cannot do it: an idempotent producer does not fail a
	// record whose request may have been sent.
	sinkMaxStall = 15 * time.Second
	// sinkProgressWindow is how many offsets at the end of the progress
	// topic are read first; the window grows until a record of this sink
	// is found or the start of the log is reached.
	sinkProgressWindow = 64
	// sinkMetadataBackoff is the pause between metadata requests while a
	// new topic has no leader yet.
	sinkMetadataBackoff = 50 * time.Millisecond
)

// sinkTestHookBeforeCommit, when a test sets it, runs after the records
// of an epoch are flushed and before the transaction commits.
var sinkTestHookBeforeCommit func(epoch uint64)

// sinkTxn is the transactional Kafka sink. It implements connector.Sink
// and connector.Progress; its methods may be called from any goroutine,
// one at a time (mu serialises them).
type sinkTxn struct {
	o           *sinkOptions
	enc         sinkEncoder
	progressKey []byte
	opts        []kgo.Opt
	stall       time.Duration // see sinkMaxStall

	mu struct {
		sync.Mutex
		cl          *kgo.Client // nil until needed and after a failure
		topicsReady bool
		// last is the highest epoch known committed, valid if lastKnown.
		last      uint64
		lastKnown bool
		fenced    error // set once this process is fenced: every call returns it
		closed    bool
		// buf and recs are reused across Writes: kgo holds no reference
		// to them once an epoch has committed.
		buf  []byte
		recs []kgo.Record
	}
}

var (
	_ connector.Sink     = (*sinkTxn)(nil)
	_ connector.Progress = (*sinkTxn)(nil)
)

func newSinkTxn(o *sinkOptions) *sinkTxn {
	s := &sinkTxn{o: o, enc: newSinkEncoder(o), progressKey: []byte(o.txnID)}
	s.stall = max(time.Second /* kgo's minimum record timeout */, min(sinkMaxStall, o.txnTimeout/2))
	s.opts = []kgo.Opt{
		kgo.Dialer(o.dial),
		kgo.SeedBrokers(o.brokers...),
		kgo.TransactionalID(o.txnID),
		kgo.TransactionTimeout(o.txnTimeout),
		// A transactional producer is idempotent: acks=all is required
		// and kgo caps the produce requests in flight per broker at what
		// keeps sequence numbers ordered (5), so neither is tunable here.
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(s.stall),
		kgo.RetryTimeout(s.stall), // metadata, InitProducerID, EndTxn, …
		kgo.RecordPartitioner(sinkPartitioner{progress: o.progressTopic, def: kgo.UniformBytesPartitioner(64<<10, true, true, nil)}),
		kgo.DialTimeout(5 * time.Second),
	}
	s.opts = append(s.opts, o.sec.kgoOpts()...)
	if os.Getenv("SLUICE_KGO_DEBUG") != "" { // the client's own log, for diagnosing a broker
		s.opts = append(s.opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelDebug, nil)))
	}
	return s
}

// sinkPartitioner sends progress records to partition 0 (the one
// LastEpoch reads) and partitions the sink's records like Kafka's default
// partitioner (murmur2 of the key; unkeyed records in sticky batches).
type sinkPartitioner struct {
	progress string
	def      kgo.Partitioner
}

func (p sinkPartitioner) ForTopic(t string) kgo.TopicPartitioner {
	if t == p.progress {
		return kgo.ManualPartitioner().ForTopic(t)
	}
	return p.def.ForTopic(t)
}

// LastEpoch implements connector.Progress: the highest epoch whose
// transaction committed, 0 if none. It fences older producers first.
func (s *sinkTxn) LastEpoch(ctx context.Context) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableLocked(); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.txnTimeout)
	defer cancel()
	if err := s.readyLocked(ctx); err != nil {
		s.resetLocked()
		return 0, s.unreachable(err)
	}
	return s.mu.last, nil
}

// Write implements connector.Sink.
func (s *sinkTxn) Write(ctx context.Context, epoch uint64, changes []connector.Change) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableLocked(); err != nil {
		return err
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, s.o.txnTimeout)
	defer cancel()
	if err := s.readyLocked(ctx); err != nil {
		s.resetLocked()
		return s.unreachable(err)
	}
	if epoch <= s.mu.last {
		return nil // committed before: by this process, or by one that crashed
	}

	buf, recs := s.mu.buf[:0], s.mu.recs[:0]
	for _, c := range changes {
		var key, value []byte
		var err error
		if buf, key, value, err = s.enc.record(buf, epoch, c); err != nil {
			return err
		}
		recs = append(recs, kgo.Record{Topic: s.o.topic, Key: key, Value: value})
	}
	start := len(buf)
	buf = append(buf, `{"sink":`...)
	buf = strconv.AppendUint(buf, s.o.id, 10)
	buf = append(buf, `,"epoch":`...)
	buf = strconv.AppendUint(buf, epoch, 10)
	buf = append(buf, '}')
	recs = append(recs, kgo.Record{Topic: s.o.progressTopic, Partition: 0, Key: s.progressKey, Value: buf[start:]})

	if begun, err := s.transact(ctx, s.mu.cl, epoch, recs); err != nil {
		return s.failLocked(parent, epoch, begun, err)
	}
	s.mu.last = epoch
	s.mu.buf, s.mu.recs = buf[:0], recs[:0]
	return nil
}

// sinkErrStalled is the cause of a transaction abandoned by the watchdog.
var sinkErrStalled = errors.New("Kafka acknowledged nothing")

// transact writes recs in one transaction and commits it. begun is when
// the transaction began (zero if it did not). A watchdog cancels it when
// Kafka acknowledges nothing for s.stall.
func (s *sinkTxn) transact(ctx context.Context, cl *kgo.Client, epoch uint64, recs []kgo.Record) (begun time.Time, err error) {
	if err := cl.BeginTransaction(); err != nil {
		return time.Time{}, err
	}
	begun = time.Now()
	ctx, cancel := context.WithCancelCause(ctx)
	var st sinkProduceState
	st.lastAck.Store(begun.UnixNano())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(s.stall / 8)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-tick.C:
				if now.Sub(time.Unix(0, st.lastAck.Load())) > s.stall {
					cancel(fmt.Errorf("%w for %s", sinkErrStalled, s.stall))
					return
				}
			}
		}
	}()
	defer func() {
		close(stop)
		wg.Wait()
		if cause := context.Cause(ctx); err != nil && errors.Is(cause, sinkErrStalled) {
			err = fmt.Errorf("%w (%w)", cause, err)
		}
		cancel(nil)
	}()

	for i := range recs {
		cl.Produce(ctx, &recs[i], st.promise)
	}
	flushErr := cl.Flush(ctx)
	if err = st.get(); err == nil { // the cause, when Flush only reports the context
		err = flushErr
	}
	if err != nil {
		return begun, err
	}
	if sinkTestHookBeforeCommit != nil {
		sinkTestHookBeforeCommit(epoch)
	}
	connector.Crashpoint("sink-before-commit")
	st.lastAck.Store(time.Now().UnixNano()) // the commit gets its own s.stall
	return begun, cl.EndTransaction(ctx, kgo.TryCommit)
}

// Close implements connector.Sink.
func (s *sinkTxn) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.closed = true
	s.resetLocked()
	return nil
}

func (s *sinkTxn) usableLocked() error {
	if s.mu.fenced != nil {
		return s.mu.fenced
	}
	if s.mu.closed {
		return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "kafka sink %s is closed", s.o.name)
	}
	return nil
}

func (s *sinkTxn) unreachable(err error) error {
	return sinkWrap(s.o, err, "cannot prepare the transactional producer (Kafka at %s)", strings.Join(s.o.brokers, ","))
}

// readyLocked makes sure there is a client whose producer id is
// initialised (fencing older producers), that the topics exist and that
// the last committed epoch is known.
func (s *sinkTxn) readyLocked(ctx context.Context) error {
	if s.mu.cl == nil {
		cl, err := kgo.NewClient(s.opts...)
		if err != nil {
			return err
		}
		s.mu.cl = cl
		s.mu.lastKnown = false
	}
	cl := s.mu.cl
	if !s.mu.topicsReady {
		if err := s.createTopics(ctx, cl); err != nil {
			return err
		}
		s.mu.topicsReady = true
	}
	if s.mu.lastKnown {
		return nil
	}
	// Fence before reading: see the comment at the top of the file.
	if _, _, err := cl.ProducerID(ctx); err != nil {
		return fmt.Errorf("initialising transactional.id %q: %w", s.o.txnID, err)
	}
	last, err := s.readProgress(ctx, cl)
	if err != nil {
		return err
	}
	s.mu.last, s.mu.lastKnown = last, true
	return nil
}

// resetLocked drops the client; the next call makes a new one.
func (s *sinkTxn) resetLocked() {
	if s.mu.cl != nil {
		s.mu.cl.Close()
		s.mu.cl = nil
	}
	s.mu.lastKnown = false
	s.mu.buf, s.mu.recs = nil, nil
}

// failLocked cleans up after a failed transaction and returns the error
// Write reports. begun is when the transaction began (zero if it did not).
func (s *sinkTxn) failLocked(parent context.Context, epoch uint64, begun time.Time, err error) error {
	elapsed := time.Since(begun)
	timedOut := !begun.IsZero() && elapsed >= s.o.txnTimeout
	if !timedOut && sinkIsFenced(err) {
		s.resetLocked()
		s.mu.fenced = pgerror.Wrap(err, pgcode.ObjectNotInPrerequisiteState,
			"fenced: another Sluice process took over sink %s (transactional.id %q); this process no longer writes to Kafka", s.o.name, s.o.txnID)
		return s.mu.fenced
	}
	// Abort now so that read_committed readers are not held up until the
	// transaction times out; the next client's InitProducerID would
	// abort it anyway. Not worth trying when Kafka is not answering.
	if cl := s.mu.cl; cl != nil && !begun.IsZero() && !errors.Is(err, sinkErrStalled) {
		actx, cancel := context.WithTimeout(context.WithoutCancel(parent), sinkAbortTimeout)
		if cl.AbortBufferedRecords(actx) == nil {
			_ = cl.EndTransaction(actx, kgo.TryAbort)
		}
		cancel()
	}
	s.resetLocked()
	if perr := parent.Err(); perr != nil {
		return sinkWrap(s.o, perr, "writing epoch %d stopped", epoch)
	}
	if timedOut {
		return pgerror.Wrap(err, pgcode.ConnectionException,
			"kafka sink %s: Kafka transaction for epoch %d TIMED OUT after %s (transaction.timeout.ms = %d) and was aborted; the epoch will be written again",
			s.o.name, epoch, elapsed.Round(time.Millisecond), s.o.txnTimeout.Milliseconds()).
			WithHint("raise transaction.timeout.ms (up to the broker's transaction.max.timeout.ms) if Kafka is this slow or epochs this large")
	}
	return sinkWrap(s.o, err, "writing epoch %d failed; it will be written again", epoch)
}

// sinkIsFenced reports whether err says a newer producer took over the
// transactional.id. A transaction the broker aborted on timeout looks the
// same; failLocked tells them apart by time. INVALID_TXN_STATE is what a
// KIP-890 coordinator (and kfake) may answer a zombie's commit when the
// new producer's fencing bumped the epoch by exactly one: the commit looks
// like a retry of an ended transaction.
func sinkIsFenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.InvalidTxnState)
}

// sinkProduceState keeps the first error of the produce promises and the
// time of the last acknowledgement.
type sinkProduceState struct {
	lastAck atomic.Int64 // unix nanoseconds
	mu      sync.Mutex
	err     error
}

func (f *sinkProduceState) promise(_ *kgo.Record, err error) {
	if err == nil {
		f.lastAck.Store(time.Now().UnixNano())
		return
	}
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

func (f *sinkProduceState) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// createTopics creates the sink's topic and the progress topic if they
// are missing (broker defaults for partitions and replication; the
// progress topic has one partition and is compacted, keeping the last
// record per transactional.id).
func (s *sinkTxn) createTopics(ctx context.Context, cl *kgo.Client) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	add := func(topic string, partitions int32, compact bool) {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic = topic
		t.NumPartitions = partitions
		t.ReplicationFactor = -1
		if compact {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name = "cleanup.policy"
			c.Value = kmsg.StringPtr("compact")
			t.Configs = append(t.Configs, c)
		}
		req.Topics = append(req.Topics, t)
	}
	add(s.o.topic, -1, s.o.format == sinkFormatUpsert)
	add(s.o.progressTopic, 1, true)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("creating topics: %w", err)
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			// Without the right to create it, the topic may still exist.
			if _, _, merr := sinkLeader(ctx, cl, t.Topic, 0); merr != nil {
				return fmt.Errorf("creating topic %s: %w", t.Topic, err)
			}
		}
	}
	return nil
}

// sinkLeader returns the leader of a partition and its topic's id,
// waiting while a new topic has no leader yet.
func sinkLeader(ctx context.Context, cl *kgo.Client, topic string, partition int32) (int32, [16]byte, error) {
	for {
		req := kmsg.NewPtrMetadataRequest()
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, t)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return 0, [16]byte{}, err
		}
		var perr error
		if len(resp.Topics) != 1 {
			perr = kerr.UnknownTopicOrPartition
		} else if rt := resp.Topics[0]; rt.ErrorCode != 0 {
			perr = kerr.ErrorForCode(rt.ErrorCode)
		} else {
			perr = kerr.UnknownTopicOrPartition
			for _, p := range rt.Partitions {
				if p.Partition != partition {
					continue
				}
				if perr = kerr.ErrorForCode(p.ErrorCode); perr == nil && p.Leader >= 0 {
					return p.Leader, rt.TopicID, nil
				}
				if perr == nil {
					perr = kerr.LeaderNotAvailable
				}
			}
		}
		if !kerr.IsRetriable(perr) {
			return 0, [16]byte{}, fmt.Errorf("topic %s partition %d: %w", topic, partition, perr)
		}
		select {
		case <-ctx.Done():
			return 0, [16]byte{}, fmt.Errorf("topic %s partition %d: %w (%w)", topic, partition, perr, ctx.Err())
		case <-time.After(sinkMetadataBackoff):
		}
	}
}

// readProgress returns the highest epoch in a committed progress record
// of this sink (0 if none). It reads read_committed windows backwards
// from the end of partition 0: the newest record with our key holds the
// newest epoch, since epochs only grow.
func (s *sinkTxn) readProgress(ctx context.Context, cl *kgo.Client) (uint64, error) {
	topic := s.o.progressTopic
	leader, topicID, err := sinkLeader(ctx, cl, topic, 0)
	if err != nil {
		return 0, err
	}
	br := cl.Broker(int(leader))
	// Another sink sharing the progress topic may have a transaction open
	// below our last record, holding the last stable offset (the end as
	// read_committed readers see it) back. Wait until it reaches the high
	// watermark seen now, which is past every record of ours (our own
	// transaction was fenced and aborted before this call).
	end, err := sinkListOffset(ctx, br, topic, -1 /* latest */, false /* committed */)
	if err != nil {
		return 0, err
	}
	for {
		lso, err := sinkListOffset(ctx, br, topic, -1 /* latest */, true /* committed */)
		if err != nil {
			return 0, err
		}
		if lso >= end {
			break
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("waiting for the transactions open in %s to end: %w", topic, ctx.Err())
		case <-time.After(sinkMetadataBackoff):
		}
	}
	logStart, err := sinkListOffset(ctx, br, topic, -2 /* earliest */, false /* committed */)
	if err != nil {
		return 0, err
	}
	hi := end
	for window := int64(sinkProgressWindow); hi > logStart; window *= 8 {
		lo := max(logStart, hi-window)
		epoch, found, err := s.scanProgress(ctx, br, topicID, lo, hi)
		if err != nil || found {
			return epoch, err
		}
		hi = lo
	}
	return 0, nil
}

// sinkListOffset returns the earliest offset (ts -2) or the end (ts -1:
// the high watermark, or the last stable offset when committed) of
// partition 0 of topic.
func sinkListOffset(ctx context.Context, br *kgo.Broker, topic string, ts int64, committed bool) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	if committed {
		req.IsolationLevel = 1
	}
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition = 0
	p.Timestamp = ts
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	kresp, err := br.Request(ctx, req)
	if err != nil {
		return 0, err
	}
	resp := kresp.(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("list offsets of %s: malformed response", topic)
	}
	rp := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		return 0, fmt.Errorf("list offsets of %s: %w", topic, err)
	}
	return rp.Offset, nil
}

// scanProgress reads the committed records of partition 0 in [lo, hi)
// and returns the highest epoch among those keyed by our transactional.id.
func (s *sinkTxn) scanProgress(ctx context.Context, br *kgo.Broker, topicID [16]byte, lo, hi int64) (best uint64, found bool, _ error) {
	topic := s.o.progressTopic
	for off := lo; off < hi; {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis = 100
		req.MinBytes = 1
		req.MaxBytes = 4 << 20
		req.IsolationLevel = 1 // read_committed
		t := kmsg.NewFetchRequestTopic()
		t.Topic, t.TopicID = topic, topicID
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = 0
		p.FetchOffset = off
		p.PartitionMaxBytes = 4 << 20
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		kresp, err := br.Request(ctx, req)
		if err != nil {
			return 0, false, fmt.Errorf("reading %s: %w", topic, err)
		}
		resp := kresp.(*kmsg.FetchResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return 0, false, fmt.Errorf("reading %s: %w", topic, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return 0, false, fmt.Errorf("reading %s: malformed fetch response", topic)
		}
		fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
			Offset:         off,
			IsolationLevel: kgo.ReadCommitted(),
			Topic:          topic,
			Partition:      0,
		}, &resp.Topics[0].Partitions[0], kgo.DefaultDecompressor(), nil)
		if fp.Err != nil {
			return 0, false, fmt.Errorf("reading %s at offset %d: %w", topic, off, fp.Err)
		}
		for _, r := range fp.Records {
			if r.Offset >= hi || string(r.Key) != s.o.txnID {
				continue
			}
			var v struct {
				Epoch uint64 `json:"epoch"`
			}
			if err := json.Unmarshal(r.Value, &v); err != nil {
				return 0, false, pgerror.New(pgcode.DataCorrupted, "kafka sink %s: bad progress record at %s offset %d: %v", s.o.name, topic, r.Offset, err)
			}
			if !found || v.Epoch > best {
				best, found = v.Epoch, true
			}
		}
		if next <= off {
			break // nothing more below the last stable offset
		}
		off = next
	}
	return best, found, nil
}
