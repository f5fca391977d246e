package job

import (
	"context"

	"sluice/exec/eval"
	"sluice/exec/flow"
	"sluice/exec/limit"
	"sluice/exec/ops"
	"sluice/exec/spec"
	"sluice/sql/types"
	"sluice/storage"
)

// This file holds what batch plans have and dataflow jobs lack: subqueries
// in expressions (run as nested batch plans over the same snapshot), table
// functions in FROM, and the aggregates that keep every input value
// (string_agg, array_agg, bool_and, bool_or).

// withSubqueries returns a copy of ectx whose RunPlan runs a subquery's plan
// over snap, under ctx, with the given outer values.
func withSubqueries(ctx context.Context, snap *storage.Snapshot, ectx *eval.Context) *eval.Context {
	c := &eval.Context{}
	if ectx != nil {
		*c = *ectx
	}
	// The run's guard stops with ctx (Close, or the run's failure) and
	// shares the statement's memory budget with its subqueries.
	if c.Guard != nil {
		c.Guard = c.Guard.With(ctx)
	} else {
		c.Guard = limit.New(ctx, c.MemLimit)
	}
	c.RunPlan = func(plan *spec.Plan, outer []types.Datum) ([]types.Row, error) {
		inner := *c
		inner.Outer = outer
		return RunBatch(ctx, plan, snap, &inner)
	}
	return c
}

// tableFuncOp evaluates the arguments of a TableFunc node and emits the
// function's rows.
// When narrowed, sp is the range of values the consuming filter admits
// (an integer generate_series only; seriesbounds.go).
func tableFuncOp(n *spec.Node, ectx *eval.Context, sp span, narrowed bool) (flow.Operator, error) {
	fns := make([]eval.Fn, len(n.Exprs))
	ts := make([]types.T, len(n.Exprs))
	for i, e := range n.Exprs {
		fn, err := eval.Compile(e, ectx)
		if err != nil {
			return nil, err
		}
		fns[i], ts[i] = fn, e.Type()
	}
	return &ops.Subscribe{Backfill: func(emit func(types.Row, int64) error) error {
		args := make([]types.Datum, len(fns))
		for i, fn := range fns {
			d, err := fn(nil)
			if err != nil {
				return err
			}
			args[i] = d
		}
		if narrowed {
			var any bool
			if args, any = clip(args, sp); !any {
				return nil
			}
		}
		return eval.StreamTableFunc(ectx.Guard, n.Func, args, ts, func(r types.Row) error { return emit(r, 1) })
	}}, nil
}

// batchOnlyAgg reports whether f is an aggregate only batch plans compute.
func batchOnlyAgg(f string) bool {
	switch f {
	case "string_agg", "array_agg", "bool_and", "bool_or", "every", "jsonb_agg", "jsonb_object_agg":
		return true
	}
	return false
}

// newAggOp returns the aggregation operator of a batch plan's Agg node:
// ops.Agg, wrapped by a batchAgg when the node has batch-only aggregates.
func newAggOp(n *spec.Node, g *limit.Guard) (flow.Operator, error) {
	var extra []int
	for i, a := range n.Aggs {
		if batchOnlyAgg(a.Func) {
			extra = append(extra, i)
		}
	}
	if len(extra) == 0 {
		a, err := ops.NewAgg(n, 0, nil)
		if err == nil {
			a.Guard = g
		}
		return a, err
	}
	// The inner aggregation computes the other aggregates; it counts rows
	// in the batch-only ones' places, which Finish overwrites.
	in := *n
	in.Aggs = append([]spec.AggCall(nil), n.Aggs...)
	for _, i := range extra {
		in.Aggs[i] = spec.AggCall{Func: "count_star", Arg: -1, Filter: -1, T: types.TInt8}
	}
	inner, err := ops.NewAgg(&in, 0, nil)
	if err != nil {
		return nil, err
	}
	inner.Guard = g
	a := &batchAgg{inner: inner, node: n, extra: extra, groups: map[string][][]aggValue{}, out: map[string]*rowCount{}, guard: g}
	a.emit = flow.NewEmitter(func(b *types.Batch) error {
		for i, r := range b.Rows {
			k := string(types.EncodeRow(nil, r))
			rc := a.out[k]
			if rc == nil {
				rc = &rowCount{row: r}
				a.out[k] = rc
				a.order = append(a.order, k)
			}
			rc.n += b.Diffs[i]
		}
		return nil
	})
	return a, nil
}

