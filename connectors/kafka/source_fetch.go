package kafka

// The fetching side of the kafka source: a client over franz-go's kgo
// and kmsg and the goroutine that fetches every partition, drops
// what read_committed must not see, decodes records into rows and hands
// them to the reader in chunks.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/connectors/internal/decode"
	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

const (
	// srcMetadataEvery is how often the fetcher looks for new partitions
	// (the transport's cached metadata is refreshed as often).
	srcMetadataEvery = 2 * time.Second
	// srcFetchWait is the longest a broker holds a fetch without data.
	srcFetchWait = 100 * time.Millisecond
	// srcRequestTimeout bounds one request to a broker that stalls.
	srcRequestTimeout = 10 * time.Second
	// srcPartitionBytes and srcFetchBytes bound a fetch (a larger first
	// batch is still returned whole by the broker). A response is read
	// in place (its records alias it) and lives until its last record is
	// decoded, so the chunks buffered for Read hold at most a few.
	srcPartitionBytes = 1 << 20
	srcFetchBytes     = 4 << 20
	// srcChunkBuffer is how many fetched chunks (one per partition and
	// fetch) may wait for Read: the bound on buffered memory.
	srcChunkBuffer = 16
	// Retry backoff while brokers are unreachable.
	srcMinBackoff = 50 * time.Millisecond
	srcMaxBackoff = 2 * time.Second
)

var errSrcNoTopic = errors.New("topic does not exist")

// srcClient talks to the cluster through a kgo client: metadata and
// offsets through its routing, fetches straight to a partition's leader
// as raw requests whose record batches the fetcher reads in place.
type srcClient struct {
	topic  string
	cl     *kgo.Client
	err    error                  // the client's options were refused
	status atomic.Pointer[string] // the last request's error, nil after a success
	sec    *security
}

func newSrcClient(c *srcConfig) *srcClient {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.brokers...),
		kgo.ClientID("sluice"),
		kgo.Dialer(policyDialer(c.policy, c.sec, 2*time.Second)),
		kgo.RetryTimeout(srcRequestTimeout),
		kgo.MetadataMinAge(time.Second),
	}
	opts = append(opts, c.sec.kgoOpts()...)
	cl, err := kgo.NewClient(opts...)
	return &srcClient{topic: c.topic, cl: cl, err: err, sec: c.sec}
}

// close closes the client's connections.
func (c *srcClient) close() {
	if c.cl != nil {
		c.cl.Close()
	}
}

// request sends req: to broker when it is not negative, otherwise where
// the client routes it.
func (c *srcClient) request(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	if c.err != nil {
		return nil, c.err
	}
	ctx, cancel := context.WithTimeout(ctx, srcRequestTimeout)
	defer cancel()
	var m kmsg.Response
	var err error
	if broker >= 0 {
		m, err = c.cl.Broker(int(broker)).Request(ctx, req)
	} else {
		m, err = c.cl.Request(ctx, req)
	}
	switch {
	case err == nil:
		c.status.Store(nil)
	case ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded):
		// A failure the fetcher retries (a broker down, credentials or a
		// certificate refused): SHOW SOURCES shows it until a request
		// succeeds.
		msg := "cannot reach the kafka cluster" + c.sec.describe() + ": " + err.Error()
		c.status.Store(&msg)
	}
	return m, err
}

// Status implements connector.Statuser: the last failed request's error
// while requests fail.
func (r *srcReader) Status() string {
	if p := r.client.status.Load(); p != nil {
		return *p
	}
	return ""
}

// srcLeaders is the topic's partitions, each with its leader (-1 when
// it has none right now), and the topic's ID (fetch v13 and later name
// topics by ID).
type srcLeaders struct {
	leaders map[int32]int32
	id      [16]byte
}

