// Command sluice is the Sluice streaming SQL database: one binary that
// serves the Postgres wire protocol, keeps its state in an embedded Pebble
// store and runs materialized views as checkpointed dataflows.
//
//	sluice [--listen 127.0.0.1:4566] [--data-dir ./sluice-data] [--checkpoint-interval 1s] [--memory-limit 1GiB] [--state-cache-mb 512] [--http 127.0.0.1:4567]
//	sluice backup --data-dir ./sluice-data --to /abs/dir (backup.go)
//	sluice bench nexmark --query q5 [--events 10000000] [--splits N] [--checkpoint-interval 1s] (bench.go)
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"
	// Embedded IANA time zone data (about 450 KB) for a machine without
	// /usr/share/zoneinfo: SET TIME ZONE and stored views name zones.
	_ "time/tzdata"

	// Connectors register themselves by name.
	_ "sluice/connectors/blackhole"
	_ "sluice/connectors/datagen"
	_ "sluice/connectors/file"
	_ "sluice/connectors/kafka"
	_ "sluice/connectors/mqtt"
	_ "sluice/connectors/mysqlcdc"
	_ "sluice/connectors/nats"
	_ "sluice/connectors/nexmark"
	_ "sluice/connectors/pgcdc"
	_ "sluice/connectors/postgres"
	_ "sluice/connectors/redis"
	_ "sluice/connectors/socket"
	"sluice/server"
	"sluice/server/pgwire"
	"sluice/sql/pgerror"
	"sluice/storage"
)

func main() {
	startGCTuner()
	if len(os.Args) > 1 && os.Args[1] == "bench" {
		if err := runBench(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "sluice bench: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "backup" {
		if err := runBackup(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "sluice backup: %v\n", err)
			if e := pgerror.Flatten(err); e.Hint != "" {
				fmt.Fprintf(os.Stderr, "hint: %s\n", e.Hint)
			}
			os.Exit(1)
		}
		return
	}
	listen := flag.String("listen", "127.0.0.1:4566", "address to serve the Postgres protocol on")
	dataDir := flag.String("data-dir", "./sluice-data", "directory of the embedded store")
	interval := flag.Duration("checkpoint-interval", time.Second, "time between checkpoints")
	stateCache := flag.Int64("state-cache-mb", storage.DefaultStateCacheBytes>>20, "memory for operator state before it spills to the store, MiB")
	confine := registerConfineFlags()
	sec := registerSecurityFlags() // security.go
	recoverStore := flag.Bool("recover", false, "start from what remains of a damaged data directory: damaged files are moved into <data-dir>/corrupt-<time>/ and what is lost is logged (README, \"Storage faults\")")
	diskReserve := flag.Uint64("disk-reserve-mb", storage.DefaultReserveBytes>>20, "free disk space, MiB, that writes leave for the store's own flushes and compactions: a write that would use it fails with 53100 and checkpoints wait")
	version := flag.Bool("version", false, "print the build and the data directory formats it reads and writes, and exit")
	memFlag := registerMemoryFlag(flag.CommandLine)
	httpf := registerHTTPFlags(flag.CommandLine) // http.go
	logs := registerLogFlags(flag.CommandLine)   // logging.go
	slow := flag.Duration("slow-checkpoint", 10*time.Second, "log a warning for every checkpoint that takes longer than this (0: never)")
	stuck := flag.Duration("stuck-barrier", -1, "log the operators holding an epoch's barrier when it has not committed after this long (default: max(3 × --checkpoint-interval, 5s); 0: never)")
	flag.Parse()
	if *version {
		fmt.Print(versionText())
		return
	}
	sl, err := logs.newLogger(os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sluice: error: %v\n", err)
		os.Exit(2)
	}
	logf := logfOf(sl)
	split, err := memFlag.split()
	if err != nil {
		logf("error: %v", err)
		os.Exit(2)
	}
	sf := storeFlags{recover: *recoverStore, diskReserve: *diskReserve << 20}
	stateBytes := *stateCache << 20
	split.apply(&stateBytes, &sf.memory, memFlag.stateCacheSet())
	logf("%v", split)
	sf.slowCheckpoint = *slow
	sf.stuckBarrier = *stuck
	if sf.stuckBarrier < 0 {
		sf.stuckBarrier = max(3**interval, 5*time.Second)
	}
	if err := run(*listen, *dataDir, *interval, stateBytes, sf, sec, logf, confine, httpf); err != nil {
		logf("error: %v", err)
		if e := pgerror.Flatten(err); e.Hint != "" {
			logf("hint: %s", e.Hint)
		}
		if storage.IsFormatError(err) {
			os.Exit(3) // a data directory this build does not read
		}
		os.Exit(1)
	}
}

