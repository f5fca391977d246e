// Command latency measures end-to-end latency through an EXACTLY_ONCE
// Kafka sink (issue 20 item 5): records carrying their produce time go
// into a Kafka topic at a fixed rate, a sink passes them through Sluice to
// another topic in one transaction per checkpoint, and a read_committed
// consumer takes the time each record arrives. For each checkpoint
// interval given it prints p50/p90/p99/max of the latency and the server's
// CPU-seconds (from /proc/PID/stat), in interleaved rounds, and checks that
// every record arrived exactly once.
//
//	go run ./bench/latency [--rate 20000] [--seconds 20] [--warmup 5s] [--intervals 50ms,100ms,1s] [--rounds 3] [--baseline /path/to/old/sluice]
//
// It builds cmd/sluice and cmd/testbroker (franz-go's kfake, every
// produce fsynced) into a temporary directory; the broker listens on
// 127.0.0.1 and its topics are named latency_* .
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "latency:", err)
		os.Exit(1)
	}
}

// result is one run's figures.
type result struct {
	system   string
	interval time.Duration
	lat      []time.Duration // sorted
	cpu      float64         // server CPU-seconds during the measured window
	seconds  float64         // the measured window
	load     float64
	records  int
	stages   string // mean ms per stage (stageMetrics.means)
}

func (r result) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	i := int(p * float64(len(r.lat)-1))
	return r.lat[i]
}

