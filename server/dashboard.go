package server

import (
	"context"
	"strings"
	"sync"
	"time"

	"sluice/exec/flow"
	"sluice/exec/job"
	"sluice/sql/types"
)

// This file gathers what the web dashboard shows (cmd/sluice serves it
// with the assets of package web: README, "Dashboard"). It reads the same
// figures /metrics reports — the actors', sources' and deliverers' atomic
// counters (exec/flow/stats.go), the coordinator's checkpoint history and
// SHOW SINKS' row — and adds the shape of each job's dataflow: which actor
// feeds which, found from the channels their outputs are attached to.
// Counters are cumulative; the page turns them into rates between two
// snapshots, so that taking a snapshot changes nothing.

// DashboardState is one snapshot of the running server.
type DashboardState struct {
	Time time.Time `json:"time"`
	// Committed is the last committed epoch; InFlight the epochs injected
	// and not yet committed.
	Committed       uint64           `json:"committed_epoch"`
	InFlight        int              `json:"epochs_in_flight"`
	StateCacheBytes int64            `json:"state_cache_bytes"`
	StateCacheLimit int64            `json:"state_cache_limit_bytes"`
	Catalog         []DashObject     `json:"catalog"`
	Jobs            []DashJob        `json:"jobs"`
	Sources         []DashSource     `json:"sources"`
	Sinks           []DashSink       `json:"sinks"`
	Checkpoints     []DashCheckpoint `json:"checkpoints"`
	// History is the sources' throughput and lag over the last minutes,
	// oldest first (Dashboard.State; empty from Engine.DashboardState).
	History []DashSample `json:"history"`
	// Barrier is the stuck-barrier report (exec/job/barrier.go) when the
	// oldest epoch in flight has waited stuckAfter or longer: the
	// operators holding it and their goroutines. Nil otherwise.
	Barrier *job.BarrierReport `json:"stuck_barrier,omitempty"`
}

// stuckAfter is how long an epoch waits before the dashboard and
// sluice_catalog.stuck_barrier report it: --stuck-barrier, or when that is
// off, three checkpoint intervals and at least a second.
func (e *Engine) stuckAfter() time.Duration {
	if e.cfg.StuckBarrier > 0 {
		return e.cfg.StuckBarrier
	}
	return max(3*e.cfg.CheckpointInterval, time.Second)
}

// DashSample is one point of the history: the sources' rows per second
// since the previous sample, and how far they are behind in all.
type DashSample struct {
	Time          time.Time `json:"time"`
	RowsPerSecond float64   `json:"rows_per_second"`
	Lag           int64     `json:"lag"`
}

// DashObject is one catalog entry.
type DashObject struct {
	ID        uint64 `json:"id"`
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Connector string `json:"connector,omitempty"`
	SQL       string `json:"sql"`
}

// DashJob is one running dataflow: its operators and the edges between
// them. An edge from another job's operator (a view reading a table or a
// view) starts at a node of kind "Upstream" named after that relation.
type DashJob struct {
	ID     uint64     `json:"id"`
	Name   string     `json:"name"`
	Kind   string     `json:"kind"` // the catalog kind of the job's relation
	Status string     `json:"status"`
	Error  string     `json:"error,omitempty"`
	Nodes  []DashNode `json:"nodes"`
	Edges  []DashEdge `json:"edges"`
}

// DashNode is an operator, a source reader or an upstream relation.
// Seconds are cumulative; StateBytes and StateKeys are as of the last
// barrier (HasState false: the operator keeps none).
type DashNode struct {
	ID                  string  `json:"id"`
	Name                string  `json:"name"`
	Kind                string  `json:"kind"`
	RowsIn              int64   `json:"rows_in"`
	RowsOut             int64   `json:"rows_out"`
	BusySeconds         float64 `json:"busy_seconds"`
	IdleSeconds         float64 `json:"idle_seconds"`
	BackpressureSeconds float64 `json:"backpressure_seconds"`
	HasState            bool    `json:"has_state"`
	StateBytes          int64   `json:"state_bytes"`
	StateKeys           int64   `json:"state_keys"`
	CacheHitRatio       float64 `json:"cache_hit_ratio"`
}

