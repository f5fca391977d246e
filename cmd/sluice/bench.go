package main

// `sluice bench nexmark` runs one Nexmark query over a bounded, unthrottled
// stream in an in-process engine and prints one line of figures:
//
//	query=q5 events=10000000 seconds=… events_per_sec=… cpu_seconds_per_million=… peak_rss_mib=… peak_anon_mib=…
//
// The query is created as CREATE SINK … AS <select> WITH (connector =
// 'blackhole', delivery = 'EXACTLY_ONCE'), RisingWave's benchmark form.
// The clock runs from CREATE SINK until every source reader of the sink has
// reached the end of its stream and the checkpoint after that has
// committed (FLUSH). events counts stream events of all kinds (nexmark.event.num),
// as RisingWave and Flink report them.
//
// The engine has no way to tell a client that a bounded source is
// exhausted, so the command wraps the registered 'nexmark' source
// connector (in this process only) and counts its readers' io.EOFs.
//
// The query texts are nexmark/qN.sql, which TestNexmark also runs and
// checks against PostgreSQL.

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"sluice/exec/connector"
	"sluice/server"
	"sluice/server/pgwire"
	"sluice/sql/types"
	"sluice/storage"
)

// nexmarkQuery is one query of the benchmark: statements that prepare it
// (a function, a table) and the SELECT the sink is made of.
type nexmarkQuery struct {
	setup []string
	query string
}

// nexmarkFiles are the query texts, shared with the correctness test
// (tests/nexmark_test.go): setup statements, then CREATE MATERIALIZED VIEW
// nexmark_qN AS <select>; `--` lines are comments (the test's checks).
//
//go:embed nexmark/*.sql
var nexmarkFiles embed.FS

// nexmarkQueryOf reads query name (q0 … q22).
func nexmarkQueryOf(name string) (nexmarkQuery, bool, error) {
	b, err := nexmarkFiles.ReadFile("nexmark/" + name + ".sql")
	if err != nil {
		return nexmarkQuery{}, false, nil
	}
	var body []string
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			body = append(body, line)
		}
	}
	// Statements end with ';' at the end of a line.
	var stmts []string
	for _, st := range strings.SplitAfter(strings.Join(body, "\n"), ";\n") {
		if st = strings.TrimSuffix(strings.TrimSpace(st), ";"); st != "" {
			stmts = append(stmts, st)
		}
	}
	if len(stmts) == 0 {
		return nexmarkQuery{}, false, fmt.Errorf("%s.sql holds no statement", name)
	}
	last := stmts[len(stmts)-1]
	view := "CREATE MATERIALIZED VIEW nexmark_" + name
	rest, ok := strings.CutPrefix(last, view)
	if rest = strings.TrimSpace(rest); !ok || !strings.HasPrefix(rest, "AS") {
		return nexmarkQuery{}, false, fmt.Errorf("%s.sql: the last statement is not %s AS …", name, view)
	}
	return nexmarkQuery{setup: stmts[:len(stmts)-1], query: strings.TrimSpace(rest[2:])}, true, nil
}

// nexmarkColumns are the three sources' column lists, with RisingWave's
// watermark.
var nexmarkColumns = map[string]string{
	"person": `id BIGINT, name VARCHAR, email_address VARCHAR, credit_card VARCHAR, city VARCHAR,
  state VARCHAR, date_time TIMESTAMP, extra VARCHAR`,
	"auction": `id BIGINT, item_name VARCHAR, description VARCHAR, initial_bid BIGINT, reserve BIGINT,
  date_time TIMESTAMP, expires TIMESTAMP, seller BIGINT, category BIGINT, extra VARCHAR`,
	"bid": `auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
  date_time TIMESTAMP, extra VARCHAR`,
}