// metadata returns the topic's partitions and leaders, or errSrcNoTopic.
func (c *srcClient) metadata(ctx context.Context) (srcLeaders, error) {
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(c.topic)
	req.Topics = append(req.Topics, t)
	req.AllowAutoTopicCreation = false
	m, err := c.request(ctx, -1, req)
	if err != nil {
		return srcLeaders{}, err
	}
	for _, t := range m.(*kmsg.MetadataResponse).Topics {
		if t.Topic == nil || *t.Topic != c.topic {
			continue
		}
		switch err := kerr.ErrorForCode(t.ErrorCode); {
		case err == nil:
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			return srcLeaders{}, errSrcNoTopic
		default:
			return srcLeaders{}, err
		}
		l := srcLeaders{leaders: make(map[int32]int32, len(t.Partitions)), id: t.TopicID}
		for _, p := range t.Partitions {
			l.leaders[p.Partition] = p.Leader
			if p.ErrorCode != 0 {
				l.leaders[p.Partition] = -1
			}
		}
		return l, nil
	}
	return srcLeaders{}, errSrcNoTopic
}

// partitions returns the partitions of the topic.
func (c *srcClient) partitions(ctx context.Context) ([]int32, error) {
	l, err := c.metadata(ctx)
	if err != nil {
		return nil, err
	}
	parts := make([]int32, 0, len(l.leaders))
	for p := range l.leaders {
		parts = append(parts, p)
	}
	return parts, nil
}

// listOffsets asks for the offset of every partition in parts at ts
// (srcEarliest, srcLatest or a time in milliseconds).
func (c *srcClient) listOffsets(ctx context.Context, parts []int32, ts int64, readCommitted bool) (map[int32]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	if readCommitted {
		req.IsolationLevel = 1
	}
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = c.topic
	for _, p := range parts {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = p, -1, ts
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	m, err := c.request(ctx, -1, req)
	if err != nil {
		return nil, err
	}
	out := make(map[int32]int64, len(parts))
	for _, t := range m.(*kmsg.ListOffsetsResponse).Topics {
		if t.Topic != c.topic {
			continue
		}
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("list offsets of partition %d: %w", p.Partition, err)
			}
			out[p.Partition] = p.Offset
		}
	}
	for _, p := range parts {
		if _, ok := out[p]; !ok {
			return nil, fmt.Errorf("list offsets: no answer for partition %d", p)
		}
	}
	return out, nil
}

// resolve returns offs with every unresolved start (srcEarliest,
// srcLatest, srcTimestamp) replaced by the offset the broker gives. A
// timestamp after the last record resolves to the end of the partition.
func (c *srcClient) resolve(ctx context.Context, cfg *srcConfig, offs map[int32]int64) (map[int32]int64, error) {
	out := make(map[int32]int64, len(offs))
	byMode := map[int64][]int32{}
	for p, o := range offs {
		if o >= 0 {
			out[p] = o
		} else {
			byMode[o] = append(byMode[o], p)
		}
	}
	for mode, parts := range byMode {
		ts := mode
		if mode == srcTimestamp {
			ts = cfg.startTS
		}
		got, err := c.listOffsets(ctx, parts, ts, cfg.readCommitted)
		if err != nil {
			return nil, err
		}
		var late []int32
		for p, o := range got {
			if o < 0 {
				late = append(late, p)
				continue
			}
			out[p] = o
		}
		if len(late) > 0 {
			got, err := c.listOffsets(ctx, late, srcLatest, cfg.readCommitted)
			if err != nil {
				return nil, err
			}
			for p, o := range got {
				out[p] = o
			}
		}
	}
	return out, nil
}

// fetch sends one Fetch request for parts to their leader.
func (c *srcClient) fetch(ctx context.Context, leader int32, id [16]byte, parts []kmsg.FetchRequestTopicPartition, readCommitted bool) (*kmsg.FetchResponse, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(srcFetchWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = srcFetchBytes
	req.SessionID, req.SessionEpoch = 0, -1 // no fetch session: every request is a full fetch
	if readCommitted {
		req.IsolationLevel = 1
	}
	t := kmsg.NewFetchRequestTopic()
	t.Topic, t.TopicID, t.Partitions = c.topic, id, parts
	req.Topics = append(req.Topics, t)
	m, err := c.request(ctx, leader, req)
	if err != nil {
		return nil, err
	}
	res := m.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
		return nil, err
	}
	return res, nil
}

