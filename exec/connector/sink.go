package connector

import (
	"context"
	"sort"
	"strings"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Guarantee is a delivery guarantee; a larger value is stronger.
type Guarantee int

// Delivery guarantees, weakest first.
const (
	AtMostOnce Guarantee = iota
	AtLeastOnce
	ExactlyOnce
)

func (g Guarantee) String() string {
	switch g {
	case AtMostOnce:
		return "AT_MOST_ONCE"
	case AtLeastOnce:
		return "AT_LEAST_ONCE"
	}
	return "EXACTLY_ONCE"
}

// ParseGuarantee reads a delivery option value (case-insensitive).
func ParseGuarantee(s string) (Guarantee, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "EXACTLY_ONCE", "EXACTLY ONCE", "":
		return ExactlyOnce, nil
	case "AT_LEAST_ONCE", "AT LEAST ONCE":
		return AtLeastOnce, nil
	case "AT_MOST_ONCE", "AT MOST ONCE":
		return AtMostOnce, nil
	}
	return 0, pgerror.New(pgcode.InvalidParameterValue, "invalid delivery %q", s).
		WithHint("delivery is EXACTLY_ONCE, AT_LEAST_ONCE or AT_MOST_ONCE")
}

// Write modes of a sink (design.md §2).
const (
	ModeAppend        = "append"        // every change is written as a new record
	ModeUpsert        = "upsert"        // writes keyed by the primary key; deletes remove the key
	ModeTransactional = "transactional" // one external transaction per epoch with a progress marker
)

// SinkConfig is what a sink is created with. The runtime resolves the
// options that every sink shares (delivery, write_mode, primary_key,
// FORMAT … ENCODE …) before the connector sees it.
type SinkConfig struct {
	Name    string // the sink's name
	ID      uint64 // catalog id: stable across restarts, unique per sink
	Columns []types.Column
	// Key holds the positions of the primary_key columns (nil: none).
	Key []int
	// AppendOnly is true when the input never retracts a row (a source,
	// or a view over sources without aggregation or outer joins).
	AppendOnly bool
	// Options are the WITH options, keys lower-case.
	Options map[string]string
	// Format is PLAIN, UPSERT or DEBEZIUM ("" if not given); Encode is
	// JSON or CSV ("" if not given). FormatOptions are the options after
	// FORMAT … ENCODE … (…).
	Format, Encode string
	FormatOptions  map[string]string
	// WriteMode is the user's write_mode ("" if not given) in Validate and
	// the resolved one in Open.
	WriteMode string
	// Policy confines the files and hosts the sink may use (nil in unit
	// tests: unconfined).
	Policy *Policy
}

// SinkPlan is what a sink connector decides about a configuration.
type SinkPlan struct {
	// WriteMode is the mode the sink will use: cfg.WriteMode if given,
	// else the natural one for the connector and format.
	WriteMode string
	// Guarantee is the strongest guarantee the sink gives in that mode,
	// assuming the engine replays every change after the last committed
	// epoch (the runtime delivers committed epochs in order, and again
	// after a crash until Write succeeds).
	Guarantee Guarantee
	// Why explains a guarantee below ExactlyOnce (shown as the weakest link).
	Why string
	// Discard is true for a sink that drops everything (blackhole): the
	// runtime keeps no sink log for it.
	Discard bool
}

// Change is the net effect of one epoch on one key (keyed sinks) or one
// row change (unkeyed). Before is nil for an insert, After is nil for a
// delete; both are set for an update of a key. Appended rows have only After.
type Change struct {
	Before, After types.Row
}

// Sink writes the changes of committed epochs to an external system.
//
// Write is called from one goroutine, in epoch order, only for epochs
// that are durable in Sluice, and only for epochs with changes. After a
// failed Write, or after a crash, the same epoch is written again with
// the same changes until Write succeeds: a sink that claims ExactlyOnce
// must make that repeat harmless (idempotent keyed writes, or a progress
// marker committed atomically with the data). Write must give up and
// return an error rather than block forever when the system is down; the
// runtime retries with backoff.
type Sink interface {
	Write(ctx context.Context, epoch uint64, changes []Change) error
	Close() error
}

