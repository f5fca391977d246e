package job

import (
	"context"

	"sluice/exec/eval"
	"sluice/exec/flow"
	"sluice/exec/limit"
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
func RunBatch(ctx context.Context, plan *spec.Plan, snap *storage.Snapshot, ectx *eval.Context) ([]types.Row, error) {
	// A context cancelled before the query starts fails it even when the
	// query is small enough to finish before any operator looks at ctx.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res, err := Open(ctx, plan, snap, ectx, Shape{Limit: -1})
	if err != nil {
		return nil, err
	}
	defer res.Close()
	var rows []types.Row
	for {
		chunk, err := res.Next(ctx)
		if err != nil {
			return nil, err
		}
		if chunk == nil {
			return rows, nil
		}
		if ectx != nil { // a subquery's rows count against the statement's budget
			var n int64
			for _, r := range chunk {
				n += limit.RowBytes(r)
			}
			if err := ectx.Guard.Grow(n); err != nil {
				return nil, err
			}
		}
		rows = append(rows, chunk...)
	}
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
	if rows, ok := readRel(ectx, n.Rel, key[len(storage.Key(storage.SpaceRelation, n.Rel)):]); ok {
		return &ops.Subscribe{Backfill: rows}, nil
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

// readRel asks the statement's ReadRel hook for relation rel's rows.
func readRel(ectx *eval.Context, rel uint64, key []byte) (func(func(types.Row, int64) error) error, bool) {
	if ectx == nil || ectx.ReadRel == nil {
		return nil, false
	}
	return ectx.ReadRel(rel, key)
}
