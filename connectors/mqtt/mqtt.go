package mqtt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"sluice/connectors/internal/chunkq"
	"sluice/connectors/internal/decode"
	"sluice/connectors/internal/msgfmt"
	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// SourceFactory is the mqtt source connector; SinkFactory the sink.
type (
	SourceFactory struct{}
	SinkFactory   struct{}
)

func init() {
	connector.RegisterSource("mqtt", SourceFactory{})
	connector.RegisterSink("mqtt", SinkFactory{})
}

var _ connector.Unreplayable = SourceFactory{}

const (
	connectTimeout = 3 * time.Second
	ackTimeout     = 10 * time.Second
	bufferMsgs     = 4096
)

type conn struct {
	server   string
	topic    string
	qos      byte
	username string
	password string
	clientID string
}

var connOptions = map[string]bool{"connector": true, "server": true, "topic": true, "qos": true, "username": true, "password": true, "client.id": true}

func optErr(key, format string, args ...any) error {
	return connector.OptionError("mqtt", key, format, args...)
}

func parseConn(opts map[string]string, policy *connector.Policy, sink bool) (conn, error) {
	get := func(k string) string { return strings.TrimSpace(opts[k]) }
	c := conn{server: get("server"), topic: get("topic"), qos: 1, username: get("username"), password: opts["password"], clientID: get("client.id")}
	u, err := url.Parse(c.server)
	if c.server == "" || err != nil || u.Host == "" || (u.Scheme != "tcp" && u.Scheme != "mqtt") {
		return c, optErr("server", "%q is not a tcp://host:port URL", c.server)
	}
	port := 1883
	if p := u.Port(); p != "" {
		port, _ = strconv.Atoi(p)
	}
	if err := policy.CheckHost("mqtt", u.Hostname(), port); err != nil {
		return c, err
	}
	if c.topic == "" {
		return c, optErr("topic", "is required")
	}
	if sink && strings.ContainsAny(c.topic, "+#") {
		return c, optErr("topic", "%q has wildcards: a sink publishes to one topic", c.topic)
	}
	switch q := get("qos"); q {
	case "", "1":
	case "0":
		c.qos = 0
	default:
		return c, optErr("qos", "%q is not 0 or 1", q)
	}
	return c, nil
}

// connect dials the broker; the client reconnects by itself after a lost
// connection, and onConnect runs after every connection.
func (c conn) connect(name string, onConnect func(paho.Client)) (paho.Client, error) {
	id := c.clientID
	if id == "" {
		var r [6]byte
		rand.Read(r[:])
		id = "sluice-" + name + "-" + hex.EncodeToString(r[:])
	}
	o := paho.NewClientOptions().AddBroker(c.server).SetClientID(id).SetCleanSession(true).
		SetConnectTimeout(connectTimeout).SetAutoReconnect(true).SetMaxReconnectInterval(2 * time.Second).
		SetConnectRetry(false).SetOrderMatters(true).SetWriteTimeout(ackTimeout)
	if c.username != "" || c.password != "" {
		o.SetUsername(c.username).SetPassword(c.password)
	}
	if onConnect != nil {
		o.SetOnConnectHandler(onConnect)
	}
	cl := paho.NewClient(o)
	tok := cl.Connect()
	if !tok.WaitTimeout(connectTimeout + time.Second) {
		cl.Disconnect(0)
		return nil, pgerror.New(pgcode.SQLClientUnableToEstablishSQLConnection, "mqtt %s: no answer from %s within %s", name, c.server, connectTimeout)
	}
	if err := tok.Error(); err != nil {
		if strings.Contains(err.Error(), "not Authorized") || strings.Contains(err.Error(), "bad user name or password") {
			return nil, pgerror.Wrap(err, pgcode.InvalidPassword, "mqtt %s: the broker %s refused the credentials", name, c.server).
				WithHint("check the username and password options")
		}
		return nil, pgerror.Wrap(err, pgcode.SQLClientUnableToEstablishSQLConnection, "mqtt %s: cannot connect to %s", name, c.server).
			WithHint("is the MQTT broker (mosquitto) running?")
	}
	return cl, nil
}

type srcConfig struct {
	conn
	name    string
	cols    []types.Column
	onError msgfmt.OnError
	enc     decode.Encoding
}

