package nats

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"sluice/connectors/internal/chunkq"
	"sluice/connectors/internal/decode"
	"sluice/connectors/internal/msgfmt"
	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// SourceFactory is the nats source connector.
type SourceFactory struct{}

func init() { connector.RegisterSource("nats", SourceFactory{}) }

const chunkMsgs = 256

type srcConfig struct {
	conn
	name    string
	stream  string
	subject string
	latest  bool
	onError msgfmt.OnError
	enc     decode.Encoding
	cols    []types.Column
}

func srcParse(cfg connector.SourceConfig) (*srcConfig, error) {
	if len(cfg.Columns) == 0 {
		return nil, pgerror.New(pgcode.InvalidObjectDefinition, "a nats source needs declared columns")
	}
	for k := range cfg.Options {
		switch {
		case connOptions[k], k == "stream", k == "subject", k == "on_error", k == "scan.startup.mode", k == "format", k == "encode":
		default:
			return nil, optErr(k, "unknown option")
		}
	}
	cn, err := parseConn(cfg.Options, cfg.Policy)
	if err != nil {
		return nil, err
	}
	c := &srcConfig{conn: cn, name: cfg.Name, cols: cfg.Columns, stream: strings.TrimSpace(cfg.Options["stream"]),
		subject: strings.TrimSpace(cfg.Options["subject"])}
	if c.stream == "" {
		return nil, optErr("stream", "is required (the JetStream stream to read)")
	}
	switch m := strings.ToLower(strings.TrimSpace(cfg.Options["scan.startup.mode"])); m {
	case "", "earliest":
	case "latest":
		c.latest = true
	default:
		return nil, optErr("scan.startup.mode", "%q is not 'earliest' or 'latest'", m)
	}
	if c.onError, err = msgfmt.ParseOnError("nats", cfg.Options["on_error"]); err != nil {
		return nil, err
	}
	if c.enc, err = msgfmt.SourceEncoding("nats", cfg.Options["format"], cfg.Options["encode"]); err != nil {
		return nil, err
	}
	return c, nil
}

// Validate implements connector.SourceFactory; it does not connect.
func (SourceFactory) Validate(cfg connector.SourceConfig) ([]types.Column, error) {
	if _, err := srcParse(cfg); err != nil {
		return nil, err
	}
	return cfg.Columns, nil
}

// Open implements connector.SourceFactory: it connects and checks the
// stream exists; reading starts at the first Read (after Seek).
func (SourceFactory) Open(ctx context.Context, cfg connector.SourceConfig) (connector.Source, error) {
	c, err := srcParse(cfg)
	if err != nil {
		return nil, err
	}
	nc, err := c.connect("source " + c.name)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, pgerror.Wrap(err, pgcode.ConnectionException, "nats source %s", c.name)
	}
	sctx, cancel := context.WithTimeout(ctx, connectTimeout)
	st, err := js.Stream(sctx, c.stream)
	cancel()
	if err != nil {
		nc.Close()
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, pgerror.New(pgcode.UndefinedObject, "nats source %s: stream %q does not exist", c.name, c.stream).
				WithHint("create it first (nats stream add), with the subjects the publishers use")
		}
		return nil, pgerror.Wrap(err, pgcode.ConnectionException, "nats source %s: stream %q", c.name, c.stream)
	}
	return &source{cfg: c, nc: nc, st: st, chunks: make(chan *chunk, 16), done: make(chan struct{})}, nil
}

type item struct {
	seq uint64
	row types.Row
	bad *connector.DeadLetter
}

type chunk struct {
	items []item
	err   error
}

// source reads a stream through an ordered consumer. Read, Position, Seek
// and Close come from the engine's goroutine; fetch runs on a goroutine
// the source owns (started by the first Read, stopped and waited for by
// Close).
type source struct {
	cfg    *srcConfig
	nc     *natsgo.Conn
	st     jetstream.Stream
	chunks chan *chunk
	done   chan struct{}
	wg     sync.WaitGroup
	cancel context.CancelFunc

	started bool
	seq     uint64 // stream sequence of the last message handed over
	cur     *chunk
	idx     int
	pending error
	dead    chunkq.DeadLetters
	take    chunkq.Taker[*chunk]
}

var (
	_ connector.Seekable         = (*source)(nil)
	_ connector.DeadLetterSource = (*source)(nil)
)

// Position implements connector.Seekable: the stream sequence.
func (s *source) Position() []byte { return binary.BigEndian.AppendUint64(nil, s.seq) }

// Seek implements connector.Seekable.
func (s *source) Seek(pos []byte) error {
	if len(pos) != 8 || s.started {
		return pgerror.New(pgcode.DataCorrupted, "nats source %s: unreadable checkpoint position", s.cfg.name)
	}
	s.seq = binary.BigEndian.Uint64(pos)
	return nil
}

func (s *source) start() {
	s.started = true
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(1)
	go s.fetch(ctx)
}