// srcChunk is what one fetch of one partition gave: its records in
// offset order, as rows or bad records, and the offset after them.
type srcChunk struct {
	part  int32
	items []srcItem
	rows  []types.Row
	diffs []int64
	// end is the next offset to read after this chunk; it passes control
	// records and aborted transactions that produced no item.
	end int64
	err error // the source cannot go on
	// hwm is the partition's high watermark in the fetch response; bytes
	// the key and value bytes of its records (metrics).
	hwm, bytes int64
	// raw holds the records until a decoder turns them into items; they
	// alias the fetch response.
	raw []srcRecord
}

// srcItem is one record: the rows it gave (rows[first:first+nrows]), or
// the bad record it was.
type srcItem struct {
	off   int64
	first int32
	nrows int8
	bad   *connector.DeadLetter
}

// srcFetcher is the goroutine that fetches. It owns everything below; the
// reader sees only the chunks it sends.
type srcFetcher struct {
	cfg     *srcConfig
	client  *srcClient
	offsets map[int32]int64 // next offset to fetch, or an unresolved start
	out     chan<- *srcChunk
	cancel  context.CancelFunc
	done    chan struct{}

	// jobs feeds the decoding goroutines; order holds the jobs in fetch
	// order for the goroutine that hands them to the reader.
	jobs  chan *srcJob
	order chan *srcJob
	dec   batchDecompressor
	// rawHint is the most records one partition's response held: the
	// capacity of the next chunk's raw records, so that a large response
	// does not grow them by copying (a fetch is up to tens of MB).
	rawHint int
}

// srcJob is a chunk on its way through a decoder; done is closed when
// its rows are ready.
type srcJob struct {
	c    *srcChunk
	done chan struct{}
}

// srcDecoder is one decoding goroutine's state.
type srcDecoder struct {
	cfg     *srcConfig
	dec     *decode.Decoder // the value
	keyDec  *decode.Decoder // the key columns of an upsert key
	keyAvro *decode.Decoder // likewise, a Confluent-framed Avro key (ENCODE AVRO) or Protobuf key (key.message)
	keyCols []int           // the key columns read from the record key (not pseudo-columns)
	keyRow  types.Row
	alloc   types.RowAlloc
}

func newSrcDecoder(cfg *srcConfig) *srcDecoder {
	d := &srcDecoder{cfg: cfg, dec: decode.New(cfg.cols, cfg.enc, cfg.skip)}
	if cfg.registry != nil {
		d.dec.SetAvro(cfg.registry)
		if cfg.enc == decode.PROTOBUF {
			d.dec.SetRecords(cfg.registry.NewProtoReader(cfg.protoMessage))
		}
	}
	if cfg.format == srcUpsert {
		skip := make([]bool, len(cfg.cols))
		for i := range skip {
			skip[i] = true
		}
		for _, k := range cfg.key {
			if !cfg.skip[k] {
				skip[k] = false
				d.keyCols = append(d.keyCols, k)
			}
		}
		d.keyDec = decode.New(cfg.cols, decode.JSON, skip)
		d.keyRow = make(types.Row, len(cfg.cols))
		if cfg.enc == decode.AVRO {
			// ENCODE AVRO: a Confluent-framed key is an Avro record of
			// the key columns (<topic>-key); others are read as JSON or text.
			d.keyAvro = decode.New(cfg.cols, decode.AVRO, skip)
			d.keyAvro.SetAvro(cfg.registry)
		}
		if cfg.enc == decode.PROTOBUF && cfg.keyMessage != "" {
			// key.message: a Confluent-framed key is that message, its
			// fields the key columns; others are read as JSON or text.
			d.keyAvro = decode.New(cfg.cols, decode.PROTOBUF, skip)
			d.keyAvro.SetRecords(cfg.registry.NewProtoReader(cfg.keyMessage))
		}
	}
	return d
}

// srcDecoders is how many goroutines decode a source's records: JSON
// decoding is most of a source's work, and one fetch's records are split
// among them (srcSplitRecords each) while the reader still sees them in
// offset order.
var srcDecoders = min(runtime.GOMAXPROCS(0), 4)

// srcSplitRecords is the most records one decoding job takes.
const srcSplitRecords = 512

