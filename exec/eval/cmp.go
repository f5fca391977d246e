package eval

import (
	"cmp"
	"math"
	"strings"

	"sluice/sql/types"
)

// compareKernel returns a three-way comparison of two non-NULL values of
// families l and r (a pair "=" resolves to, after its casts).
func compareKernel(l, r types.Family) func(x, y types.Datum) int {
	switch {
	case isIntFam(l) && isIntFam(r), l == types.Bool && r == types.Bool, l == types.Time && r == types.Time:
		return cmpI
	case isFloatFam(l) && isFloatFam(r):
		return func(x, y types.Datum) int { return cmpFloat(x.Float(), y.Float()) }
	case l == types.Numeric && r == types.Numeric:
		return types.DecCmp
	case isDateTimeFam(l) && isDateTimeFam(r):
		if l == r || (l != types.Date && r != types.Date) {
			return cmpI
		}
		return func(x, y types.Datum) int { return cmpInt64(tsOf(x), tsOf(y)) }
	case (category(l) == 'S' || l == types.Char || l == types.Bytea) && (category(r) == 'S' || r == types.Char || r == types.Bytea):
		return func(x, y types.Datum) int { return strings.Compare(x.S, y.S) }
	case l == types.Interval && r == types.Interval:
		return cmpInterval
	}
	return types.Compare
}

func isFloatFam(f types.Family) bool { return f == types.Float4 || f == types.Float8 }

func isDateTimeFam(f types.Family) bool {
	return f == types.Date || f == types.Timestamp || f == types.TimestampTZ
}

func cmpI(x, y types.Datum) int { return cmpInt64(x.I, y.I) }

func cmpInt64(a, b int64) int { return cmp.Compare(a, b) }

// cmpFloat orders floats as Postgres does (types.CompareFloat).
func cmpFloat(a, b float64) int { return types.CompareFloat(a, b) }

