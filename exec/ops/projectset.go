package ops

import (
	"sluice/exec/eval"
	"sluice/exec/flow"
	"sluice/exec/limit"
	"sluice/exec/spec"
	"sluice/sql/types"
)

// ProjectSet runs set-returning functions once per input row, as
// PostgreSQL's ProjectSet does for `SELECT id, jsonb_array_elements(doc)
// FROM t`: each input change (row, diff) becomes the changes (row ++ f row
// ++ g row ..., diff), the functions' rows zipped in lockstep, the shorter
// padded with NULLs. It holds no state: the functions are deterministic,
// so a retraction of an input row retracts exactly the rows its insertion
// produced, and a materialized view over it stays incremental. An error
// (a non-array given to jsonb_array_elements) fails a SELECT; in a view it
// drops the input row and is counted, as in Filter.
type ProjectSet struct {
	fns   []setFn
	errs  *ErrorSink
	guard *limit.Guard // the statement's limits (nil in views)
}

type setFn struct {
	name string
	args []eval.Fn
	ts   []types.T
	cols int
}

// NewProjectSet returns the operator of a spec.TableFunc node with an
// input.
func NewProjectSet(n *spec.Node, ctx *eval.Context, errs *ErrorSink) (*ProjectSet, error) {
	p := &ProjectSet{errs: errs}
	if ctx != nil {
		p.guard = ctx.Guard
	}
	for _, f := range n.SetFuncs {
		sf := setFn{name: f.Name, cols: f.Cols}
		for _, e := range f.Args {
			fn, err := eval.Compile(e, ctx)
			if err != nil {
				return nil, err
			}
			sf.args = append(sf.args, fn)
			sf.ts = append(sf.ts, e.Type())
		}
		p.fns = append(p.fns, sf)
	}
	return p, nil
}

// Process implements flow.Operator.
func (p *ProjectSet) Process(_ int, b *types.Batch, out *flow.Emitter) error {
	results := make([][]types.Row, len(p.fns))
	width := 0
	for _, f := range p.fns {
		width += f.cols
	}
	for i, r := range b.Rows {
		n, err := p.run(r, results)
		if err != nil {
			if err := p.errs.handle(err); err != nil {
				return err
			}
			continue
		}
		for j := 0; j < n; j++ {
			o := make(types.Row, 0, len(r)+width)
			o = append(o, r...)
			for k, f := range p.fns {
				if j < len(results[k]) {
					o = append(o, results[k][j]...)
					continue
				}
				for c := 0; c < f.cols; c++ {
					o = append(o, types.Null)
				}
			}
			if err := out.Emit(o, b.Diffs[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// run evaluates every function over r into results and returns the length
// of the longest.
func (p *ProjectSet) run(r types.Row, results [][]types.Row) (int, error) {
	n := 0
	for k, f := range p.fns {
		args := make([]types.Datum, len(f.args))
		for j, fn := range f.args {
			d, err := fn(r)
			if err != nil {
				return 0, err
			}
			args[j] = d
		}
		rows, err := eval.RunTableFunc(p.guard, f.name, args, f.ts)
		if err != nil {
			return 0, err
		}
		results[k] = rows
		n = max(n, len(rows))
	}
	return n, nil
}

// Checkpoint implements flow.Operator.
func (p *ProjectSet) Checkpoint(*flow.Barrier, *flow.Emitter) error { return nil }
