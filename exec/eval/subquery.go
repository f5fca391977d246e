package eval

import (
	"sort"
	"sync"

	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file compiles subqueries used as expressions (spec.Subquery) and the
// outer references of correlated ones (spec.OuterRef). A subquery's plan is
// run through Context.RunPlan, which the batch runner provides.

func (c *compiler) compileOuterRef(x *spec.OuterRef) (arg, error) {
	n, ctx := x.N, c.ctx
	if n < 0 {
		return arg{}, pgerror.New(pgcode.Internal, "outer reference %d out of range", n)
	}
	return arg{t: x.T, fn: func(types.Row) (types.Datum, error) {
		if n >= len(ctx.Outer) {
			return types.Null, pgerror.New(pgcode.Internal, "outer reference %d out of range for %d outer values", n, len(ctx.Outer))
		}
		return ctx.Outer[n], nil
	}}, nil
}

func (c *compiler) compileSubquery(x *spec.Subquery) (arg, error) {
	if x.Plan == nil || len(x.Plan.Nodes) == 0 {
		return arg{}, pgerror.New(pgcode.Internal, "subquery without a plan")
	}
	outer := make([]Fn, len(x.Outer))
	for i, e := range x.Outer {
		a, err := c.compile(e)
		if err != nil {
			return arg{}, err
		}
		outer[i] = a.fn
	}
	rows := c.subqueryRows(x, outer)
	rootCols := x.Plan.Nodes[x.Plan.Root()].Cols
	switch x.Mode {
	case spec.ScalarSubquery:
		return arg{t: x.T, fn: func(row types.Row) (types.Datum, error) {
			rs, err := rows(row)
			switch {
			case err != nil:
				return types.Null, err
			case len(rs) == 0:
				return types.Null, nil
			case len(rs) > 1:
				return types.Null, pgerror.New(pgcode.CardinalityViolation, "more than one row returned by a subquery used as an expression")
			}
			return rs[0][0], nil
		}}, nil
	case spec.ExistsSubquery:
		return arg{t: types.TBool, fn: func(row types.Row) (types.Datum, error) {
			rs, err := rows(row)
			if err != nil {
				return types.Null, err
			}
			return types.NewBool(len(rs) > 0), nil
		}}, nil
	case spec.ArraySubquery:
		return arg{t: x.T, fn: func(row types.Row) (types.Datum, error) {
			rs, err := rows(row)
			if err != nil {
				return types.Null, err
			}
			elems := make([]types.Datum, len(rs))
			for i, r := range rs {
				elems[i] = r[0]
			}
			return types.Datum{K: types.KArray, A: types.NewElems(elems)}, nil
		}}, nil
	case spec.AnySubquery, spec.AllSubquery:
		if x.Left == nil || len(rootCols) == 0 {
			return arg{}, pgerror.New(pgcode.Internal, "malformed subquery of mode %d", x.Mode)
		}
		left, err := c.compile(x.Left)
		if err != nil {
			return arg{}, err
		}
		// The comparison runs over the two-column row (left, element).
		cmp, err := (&compiler{ctx: c.ctx}).compile(&spec.Func{Name: x.Op, T: types.TBool, Args: []spec.Expr{
			&spec.ColRef{Idx: 0, T: left.t}, &spec.ColRef{Idx: 1, T: rootCols[0].Type},
		}})
		if err != nil {
			return arg{}, err
		}
		if cmp.t.Fam != types.Bool {
			return arg{}, pgerror.New(pgcode.DatatypeMismatch, "operator %s must return type boolean, not type %s", x.Op, typeName(cmp.t))
		}
		all := x.Mode == spec.AllSubquery
		return arg{t: types.TBool, fn: func(row types.Row) (types.Datum, error) {
			l, err := left.fn(row)
			if err != nil {
				return types.Null, err
			}
			rs, err := rows(row)
			if err != nil {
				return types.Null, err
			}
			return quantify(l, rs, cmp.fn, all)
		}}, nil
	}
	return arg{}, pgerror.New(pgcode.Internal, "unknown subquery mode %d", x.Mode)
}

// quantify is l op ANY (all false) or l op ALL (all true) over the first
// column of rs, with SQL's three-valued logic: a NULL comparison makes the
// answer NULL unless another element decides it.
func quantify(l types.Datum, rs []types.Row, cmp Fn, all bool) (types.Datum, error) {
	sawNull := false
	pair := make(types.Row, 2)
	pair[0] = l
	for _, r := range rs {
		pair[1] = r[0]
		d, err := cmp(pair)
		if err != nil {
			return types.Null, err
		}
		switch {
		case d.K == types.KNull:
			sawNull = true
		case d.Bool() != all:
			return types.NewBool(!all), nil
		}
	}
	if sawNull {
		return types.Null, nil
	}
	return types.NewBool(all), nil
}

// subqueryRows returns the function that runs x's plan for the outer values
// of a row and applies its ORDER BY, OFFSET and LIMIT. An uncorrelated
// subquery runs once per compiled expression.
func (c *compiler) subqueryRows(x *spec.Subquery, outer []Fn) func(types.Row) ([]types.Row, error) {
	ctx := c.ctx
	run := func(row types.Row) ([]types.Row, error) {
		if ctx.RunPlan == nil {
			return nil, pgerror.Unsupported("subqueries are not supported here")
		}
		vals := make([]types.Datum, len(outer))
		for i, f := range outer {
			d, err := f(row)
			if err != nil {
				return nil, err
			}
			vals[i] = d
		}
		rs, err := ctx.RunPlan(x.Plan, vals)
		if err != nil {
			return nil, err
		}
		return orderRows(rs, x.Order, x.Offset, x.Limit), nil
	}
	if len(outer) > 0 {
		return run
	}
	var mu sync.Mutex
	var done bool
	var cached []types.Row
	return func(row types.Row) ([]types.Row, error) {
		mu.Lock()
		defer mu.Unlock()
		if done {
			return cached, nil
		}
		rs, err := run(row)
		if err != nil {
			return nil, err
		}
		cached, done = rs, true
		return rs, nil
	}
}

// orderRows sorts rows like Postgres (NULLs larger than any value unless
// NullsFirst says otherwise) and applies offset and limit (-1 = none).
func orderRows(rows []types.Row, order []spec.OrderItem, offset, limit int64) []types.Row {
	if len(order) > 0 {
		sort.SliceStable(rows, func(i, j int) bool {
			for _, o := range order {
				a, b := rows[i][o.Col], rows[j][o.Col]
				var c int
				switch {
				case a.IsNull() && b.IsNull():
					c = 0
				case a.IsNull() || b.IsNull(): // exactly one is NULL
					c = -1
					if a.IsNull() != o.NullsFirst {
						c = 1
					}
				default:
					c = types.Compare(a, b)
					if o.Desc {
						c = -c
					}
				}
				if c != 0 {
					return c < 0
				}
			}
			return false
		})
	}
	if offset > 0 {
		if offset >= int64(len(rows)) {
			return nil
		}
		rows = rows[offset:]
	}
	if limit >= 0 && limit < int64(len(rows)) {
		rows = rows[:limit]
	}
	return rows
}
