package server

import (
	"context"
	"sync"
	"time"

	"sluice/sql/types"
)

// The lag of every source and sink over the last minutes, sampled every
// lagEvery for sluice_catalog.lag_history: a source's lag is how far its
// readers are behind as of their last barrier, summed over partitions
// (Kafka: offsets behind the high watermark; generators: events due and
// not generated; tables: 0), a sink's the epochs it has logged and not yet
// delivered.
type lagHistory struct {
	mu     sync.Mutex
	rounds [][]lagPoint // oldest first, at most lagRounds
}

type lagPoint struct {
	at        time.Time
	kind      string // "source" or "sink"
	job, name string
	lag       int64
}

// lagRounds is how many samples the history keeps (5 minutes at
// lagEvery).
const lagRounds = 300

// lagEvery is how often the lag is sampled.
var lagEvery = time.Second

// runLagHistory samples the lag every lagEvery until ctx ends; the
// engine owns the goroutine (e.wg).
func (e *Engine) runLagHistory(ctx context.Context) {
	t := time.NewTicker(lagEvery)
	defer t.Stop()
	for {
		e.sampleLag(time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (e *Engine) sampleLag(now time.Time) {
	var pts []lagPoint
	for _, j := range e.rt.Jobs() {
		for _, s := range dashSources(j) {
			var n int64
			for _, l := range s.Lag {
				n += l.Behind
			}
			pts = append(pts, lagPoint{at: now, kind: "source", job: j.Name, name: s.Source, lag: n})
		}
		if j.Deliverer != nil {
			pts = append(pts, lagPoint{at: now, kind: "sink", job: j.Name, name: j.Name, lag: int64(j.Deliverer.Status().Pending)})
		}
	}
	h := &e.lagHist
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.rounds) == lagRounds {
		h.rounds = append(h.rounds[:0], h.rounds[1:]...)
	}
	h.rounds = append(h.rounds, pts)
}

func init() {
	addSys(&sysTable{schema: "sluice_catalog", name: "lag_history", oid: 13916, kind: 'v',
		cols: []types.Column{
			{Name: "sampled", Type: types.TTimestampTZ}, {Name: "kind", Type: types.TText},
			{Name: "job", Type: types.TText}, {Name: "name", Type: types.TText}, {Name: "lag", Type: types.TInt8},
		},
		rows: func(*sysEnv) []types.Row { return nil }, // computed by erows
		erows: func(e *Engine) ([]types.Row, error) {
			h := &e.lagHist
			h.mu.Lock()
			defer h.mu.Unlock()
			var rows []types.Row
			for _, r := range h.rounds {
				for _, p := range r {
					rows = append(rows, types.Row{types.NewTimestampTZ(p.at.UnixMicro()), types.NewString(p.kind),
						types.NewString(p.job), types.NewString(p.name), types.NewInt(p.lag)})
				}
			}
			return rows, nil
		}})
}
