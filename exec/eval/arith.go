package eval

import (
	"math"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file holds arithmetic on numbers: + - * / % ^, unary minus, the
// bitwise operators and abs.

func errDivZero() error { return pgerror.New(pgcode.DivisionByZero, "division by zero") }

func errFloatOverflow() error {
	return pgerror.New(pgcode.NumericValueOutOfRange, "value out of range: overflow")
}

func errFloatUnderflow() error {
	return pgerror.New(pgcode.NumericValueOutOfRange, "value out of range: underflow")
}

// eval2 evaluates both arguments (Postgres evaluates every argument of a
// strict function before looking at NULLs); ok is false if either is NULL.
func eval2(x, y Fn, row types.Row) (a, c types.Datum, ok bool, err error) {
	if a, err = x(row); err != nil {
		return
	}
	if c, err = y(row); err != nil {
		return
	}
	ok = a.K != types.KNull && c.K != types.KNull
	return
}

// strict1 applies f to a non-NULL argument; NULL gives NULL.
func strict1(x Fn, f func(types.Datum) (types.Datum, error)) Fn {
	return func(row types.Row) (types.Datum, error) {
		a, err := x(row)
		if err != nil || a.K == types.KNull {
			return types.Null, err
		}
		return f(a)
	}
}

// strict2 applies f to two non-NULL arguments; a NULL gives NULL.
func strict2(x, y Fn, f func(a, b types.Datum) (types.Datum, error)) Fn {
	return func(row types.Row) (types.Datum, error) {
		a, c, ok, err := eval2(x, y, row)
		if !ok || err != nil {
			return types.Null, err
		}
		return f(a, c)
	}
}

// strictN applies f to the arguments when none is NULL.
func strictN(fns []Fn, f func(args []types.Datum) (types.Datum, error)) Fn {
	n := len(fns)
	return func(row types.Row) (types.Datum, error) {
		var buf [4]types.Datum
		var args []types.Datum
		if n <= len(buf) {
			args = buf[:n]
		} else {
			args = make([]types.Datum, n)
		}
		null := false
		for i, fn := range fns {
			d, err := fn(row)
			if err != nil {
				return types.Null, err
			}
			if d.K == types.KNull {
				null = true
			}
			args[i] = d
		}
		if null {
			return types.Null, nil
		}
		return f(args)
	}
}

func build1(f func(types.Datum) (types.Datum, error)) builder {
	return func(b *bctx) (Fn, error) { return strict1(b.fn(0), f), nil }
}

func build2(f func(a, c types.Datum) (types.Datum, error)) builder {
	return func(b *bctx) (Fn, error) { return strict2(b.fn(0), b.fn(1), f), nil }
}

// build3 builds a strict three-argument function; the arguments travel by
// value, so a call allocates nothing.
func build3(f func(a, b, c types.Datum) (types.Datum, error)) builder {
	return func(b *bctx) (Fn, error) {
		x, y, z := b.fn(0), b.fn(1), b.fn(2)
		return func(row types.Row) (types.Datum, error) {
			a, c, ok, err := eval2(x, y, row)
			if !ok || err != nil {
				return types.Null, err
			}
			d, err := z(row)
			if err != nil || d.K == types.KNull {
				return types.Null, err
			}
			return f(a, c, d)
		}, nil
	}
}

// buildIntArith builds + - * / % on integers; the result type gives the range.
func buildIntArith(b *bctx) (Fn, error) {
	name := b.name
	if name == "mod" {
		name = "%"
	}
	f := b.ret.Fam
	lo, hi := intBounds(f)
	x, y := b.args[0].ints(), b.args[1].ints()
	var k func(a, c int64) (int64, error)
	switch name {
	case "+":
		if f == types.Int8 {
			b.ifn = func(row types.Row) (int64, bool, error) {
				a, an, err := x(row)
				if err != nil {
					return 0, false, err
				}
				c, cn, err := y(row)
				if err != nil || an || cn {
					return 0, an || cn, err
				}
				r := a + c
				if (c > 0 && r < a) || (c < 0 && r > a) {
					return 0, false, errIntRange(f)
				}
				return r, false, nil
			}
			return nil, nil
		}
		k = func(a, c int64) (int64, error) { return a + c, nil }
	case "-":
		if f == types.Int8 {
			b.ifn = func(row types.Row) (int64, bool, error) {
				a, an, err := x(row)
				if err != nil {
					return 0, false, err
				}
				c, cn, err := y(row)
				if err != nil || an || cn {
					return 0, an || cn, err
				}
				r := a - c
				if (c > 0 && r > a) || (c < 0 && r < a) {
					return 0, false, errIntRange(f)
				}
				return r, false, nil
			}
			return nil, nil
		}
		k = func(a, c int64) (int64, error) { return a - c, nil }
	case "*":
		if f == types.Int8 {
			b.ifn = func(row types.Row) (int64, bool, error) {
				a, an, err := x(row)
				if err != nil {
					return 0, false, err
				}
				c, cn, err := y(row)
				if err != nil || an || cn {
					return 0, an || cn, err
				}
				r, ok := mul64(a, c)
				if !ok {
					return 0, false, errIntRange(f)
				}
				return r, false, nil
			}
			return nil, nil
		}
		k = func(a, c int64) (int64, error) { return a * c, nil }
	case "/":
		k = func(a, c int64) (int64, error) {
			switch {
			case c == 0:
				return 0, errDivZero()
			case c == -1:
				if a == lo {
					return 0, errIntRange(f)
				}
				return -a, nil
			}
			return a / c, nil
		}
	case "%":
		k = func(a, c int64) (int64, error) {
			switch {
			case c == 0:
				return 0, errDivZero()
			case c == -1:
				return 0, nil
			}
			return a % c, nil
		}
	default:
		return nil, pgerror.New(pgcode.Internal, "no integer operator %s", b.name)
	}
	b.ifn = binaryStrict(x, y, func(a, c int64) (int64, error) {
		r, err := k(a, c)
		if err == nil && (r < lo || r > hi) {
			err = errIntRange(f)
		}
		return r, err
	})
	return nil, nil
}

// mul64 multiplies with overflow detection.
func mul64(a, c int64) (int64, bool) {
	if a == 0 || c == 0 {
		return 0, true
	}
	r := a * c
	if (a == -1 && c == math.MinInt64) || (c == -1 && a == math.MinInt64) || r/c != a {
		return 0, false
	}
	return r, true
}

func add64(a, c int64) (int64, bool) {
	r := a + c
	if (c > 0 && r < a) || (c < 0 && r > a) {
		return 0, false
	}
	return r, true
}

// checkFloat applies Postgres' float overflow/underflow checks to the
// result r of an operation on a and c; f32 selects real.
func checkFloat(r, a, c float64, f32, zeroCheck bool) (float64, error) {
	if f32 {
		r = float64(float32(r))
	}
	if math.IsInf(r, 0) && !math.IsInf(a, 0) && !math.IsInf(c, 0) {
		return 0, errFloatOverflow()
	}
	if zeroCheck && r == 0 && a != 0 && c != 0 && !math.IsInf(a, 0) && !math.IsInf(c, 0) {
		return 0, errFloatUnderflow()
	}
	return r, nil
}

// buildFloatArith builds + - * / on real and double precision.
func buildFloatArith(b *bctx) (Fn, error) {
	f32 := b.ret.Fam == types.Float4
	x, y := b.args[0].floats(), b.args[1].floats()
	var k func(a, c float64) (float64, error)
	switch b.name {
	case "+":
		k = func(a, c float64) (float64, error) { return checkFloat(a+c, a, c, f32, false) }
	case "-":
		k = func(a, c float64) (float64, error) { return checkFloat(a-c, a, c, f32, false) }
	case "*":
		k = func(a, c float64) (float64, error) { return checkFloat(a*c, a, c, f32, true) }
	case "/":
		k = func(a, c float64) (float64, error) {
			if c == 0 && !math.IsNaN(a) {
				return 0, errDivZero()
			}
			return checkFloat(a/c, a, c, f32, true)
		}
	default:
		return nil, pgerror.New(pgcode.Internal, "no float operator %s", b.name)
	}
	b.ffn = binaryStrict(x, y, k)
	return nil, nil
}

// buildDecArith builds + - * / % on numeric.
func buildDecArith(b *bctx) (Fn, error) {
	x, y := b.args[0].decs(), b.args[1].decs()
	var op func(a, c types.Datum) (types.Datum, error)
	switch b.name {
	case "+":
		op = types.DecAdd
	case "-":
		op = types.DecSub
	case "*":
		op = types.DecMul
	case "/":
		op = types.DecDiv
	case "%":
		op = types.DecMod
	default:
		return nil, pgerror.New(pgcode.Internal, "no numeric operator %s", b.name)
	}
	b.dfn = func(row types.Row) (int64, int32, string, bool, error) {
		a, as, ab, an, err := x(row)
		if err != nil {
			return 0, 0, "", false, err
		}
		c, cs, cb, cn, err := y(row)
		if err != nil || an || cn {
			return 0, 0, "", an || cn, err
		}
		r, err := op(decD(a, as, ab), decD(c, cs, cb))
		return r.I, r.X, r.S, false, err
	}
	return nil, nil
}

// buildNeg builds unary minus.
func buildNeg(b *bctx) (Fn, error) {
	x := b.fn(0)
	switch f := b.ret.Fam; {
	case isIntFam(f):
		lo, _ := intBounds(f)
		return strict1(x, func(a types.Datum) (types.Datum, error) {
			if a.I == lo {
				return types.Null, errIntRange(f)
			}
			return types.Datum{K: types.KInt, I: -a.I}, nil
		}), nil
	case isFloatFam(f):
		return strict1(x, func(a types.Datum) (types.Datum, error) {
			return types.NewFloat(-a.Float()), nil
		}), nil
	case f == types.Numeric:
		return strict1(x, decNeg), nil
	case f == types.Interval:
		return strict1(x, intervalNeg), nil
	}
	return nil, pgerror.New(pgcode.Internal, "no unary minus for %s", b.ret)
}

func buildAbs(b *bctx) (Fn, error) {
	x := b.fn(0)
	switch f := b.ret.Fam; {
	case isIntFam(f):
		lo, _ := intBounds(f)
		return strict1(x, func(a types.Datum) (types.Datum, error) {
			if a.I == lo {
				return types.Null, errIntRange(f)
			}
			if a.I < 0 {
				a.I = -a.I
			}
			return a, nil
		}), nil
	case isFloatFam(f):
		return strict1(x, func(a types.Datum) (types.Datum, error) {
			return types.NewFloat(math.Abs(a.Float())), nil
		}), nil
	}
	return strict1(x, decAbs), nil
}

// buildBitwise builds & | # << >> and prefix ~ on integers.
func buildBitwise(b *bctx) (Fn, error) {
	f := b.ret.Fam
	bits := int64(16)
	switch f {
	case types.Int4:
		bits = 32
	case types.Int8:
		bits = 64
	}
	wrap := func(r int64) int64 {
		// Shifts wrap around in the operand's width, as in C.
		switch bits {
		case 16:
			return int64(int16(r))
		case 32:
			return int64(int32(r))
		}
		return r
	}
	if b.name == "~" {
		return strict1(b.fn(0), func(a types.Datum) (types.Datum, error) {
			return types.Datum{K: types.KInt, I: ^a.I}, nil
		}), nil
	}
	name := b.name
	return strict2(b.fn(0), b.fn(1), func(a, c types.Datum) (types.Datum, error) {
		var r int64
		switch name {
		case "&":
			r = a.I & c.I
		case "|":
			r = a.I | c.I
		case "#":
			r = a.I ^ c.I
		case "<<":
			r = wrap(a.I << uint64(c.I&(bits-1)))
		case ">>":
			r = a.I >> uint64(c.I&(bits-1))
		}
		return types.Datum{K: types.KInt, I: r}, nil
	}), nil
}

func init() {
	I2, I4, I8 := types.Int2, types.Int4, types.Int8
	ints := []types.Family{I2, I4, I8}
	wider := func(a, c types.Family) types.Family {
		if a > c {
			return a
		}
		return c
	}
	for _, op := range []string{"+", "-", "*", "/"} {
		for _, a := range ints {
			for _, c := range ints {
				reg(op, fams(a, c), typeOf(wider(a, c)), buildIntArith)
			}
		}
		reg(op, fams(types.Float4, types.Float4), types.TFloat4, buildFloatArith)
		reg(op, fams(types.Float4, types.Float8), types.TFloat8, buildFloatArith)
		reg(op, fams(types.Float8, types.Float4), types.TFloat8, buildFloatArith)
		reg(op, fams(types.Float8, types.Float8), types.TFloat8, buildFloatArith)
		reg(op, fams(types.Numeric, types.Numeric), types.TNumeric, buildDecArith)
	}
	for _, f := range ints {
		reg("%", fams(f, f), typeOf(f), buildIntArith)
		reg("mod", fams(f, f), typeOf(f), buildIntArith)
		for _, op := range []string{"&", "|", "#"} {
			reg(op, fams(f, f), typeOf(f), buildBitwise)
		}
		reg("<<", fams(f, I4), typeOf(f), buildBitwise)
		reg(">>", fams(f, I4), typeOf(f), buildBitwise)
		reg("~", fams(f), typeOf(f), buildBitwise)
	}
	reg("%", fams(types.Numeric, types.Numeric), types.TNumeric, buildDecArith)
	reg("mod", fams(types.Numeric, types.Numeric), types.TNumeric, func(b *bctx) (Fn, error) {
		b.name = "%"
		return buildDecArith(b)
	})
	for _, f := range []types.Family{I2, I4, I8, types.Float4, types.Float8, types.Numeric, types.Interval} {
		reg("neg", fams(f), typeOf(f), buildNeg)
	}
	for _, f := range []types.Family{I2, I4, I8, types.Float4, types.Float8, types.Numeric} {
		reg("abs", fams(f), typeOf(f), buildAbs)
	}
}

// binaryStrict evaluates a strict binary operator on typed argument
// evaluators: NULL if either argument is NULL, else k(a, c).
func binaryStrict[T int64 | float64](x, y func(types.Row) (T, bool, error), k func(a, c T) (T, error)) func(types.Row) (T, bool, error) {
	return func(row types.Row) (T, bool, error) {
		a, an, err := x(row)
		if err != nil {
			return 0, false, err
		}
		c, cn, err := y(row)
		if err != nil || an || cn {
			return 0, an || cn, err
		}
		r, err := k(a, c)
		return r, false, err
	}
}