// srcBlockBytes is the size of the blocks that hold fetched record bytes.
const srcBlockBytes = 64 << 10

func startSrcFetcher(cfg *srcConfig, client *srcClient, from map[int32]int64, out chan<- *srcChunk) *srcFetcher {
	ctx, cancel := context.WithCancel(context.Background())
	f := &srcFetcher{
		cfg: cfg, client: client, offsets: make(map[int32]int64, len(from)), out: out,
		cancel: cancel, done: make(chan struct{}),
		jobs: make(chan *srcJob), order: make(chan *srcJob, srcChunkBuffer),
	}
	for p, o := range from {
		f.offsets[p] = o
	}
	var wg sync.WaitGroup
	wg.Add(2 + srcDecoders)
	go func() {
		defer wg.Done()
		defer close(f.jobs)
		defer f.dec.close()
		f.run(ctx)
	}()
	for range srcDecoders {
		go func() {
			defer wg.Done()
			d := newSrcDecoder(cfg)
			for j := range f.jobs {
				if ctx.Err() == nil {
					d.decodeChunk(j.c)
				}
				close(j.done)
			}
		}()
	}
	go func() {
		defer wg.Done()
		f.deliver(ctx)
	}()
	go func() {
		wg.Wait()
		close(f.done)
	}()
	return f
}

// deliver hands the decoded chunks to the reader in fetch order.
func (f *srcFetcher) deliver(ctx context.Context) {
	for {
		var j *srcJob
		select {
		case j = <-f.order:
		case <-ctx.Done():
			return
		}
		select {
		case <-j.done:
		case <-ctx.Done():
			return
		}
		select {
		case f.out <- j.c:
		case <-ctx.Done():
			return
		}
	}
}

// stop ends the goroutines and waits for them.
func (f *srcFetcher) stop() {
	f.cancel()
	<-f.done
}

// send queues c for the reader, split into decoding jobs of at most
// srcSplitRecords records; false when the fetcher is stopping.
func (f *srcFetcher) send(ctx context.Context, c *srcChunk) bool {
	for len(c.raw) > srcSplitRecords {
		head := &srcChunk{part: c.part, raw: c.raw[:srcSplitRecords], hwm: c.hwm}
		head.end = head.raw[len(head.raw)-1].off + 1
		for _, r := range head.raw {
			head.bytes += int64(len(r.key) + len(r.value))
		}
		c.bytes -= head.bytes
		c.raw = c.raw[srcSplitRecords:]
		if !f.queue(ctx, head) {
			return false
		}
	}
	return f.queue(ctx, c)
}

func (f *srcFetcher) queue(ctx context.Context, c *srcChunk) bool {
	j := &srcJob{c: c, done: make(chan struct{})}
	select {
	case f.order <- j:
	case <-ctx.Done():
		return false
	}
	if len(c.raw) == 0 {
		close(j.done)
		return true
	}
	select {
	case f.jobs <- j:
		return true
	case <-ctx.Done():
		close(j.done)
		return false
	}
}

