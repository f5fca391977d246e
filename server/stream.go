package server

import (
	"context"

	"sluice/exec/eval"
	"sluice/exec/job"
	"sluice/exec/limit"
	"sluice/planner"
	"sluice/server/pgwire"
	"sluice/sql/types"
	"sluice/storage"
)

// queryRows is a SELECT's result streaming from the one committed
// snapshot it reads: the snapshot stays open until Close, however long
// the client takes to read (a suspended portal, a cursor).
type queryRows struct {
	res  *job.Result
	snap *storage.Snapshot
}

// Next implements pgwire.Rows.
func (q *queryRows) Next(ctx context.Context) ([]types.Row, error) { return q.res.Next(ctx) }

// Close implements pgwire.Rows.
func (q *queryRows) Close() {
	if q.res != nil {
		q.res.Close()
		q.snap.Release()
		q.res, q.snap = nil, nil
	}
}

// openQuery starts a planned query over the latest committed snapshot,
// with its ORDER BY, OFFSET and LIMIT.
//
// snap, when not nil, is the snapshot to read (a repeatable-read
// transaction's, which it keeps); nil: the latest committed one.
func (e *Engine) openQuery(ctx context.Context, q *planner.Query, ectx *eval.Context, snap *storage.Snapshot) (*queryRows, error) {
	own := snap == nil
	if own {
		snap = e.db.Snapshot()
	}
	res, err := job.Open(ctx, q.Plan, snap, ectx, job.Shape{Order: q.Order, Limit: q.Limit, Offset: q.Offset, Width: len(q.Columns)})
	if err != nil {
		if own {
			snap.Release()
		}
		return nil, err
	}
	qr := &queryRows{res: res}
	if own {
		qr.snap = snap
	}
	return qr, nil
}

// selectRows runs a planned query to its end and returns its rows (for
// INSERT … SELECT, which needs them all).
//
// The rows are charged to the statement's memory budget (statement_mem):
// INSERT … SELECT from a runaway query ends with 53200.
func (e *Engine) selectRows(ctx context.Context, q *planner.Query, ectx *eval.Context, snap *storage.Snapshot) ([]types.Row, error) {
	var rows []types.Row
	err := e.eachSelected(ctx, q, ectx, snap, func(chunk []types.Row) error {
		rows = append(rows, chunk...)
		return nil
	})
	return rows, err
}

// eachSelected runs a planned query to its end and calls f with each
// chunk of its rows (f may keep them), charging them to the statement's
// memory budget (statement_mem) as selectRows does.
func (e *Engine) eachSelected(ctx context.Context, q *planner.Query, ectx *eval.Context, snap *storage.Snapshot, f func([]types.Row) error) error {
	if ectx != nil && ectx.Guard == nil {
		c := *ectx
		c.Guard = limit.New(ctx, c.MemLimit)
		ectx = &c
	}
	var g *limit.Guard
	if ectx != nil {
		g = ectx.Guard
	}
	qr, err := e.openQuery(ctx, q, ectx, snap)
	if err != nil {
		return err
	}
	defer qr.Close()
	for {
		chunk, err := qr.Next(ctx)
		if err != nil {
			return err
		}
		if chunk == nil {
			return nil
		}
		var n int64
		for _, r := range chunk {
			n += limit.RowBytes(r)
		}
		if err := g.Grow(n); err != nil {
			return err
		}
		if err := f(chunk); err != nil {
			return err
		}
	}
}

// sendRows writes a row-returning statement's result to w, streaming it
// when w can take a stream. It closes rows.
func sendRows(ctx context.Context, w pgwire.ResultWriter, cols []types.Column, rows pgwire.Rows) error {
	if rs, ok := w.(pgwire.RowStreamer); ok {
		return rs.Stream(ctx, cols, rows)
	}
	defer rows.Close()
	if err := w.Columns(cols); err != nil {
		return err
	}
	n := 0
	for {
		chunk, err := rows.Next(ctx)
		if err != nil {
			return err
		}
		if chunk == nil {
			break
		}
		for _, r := range chunk {
			if err := w.Row(r); err != nil {
				return err
			}
		}
		n += len(chunk)
	}
	return w.Complete(commandTag("SELECT", n))
}
