package planner

import (
	"math"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// The statistical, bitwise and ordered-set aggregates (exec/ops/aggstats.go
// maintains them under retractions, in views and batch queries alike):
// stddev, stddev_samp, stddev_pop, variance, var_samp, var_pop, bit_and,
// bit_or, bit_xor, percentile_cont, percentile_disc and mode (WITHIN GROUP
// (ORDER BY x)), and approx_count_distinct, which is exact here: it is
// count(DISTINCT x).

// isExtAgg reports whether f is one of these aggregates.
func isExtAgg(f string) bool {
	switch f {
	case "stddev", "variance", "stddev_samp", "stddev_pop", "var_samp", "var_pop",
		"bit_and", "bit_or", "bit_xor", "percentile_cont", "percentile_disc", "mode",
		"approx_count_distinct":
		return true
	}
	return false
}

// extAggCall turns the calls the TiDB parser reads as plain functions
// (percentile_cont, percentile_disc, and the renamed stddev, variance and
// mode: sql/parser's pgAggRenames) into aggregate expressions.
func extAggCall(f *ast.FuncCallExpr) (*ast.AggregateFuncExpr, bool) {
	switch f.FnName.L {
	case "__pg_stddev", "__pg_variance", "__pg_mode":
		return &ast.AggregateFuncExpr{F: f.FnName.L[len("__pg_"):], Args: f.Args}, true
	case "percentile_cont", "percentile_disc":
		return &ast.AggregateFuncExpr{F: f.FnName.L, Args: f.Args}, true
	}
	return nil, false
}

// bindExtAgg binds one of these aggregates, appending its argument and
// FILTER to the aggregation's input columns pre.
func (p *Planner) bindExtAgg(b *binder, a *ast.AggregateFuncExpr, filter ast.ExprNode, sc *scope, call *spec.AggCall, pre *[]spec.Expr) error {
	switch call.Func {
	case "stddev":
		call.Func = "stddev_samp"
	case "variance":
		call.Func = "var_samp"
	case "approx_count_distinct":
		call.Func, call.Distinct = "count", true
	}
	ordered := call.Func == "percentile_cont" || call.Func == "percentile_disc" || call.Func == "mode"
	var argExpr ast.ExprNode
	if ordered {
		want := 1
		if call.Func == "mode" {
			want = 0
		}
		if a.Order == nil || len(a.Order.Items) == 0 {
			// As PostgreSQL, which finds no plain aggregate of the name.
			return pgerror.New(pgcode.UndefinedFunction, "WITHIN GROUP is required for ordered-set aggregate %s", call.Func).
				WithHint("write %s(…) WITHIN GROUP (ORDER BY x)", call.Func)
		}
		if len(a.Args) != want || len(a.Order.Items) != 1 {
			return pgerror.New(pgcode.UndefinedFunction, "function %s with %d direct and %d ordered arguments does not exist", call.Func, len(a.Args), len(a.Order.Items))
		}
		if call.Distinct {
			return pgerror.New(pgcode.Syntax, "cannot use DISTINCT with WITHIN GROUP")
		}
		it := a.Order.Items[0]
		argExpr = it.Expr
		call.Order = []spec.OrderItem{{Col: 0, Desc: it.Desc}}
		if want == 1 {
			if err := bindFraction(b, a.Args[0], sc, call); err != nil {
				return err
			}
		}
	} else {
		if a.Order != nil && len(a.Order.Items) > 0 {
			// The order of the inputs changes none of these results.
			a.Order = nil
		}
		if len(a.Args) != 1 {
			return pgerror.New(pgcode.UndefinedFunction, "function %s with %d arguments does not exist", call.Func, len(a.Args))
		}
		argExpr = a.Args[0]
	}
	x, err := b.bind(argExpr, sc, nil)
	if err != nil {
		return err
	}
	t := x.Type()
	if t.Fam == types.Unknown {
		if call.Func == "count" || call.Func == "mode" || call.Func == "percentile_disc" {
			if x, err = b.castTo(x, types.TText); err != nil {
				return err
			}
			t = types.TText
		} else {
			return pgerror.New(pgcode.Code("42725"), "function %s(unknown) is not unique", call.Func).
				WithHint("Could not choose a best candidate function. You might need to add explicit type casts.")
		}
	}
	noFunc := func() error {
		return pgerror.New(pgcode.UndefinedFunction, "function %s(%s) does not exist", call.Func, t).
			WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
	}
	switch call.Func {
	case "count":
		call.T = types.TInt8
	case "stddev_samp", "stddev_pop", "var_samp", "var_pop":
		switch t.Fam {
		case types.Int2, types.Int4, types.Int8, types.Numeric:
			call.T = types.TNumeric
		case types.Float4, types.Float8:
			if x, err = b.castTo(x, types.TFloat8); err != nil {
				return err
			}
			call.T = types.TFloat8
		default:
			return noFunc()
		}
	case "bit_and", "bit_or", "bit_xor":
		switch t.Fam {
		case types.Int2, types.Int4, types.Int8:
			call.T = types.T{Fam: t.Fam}
		default:
			return noFunc()
		}
	case "percentile_cont":
		switch t.Fam {
		case types.Int2, types.Int4, types.Int8, types.Numeric, types.Float4, types.Float8:
			if x, err = b.castTo(x, types.TFloat8); err != nil {
				return err
			}
			call.T = types.TFloat8
		case types.Interval:
			return pgerror.Unsupported("percentile_cont over interval").WithHint("order by a number of seconds: extract(epoch from x)")
		default:
			return noFunc()
		}
	case "percentile_disc", "mode":
		// As min and max: the result has no type modifier.
		call.T = types.T{Fam: t.Fam}
		if t.Fam == types.Numeric {
			call.T = types.TNumeric
		}
		if t.Fam == types.Record {
			return noFunc() // PostgreSQL needs a btree ordering
		}
	}
	call.Arg = addPre(pre, x)
	if filter != nil {
		f, err := b.bind(filter, sc, nil)
		if err != nil {
			return err
		}
		if f, err = b.castTo(f, types.TBool); err != nil {
			return err
		}
		call.Filter = addPre(pre, f)
	}
	return nil
}

// bindFraction sets the fraction of percentile_cont / percentile_disc,
// which must be a constant in [0, 1] (PostgreSQL evaluates it per group;
// a view needs it fixed).
func bindFraction(b *binder, e ast.ExprNode, sc *scope, call *spec.AggCall) error {
	x, err := b.bind(e, sc, nil)
	if err != nil {
		return err
	}
	if x.Type().Fam == types.TextArray {
		return pgerror.Unsupported("%s with an array of fractions", call.Func).WithHint("call it once per fraction")
	}
	if x, err = b.castTo(x, types.TFloat8); err != nil {
		return err
	}
	c, ok := x.(*spec.Const)
	if !ok {
		if c, ok, err = foldValuesExpr(x, b.p.loc()); err != nil {
			return err
		}
	}
	if !ok {
		return pgerror.Unsupported("a non-constant fraction in %s", call.Func).WithHint("give the fraction as a constant")
	}
	if c.D.IsNull() {
		call.FracNull = true
		return nil
	}
	f := c.D.Float()
	if f < 0 || f > 1 || math.IsNaN(f) {
		return pgerror.New(pgcode.NumericValueOutOfRange, "percentile value %g is not between 0 and 1", f)
	}
	call.Frac = f
	return nil
}
