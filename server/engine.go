package server

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/exec/connector"
	"sluice/exec/flow"
	"sluice/exec/job"
	"sluice/planner"
	"sluice/server/pgwire"
	"sluice/sql/parser"
	"sluice/storage"
)

// Config configures an Engine.
type Config struct {
	DataDir            string
	CheckpointInterval time.Duration
	// StateCacheBytes is the memory operators keep state in before they
	// spill to the store (0: storage.DefaultStateCacheBytes).
	StateCacheBytes int64
	// Memory is what the store's caches may use (zero fields: its
	// defaults); cmd/sluice divides --memory-limit into it.
	Memory storage.MemorySizes
	// Recover starts from what remains of a damaged store instead of
	// refusing to start (storage.OpenOptions.Recover).
	Recover bool
	// DiskReserveBytes is the free disk space writes leave for the
	// store's own work (0: storage.DefaultReserveBytes).
	DiskReserveBytes uint64
	Logf             func(format string, args ...any)
	// Policy confines connectors (nil: DefaultFileRoot, the default
	// socket ports, any host; see confine.go). SecretKeyFile is the key of
	// the stored secrets ("": <data-dir>/secret.key; see secret.go).
	Policy        *connector.Policy
	SecretKeyFile string
	// Auth configures roles and what SHOW reports of the connection
	// limits (role.go).
	Auth AuthConfig
	// NoMetrics runs the dataflow without its per-actor figures (the
	// metrics of sources, operators; sluice bench --no-metrics).
	NoMetrics bool
	// SlowCheckpoint: a checkpoint slower than it is logged (0: none).
	SlowCheckpoint time.Duration
	// StuckBarrier: an epoch not committed after it is logged with the
	// operators that hold its barrier (0: never; see BarrierReport).
	StuckBarrier time.Duration
}

// Engine is one Sluice server's SQL engine: it implements pgwire.Handler.
type Engine struct {
	lagHist lagHistory // laghistory.go
	cfg     Config
	db      *storage.DB
	coord   *flow.Coordinator
	rt      *job.Runtime
	cat     *catalog
	roles   *roleCatalog // role.go
	// metrics is the engine's Prometheus registry (metrics.go).
	metrics *metrics

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	tablesMu sync.Mutex
	tables   map[uint64]*tableWriter
	seqs     sequenceSet // loaded sequences (sequence.go)

	// replaying is set at startup when a table has logged writes after its
	// checkpoint.
	replaying bool

	nextPID int32
	pidMu   sync.Mutex

	// ddlRole is the role of the DDL statement running, set by ddl under
	// the coordinator's DDL lock: the owner of the entries it creates
	// (privilege.go).
	ddlRole string
}

