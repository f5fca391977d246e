package job

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"strings"
	"time"

	"sluice/exec/flow"
)

// The pprof labels every job goroutine carries (spawn).
const (
	labelJob      = "job"
	labelOperator = "operator"
)

// operatorName is the operator label of goroutine name of job j: its
// actor's name without the job's prefix ("2-Project", "source").
func operatorName(j *Job, name string) string {
	return strings.TrimPrefix(name, j.Name+"/")
}

// BarrierReport says why the oldest epoch in flight has not committed: the
// operators that have not passed its barrier.
type BarrierReport struct {
	Epoch     uint64 `json:"epoch"`
	WaitingMs int64  `json:"waiting_ms"`
	// Collectors is how many collectors (sources, terminal operators)
	// have not reported the epoch; 0 means the commit itself is slow.
	Collectors int `json:"collectors_remaining"`
	// Holding are the operators that have not passed the barrier and are
	// busy in their own code (processing a batch or checkpointing): the
	// culprits. Behind are those that have not passed it either but wait
	// for input or for room downstream.
	Holding []OperatorReport `json:"holding"`
	Behind  []OperatorReport `json:"behind"`
	// Commit, when every collector has reported the epoch, is what its
	// commit is doing ("writing 1234 bytes to the store", "absorbing the
	// state of job v") and CommitMs for how long.
	Commit   string `json:"commit,omitempty"`
	CommitMs int64  `json:"commit_ms,omitempty"`
}

// sourceProgress is what the source actors (flow.ReaderSource,
// flow.TableSource) tell the report.
type sourceProgress interface {
	Progress() (name string, passed uint64, phase int32)
}

// OperatorReport is one operator of a BarrierReport.
type OperatorReport struct {
	Job      string `json:"job"`
	JobID    uint64 `json:"job_id"`
	Operator string `json:"operator"`
	Kind     string `json:"kind"`
	Phase    string `json:"phase"`
	// Passed is the last epoch whose barrier it forwarded.
	Passed uint64 `json:"passed_epoch"`
	// Goroutines is the goroutine profile (debug=1) of the goroutines
	// labelled with the operator (Holding only).
	Goroutines string `json:"goroutines,omitempty"`
	// Top names the innermost non-runtime functions of its goroutines.
	Top string `json:"top,omitempty"`
}

// Barriers reports on the oldest epoch in flight if it has waited at
// least minAge; ok is false if there is none.
func (r *Runtime) Barriers(minAge time.Duration) (rep BarrierReport, ok bool) {
	f, ok := r.coord.Oldest()
	if !ok || time.Since(f.Started) < minAge {
		return BarrierReport{}, false
	}
	rep = BarrierReport{Epoch: f.Epoch, WaitingMs: time.Since(f.Started).Milliseconds(), Collectors: f.Remaining,
		Holding: []OperatorReport{}, Behind: []OperatorReport{}}
	if f.Remaining == 0 {
		// Every operator passed it: the commit is slow. The jobs are not
		// walked: absorbing their state holds the runtime's lock.
		if f.Commit != "" {
			rep.Commit, rep.CommitMs = f.Commit, time.Since(f.CommitSince).Milliseconds()
		}
		return rep, true
	}
	for _, j := range r.Jobs() {
		if j.Detached() {
			continue // not in the epochs yet: it holds none (detached.go)
		}
		for _, s := range j.sources {
			sp, ok := s.(sourceProgress)
			if !ok {
				continue
			}
			name, passed, ph := sp.Progress()
			if ph == flow.PhaseDone || passed >= f.Epoch {
				continue
			}
			o := OperatorReport{Job: j.Name, JobID: j.ID, Operator: operatorName(j, name), Kind: "Source", Phase: flow.PhaseName(ph), Passed: passed}
			if ph == flow.PhaseReading || ph == flow.PhaseProcessing {
				rep.Holding = append(rep.Holding, o)
			} else {
				rep.Behind = append(rep.Behind, o)
			}
		}
		for _, a := range j.Actors {
			ph := a.Phase()
			if ph == flow.PhaseDone || a.Passed() >= f.Epoch {
				continue
			}
			o := OperatorReport{Job: j.Name, JobID: j.ID, Operator: operatorName(j, a.Name), Kind: a.Kind, Phase: flow.PhaseName(ph), Passed: a.Passed()}
			if ph == flow.PhaseProcessing || ph == flow.PhaseCheckpoint {
				rep.Holding = append(rep.Holding, o)
			} else {
				rep.Behind = append(rep.Behind, o)
			}
		}
	}
	if len(rep.Holding) > 0 {
		groups := goroutineGroups()
		for i := range rep.Holding {
			o := &rep.Holding[i]
			want := []string{fmt.Sprintf("%q:%q", labelJob, o.Job), fmt.Sprintf("%q:%q", labelOperator, o.Operator)}
			var tops []string
			for _, g := range groups {
				if strings.Contains(g.labels, want[0]) && strings.Contains(g.labels, want[1]) {
					o.Goroutines += g.text + "\n"
					tops = append(tops, g.top)
				}
			}
			o.Top = strings.Join(tops, "; ")
		}
	}
	return rep, true
}