func srcParse(cfg connector.SourceConfig) (*srcConfig, error) {
	if len(cfg.Columns) == 0 {
		return nil, pgerror.New(pgcode.InvalidObjectDefinition, "an mqtt source needs declared columns")
	}
	for k := range cfg.Options {
		if !connOptions[k] && k != "on_error" && k != "format" && k != "encode" {
			return nil, optErr(k, "unknown option")
		}
	}
	cn, err := parseConn(cfg.Options, cfg.Policy, false)
	if err != nil {
		return nil, err
	}
	c := &srcConfig{conn: cn, name: cfg.Name, cols: cfg.Columns}
	if c.onError, err = msgfmt.ParseOnError("mqtt", cfg.Options["on_error"]); err != nil {
		return nil, err
	}
	if c.enc, err = msgfmt.SourceEncoding("mqtt", cfg.Options["format"], cfg.Options["encode"]); err != nil {
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

// Unreplayable implements connector.Unreplayable.
func (SourceFactory) Unreplayable(connector.SourceConfig) string {
	return "an MQTT subscription cannot replay messages after a restart (the broker keeps no log to seek in, and messages are acknowledged before the checkpoint)"
}

// Open implements connector.SourceFactory: it connects and subscribes
// (again after every reconnect).
func (SourceFactory) Open(_ context.Context, cfg connector.SourceConfig) (connector.Source, error) {
	c, err := srcParse(cfg)
	if err != nil {
		return nil, err
	}
	s := &source{cfg: c, msgs: make(chan msg, bufferMsgs), done: make(chan struct{}), subErr: make(chan error, 1)}
	cl, err := c.connect("source "+c.name, s.subscribe)
	if err != nil {
		return nil, err
	}
	s.cl = cl
	select {
	case err := <-s.subErr:
		if err != nil {
			cl.Disconnect(0)
			return nil, err
		}
	case <-time.After(ackTimeout):
		cl.Disconnect(0)
		return nil, pgerror.New(pgcode.ConnectionException, "mqtt source %s: subscription to %q not acknowledged", c.name, c.topic)
	}
	return s, nil
}

type msg struct {
	topic string
	id    uint16
	data  []byte
}

// source receives a subscription's messages. paho calls onMessage on its
// own goroutine (one at a time, in order); Read, TakeDeadLetters and
// Close come from the engine's goroutine.
type source struct {
	cfg    *srcConfig
	cl     paho.Client
	msgs   chan msg
	done   chan struct{}
	subErr chan error
	once   sync.Once

	dec     *decode.Decoder
	slab    []types.Datum
	pending error
	dead    chunkq.DeadLetters
	timer   *time.Timer
}

var _ connector.DeadLetterSource = (*source)(nil)

func (s *source) subscribe(cl paho.Client) {
	tok := cl.Subscribe(s.cfg.topic, s.cfg.qos, s.onMessage)
	go func() { // reports to Open only; ends with the token
		var err error
		if !tok.WaitTimeout(ackTimeout) {
			err = pgerror.New(pgcode.ConnectionException, "mqtt source %s: subscription to %q not acknowledged", s.cfg.name, s.cfg.topic)
		} else if e := tok.Error(); e != nil {
			err = pgerror.Wrap(e, pgcode.ConnectionException, "mqtt source %s: subscribing to %q", s.cfg.name, s.cfg.topic)
		}
		select {
		case s.subErr <- err:
		default:
		}
	}()
}

func (s *source) onMessage(_ paho.Client, m paho.Message) {
	select {
	case s.msgs <- msg{topic: m.Topic(), id: m.MessageID(), data: append([]byte(nil), m.Payload()...)}:
	case <-s.done:
	}
}

// Read implements connector.Source.
func (s *source) Read(ctx context.Context, b *types.Batch, max int) (int, error) {
	if s.pending != nil {
		err := s.pending
		s.pending = nil
		return 0, err
	}
	if s.dec == nil {
		s.dec = decode.New(s.cfg.cols, s.cfg.enc, nil)
	}
	ncols := len(s.cfg.cols)
	n := 0
	for n < max {
		var m msg
		select {
		case m = <-s.msgs:
		default:
			if n > 0 {
				return n, nil
			}
			if s.timer == nil {
				s.timer = time.NewTimer(chunkq.Wait)
			} else {
				s.timer.Reset(chunkq.Wait)
			}
			select {
			case m = <-s.msgs:
				s.timer.Stop()
			case <-s.timer.C:
				return 0, nil
			case <-ctx.Done():
				s.timer.Stop()
				return 0, ctx.Err()
			}
		}
		if len(s.slab) < ncols {
			s.slab = make([]types.Datum, ncols*256)
		}
		row := types.Row(s.slab[:ncols:ncols])
		if err := s.dec.Decode(m.data, row); err != nil {
			if s.cfg.onError == msgfmt.Fail {
				err := connector.BadRecord(s.cfg.name, m.topic, 0, int64(m.id), err.Error())
				if n > 0 {
					s.pending = err
					return n, nil
				}
				return 0, err
			}
			s.dead.Add(connector.DeadLetter{Topic: m.topic, Offset: int64(m.id), Error: err.Error(), Raw: m.data})
			continue
		}
		s.slab = s.slab[ncols:]
		b.Add(row, 1)
		n++
	}
	return n, nil
}

// TakeDeadLetters implements connector.DeadLetterSource.
func (s *source) TakeDeadLetters(buf []connector.DeadLetter) []connector.DeadLetter {
	return s.dead.Take(buf)
}

// Close implements connector.Source: it unblocks the message handler and
// disconnects (paho waits for its goroutines).
func (s *source) Close() error {
	s.once.Do(func() {
		close(s.done)
		s.cl.Disconnect(250)
	})
	return nil
}

var sinkShared = map[string]bool{"delivery": true, "write_mode": true, "primary_key": true, "type": true, "force_append_only": true, "retain": true}

// Validate implements connector.SinkFactory.
func (SinkFactory) Validate(cfg connector.SinkConfig) (connector.SinkPlan, error) {
	c, _, mode, err := sinkParse(cfg)
	if err != nil {
		return connector.SinkPlan{}, err
	}
	if c.qos == 0 {
		return connector.SinkPlan{WriteMode: mode, Guarantee: connector.AtMostOnce,
			Why: "QoS 0 messages are sent without acknowledgement and may be dropped"}, nil
	}
	return connector.SinkPlan{WriteMode: mode, Guarantee: connector.AtLeastOnce,
		Why: "MQTT has no transactions or de-duplication: an epoch written again after a failure or crash is published again"}, nil
}

func sinkParse(cfg connector.SinkConfig) (conn, *msgfmt.Encoder, string, error) {
	for k := range cfg.Options {
		if !connOptions[k] && !sinkShared[k] {
			return conn{}, nil, "", optErr(k, "unknown option")
		}
	}
	c, err := parseConn(cfg.Options, cfg.Policy, true)
	if err != nil {
		return c, nil, "", err
	}
	switch v := strings.ToLower(strings.TrimSpace(cfg.Options["retain"])); v {
	case "", "false", "true":
	default:
		return c, nil, "", optErr("retain", "%q is not 'true' or 'false'", v)
	}
	enc, mode, err := msgfmt.ParseSink("mqtt", cfg)
	return c, enc, mode, err
}

// Open implements connector.SinkFactory.
func (SinkFactory) Open(_ context.Context, cfg connector.SinkConfig) (connector.Sink, error) {
	c, enc, _, err := sinkParse(cfg)
	if err != nil {
		return nil, err
	}
	cl, err := c.connect("sink "+cfg.Name, nil)
	if err != nil {
		return nil, err
	}
	return &sink{c: c, name: cfg.Name, enc: enc, cl: cl, retain: strings.EqualFold(strings.TrimSpace(cfg.Options["retain"]), "true")}, nil
}

// sink publishes one message per change; Write is called from one
// goroutine.
type sink struct {
	c      conn
	name   string
	enc    *msgfmt.Encoder
	cl     paho.Client
	retain bool
	buf    []byte
}

// Write implements connector.Sink: it publishes every change and, at QoS
// 1, waits for the broker's acknowledgements.
func (s *sink) Write(ctx context.Context, epoch uint64, changes []connector.Change) error {
	if !s.cl.IsConnectionOpen() {
		return pgerror.New(pgcode.ConnectionException, "mqtt sink %s: not connected to %s (reconnecting)", s.name, s.c.server)
	}
	toks := make([]paho.Token, 0, len(changes))
	for _, c := range changes {
		s.buf = s.enc.Encode(s.buf[:0], epoch, c)
		toks = append(toks, s.cl.Publish(s.c.topic, s.c.qos, s.retain, append([]byte(nil), s.buf...)))
	}
	deadline := time.Now().Add(ackTimeout)
	for _, t := range toks {
		select {
		case <-t.Done():
		case <-time.After(time.Until(deadline)):
			return pgerror.New(pgcode.ConnectionException, "mqtt sink %s: epoch %d not acknowledged within %s", s.name, epoch, ackTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := t.Error(); err != nil {
			return pgerror.Wrap(err, pgcode.ConnectionException, "mqtt sink %s: publishing epoch %d", s.name, epoch)
		}
	}
	return nil
}

// Close implements connector.Sink.
func (s *sink) Close() error {
	s.cl.Disconnect(250)
	return nil
}