func run() error {
	rate := flag.Int("rate", 20000, "records per second produced")
	seconds := flag.Int("seconds", 20, "measured seconds per run (after the warm-up)")
	warmup := flag.Duration("warmup", 5*time.Second, "produce this long before measuring")
	intervalsFlag := flag.String("intervals", "50ms,100ms,1s", "checkpoint intervals, comma-separated")
	rounds := flag.Int("rounds", 3, "interleaved rounds")
	baseline := flag.String("baseline", "", "an older sluice binary: each interval also runs with it (as base), just before the built one")
	keep := flag.String("keep", "", "work directory to use and keep (default: a temporary one, removed)")
	cpuprofile := flag.Bool("profile", false, "save a CPU profile of each run's measured window in the work directory (needs --keep)")
	flag.Parse()
	var intervals []time.Duration
	for _, s := range strings.Split(*intervalsFlag, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d <= 0 {
			return fmt.Errorf("--intervals: bad interval %q", s)
		}
		intervals = append(intervals, d)
	}
	if *rate <= 0 || *seconds <= 0 || *rounds <= 0 {
		return fmt.Errorf("--rate, --seconds and --rounds must be positive")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	work := *keep
	if work == "" {
		d, err := os.MkdirTemp("", "latency-")
		if err != nil {
			return err
		}
		work = d
		defer os.RemoveAll(work)
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	sluiceBin, brokerBin := filepath.Join(work, "sluice"), filepath.Join(work, "testbroker")
	for bin, pkg := range map[string]string{sluiceBin: "./cmd/sluice", brokerBin: "./cmd/testbroker"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
		cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build %s: %w", pkg, err)
		}
	}
	systems := []struct{ name, bin string }{{"sluice", sluiceBin}}
	if *baseline != "" {
		systems = append([]struct{ name, bin string }{{"base", *baseline}}, systems...)
	}
	b, err := startBroker(brokerBin, work)
	if err != nil {
		return err
	}
	defer b.stop()
	var all []result
	n := 0
	for round := 1; round <= *rounds; round++ {
		for _, iv := range intervals {
			for _, sys := range systems {
				n++
				r := &runner{bin: sys.bin, broker: b.addr, work: work, interval: iv, rate: *rate,
					warmup: *warmup, measure: time.Duration(*seconds) * time.Second, tag: strconv.Itoa(n)}
				if *cpuprofile && *keep != "" {
					r.profile = filepath.Join(work, fmt.Sprintf("cpu-%s-%v-%d.pprof", sys.name, iv, round))
				}
				res, err := r.run(ctx)
				if err != nil {
					return fmt.Errorf("round %d, %s at %v: %w", round, sys.name, iv, err)
				}
				res.system = sys.name
				all = append(all, res)
				fmt.Printf("round %d %-6s %6v: p50 %6.1f ms  p90 %6.1f ms  p99 %6.1f ms  max %6.1f ms  cpu %5.2f s (%.3f cores)  %d records, load %.2f\n    mean ms per epoch: %s\n",
					round, sys.name, iv, ms(res.pct(.50)), ms(res.pct(.90)), ms(res.pct(.99)), ms(res.pct(1)),
					res.cpu, res.cpu/res.seconds, res.records, res.load, res.stages)
			}
		}
	}
	fmt.Printf("\nmedians over %d rounds, %d records/s:\n", *rounds, *rate)
	last := intervals[len(intervals)-1]
	for _, sys := range systems {
		cpuOf := func(iv time.Duration) (p50, p90, p99, cpu float64) {
			var a, b, c, d []float64
			for _, r := range all {
				if r.system == sys.name && r.interval == iv {
					a, b, c = append(a, ms(r.pct(.5))), append(b, ms(r.pct(.9))), append(c, ms(r.pct(.99)))
					d = append(d, r.cpu/r.seconds)
				}
			}
			return median(a), median(b), median(c), median(d)
		}
		_, _, _, ref := cpuOf(last)
		for _, iv := range intervals {
			p50, p90, p99, c := cpuOf(iv)
			fmt.Printf("%-6s %6v: p50 %6.1f ms  p90 %6.1f ms  p99 %6.1f ms  cpu %.3f cores (%+.0f%% vs %v)\n",
				sys.name, iv, p50, p90, p99, c, (c/ref-1)*100, last)
		}
	}
	fmt.Println("(cpu: the server's CPU-seconds per second of the measured window)")
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// runner is one run: a fresh sluice with one checkpoint interval.
type runner struct {
	bin, broker, work, tag, profile string
	interval, warmup, measure       time.Duration
	rate                            int
}

// record is what goes in and comes out: an id and the produce time.
type record struct {
	ID   int64 `json:"id"`
	Sent int64 `json:"sent"` // Unix nanoseconds
}

func (r *runner) run(ctx context.Context) (result, error) {
	res := result{interval: r.interval}
	in, out := "latency_in_"+r.tag, "latency_out_"+r.tag
	s, err := startSluice(r.bin, r.work, r.tag, r.interval)
	if err != nil {
		return res, err
	}
	defer s.stop()
	conn, err := pgx.Connect(ctx, "postgres://sluice@"+s.addr+"/sluice?sslmode=disable")
	if err != nil {
		return res, err
	}
	defer conn.Close(context.Background())
	prod, err := kgo.NewClient(kgo.SeedBrokers(r.broker), kgo.DefaultProduceTopic(in),
		kgo.ProducerLinger(0), kgo.AllowAutoTopicCreation())
	if err != nil {
		return res, err
	}
	defer prod.Close()
	// Create the input topic before the source looks at it.
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(`{"id":0,"sent":0}`)}).FirstErr(); err != nil {
		return res, err
	}
	for _, q := range []string{
		`CREATE SOURCE lat_in (id BIGINT, sent BIGINT) WITH (connector = 'kafka', topic = '` + in +
			`', properties.bootstrap.server = '` + r.broker + `', scan.startup.mode = 'earliest') FORMAT PLAIN ENCODE JSON`,
		`CREATE SINK lat_out AS SELECT id, sent FROM lat_in WITH (connector = 'kafka', topic = '` + out +
			`', properties.bootstrap.server = '` + r.broker + `', delivery = 'EXACTLY_ONCE') FORMAT PLAIN ENCODE JSON`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return res, fmt.Errorf("%s: %w", q, err)
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(r.broker), kgo.ConsumeTopics(out),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return res, err
	}
	defer cons.Close()

	total := int64(r.rate) * int64((r.warmup+r.measure)/time.Second)
	measureFrom := time.Now().Add(r.warmup) // records produced from then on count
	var cpu0 float64
	var m0 stageMetrics
	var t0 time.Time
	produced := make(chan error, 1)
	go func() { produced <- r.produce(ctx, prod, total) }()
	cpuAt := time.NewTimer(time.Until(measureFrom))
	defer cpuAt.Stop()
	var cpuEnd <-chan time.Time
	var profDone chan error
	seen := make([]bool, total+1)
	got, dups := int64(0), 0
	var lat []time.Duration
	deadline := time.Now().Add(r.warmup + r.measure + 60*time.Second)
	for got < total || cpuEnd != nil || t0.IsZero() {
		select {
		case <-cpuAt.C:
			t0 = time.Now()
			if cpu0, err = procCPU(s.pid); err != nil {
				return res, err
			}
			res.load = loadAvg()
			if m0, err = scrapeStages(ctx, s.http); err != nil {
				return res, err
			}
			end := time.NewTimer(r.measure)
			defer end.Stop()
			cpuEnd = end.C
			if r.profile != "" {
				profDone = make(chan error, 1)
				go func() { profDone <- saveProfile(ctx, s.http, r.measure, r.profile) }()
			}
		case <-cpuEnd:
			cpu1, err := procCPU(s.pid)
			if err != nil {
				return res, err
			}
			res.cpu, res.seconds = cpu1-cpu0, time.Since(t0).Seconds()
			m1, err := scrapeStages(ctx, s.http)
			if err != nil {
				return res, err
			}
			res.stages = m1.means(m0)
			cpuEnd = nil
		default:
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("%d of %d records arrived", got, total)
		}
		pctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		fs := cons.PollFetches(pctx)
		cancel()
		now := time.Now()
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		var perr error
		fs.EachError(func(_ string, _ int32, err error) {
			if err != context.DeadlineExceeded && err != context.Canceled {
				perr = err
			}
		})
		if perr != nil {
			return res, perr
		}
		var rerr error
		fs.EachRecord(func(rec *kgo.Record) {
			var v record
			if err := json.Unmarshal(rec.Value, &v); err != nil {
				rerr = fmt.Errorf("record %q: %v", rec.Value, err)
				return
			}
			if v.ID <= 0 {
				return // the topic-creating record
			}
			if v.ID > total || seen[v.ID] {
				dups++
				return
			}
			seen[v.ID] = true
			got++
			if sent := time.Unix(0, v.Sent); !sent.Before(measureFrom) && sent.Before(measureFrom.Add(r.measure)) {
				lat = append(lat, now.Sub(sent))
			}
		})
		if rerr != nil {
			return res, rerr
		}
	}
	if err := <-produced; err != nil {
		return res, err
	}
	if cpuEnd != nil || res.seconds == 0 {
		return res, fmt.Errorf("the run ended before its measured window")
	}
	if profDone != nil {
		if err := <-profDone; err != nil {
			return res, err
		}
	}
	// A duplicate would come in a later transaction: give it a moment.
	pctx, cancel := context.WithTimeout(ctx, r.interval+500*time.Millisecond)
	cons.PollFetches(pctx).EachRecord(func(*kgo.Record) { dups++ })
	cancel()
	if dups > 0 {
		return res, fmt.Errorf("%d duplicate records", dups)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	res.lat, res.records = lat, len(lat)
	return res, nil
}

// produce writes total records at r.rate per second, in steps of 5 ms,
// each stamped with the time it was handed to the producer.
func (r *runner) produce(ctx context.Context, cl *kgo.Client, total int64) error {
	const step = 5 * time.Millisecond
	perStep := float64(r.rate) * step.Seconds()
	start := time.Now()
	errc := make(chan error, 1)
	var id int64
	for k := 1; id < total; k++ {
		due := int64(perStep * float64(k))
		for id < due && id < total {
			id++
			v := fmt.Appendf(nil, `{"id":%d,"sent":%d}`, id, time.Now().UnixNano())
			cl.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
				if err != nil {
					select {
					case errc <- err:
					default:
					}
				}
			})
		}
		select {
		case err := <-errc:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(start.Add(time.Duration(k) * step))):
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}