// Changes hands over one epoch's changes in pieces, in order: it calls
// yield with each piece (valid only during the call) and returns the
// first error yield or the decoding returns. It may be called again (a
// retried write) and gives the same pieces.
type Changes func(yield func([]Change) error) error

// StreamSink is implemented by sinks that can take an epoch's changes in
// pieces (WriteChanges has Write's contract): the runtime then does not
// hold a large epoch's rows decoded all at once (README, "Memory").
type StreamSink interface {
	WriteChanges(ctx context.Context, epoch uint64, changes Changes) error
}

// WireEncoder is implemented by sink factories whose sinks, for some
// configurations, write each change of an append-only sink as bytes that
// depend only on the change and the configuration (not on the epoch or
// the other changes): a file sink's FORMAT PLAIN lines. The runtime then
// encodes the changes as they come, while the epoch runs, and hands an
// epoch it still holds in memory to the sink as those bytes (WireSink),
// without decoding the sink log's form of it again; an epoch read back
// from the log (after a restart) goes through Write as before.
type WireEncoder interface {
	// WireEncoder returns the function appending one change's bytes to
	// buf, or nil when cfg is not such a configuration.
	WireEncoder(cfg SinkConfig) func(buf []byte, c Change) ([]byte, error)
}

// WireSink is implemented by the sinks of a WireEncoder factory: WriteWire
// has Write's contract for an epoch given as the encoder's bytes of its
// changes, in order, split in pieces.
type WireSink interface {
	WriteWire(ctx context.Context, epoch uint64, pieces [][]byte) error
}

// Progress is implemented by sinks that record the last epoch they
// applied in the external system (transactional sinks). The runtime asks
// once after Open and skips epochs up to it.
type Progress interface {
	LastEpoch(ctx context.Context) (uint64, error)
}

// SinkFactory creates sinks for one connector.
type SinkFactory interface {
	// Validate checks the configuration at CREATE SINK time, without
	// connecting anywhere, and says how the sink will write.
	Validate(cfg SinkConfig) (SinkPlan, error)
	Open(ctx context.Context, cfg SinkConfig) (Sink, error)
}

// Unreplayable is implemented by source factories whose sources cannot
// seek back to a checkpointed position (a socket): the pipelines reading
// them are at most once. It returns why.
type Unreplayable interface {
	Unreplayable(cfg SourceConfig) string
}

var sinks struct {
	m map[string]SinkFactory
}

// RegisterSink makes a sink connector available by name.
func RegisterSink(name string, f SinkFactory) {
	registry.Lock()
	defer registry.Unlock()
	if sinks.m == nil {
		sinks.m = map[string]SinkFactory{}
	}
	sinks.m[name] = f
}

// LookupSink returns the sink connector called name.
func LookupSink(name string) (SinkFactory, error) {
	registry.Lock()
	defer registry.Unlock()
	f, ok := sinks.m[name]
	if !ok {
		var names []string
		for n := range sinks.m {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, pgerror.New(pgcode.FeatureNotSupported, "unknown sink connector %q", name).
			WithHint("available sink connectors: %v", names)
	}
	return f, nil
}

// KeyColumns resolves a comma-separated primary_key option against cols.
func KeyColumns(cols []types.Column, opt string) ([]int, error) {
	if strings.TrimSpace(opt) == "" {
		return nil, nil
	}
	var key []int
	for _, name := range strings.Split(opt, ",") {
		name = strings.TrimSpace(name)
		found := -1
		for i, c := range cols {
			if strings.EqualFold(c.Name, name) {
				found = i
				break
			}
		}
		if found < 0 {
			return nil, pgerror.New(pgcode.UndefinedColumn, "primary_key column %q does not exist", name)
		}
		key = append(key, found)
	}
	return key, nil
}
