package eval

import (
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file holds the array forms catalog queries use: the ARRAY[...]
// constructor ("__pg_array"), x op ANY/ALL (array) ("__pg_any",
// "__pg_all"), array_upper and array_lower.
//
// text[] is Sluice's only array type: ARRAY[...] converts its elements to
// text, and catalog columns that Postgres types as oid[], int2vector or
// "char"[] are text[]. So that `oid = ANY (polroles)` still means what it
// means in Postgres, an ANY/ALL comparison whose left side does not compare
// with text takes the array's elements as untyped literals of the left
// side's type (as Postgres takes the elements of '{1,2}').

func init() {
	specials["__pg_array"] = resolveArrayCtor
	specials["__pg_any"] = resolveQuantified
	specials["__pg_all"] = resolveQuantified
	ta, I4 := types.TextArray, types.Int4
	bound := func(upper bool) builder {
		return build2(func(a, dim types.Datum) (types.Datum, error) {
			if dim.I != 1 || len(a.Elems()) == 0 {
				return types.Null, nil
			}
			if upper {
				return intD(int64(len(a.Elems()))), nil
			}
			return intD(1), nil
		})
	}
	reg("array_upper", fams(ta, I4), types.TInt4, bound(true))
	reg("array_lower", fams(ta, I4), types.TInt4, bound(false))
	reg("pg_relation_is_publishable", fams(types.Oid), types.TBool, anyArgs(dFalse))
	reg("pg_get_statisticsobjdef_columns", fams(types.Oid), types.TText, anyArgs(types.Null))
}

// resolveArrayCtor types ARRAY[a, b, ...]: every element becomes text, or
// text[] for the rows of a multi-dimensional constructor.
func resolveArrayCtor(name string, args []types.T) (*resolution, error) {
	if r := resolveTypedArrayCtor(args); r != nil {
		return r, nil
	}
	if err := errCtorMismatch(args); err != nil {
		return nil, err
	}
	casts := make([]types.T, len(args))
	nested := false
	for i, t := range args {
		switch {
		case t.Fam == types.TextArray:
			casts[i] = t
			nested = true
		case t.IsString():
			casts[i] = t
		case t.Fam == types.Bool:
			// Kept as boolean and printed as boolout does inside an
			// array ({t,f}), not as bool::text ('true').
			casts[i] = t
		default:
			casts[i] = types.TText
		}
	}
	if nested {
		for i, t := range args {
			if t.Fam != types.TextArray && t.Fam != types.Unknown {
				return nil, pgerror.New(pgcode.Syntax, "multidimensional arrays must have array expressions with matching dimensions")
			}
			casts[i] = types.TTextArray
		}
	}
	return &resolution{ret: types.TTextArray, casts: casts, build: func(b *bctx) (Fn, error) {
		fns := make([]Fn, len(b.args))
		for i := range b.args {
			fns[i] = b.fn(i)
		}
		return func(row types.Row) (types.Datum, error) {
			elems := make([]types.Datum, len(fns))
			for i, f := range fns {
				d, err := f(row)
				if err != nil {
					return types.Null, err
				}
				if nested && d.K == types.KNull {
					return types.Null, pgerror.New(pgcode.Syntax, "multidimensional arrays must have array expressions with matching dimensions")
				}
				if d.K == types.KBool {
					d = types.NewString(types.FormatText(d, types.TBool))
				}
				elems[i] = d
			}
			return types.Datum{K: types.KArray, A: types.NewElems(elems)}, nil
		}, nil
	}}, nil
}

// ArrayElemType returns the type the elements of a text[] take when
// compared with a value of type left by op in left op ANY/ALL (array): text
// when left op text resolves, else unknown (untyped literals of left's
// type). It fails (42883) when neither resolves to a boolean operator.
func ArrayElemType(op string, left types.T) (types.T, error) {
	op = normName(op)
	r, err := resolve(op, []types.T{left, types.TText})
	if err == nil && r.ret.Fam == types.Bool {
		return types.TText, nil
	}
	if left.Fam != types.Unknown && category(left.Fam) != 'S' {
		if r2, err2 := resolve(op, []types.T{left, types.TUnknown}); err2 == nil && r2.ret.Fam == types.Bool {
			return types.TUnknown, nil
		}
	}
	if err == nil {
		return types.TUnknown, pgerror.New(pgcode.DatatypeMismatch, "op ANY/ALL (array) requires operator to yield boolean")
	}
	return types.TUnknown, err
}

// resolveQuantified types "__pg_any"(left, 'op', array) and "__pg_all".
func resolveQuantified(name string, args []types.T) (*resolution, error) {
	if len(args) != 3 {
		return nil, notFound(name, args)
	}
	arr := args[2]
	if arr.Fam != types.TextArray && arr.Fam != types.Unknown && !types.IsVector(arr.Fam) && !types.IsElemArray(arr.Fam) {
		return nil, pgerror.New(pgcode.WrongObjectType, "op ANY/ALL (array) requires array on right side")
	}
	left := args[0]
	casts := []types.T{left, types.TText, types.TTextArray}
	if types.IsElemArray(arr.Fam) {
		casts[2] = arr
	}
	return &resolution{ret: types.TBool, casts: casts, build: func(b *bctx) (Fn, error) {
		opd, ok := b.konst(1)
		if !ok || opd.K != types.KString {
			return nil, pgerror.New(pgcode.Internal, "%s needs a constant operator", name)
		}
		op := normName(opd.S)
		elem, err := ArrayElemType(op, b.args[0].t)
		if et, ok := types.ArrayElem(b.args[2].t.Fam); ok && types.IsElemArray(b.args[2].t.Fam) {
			elem, err = et, nil
		}
		if err != nil {
			return nil, err
		}
		cmp, err := (&compiler{ctx: b.ctx}).compile(&spec.Func{Name: op, T: types.TBool, Args: []spec.Expr{
			&spec.ColRef{Idx: 0, T: b.args[0].t}, &spec.ColRef{Idx: 1, T: elem},
		}})
		if err != nil {
			return nil, err
		}
		x, a := b.fn(0), b.fn(2)
		all := name == "__pg_all"
		return func(row types.Row) (types.Datum, error) {
			l, err := x(row)
			if err != nil {
				return types.Null, err
			}
			ad, err := a(row)
			if err != nil || ad.K == types.KNull {
				return types.Null, err
			}
			rs := make([]types.Row, 0, len(ad.Elems()))
			var flat func([]types.Datum)
			flat = func(es []types.Datum) {
				for _, e := range es {
					if e.K == types.KArray {
						flat(e.Elems())
						continue
					}
					rs = append(rs, types.Row{e})
				}
			}
			flat(ad.Elems())
			return quantify(l, rs, cmp.fn, all)
		}, nil
	}}, nil
}

func init() {
	// array_remove(anyarray, anyelement): Sluice's arrays are text[], so the
	// element is compared in its text form.
	reg("array_remove", fams(types.TextArray, famAny), types.TTextArray, func(b *bctx) (Fn, error) {
		x, y, et := b.fn(0), b.fn(1), b.args[1].t
		return func(row types.Row) (types.Datum, error) {
			a, err := x(row)
			if err != nil || a.K == types.KNull {
				return types.Null, err
			}
			e, err := y(row)
			if err != nil {
				return types.Null, err
			}
			for _, v := range a.Elems() {
				if v.K == types.KArray {
					return types.Null, pgerror.Unsupported("removing elements from multidimensional arrays")
				}
			}
			kept := []types.Datum{}
			for _, v := range a.Elems() {
				if e.K == types.KNull {
					if v.K == types.KNull {
						continue
					}
				} else if v.K != types.KNull && v.S == textOf(e, et) {
					continue
				}
				kept = append(kept, v)
			}
			return types.Datum{K: types.KArray, A: types.NewElems(kept)}, nil
		}, nil
	})
}
