package eval

import (
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// The array functions and operators of every array type (text[],
// smallint[], boolean[] and the element-typed arrays of
// sql/types/elemarray.go), each registered per array family so that the
// result keeps the argument's array type (array_cat(int[], int[]) is
// int[]) and subscripts and unnest yield the element type. Leaves of
// text[], smallint[] and boolean[] are their text forms; leaves of the
// others are values of the element type; either way two leaves are equal
// when types.Compare says so.

// PostgreSQL's null_value_not_allowed (22004) and array_subscript_error (2202E).
const (
	codeNullValueNotAllowed pgcode.Code = "22004"
	codeArraySubscriptError pgcode.Code = "2202E"
)

// arrayFams are the array families the functions below are registered for.
var arrayFams = []types.Family{types.TextArray, types.Int2Array, types.BoolArray,
	types.Int4Array, types.Int8Array, types.Float8Array, types.NumericArray, types.TimestampTZArray,
	types.Float4Array, types.DateArray, types.TimeArray, types.TimestampArray, types.IntervalArray,
	types.JSONBArray, types.VarcharArray, types.UUIDArray, types.ByteaArray}

// arrayElemOf returns the element type of array family f and whether its
// leaves are held as text.
func arrayElemOf(f types.Family) (types.T, bool) {
	if f == types.TextArray {
		return types.TText, true
	}
	elem, _ := types.ArrayElem(f)
	return elem, !types.IsElemArray(f)
}

// leaf converts an element value of type et to the leaf form of array
// family f.
func leafOf(d types.Datum, f types.Family) types.Datum {
	if _, text := arrayElemOf(f); text && d.K != types.KNull && d.K != types.KString {
		return types.NewString(types.FormatText(d, types.TUnknown))
	}
	return d
}

func sameLeaf(a, b types.Datum) bool {
	if a.K == types.KNull || b.K == types.KNull {
		return false
	}
	return types.Compare(a, b) == 0
}

// flatLeaves returns the leaves of a in row-major order.
func flatLeaves(a []types.Datum, out []types.Datum) []types.Datum {
	for _, e := range a {
		if e.K == types.KArray {
			out = flatLeaves(e.Elems(), out)
			continue
		}
		out = append(out, e)
	}
	return out
}

// arrayDims returns the sizes of a's dimensions (none for an empty array).
func arrayDims(a []types.Datum) []int {
	var dims []int
	for len(a) > 0 {
		dims = append(dims, len(a))
		if a[0].K != types.KArray {
			break
		}
		a = a[0].Elems()
	}
	return dims
}

func isMultiDim(a []types.Datum) bool { return len(a) > 0 && a[0].K == types.KArray }

func errMultiDim(what string) error {
	return pgerror.Unsupported("%s of multidimensional arrays is not supported", what)
}

func init() {
	I4 := types.Int4
	for _, f := range arrayFams {
		f := f
		at := types.T{Fam: f}
		elem, _ := arrayElemOf(f)
		ef := elem.Fam
		typed := f != types.TextArray
		if typed {
			if types.IsElemArray(f) {
				regElemArrayBasics(f, elem)
			}
			reg("array_length", fams(f, I4), types.TInt4, build2(arrayLength))
			reg("cardinality", fams(f), types.TInt4, build1(func(a types.Datum) (types.Datum, error) {
				return intD(int64(len(flatLeaves(a.Elems(), nil)))), nil
			}))
			reg("array_upper", fams(f, I4), types.TInt4, build2(arrayLength))
			reg("array_lower", fams(f, I4), types.TInt4, build2(func(a, d types.Datum) (types.Datum, error) {
				if r, _ := arrayLength(a, d); r.K == types.KNull {
					return r, nil
				}
				return intD(1), nil
			}))
			for name := range cmpOps {
				reg(name, fams(f, f), types.TBool, buildCompare)
			}
			reg("array_remove", fams(f, ef), at, func(b *bctx) (Fn, error) {
				x, y := b.fn(0), b.fn(1)
				return func(row types.Row) (types.Datum, error) {
					a, err := x(row)
					if err != nil || a.K == types.KNull {
						return types.Null, err
					}
					e, err := y(row)
					if err != nil {
						return types.Null, err
					}
					if isMultiDim(a.Elems()) {
						return types.Null, pgerror.Unsupported("removing elements from multidimensional arrays is not supported")
					}
					e = leafOf(e, f)
					out := []types.Datum{}
					for _, v := range a.Elems() {
						if (e.K == types.KNull && v.K == types.KNull) || sameLeaf(v, e) {
							continue
						}
						out = append(out, v)
					}
					return types.Datum{K: types.KArray, A: types.NewElems(out)}, nil
				}, nil
			})
		} else {
			reg("array_length", fams(f, I4), types.TInt4, build2(arrayLength))
		}
		// array_cat(anyarray, anyarray)
		reg("array_cat", fams(f, f), at, func(b *bctx) (Fn, error) {
			x, y := b.fn(0), b.fn(1)
			return func(row types.Row) (types.Datum, error) {
				a, err := x(row)
				if err != nil {
					return types.Null, err
				}
				c, err := y(row)
				if err != nil {
					return types.Null, err
				}
				return arrayCat(a, c)
			}, nil
		})
		// array_append(anyarray, anyelement), array_prepend(anyelement, anyarray)
		reg("array_append", fams(f, ef), at, func(b *bctx) (Fn, error) {
			x, y := b.fn(0), b.fn(1)
			return func(row types.Row) (types.Datum, error) {
				a, err := x(row)
				if err != nil {
					return types.Null, err
				}
				e, err := y(row)
				if err != nil {
					return types.Null, err
				}
				if a.K == types.KNull {
					return types.Datum{K: types.KArray, A: types.NewElems([]types.Datum{leafOf(e, f)})}, nil
				}
				if isMultiDim(a.Elems()) {
					return types.Null, pgerror.New(pgcode.DataException, "argument must be empty or one-dimensional array")
				}
				out := append(append([]types.Datum(nil), a.Elems()...), leafOf(e, f))
				return types.Datum{K: types.KArray, A: types.NewElems(out)}, nil
			}, nil
		})
		reg("array_prepend", fams(ef, f), at, func(b *bctx) (Fn, error) {
			x, y := b.fn(0), b.fn(1)
			return func(row types.Row) (types.Datum, error) {
				e, err := x(row)
				if err != nil {
					return types.Null, err
				}
				a, err := y(row)
				if err != nil {
					return types.Null, err
				}
				if a.K == types.KNull {
					return types.Datum{K: types.KArray, A: types.NewElems([]types.Datum{leafOf(e, f)})}, nil
				}
				if isMultiDim(a.Elems()) {
					return types.Null, pgerror.New(pgcode.DataException, "argument must be empty or one-dimensional array")
				}
				out := append([]types.Datum{leafOf(e, f)}, a.Elems()...)
				return types.Datum{K: types.KArray, A: types.NewElems(out)}, nil
			}, nil
		})
		// array_position(anyarray, anyelement [, start]), array_positions
		position := func(all bool) builder {
			return func(b *bctx) (Fn, error) {
				x, y := b.fn(0), b.fn(1)
				var z Fn
				if len(b.args) > 2 {
					z = b.fn(2)
				}
				return func(row types.Row) (types.Datum, error) {
					a, err := x(row)
					if err != nil || a.K == types.KNull {
						return types.Null, err
					}
					e, err := y(row)
					if err != nil {
						return types.Null, err
					}
					if isMultiDim(a.Elems()) {
						return types.Null, pgerror.Unsupported("searching for elements in multidimensional arrays is not supported")
					}
					start := 1
					if z != nil {
						s, err := z(row)
						if err != nil {
							return types.Null, err
						}
						if s.K == types.KNull {
							return types.Null, pgerror.New(codeNullValueNotAllowed, "initial position must not be null")
						}
						start = int(s.I)
					}
					e = leafOf(e, f)
					var hits []types.Datum
					for i := max(start, 1); i <= len(a.Elems()); i++ {
						v := a.Elems()[i-1]
						if (e.K == types.KNull && v.K == types.KNull) || sameLeaf(v, e) {
							if !all {
								return intD(int64(i)), nil
							}
							hits = append(hits, intD(int64(i)))
						}
					}
					if !all {
						return types.Null, nil
					}
					if hits == nil {
						hits = []types.Datum{}
					}
					return types.Datum{K: types.KArray, A: types.NewElems(hits)}, nil
				}, nil
			}
		}
		reg("array_position", fams(f, ef), types.TInt4, position(false))
		reg("array_position", fams(f, ef, I4), types.TInt4, position(false))
		reg("array_positions", fams(f, ef), types.TInt4Array, position(true))
		// a[i:j] (NULL bounds: the array's own)
		reg("__pg_slice", fams(f, I4, I4), at, func(b *bctx) (Fn, error) {
			x, lo, hi := b.fn(0), b.fn(1), b.fn(2)
			return func(row types.Row) (types.Datum, error) {
				a, err := x(row)
				if err != nil || a.K == types.KNull {
					return types.Null, err
				}
				l, err := lo(row)
				if err != nil {
					return types.Null, err
				}
				h, err := hi(row)
				if err != nil {
					return types.Null, err
				}
				from, to := int64(1), int64(len(a.Elems()))
				if l.K != types.KNull {
					from = max(l.I, 1)
				}
				if h.K != types.KNull {
					to = min(h.I, int64(len(a.Elems())))
				}
				if from > to {
					return types.Datum{K: types.KArray, A: types.NewElems([]types.Datum{})}, nil
				}
				return types.Datum{K: types.KArray, A: types.NewElems(append([]types.Datum(nil), a.Elems()[from-1:to]...))}, nil
			}, nil
		})
		// @>, <@, &&: on the leaves, NULL leaves never match.
		contains := func(a, c types.Datum) bool {
			la := flatLeaves(a.Elems(), nil)
			for _, e := range flatLeaves(c.Elems(), nil) {
				found := false
				for _, v := range la {
					if sameLeaf(v, e) {
						found = true
						break
					}
				}
				if !found {
					return false
				}
			}
			return true
		}
		reg("__pg_contains", fams(f, f), types.TBool, build2(func(a, c types.Datum) (types.Datum, error) {
			return types.NewBool(contains(a, c)), nil
		}))
		reg("__pg_contained_by", fams(f, f), types.TBool, build2(func(a, c types.Datum) (types.Datum, error) {
			return types.NewBool(contains(c, a)), nil
		}))
		reg("__pg_overlap", fams(f, f), types.TBool, build2(func(a, c types.Datum) (types.Datum, error) {
			lc := flatLeaves(c.Elems(), nil)
			for _, v := range flatLeaves(a.Elems(), nil) {
				for _, e := range lc {
					if sameLeaf(v, e) {
						return types.NewBool(true), nil
					}
				}
			}
			return types.NewBool(false), nil
		}))
		if typed {
			// a[i][j]...: the parser passes every index of a chain.
			reg("__pg_subscript", fams(f, I4, I4), elem, subscriptN(f))
			reg("__pg_subscript", fams(f, I4, I4, I4), elem, subscriptN(f))
		} else {
			reg("__pg_subscript", fams(f, I4, I4), elem, subscriptN(f))
			reg("__pg_subscript", fams(f, I4, I4, I4), elem, subscriptN(f))
		}
	}
}

// subscriptN is a[i][j]...: NULL when an index is out of range or the
// indexes do not reach a leaf (as PostgreSQL's a[i] of a 2-D array).
func subscriptN(f types.Family) builder {
	elem, text := arrayElemOf(f)
	return func(b *bctx) (Fn, error) {
		fns := make([]Fn, len(b.args))
		for i := range b.args {
			fns[i] = b.fn(i)
		}
		return func(row types.Row) (types.Datum, error) {
			cur, err := fns[0](row)
			if err != nil || cur.K == types.KNull {
				return types.Null, err
			}
			for _, fn := range fns[1:] {
				i, err := fn(row)
				if err != nil || i.K == types.KNull {
					return types.Null, err
				}
				if cur.K != types.KArray || i.I < 1 || i.I > int64(len(cur.Elems())) {
					return types.Null, nil
				}
				cur = cur.Elems()[i.I-1]
			}
			if cur.K == types.KArray {
				return types.Null, nil
			}
			if text && f != types.TextArray && cur.K == types.KString {
				return types.ParseText(cur.S, elem)
			}
			return cur, nil
		}, nil
	}
}

// arrayLength is array_length(a, d) and array_upper(a, d) (lower bounds
// are always 1).
func arrayLength(a, d types.Datum) (types.Datum, error) {
	dims := arrayDims(a.Elems())
	if d.I < 1 || d.I > int64(len(dims)) {
		return types.Null, nil
	}
	return intD(int64(dims[d.I-1])), nil
}

// arrayCat is array_cat / anyarray || anyarray: equal dimensions append
// the second's elements; an array one dimension lower is appended as one
// element (PostgreSQL's rules).
func arrayCat(a, c types.Datum) (types.Datum, error) {
	if a.K == types.KNull {
		return c, nil
	}
	if c.K == types.KNull {
		return a, nil
	}
	if len(a.Elems()) == 0 {
		return c, nil
	}
	if len(c.Elems()) == 0 {
		return a, nil
	}
	da, dc := arrayDims(a.Elems()), arrayDims(c.Elems())
	switch {
	case len(da) == len(dc):
		if len(da) > 1 && !equalInts(da[1:], dc[1:]) {
			return types.Null, errCatDims()
		}
		return types.Datum{K: types.KArray, A: types.NewElems(append(append([]types.Datum(nil), a.Elems()...), c.Elems()...))}, nil
	case len(da) == len(dc)+1 && equalInts(da[1:], dc):
		return types.Datum{K: types.KArray, A: types.NewElems(append(append([]types.Datum(nil), a.Elems()...), c))}, nil
	case len(dc) == len(da)+1 && equalInts(dc[1:], da):
		return types.Datum{K: types.KArray, A: types.NewElems(append([]types.Datum{a}, c.Elems()...))}, nil
	}
	return types.Null, errCatDims()
}

func errCatDims() error {
	return pgerror.New(codeArraySubscriptError, "cannot concatenate incompatible arrays")
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// regElemArrayBasics registers a[i] for the element-typed array family
// f (unnest is in unnest_elem.go, text[]'s in str.go and tablefunc.go).
func regElemArrayBasics(f types.Family, elem types.T) {
	reg("__pg_subscript", fams(f, types.Int4), elem, subscriptN(f))
}

// resolveElemArrayConcat resolves || with an element-typed array:
// array || array is array_cat, array || element array_append, element ||
// array array_prepend (an untyped literal beside an array is an array).
func resolveElemArrayConcat(args []types.T) (*resolution, error) {
	l, r := args[0].Fam, args[1].Fam
	switch {
	case types.IsArray(l) && (types.IsArray(r) || r == types.Unknown), types.IsArray(r) && l == types.Unknown:
		return resolve("array_cat", args)
	case types.IsArray(l):
		return resolve("array_append", args)
	}
	return resolve("array_prepend", args)
}

// ctorElemType returns the element type ARRAY[...] of elements of types
// args takes, as PostgreSQL's common-type rules give it (numbers,
// date/time values, and values of one type with an array type); ok is
// false for the other mixes (the constructor then makes text[] as
// before: strings, and mixes errCtorMismatch refuses).
func ctorElemType(args []types.T) (types.T, bool) {
	var out types.T
	seen := false
	for _, t := range args {
		if t.Fam == types.Unknown {
			continue
		}
		if !seen {
			out, seen = typeOf(t.Fam), true
			continue
		}
		if t.Fam == out.Fam {
			continue
		}
		c := category(t.Fam)
		if c == 'S' && category(out.Fam) == 'S' {
			// text and varchar convert implicitly both ways: the first
			// one's type (PostgreSQL's select_common_type).
			continue
		}
		if c != category(out.Fam) || (c != 'N' && c != 'D') {
			return types.TUnknown, false
		}
		switch {
		case canImplicit(out.Fam, t.Fam):
			out = typeOf(t.Fam)
		case canImplicit(t.Fam, out.Fam):
		default:
			return types.TUnknown, false
		}
	}
	if !seen {
		return types.TUnknown, false
	}
	switch out.Fam {
	case types.Int2, types.Int4:
		return types.TInt4, true
	case types.Int8, types.Float4, types.Float8, types.Numeric, types.TimestampTZ, types.Bool,
		types.Date, types.Time, types.Timestamp, types.Interval, types.JSONB, types.UUID, types.Bytea:
		return out, true
	case types.Varchar:
		return types.TVarchar, true
	}
	return types.TUnknown, false
}

// resolveTypedArrayCtor types ARRAY[...] of numbers, timestamptz or
// booleans as the array of their common type, and ARRAY[arrays of one
// element-typed family] as that family (one more dimension); nil when
// the elements are of other types.
func resolveTypedArrayCtor(args []types.T) *resolution {
	if len(args) == 0 {
		return nil
	}
	casts := make([]types.T, len(args))
	var ret types.T
	nested := false
	for _, t := range args {
		if types.IsArray(t.Fam) && t.Fam != types.TextArray {
			nested = true
			if ret.Fam != types.Unknown && ret.Fam != t.Fam {
				return nil
			}
			ret = t
		}
	}
	if nested {
		for i, t := range args {
			if t.Fam != ret.Fam && t.Fam != types.Unknown {
				return nil
			}
			casts[i] = ret
		}
	} else {
		elem, ok := ctorElemType(args)
		if !ok {
			return nil
		}
		ret, _ = types.ArrayOf(elem)
		for i := range casts {
			casts[i] = elem
		}
	}
	textLeaves := ret.Fam == types.BoolArray || ret.Fam == types.Int2Array
	return &resolution{ret: ret, casts: casts, build: func(b *bctx) (Fn, error) {
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
				if textLeaves && !nested && d.K != types.KNull {
					d = types.NewString(types.FormatText(d, types.TUnknown))
				}
				elems[i] = d
			}
			if nested {
				var dims []int
				for i, e := range elems {
					d := arrayDims(e.Elems())
					if i > 0 && !equalInts(d, dims) {
						return types.Null, pgerror.New(pgcode.Syntax, "multidimensional arrays must have array expressions with matching dimensions")
					}
					dims = d
				}
			}
			return types.Datum{K: types.KArray, A: types.NewElems(elems)}, nil
		}, nil
	}}
}

// errCtorMismatch is PostgreSQL's 42804 for ARRAY[...] of typed values
// (numbers, booleans, date/time values, jsonb, uuid, bytea) that have no
// common type (ARRAY[1, true]); nil for mixes with strings, which make
// text[] as before.
func errCtorMismatch(args []types.T) error {
	var first types.T
	for _, t := range args {
		if t.Fam == types.Unknown {
			continue
		}
		if _, ok := types.ArrayOf(t); !ok || t.IsString() {
			return nil
		}
		if first.Fam == types.Unknown {
			first = t
			continue
		}
		if t.Fam == first.Fam {
			continue
		}
		c := category(t.Fam)
		if c != category(first.Fam) || (c != 'N' && c != 'D' && c != 'B') {
			return pgerror.New(pgcode.DatatypeMismatch, "ARRAY types %s and %s cannot be matched", typeName(first), typeName(t))
		}
		if c == 'D' && !canImplicit(t.Fam, first.Fam) && !canImplicit(first.Fam, t.Fam) {
			// One category, no implicit cast either way: the first
			// type stays, and the other does not convert to it.
			return pgerror.New(pgcode.CannotCoerce, "ARRAY could not convert type %s to %s", typeName(t), typeName(first))
		}
	}
	return nil
}
