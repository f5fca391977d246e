package connector

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Crashpoint kills the process with SIGKILL at a named point of the
// commit path when the environment variable SLUICE_CRASHPOINT names it:
// "name" (its first hit) or "name:n" (its n-th hit). Crash tests use it
// to stop a real sluice process at exact moments; when the variable is
// unset it costs one atomic load.
//
// Points: checkpoint-before-commit, checkpoint-after-commit (the epoch's
// synced Pebble write), sink-before-commit (a sink between its external
// pre-commit and commit: the Kafka transaction flushed but not ended, the
// PostgreSQL transaction before COMMIT, Redis before EXEC, the file
// written but not renamed), sink-after-write (the external system has the
// epoch, the sink log does not know yet), recovery (all jobs restored,
// before any runs).
func Crashpoint(name string) {
	if !crash.armed.Load() {
		return
	}
	crash.once.Do(parseCrashpoint)
	if name != crash.name {
		return
	}
	if crash.hits.Add(1) == crash.at {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // never returns
	}
}

var crash struct {
	armed atomic.Bool
	once  sync.Once
	name  string
	at    int64
	hits  atomic.Int64
}

func init() {
	crash.armed.Store(os.Getenv("SLUICE_CRASHPOINT") != "")
}

func parseCrashpoint() {
	v := os.Getenv("SLUICE_CRASHPOINT")
	name, n, _ := strings.Cut(v, ":")
	crash.name = name
	crash.at = 1
	if x, err := strconv.ParseInt(n, 10, 64); err == nil && x > 0 {
		crash.at = x
	}
}
