package job

import (
	"context"
	"fmt"
	"sync"

	"sluice/exec/eval"
	"sluice/exec/flow"
	"sluice/exec/ops"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// RunBatch evaluates plan once over the committed snapshot snap and returns
// the rows of its root (a multiset, unordered). Runtime errors are errors
// (strict), unlike in views.
func RunBatch(parent context.Context, plan *spec.Plan, snap *storage.Snapshot, ectx *eval.Context) ([]types.Row, error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	ectx = withSubqueries(ctx, snap, ectx)
	errs := &ops.ErrorSink{Strict: true}
	outs := make([]*flow.Output, len(plan.Nodes))
	var actors []*flow.Actor
	for idx, n := range plan.Nodes {
		inputs := make([]chan flow.Msg, len(n.Inputs))
		for i, in := range n.Inputs {
			c := flow.NewChan()
			outs[in].Attach(c)
			inputs[i] = c
		}
		var op flow.Operator
		var err error
		switch n.Kind {
		case spec.Subscribe:
			c := make(chan flow.Msg)
			close(c)
			inputs = []chan flow.Msg{c}
			if n.Lookup != nil {
				op, err = lookupOp(snap, n, ectx)
			} else {
				op = &ops.Subscribe{Backfill: backfillFrom(snap, n.Rel)}
			}
		case spec.Values:
			c := make(chan flow.Msg)
			close(c)
			inputs = []chan flow.Msg{c}
			rows := n.Rows
			op = &ops.Subscribe{Backfill: func(emit func(types.Row, int64) error) error {
				for _, r := range rows {
					if err := emit(r, 1); err != nil {
						return err
					}
				}
				return nil
			}}
		case spec.SourceRead:
			err = pgerror.Unsupported("cannot read source %q directly", n.Source.Name).
				WithHint("create a materialized view over it and query the view")
		case spec.TableFunc:
			if len(n.Inputs) > 0 { // a set-returning function in the select list
				op, err = ops.NewProjectSet(n, ectx, errs)
				break
			}
			c := make(chan flow.Msg)
			close(c)
			inputs = []chan flow.Msg{c}
			op, err = tableFuncOp(n, ectx)
		case spec.TopN:
			op = ops.NewTopN(n)
		default:
			var ok bool
			if op, ok, err = newOp(plan, n, 0, nil, ectx, errs); !ok && err == nil {
				err = pgerror.Unsupported("%s in a query", n.Kind)
			}
		}
		if err != nil {
			return nil, err
		}
		a := &flow.Actor{Name: fmt.Sprintf("query/%d-%s", idx, n.Kind), Op: op, Inputs: inputs, Out: &flow.Output{}}
		outs[idx] = a.Out
		actors = append(actors, a)
	}
	result := flow.NewChan()
	outs[len(outs)-1].Attach(result)

	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for _, a := range actors {
		a := a
		a.OnError = func(err error) {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
			cancel()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.Run(ctx); err != nil && ctx.Err() == nil {
				a.OnError(err)
			}
		}()
	}
	acc := map[string]*rowCount{}
	var order []string
	var kbuf []byte
loop:
	for {
		select {
		case m := <-result:
			if m.Kind == flow.MsgEOS {
				break loop
			}
			if m.Kind != flow.MsgData {
				continue
			}
			for i, r := range m.Batch.Rows {
				kbuf = types.EncodeRow(kbuf[:0], r)
				e := acc[string(kbuf)]
				if e == nil {
					e = &rowCount{row: r}
					acc[string(kbuf)] = e
					order = append(order, string(kbuf))
				}
				e.n += m.Batch.Diffs[i]
			}
		case <-ctx.Done():
			break loop
		}
	}
	cancel()
	wg.Wait()
	if err := parent.Err(); err != nil {
		return nil, err
	}
	if firstErr != nil {
		return nil, unwrapActor(firstErr)
	}
	var rows []types.Row
	for _, k := range order {
		e := acc[k]
		for i := int64(0); i < e.n; i++ {
			rows = append(rows, e.row)
		}
	}
	return rows, nil
}

type rowCount struct {
	row types.Row
	n   int64
}

func unwrapActor(err error) error {
	var pe *pgerror.Error
	if ok := asPg(err, &pe); ok {
		return pe
	}
	return pgerror.Wrap(err, pgcode.Internal, "query failed")
}

// lookupOp reads one key of a relation: the key values are evaluated now,
// cast to the key columns' types, and encoded as the relation encodes keys.
func lookupOp(snap *storage.Snapshot, n *spec.Node, ectx *eval.Context) (flow.Operator, error) {
	key := storage.Key(storage.SpaceRelation, n.Rel)
	for _, e := range n.Lookup {
		fn, err := eval.Compile(e, ectx)
		if err != nil {
			return nil, err
		}
		d, err := fn(nil)
		if err != nil {
			return nil, err
		}
		key = types.AppendKey(key, d)
	}
	return &ops.Subscribe{Backfill: func(emit func(types.Row, int64) error) error {
		v, err := snap.Get(key)
		if err != nil || v == nil {
			return err
		}
		cnt, row, err := ops.DecodeRelValue(v)
		if err != nil {
			return err
		}
		return emit(row, cnt)
	}}, nil
}
