package ops

import (
	"sluice/exec/eval"
	"sluice/exec/flow"
	"sluice/exec/spec"
	"sluice/sql/types"
)

// ProjectSet runs a set-returning function once per input row, as
// PostgreSQL's ProjectSet does for `SELECT id, jsonb_array_elements(doc)
// FROM t`: each input change (row, diff) becomes the changes (row ++ f
// row, diff) for every row f returns. It holds no state: the function is
// deterministic, so a retraction of an input row retracts exactly the rows
// its insertion produced, and a materialized view over it stays
// incremental. An error (a non-array given to jsonb_array_elements) fails
// a SELECT; in a view it drops the input row and is counted, as in Filter.
type ProjectSet struct {
	fn   string
	args []eval.Fn
	ts   []types.T
	errs *ErrorSink
}

// NewProjectSet returns the operator of a spec.TableFunc node with an
// input.
func NewProjectSet(n *spec.Node, ctx *eval.Context, errs *ErrorSink) (*ProjectSet, error) {
	p := &ProjectSet{fn: n.Func, errs: errs}
	for _, e := range n.Exprs {
		fn, err := eval.Compile(e, ctx)
		if err != nil {
			return nil, err
		}
		p.args = append(p.args, fn)
		p.ts = append(p.ts, e.Type())
	}
	return p, nil
}

// Process implements flow.Operator.
func (p *ProjectSet) Process(_ int, b *types.Batch, out *flow.Emitter) error {
	args := make([]types.Datum, len(p.args))
	for i, r := range b.Rows {
		rows, err := p.run(r, args)
		if err != nil {
			if err := p.errs.handle(err); err != nil {
				return err
			}
			continue
		}
		for _, fr := range rows {
			o := make(types.Row, 0, len(r)+len(fr))
			o = append(append(o, r...), fr...)
			if err := out.Emit(o, b.Diffs[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *ProjectSet) run(r types.Row, args []types.Datum) ([]types.Row, error) {
	for j, f := range p.args {
		d, err := f(r)
		if err != nil {
			return nil, err
		}
		args[j] = d
	}
	return eval.RunTableFunc(p.fn, args, p.ts)
}

// Checkpoint implements flow.Operator.
func (p *ProjectSet) Checkpoint(*flow.Barrier, *flow.Emitter) error { return nil }