// sleep waits for the backoff (doubling it), false when stopping.
func sleep(ctx context.Context, backoff *time.Duration) bool {
	t := time.NewTimer(*backoff)
	defer t.Stop()
	if *backoff *= 2; *backoff > srcMaxBackoff {
		*backoff = srcMaxBackoff
	}
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (f *srcFetcher) run(ctx context.Context) {
	backoff := srcMinBackoff
	var meta srcLeaders
	var refreshed time.Time
	var ahead *srcAhead // the next fetch, sent early
	defer func() {
		if ahead != nil {
			<-ahead.done // the goroutine ends with ctx
		}
	}()
	for ctx.Err() == nil {
		if meta.leaders == nil || time.Since(refreshed) >= srcMetadataEvery {
			l, err := f.client.metadata(ctx)
			if err != nil {
				// A broker that is down, or a topic that is gone for now:
				// keep trying, a transient outage must not fail the job.
				if !sleep(ctx, &backoff) {
					return
				}
				continue
			}
			start := srcEarliest // partitions added while the source runs
			if len(f.offsets) == 0 {
				start = f.cfg.startup // the source knew no partition yet
			}
			for p := range l.leaders {
				if _, ok := f.offsets[p]; !ok {
					f.offsets[p] = start
				}
			}
			meta, refreshed = l, time.Now()
		}
		if !f.resolve(ctx, &backoff) {
			continue
		}
		groups := f.groups(meta)
		if len(groups) == 0 {
			meta.leaders = nil // no leader known: ask again after a pause
			if !sleep(ctx, &backoff) {
				return
			}
			continue
		}
		var responses []srcFetchResult
		if ahead != nil && sameGroups(ahead.groups, groups) {
			responses = <-ahead.done
		} else {
			if ahead != nil {
				<-ahead.done // fetched for offsets or leaders that changed
			}
			responses = f.fetchAll(ctx, meta.id, groups)
		}
		ahead = nil
		chunks, failed := f.processAll(responses, meta)
		fatal := false
		for _, c := range chunks {
			if c.err != nil {
				fatal = true
				break
			}
			f.offsets[c.part] = c.end
		}
		// The next fetch goes out while these chunks wait for the
		// decoders and the reader: the broker works while this side
		// does.
		if !failed && !fatal && time.Since(refreshed) < srcMetadataEvery {
			if next := f.groups(meta); len(next) > 0 {
				ahead = f.fetchAhead(ctx, meta.id, next)
			}
		}
		for _, c := range chunks {
			if !f.send(ctx, c) {
				return
			}
			if c.err != nil {
				<-ctx.Done() // the reader stops the source
				return
			}
		}
		if failed {
			meta.leaders = nil // a leader may have moved
			if !sleep(ctx, &backoff) {
				return
			}
			continue
		}
		backoff = srcMinBackoff
	}
}

// groups returns the fetch of every partition with a known leader and a
// resolved offset, by leader.
func (f *srcFetcher) groups(meta srcLeaders) map[int32][]kmsg.FetchRequestTopicPartition {
	groups := map[int32][]kmsg.FetchRequestTopicPartition{}
	for p, off := range f.offsets {
		leader, ok := meta.leaders[p]
		if !ok || leader < 0 || off < 0 {
			continue
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, off, srcPartitionBytes
		groups[leader] = append(groups[leader], rp)
	}
	for _, g := range groups {
		sort.Slice(g, func(i, j int) bool { return g[i].Partition < g[j].Partition })
	}
	return groups
}

// sameGroups reports whether a and b fetch the same partitions from the
// same leaders at the same offsets.
func sameGroups(a, b map[int32][]kmsg.FetchRequestTopicPartition) bool {
	if len(a) != len(b) {
		return false
	}
	for leader, ga := range a {
		gb := b[leader]
		if len(ga) != len(gb) {
			return false
		}
		for i := range ga {
			if ga[i].Partition != gb[i].Partition || ga[i].FetchOffset != gb[i].FetchOffset {
				return false
			}
		}
	}
	return true
}

// srcAhead is a fetch sent before the chunks of the one before went out.
type srcAhead struct {
	groups map[int32][]kmsg.FetchRequestTopicPartition
	done   chan []srcFetchResult // receives the responses once
}

// fetchAhead starts fetching groups on a goroutine run waits for.
func (f *srcFetcher) fetchAhead(ctx context.Context, id [16]byte, groups map[int32][]kmsg.FetchRequestTopicPartition) *srcAhead {
	a := &srcAhead{groups: groups, done: make(chan []srcFetchResult, 1)}
	go func() { a.done <- f.fetchAll(ctx, id, groups) }()
	return a
}

// processAll turns the partitions of responses into chunks, in response
// order; failed is true when a request or a partition failed and should be
// retried after a pause.
func (f *srcFetcher) processAll(responses []srcFetchResult, meta srcLeaders) (chunks []*srcChunk, failed bool) {
	for _, r := range responses {
		if r.err != nil {
			failed = true
			continue
		}
		for _, t := range r.res.Topics {
			if t.Topic != f.cfg.topic && (t.TopicID == [16]byte{} || t.TopicID != meta.id) {
				continue
			}
			for i := range t.Partitions {
				rp := &t.Partitions[i]
				from, ok := f.offsets[rp.Partition]
				if !ok || from < 0 {
					continue
				}
				c, retry := f.process(rp, from)
				if retry {
					failed = true
				}
				if c != nil {
					chunks = append(chunks, c)
					if c.err != nil {
						return chunks, failed // the source stops at it
					}
				}
			}
		}
	}
	return chunks, failed
}

// resolve asks the brokers for the start of partitions that have none
// yet and tells the reader (so Position holds it); false after a failure.
func (f *srcFetcher) resolve(ctx context.Context, backoff *time.Duration) bool {
	todo := map[int32]int64{}
	for p, o := range f.offsets {
		if o < 0 {
			todo[p] = o
		}
	}
	if len(todo) == 0 {
		return true
	}
	got, err := f.client.resolve(ctx, f.cfg, todo)
	if err != nil {
		sleep(ctx, backoff)
		return false
	}
	parts := make([]int32, 0, len(got))
	for p := range got {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		f.offsets[p] = got[p]
		if !f.send(ctx, &srcChunk{part: p, end: got[p]}) {
			return false
		}
	}
	return true
}

type srcFetchResult struct {
	res *kmsg.FetchResponse
	err error
}

// fetchAll fetches every leader's partitions, in parallel when there are
// several leaders.
func (f *srcFetcher) fetchAll(ctx context.Context, id [16]byte, groups map[int32][]kmsg.FetchRequestTopicPartition) []srcFetchResult {
	out := make([]srcFetchResult, 0, len(groups))
	if len(groups) == 1 {
		for leader, parts := range groups {
			res, err := f.client.fetch(ctx, leader, id, parts, f.cfg.readCommitted)
			out = append(out, srcFetchResult{res, err})
		}
		return out
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for leader, parts := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := f.client.fetch(ctx, leader, id, parts, f.cfg.readCommitted)
			mu.Lock()
			out = append(out, srcFetchResult{res, err})
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// process turns one partition of a fetch response that started at from
// into a chunk. It returns nil when there is nothing new, and retry when
// the partition had a transient error.
func (f *srcFetcher) process(rp *kmsg.FetchResponseTopicPartition, from int64) (c *srcChunk, retry bool) {
	part := rp.Partition
	if rp.ErrorCode != 0 {
		if errors.Is(kerr.ErrorForCode(rp.ErrorCode), kerr.OffsetOutOfRange) {
			return &srcChunk{part: part, end: from, err: pgerror.New(pgcode.DataCorrupted,
				"source %s: offset %d of topic %s partition %d is out of range (log start %d, end %d): the records were deleted or the topic was recreated",
				f.cfg.name, from, f.cfg.topic, part, rp.LogStartOffset, rp.HighWatermark)}, false
		}
		return nil, true
	}
	if len(rp.RecordBatches) == 0 {
		return nil, false
	}
	hint := f.rawHint
	if avail := rp.HighWatermark - from; avail >= 0 && avail < int64(hint) {
		hint = int(avail)
	}
	c = &srcChunk{part: part, end: from, hwm: rp.HighWatermark, raw: make([]srcRecord, 0, hint)}
	read := c // c is the result, nil when nothing is new
	defer func() { f.rawHint = max(f.rawHint, len(read.raw)) }()
	// Records at or after the last stable offset belong to transactions
	// still open: read_committed never returns them (brokers do not send
	// them; this guards against one that does).
	limit := int64(-1)
	if f.cfg.readCommitted && rp.LastStableOffset >= 0 {
		limit = rp.LastStableOffset
	}
	// The aborted transactions overlapping this response, by first offset:
	// a producer's batches from its first offset up to its abort marker
	// are dropped.
	var abortedTxns []kmsg.FetchResponseTopicPartitionAbortedTransaction
	var aborted map[int64]bool
	if f.cfg.readCommitted && len(rp.AbortedTransactions) > 0 {
		abortedTxns = append(abortedTxns, rp.AbortedTransactions...)
		sort.Slice(abortedTxns, func(i, j int) bool { return abortedTxns[i].FirstOffset < abortedTxns[j].FirstOffset })
		aborted = map[int64]bool{}
	}
	fail := func(err error) (*srcChunk, bool) {
		c.err = pgerror.Wrap(err, pgcode.DataCorrupted, "source %s: topic %s partition %d", f.cfg.name, f.cfg.topic, part)
		return c, false
	}
	atLimit := false
	for rest := rp.RecordBatches; len(rest) > 0 && !atLimit; {
		b, next, ok, err := nextBatch(rest)
		if err != nil {
			return fail(err)
		}
		if !ok {
			break // a partial batch ends the response
		}
		rest = next
		if !b.control() && aborted != nil {
			// The producers whose aborted transactions start at or
			// before this batch.
			for len(abortedTxns) > 0 && abortedTxns[0].FirstOffset <= b.base {
				aborted[abortedTxns[0].ProducerID] = true
				abortedTxns = abortedTxns[1:]
			}
		}
		if !b.control() && b.next() <= from {
			continue // records before the fetch offset (brokers return whole batches)
		}
		// A control batch holds commit and abort markers, never a row (an
		// abort marker ends its producer's aborted transaction); an aborted
		// transaction's batch is passed by. Both still move c.end.
		control, skip := b.control(), b.transactional() && aborted[b.producerID]
		err = batchRecords(&b, &f.dec, func(r *srcRecord) bool {
			if limit >= 0 && r.off >= limit {
				atLimit = true
				return false
			}
			if control && aborted != nil && len(r.key) >= 4 && binary.BigEndian.Uint16(r.key[2:4]) == 0 {
				delete(aborted, b.producerID)
			}
			if r.off < from {
				return true
			}
			c.end = max(c.end, r.off+1)
			if !control && !skip {
				c.bytes += int64(len(r.key) + len(r.value))
				c.raw = append(c.raw, *r)
			}
			return true
		})
		if err != nil {
			return fail(err)
		}
	}
	if c.end == from && len(c.raw) == 0 {
		return nil, false
	}
	return c, false
}

// decodeChunk turns c's raw records into items and rows.
func (d *srcDecoder) decodeChunk(c *srcChunk) {
	c.items = make([]srcItem, 0, len(c.raw))
	c.rows = make([]types.Row, 0, len(c.raw))
	c.diffs = make([]int64, 0, len(c.raw))
	for i := range c.raw {
		r := &c.raw[i]
		d.record(c, r.off, r.ts, r.key, r.value, r.keyNull, r.valueNull)
	}
	c.raw = nil
}

// newRow returns a row for one record, from a slab shared by many rows.
func (d *srcDecoder) newRow() types.Row {
	return d.alloc.Row(len(d.cfg.cols))
}

// record decodes one record into c.
func (d *srcDecoder) record(c *srcChunk, off int64, ts time.Time, key, value []byte, keyNull, valueNull bool) {
	bad := func(cause string, raw []byte) {
		c.items = append(c.items, srcItem{off: off, bad: &connector.DeadLetter{
			Topic: d.cfg.topic, Partition: c.part, Offset: off, Error: cause, Raw: append([]byte(nil), raw...),
		}})
	}
	if size := len(key) + len(value); size > d.cfg.maxBytes {
		raw := value
		if len(raw) > d.cfg.maxBytes {
			raw = raw[:d.cfg.maxBytes]
		}
		bad(fmt.Sprintf("message of %d bytes exceeds max.message.bytes (%d); raw bytes truncated to %d", size, d.cfg.maxBytes, len(raw)), raw)
		return
	}
	first := int32(len(c.rows))
	emit := func(row types.Row, diff int64) {
		c.rows = append(c.rows, row)
		c.diffs = append(c.diffs, diff)
	}
	switch d.cfg.format {
	case srcPlain:
		if valueNull {
			break // a tombstone means nothing to an append-only source
		}
		row := d.newRow()
		if err := d.pseudo(row, c.part, off, ts, key, keyNull); err != nil {
			bad(err.Error(), value)
			return
		}
		if err := d.dec.Decode(value, row); err != nil {
			bad(err.Error(), value)
			return
		}
		emit(row, 1)
	case srcUpsert:
		row := d.newRow()
		if err := d.pseudo(row, c.part, off, ts, key, keyNull); err != nil {
			bad(err.Error(), value)
			return
		}
		diff := int64(1)
		if valueNull {
			if keyNull {
				bad("tombstone without a key", nil)
				return
			}
			for i := range row {
				if !d.cfg.skip[i] {
					row[i] = types.Null
				}
			}
			diff = -1
		} else if err := d.dec.Decode(value, row); err != nil {
			bad(err.Error(), value)
			return
		}
		if !keyNull && len(d.keyCols) > 0 {
			if err := d.upsertKey(key, row); err != nil {
				raw := value
				if valueNull {
					raw = key
				}
				bad(err.Error(), raw)
				return
			}
		}
		for _, k := range d.cfg.key {
			if row[k].IsNull() {
				raw := value
				if valueNull {
					raw = key
				}
				bad(fmt.Sprintf("key column %s is missing (the record key and value lack it)", d.cfg.cols[k].Name), raw)
				return
			}
		}
		emit(row, diff)
	case srcDebezium:
		if valueNull {
			break // the tombstone Debezium writes after a delete
		}
		before, after := d.newRow(), d.newRow()
		if err := d.pseudo(before, c.part, off, ts, key, keyNull); err != nil {
			bad(err.Error(), value)
			return
		}
		copy(after, before)
		nb, na, err := d.dec.DecodeDebezium(value, before, after)
		if err != nil {
			bad(err.Error(), value)
			return
		}
		if nb {
			emit(before, -1)
		}
		if na {
			emit(after, 1)
		}
	}
	c.items = append(c.items, srcItem{off: off, first: first, nrows: int8(int32(len(c.rows)) - first)})
}

// pseudo fills the pseudo-columns of row.
func (d *srcDecoder) pseudo(row types.Row, part int32, off int64, ts time.Time, key []byte, keyNull bool) error {
	cfg := d.cfg
	if cfg.keyCol >= 0 {
		switch {
		case keyNull:
			row[cfg.keyCol] = types.Null
		case cfg.cols[cfg.keyCol].Type.Fam == types.Bytea:
			row[cfg.keyCol] = types.NewBytes(key)
		default:
			if !utf8.Valid(key) {
				return errors.New("key: invalid UTF-8 for the text column _key")
			}
			row[cfg.keyCol] = types.NewString(string(key))
		}
	}
	if cfg.partCol >= 0 {
		row[cfg.partCol] = types.NewInt(int64(part))
	}
	if cfg.offCol >= 0 {
		row[cfg.offCol] = types.NewInt(off)
	}
	if cfg.tsCol >= 0 {
		us := ts.UnixMicro()
		if cfg.cols[cfg.tsCol].Type.Fam == types.TimestampTZ {
			row[cfg.tsCol] = types.NewTimestampTZ(us)
		} else {
			row[cfg.tsCol] = types.NewTimestamp(us)
		}
	}
	return nil
}

// upsertKey decodes the record key of an upsert record into the key
// columns of row: a JSON object of the key columns or, with one key
// column, its text. The key wins over the value's copy of the columns.
func (d *srcDecoder) upsertKey(key []byte, row types.Row) error {
	i := 0
	for i < len(key) && (key[i] == ' ' || key[i] == '\t' || key[i] == '\n' || key[i] == '\r') {
		i++
	}
	var err error
	switch {
	case d.keyAvro != nil && len(key) >= 5 && key[0] == 0:
		err = d.keyAvro.Decode(key, d.keyRow)
	case i < len(key) && key[i] == '{':
		err = d.keyDec.Decode(key, d.keyRow)
		if err != nil && len(d.keyCols) == 1 {
			err = d.keyDec.KeyText(key, d.keyRow, d.keyCols[0])
		}
	case len(d.keyCols) == 1:
		err = d.keyDec.KeyText(key, d.keyRow, d.keyCols[0])
	default:
		err = errors.New("expected a JSON object with the key columns")
	}
	if err != nil {
		return fmt.Errorf("record key: %v", err)
	}
	for _, k := range d.keyCols {
		if !d.keyRow[k].IsNull() {
			row[k] = d.keyRow[k]
		}
	}
	return nil
}
