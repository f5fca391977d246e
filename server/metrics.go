package server

import (
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"sluice/exec/flow"
	"sluice/exec/sink"
	"sluice/sql/parser"
)

// metrics is an engine's Prometheus registry (README, "Metrics and
// debugging"). The hot paths only bump atomic counters in the actors,
// sources and deliverers (exec/flow/stats.go); jobCollector turns them
// into metrics when /metrics is scraped. Each engine has a registry of its
// own, so that several engines in one test process do not collide.
type metrics struct {
	reg *prometheus.Registry

	connections      prometheus.Gauge
	connectionsTotal prometheus.Counter
	statements       *prometheus.CounterVec
	statementErrors  *prometheus.CounterVec
	statementSeconds *prometheus.HistogramVec

	barrierSeconds    prometheus.Histogram
	checkpointSeconds prometheus.Histogram
	commitSeconds     prometheus.Histogram
	checkpointBytes   prometheus.Counter
	checkpoints       prometheus.Counter
	checkpointsFailed prometheus.Counter
}

// latencyBuckets are the bounds, in seconds, of the latency histograms.
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

func newMetrics(e *Engine) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.connections = prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_connections", Help: "Client sessions open."})
	m.connectionsTotal = prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_connections_total", Help: "Client sessions opened since start."})
	m.statements = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_statements_total",
		Help: "Statements executed, by kind (select, insert, update, delete, ddl, copy, transaction, other)."}, []string{"kind"})
	m.statementErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_statement_errors_total",
		Help: "Statements that ended with an error, by kind."}, []string{"kind"})
	m.statementSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sluice_statement_duration_seconds",
		Help: "Statement latency, by kind.", Buckets: latencyBuckets}, []string{"kind"})
	m.barrierSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sluice_barrier_latency_seconds",
		Help: "Time from a barrier's injection until every collector has it (aligned through every job).", Buckets: latencyBuckets})
	m.checkpointSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sluice_checkpoint_duration_seconds",
		Help: "Time from a barrier's injection until its epoch is committed.", Buckets: latencyBuckets})
	m.commitSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sluice_checkpoint_commit_seconds",
		Help: "Time the synced commit of an epoch took, once aligned.", Buckets: latencyBuckets})
	m.checkpointBytes = prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_checkpoint_bytes_total", Help: "Bytes of the epochs' write batches committed."})
	m.checkpoints = prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_checkpoints_total", Help: "Checkpoints completed (committed or failed)."})
	m.checkpointsFailed = prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_checkpoints_failed_total", Help: "Checkpoints that failed."})
	m.reg.MustRegister(m.connections, m.connectionsTotal, m.statements, m.statementErrors, m.statementSeconds,
		m.barrierSeconds, m.checkpointSeconds, m.commitSeconds, m.checkpointBytes, m.checkpoints, m.checkpointsFailed,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&jobCollector{e: e})
	e.coord.OnCheckpoint(m.checkpoint)
	if slow := e.cfg.SlowCheckpoint; slow > 0 {
		e.coord.OnCheckpoint(func(r flow.CheckpointRecord) {
			if r.Duration > slow && !r.Failed {
				e.cfg.Logf("warning: slow checkpoint: epoch %d took %s (barrier aligned after %s, commit %s, %d bytes; threshold --slow-checkpoint %s)",
					r.Epoch, r.Duration.Round(time.Millisecond), r.Aligned.Round(time.Millisecond), r.Commit.Round(time.Millisecond), r.Bytes, slow)
			}
		})
	}
	return m
}

func (m *metrics) checkpoint(r flow.CheckpointRecord) {
	m.checkpoints.Inc()
	if r.Failed {
		m.checkpointsFailed.Inc()
		return
	}
	m.barrierSeconds.Observe(r.Aligned.Seconds())
	m.checkpointSeconds.Observe(r.Duration.Seconds())
	m.commitSeconds.Observe(r.Commit.Seconds())
	m.checkpointBytes.Add(float64(r.Bytes))
}

// statement records one statement's kind, latency and outcome.
func (m *metrics) statement(st parser.Statement, start time.Time, err error) {
	k := statementKind(st)
	m.statements.WithLabelValues(k).Inc()
	m.statementSeconds.WithLabelValues(k).Observe(time.Since(start).Seconds())
	if err != nil {
		m.statementErrors.WithLabelValues(k).Inc()
	}
}

// statementKind is the bounded label of a statement's kind.
func statementKind(st parser.Statement) string {
	if isDDL(st) {
		return "ddl"
	}
	switch x := st.(type) {
	case *parser.Query:
		switch x.Node.(type) {
		case *ast.SelectStmt, *ast.SetOprStmt:
			return "select"
		case *ast.InsertStmt:
			return "insert"
		case *ast.UpdateStmt:
			return "update"
		case *ast.DeleteStmt:
			return "delete"
		}
	case *parser.Copy:
		return "copy"
	case *parser.Begin, *parser.Commit, *parser.Rollback, *parser.Savepoint, *parser.Release:
		return "transaction"
	}
	return "other"
}

