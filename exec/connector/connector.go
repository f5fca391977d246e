// Package connector defines what a source or sink connector implements and
// keeps the registry of connectors by name. Connector packages import only
// this package, the sql leaf packages and their client library; cmd/sluice
// registers them explicitly.
//
// Lifecycle of a source reader: Open is called once per job; then Read is
// called repeatedly from one goroutine, interleaved with Position when a
// checkpoint barrier passes; Close ends it. Reads are never concurrent.
package connector

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// SourceConfig is what a source is created with.
type SourceConfig struct {
	Name    string
	Columns []types.Column
	// Key holds the positions of the declared PRIMARY KEY columns (nil:
	// none). FORMAT UPSERT sources need one.
	Key []int
	// Options are the WITH options (keys lower-case) plus "format" and
	// "encode" from FORMAT … ENCODE … when given.
	Options map[string]string
	// Policy confines the files, ports and hosts the source may use (nil
	// in unit tests: unconfined).
	Policy *Policy
}

// Upsert semantics of a source batch (FORMAT UPSERT): a row with diff +1
// replaces the row with the same key (or inserts it); a row with diff -1
// deletes the key (only its key columns need be set). The engine turns
// these into exact retractions with a keyed operator after the source.
// Sources of other formats emit ordinary changes (+1 insert, -1 delete of
// that exact row, as a Debezium envelope gives them).

// DeadLetter is a record a source could not decode.
type DeadLetter struct {
	Topic     string // or the source's own name for what it read
	Partition int32
	Offset    int64
	Error     string
	Raw       []byte
}

// DeadLetterSource is implemented by sources whose on_error is skip or
// dead_letter: instead of failing, Read passes bad records by and
// TakeDeadLetters returns (and forgets) the ones met since the last call.
// The engine counts them and, for dead_letter, stores them with the
// checkpoint. A record is taken exactly once per read of it: after
// recovery the replayed bad records are taken again, and the engine's
// store of them rolls back with the checkpoint, so none is lost or doubled.
type DeadLetterSource interface {
	TakeDeadLetters(buf []DeadLetter) []DeadLetter
}

// BadRecord returns the error a source with on_error = 'fail' stops with:
// it names the topic, partition, offset and cause.
func BadRecord(source, topic string, partition int32, offset int64, cause string) error {
	return pgerror.New(pgcode.InvalidTextRepresentation, "source %s: bad record at topic %s partition %d offset %d: %s",
		source, topic, partition, offset, cause)
}

// Source reads rows of a source. Read appends up to max rows to b and
// returns how many it added; it must not block for more than about 10ms
// when no data is available (return 0 then), so that barriers are not held
// up. io.EOF means a bounded source is exhausted for good: no row will
// ever follow (its watermark, if it has one, goes to the end of time and
// closes every window), so a source that may grow returns 0 instead.
type Source interface {
	Read(ctx context.Context, b *types.Batch, max int) (int, error)
	Close() error
}

// Seekable is a replayable source: its position after the rows read so far
// can be saved in a checkpoint and restored.
type Seekable interface {
	Position() []byte
	Seek(pos []byte) error
}

// Metered is an optional capability of a Source: figures for metrics.
// Meter is called on the reading goroutine, between Reads (at each
// barrier), so it needs no locking of its own.
type Metered interface {
	Meter() SourceMeter
}

// SourceMeter is what a Metered source reports.
type SourceMeter struct {
	// Bytes counts the bytes read from the external system since the
	// reader opened (-1: not known).
	Bytes int64
	// Lag is how far the reader is behind, per partition.
	Lag []PartitionLag
}

// PartitionLag is a reader's lag on one partition ("" for sources without
// partitions): offsets behind the high watermark (Kafka) or events due and
// not yet generated (generators with a rate or a bounded count).
type PartitionLag struct {
	Partition string
	Behind    int64
}

// SourceFactory creates source readers for one connector.
type SourceFactory interface {
	// Validate checks options and columns at CREATE SOURCE time and returns
	// the columns the source produces (those declared, or the connector's
	// own schema when none were declared).
	Validate(cfg SourceConfig) ([]types.Column, error)
	Open(ctx context.Context, cfg SourceConfig) (Source, error)
}

var registry struct {
	sync.Mutex
	sources map[string]SourceFactory
}

// RegisterSource makes a source connector available by name.
func RegisterSource(name string, f SourceFactory) {
	registry.Lock()
	defer registry.Unlock()
	if registry.sources == nil {
		registry.sources = map[string]SourceFactory{}
	}
	registry.sources[name] = f
}

// LookupSource returns the source connector called name.
func LookupSource(name string) (SourceFactory, error) {
	registry.Lock()
	defer registry.Unlock()
	f, ok := registry.sources[name]
	if !ok {
		var names []string
		for n := range registry.sources {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, pgerror.New(pgcode.FeatureNotSupported, "unknown source connector %q", name).
			WithHint("available source connectors: %v", names)
	}
	return f, nil
}

// OptionError returns a 22023 error about a connector option.
func OptionError(connector, key, format string, args ...any) error {
	return pgerror.New(pgcode.InvalidParameterValue, "%s option %s: %s", connector, key, fmt.Sprintf(format, args...))
}

// Committer is implemented by replayable sources that must tell their
// upstream how far a durable checkpoint covers (a PostgreSQL replication
// slot's confirmed position). After the checkpoint that saved a Position
// is durable, the runtime calls Committed with that position, from the
// goroutine that calls Read, and never with a position of an epoch that
// did not commit.
type Committer interface {
	Committed(pos []byte)
}

// Statuser is implemented by sources that keep working through trouble
// they retry (an upstream that is down): Status returns the last such
// error, or "" when healthy. SHOW SOURCES shows it.
type Statuser interface {
	Status() string
}

// ChangeSource is implemented by source factories whose rows are keyed
// changes of an upstream table (CDC): the server reads them as FORMAT
// UPSERT (a keyed operator turns them into exact retractions), and
// CREATE TABLE … WITH (connector = …) creates such a source.
type ChangeSource interface {
	KeyedChanges()
}
