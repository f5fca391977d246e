package server

import (
	"context"

	"github.com/pingcap/tidb/pkg/parser/ast"

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
	p.Role = s.role()
	p.Params = append([]types.T(nil), ptypes...)
	p.TimeZone = s.settings["timezone"]
	return p
}

func (s *session) describeQuery(q *parser.Query, ptypes []types.T) ([]types.T, []types.Column, error) {
	p := s.plannerWith(ptypes)
	p.Nulls = q.Nulls
	p.TableFuncs = q.TableFuncs
	p.ColumnAliases = q.ColumnAliases
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
	p.ColumnAliases = q.ColumnAliases
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
		if err := s.e.creatingErr(readRels(pq.Plan)); err != nil {
			return err
		}
		if err := s.awaitReads(ctx); err != nil {
			return err
		}
		rows, err := s.e.openQuery(ctx, pq, ectx, s.txSnapshot())
		if err != nil {
			return err
		}
		if note := s.e.failedNotice(readRels(pq.Plan)); note != "" {
			if err := w.Notice(note); err != nil {
				rows.Close()
				return err
			}
		}
		return sendRows(ctx, w, pq.Columns, rows)
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
		cnt, err := s.update(ctx, up, ectx, &rows)
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
		cnt, err := s.delete(ctx, d, ectx, &rows)
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