// Gatherer returns the engine's metrics for an HTTP handler (cmd/sluice).
func (e *Engine) Gatherer() prometheus.Gatherer { return e.metrics.reg }

// jobCollector reads the running jobs' figures at scrape time.
type jobCollector struct{ e *Engine }

var (
	srcLabels  = []string{"job", "source"}
	opLabels   = []string{"job", "operator", "kind"}
	sinkLabels = []string{"sink"}

	descSrcRows    = prometheus.NewDesc("sluice_source_rows_total", "Rows a source read and sent into its job.", srcLabels, nil)
	descSrcBytes   = prometheus.NewDesc("sluice_source_bytes_total", "Bytes a source read from the external system (sources that report it).", srcLabels, nil)
	descSrcLag     = prometheus.NewDesc("sluice_source_lag_records", "How far a source's reader is behind, as of its last barrier: Kafka offsets behind the partition's high watermark; generators: events due and not generated.", append(srcLabels, "partition"), nil)
	descSrcLate    = prometheus.NewDesc("sluice_source_late_records_total", "Rows dropped as behind the source's watermark.", srcLabels, nil)
	descSrcBad     = prometheus.NewDesc("sluice_source_bad_records_total", "Malformed records passed by (on_error skip or dead_letter).", srcLabels, nil)
	descSrcBlocked = prometheus.NewDesc("sluice_source_backpressure_seconds_total", "Time a source waited for its consumers to take a batch.", srcLabels, nil)

	descOpIn      = prometheus.NewDesc("sluice_operator_rows_in_total", "Rows an operator received.", opLabels, nil)
	descOpOut     = prometheus.NewDesc("sluice_operator_rows_out_total", "Rows an operator emitted.", opLabels, nil)
	descOpBusy    = prometheus.NewDesc("sluice_operator_busy_seconds_total", "Time an operator spent handling batches and barriers.", opLabels, nil)
	descOpIdle    = prometheus.NewDesc("sluice_operator_idle_seconds_total", "Time an operator waited for input.", opLabels, nil)
	descOpBlocked = prometheus.NewDesc("sluice_operator_backpressure_seconds_total", "Time an operator waited for its consumers (blocked sending downstream).", opLabels, nil)
	descOpBytes   = prometheus.NewDesc("sluice_operator_state_bytes", "Estimated memory of an operator's resident state, as of its last barrier.", opLabels, nil)
	descOpKeys    = prometheus.NewDesc("sluice_operator_state_keys", "Keys (groups, join buckets) of an operator's state, as of its last barrier.", opLabels, nil)
	descOpLookups = prometheus.NewDesc("sluice_operator_cache_lookups_total", "State lookups of an operator.", opLabels, nil)
	descOpMisses  = prometheus.NewDesc("sluice_operator_cache_misses_total", "State lookups that read spilled state back from the store.", opLabels, nil)
	descOpRatio   = prometheus.NewDesc("sluice_operator_cache_hit_ratio", "Share of an operator's state lookups answered from memory.", opLabels, nil)

	descSinkRows    = prometheus.NewDesc("sluice_sink_rows_total", "Changes a sink's connector confirmed.", sinkLabels, nil)
	descSinkBytes   = prometheus.NewDesc("sluice_sink_bytes_total", "Bytes of the encoded changes handed to a sink's connector and confirmed.", sinkLabels, nil)
	descSinkCommit  = prometheus.NewDesc("sluice_sink_commit_seconds", "Time a sink's connector took to write and commit one epoch.", sinkLabels, nil)
	descSinkPending = prometheus.NewDesc("sluice_sink_pending_epochs", "Committed epochs in a sink's log not yet confirmed by the external system (counted up to 65).", sinkLabels, nil)
	descSinkRetries = prometheus.NewDesc("sluice_sink_retries_total", "Delivery attempts made after a failure.", sinkLabels, nil)
	descSinkErrors  = prometheus.NewDesc("sluice_sink_errors_total", "Failed delivery attempts (connect, progress read, write).", sinkLabels, nil)
	descSinkEpoch   = prometheus.NewDesc("sluice_sink_delivered_epoch", "The last epoch a sink's external system confirmed.", sinkLabels, nil)

	descEpoch     = prometheus.NewDesc("sluice_committed_epoch", "The last committed epoch.", nil, nil)
	descInflight  = prometheus.NewDesc("sluice_epochs_in_flight", "Epochs injected and not yet committed.", nil, nil)
	descCacheUsed = prometheus.NewDesc("sluice_state_cache_bytes", "Memory the operators' state holds, against the state cache's limit.", nil, nil)
	descCacheLim  = prometheus.NewDesc("sluice_state_cache_limit_bytes", "The state cache's limit (--state-cache-mb or --memory-limit).", nil, nil)
	descJobFailed = prometheus.NewDesc("sluice_job_failed", "1 when a job has stopped with an error.", []string{"job"}, nil)
)

