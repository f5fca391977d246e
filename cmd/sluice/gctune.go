package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// The collector's target follows the live heap (README, "Memory"): the
// next collection starts when the heap has grown by the live data, so
// the heap stays near twice what is live (GOGC 100), but by at least
// gcMinHeadroom, so that a small live heap (a stateless pipeline's few
// MiB) is not collected after every few batches. A fixed GOGC of 300
// (the build before) let a stateless filter whose live heap was ~100 MiB
// peak at four times that.
const (
	gcMinHeadroom = 32 << 20
	gcMaxPercent  = 300
)

// gcTuner re-arms itself as a finalizer that runs after every collection
// and sets the next target from the live heap the collection measured.
// It owns no goroutine: the runtime's finalizer goroutine calls it.
type gcTuner struct {
	sample  []metrics.Sample
	percent int
}

// startGCTuner sets GOGC from the live heap after every collection,
// unless GOGC is set in the environment (which wins).
func startGCTuner() {
	if os.Getenv("GOGC") != "" {
		return
	}
	t := &gcTuner{sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}, percent: gcMaxPercent}
	debug.SetGCPercent(gcMaxPercent) // the heap starts small: the floor applies
	t.arm()
}

// arm attaches the finalizer to a fresh object that only the next
// collection frees.
func (t *gcTuner) arm() {
	s := new([16]byte)
	runtime.SetFinalizer(s, func(*[16]byte) { t.tune(); t.arm() })
}

// tune sets the percentage for the live heap just measured.
func (t *gcTuner) tune() {
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	if p := gcPercentFor(t.sample[0].Value.Uint64()); p != t.percent {
		t.percent = p
		debug.SetGCPercent(p)
	}
}

// gcPercentFor is the GOGC that puts the next target at live plus
// max(live, gcMinHeadroom), at most gcMaxPercent.
func gcPercentFor(live uint64) int {
	if live == 0 || live >= gcMinHeadroom {
		if live == 0 {
			return gcMaxPercent
		}
		return 100
	}
	return min(gcMaxPercent, int(100*gcMinHeadroom/live))
}
