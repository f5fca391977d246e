package server

import (
	"strings"
	"time"

	"sluice/exec/job"
	"sluice/sql/types"
)

// The sluice_catalog schema's relations show the running dataflow: its
// jobs and their operators, with the figures the Prometheus metrics read
// (metrics.go), and the coordinator's latest checkpoints. They are
// computed when read.
func init() {
	addSys(&sysTable{schema: "sluice_catalog", name: "jobs", oid: 13910, kind: 'v',
		cols: []types.Column{
			{Name: "id", Type: types.TInt8}, {Name: "name", Type: types.TText}, {Name: "kind", Type: types.TText},
			{Name: "status", Type: types.TText}, {Name: "error", Type: types.TText},
			{Name: "progress", Type: types.TText}, {Name: "committed_epoch", Type: types.TInt8},
		},
		rows: func(*sysEnv) []types.Row { return nil }, // computed by erows
		erows: func(e *Engine) ([]types.Row, error) {
			var rows []types.Row
			for _, ji := range e.jobInfos() { // jobs.go
				rows = append(rows, types.Row{types.NewInt(int64(ji.id)), types.NewString(ji.name), types.NewString(ji.kind),
					types.NewString(ji.status), ji.err, types.NewString(ji.progress), types.NewInt(int64(ji.committed))})
			}
			return rows, nil
		}})
	addSys(&sysTable{schema: "sluice_catalog", name: "operators", oid: 13911, kind: 'v',
		cols: []types.Column{
			{Name: "job_id", Type: types.TInt8}, {Name: "job", Type: types.TText}, {Name: "operator", Type: types.TText},
			{Name: "kind", Type: types.TText}, {Name: "rows_in", Type: types.TInt8}, {Name: "rows_out", Type: types.TInt8},
			{Name: "state_bytes", Type: types.TInt8}, {Name: "state_keys", Type: types.TInt8},
		},
		rows: func(*sysEnv) []types.Row { return nil },
		erows: func(e *Engine) ([]types.Row, error) {
			var rows []types.Row
			for _, j := range e.rt.Jobs() {
				for _, a := range j.Actors {
					in, out, bytes, keys := types.Null, types.Null, types.Null, types.Null
					if st := a.Stats; st != nil {
						in, out = types.NewInt(st.RowsIn.Load()), types.NewInt(st.RowsOut.Load())
						if st.HasState.Load() {
							bytes, keys = types.NewInt(st.StateBytes.Load()), types.NewInt(st.StateKeys.Load())
						}
					}
					rows = append(rows, types.Row{types.NewInt(int64(j.ID)), types.NewString(j.Name),
						types.NewString(strings.TrimPrefix(a.Name, j.Name+"/")), types.NewString(a.Kind), in, out, bytes, keys})
				}
			}
			return rows, nil
		}})
	addSys(&sysTable{schema: "sluice_catalog", name: "edges", oid: 13913, kind: 'v',
		cols: []types.Column{
			{Name: "job_id", Type: types.TInt8}, {Name: "job", Type: types.TText},
			{Name: "from_operator", Type: types.TText}, {Name: "to_operator", Type: types.TText},
		},
		rows: func(*sysEnv) []types.Row { return nil },
		erows: func(e *Engine) ([]types.Row, error) {
			var rows []types.Row
			for _, j := range e.rt.Jobs() {
				for _, ed := range j.Edges {
					rows = append(rows, types.Row{types.NewInt(int64(j.ID)), types.NewString(j.Name), types.NewString(ed[0]), types.NewString(ed[1])})
				}
			}
			return rows, nil
		}})
	ms := func(d time.Duration) types.Datum { return types.NewFloat(float64(d.Microseconds()) / 1000) }
	addSys(&sysTable{schema: "sluice_catalog", name: "checkpoints", oid: 13912, kind: 'v',
		cols: []types.Column{
			{Name: "epoch", Type: types.TInt8}, {Name: "started", Type: types.TTimestampTZ},
			{Name: "duration_ms", Type: types.TFloat8}, {Name: "aligned_ms", Type: types.TFloat8}, {Name: "commit_ms", Type: types.TFloat8},
			{Name: "bytes", Type: types.TInt8}, {Name: "failed", Type: types.TBool},
		},
		rows: func(*sysEnv) []types.Row { return nil },
		erows: func(e *Engine) ([]types.Row, error) {
			var rows []types.Row
			for _, r := range e.coord.History(checkpointRows) {
				rows = append(rows, types.Row{types.NewInt(int64(r.Epoch)), types.NewTimestampTZ(r.Started.UnixMicro()),
					ms(r.Duration), ms(r.Aligned), ms(r.Commit), types.NewInt(r.Bytes), types.NewBool(r.Failed)})
			}
			return rows, nil
		}})
	// stuck_barrier: the operators holding the oldest epoch in flight once
	// it has waited stuckAfter (dashboard.go), one row each; holding is
	// false for those behind it (waiting for input or room downstream).
	addSys(&sysTable{schema: "sluice_catalog", name: "stuck_barrier", oid: 13914, kind: 'v',
		cols: []types.Column{
			{Name: "epoch", Type: types.TInt8}, {Name: "waiting_ms", Type: types.TInt8},
			{Name: "job_id", Type: types.TInt8}, {Name: "job", Type: types.TText}, {Name: "operator", Type: types.TText},
			{Name: "kind", Type: types.TText}, {Name: "phase", Type: types.TText}, {Name: "holding", Type: types.TBool},
			{Name: "passed_epoch", Type: types.TInt8}, {Name: "top", Type: types.TText},
		},
		rows: func(*sysEnv) []types.Row { return nil },
		erows: func(e *Engine) ([]types.Row, error) {
			rep, ok := e.rt.Barriers(e.stuckAfter())
			if !ok {
				return nil, nil
			}
			var rows []types.Row
			add := func(o job.OperatorReport, holding bool) {
				rows = append(rows, types.Row{types.NewInt(int64(rep.Epoch)), types.NewInt(rep.WaitingMs),
					types.NewInt(int64(o.JobID)), types.NewString(o.Job), types.NewString(o.Operator), types.NewString(o.Kind),
					types.NewString(o.Phase), types.NewBool(holding), types.NewInt(int64(o.Passed)), types.NewString(o.Top)})
			}
			for _, o := range rep.Holding {
				add(o, true)
			}
			for _, o := range rep.Behind {
				add(o, false)
			}
			return rows, nil
		}})
}

// checkpointRows is how many of the latest checkpoints
// sluice_catalog.checkpoints lists.
const checkpointRows = 100