// DashEdge is a channel from one node to another (node ids).
type DashEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// DashSource is one source reader (or a table's change source) of a job.
type DashSource struct {
	Job                 string    `json:"job"`
	Source              string    `json:"source"`
	Rows                int64     `json:"rows"`
	Bytes               int64     `json:"bytes"` // -1: the source does not report bytes
	BackpressureSeconds float64   `json:"backpressure_seconds"`
	Late                int64     `json:"late"`
	Bad                 int64     `json:"bad"`
	Lag                 []DashLag `json:"lag"`
}

// DashLag is how far one partition of a source is behind.
type DashLag struct {
	Partition string `json:"partition"`
	Behind    int64  `json:"behind"`
}

// DashSink is a sink's row of SHOW SINKS plus its deliverer's counters.
type DashSink struct {
	Name           string  `json:"name"`
	Connector      string  `json:"connector"`
	Delivery       string  `json:"delivery"`
	WriteMode      string  `json:"write_mode"`
	Effective      string  `json:"effective"`
	WeakestLink    string  `json:"weakest_link"`
	LoggedEpoch    int64   `json:"logged_epoch"`
	DeliveredEpoch int64   `json:"delivered_epoch"`
	PendingEpochs  int64   `json:"pending_epochs"`
	Written        int64   `json:"written"`
	Status         string  `json:"status"`
	LastError      string  `json:"last_error,omitempty"`
	Bytes          int64   `json:"bytes"`
	Retries        int64   `json:"retries"`
	Errors         int64   `json:"errors"`
	Commits        int64   `json:"commits"`
	CommitSeconds  float64 `json:"commit_seconds"`
}

// DashCheckpoint is one epoch's checkpoint (milliseconds).
type DashCheckpoint struct {
	Epoch      uint64    `json:"epoch"`
	Started    time.Time `json:"started"`
	BarrierMs  float64   `json:"barrier_ms"`
	CommitMs   float64   `json:"commit_ms"`
	DurationMs float64   `json:"duration_ms"`
	Bytes      int64     `json:"bytes"`
	Failed     bool      `json:"failed"`
}

// dashCheckpoints is how many checkpoint records a snapshot carries.
const dashCheckpoints = 60