// Open opens the data directory, restores every table, source and view at
// the last committed epoch, and starts checkpointing.
func Open(cfg Config) (*Engine, error) {
	if cfg.CheckpointInterval <= 0 {
		cfg.CheckpointInterval = time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	logs := &redactingLogf{logf: cfg.Logf} // redact.go
	cfg.Logf = logs.Logf
	db, err := storage.OpenWith(cfg.DataDir, storage.OpenOptions{Recover: cfg.Recover, ReserveBytes: cfg.DiskReserveBytes, Logf: cfg.Logf, Memory: cfg.Memory})
	if err != nil {
		return nil, err
	}
	if cfg.StateCacheBytes > 0 {
		db.StateCache().SetLimit(cfg.StateCacheBytes)
	}
	entries, next, err := db.LoadCatalog()
	if err != nil {
		db.Close()
		return nil, err
	}
	// A creation cut off by a crash may have committed its catalog entry
	// (pendingddl.go): it is not in the catalog.
	pending, err := loadPending(db)
	if err != nil {
		db.Close()
		return nil, err
	}
	entries, uncreated := splitUncreated(entries, pending)
	roles, err := openRoles(db, cfg.Auth.Superuser, cfg.Auth.SuperuserPassword)
	if err != nil {
		db.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{cfg: cfg, db: db, ctx: ctx, cancel: cancel, tables: map[uint64]*tableWriter{}, roles: roles}
	e.cat = newCatalog(entries, next)
	logs.e.Store(e)
	e.cat.system = systemRelations(e)
	e.coord = flow.NewCoordinator(db, cfg.CheckpointInterval, cfg.Logf)
	e.rt = job.NewRuntime(ctx, db, e.coord, cfg.Logf)
	e.rt.NoStats = cfg.NoMetrics
	e.rt.Sinks = map[string]connector.SinkFactory{intoConnector: intoFactory{e}}
	e.rt.OnCancelled = cancelledCatalog
	e.rt.OnCreated = createdPending
	e.metrics = newMetrics(e)
	if err := e.setupPolicy(); err != nil {
		cancel()
		db.Close()
		return nil, err
	}
	if err := e.restoreAll(entries); err != nil {
		cancel()
		e.rt.Wait()
		db.Close()
		return nil, err
	}
	connector.Crashpoint("recovery")
	e.rt.Start()
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.coord.Run(ctx)
	}()
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.runLagHistory(ctx)
	}()
	if cfg.StuckBarrier > 0 {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.rt.WatchBarriers(ctx, cfg.StuckBarrier)
		}()
	}
	// Acknowledged writes that no checkpoint covered are replayed from the
	// tables' logs: commit them before the first client reads, so that a
	// write acknowledged before a crash is visible to every read after it.
	if e.replaying {
		if err := e.replayTables(ctx); err != nil {
			e.Close()
			return nil, fmt.Errorf("committing the replayed table writes: %w", err)
		}
	}
	if err := e.dropUncreated(ctx, uncreated); err != nil {
		e.Close()
		return nil, fmt.Errorf("removing the creations cut off by a restart: %w", err)
	}
	if err := e.resumePending(ctx); err != nil {
		e.Close()
		return nil, fmt.Errorf("resuming the background creations: %w", err)
	}
	return e, nil
}

// replayLogEvery is how often a replay at startup logs its progress.
var replayLogEvery = 2 * time.Second

// replayTables commits the tables' logged writes that no checkpoint
// covered, logging what there is to replay, its progress every
// replayLogEvery, and when it is done.
func (e *Engine) replayTables(ctx context.Context) error {
	type replay struct {
		name    string
		from, n uint64
		src     *flow.TableSource
	}
	var reps []replay
	e.tablesMu.Lock()
	for _, tw := range e.tables {
		if n := tw.src.Backlog(); n > 0 {
			reps = append(reps, replay{name: tw.name, from: tw.src.Sent(), n: uint64(n), src: tw.src})
		}
	}
	e.tablesMu.Unlock()
	sort.Slice(reps, func(i, j int) bool { return reps[i].name < reps[j].name })
	for _, r := range reps {
		e.cfg.Logf("replay: table %s: %d logged writes after its checkpoint", r.name, r.n)
	}
	start := time.Now()
	stop := everyTick(replayLogEvery, func() {
		for _, r := range reps {
			sent := min(r.src.Sent()-r.from, r.n)
			e.cfg.Logf("replay: table %s: %d of %d logged writes sent (%.0f%%), %s",
				r.name, sent, r.n, 100*float64(sent)/float64(r.n), time.Since(start).Round(time.Second))
		}
	})
	err := e.coord.Flush(ctx)
	stop()
	if err == nil {
		e.cfg.Logf("replay: the logged writes of %d tables committed in %s", len(reps), time.Since(start).Round(time.Millisecond))
	}
	return err
}

