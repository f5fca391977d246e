package planner

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/exec/spec"
	"sluice/planner/cat"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file plans what Postgres adds to INSERT, UPDATE and DELETE: ON
// CONFLICT and RETURNING (sql/parser.Query.OnConflict, .Returning, given
// to the planner in Planner.OnConflict and Planner.Returning), and binds
// the expressions of column defaults and CHECK constraints.

// OnConflict is a planned ON CONFLICT clause. Sets and Where are bound
// over the existing row followed by the proposed row (EXCLUDED): column i
// of the table is i, EXCLUDED's column i is width+i. A nil Sets value is
// DEFAULT.
type OnConflict struct {
	// Target holds the conflict target's columns; Constraint the name of
	// ON CONFLICT ON CONSTRAINT. Both empty: any unique constraint.
	Target     []int
	Constraint string
	DoNothing  bool
	Sets       map[int]spec.Expr
	Where      spec.Expr
}

// Returning is a planned RETURNING list, bound over a table row.
type Returning struct {
	Exprs   []spec.Expr
	Columns []types.Column
}

// planReturning binds a RETURNING list over the table's columns.
func (p *Planner) planReturning(rel *cat.Relation, sc *scope) (*Returning, error) {
	if p.Returning == nil {
		return nil, nil
	}
	b := &binder{p: p}
	ret := &Returning{}
	for _, f := range p.Returning.Fields {
		if f.WildCard != nil {
			n := 0
			for i, c := range sc.cols {
				if f.WildCard.Table.O != "" && c.table != f.WildCard.Table.O {
					continue
				}
				ret.Exprs = append(ret.Exprs, &spec.ColRef{Idx: i, T: c.t, Name: c.name})
				ret.Columns = append(ret.Columns, types.Column{Name: c.name, Type: c.t})
				n++
			}
			if n == 0 && f.WildCard.Table.O != "" {
				return nil, pgerror.New(pgcode.UndefinedTable, "missing FROM-clause entry for table %q", f.WildCard.Table.O)
			}
			continue
		}
		if hasAggregate(f.Expr) {
			return nil, pgerror.New(pgcode.GroupingError, "aggregate functions are not allowed in RETURNING")
		}
		x, err := b.bind(f.Expr, sc, nil)
		if err != nil {
			return nil, err
		}
		if x.Type().Fam == types.Unknown {
			if x, err = b.castTo(x, types.TText); err != nil {
				return nil, err
			}
		}
		ret.Exprs = append(ret.Exprs, x)
		ret.Columns = append(ret.Columns, types.Column{Name: outputName(f), Type: x.Type()})
	}
	return ret, nil
}

// hasAggregate reports whether an expression calls an aggregate.
func hasAggregate(e ast.ExprNode) bool {
	var aggs []*ast.AggregateFuncExpr
	var filters []ast.ExprNode
	e.Accept(&aggCollector{aggs: &aggs, filters: &filters})
	return len(aggs) > 0
}

// planOnConflict plans ON CONFLICT for an insert into rel.
func (p *Planner) planOnConflict(rel *cat.Relation, sc *scope, oc *parser.OnConflict) (*OnConflict, error) {
	out := &OnConflict{Constraint: oc.Constraint, DoNothing: oc.DoNothing}
	for _, name := range oc.Columns {
		i, err := sc.resolve("", name)
		if err != nil {
			return nil, pgerror.New(pgcode.UndefinedColumn, "column %q does not exist", name)
		}
		out.Target = append(out.Target, i)
	}
	if oc.DoNothing {
		return out, nil
	}
	// The existing row answers to the table's name (or alias), the
	// proposed one to EXCLUDED; an unqualified name is ambiguous, as in
	// PostgreSQL.
	both := &scope{cols: append([]scopeCol(nil), sc.cols...)}
	for _, c := range rel.Columns {
		both.cols = append(both.cols, scopeCol{table: "excluded", name: c.Name, t: c.Type})
	}
	b := &binder{p: p}
	out.Sets = map[int]spec.Expr{}
	for _, a := range oc.Sets {
		i, err := sc.resolve("", a.Column)
		if err != nil {
			return nil, pgerror.New(pgcode.UndefinedColumn, "column %q of relation %q does not exist", a.Column, rel.Name)
		}
		if _, dup := out.Sets[i]; dup {
			return nil, pgerror.New(pgcode.Syntax, "multiple assignments to same column %q", a.Column)
		}
		if a.Expr == nil {
			out.Sets[i] = nil
			continue
		}
		x, err := b.bind(a.Expr, both, nil)
		if err != nil {
			return nil, err
		}
		if out.Sets[i], err = b.assignCast(x, rel.Columns[i].Type, rel.Columns[i].Name); err != nil {
			return nil, err
		}
	}
	if oc.Where != nil {
		x, err := b.bind(oc.Where, both, nil)
		if err != nil {
			return nil, err
		}
		if out.Where, err = b.castTo(x, types.TBool); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// BindRowExpr binds an expression over a row of cols (a CHECK
// constraint of table), cast to want unless want is Unknown.
func (p *Planner) BindRowExpr(table string, cols []types.Column, x ast.ExprNode, want types.T) (spec.Expr, error) {
	p.plan = &spec.Plan{}
	p.keys = map[int][]int{}
	sc := &scope{}
	for _, c := range cols {
		sc.cols = append(sc.cols, scopeCol{table: table, name: c.Name, t: c.Type})
	}
	b := &binder{p: p}
	e, err := b.bind(x, sc, nil)
	if err != nil {
		return nil, err
	}
	if len(p.plan.Nodes) > 0 {
		return nil, pgerror.Unsupported("subqueries in a constraint or default")
	}
	if want.Fam == types.Unknown {
		return e, nil
	}
	return b.castTo(e, want)
}

// BindDefault binds a column default: no column may be referenced, and
// the value is cast to the column's type as an assignment.
func (p *Planner) BindDefault(x ast.ExprNode, col types.Column) (spec.Expr, error) {
	p.plan = &spec.Plan{}
	p.keys = map[int][]int{}
	b := &binder{p: p}
	e, err := b.bind(x, &scope{}, nil)
	if err != nil {
		if pe, ok := err.(*pgerror.Error); ok && pe.Code == pgcode.UndefinedColumn {
			return nil, pgerror.New(pgcode.FeatureNotSupported, "cannot use column reference in DEFAULT expression")
		}
		return nil, err
	}
	if len(p.plan.Nodes) > 0 {
		return nil, pgerror.Unsupported("cannot use subquery in DEFAULT expression")
	}
	return b.assignCast(e, col.Type, col.Name)
}
