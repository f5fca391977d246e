// Command sidebyside is the side-by-side benchmark of issue 20: one file
// of Nexmark bids as JSON lines, and two workloads,
//
//	W1  SELECT auction, bidder, price, date_time FROM bids WHERE price > 10000
//	W2  SELECT auction, window_start, count(*) AS n, max(price) AS max_price
//	    FROM TUMBLE(bids, date_time, INTERVAL '10' SECOND)
//	    GROUP BY auction, window_start EMIT ON WINDOW CLOSE
//
// run in interleaved rounds by three systems:
//
//   - floor: a hand-written Go program (this binary started again with the
//     argument "floor"): one goroutine, a scanner for flat JSON objects, the
//     workload in plain Go, the rows written as JSON lines;
//   - sluice-kafka: a fresh sluice process reading the records from Kafka
//     (a testbroker on 127.0.0.1 started here; the topic is preloaded from
//     the file before the rounds, untimed) with scan.bounded = 'latest',
//     into an EXACTLY_ONCE file sink;
//   - sluice-file: the same through the file source.
//
// Every run's output is checked against reference results computed from the
// generator's values (W1: row count and an order-independent checksum;
// W2: every window's count and max; the file source, which does not end,
// leaves the last window open, so its reference is the windows the
// watermark closed). Per run it prints events/s (bids over the time from
// CREATE SINK, or the floor's start, to the last row written), CPU-seconds
// per million bids (the sluice process's utime+stime from /proc/PID/stat
// over the same span; the floor's own rusage) and peak RSS (VmHWM), with,
// for sluice, the peak of its anonymous memory (RssAnon sampled every 20
// ms: VmHWM also counts the pages of the binary the process touched, which
// depend on the page cache: a binary just built has all of its pages
// cached and maps more of them); then per system and workload the medians
// and the ratio to the floor.
//
//	go run ./bench/sidebyside                      # 5,000,000 bids, 3 rounds
//	go run ./bench/sidebyside --bids 1000000 --rounds 5 --profile 3s
//
// --profile saves a CPU profile of sluice (its /debug/pprof endpoint) in
// one extra, unreported Kafka run per workload, into --keep's directory.
// --baseline OLD-SLUICE-BINARY runs every sluice system with that binary
// too, just before the built one in each round: before/after figures.
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
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "floor" {
		if err := floorMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "sidebyside:", err)
		os.Exit(1)
	}
}

