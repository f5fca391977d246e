package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"sluice/connectors/internal/encode"
	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// Factory is the redis sink connector.
type Factory struct{}

func init() { connector.RegisterSink("redis", Factory{}) }

// ioTimeout bounds dialing and every read and write on the connection.
// A variable so that tests can shorten it.
var ioTimeout = 5 * time.Second

// Chunk limits of one MULTI/EXEC transaction (see the package comment).
// Variables so that tests can shorten them.
var (
	maxChunkChanges = 100_000
	maxChunkBytes   = 16 << 20
)

// maxRun is the most keys in one MSET or DEL command of a transaction.
const maxRun = 1000

// knownOptions are the options a redis sink accepts: its own and those
// every sink shares.
var knownOptions = map[string]bool{
	"connector": true, "redis.url": true, "primary_key": true,
	"delivery": true, "write_mode": true, "type": true, "force_append_only": true,
}

// Validate implements connector.SinkFactory. It parses the URL but does
// not connect.
func (Factory) Validate(cfg connector.SinkConfig) (connector.SinkPlan, error) {
	if _, err := parse(cfg); err != nil {
		return connector.SinkPlan{}, err
	}
	return connector.SinkPlan{WriteMode: connector.ModeUpsert, Guarantee: connector.ExactlyOnce}, nil
}

func parse(cfg connector.SinkConfig) (*goredis.Options, error) {
	for k := range cfg.Options {
		if !knownOptions[k] {
			return nil, connector.OptionError("redis", k, "unknown option")
		}
	}
	url, ok := cfg.Options["redis.url"]
	if !ok || strings.TrimSpace(url) == "" {
		return nil, connector.OptionError("redis", "redis.url", "is required (e.g. 'redis://127.0.0.1:6379/0')")
	}
	opts, err := goredis.ParseURL(url)
	if err != nil {
		return nil, connector.OptionError("redis", "redis.url", "%v", err)
	}
	if err := cfg.Policy.CheckAddr("redis", opts.Addr, 6379); err != nil {
		return nil, err
	}
	if len(cfg.Key) == 0 {
		return nil, connector.OptionError("redis", "primary_key",
			"is required: every row is stored under a key built from its primary key")
	}
	if m := strings.ToLower(cfg.WriteMode); m != "" && m != connector.ModeUpsert {
		return nil, connector.OptionError("redis", "write_mode", "%q is not supported: a redis sink writes in upsert mode", cfg.WriteMode)
	}
	if f := strings.ToUpper(cfg.Format); f != "" && f != "PLAIN" && f != "UPSERT" {
		return nil, pgerror.New(pgcode.FeatureNotSupported, "a redis sink does not support FORMAT %s", cfg.Format).
			WithHint("use FORMAT PLAIN or FORMAT UPSERT with ENCODE JSON")
	}
	if e := strings.ToUpper(cfg.Encode); e != "" && e != "JSON" {
		return nil, pgerror.New(pgcode.FeatureNotSupported, "a redis sink does not support ENCODE %s", cfg.Encode).
			WithHint("rows are stored as JSON: use ENCODE JSON")
	}
	for _, d := range []*time.Duration{&opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout} {
		if *d <= 0 || *d > ioTimeout {
			*d = ioTimeout
		}
	}
	opts.MaxRetries = -1 // the runtime retries a failed Write; we must not hang
	opts.ContextTimeoutEnabled = true
	opts.PoolSize = 2
	opts.DisableIdentity = true
	return opts, nil
}

// Open implements connector.SinkFactory. It does not connect: the first
// Write or LastEpoch does.
func (Factory) Open(ctx context.Context, cfg connector.SinkConfig) (connector.Sink, error) {
	opts, err := parse(cfg)
	if err != nil {
		return nil, err
	}
	return &Sink{
		cfg:      cfg,
		client:   goredis.NewClient(opts),
		prefix:   cfg.Name + ":",
		epochKey: "sluice:sink:" + strconv.FormatUint(cfg.ID, 10) + ":epoch",
	}, nil
}

// Sink writes epochs to Redis. Write and LastEpoch are called from one
// goroutine.
type Sink struct {
	cfg      connector.SinkConfig
	client   *goredis.Client
	prefix   string
	epochKey string

	buf  []byte // encoded keys and values of the current chunk
	offs []int  // end offsets in buf: key, value, key, value, …
	args []any
}

var (
	_ connector.Sink     = (*Sink)(nil)
	_ connector.Progress = (*Sink)(nil)
)