// tsOf returns a date, timestamp or timestamptz as microseconds since the
// epoch; dates out of the timestamp range clamp to ±infinity as in
// Postgres' date2timestamp_no_overflow.
func tsOf(d types.Datum) int64 {
	if d.K != types.KDate {
		return d.I
	}
	us, err := dateToTimestamp(d.I)
	if err != nil {
		if d.I < 0 {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return us
}

// cmpInterval compares intervals as Postgres does: a month is 30 days and
// a day 24 hours.
func cmpInterval(x, y types.Datum) int {
	xd, xf := intervalSpan(x)
	yd, yf := intervalSpan(y)
	if c := cmpInt64(xd, yd); c != 0 {
		return c
	}
	return cmpInt64(xf, yf)
}

// intervalSpan returns an interval as whole days and a non-negative
// fraction of a day in microseconds.
func intervalSpan(d types.Datum) (days, frac int64) {
	days = d.I/usPerDay + int64(d.M)*30 + int64(d.X)
	frac = d.I % usPerDay
	if frac < 0 {
		frac += usPerDay
		days--
	}
	return days, frac
}

// cmpOp identifies a comparison operator.
type cmpOp uint8

const (
	opEQ cmpOp = iota
	opNE
	opLT
	opLE
	opGT
	opGE
)

var cmpOps = map[string]cmpOp{"=": opEQ, "<>": opNE, "<": opLT, "<=": opLE, ">": opGT, ">=": opGE}

func (op cmpOp) test(c int) bool {
	switch op {
	case opEQ:
		return c == 0
	case opNE:
		return c != 0
	case opLT:
		return c < 0
	case opLE:
		return c <= 0
	case opGT:
		return c > 0
	}
	return c >= 0
}

func (op cmpOp) ints(a, b int64) bool {
	switch op {
	case opEQ:
		return a == b
	case opNE:
		return a != b
	case opLT:
		return a < b
	case opLE:
		return a <= b
	case opGT:
		return a > b
	}
	return a >= b
}

var (
	dTrue  = types.NewBool(true)
	dFalse = types.NewBool(false)
)

func boolD(b bool) types.Datum {
	if b {
		return dTrue
	}
	return dFalse
}

// buildCompare builds the comparison operators.
func buildCompare(b *bctx) (Fn, error) {
	op := cmpOps[b.name]
	l, r := b.args[0].t.Fam, b.args[1].t.Fam
	switch {
	case (isIntFam(l) && isIntFam(r)) || (l == types.Bool && r == types.Bool) || (l == r && intLike(l)) ||
		(isDateTimeFam(l) && isDateTimeFam(r) && l != types.Date && r != types.Date):
		x, y := b.args[0].ints(), b.args[1].ints()
		if k, ok := b.konst(1); ok && k.K != types.KNull {
			kv := k.I
			b.bfn = func(row types.Row) (bool, bool, error) {
				a, an, err := x(row)
				if err != nil || an {
					return false, an, err
				}
				return op.ints(a, kv), false, nil
			}
			return nil, nil
		}
		b.bfn = func(row types.Row) (bool, bool, error) {
			a, an, err := x(row)
			if err != nil {
				return false, false, err
			}
			c, cn, err := y(row)
			if err != nil || an || cn {
				return false, an || cn, err
			}
			return op.ints(a, c), false, nil
		}
		return nil, nil
	case isFloatFam(l) && isFloatFam(r):
		x, y := b.args[0].floats(), b.args[1].floats()
		b.bfn = func(row types.Row) (bool, bool, error) {
			a, an, err := x(row)
			if err != nil {
				return false, false, err
			}
			c, cn, err := y(row)
			if err != nil || an || cn {
				return false, an || cn, err
			}
			return op.test(cmpFloat(a, c)), false, nil
		}
		return nil, nil
	case l == types.Numeric && r == types.Numeric:
		x, y := b.args[0].decs(), b.args[1].decs()
		b.bfn = func(row types.Row) (bool, bool, error) {
			a, as, ab, an, err := x(row)
			if err != nil {
				return false, false, err
			}
			c, cs, cb, cn, err := y(row)
			if err != nil || an || cn {
				return false, an || cn, err
			}
			return op.test(types.DecCmp(decD(a, as, ab), decD(c, cs, cb))), false, nil
		}
		return nil, nil
	}
	k := compareKernel(l, r)
	x, y := b.fn(0), b.fn(1)
	b.bfn = func(row types.Row) (bool, bool, error) {
		a, c, ok, err := eval2(x, y, row)
		if err != nil || !ok {
			return false, !ok, err
		}
		return op.test(k(a, c)), false, nil
	}
	return nil, nil
}

func init() {
	F := func(fs ...types.Family) []types.Family { return fs }
	pairs := [][]types.Family{
		F(types.Bool, types.Bool), F(types.Bytea, types.Bytea), F(types.Char, types.Char),
		F(types.Date, types.Date), F(types.Date, types.Timestamp), F(types.Date, types.TimestampTZ),
		F(types.Float4, types.Float4), F(types.Float4, types.Float8), F(types.Float8, types.Float4), F(types.Float8, types.Float8),
		F(types.Interval, types.Interval), F(types.JSONB, types.JSONB),
		F(types.Name, types.Name), F(types.Name, types.Text), F(types.Text, types.Name), F(types.Text, types.Text),
		F(types.Numeric, types.Numeric), F(types.Oid, types.Oid), F(types.Time, types.Time),
		F(types.Timestamp, types.Date), F(types.Timestamp, types.Timestamp), F(types.Timestamp, types.TimestampTZ),
		F(types.TimestampTZ, types.Date), F(types.TimestampTZ, types.Timestamp), F(types.TimestampTZ, types.TimestampTZ),
		F(types.TextArray, types.TextArray),
	}
	ints := []types.Family{types.Int2, types.Int4, types.Int8}
	for _, a := range ints {
		for _, c := range ints {
			pairs = append(pairs, F(a, c))
		}
	}
	for name := range cmpOps {
		for _, p := range pairs {
			reg(name, p, types.TBool, buildCompare)
		}
	}
}
