package planner

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/exec/spec"
	"sluice/sql/types"
)

// bindArrayCtorCast binds ARRAY[a, b, …]::T[] as PostgreSQL does: the
// cast applies to each element before the array is built, so
// ARRAY[1, true]::bool[] is {t,t} although ARRAY[1, true] alone does not
// type. ok is false when n is not such a cast.
func (b *binder) bindArrayCtorCast(n *ast.FuncCallExpr, sc *scope, h hook) (spec.Expr, bool, error) {
	ctor, isCtor := n.Args[0].(*ast.FuncCallExpr)
	if !isCtor || ctor.FnName.L != "__pg_array" || len(ctor.Args) == 0 {
		return nil, false, nil
	}
	tn, ok := stringLiteral(n.Args[1])
	if !ok {
		return nil, false, nil
	}
	at, err := b.p.ParseType(tn)
	if err != nil || !types.IsArray(at.Fam) {
		return nil, false, nil
	}
	elem := types.TText
	if at.Fam != types.TextArray {
		elem, _ = types.ArrayElem(at.Fam)
	}
	if at.Fam == types.NumericArray {
		// numeric(p,s)[]: the element's modifiers.
		if et, err := b.p.ParseType(tn[:len(tn)-2]); err == nil && et.Fam == types.Numeric {
			elem = et
		}
	}
	x, err := b.bindCastCtor(ctor, elem, sc, h)
	if err != nil {
		return nil, true, err
	}
	x, err = b.castTo(x, at)
	return x, true, err
}

// bindCastCtor binds the constructor ctor with every leaf cast to elem.
func (b *binder) bindCastCtor(ctor *ast.FuncCallExpr, elem types.T, sc *scope, h hook) (spec.Expr, error) {
	args := make([]spec.Expr, len(ctor.Args))
	for i, a := range ctor.Args {
		var err error
		if sub, ok := a.(*ast.FuncCallExpr); ok && sub.FnName.L == "__pg_array" && len(sub.Args) > 0 {
			args[i], err = b.bindCastCtor(sub, elem, sc, h)
		} else if args[i], err = b.bind(a, sc, h); err == nil {
			args[i], err = b.castTo(args[i], elem)
		}
		if err != nil {
			return nil, err
		}
	}
	return b.call("__pg_array", args)
}

// isTstz reports whether f is read or printed in the session's zone.
func isTstz(f types.Family) bool { return f == types.TimestampTZ || f == types.TimestampTZArray }
