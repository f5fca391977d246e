package server

import (
	"context"

	"sluice/exec/eval"
	"sluice/planner"
	"sluice/server/pgwire"
	"sluice/sql/types"
)

// This file runs planned INSERT, UPDATE and DELETE statements with their
// ON CONFLICT and RETURNING clauses and writes their results.

// runInsert runs a planned INSERT; it returns the rows written (inserted
// or updated by ON CONFLICT), for RETURNING.
func (s *session) runInsert(ctx context.Context, ins *planner.Insert, ectx *eval.Context) (int, []types.Row, error) {
	tw, err := s.e.tableWriter(ins.Table.ID)
	if err != nil {
		return 0, nil, err
	}
	if ins.Query != nil {
		if err := s.awaitReads(ctx); err != nil {
			return 0, nil, err
		}
	}
	if ins.Query != nil && ins.OnConflict == nil && ins.Returning == nil && s.tx == nil &&
		(tw.cons == nil || len(tw.cons.uniques) == 0) {
		// Outside a transaction block an INSERT … SELECT takes COPY's
		// spilled bulk path: its rows are encoded as the query gives them
		// and go to scratch files, so memory does not grow with them.
		n, err := s.insertSelectSpilled(ctx, tw, ins, ectx)
		return n, nil, err
	}
	rows, err := s.e.insertValues(ctx, tw, ins, ectx, s.txSnapshot())
	if err != nil {
		return 0, nil, err
	}
	if ins.OnConflict != nil {
		return s.upsert(ctx, tw, ins.OnConflict, rows, ectx)
	}
	n, err := s.insertRows(ctx, ins.Table.ID, rows)
	return n, rows, err
}

// completeDML reports a DML statement's result: the RETURNING rows if it
// has a RETURNING clause, then the command tag.
func completeDML(w pgwire.ResultWriter, verb string, n int, ret *planner.Returning, rows []types.Row, ectx *eval.Context) error {
	if ret != nil {
		out, err := returningRows(ret, rows, ectx)
		if err != nil {
			return err
		}
		if err := w.Columns(ret.Columns); err != nil {
			return err
		}
		for _, r := range out {
			if err := w.Row(r); err != nil {
				return err
			}
		}
	}
	return w.Complete(commandTag(verb, n))
}

// returningColumns are the result columns a DML statement describes.
func returningColumns(ret *planner.Returning) []types.Column {
	if ret == nil {
		return nil
	}
	return ret.Columns
}
