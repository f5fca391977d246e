package eval

import (
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Sequences is what nextval, currval, setval and lastval call: the
// session's view of the catalog's sequences (server implements it). A
// Context without one (a view's dataflow) refuses the functions.
type Sequences interface {
	Nextval(name string) (int64, error)
	Currval(name string) (int64, error)
	Setval(name string, v int64, isCalled bool) (int64, error)
	Lastval() (int64, error)
}

func noSequences(fn string) error {
	return pgerror.New(pgcode.FeatureNotSupported, "%s() cannot be called here", fn).
		WithHint("sequence functions run in INSERT, UPDATE, SELECT and column defaults, not in views")
}

func init() {
	T, I8, B := types.Text, types.Int8, types.Bool
	seqFn := func(fn string, f func(s Sequences, args []types.Datum) (int64, error)) builder {
		return strictCall(func(ctx *Context, vals []types.Datum) (types.Datum, error) {
			if ctx == nil || ctx.Seq == nil {
				return types.Null, noSequences(fn)
			}
			v, err := f(ctx.Seq, vals)
			if err != nil {
				return types.Null, err
			}
			return intD(v), nil
		})
	}
	reg("nextval", fams(T), types.TInt8, seqFn("nextval", func(s Sequences, a []types.Datum) (int64, error) {
		return s.Nextval(a[0].S)
	})).volatile = true
	reg("currval", fams(T), types.TInt8, seqFn("currval", func(s Sequences, a []types.Datum) (int64, error) {
		return s.Currval(a[0].S)
	})).volatile = true
	reg("setval", fams(T, I8), types.TInt8, seqFn("setval", func(s Sequences, a []types.Datum) (int64, error) {
		return s.Setval(a[0].S, a[1].I, true)
	})).volatile = true
	reg("setval", fams(T, I8, B), types.TInt8, seqFn("setval", func(s Sequences, a []types.Datum) (int64, error) {
		return s.Setval(a[0].S, a[1].I, a[2].I != 0)
	})).volatile = true
	reg("lastval", nil, types.TInt8, seqFn("lastval", func(s Sequences, _ []types.Datum) (int64, error) {
		return s.Lastval()
	})).volatile = true
}

// strictCall builds a function of the session (sequences, privileges)
// over its evaluated arguments: NULL when any argument is NULL, else f
// with the statement's Context (nil outside a statement).
func strictCall(f func(ctx *Context, vals []types.Datum) (types.Datum, error)) builder {
	return func(b *bctx) (Fn, error) {
		ctx := b.ctx
		args := make([]Fn, len(b.args))
		for i := range b.args {
			args[i] = b.fn(i)
		}
		return func(row types.Row) (types.Datum, error) {
			vals := make([]types.Datum, len(args))
			for i, a := range args {
				d, err := a(row)
				if err != nil {
					return types.Null, err
				}
				if d.IsNull() {
					return types.Null, nil
				}
				vals[i] = d
			}
			return f(ctx, vals)
		}, nil
	}
}
