package nats

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"sluice/connectors/internal/msgfmt"
	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// SinkFactory is the nats sink connector.
type SinkFactory struct{}

func init() { connector.RegisterSink("nats", SinkFactory{}) }

// Headers of every message a sink publishes.
const (
	hdrEpoch    = "Sluice-Epoch"
	hdrEpochEnd = "Sluice-Epoch-End"
)

// ackTimeout bounds the wait for the stream's acknowledgements of one
// epoch: Write gives up (and the runtime retries) rather than block.
const ackTimeout = 10 * time.Second

var sinkShared = map[string]bool{"delivery": true, "write_mode": true, "primary_key": true, "type": true, "force_append_only": true}

type sinkConfig struct {
	conn
	subject string
}

func sinkParse(cfg connector.SinkConfig) (*sinkConfig, *msgfmt.Encoder, string, error) {
	for k := range cfg.Options {
		if !connOptions[k] && k != "subject" && !sinkShared[k] {
			return nil, nil, "", optErr(k, "unknown option")
		}
	}
	cn, err := parseConn(cfg.Options, cfg.Policy)
	if err != nil {
		return nil, nil, "", err
	}
	c := &sinkConfig{conn: cn, subject: strings.TrimSpace(cfg.Options["subject"])}
	if c.subject == "" || strings.ContainsAny(c.subject, "*> \t") {
		return nil, nil, "", optErr("subject", "is required: one subject without wildcards, that a JetStream stream captures")
	}
	enc, mode, err := msgfmt.ParseSink("nats", cfg)
	if err != nil {
		return nil, nil, "", err
	}
	return c, enc, mode, nil
}

// Validate implements connector.SinkFactory.
func (SinkFactory) Validate(cfg connector.SinkConfig) (connector.SinkPlan, error) {
	_, _, mode, err := sinkParse(cfg)
	if err != nil {
		return connector.SinkPlan{}, err
	}
	return connector.SinkPlan{WriteMode: mode, Guarantee: connector.ExactlyOnce}, nil
}

// Open implements connector.SinkFactory: it connects and checks that a
// stream captures the subject (a publish no stream takes is lost).
func (SinkFactory) Open(ctx context.Context, cfg connector.SinkConfig) (connector.Sink, error) {
	c, enc, _, err := sinkParse(cfg)
	if err != nil {
		return nil, err
	}
	nc, err := c.connect("sink " + cfg.Name)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		nc.Close()
		return nil, pgerror.Wrap(err, pgcode.ConnectionException, "nats sink %s", cfg.Name)
	}
	s := &sink{cfg: c, name: cfg.Name, id: cfg.ID, enc: enc, nc: nc, js: js}
	sctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if _, err := s.stream(sctx); err != nil {
		nc.Close()
		return nil, err
	}
	return s, nil
}

// sink publishes to JetStream. Write and LastEpoch are called from one
// goroutine.
type sink struct {
	cfg  *sinkConfig
	name string
	id   uint64
	enc  *msgfmt.Encoder
	nc   *natsgo.Conn
	js   jetstream.JetStream
	buf  []byte
}

var _ connector.Progress = (*sink)(nil)

func (s *sink) stream(ctx context.Context) (jetstream.Stream, error) {
	name, err := s.js.StreamNameBySubject(ctx, s.cfg.subject)
	if err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, pgerror.New(pgcode.UndefinedObject, "nats sink %s: no JetStream stream captures subject %q", s.name, s.cfg.subject).
				WithHint("create a stream with this subject first (nats stream add --subjects %s); a plain NATS publish would be lost", s.cfg.subject)
		}
		return nil, pgerror.Wrap(err, pgcode.ConnectionException, "nats sink %s: finding the stream of subject %q", s.name, s.cfg.subject)
	}
	st, err := s.js.Stream(ctx, name)
	if err != nil {
		return nil, pgerror.Wrap(err, pgcode.ConnectionException, "nats sink %s: stream %q", s.name, name)
	}
	return st, nil
}

// LastEpoch implements connector.Progress: the epoch of the subject's
// last message if it ends its epoch, else the epoch before it (that one
// was published in part and must be published again).
func (s *sink) LastEpoch(ctx context.Context) (uint64, error) {
	st, err := s.stream(ctx)
	if err != nil {
		return 0, err
	}
	m, err := st.GetLastMsgForSubject(ctx, s.cfg.subject)
	if err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return 0, nil
		}
		return 0, pgerror.Wrap(err, pgcode.ConnectionException, "nats sink %s: reading the last message of %q", s.name, s.cfg.subject)
	}
	e, err := strconv.ParseUint(m.Header.Get(hdrEpoch), 10, 64)
	if err != nil {
		return 0, nil // another publisher's message: only the window protects
	}
	if m.Header.Get(hdrEpochEnd) != "true" {
		e--
	}
	return e, nil
}

// msgID is the de-duplication id of the i-th change of an epoch.
func (s *sink) msgID(epoch uint64, i int) string {
	return fmt.Sprintf("sluice/%d/%d/%d", s.id, epoch, i)
}

// Write implements connector.Sink: it publishes every change and waits
// for the stream to acknowledge all of them.
func (s *sink) Write(ctx context.Context, epoch uint64, changes []connector.Change) error {
	ep := strconv.FormatUint(epoch, 10)
	futs := make([]jetstream.PubAckFuture, 0, len(changes))
	for i, c := range changes {
		s.buf = s.enc.Encode(s.buf[:0], epoch, c)
		m := natsgo.NewMsg(s.cfg.subject)
		m.Data = append([]byte(nil), s.buf...)
		m.Header.Set(jetstream.MsgIDHeader, s.msgID(epoch, i))
		m.Header.Set(hdrEpoch, ep)
		if i == len(changes)-1 {
			m.Header.Set(hdrEpochEnd, "true")
		}
		f, err := s.js.PublishMsgAsync(m)
		if err != nil {
			return pgerror.Wrap(err, pgcode.ConnectionException, "nats sink %s: publishing epoch %d", s.name, epoch)
		}
		futs = append(futs, f)
	}
	timer := time.NewTimer(ackTimeout)
	defer timer.Stop()
	for _, f := range futs {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return pgerror.Wrap(err, pgcode.ConnectionException, "nats sink %s: epoch %d not acknowledged", s.name, epoch)
		case <-timer.C:
			return pgerror.New(pgcode.ConnectionException, "nats sink %s: epoch %d not acknowledged within %s", s.name, epoch, ackTimeout).
				WithHint("the epoch is published again; JetStream drops the repeats within its duplicate window")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Close implements connector.Sink.
func (s *sink) Close() error {
	s.nc.Close()
	return nil
}