// DashboardState returns a snapshot of the server for the dashboard.
func (e *Engine) DashboardState() DashboardState {
	s := DashboardState{
		Time:            time.Now(),
		Committed:       e.coord.Committed(),
		InFlight:        e.coord.InFlight(),
		StateCacheBytes: e.db.StateCache().Used(),
		StateCacheLimit: e.db.StateCache().Limit(),
		Catalog:         []DashObject{},
		Jobs:            []DashJob{},
		Sources:         []DashSource{},
		Sinks:           []DashSink{},
		Checkpoints:     []DashCheckpoint{},
		History:         []DashSample{},
	}
	for _, ent := range e.cat.list("") {
		switch ent.Kind {
		case kindTable, kindSource, kindMView, kindView, kindSink:
		default:
			continue
		}
		s.Catalog = append(s.Catalog, DashObject{ID: ent.ID, Name: ent.Name, Kind: ent.Kind, Connector: ent.Connector, SQL: e.redactText(ent.SQL)})
		if ent.Kind == kindSink {
			s.Sinks = append(s.Sinks, e.dashSink(ent.ID, e.showSinkRow(ent, true)))
		}
	}
	jobs := e.rt.Jobs()
	producers := dashProducers(jobs)
	for _, j := range jobs {
		s.Jobs = append(s.Jobs, e.dashJob(j, producers))
		s.Sources = append(s.Sources, dashSources(j)...)
	}
	if rep, ok := e.rt.Barriers(e.stuckAfter()); ok {
		s.Barrier = &rep
	}
	for _, r := range e.coord.History(dashCheckpoints) {
		s.Checkpoints = append(s.Checkpoints, DashCheckpoint{Epoch: r.Epoch, Started: r.Started, BarrierMs: ms(r.Aligned),
			CommitMs: ms(r.Commit), DurationMs: ms(r.Duration), Bytes: r.Bytes, Failed: r.Failed})
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// producer is the node that sends on a channel.
type producer struct {
	job  *job.Job
	node string
}

// dashProducers maps every channel of the running graph to the node
// sending on it: actors, source readers and tables' change sources.
func dashProducers(jobs []*job.Job) map[chan flow.Msg]producer {
	m := map[chan flow.Msg]producer{}
	add := func(j *job.Job, node string, out *flow.Output) {
		if out == nil {
			return
		}
		for _, c := range out.Consumers() {
			m[c] = producer{job: j, node: node}
		}
	}
	for _, j := range jobs {
		if t := j.Table; t != nil {
			add(j, dashSourceID(t.Name), t.Out)
		}
		for _, r := range j.Readers {
			add(j, dashSourceID(r.Name), r.Out)
		}
		for _, a := range j.Actors {
			add(j, a.Name, a.Out)
		}
	}
	return m
}

func dashSourceID(name string) string { return name + "/source" }

func (e *Engine) dashJob(j *job.Job, producers map[chan flow.Msg]producer) DashJob {
	d := DashJob{ID: j.ID, Name: j.Name, Status: j.Status(), Nodes: []DashNode{}, Edges: []DashEdge{}}
	if ent := e.cat.byIDGet(j.ID); ent != nil {
		d.Kind = ent.Kind
	}
	if err := j.Failure(); err != nil {
		d.Error = e.redactText(err.Error())
	}
	short := func(name string) string { return strings.TrimPrefix(name, j.Name+"/") }
	if t := j.Table; t != nil {
		n := DashNode{ID: dashSourceID(t.Name), Name: "table " + j.Name, Kind: "TableSource"}
		if st := t.Stats; st != nil {
			n.RowsOut, n.BackpressureSeconds = st.Rows.Load(), nanos(st.BlockedNanos.Load())
		}
		d.Nodes = append(d.Nodes, n)
	}
	for _, r := range j.Readers {
		n := DashNode{ID: dashSourceID(r.Name), Name: "source " + r.SourceName, Kind: "Source"}
		if st := r.Stats; st != nil {
			n.RowsOut, n.BackpressureSeconds = st.Rows.Load(), nanos(st.BlockedNanos.Load())
		}
		d.Nodes = append(d.Nodes, n)
	}
	upstream := map[string]bool{}
	for _, a := range j.Actors {
		n := DashNode{ID: a.Name, Name: short(a.Name), Kind: a.Kind}
		if st := a.Stats; st != nil {
			n.RowsIn, n.RowsOut = st.RowsIn.Load(), st.RowsOut.Load()
			n.BusySeconds, n.IdleSeconds, n.BackpressureSeconds = nanos(st.BusyNanos.Load()), nanos(st.IdleNanos()), nanos(st.BlockedNanos.Load())
			if st.HasState.Load() {
				n.HasState, n.StateBytes, n.StateKeys = true, st.StateBytes.Load(), st.StateKeys.Load()
				lookups, misses := st.CacheLookups.Load(), st.CacheMisses.Load()
				n.CacheHitRatio = 1
				if lookups > 0 {
					n.CacheHitRatio = 1 - float64(misses)/float64(lookups)
				}
			}
		}
		d.Nodes = append(d.Nodes, n)
		for _, in := range a.Inputs {
			p, ok := producers[j.Upstream(in)]
			if !ok {
				continue
			}
			from := p.node
			if p.job != j {
				// Another job's output: the relation it materializes.
				from = "upstream/" + p.job.Name
				if !upstream[from] {
					upstream[from] = true
					d.Nodes = append(d.Nodes, DashNode{ID: from, Name: p.job.Name, Kind: "Upstream"})
				}
			}
			d.Edges = append(d.Edges, DashEdge{From: from, To: a.Name})
		}
	}
	return d
}

// dashSources lists j's source readers (a source read twice, as in a
// self-join, is listed once per reader).
func dashSources(j *job.Job) []DashSource {
	var out []DashSource
	add := func(name string, st *flow.SourceStats, late, bad int64) {
		if st == nil {
			return
		}
		s := DashSource{Job: j.Name, Source: name, Rows: st.Rows.Load(), Bytes: st.Bytes.Load(),
			BackpressureSeconds: nanos(st.BlockedNanos.Load()), Late: late, Bad: bad, Lag: []DashLag{}}
		for _, l := range st.Lag() {
			s.Lag = append(s.Lag, DashLag{Partition: l.Partition, Behind: l.Behind})
		}
		out = append(out, s)
	}
	if t := j.Table; t != nil {
		add(j.Name, t.Stats, 0, 0)
	}
	for _, r := range j.Readers {
		add(r.SourceName, r.Stats, r.Late.Load(), r.BadRecords.Load())
	}
	return out
}

// dashSink reads a sink's SHOW SINKS row (showSinksCols) and its
// deliverer's counters.
func (e *Engine) dashSink(id uint64, row types.Row) DashSink {
	get := map[string]types.Datum{}
	for i, c := range showSinksCols() {
		if i < len(row) {
			get[c.Name] = row[i]
		}
	}
	str := func(k string) string { return get[k].S }
	num := func(k string) int64 { return get[k].I }
	d := DashSink{Name: str("Name"), Connector: str("Connector"), Delivery: str("Delivery"), WriteMode: str("Write Mode"),
		Effective: str("Effective"), WeakestLink: str("Weakest Link"), LoggedEpoch: num("Logged Epoch"),
		DeliveredEpoch: num("Delivered Epoch"), PendingEpochs: num("Pending Epochs"), Written: num("Written"),
		Status: str("Status"), LastError: str("Last Error")}
	if j := e.rt.Job(id); j != nil && j.Deliverer != nil {
		m := j.Deliverer.Metrics()
		d.Bytes, d.Retries, d.Errors, d.Commits, d.CommitSeconds = int64(m.Bytes), int64(m.Retries), int64(m.Errors), int64(m.Commits), m.CommitSeconds
	}
	return d
}

// Dashboard keeps, besides the snapshots, a history of the sources'
// throughput and lag, sampled by Run so that the page's charts cover the
// last minutes as soon as it opens.
type Dashboard struct {
	e  *Engine
	mu struct {
		sync.Mutex
		ring  []DashSample // at most dashHistory, oldest first
		rows  int64        // the sources' rows at the last sample
		taken time.Time    // when the last sample was taken
	}
}

// dashHistory is how many samples a Dashboard keeps.
const dashHistory = 300

// NewDashboard returns the dashboard of e; Run samples its history.
func (e *Engine) NewDashboard() *Dashboard { return &Dashboard{e: e} }

// Run samples the history every interval until ctx ends. The caller owns
// the goroutine running it.
func (d *Dashboard) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	d.sample()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.sample()
		}
	}
}

func (d *Dashboard) sample() {
	var rows, lag int64
	for _, j := range d.e.rt.Jobs() {
		for _, s := range dashSources(j) {
			rows += s.Rows
			for _, l := range s.Lag {
				lag += l.Behind
			}
		}
	}
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.mu.taken.IsZero() {
		r := 0.0
		if dt := now.Sub(d.mu.taken).Seconds(); dt > 0 && rows >= d.mu.rows {
			r = float64(rows-d.mu.rows) / dt
		}
		if len(d.mu.ring) == dashHistory {
			d.mu.ring = append(d.mu.ring[:0], d.mu.ring[1:]...)
		}
		d.mu.ring = append(d.mu.ring, DashSample{Time: now, RowsPerSecond: r, Lag: lag})
	}
	d.mu.rows, d.mu.taken = rows, now
}

// State returns a snapshot with the history.
func (d *Dashboard) State() DashboardState {
	s := d.e.DashboardState()
	d.mu.Lock()
	s.History = append(s.History, d.mu.ring...)
	d.mu.Unlock()
	return s
}
