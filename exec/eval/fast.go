package eval

import (
	"sluice/sql/types"
)

// Typed evaluators. A Datum is nine words, too large to be returned in
// registers, so chains of integer, float and boolean operations pass bare
// values between them instead: an arg may carry, besides its Fn, an
// evaluator of its int64 (integers, dates, times, timestamps), float64 or
// bool value. null reports SQL NULL.
type (
	intFn   func(row types.Row) (v int64, null bool, err error)
	floatFn func(row types.Row) (v float64, null bool, err error)
	boolFn  func(row types.Row) (v bool, null bool, err error)
	// decFn evaluates a decimal as its Datum fields I, X and S: the
	// coefficient and scale, or, when S is set, the sign and scale of a
	// coefficient beyond the int64 range whose magnitude S holds (see
	// sql/types). X also encodes NaN and the infinities.
	decFn func(row types.Row) (coef int64, scale int32, big string, null bool, err error)
	// elemFn evaluates element i (from 1) of an array, as subscripting
	// its Datum does, without building the array.
	elemFn func(row types.Row, i int64) (types.Datum, error)
)

// decD rebuilds a decimal Datum.
func decD(coef int64, scale int32, big string) types.Datum {
	return types.Datum{K: types.KDecimal, I: coef, X: scale, S: big}
}

// intLike reports whether values of family f live in Datum.I.
func intLike(f types.Family) bool {
	switch f {
	case types.Int2, types.Int4, types.Int8, types.Oid, types.RegClass, types.RegType, types.RegProc, types.RegNamespace,
		types.Date, types.Time, types.Timestamp, types.TimestampTZ:
		return true
	}
	return false
}

// ints returns a's integer evaluator, adapting its Fn if it has none.
func (a arg) ints() intFn {
	if a.ifn != nil {
		return a.ifn
	}
	fn := a.fn
	return func(row types.Row) (int64, bool, error) {
		d, err := fn(row)
		return d.I, d.K == types.KNull, err
	}
}

// floats returns a's float evaluator, adapting its Fn if it has none.
func (a arg) floats() floatFn {
	if a.ffn != nil {
		return a.ffn
	}
	fn := a.fn
	return func(row types.Row) (float64, bool, error) {
		d, err := fn(row)
		return d.Float(), d.K == types.KNull, err
	}
}

// decs returns a's decimal evaluator, adapting its Fn if it has none.
func (a arg) decs() decFn {
	if a.dfn != nil {
		return a.dfn
	}
	fn := a.fn
	return func(row types.Row) (int64, int32, string, bool, error) {
		d, err := fn(row)
		return d.I, d.X, d.S, d.K == types.KNull, err
	}
}

// bools returns a's boolean evaluator, adapting its Fn if it has none.
func (a arg) bools() boolFn {
	if a.bfn != nil {
		return a.bfn
	}
	fn := a.fn
	return func(row types.Row) (bool, bool, error) {
		d, err := fn(row)
		return d.I != 0, d.K == types.KNull, err
	}
}

// withFast adds the typed evaluators a column or constant of type t has.
func withFast(a arg) arg {
	switch {
	case a.konst:
		d := a.val
		null := d.K == types.KNull
		switch {
		case d.K == types.KBool:
			v := d.I != 0
			a.bfn = func(types.Row) (bool, bool, error) { return v, false, nil }
		case d.K == types.KFloat:
			v := d.Float()
			a.ffn = func(types.Row) (float64, bool, error) { return v, false, nil }
		case d.K == types.KDecimal:
			c, x, s := d.I, d.X, d.S
			a.dfn = func(types.Row) (int64, int32, string, bool, error) { return c, x, s, false, nil }
		case null:
			a.bfn = func(types.Row) (bool, bool, error) { return false, true, nil }
			a.ffn = func(types.Row) (float64, bool, error) { return 0, true, nil }
			a.dfn = func(types.Row) (int64, int32, string, bool, error) { return 0, 0, "", true, nil }
		}
		if null || d.K == types.KInt || d.K == types.KBool || d.K == types.KDate || d.K == types.KTime ||
			d.K == types.KTimestamp || d.K == types.KTimestampTZ {
			v := d.I
			a.ifn = func(types.Row) (int64, bool, error) { return v, null, nil }
		}
	}
	return a
}

func colArg(idx int, t types.T) arg {
	a := arg{t: t, fn: func(row types.Row) (types.Datum, error) {
		if idx >= len(row) {
			return types.Null, errColumn(idx, len(row))
		}
		return row[idx], nil
	}}
	switch {
	case intLike(t.Fam):
		a.ifn = func(row types.Row) (int64, bool, error) {
			if idx >= len(row) {
				return 0, false, errColumn(idx, len(row))
			}
			d := &row[idx]
			return d.I, d.K == types.KNull, nil
		}
	case t.Fam == types.Bool:
		a.bfn = func(row types.Row) (bool, bool, error) {
			if idx >= len(row) {
				return false, false, errColumn(idx, len(row))
			}
			d := &row[idx]
			return d.I != 0, d.K == types.KNull, nil
		}
	case isFloatFam(t.Fam):
		a.ffn = func(row types.Row) (float64, bool, error) {
			if idx >= len(row) {
				return 0, false, errColumn(idx, len(row))
			}
			d := &row[idx]
			return d.Float(), d.K == types.KNull, nil
		}
	case t.Fam == types.Numeric:
		a.dfn = func(row types.Row) (int64, int32, string, bool, error) {
			if idx >= len(row) {
				return 0, 0, "", false, errColumn(idx, len(row))
			}
			d := &row[idx]
			return d.I, d.X, d.S, d.K == types.KNull, nil
		}
	}
	return a
}

func datumFromDec(f decFn) Fn {
	return func(row types.Row) (types.Datum, error) {
		c, x, s, null, err := f(row)
		if err != nil || null {
			return types.Null, err
		}
		return decD(c, x, s), nil
	}
}

func datumFromInt(f intFn, kind types.Kind) Fn {
	return func(row types.Row) (types.Datum, error) {
		v, null, err := f(row)
		if err != nil || null {
			return types.Null, err
		}
		return types.Datum{K: kind, I: v}, nil
	}
}

func datumFromFloat(f floatFn) Fn {
	return func(row types.Row) (types.Datum, error) {
		v, null, err := f(row)
		if err != nil || null {
			return types.Null, err
		}
		return types.NewFloat(v), nil
	}
}

func datumFromBool(f boolFn) Fn {
	return func(row types.Row) (types.Datum, error) {
		v, null, err := f(row)
		if err != nil || null {
			return types.Null, err
		}
		return boolD(v), nil
	}
}
