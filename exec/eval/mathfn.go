package eval

import (
	"math"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file holds the mathematical functions: round, trunc, floor, ceil,
// sign, sqrt, cbrt, exp, ln, log, power, div, pi, degrees, radians and the
// trigonometric functions.

func fl(f func(float64) (float64, error)) builder {
	return build1(func(a types.Datum) (types.Datum, error) {
		r, err := f(a.Float())
		return types.NewFloat(r), err
	})
}

func fl2(f func(float64, float64) (float64, error)) builder {
	return build2(func(a, c types.Datum) (types.Datum, error) {
		r, err := f(a.Float(), c.Float())
		return types.NewFloat(r), err
	})
}

func pure(f func(float64) float64) func(float64) (float64, error) {
	return func(x float64) (float64, error) { return f(x), nil }
}

func floatSqrt(x float64) (float64, error) {
	if x < 0 {
		return 0, pgerror.New(codeInvalidPower, "cannot take square root of a negative number")
	}
	return math.Sqrt(x), nil
}

func floatExp(x float64) (float64, error) {
	r := math.Exp(x)
	if math.IsInf(r, 0) && !math.IsInf(x, 0) {
		return 0, errFloatOverflow()
	}
	if r == 0 && !math.IsInf(x, 0) {
		return 0, errFloatUnderflow()
	}
	return r, nil
}

func floatLog(f func(float64) float64) func(float64) (float64, error) {
	return func(x float64) (float64, error) {
		switch {
		case x == 0:
			return 0, pgerror.New(codeInvalidLog, "cannot take logarithm of zero")
		case x < 0:
			return 0, pgerror.New(codeInvalidLog, "cannot take logarithm of a negative number")
		}
		return f(x), nil
	}
}

func floatPow(x, y float64) (float64, error) {
	if math.IsNaN(x) || math.IsNaN(y) {
		if x == 1 || y == 0 {
			return 1, nil
		}
		return math.NaN(), nil
	}
	if x == 0 && y < 0 {
		return 0, pgerror.New(codeInvalidPower, "zero raised to a negative power is undefined")
	}
	if x < 0 && math.Floor(y) != y && !math.IsInf(y, 0) {
		return 0, pgerror.New(codeInvalidPower, "a negative number raised to a non-integer power yields a complex result")
	}
	r := math.Pow(x, y)
	if math.IsInf(r, 0) && !math.IsInf(x, 0) && !math.IsInf(y, 0) {
		return 0, errFloatOverflow()
	}
	if r == 0 && x != 0 && !math.IsInf(x, 0) && !math.IsInf(y, 0) {
		return 0, errFloatUnderflow()
	}
	return r, nil
}

func floatSign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

func trigArg(f func(float64) float64, lo, hi float64) func(float64) (float64, error) {
	return func(x float64) (float64, error) {
		if math.IsNaN(x) {
			return x, nil
		}
		if x < lo || x > hi || math.IsInf(x, 0) {
			return 0, pgerror.New(pgcode.NumericValueOutOfRange, "input is out of range")
		}
		return f(x), nil
	}
}

func decScaleArg(f func(types.Datum, int32) (types.Datum, error)) builder {
	return build2(func(a, c types.Datum) (types.Datum, error) {
		// sql/types clamps the scale to what a numeric can hold.
		return f(a, int32(max(min(c.I, math.MaxInt32), math.MinInt32)))
	})
}

func init() {
	F8, N, I4 := types.Float8, types.Numeric, types.Int4
	tf8, tn := types.TFloat8, types.TNumeric

	reg("round", fams(F8), tf8, fl(pure(math.RoundToEven)))
	reg("round", fams(N), tn, build1(func(a types.Datum) (types.Datum, error) { return decRound(a, 0) }))
	reg("round", fams(N, I4), tn, decScaleArg(decRound))
	reg("trunc", fams(F8), tf8, fl(pure(math.Trunc)))
	reg("trunc", fams(N), tn, build1(func(a types.Datum) (types.Datum, error) { return decTrunc(a, 0) }))
	reg("trunc", fams(N, I4), tn, decScaleArg(decTrunc))
	reg("floor", fams(F8), tf8, fl(pure(math.Floor)))
	reg("floor", fams(N), tn, build1(decFloor))
	reg("ceil", fams(F8), tf8, fl(pure(math.Ceil)))
	reg("ceil", fams(N), tn, build1(decCeil))
	reg("sign", fams(F8), tf8, fl(pure(floatSign)))
	reg("sign", fams(N), tn, build1(func(a types.Datum) (types.Datum, error) {
		if types.DecIsNaN(a) {
			return a, nil
		}
		if inf := types.DecIsInf(a); inf != 0 {
			return types.NewDecimal(int64(inf), 0), nil
		}
		return types.NewDecimal(int64(decSign(a)), 0), nil
	}))
	reg("sqrt", fams(F8), tf8, fl(floatSqrt))
	reg("sqrt", fams(N), tn, build1(numericSqrt))
	reg("cbrt", fams(F8), tf8, fl(pure(math.Cbrt)))
	reg("exp", fams(F8), tf8, fl(floatExp))
	reg("exp", fams(N), tn, build1(numericExp))
	reg("ln", fams(F8), tf8, fl(floatLog(math.Log)))
	reg("ln", fams(N), tn, build1(numericLn))
	reg("log", fams(F8), tf8, fl(floatLog(math.Log10)))
	reg("log10", fams(F8), tf8, fl(floatLog(math.Log10)))
	reg("log", fams(N), tn, build1(func(a types.Datum) (types.Datum, error) {
		return numericLog(types.DecFromInt(10), a)
	}))
	reg("log10", fams(N), tn, build1(func(a types.Datum) (types.Datum, error) {
		return numericLog(types.DecFromInt(10), a)
	}))
	reg("log", fams(N, N), tn, build2(numericLog))
	for _, n := range []string{"power", "^"} {
		reg(n, fams(F8, F8), tf8, fl2(floatPow))
		reg(n, fams(N, N), tn, build2(numericPower))
	}
	reg("div", fams(N, N), tn, build2(func(a, c types.Datum) (types.Datum, error) {
		q, err := types.DecDiv(a, c)
		if err != nil {
			return q, err
		}
		return decTrunc(q, 0)
	}))
	reg("pi", nil, tf8, func(*bctx) (Fn, error) {
		return func(types.Row) (types.Datum, error) { return types.NewFloat(math.Pi), nil }, nil
	})
	reg("degrees", fams(F8), tf8, fl(pure(func(x float64) float64 { return x * (180 / math.Pi) })))
	reg("radians", fams(F8), tf8, fl(pure(func(x float64) float64 { return x * (math.Pi / 180) })))
	reg("sin", fams(F8), tf8, fl(pure(math.Sin)))
	reg("cos", fams(F8), tf8, fl(pure(math.Cos)))
	reg("tan", fams(F8), tf8, fl(pure(math.Tan)))
	reg("asin", fams(F8), tf8, fl(trigArg(math.Asin, -1, 1)))
	reg("acos", fams(F8), tf8, fl(trigArg(math.Acos, -1, 1)))
	reg("atan", fams(F8), tf8, fl(pure(math.Atan)))
	reg("atan2", fams(F8, F8), tf8, fl2(func(y, x float64) (float64, error) { return math.Atan2(y, x), nil }))
}
