package cdc

import (
	"context"
	"time"

	"sluice/exec/connector"
	"sluice/sql/types"
)

var (
	_ connector.SourceFactory = (*Factory[int])(nil)
	_ connector.ChangeSource  = (*Factory[int])(nil)
)

// Factory does what every CDC source factory does around the connector's
// own parse, probe and reader: it probes the upstream at CREATE and again
// when a job opens the source (an upstream that cannot be reached is not
// an error there: the source retries once it runs), and claims what the
// reader reads alone.
type Factory[C any] struct {
	// Parse checks the options without connecting anywhere.
	Parse func(connector.SourceConfig) (C, error)
	// Probe checks the upstream: credentials, settings, the table.
	Probe func(context.Context, C) error
	// Transient reports whether retrying may cure an error of Probe.
	Transient func(error) bool
	// Claim takes what the reader reads alone (a replication slot, a
	// replica's server id), or says which job holds it.
	Claim func(C) error
	// NewReader returns the source, which reads from its first Read.
	NewReader func(C) connector.Source
}

// probeTimeout bounds the probe of CREATE and Open.
const probeTimeout = 10 * time.Second

func (f *Factory[C]) check(ctx context.Context, cfg connector.SourceConfig) (C, error) {
	c, err := f.Parse(cfg)
	if err != nil {
		return c, err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if err := f.Probe(ctx, c); err != nil && !f.Transient(err) {
		return c, err
	}
	return c, nil
}

// Validate implements connector.SourceFactory: the options, then a probe
// of the upstream.
func (f *Factory[C]) Validate(cfg connector.SourceConfig) ([]types.Column, error) {
	if _, err := f.check(context.Background(), cfg); err != nil {
		return nil, err
	}
	return cfg.Columns, nil
}

// Open implements connector.SourceFactory: Validate's checks, then the
// claim; the reading starts with the first Read.
func (f *Factory[C]) Open(ctx context.Context, cfg connector.SourceConfig) (connector.Source, error) {
	c, err := f.check(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := f.Claim(c); err != nil {
		return nil, err
	}
	return f.NewReader(c), nil
}

// KeyedChanges implements connector.ChangeSource: a CDC source emits
// keyed changes (FORMAT UPSERT semantics).
func (f *Factory[C]) KeyedChanges() {}
