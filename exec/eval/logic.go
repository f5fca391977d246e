package eval

import (
	"strings"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file holds the forms with their own resolution rules: boolean
// logic, IS [NOT] NULL/TRUE/FALSE, IN, COALESCE, NULLIF, GREATEST, LEAST,
// IS [NOT] DISTINCT FROM and the Func spelling of CASE.

func init() {
	specials["and"] = resolveLogic
	specials["or"] = resolveLogic
	specials["not"] = resolveLogic
	for _, n := range []string{"is null", "is not null"} {
		specials[n] = resolveIsNull
	}
	for _, n := range []string{"is true", "is false", "is not true", "is not false", "is unknown", "is not unknown"} {
		specials[n] = resolveIsBool
	}
	specials["in"] = resolveIn
	specials["not in"] = resolveIn
	specials["coalesce"] = resolveCoalesce
	specials["greatest"] = resolveCoalesce
	specials["least"] = resolveCoalesce
	specials["nullif"] = resolveNullif
	specials["__pg_distinct"] = resolveDistinct
	specials["__pg_not_distinct"] = resolveDistinct
	specials["case"] = resolveFuncCase
}

func sameTypes(args []types.T) []types.T {
	out := make([]types.T, len(args))
	copy(out, args)
	return out
}

func resolveLogic(name string, args []types.T) (*resolution, error) {
	if name == "not" && len(args) != 1 || name != "not" && len(args) < 2 {
		return nil, notFound(name, args)
	}
	casts := sameTypes(args)
	for i, a := range args {
		switch a.Fam {
		case types.Bool:
		case types.Unknown:
			casts[i] = types.TBool
		default:
			return nil, pgerror.New(pgcode.DatatypeMismatch, "argument of %s must be type boolean, not type %s", strings.ToUpper(name), typeName(a))
		}
	}
	r := &resolution{ret: types.TBool, casts: casts}
	switch name {
	case "and":
		r.build = buildAnd
	case "or":
		r.build = buildOr
	default:
		r.build = buildNot
	}
	return r, nil
}

func argFns(b *bctx) []Fn {
	fns := make([]Fn, len(b.args))
	for i := range b.args {
		fns[i] = b.args[i].fn
	}
	return fns
}

func argBools(b *bctx) []boolFn {
	fns := make([]boolFn, len(b.args))
	for i := range b.args {
		fns[i] = b.args[i].bools()
	}
	return fns
}

// buildAnd builds three-valued AND: false wins, then NULL; evaluation
// stops at the first false.
func buildAnd(b *bctx) (Fn, error) { return buildJunction(b, false) }

// buildOr builds three-valued OR: true wins, then NULL; evaluation stops
// at the first true.
func buildOr(b *bctx) (Fn, error) { return buildJunction(b, true) }

// buildJunction builds AND (wins = false) or OR (wins = true): a non-NULL
// argument equal to wins decides the result at once; otherwise the result
// is NULL if any argument was NULL, else !wins.
func buildJunction(b *bctx, wins bool) (Fn, error) {
	if len(b.args) == 2 {
		x, y := b.args[0].bools(), b.args[1].bools()
		b.bfn = func(row types.Row) (bool, bool, error) {
			l, ln, err := x(row)
			if err != nil || (l == wins && !ln) {
				return wins, false, err
			}
			r, rn, err := y(row)
			if err != nil || (r == wins && !rn) {
				return wins, false, err
			}
			return !wins, ln || rn, nil
		}
		return nil, nil
	}
	fns := argBools(b)
	b.bfn = func(row types.Row) (bool, bool, error) {
		sawNull := false
		for _, f := range fns {
			v, null, err := f(row)
			if err != nil {
				return false, false, err
			}
			if null {
				sawNull = true
			} else if v == wins {
				return wins, false, nil
			}
		}
		return !wins, sawNull, nil
	}
	return nil, nil
}

func buildNot(b *bctx) (Fn, error) {
	x := b.args[0].bools()
	b.bfn = func(row types.Row) (bool, bool, error) {
		v, null, err := x(row)
		return !v, null, err
	}
	return nil, nil
}

func resolveIsNull(name string, args []types.T) (*resolution, error) {
	if len(args) != 1 {
		return nil, notFound(name, args)
	}
	want := name == "is null"
	return &resolution{ret: types.TBool, casts: sameTypes(args), build: func(b *bctx) (Fn, error) {
		a := b.args[0]
		var isNull func(types.Row) (bool, error)
		switch {
		case a.ifn != nil:
			f := a.ifn
			isNull = func(row types.Row) (bool, error) { _, n, err := f(row); return n, err }
		case a.bfn != nil:
			f := a.bfn
			isNull = func(row types.Row) (bool, error) { _, n, err := f(row); return n, err }
		case a.ffn != nil:
			f := a.ffn
			isNull = func(row types.Row) (bool, error) { _, n, err := f(row); return n, err }
		case a.dfn != nil:
			f := a.dfn
			isNull = func(row types.Row) (bool, error) { _, _, _, n, err := f(row); return n, err }
		}
		if isNull != nil {
			b.bfn = func(row types.Row) (bool, bool, error) {
				n, err := isNull(row)
				return n == want, false, err
			}
			return nil, nil
		}
		x := b.fn(0)
		return func(row types.Row) (types.Datum, error) {
			d, err := x(row)
			if err != nil {
				return types.Null, err
			}
			return boolD((d.K == types.KNull) == want), nil
		}, nil
	}}, nil
}

func resolveIsBool(name string, args []types.T) (*resolution, error) {
	if len(args) != 1 {
		return nil, notFound(name, args)
	}
	casts := sameTypes(args)
	switch args[0].Fam {
	case types.Bool:
	case types.Unknown:
		casts[0] = types.TBool
	default:
		return nil, pgerror.New(pgcode.DatatypeMismatch, "argument of %s must be type boolean, not type %s", strings.ToUpper(name), typeName(args[0]))
	}
	// match reports the result for NULL, false and true inputs.
	var onNull, onFalse, onTrue bool
	switch name {
	case "is true":
		onTrue = true
	case "is false":
		onFalse = true
	case "is not true":
		onNull, onFalse = true, true
	case "is not false":
		onNull, onTrue = true, true
	case "is unknown":
		onNull = true
	case "is not unknown":
		onFalse, onTrue = true, true
	}
	return &resolution{ret: types.TBool, casts: casts, build: func(b *bctx) (Fn, error) {
		x := b.fn(0)
		return func(row types.Row) (types.Datum, error) {
			d, err := x(row)
			if err != nil {
				return types.Null, err
			}
			switch {
			case d.K == types.KNull:
				return boolD(onNull), nil
			case d.I == 0:
				return boolD(onFalse), nil
			}
			return boolD(onTrue), nil
		}, nil
	}}, nil
}

// commonCasts resolves args to their common type and returns it with the
// per-argument cast targets.
func commonCasts(construct string, args []types.T) (types.T, []types.T, error) {
	ct, err := CommonTypeFor(construct, args)
	if err != nil {
		return ct, nil, err
	}
	casts := make([]types.T, len(args))
	for i, a := range args {
		if a.Fam == ct.Fam {
			casts[i] = a
		} else {
			casts[i] = castTarget(a, ct.Fam)
		}
	}
	return ct, casts, nil
}

// resolveIn handles "in" (and "not in"): Args[0] is the needle, the rest
// the list. Each item must be comparable with the needle by "=".
func resolveIn(name string, args []types.T) (*resolution, error) {
	if len(args) < 2 {
		return nil, notFound(name, args)
	}
	for _, it := range args[1:] {
		if _, err := resolve("=", []types.T{args[0], it}); err != nil {
			return nil, err
		}
	}
	ct, casts, err := commonCasts("IN", args)
	if err != nil {
		return nil, err
	}
	negate := name == "not in"
	return &resolution{ret: types.TBool, casts: casts, build: func(b *bctx) (Fn, error) {
		return buildIn(b, ct, negate)
	}}, nil
}

func buildIn(b *bctx, ct types.T, negate bool) (Fn, error) {
	needle := b.fn(0)
	items := b.args[1:]
	allConst := true
	listNull := false
	for _, it := range items {
		if !it.konst {
			allConst = false
			break
		}
		if it.val.K == types.KNull {
			listNull = true
		}
	}
	result := func(found, sawNull bool) types.Datum {
		switch {
		case found:
			return boolD(!negate)
		case sawNull:
			return types.Null
		}
		return boolD(negate)
	}
	if allConst && len(items) >= 4 && (isIntFam(ct.Fam) || category(ct.Fam) == 'S') {
		if isIntFam(ct.Fam) {
			set := make(map[int64]struct{}, len(items))
			for _, it := range items {
				if it.val.K != types.KNull {
					set[it.val.I] = struct{}{}
				}
			}
			x := b.args[0].ints()
			b.bfn = func(row types.Row) (bool, bool, error) {
				v, null, err := x(row)
				if err != nil || null {
					return false, null, err
				}
				_, found := set[v]
				switch {
				case found:
					return !negate, false, nil
				case listNull:
					return false, true, nil
				}
				return negate, false, nil
			}
			return nil, nil
		}
		set := make(map[string]int, len(items))
		for i, it := range items {
			if it.val.K != types.KNull {
				set[it.val.S] = i
			}
		}
		if b.args[0].lowerOf != nil {
			// lower(x) IN (…): x's case folded without a new string.
			x := b.args[0].lowerOf
			return func(row types.Row) (types.Datum, error) {
				d, err := x(row)
				if err != nil || d.K == types.KNull {
					return types.Null, err
				}
				_, found := indexLower(set, d.S)
				return result(found, listNull), nil
			}, nil
		}
		return func(row types.Row) (types.Datum, error) {
			d, err := needle(row)
			if err != nil || d.K == types.KNull {
				return types.Null, err
			}
			_, found := set[d.S]
			return result(found, listNull), nil
		}, nil
	}
	fns := make([]Fn, len(items))
	kernels := make([]func(x, y types.Datum) int, len(items))
	for i, it := range items {
		fns[i] = it.fn
		kernels[i] = compareKernel(b.args[0].t.Fam, it.t.Fam)
	}
	return func(row types.Row) (types.Datum, error) {
		d, err := needle(row)
		if err != nil || d.K == types.KNull {
			return types.Null, err
		}
		sawNull := false
		for i, f := range fns {
			v, err := f(row)
			if err != nil {
				return types.Null, err
			}
			if v.K == types.KNull {
				sawNull = true
				continue
			}
			if kernels[i](d, v) == 0 {
				return result(true, false), nil
			}
		}
		return result(false, sawNull), nil
	}, nil
}

func resolveCoalesce(name string, args []types.T) (*resolution, error) {
	if len(args) < 1 {
		return nil, notFound(name, args)
	}
	ct, casts, err := commonCasts(strings.ToUpper(name), args)
	if err != nil {
		return nil, err
	}
	r := &resolution{ret: ct, casts: casts}
	switch name {
	case "coalesce":
		r.build = buildCoalesce
	default:
		greatest := name == "greatest"
		r.build = func(b *bctx) (Fn, error) { return buildExtreme(b, greatest) }
	}
	return r, nil
}

func buildCoalesce(b *bctx) (Fn, error) {
	fns := argFns(b)
	return func(row types.Row) (types.Datum, error) {
		for _, f := range fns {
			d, err := f(row)
			if err != nil || d.K != types.KNull {
				return d, err
			}
		}
		return types.Null, nil
	}, nil
}

func buildExtreme(b *bctx, greatest bool) (Fn, error) {
	fns := argFns(b)
	kernel := compareKernel(b.ret.Fam, b.ret.Fam)
	return func(row types.Row) (types.Datum, error) {
		best := types.Null
		for _, f := range fns {
			d, err := f(row)
			if err != nil {
				return types.Null, err
			}
			if d.K == types.KNull {
				continue
			}
			if best.K == types.KNull {
				best = d
				continue
			}
			c := kernel(d, best)
			if (greatest && c > 0) || (!greatest && c < 0) {
				best = d
			}
		}
		return best, nil
	}, nil
}

func resolveNullif(name string, args []types.T) (*resolution, error) {
	if len(args) != 2 {
		return nil, notFound(name, args)
	}
	r, err := resolve("=", args)
	if err != nil {
		return nil, err
	}
	ret := r.casts[0]
	return &resolution{ret: ret, casts: r.casts, build: func(b *bctx) (Fn, error) {
		x, y := b.fn(0), b.fn(1)
		k := compareKernel(b.args[0].t.Fam, b.args[1].t.Fam)
		return func(row types.Row) (types.Datum, error) {
			a, err := x(row)
			if err != nil {
				return types.Null, err
			}
			c, err := y(row)
			if err != nil {
				return types.Null, err
			}
			if a.K != types.KNull && c.K != types.KNull && k(a, c) == 0 {
				return types.Null, nil
			}
			return a, nil
		}, nil
	}}, nil
}

func resolveDistinct(name string, args []types.T) (*resolution, error) {
	if len(args) != 2 {
		return nil, notFound(name, args)
	}
	r, err := resolve("=", args)
	if err != nil {
		return nil, err
	}
	distinct := name == "__pg_distinct"
	return &resolution{ret: types.TBool, casts: r.casts, build: func(b *bctx) (Fn, error) {
		x, y := b.fn(0), b.fn(1)
		k := compareKernel(b.args[0].t.Fam, b.args[1].t.Fam)
		return func(row types.Row) (types.Datum, error) {
			a, err := x(row)
			if err != nil {
				return types.Null, err
			}
			c, err := y(row)
			if err != nil {
				return types.Null, err
			}
			var d bool
			switch {
			case a.K == types.KNull && c.K == types.KNull:
				d = false
			case a.K == types.KNull || c.K == types.KNull:
				d = true
			default:
				d = k(a, c) != 0
			}
			return boolD(d == distinct), nil
		}, nil
	}}, nil
}

// resolveFuncCase handles the Func spelling of a searched CASE:
// Args are cond1, then1, cond2, then2, ... and an optional final ELSE.
func resolveFuncCase(name string, args []types.T) (*resolution, error) {
	if len(args) < 2 {
		return nil, notFound(name, args)
	}
	casts := sameTypes(args)
	var branches []types.T
	var branchIdx []int
	for i := 0; i < len(args); i++ {
		if i%2 == 0 && i+1 < len(args) {
			switch args[i].Fam {
			case types.Bool:
			case types.Unknown:
				casts[i] = types.TBool
			default:
				return nil, pgerror.New(pgcode.DatatypeMismatch, "argument of CASE/WHEN must be type boolean, not type %s", typeName(args[i]))
			}
			continue
		}
		branches = append(branches, args[i])
		branchIdx = append(branchIdx, i)
	}
	ct, bc, err := commonCasts("CASE", branches)
	if err != nil {
		return nil, err
	}
	for j, i := range branchIdx {
		casts[i] = bc[j]
	}
	return &resolution{ret: ct, casts: casts, build: func(b *bctx) (Fn, error) {
		fns := argFns(b)
		return func(row types.Row) (types.Datum, error) {
			i := 0
			for ; i+1 < len(fns); i += 2 {
				c, err := fns[i](row)
				if err != nil {
					return types.Null, err
				}
				if c.K == types.KBool && c.I != 0 {
					return fns[i+1](row)
				}
			}
			if i < len(fns) {
				return fns[i](row)
			}
			return types.Null, nil
		}, nil
	}}, nil
}