// Describe implements prometheus.Collector.
func (c *jobCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSrcRows, descSrcBytes, descSrcLag, descSrcLate, descSrcBad, descSrcBlocked,
		descOpIn, descOpOut, descOpBusy, descOpIdle, descOpBlocked, descOpBytes, descOpKeys, descOpLookups, descOpMisses, descOpRatio,
		descSinkRows, descSinkBytes, descSinkCommit, descSinkPending, descSinkRetries, descSinkErrors, descSinkEpoch,
		descEpoch, descInflight, descCacheUsed, descCacheLim, descJobFailed} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *jobCollector) Collect(ch chan<- prometheus.Metric) {
	e := c.e
	counter := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, l...)
	}
	gauge := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	gauge(descEpoch, float64(e.coord.Committed()))
	gauge(descInflight, float64(e.coord.InFlight()))
	gauge(descCacheUsed, float64(e.db.StateCache().Used()))
	gauge(descCacheLim, float64(e.db.StateCache().Limit()))
	for _, j := range e.rt.Jobs() {
		failed := 0.0
		if j.Failure() != nil {
			failed = 1
		}
		gauge(descJobFailed, failed, j.Name)
		// A job may read one source twice (a self-join): its readers are
		// summed, so that each label set is reported once.
		type srcSum struct {
			rows, bytes, blocked, late, bad int64
			lag                             map[string]int64
			order                           []string
		}
		var names []string
		sums := map[string]*srcSum{}
		add := func(name string, st *flow.SourceStats, late, bad int64) {
			if st == nil {
				return
			}
			s := sums[name]
			if s == nil {
				s = &srcSum{lag: map[string]int64{}}
				sums[name] = s
				names = append(names, name)
			}
			s.rows += st.Rows.Load()
			if b := st.Bytes.Load(); b >= 0 && s.bytes >= 0 {
				s.bytes += b
			} else {
				s.bytes = -1
			}
			s.blocked += st.BlockedNanos.Load()
			s.late += late
			s.bad += bad
			for _, l := range st.Lag() {
				if v, ok := s.lag[l.Partition]; !ok {
					s.order = append(s.order, l.Partition)
					s.lag[l.Partition] = l.Behind
				} else {
					s.lag[l.Partition] = max(v, l.Behind)
				}
			}
		}
		if t := j.Table; t != nil && t.Stats != nil {
			add(j.Name, t.Stats, -1, -1)
		}
		for _, r := range j.Readers {
			add(r.SourceName, r.Stats, r.Late.Load(), r.BadRecords.Load())
		}
		for _, name := range names {
			s := sums[name]
			counter(descSrcRows, float64(s.rows), j.Name, name)
			if s.bytes >= 0 {
				counter(descSrcBytes, float64(s.bytes), j.Name, name)
			}
			counter(descSrcBlocked, nanos(s.blocked), j.Name, name)
			if s.late >= 0 {
				counter(descSrcLate, float64(s.late), j.Name, name)
				counter(descSrcBad, float64(s.bad), j.Name, name)
			}
			for _, p := range s.order {
				gauge(descSrcLag, float64(s.lag[p]), j.Name, name, p)
			}
		}
		for _, a := range j.Actors {
			st := a.Stats
			if st == nil {
				continue
			}
			l := []string{j.Name, strings.TrimPrefix(a.Name, j.Name+"/"), a.Kind}
			counter(descOpIn, float64(st.RowsIn.Load()), l...)
			counter(descOpOut, float64(st.RowsOut.Load()), l...)
			counter(descOpBusy, nanos(st.BusyNanos.Load()), l...)
			counter(descOpIdle, nanos(st.IdleNanos()), l...)
			counter(descOpBlocked, nanos(st.BlockedNanos.Load()), l...)
			if st.HasState.Load() {
				gauge(descOpBytes, float64(st.StateBytes.Load()), l...)
				gauge(descOpKeys, float64(st.StateKeys.Load()), l...)
				lookups, misses := st.CacheLookups.Load(), st.CacheMisses.Load()
				counter(descOpLookups, float64(lookups), l...)
				counter(descOpMisses, float64(misses), l...)
				ratio := 1.0
				if lookups > 0 {
					ratio = 1 - float64(misses)/float64(lookups)
				}
				gauge(descOpRatio, ratio, l...)
			}
		}
		if d := j.Deliverer; d != nil {
			st, m := d.Status(), d.Metrics()
			counter(descSinkRows, float64(st.Written), j.Name)
			counter(descSinkBytes, float64(m.Bytes), j.Name)
			gauge(descSinkPending, float64(st.Pending), j.Name)
			counter(descSinkRetries, float64(m.Retries), j.Name)
			counter(descSinkErrors, float64(m.Errors), j.Name)
			gauge(descSinkEpoch, float64(st.Delivered), j.Name)
			buckets := make(map[float64]uint64, len(sink.CommitBuckets))
			var cum uint64
			for i, b := range sink.CommitBuckets {
				cum += uint64(m.CommitCounts[i])
				buckets[b] = cum
			}
			ch <- prometheus.MustNewConstHistogram(descSinkCommit, uint64(m.Commits), m.CommitSeconds, buckets, j.Name)
		}
	}
}

func nanos(n int64) float64 { return float64(n) / float64(time.Second) }