// String is the report in one line (the log's).
func (b BarrierReport) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "stuck barrier: epoch %d has not committed after %s", b.Epoch, (time.Duration(b.WaitingMs) * time.Millisecond).Round(100*time.Millisecond))
	switch {
	case len(b.Holding) > 0:
		sb.WriteString(": held by ")
		for i, o := range b.Holding {
			if i > 0 {
				sb.WriteString(", ")
			}
			fmt.Fprintf(&sb, "job %s operator %s (%s, %s", o.Job, o.Operator, o.Kind, o.Phase)
			if o.Top != "" {
				fmt.Fprintf(&sb, " in %s", o.Top)
			}
			sb.WriteString(")")
		}
		if len(b.Behind) > 0 {
			plural := "s wait"
			if len(b.Behind) == 1 {
				plural = " waits"
			}
			fmt.Fprintf(&sb, "; %d operator%s behind them", len(b.Behind), plural)
		}
	case b.Collectors == 0 && b.Commit != "":
		fmt.Fprintf(&sb, ": every operator has passed it; the commit is slow: %s (for %s)", b.Commit,
			(time.Duration(b.CommitMs) * time.Millisecond).Round(100*time.Millisecond))
	case b.Collectors == 0:
		sb.WriteString(": every operator has passed it; the commit is slow")
	default:
		fmt.Fprintf(&sb, ": %d collectors have not reported it, no operator is busy (a source has not emitted the barrier?)", b.Collectors)
	}
	return sb.String()
}

// Text is the report with the stacks of the holding operators.
func (b BarrierReport) Text() string {
	var sb strings.Builder
	sb.WriteString(b.String())
	sb.WriteString("\n")
	for _, o := range b.Behind {
		fmt.Fprintf(&sb, "behind: job %s operator %s (%s, %s, passed epoch %d)\n", o.Job, o.Operator, o.Kind, o.Phase, o.Passed)
	}
	for _, o := range b.Holding {
		fmt.Fprintf(&sb, "\njob %s operator %s (%s, %s, passed epoch %d):\n%s", o.Job, o.Operator, o.Kind, o.Phase, o.Passed, o.Goroutines)
	}
	return sb.String()
}

// WatchBarriers logs a BarrierReport once for every epoch that has not
// committed after stuck, checking every second (or stuck/4), until ctx
// ends.
func (r *Runtime) WatchBarriers(ctx context.Context, stuck time.Duration) {
	every := min(time.Second, max(stuck/4, 10*time.Millisecond))
	t := time.NewTicker(every)
	defer t.Stop()
	var logged uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if rep, ok := r.Barriers(stuck); ok && rep.Epoch != logged {
				logged = rep.Epoch
				r.logf("%s", rep)
			}
		}
	}
}

type goroutineGroup struct {
	labels string // the "# labels:" line
	top    string
	text   string
}

// goroutineGroups parses the goroutine profile in its debug=1 form: one
// group of identical stacks per blank-line separated block.
func goroutineGroups() []goroutineGroup {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		return nil
	}
	var out []goroutineGroup
	for _, block := range strings.Split(buf.String(), "\n\n") {
		var g goroutineGroup
		var frames []string
		sc := bufio.NewScanner(strings.NewReader(block))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if l, ok := strings.CutPrefix(line, "# labels: "); ok {
				g.labels = l
				continue
			}
			// "#\t0x4a5b6c\tpkg.func+0x1c\t/path/file.go:12"
			if f := strings.Split(line, "\t"); len(f) >= 3 && f[0] == "#" {
				fn := f[2]
				if i := strings.LastIndex(fn, "+0x"); i > 0 {
					fn = fn[:i]
				}
				if !strings.HasPrefix(fn, "runtime.") && !strings.HasPrefix(fn, "reflect.") && len(frames) < 3 {
					frames = append(frames, fn)
				}
			}
		}
		if g.labels == "" {
			continue
		}
		g.top = strings.Join(frames, " < ")
		g.text = block
		out = append(out, g)
	}
	return out
}
