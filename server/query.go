package server

import (
	"context"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/exec/eval"
	"sluice/exec/job"
	"sluice/exec/ops"
	"sluice/planner"
	"sluice/server/pgwire"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

func (s *session) plannerWith(ptypes []types.T) *planner.Planner {
	p := s.e.newPlanner()
	p.Cat = s.catalogView()
	p.Params = append([]types.T(nil), ptypes...)
	return p
}

func (s *session) describeQuery(q *parser.Query, ptypes []types.T) ([]types.T, []types.Column, error) {
	p := s.plannerWith(ptypes)
	p.Nulls = q.Nulls
	p.TableFuncs = q.TableFuncs
	p.Returning, p.OnConflict, p.Overriding = q.Returning, q.OnConflict, q.Overriding
	switch n := q.Node.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
		pq, err := p.PlanQuery(n)
		if err != nil {
			return nil, nil, err
		}
		return p.Params, pq.Columns, nil
	case *ast.InsertStmt:
		ins, err := p.PlanInsert(n)
		if err != nil {
			return nil, nil, err
		}
		return p.Params, returningColumns(ins.Returning), nil
	case *ast.UpdateStmt:
		up, err := p.PlanUpdate(n)
		if err != nil {
			return nil, nil, err
		}
		return p.Params, returningColumns(up.Returning), nil
	case *ast.DeleteStmt:
		d, err := p.PlanDelete(n)
		if err != nil {
			return nil, nil, err
		}
		return p.Params, returningColumns(d.Returning), nil
	}
	return nil, nil, pgerror.Unsupported("statement %T", q.Node)
}

func (s *session) runQuery(ctx context.Context, q *parser.Query, params []types.Datum, ptypes []types.T, w pgwire.ResultWriter) error {
	p := s.plannerWith(ptypes)
	p.Nulls = q.Nulls
	p.TableFuncs = q.TableFuncs
	p.Returning, p.OnConflict, p.Overriding = q.Returning, q.OnConflict, q.Overriding
	ectx := s.evalCtx(params)
	switch n := q.Node.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
		pq, err := p.PlanQuery(n)
		if err != nil {
			return err
		}
		if err := checkParams(p, params); err != nil {
			return err
		}
		rows, err := s.e.selectRows(ctx, pq, ectx)
		if err != nil {
			return err
		}
		if err := w.Columns(pq.Columns); err != nil {
			return err
		}
		for _, r := range rows {
			if err := w.Row(r); err != nil {
				return err
			}
		}
		return w.Complete(commandTag("SELECT", len(rows)))
	case *ast.InsertStmt:
		ins, err := p.PlanInsert(n)
		if err != nil {
			return err
		}
		if err := checkParams(p, params); err != nil {
			return err
		}
		cnt, rows, err := s.runInsert(ctx, ins, ectx)
		if err != nil {
			return err
		}
		return completeDML(w, "INSERT", cnt, ins.Returning, rows, ectx)
	case *ast.UpdateStmt:
		up, err := p.PlanUpdate(n)
		if err != nil {
			return err
		}
		if err := checkParams(p, params); err != nil {
			return err
		}
		var rows []types.Row
		cnt, err := s.e.update(ctx, up, ectx, &rows)
		if err != nil {
			return err
		}
		return completeDML(w, "UPDATE", cnt, up.Returning, rows, ectx)
	case *ast.DeleteStmt:
		d, err := p.PlanDelete(n)
		if err != nil {
			return err
		}
		if err := checkParams(p, params); err != nil {
			return err
		}
		var rows []types.Row
		cnt, err := s.e.delete(ctx, d, ectx, &rows)
		if err != nil {
			return err
		}
		return completeDML(w, "DELETE", cnt, d.Returning, rows, ectx)
	}
	return pgerror.Unsupported("statement %T", q.Node)
}

func checkParams(p *planner.Planner, params []types.Datum) error {
	if len(params) < len(p.Params) {
		return pgerror.New(pgcode.ProtocolViolation, "bind message supplies %d parameters, but prepared statement requires %d", len(params), len(p.Params))
	}
	return nil
}

// selectRows runs a planned query over the latest committed snapshot and
// applies ORDER BY, OFFSET and LIMIT.
func (e *Engine) selectRows(ctx context.Context, q *planner.Query, ectx *eval.Context) ([]types.Row, error) {
	snap := e.db.Snapshot()
	defer snap.Release()
	rows, err := job.RunBatch(ctx, q.Plan, snap, ectx)
	if err != nil {
		return nil, err
	}
	if len(q.Order) > 0 {
		ops.SortRows(rows, q.Order)
	}
	if q.Offset > 0 {
		if q.Offset >= int64(len(rows)) {
			rows = nil
		} else {
			rows = rows[q.Offset:]
		}
	}
	if q.Limit >= 0 && q.Limit < int64(len(rows)) {
		rows = rows[:q.Limit]
	}
	n := len(q.Columns)
	for i, r := range rows {
		if len(r) > n {
			rows[i] = r[:n]
		}
	}
	return rows, nil
}
