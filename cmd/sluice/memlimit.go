package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"sluice/exec/sink"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/storage"
)

// memSplit is how --memory-limit is divided (README, "Memory"): Pebble's
// block cache and memtables are outside the Go heap; the rest is the Go
// runtime's soft limit, of which a quarter is the operators' state cache
// (the state they keep resident before spilling to the store; the other
// three quarters are rows in flight, batches, sessions and garbage not yet
// collected).
type memSplit struct {
	limit      int64
	blockCache int64
	memTable   int64 // each of memTables
	memTables  int
	goLimit    int64
	stateCache int64
	sinkMemLog int64 // each sink's epochs held in memory for delivery
}

const mib = 1 << 20

// splitMemory divides limit bytes: at 1 GiB, a 64 MiB block cache, three
// 32 MiB memtables, an 864 MiB Go soft limit, a 216 MiB state cache and
// 6 MiB of each sink's epochs held for delivery. The memtables and the
// sink's share are capped (32 MiB each, 32 MiB) so that the default
// limit, a quarter of the machine, does not make a stateless pipeline
// hold more than its live data: a memtable's pages are resident once
// written, and the sink's held epochs are live heap.
func splitMemory(limit int64) memSplit {
	s := memSplit{limit: limit, memTables: 3}
	s.blockCache = min(max(limit/16, 8*mib), 256*mib)
	s.memTable = min(max(limit/32, 4*mib), 32*mib)
	s.goLimit = limit - s.blockCache - int64(s.memTables)*s.memTable
	s.stateCache = s.goLimit / 4
	s.sinkMemLog = min(max(s.goLimit/128, 4*mib), 32*mib)
	return s
}

// minMemoryLimit is the smallest --memory-limit accepted: below it the
// fixed costs (runtime, catalog, connections) leave no room for state.
const minMemoryLimit = 128 * mib

// defaultMemoryLimit is a quarter of the machine's memory (MemTotal), or
// 1 GiB when it cannot be read.
func defaultMemoryLimit() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 1 << 30
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 2 && fs[0] == "MemTotal:" {
			if kb, err := strconv.ParseInt(fs[1], 10, 64); err == nil && kb > 0 {
				return max(kb<<10/4, minMemoryLimit)
			}
		}
	}
	return 1 << 30
}

// parseBytes reads a size: a number of bytes, or one with a unit (KiB,
// MiB, GiB, TiB, or K, M, G, T, KB, MB, GB, TB, all binary).
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.ToUpper(strings.TrimSpace(t[i:]))
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, pgerror.Newf(pgcode.InvalidParameterValue, "invalid size %q", s).
			WithHint("Give bytes, or a number with KiB, MiB, GiB or TiB, e.g. 1GiB.")
	}
	mult := map[string]float64{"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20, "MIB": 1 << 20,
		"G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TB": 1 << 40, "TIB": 1 << 40}[unit]
	if mult == 0 {
		return 0, pgerror.Newf(pgcode.InvalidParameterValue, "invalid size %q: unknown unit %q", s, unit).
			WithHint("Give bytes, or a number with KiB, MiB, GiB or TiB, e.g. 1GiB.")
	}
	return int64(v * mult), nil
}

// memoryFlag is --memory-limit: "" means the default.
type memoryFlag struct {
	value string
	// stateCacheSet: --state-cache-mb was given, and overrides the
	// state cache's share.
	stateCacheSet func() bool
}

func registerMemoryFlag(fs *flag.FlagSet) *memoryFlag {
	m := &memoryFlag{}
	fs.StringVar(&m.value, "memory-limit", "", "memory the server may use, e.g. 1GiB (default: a quarter of the machine's memory); divided among the Go heap's soft limit, the operator state cache and the store's block cache and memtables (README, \"Memory\")")
	m.stateCacheSet = func() bool {
		set := false
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == "state-cache-mb" })
		return set
	}
	return m
}

// split returns the flag's division.
func (m *memoryFlag) split() (memSplit, error) {
	limit := defaultMemoryLimit()
	if m.value != "" {
		n, err := parseBytes(m.value)
		if err != nil {
			return memSplit{}, pgerror.Wrap(err, pgcode.InvalidParameterValue, "--memory-limit")
		}
		if n < minMemoryLimit {
			return memSplit{}, pgerror.Newf(pgcode.InvalidParameterValue, "--memory-limit %s is below the minimum of %d MiB", m.value, minMemoryLimit/mib).
				WithHint("Give at least 128MiB.")
		}
		limit = n
	}
	return splitMemory(limit), nil
}

// apply sets the Go soft memory limit (GOMEMLIMIT in the environment
// wins) and the store's sizes in cfg's fields; stateCache is the
// --state-cache-mb value in bytes, used when that flag was given.
func (s *memSplit) apply(stateCache *int64, mem *storage.MemorySizes, explicitState bool) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(s.goLimit)
	}
	if explicitState {
		s.stateCache = *stateCache
	} else {
		*stateCache = s.stateCache
	}
	*mem = storage.MemorySizes{BlockCacheBytes: s.blockCache, MemTableBytes: uint64(s.memTable), MemTables: s.memTables}
	sink.SetMemLogBytes(s.sinkMemLog)
}

// String is the split as the start-up log shows it.
func (s memSplit) String() string {
	return fmt.Sprintf("memory limit %d MiB: Go heap soft limit %d MiB (of which operator state cache %d MiB, each sink's epochs awaiting delivery %d MiB), store block cache %d MiB, memtables %d x %d MiB",
		s.limit/mib, s.goLimit/mib, s.stateCache/mib, s.sinkMemLog/mib, s.blockCache/mib, s.memTables, s.memTable/mib)
}
