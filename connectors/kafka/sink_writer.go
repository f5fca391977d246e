package kafka

// The non-transactional kafka sink (delivery AT_LEAST_ONCE or
// AT_MOST_ONCE): a kafka-go Writer with acks=all. An epoch written again
// after a failed Write or a crash appends its records again.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// sinkWriterTimeout bounds one Write of the non-transactional sink. With
// the broker down, kafka-go's own attempts (MaxAttempts with backoff)
// give up sooner, in a few seconds.
const sinkWriterTimeout = 30 * time.Second

// sinkWriter is the non-transactional Kafka sink.
type sinkWriter struct {
	o         *sinkOptions
	enc       sinkEncoder
	transport *kafkago.Transport
	w         *kafkago.Writer

	mu struct {
		sync.Mutex
		topicReady bool
		closed     bool
		buf        []byte
		msgs       []kafkago.Message
	}
}

var _ connector.Sink = (*sinkWriter)(nil)

func newSinkWriter(o *sinkOptions) *sinkWriter {
	s := &sinkWriter{o: o, enc: newSinkEncoder(o)}
	mech, _ := o.sec.kafkaGo() // checked by sinkParse
	s.transport = &kafkago.Transport{DialTimeout: 5 * time.Second, ClientID: "sluice", Dial: policyDialer(o.policy, o.sec, 5*time.Second), SASL: mech}
	s.w = &kafkago.Writer{
		Addr:  kafkago.TCP(o.brokers...),
		Topic: o.topic,
		// murmur2 of the key, like Kafka's default partitioner and the
		// transactional path, so a key lands in the same partition either way.
		Balancer:     kafkago.Murmur2Balancer{},
		RequiredAcks: kafkago.RequireAll,
		// A Write hands over a whole epoch and waits for it: batches fill
		// from the slice at once, so the linger only delays the last one.
		BatchSize:    10000,
		BatchTimeout: 2 * time.Millisecond,
		ReadTimeout:  10 * time.Second,
		WriteTimeout: 10 * time.Second,
		Transport:    s.transport,
	}
	return s
}

// Write implements connector.Sink.
func (s *sinkWriter) Write(ctx context.Context, epoch uint64, changes []connector.Change) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "kafka sink %s is closed", s.o.name)
	}
	ctx, cancel := context.WithTimeout(ctx, sinkWriterTimeout)
	defer cancel()
	if !s.mu.topicReady {
		if err := s.createTopic(ctx); err != nil {
			return sinkWrap(s.o, err, "cannot create topic %s (Kafka at %s)", s.o.topic, strings.Join(s.o.brokers, ","))
		}
		s.mu.topicReady = true
	}
	buf, msgs := s.mu.buf[:0], s.mu.msgs[:0]
	for _, c := range changes {
		var key, value []byte
		var err error
		if buf, key, value, err = s.enc.record(buf, epoch, c); err != nil {
			return err
		}
		msgs = append(msgs, kafkago.Message{Key: key, Value: value})
	}
	if err := s.w.WriteMessages(ctx, msgs...); err != nil {
		s.mu.buf, s.mu.msgs = nil, nil
		return sinkWrap(s.o, err, "writing epoch %d failed; it will be written again (records of it may already be in the topic)", epoch)
	}
	clear(msgs) // drop references to buf's old arrays
	s.mu.buf, s.mu.msgs = buf[:0], msgs[:0]
	return nil
}

// createTopic creates the sink's topic if it is missing, with the
// broker's default partitions and replication (compacted for FORMAT UPSERT).
func (s *sinkWriter) createTopic(ctx context.Context) error {
	tc := kafkago.TopicConfig{Topic: s.o.topic, NumPartitions: -1, ReplicationFactor: -1}
	if s.o.format == sinkFormatUpsert {
		tc.ConfigEntries = []kafkago.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "compact"}}
	}
	cl := &kafkago.Client{Addr: s.w.Addr, Transport: s.transport, Timeout: 10 * time.Second}
	resp, err := cl.CreateTopics(ctx, &kafkago.CreateTopicsRequest{Topics: []kafkago.TopicConfig{tc}})
	if err != nil {
		return err
	}
	if err := resp.Errors[s.o.topic]; err != nil && !errors.Is(err, kafkago.TopicAlreadyExists) {
		// Without the right to create it, the topic may still exist.
		md, merr := cl.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{s.o.topic}})
		if merr != nil || len(md.Topics) != 1 || md.Topics[0].Error != nil {
			return err
		}
	}
	return nil
}

// Close implements connector.Sink.
func (s *sinkWriter) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil
	}
	s.mu.closed = true
	err := s.w.Close()
	s.transport.CloseIdleConnections()
	return err
}