// runBench runs `sluice bench ARGS`.
func runBench(args []string) error {
	if len(args) == 0 || args[0] != "nexmark" {
		return errors.New("usage: sluice bench nexmark --query qN [--events N] [--splits N] [--checkpoint-interval 1s] [--progress auto|on|off] [--cpuprofile FILE] [--memprofile FILE] [--trace FILE]")
	}
	fs := flag.NewFlagSet("sluice bench nexmark", flag.ContinueOnError)
	query := fs.String("query", "", "Nexmark query to run: q0 … q22")
	events := fs.Int64("events", 10_000_000, "events of the stream, all kinds (nexmark.event.num)")
	splits := fs.Int("splits", 1, "nexmark.split.num of each source")
	rate := fs.Int64("event-rate", 0, "event-time rate, events/s (nexmark.first.event.rate; 0: the generator's 10,000)")
	interval := fs.Duration("checkpoint-interval", time.Second, "time between checkpoints")
	dataDir := fs.String("data-dir", "", "directory of the embedded store (default: a temporary one, removed)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to FILE")
	memProfile := fs.String("memprofile", "", "write a heap profile at the end of the run to FILE")
	traceFile := fs.String("trace", "", "write an execution trace of the run to FILE (go tool trace)")
	stateCache := fs.Int64("state-cache-mb", 0, "memory for operator state before it spills to the store, MiB (0: the server's default)")
	noMetrics := fs.Bool("no-metrics", false, "run without the dataflow's metrics figures (to measure their cost)")
	printSQL := fs.Bool("print-sql", false, "print the statements of the query and exit")
	progressFlag := fs.String("progress", "auto", "a live progress line on standard error: auto (when it is a terminal), on or off")
	memFlag := registerMemoryFlag(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	split, err := memFlag.split()
	if err != nil {
		return err
	}
	stateBytes := *stateCache << 20
	var memory storage.MemorySizes
	split.apply(&stateBytes, &memory, *stateCache > 0)
	q, ok, err := nexmarkQueryOf(*query)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("--query %q: not one of q0 … q22", *query)
	}
	if *printSQL {
		for _, s := range q.setup {
			fmt.Printf("%s;\n", s)
		}
		fmt.Printf("%s;\n", q.query)
		return nil
	}
	if *events <= 0 {
		return errors.New("--events must be positive: the benchmark needs a bounded stream")
	}
	showProgress, tty, err := progressMode(*progressFlag, os.Stderr)
	if err != nil {
		return err
	}
	if *splits < 1 {
		return errors.New("--splits must be at least 1")
	}
	dir := *dataDir
	if dir == "" {
		d, err := os.MkdirTemp("", "sluice-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	tracker, err := trackNexmarkEOF()
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, split)
	eng, err := server.Open(server.Config{DataDir: dir, CheckpointInterval: *interval, StateCacheBytes: stateBytes, Memory: memory, NoMetrics: *noMetrics})
	if err != nil {
		return err
	}
	defer eng.Close()
	ctx := context.Background()
	sess, err := eng.Connect(ctx, pgwire.StartupInfo{User: "sluice", Database: "sluice"})
	if err != nil {
		return err
	}
	defer sess.Close()
	run := func(sql string) (*benchResult, error) {
		w := &benchResult{}
		if err := sess.SimpleQuery(ctx, sql, w); err != nil {
			return nil, fmt.Errorf("%s: %w", firstLine(sql), err)
		}
		return w, nil
	}
	opts := fmt.Sprintf("connector = 'nexmark', nexmark.event.num = '%d', nexmark.split.num = '%d', nexmark.min.event.gap.in.ns = '0'",
		*events, *splits)
	if *rate > 0 {
		opts += fmt.Sprintf(", nexmark.first.event.rate = '%d'", *rate)
	}
	for _, table := range []string{"person", "auction", "bid"} {
		ddl := fmt.Sprintf("CREATE SOURCE %s (%s,\n  WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND)\nWITH (%s, nexmark.table.type = '%s')",
			table, nexmarkColumns[table], opts, table)
		if _, err := run(ddl); err != nil {
			return err
		}
	}
	for _, s := range q.setup {
		if _, err := run(s); err != nil {
			return err
		}
	}
	if len(q.setup) > 0 {
		if _, err := run("FLUSH"); err != nil {
			return err
		}
	}

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *traceFile != "" {
		f, err := os.Create(*traceFile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return err
		}
		defer trace.Stop()
	}
	cpu0 := cpuSeconds()
	start := time.Now()
	anon := startAnonSampler()
	defer anon.stop() // on an early return too
	sink := "CREATE SINK nexmark_" + *query + " AS\n" + q.query + "\nWITH (connector = 'blackhole', delivery = 'EXACTLY_ONCE')"
	if _, err := run(sink); err != nil {
		return err
	}
	stopProgress, progressDone := make(chan struct{}), make(chan struct{})
	if showProgress {
		p := &progress{w: os.Stderr, tty: tty, query: *query, events: *events, t: tracker, interval: time.Second}
		go p.run(stopProgress, progressDone)
	} else {
		close(progressDone)
	}
	// The sink's readers were opened by CREATE SINK: wait until each has
	// read its last row, then for the checkpoint after that.
	err = tracker.wait(ctx, "nexmark_"+*query, run)
	close(stopProgress)
	<-progressDone
	if err != nil {
		return err
	}
	if _, err := run("FLUSH"); err != nil {
		return err
	}
	elapsed := time.Since(start)
	cpu := cpuSeconds() - cpu0
	if *cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if *traceFile != "" {
		trace.Stop()
	}
	if err := sinkError(run, "nexmark_"+*query); err != nil {
		return err
	}
	if *memProfile != "" {
		f, err := os.Create(*memProfile)
		if err != nil {
			return err
		}
		runtime.GC()
		err = pprof.WriteHeapProfile(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	sec := elapsed.Seconds()
	fmt.Printf("query=%s events=%d seconds=%.3f events_per_sec=%.0f cpu_seconds_per_million=%.3f peak_rss_mib=%.1f peak_anon_mib=%.1f\n",
		*query, *events, sec, float64(*events)/sec, cpu/(float64(*events)/1e6), peakRSSMiB(), anon.stop())
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// sinkError returns the sink's last error from SHOW SINKS, if it has one.
func sinkError(run func(string) (*benchResult, error), name string) error {
	res, err := run("SHOW SINKS")
	if err != nil {
		return err
	}
	col := -1
	for i, c := range res.cols {
		if c.Name == "Last Error" {
			col = i
		}
	}
	for _, r := range res.rows {
		if col >= 0 && r[0].S == name && r[col].S != "" {
			return fmt.Errorf("sink %s failed: %s", name, r[col].S)
		}
	}
	return nil
}

// benchResult is a pgwire.ResultWriter that keeps the rows.
type benchResult struct {
	cols []types.Column
	rows []types.Row
}

func (b *benchResult) Columns(c []types.Column) error { b.cols = c; return nil }
func (b *benchResult) Row(r types.Row) error          { b.rows = append(b.rows, r.Copy()); return nil }
func (b *benchResult) Complete(string) error          { return nil }
func (b *benchResult) Notice(string) error            { return nil }

// eofTracker wraps the 'nexmark' source connector to count the readers
// opened and those that have reached io.EOF.
type eofTracker struct {
	connector.SourceFactory
	opened atomic.Int64
	ended  atomic.Int64
	// rows read by all readers, and the rows they will read in all (each
	// reader's share of the stream), for the progress line
	rows, expected atomic.Int64
	eof            chan struct{} // one token per reader that reached io.EOF
}

func trackNexmarkEOF() (*eofTracker, error) {
	f, err := connector.LookupSource("nexmark")
	if err != nil {
		return nil, err
	}
	t := &eofTracker{SourceFactory: f, eof: make(chan struct{}, 1024)}
	connector.RegisterSource("nexmark", t)
	return t, nil
}

// Open implements connector.SourceFactory.
func (t *eofTracker) Open(ctx context.Context, cfg connector.SourceConfig) (connector.Source, error) {
	src, err := t.SourceFactory.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	t.opened.Add(1)
	splits := int64(1)
	if v, err := strconv.ParseInt(cfg.Options["nexmark.split.num"], 10, 64); err == nil && v > 0 {
		splits = v
	}
	events, _ := strconv.ParseInt(cfg.Options["nexmark.event.num"], 10, 64)
	t.expected.Add(events * nexmarkShare[strings.ToLower(cfg.Options["nexmark.table.type"])] / 50 / splits)
	s := &eofSource{Source: src, t: t}
	s.seek, _ = src.(connector.Seekable)
	return s, nil
}

// wait returns once every reader opened so far has reached io.EOF, or with
// the sink's error if it fails first.
func (t *eofTracker) wait(ctx context.Context, sink string, run func(string) (*benchResult, error)) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for t.ended.Load() < t.opened.Load() {
		select {
		case <-t.eof:
		case <-tick.C:
			if err := sinkError(run, sink); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// eofSource is a nexmark reader that reports its io.EOF. It is Seekable as
// the reader it wraps is, so the sink stays exactly once.
type eofSource struct {
	connector.Source
	seek connector.Seekable
	t    *eofTracker
	done bool
}

// Read implements connector.Source.
func (s *eofSource) Read(ctx context.Context, b *types.Batch, max int) (int, error) {
	n, err := s.Source.Read(ctx, b, max)
	s.t.rows.Add(int64(n))
	if errors.Is(err, io.EOF) && !s.done {
		s.done = true
		s.t.ended.Add(1)
		select {
		case s.t.eof <- struct{}{}:
		default: // wait also rechecks the counters
		}
	}
	return n, err
}

// Position implements connector.Seekable.
func (s *eofSource) Position() []byte {
	if s.seek == nil {
		return nil
	}
	return s.seek.Position()
}

// Seek implements connector.Seekable.
func (s *eofSource) Seek(pos []byte) error {
	if s.seek == nil {
		return errors.New("nexmark reader is not seekable")
	}
	return s.seek.Seek(pos)
}

// cpuSeconds is the CPU time (user + system) the process has used.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// peakRSSMiB is the process's peak resident set (VmHWM; ru_maxrss is KiB on Linux).
func peakRSSMiB() float64 {
	if kb := statusKiB("VmHWM:"); kb > 0 {
		return kb / 1024
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024
}

// statusKiB is field (e.g. "VmHWM:") of /proc/self/status in KiB; 0 when
// it cannot be read.
func statusKiB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == field {
			if kb, err := strconv.ParseFloat(f[1], 64); err == nil {
				return kb
			}
		}
	}
	return 0
}

// anonSampler follows the peak of the process's anonymous resident memory
// (RssAnon: the heap, stacks and the store's allocations, without the
// binary's file pages that VmHWM also counts), sampled every 10 ms: the
// kernel keeps no peak of it.
type anonSampler struct {
	stopc chan struct{}
	done  chan float64
	once  sync.Once
	peak  float64
}

func startAnonSampler() *anonSampler {
	a := &anonSampler{stopc: make(chan struct{}), done: make(chan float64, 1)}
	go func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		peak := statusKiB("RssAnon:")
		for {
			select {
			case <-a.stopc:
				a.done <- max(peak, statusKiB("RssAnon:")) / 1024
				return
			case <-t.C:
				peak = max(peak, statusKiB("RssAnon:"))
			}
		}
	}()
	return a
}

// stop ends the sampling (once) and returns the peak in MiB.
func (a *anonSampler) stop() float64 {
	a.once.Do(func() {
		close(a.stopc)
		a.peak = <-a.done
	})
	return a.peak
}