// everyTick calls f every d on a goroutine of its own until the returned
// stop is called; stop returns once that goroutine has ended.
func everyTick(d time.Duration, f func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				f()
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// restoreHook, if set, is called before each object is started (tests).
var restoreHook func(*storage.CatalogEntry)

// restoreAll starts the catalog's objects at startup. Their operators
// read their state whole (windows, joins, aggregations, materializations):
// with much state that takes a while, so the keys read so far and the
// object being started are logged every replayLogEvery, and the total at
// the end.
func (e *Engine) restoreAll(entries []*storage.CatalogEntry) error {
	start, base := time.Now(), e.db.Scanned()
	var cur atomic.Pointer[storage.CatalogEntry]
	var idx atomic.Int64
	stop := everyTick(replayLogEvery, func() {
		if ent := cur.Load(); ent != nil {
			e.cfg.Logf("load: starting %s %s (%d of %d objects): %d state keys read, %s", ent.Kind, ent.Name, idx.Load()+1, len(entries),
				e.db.Scanned()-base, time.Since(start).Round(time.Second))
		}
	})
	var err error
	for i, ent := range entries {
		idx.Store(int64(i))
		cur.Store(ent)
		if restoreHook != nil {
			restoreHook(ent)
		}
		if err = e.restore(ent); err != nil {
			err = fmt.Errorf("restoring %s %q: %w", ent.Kind, ent.Name, err)
			break
		}
	}
	stop()
	if err == nil && len(entries) > 0 {
		e.cfg.Logf("load: %d objects started in %s, %d state keys read", len(entries), time.Since(start).Round(time.Millisecond), e.db.Scanned()-base)
	}
	return err
}

// restore starts a catalog object at startup (no backfill: state comes
// from the checkpoint).
func (e *Engine) restore(ent *storage.CatalogEntry) error {
	e.restoreRetention(ent)
	switch ent.Kind {
	case kindTable:
		return e.startTable(ent)
	case kindMView, kindSink:
		return e.restoreJob(ent)
	}
	return nil
}

func (e *Engine) newPlanner() *planner.Planner {
	return &planner.Planner{
		Cat:           e.cat,
		AppendOnlyRel: e.appendOnlyRel,
		Funcs:         e.lookupFunc,
		Access:        e.checkAccess,
		ParseType:     parser.ParseType,
		ParseView: func(s string) (*parser.Query, error) {
			st, err := parser.ParseOne(s)
			if err != nil {
				return nil, err
			}
			q, ok := st.(*parser.Query)
			if !ok {
				return nil, fmt.Errorf("view body is not a query")
			}
			return q, nil
		},
		ParseQuery: func(s string) (ast.StmtNode, error) {
			st, err := parser.ParseOne(s)
			if err != nil {
				return nil, err
			}
			q, ok := st.(*parser.Query)
			if !ok {
				return nil, fmt.Errorf("view body is not a query")
			}
			return q.Node, nil
		},
	}
}

// viewPlanner returns a planner for the query of CREATE MATERIALIZED VIEW x:
// its table functions (TUMBLE, HOP), EMIT ON WINDOW CLOSE and the
// session's TimeZone.
func (e *Engine) viewPlanner(ctx context.Context, x *parser.CreateMaterializedView) *planner.Planner {
	p := e.newPlanner()
	p.TimeZone = zoneOf(ctx) // the view keeps its creator's TimeZone
	if x.Parsed != nil {
		p.TableFuncs, p.Nulls = x.Parsed.TableFuncs, x.Parsed.Nulls
		p.ColumnAliases = x.Parsed.ColumnAliases
	}
	p.EmitOnWindowClose = x.EmitOnWindowClose
	return p
}

// Close stops checkpointing and every job, and closes the store. Work not
// yet checkpointed is recovered from logs and sources on the next start.
func (e *Engine) Close() error {
	e.cancel()
	e.wg.Wait()
	e.rt.Wait()
	return e.db.Close()
}

// Connect implements pgwire.Handler.
func (e *Engine) Connect(ctx context.Context, p pgwire.StartupInfo) (pgwire.Session, error) {
	s, err := e.connect(p)
	if err == nil {
		e.metrics.connections.Inc()
		e.metrics.connectionsTotal.Inc()
	}
	return s, err
}

// BarrierReport reports on the oldest epoch in flight (the operators that
// have not passed its barrier); ok is false when every injected epoch has
// committed.
func (e *Engine) BarrierReport() (job.BarrierReport, bool) {
	return e.rt.Barriers(0)
}