func run() error {
	bids := flag.Int64("bids", 5_000_000, "bids in the input file")
	rounds := flag.Int("rounds", 3, "interleaved rounds")
	systems := flag.String("systems", "floor,sluice-kafka,sluice-file", "systems to run, in each round's order")
	workloads := flag.String("workloads", "w1,w2", "workloads to run")
	profile := flag.Duration("profile", 0, "when set, one extra Kafka run per workload saves a CPU profile this long")
	keep := flag.String("keep", "", "work directory to use and keep (default: a temporary one, removed)")
	flag.StringVar(&checkpointInterval, "checkpoint-interval", "", "sluice's --checkpoint-interval (default: its own, 1s)")
	baseline := flag.String("baseline", "", "a sluice binary to compare with: each sluice system also runs with it (as <system>@base), just before the built one")
	flag.Parse()
	if *bids <= 0 || *rounds <= 0 {
		return fmt.Errorf("--bids and --rounds must be positive")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	work := *keep
	if work == "" {
		d, err := os.MkdirTemp("", "sidebyside-")
		if err != nil {
			return err
		}
		work = d
		defer os.RemoveAll(work)
	}
	if err := os.MkdirAll(filepath.Join(work, "files", "in"), 0o755); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
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

	input := filepath.Join(work, "files", "in", "bids.jsonl")
	t0 := time.Now()
	ref, err := generate(input, *bids)
	if err != nil {
		return err
	}
	st, _ := os.Stat(input)
	fmt.Printf("input: %d bids, %.0f MB, in %.1fs; reference: W1 %d rows, W2 %d windows (%d closed while running)\n",
		ref.bids, float64(st.Size())/1e6, time.Since(t0).Seconds(), ref.w1.rows, ref.w2.rows, ref.w2Closed.rows)

	var sys []string
	for _, s := range strings.Split(*systems, ",") {
		if *baseline != "" && strings.HasPrefix(s, "sluice-") {
			sys = append(sys, s+"@base")
		}
		sys = append(sys, s)
	}
	var brk *broker
	if contains(sys, "sluice-kafka") {
		t0 = time.Now()
		if brk, err = startBroker(ctx, brokerBin, work, input); err != nil {
			return err
		}
		defer brk.stop()
		fmt.Printf("kafka: topic %s preloaded on %s in %.1fs\n", benchTopic, brk.addr, time.Since(t0).Seconds())
	}

	type key struct{ system, workload string }
	all := map[key][]measured{}
	var order []key
	one := func(round int, system, workload string, prof time.Duration) (measured, error) {
		want := map[string]results{"w1": ref.w1, "w2": ref.w2}[workload]
		name := fmt.Sprintf("%s-%s-%d", system, workload, round)
		bin := sluiceBin
		if b, ok := strings.CutSuffix(system, "@base"); ok {
			system, bin = b, *baseline
		}
		switch system {
		case "floor":
			return runFloor(ctx, self, workload, input, filepath.Join(work, name+".jsonl"), want)
		case "sluice-kafka", "sluice-file":
			r := &sluiceRun{bin: bin, work: work, workload: workload, input: input, want: want, name: name, profile: prof}
			if system == "sluice-kafka" {
				r.source, r.broker, r.brokerPid = "kafka", brk.addr, brk.cmd.Process.Pid
			} else {
				r.source = "file"
				if workload == "w2" {
					r.want = ref.w2Closed
				}
			}
			m, err := r.run(ctx)
			m.Events = ref.bids
			return m, err
		}
		return measured{}, fmt.Errorf("--systems: unknown system %q (floor, sluice-kafka, sluice-file)", system)
	}
	for round := 1; round <= *rounds; round++ {
		for _, w := range strings.Split(*workloads, ",") {
			for _, s := range sys {
				m, err := one(round, s, w, 0)
				if err != nil {
					return fmt.Errorf("round %d, %s %s: %w", round, s, w, err)
				}
				k := key{s, w}
				if _, ok := all[k]; !ok {
					order = append(order, k)
				}
				all[k] = append(all[k], m)
				brokerCPU := ""
				if m.BrokerCPUSeconds > 0 {
					brokerCPU = fmt.Sprintf("  broker %.3f CPU-s/M", m.BrokerCPUSeconds/(float64(m.Events)/1e6))
				}
				fmt.Printf("round %d %-17s %s  %10.0f events/s  %6.3f CPU-s/M  %7.1f MiB peak%s  %6.2f s  load %.1f  output ok%s\n",
					round, s, strings.ToUpper(w), m.eventsPerSec(), m.cpuPerMillion(), float64(m.PeakRSSKiB)/1024, anonNote(m.PeakAnonKiB), m.Seconds, m.Load, brokerCPU)
			}
		}
	}

	fmt.Printf("\nmedians of %d rounds, %d bids (%s):\n", *rounds, ref.bids, time.Now().UTC().Format("2006-01-02 15:04 MST"))
	for _, k := range order {
		ms := all[k]
		rate := median(ms, measured.eventsPerSec)
		cpu := median(ms, measured.cpuPerMillion)
		rss := median(ms, func(m measured) float64 { return float64(m.PeakRSSKiB) / 1024 })
		load := median(ms, func(m measured) float64 { return m.Load })
		anon := median(ms, func(m measured) float64 { return float64(m.PeakAnonKiB) })
		line := fmt.Sprintf("%-17s %s  %10.0f events/s  %6.3f CPU-s/M  %7.1f MiB peak%s  load %.1f",
			k.system, strings.ToUpper(k.workload), rate, cpu, rss, anonNote(int64(anon)), load)
		if f, ok := all[key{"floor", k.workload}]; ok && k.system != "floor" {
			line += fmt.Sprintf("  %.2f of the floor's events/s, %.1f× its CPU",
				rate/median(f, measured.eventsPerSec), cpu/median(f, measured.cpuPerMillion))
		}
		fmt.Println(line)
	}

	if *profile > 0 && brk != nil {
		for _, w := range strings.Split(*workloads, ",") {
			if _, err := one(0, "sluice-kafka", w, *profile); err != nil {
				return fmt.Errorf("profile run %s: %w", w, err)
			}
			fmt.Printf("profile: %s\n", filepath.Join(work, "cpu-sluice-kafka-"+w+"-0.pprof"))
		}
	}
	return nil
}

// runFloor runs the floor process and checks its output.
func runFloor(ctx context.Context, self, workload, input, output string, want results) (measured, error) {
	defer os.Remove(output)
	var m measured
	load := loadAvg()
	cmd := exec.CommandContext(ctx, self, "floor", workload, input, output)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(out, &m); err != nil {
		return m, fmt.Errorf("floor printed %q: %v", out, err)
	}
	m.Load = load
	got, err := readResults(workload, []string{output})
	if err != nil {
		return m, err
	}
	if d := diff(want, got); d != "" {
		return m, fmt.Errorf("the floor's %s output differs from the reference: %s", workload, d)
	}
	return m, nil
}

func median(ms []measured, f func(measured) float64) float64 {
	v := make([]float64, len(ms))
	for i, m := range ms {
		v[i] = f(m)
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// moduleRoot is the directory of the sluice module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("run sidebyside inside the sluice module")
	}
	return filepath.Dir(mod), nil
}

// anonNote is " (anon N MiB)" for a sampled anonymous peak, else "".
func anonNote(kib int64) string {
	if kib <= 0 {
		return ""
	}
	return fmt.Sprintf(" (anon %.1f)", float64(kib)/1024)
}