// Write applies the changes of epoch unless an epoch at least as new has
// been applied.
func (s *Sink) Write(ctx context.Context, epoch uint64, changes []Change) error {
	for start := 0; ; {
		end := s.encodeChunk(changes, start)
		last := end == len(changes)
		applied, err := s.apply(ctx, epoch, last)
		if err != nil {
			return pgerror.Wrap(err, pgcode.ConnectionException, "redis sink %s: writing epoch %d", s.cfg.Name, epoch)
		}
		if !applied || last {
			// Not applied: the stored epoch is already >= epoch, so every
			// chunk of it was written before.
			return nil
		}
		start = end
	}
}

// Change is connector.Change (a shorter name for this file).
type Change = connector.Change

// encodeChunk encodes changes[start:] into s.buf until a chunk limit is
// reached and returns the end of the chunk.
func (s *Sink) encodeChunk(changes []Change, start int) int {
	s.buf, s.offs = s.buf[:0], s.offs[:0]
	i := start
	for ; i < len(changes) && i-start < maxChunkChanges && len(s.buf) < maxChunkBytes; i++ {
		c := changes[i]
		row := c.After
		if row == nil {
			row = c.Before
		}
		if row == nil {
			continue
		}
		s.buf = append(s.buf, s.prefix...)
		s.buf = encode.KeyText(s.buf, s.cfg.Columns, s.cfg.Key, row, ':')
		s.offs = append(s.offs, len(s.buf))
		if c.After != nil {
			s.buf = encode.JSON(s.buf, s.cfg.Columns, c.After)
		}
		s.offs = append(s.offs, len(s.buf))
	}
	return i
}

// apply writes the chunk in s.buf in one transaction, guarded by the epoch
// key: WATCH it, read it, and queue the writes only if epoch is newer;
// EXEC fails if the key changed in between. It reports false when the
// stored epoch was already >= epoch.
func (s *Sink) apply(ctx context.Context, epoch uint64, record bool) (applied bool, err error) {
	// Every command's arguments are a sub-slice of one array, so that a
	// chunk costs one allocation for them; the pipeline keeps them until
	// EXEC.
	n := len(s.offs) / 2
	s.args = s.args[:0]
	var cmds [][]any
	prev := 0
	for j := 0; j < n; {
		del := s.offs[2*j] == s.offs[2*j+1] // no value: a delete
		from := len(s.args)
		if del {
			s.args = append(s.args, "del")
		} else {
			s.args = append(s.args, "mset")
		}
		for k := 0; j < n && k < maxRun && (s.offs[2*j] == s.offs[2*j+1]) == del; j, k = j+1, k+1 {
			s.args = append(s.args, s.buf[prev:s.offs[2*j]])
			if !del {
				s.args = append(s.args, s.buf[s.offs[2*j]:s.offs[2*j+1]])
			}
			prev = s.offs[2*j+1]
		}
		cmds = append(cmds, s.args[from:len(s.args):len(s.args)])
	}
	defer clear(s.args) // drop references to s.buf
	err = s.client.Watch(ctx, func(tx *goredis.Tx) error {
		stored, err := readEpoch(ctx, tx, s.epochKey)
		if err != nil || stored >= epoch {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			connector.Crashpoint("sink-before-commit")
			for _, args := range cmds {
				p.Do(ctx, args...)
			}
			if record {
				p.Set(ctx, s.epochKey, strconv.FormatUint(epoch, 10), 0)
			}
			return nil
		})
		applied = err == nil
		return err
	}, s.epochKey)
	if errors.Is(err, goredis.TxFailedErr) {
		err = fmt.Errorf("key %s changed during the write: is another writer using this sink id?", s.epochKey)
	}
	return applied, err
}

// readEpoch returns the epoch stored at key, 0 if there is none.
func readEpoch(ctx context.Context, c goredis.Cmdable, key string) (uint64, error) {
	v, err := c.Get(ctx, key).Result()
	if errors.Is(err, goredis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	e, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, pgerror.New(pgcode.DataException, "key %s holds %q, not an epoch", key, v)
	}
	return e, nil
}

// LastEpoch implements connector.Progress: the epoch stored in the epoch
// key, 0 if there is none.
func (s *Sink) LastEpoch(ctx context.Context) (uint64, error) {
	e, err := readEpoch(ctx, s.client, s.epochKey)
	if err != nil {
		return 0, pgerror.Wrap(err, pgcode.ConnectionException, "redis sink %s: reading its last epoch", s.cfg.Name)
	}
	return e, nil
}

// Close implements connector.Sink.
func (s *Sink) Close() error { return s.client.Close() }