// versionText is what --version prints: the build, the formats it writes
// and the oldest it reads (README, "Upgrades and formats").
func versionText() string {
	r := storage.ReadFormat
	return fmt.Sprintf("sluice %s\nwrites formats: %s\nreads formats: catalog %d-%d, plan %d-%d, state %d-%d\n", storage.Build(), storage.Current,
		r.Catalog, storage.CatalogFormat, r.Plan, storage.PlanFormat, r.State, storage.StateFormat)
}

// storeFlags are the flags about the store's faults (README, "Storage
// faults").
type storeFlags struct {
	recover     bool
	diskReserve uint64
	memory      storage.MemorySizes // from --memory-limit (memlimit.go)
	// slowCheckpoint: checkpoints slower than it are logged.
	slowCheckpoint time.Duration
	// stuckBarrier: epochs not committed after it are reported.
	stuckBarrier time.Duration
}

func run(listen, dataDir string, interval time.Duration, stateCache int64, sf storeFlags, sec *securityFlags, logf func(string, ...any), confine confineFlags, httpf *httpFlags) error {
	if err := sec.check(); err != nil {
		return err
	}
	password, err := sec.password()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	tlsCfg, err := sec.tlsConfig(dataDir)
	if err != nil {
		return err
	}
	cfg := server.Config{DataDir: dataDir, CheckpointInterval: interval, StateCacheBytes: stateCache, Recover: sf.recover, DiskReserveBytes: sf.diskReserve, Memory: sf.memory, Logf: logf, SlowCheckpoint: sf.slowCheckpoint, StuckBarrier: sf.stuckBarrier,
		Auth: sec.authConfig(password)}
	if err := confine.apply(&cfg); err != nil {
		return err
	}
	eng, err := server.Open(cfg)
	if err != nil {
		return err
	}
	if err := checkListen(listen, eng.TrustMode(), eng.Superuser()); err != nil {
		eng.Close()
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		eng.Close()
		return err
	}
	web, err := startHTTP(httpf, eng, eng.Superuser(), password, logf)
	if err != nil {
		ln.Close()
		eng.Close()
		return err
	}
	defer web.Close()
	if err := writeAddr(dataDir, ln.Addr()); err != nil {
		logf("warning: recording the address for `sluice backup`: %v", err)
	}
	uln, err := listenUnix(sec.unixSocketDir, ln.Addr())
	if err != nil {
		logf("warning: %v (serving TCP only)", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := pgwire.NewServer(eng, sec.pgwireOptions(eng, tlsCfg, logf))
	mode := "password authentication"
	if eng.TrustMode() {
		mode = "trust (no password configured: local connections only)"
	}
	logf("listening on %s (data in %s; %s)", ln.Addr(), dataDir, mode)
	if web != nil {
		logf("HTTP endpoint on http://%s (dashboard at /, /metrics, /debug/pprof)", web.addr)
	}
	var unixDone chan error
	if uln != nil {
		logf("listening on unix socket %s", uln.Addr())
		unixDone = make(chan error, 1)
		go func() { unixDone <- srv.Serve(ctx, uln) }() // owned: waited for below
	}
	serveErr := srv.Serve(ctx, ln)
	if unixDone != nil {
		stop()
		<-unixDone
	}
	if cerr := eng.Close(); cerr != nil && serveErr == nil {
		serveErr = cerr
	}
	if serveErr != nil && ctx.Err() == nil {
		return fmt.Errorf("serve: %w", serveErr)
	}
	return nil
}
