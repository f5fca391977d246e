package blackhole

import (
	"context"
	"strings"
	"sync/atomic"

	"sluice/exec/connector"
)

// Factory is the blackhole sink connector.
type Factory struct{}

func init() { connector.RegisterSink("blackhole", Factory{}) }

// Validate implements connector.SinkFactory. Every write mode is trivially
// honoured; the natural one is append.
func (Factory) Validate(cfg connector.SinkConfig) (connector.SinkPlan, error) {
	mode := connector.ModeAppend
	switch m := strings.ToLower(cfg.WriteMode); m {
	case "":
	case connector.ModeAppend, connector.ModeUpsert, connector.ModeTransactional:
		mode = m
	default:
		return connector.SinkPlan{}, connector.OptionError("blackhole", "write_mode",
			"%q is not a write mode (append, upsert or transactional)", cfg.WriteMode)
	}
	return connector.SinkPlan{Discard: true, Guarantee: connector.ExactlyOnce, WriteMode: mode}, nil
}

// Open implements connector.SinkFactory.
func (f Factory) Open(ctx context.Context, cfg connector.SinkConfig) (connector.Sink, error) {
	if _, err := f.Validate(cfg); err != nil {
		return nil, err
	}
	return &Sink{}, nil
}

// Sink discards changes, counting them.
type Sink struct {
	changes atomic.Uint64
}

// Write implements connector.Sink.
func (s *Sink) Write(ctx context.Context, epoch uint64, changes []connector.Change) error {
	s.changes.Add(uint64(len(changes)))
	return nil
}

// Changes returns how many changes Write was given; safe to call from any
// goroutine.
func (s *Sink) Changes() uint64 { return s.changes.Load() }

// Close implements connector.Sink.
func (s *Sink) Close() error { return nil }