// fetch reads messages into chunks until the source closes. The client
// reconnects after a lost connection and the ordered consumer resumes
// after the last sequence it delivered, so a server lost mid-stream is
// waited for, not an error.
func (s *source) fetch(ctx context.Context) {
	defer s.wg.Done()
	send := func(c *chunk) bool {
		select {
		case s.chunks <- c:
			return true
		case <-s.done:
			return false
		}
	}
	occ := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if s.cfg.subject != "" {
		occ.FilterSubjects = []string{s.cfg.subject}
	}
	if s.seq > 0 {
		// Resume after the checkpoint; messages retention removed in
		// between are a loss to report, not to skip.
		info, err := s.st.Info(ctx)
		if err != nil {
			send(&chunk{err: pgerror.Wrap(err, pgcode.ConnectionException, "nats source %s: stream %q", s.cfg.name, s.cfg.stream)})
			return
		}
		if info.State.FirstSeq > s.seq+1 && info.State.Msgs > 0 {
			send(&chunk{err: pgerror.New(pgcode.DataException, "nats source %s: stream %q no longer holds sequences %d to %d, read after the last checkpoint",
				s.cfg.name, s.cfg.stream, s.seq+1, info.State.FirstSeq-1).
				WithHint("the stream's retention (max age, max messages) removed them; replay cannot be exactly once")})
			return
		}
		occ.DeliverPolicy, occ.OptStartSeq = jetstream.DeliverByStartSequencePolicy, s.seq+1
	} else if s.cfg.latest {
		occ.DeliverPolicy = jetstream.DeliverNewPolicy
	}
	cons, err := s.st.OrderedConsumer(ctx, occ)
	if err != nil {
		send(&chunk{err: pgerror.Wrap(err, pgcode.ConnectionException, "nats source %s: creating a consumer on stream %q", s.cfg.name, s.cfg.stream)})
		return
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1024))
	if err != nil {
		send(&chunk{err: pgerror.Wrap(err, pgcode.ConnectionException, "nats source %s: consuming stream %q", s.cfg.name, s.cfg.stream)})
		return
	}
	defer it.Stop()
	dec := decode.New(s.cfg.cols, s.cfg.enc, nil)
	ncols := len(s.cfg.cols)
	var slab []types.Datum
	c := &chunk{}
	for {
		wait := 50 * time.Millisecond
		if len(c.items) == 0 {
			wait = time.Second
		}
		msg, err := it.Next(jetstream.NextMaxWait(wait))
		if err != nil {
			select {
			case <-s.done:
				return
			default:
			}
			if len(c.items) > 0 {
				if !send(c) {
					return
				}
				c = &chunk{}
			}
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return
			}
			continue // a timeout, or the client reconnecting: wait on
		}
		md, err := msg.Metadata()
		if err != nil {
			continue
		}
		it := item{seq: md.Sequence.Stream}
		if len(slab) < ncols {
			slab = make([]types.Datum, ncols*chunkMsgs)
		}
		row := types.Row(slab[:ncols:ncols])
		if derr := dec.Decode(msg.Data(), row); derr != nil {
			it.bad = &connector.DeadLetter{Topic: msg.Subject(), Offset: int64(md.Sequence.Stream), Error: derr.Error(), Raw: append([]byte(nil), msg.Data()...)}
		} else {
			slab = slab[ncols:]
			it.row = row
		}
		c.items = append(c.items, it)
		if len(c.items) >= chunkMsgs {
			if !send(c) {
				return
			}
			c = &chunk{}
		}
	}
}

// Read implements connector.Source.
func (s *source) Read(ctx context.Context, b *types.Batch, max int) (int, error) {
	if !s.started {
		s.start()
	}
	if s.pending != nil {
		err := s.pending
		s.pending = nil
		return 0, err
	}
	n := 0
	waited := false
	for n < max {
		if s.cur == nil {
			mayWait := n == 0 && !waited
			waited = waited || mayWait
			c, ok, err := s.take.Next(ctx, s.chunks, mayWait)
			if err != nil {
				return 0, err
			}
			if !ok {
				return n, nil
			}
			if c.err != nil {
				if n > 0 {
					s.pending = c.err
					return n, nil
				}
				return 0, c.err
			}
			s.cur, s.idx = c, 0
		}
		for s.idx < len(s.cur.items) && n < max {
			it := &s.cur.items[s.idx]
			if it.bad != nil {
				if s.cfg.onError == msgfmt.Fail {
					err := connector.BadRecord(s.cfg.name, it.bad.Topic, 0, it.bad.Offset, it.bad.Error)
					if n > 0 {
						s.pending = err
						return n, nil
					}
					return 0, err
				}
				s.dead.Add(*it.bad)
			} else {
				b.Add(it.row, 1)
				n++
			}
			s.seq = it.seq
			s.idx++
		}
		if s.idx == len(s.cur.items) {
			s.cur = nil
		}
	}
	return n, nil
}

// TakeDeadLetters implements connector.DeadLetterSource.
func (s *source) TakeDeadLetters(buf []connector.DeadLetter) []connector.DeadLetter {
	return s.dead.Take(buf)
}

// Close implements connector.Source: it stops the fetcher, waits for it
// and closes the connection.
func (s *source) Close() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	close(s.done)
	if s.cancel != nil {
		s.cancel()
	}
	s.nc.Close() // ends a Next that waits
	s.wg.Wait()
	return nil
}