// aggValue is one input of a batch-only aggregate: its argument values and
// multiplicity.
type aggValue struct {
	args []types.Datum
	n    int64
}

// batchAgg computes string_agg, array_agg, bool_and and bool_or over a batch
// plan's whole input, next to an ops.Agg computing the node's other
// aggregates.
type batchAgg struct {
	inner  *ops.Agg
	node   *spec.Node
	extra  []int                   // indexes of the batch-only aggregates in node.Aggs
	groups map[string][][]aggValue // group key -> per batch-only aggregate, its inputs in order
	emit   *flow.Emitter           // collects the inner aggregation's output
	out    map[string]*rowCount
	order  []string
	guard  *limit.Guard // charged for every input kept
}

// Process implements flow.Operator.
func (a *batchAgg) Process(in int, b *types.Batch, out *flow.Emitter) error {
	if err := a.inner.Process(in, b, a.emit); err != nil {
		return err
	}
	var kbuf []byte
	for i, r := range b.Rows {
		kbuf = kbuf[:0]
		for _, c := range a.node.GroupBy {
			kbuf = types.AppendKey(kbuf, r[c])
		}
		g := a.groups[string(kbuf)]
		if g == nil {
			g = make([][]aggValue, len(a.extra))
			a.groups[string(kbuf)] = g
		}
		for j, ai := range a.extra {
			call := &a.node.Aggs[ai]
			if call.Filter >= 0 && !r[call.Filter].Bool() {
				continue
			}
			args := []types.Datum{r[call.Arg]}
			for _, x := range call.Extra {
				args = append(args, r[x])
			}
			if err := a.guard.Grow(limit.RowBytes(args) + 32); err != nil {
				return err
			}
			g[j] = append(g[j], aggValue{args: args, n: b.Diffs[i]})
		}
	}
	return nil
}

// Checkpoint implements flow.Operator; batch plans have no barriers.
func (a *batchAgg) Checkpoint(*flow.Barrier, *flow.Emitter) error { return nil }

// Finish implements flow.Finisher: it emits the groups with every aggregate.
func (a *batchAgg) Finish(out *flow.Emitter) error {
	if err := a.inner.Finish(a.emit); err != nil {
		return err
	}
	if err := a.emit.Flush(); err != nil {
		return err
	}
	ng := len(a.node.GroupBy)
	for _, k := range a.order {
		rc := a.out[k]
		if rc.n <= 0 {
			continue
		}
		row := rc.row.Copy()
		var kbuf []byte
		for i := 0; i < ng; i++ {
			kbuf = types.AppendKey(kbuf, row[i])
		}
		g := a.groups[string(kbuf)]
		for j, ai := range a.extra {
			var vals []aggValue
			if g != nil {
				vals = g[j]
			}
			d, err := batchAggResult(a.guard, &a.node.Aggs[ai], vals)
			if err != nil {
				return err
			}
			row[ng+ai] = d
		}
		if err := out.Emit(row, rc.n); err != nil {
			return err
		}
	}
	return nil
}

// batchAggResult computes one batch-only aggregate over its inputs.
func batchAggResult(g *limit.Guard, call *spec.AggCall, vals []aggValue) (types.Datum, error) {
	// Expand multiplicities (retractions cancel earlier equal inputs).
	var in [][]types.Datum
	for _, v := range vals {
		if err := g.Err(); err != nil {
			return types.Null, err
		}
		if v.n > 1 {
			if err := g.Grow(24 * v.n); err != nil {
				return types.Null, err
			}
		}
		for i := int64(0); i < v.n; i++ {
			in = append(in, v.args)
		}
		for i := v.n; i < 0; i++ {
			for j := range in {
				if types.Compare(in[j][0], v.args[0]) == 0 && in[j][0].K == v.args[0].K {
					in = append(in[:j], in[j+1:]...)
					break
				}
			}
		}
	}
	return ops.FoldAgg(call, in)
}
