package eval

import (
	"math"
	"strings"
	"unicode/utf8"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// castMode is the Postgres coercion context of a conversion.
type castMode uint8

const (
	castImplicit castMode = iota // inserted by resolution
	castAssign                   // INSERT/UPDATE target columns
	castExplicit                 // CAST(x AS t), x::t
)

const usPerDay = 86400 * 1000000

// AssignCast converts d from type from to type to with the rules of an
// assignment to a column (INSERT, UPDATE): as an explicit cast, except that
// a string longer than a varchar(n) column is an error (22001) unless the
// excess is all spaces.
func AssignCast(d types.Datum, from, to types.T) (types.Datum, error) {
	f, err := datumCast(from, to, castAssign, nil /* UTC */)
	if err != nil || f == nil || d.K == types.KNull {
		return d, err
	}
	return f(d)
}

// castArg wraps a in a conversion to type to.
func castArg(a arg, to types.T, mode castMode, ctx *Context) (arg, error) {
	if a.t == to {
		return a, nil
	}
	f, err := datumCast(a.t, to, mode, ctx)
	if err != nil {
		return arg{}, err
	}
	if f == nil {
		a.t = to
		return a, nil
	}
	if a.konst && a.t.Fam == types.Unknown {
		// An untyped literal is converted when the statement is compiled,
		// and a bad one fails it, as in Postgres' parser.
		if a.val.K == types.KNull {
			return constArg(types.Null, to), nil
		}
		d, err := f(a.val)
		if err != nil {
			return arg{}, err
		}
		return constArg(d, to), nil
	}
	in := a.fn
	out := arg{t: to, fn: func(row types.Row) (types.Datum, error) {
		d, err := in(row)
		if err != nil || d.K == types.KNull {
			return types.Null, err
		}
		return f(d)
	}}
	switch {
	case isIntFam(a.t.Fam) && to.Fam == types.Float8:
		x := a.ints()
		out.ffn = func(row types.Row) (float64, bool, error) {
			v, null, err := x(row)
			return float64(v), null, err
		}
	case a.t.Fam == types.Float4 && to.Fam == types.Float8:
		out.ffn = a.floats()
	case isIntFam(a.t.Fam) && to.Fam == types.Numeric && to.Prec == 0:
		x := a.ints()
		out.dfn = func(row types.Row) (int64, int32, string, bool, error) {
			v, null, err := x(row)
			return v, 0, "", null, err
		}
	}
	if a.konst {
		out = fold(out, []arg{a})
	}
	return out, nil
}

// datumCast returns the conversion of a non-NULL value from type from to
// type to, or nil when the value needs none.
func datumCast(from, to types.T, mode castMode, ctx *Context) (func(types.Datum) (types.Datum, error), error) {
	if from == to {
		return nil, nil
	}
	base, err := baseCast(from, to, ctx)
	if err != nil {
		return nil, err
	}
	mod := typmodCast(to, mode)
	switch {
	case base == nil:
		return mod, nil
	case mod == nil:
		return base, nil
	}
	return func(d types.Datum) (types.Datum, error) {
		d, err := base(d)
		if err != nil {
			return d, err
		}
		return mod(d)
	}, nil
}

// baseCast converts between families, ignoring the target's modifiers.
func baseCast(from, to types.T, ctx *Context) (func(types.Datum) (types.Datum, error), error) {
	ff, tf := from.Fam, to.Fam
	plainTo := typeOf(tf)
	switch {
	case ff == types.Record && tf == types.Record && from != to && len(to.RecordFields()) > 0:
		// A row to a STRUCT type: field by field (sql/types.castRecord).
		return func(d types.Datum) (types.Datum, error) { return types.Cast(d, from, to) }, nil
	case ff == types.Unknown && tf == types.Record && len(to.RecordFields()) > 0:
		return func(d types.Datum) (types.Datum, error) { return types.Cast(d, from, to) }, nil
	case ff == tf:
		return nil, nil
	case tf == types.Unknown:
		return nil, nil
	case ff == types.Unknown:
		if category(tf) == 'S' {
			return nil, nil
		}
		return func(d types.Datum) (types.Datum, error) {
			if d.K != types.KString {
				return types.Cast(d, from, plainTo)
			}
			return types.ParseTextIn(d.S, plainTo, ctx.loc())
		}, nil
	case isIntFam(ff) && isIntFam(tf):
		switch tf {
		case types.Int2, types.Int4:
			if canImplicit(ff, tf) {
				return nil, nil
			}
			lo, hi := intBounds(tf)
			return func(d types.Datum) (types.Datum, error) {
				if d.I < lo || d.I > hi {
					return types.Null, errIntRange(tf)
				}
				return d, nil
			}, nil
		case types.Int8:
			if types.IsOidFamily(ff) {
				return nil, nil
			}
			return nil, nil
		default: // oid, regclass
			if types.IsOidFamily(ff) {
				return nil, nil
			}
			return func(d types.Datum) (types.Datum, error) {
				switch {
				case d.I >= 0 && d.I <= math.MaxUint32:
					return d, nil
				case ff != types.Int8 && d.I < 0:
					return types.NewInt(d.I + 1<<32), nil
				}
				return types.Null, pgerror.New(pgcode.NumericValueOutOfRange, "OID out of range")
			}, nil
		}
	case isIntFam(ff) && tf == types.Numeric:
		return func(d types.Datum) (types.Datum, error) { return types.DecFromInt(d.I), nil }, nil
	case isIntFam(ff) && tf == types.Float8:
		return func(d types.Datum) (types.Datum, error) { return types.NewFloat(float64(d.I)), nil }, nil
	case isIntFam(ff) && tf == types.Float4:
		return func(d types.Datum) (types.Datum, error) { return types.NewFloat(float64(float32(d.I))), nil }, nil
	case ff == types.Float4 && tf == types.Float8:
		return nil, nil
	case ff == types.Numeric && tf == types.Float8:
		return func(d types.Datum) (types.Datum, error) { return types.NewFloat(types.DecToFloat(d)), nil }, nil
	case ff == types.Date && (tf == types.Timestamp || tf == types.TimestampTZ):
		k := types.KTimestamp
		if tf == types.TimestampTZ {
			k = types.KTimestampTZ
		}
		return func(d types.Datum) (types.Datum, error) {
			us, err := dateToTimestamp(d.I)
			if err == nil && k == types.KTimestampTZ {
				us, err = localToInstant(ctx.loc(), us)
			}
			return types.Datum{K: k, I: us}, err
		}, nil
	case ff == types.Timestamp && tf == types.TimestampTZ:
		return func(d types.Datum) (types.Datum, error) {
			us, err := localToInstant(ctx.loc(), d.I)
			return types.Datum{K: types.KTimestampTZ, I: us}, err
		}, nil
	case ff == types.TimestampTZ && tf == types.Timestamp:
		return func(d types.Datum) (types.Datum, error) {
			us, err := instantToLocal(ctx.loc(), d.I)
			return types.Datum{K: types.KTimestamp, I: us}, err
		}, nil
	case (ff == types.Timestamp || ff == types.TimestampTZ) && tf == types.Date:
		tz := ff == types.TimestampTZ
		return func(d types.Datum) (types.Datum, error) {
			if d.I == math.MinInt64 || d.I == math.MaxInt64 {
				return types.Cast(d, from, plainTo)
			}
			if tz {
				d.I = types.ToLocal(ctx.loc(), d.I)
			}
			return types.NewDate(floorDiv(d.I, usPerDay)), nil
		}, nil
	case (ff == types.Timestamp || ff == types.TimestampTZ) && tf == types.Time:
		tz := ff == types.TimestampTZ
		return func(d types.Datum) (types.Datum, error) {
			if d.I == math.MinInt64 || d.I == math.MaxInt64 {
				return types.Null, nil // PostgreSQL: an infinite timestamp has no time of day
			}
			if tz {
				d.I = types.ToLocal(ctx.loc(), d.I)
			}
			return types.NewTime(floorMod(d.I, usPerDay)), nil
		}, nil
	case ff == types.Time && tf == types.Interval:
		return func(d types.Datum) (types.Datum, error) { return types.NewInterval(0, 0, d.I), nil }, nil
	case (category(ff) == 'S' || ff == types.Char) && (tf == types.Text || tf == types.Varchar):
		return nil, nil
	case tf == types.Name || tf == types.Char:
		// Truncating casts: sql/types knows the limits.
		return func(d types.Datum) (types.Datum, error) { return types.Cast(d, from, plainTo) }, nil
	case ff == types.Bool && category(tf) == 'S':
		return func(d types.Datum) (types.Datum, error) {
			if d.I != 0 {
				return types.NewString("true"), nil
			}
			return types.NewString("false"), nil
		}, nil
	case category(tf) == 'S' && ff != types.TextArray && ff != types.Bytea && ff != types.JSONB:
		return func(d types.Datum) (types.Datum, error) {
			return types.NewString(types.FormatTextIn(d, from, ctx.loc())), nil
		}, nil
	case category(ff) == 'S' && (tf == types.TimestampTZ || tf == types.TimestampTZArray):
		return func(d types.Datum) (types.Datum, error) { return types.ParseTextIn(d.S, plainTo, ctx.loc()) }, nil
	}
	return func(d types.Datum) (types.Datum, error) { return types.Cast(d, from, plainTo) }, nil
}

// typmodCast applies the modifiers of to (numeric precision and scale,
// varchar length), or returns nil when to has none.
func typmodCast(to types.T, mode castMode) func(types.Datum) (types.Datum, error) {
	switch to.Fam {
	case types.Numeric:
		if to.Prec <= 0 {
			return nil
		}
		prec, scale := to.Prec, to.Scale
		if scale < 0 {
			scale = 0
		}
		return func(d types.Datum) (types.Datum, error) { return types.DecCoerce(d, prec, scale) }
	case types.Varchar:
		if to.Prec <= 0 {
			return nil
		}
		return varcharCut(int(to.Prec), mode)
	case types.VarcharArray:
		// varchar(n)[]: each element as a varchar(n).
		if to.Prec <= 0 {
			return nil
		}
		cut := varcharCut(int(to.Prec), mode)
		var leaves func(a []types.Datum) ([]types.Datum, error)
		leaves = func(a []types.Datum) ([]types.Datum, error) {
			var out []types.Datum
			for i, e := range a {
				var v types.Datum
				var err error
				switch e.K {
				case types.KArray:
					var sub []types.Datum
					sub, err = leaves(e.Elems())
					v = types.Datum{K: types.KArray, A: types.NewElems(sub)}
				case types.KString:
					v, err = cut(e)
				default:
					v = e
				}
				if err != nil {
					return nil, err
				}
				if out == nil && (v.K != e.K || v.S != e.S || e.K == types.KArray) {
					out = append(make([]types.Datum, 0, len(a)), a[:i]...)
				}
				if out != nil {
					out = append(out, v)
				}
			}
			if out == nil {
				return a, nil
			}
			return out, nil
		}
		return func(d types.Datum) (types.Datum, error) {
			a, err := leaves(d.Elems())
			return types.Datum{K: types.KArray, A: types.NewElems(a)}, err
		}
	}
	return nil
}

// varcharCut returns the conversion of a string to varchar(n): cut to n
// characters, an error (22001) in an assignment unless the excess is all
// spaces.
func varcharCut(n int, mode castMode) func(types.Datum) (types.Datum, error) {
	return func(d types.Datum) (types.Datum, error) {
		if len(d.S) <= n {
			return d, nil
		}
		cut, ok := runePrefix(d.S, n)
		if !ok {
			return d, nil
		}
		if mode == castAssign && strings.TrimRight(d.S[len(cut):], " ") != "" {
			return types.Null, pgerror.New(pgcode.StringDataRightTrunc, "value too long for type character varying(%d)", n)
		}
		return types.NewString(cut), nil
	}
}

// runePrefix returns the first n characters of s and whether s is longer.
func runePrefix(s string, n int) (string, bool) {
	i := 0
	for c := 0; c < n; c++ {
		if i >= len(s) {
			return s, false
		}
		_, sz := utf8.DecodeRuneInString(s[i:])
		i += sz
	}
	if i >= len(s) {
		return s, false
	}
	return s[:i], true
}

func intBounds(f types.Family) (int64, int64) {
	switch f {
	case types.Int2:
		return math.MinInt16, math.MaxInt16
	case types.Int4:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

func errIntRange(f types.Family) error {
	switch f {
	case types.Int2:
		return pgerror.New(pgcode.NumericValueOutOfRange, "smallint out of range")
	case types.Int4:
		return pgerror.New(pgcode.NumericValueOutOfRange, "integer out of range")
	}
	return pgerror.New(pgcode.NumericValueOutOfRange, "bigint out of range")
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 {
	m := a % b
	if m != 0 && ((m < 0) != (b < 0)) {
		m += b
	}
	return m
}
