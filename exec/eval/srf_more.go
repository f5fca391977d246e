package eval

import (
	"sluice/exec/spec"
	"sluice/sql/types"
)

// More set-returning functions: generate_subscripts (over Sluice's text[]
// arrays) and regexp_split_to_table (regexp_split_to_array's elements).

func init() {
	TA, I4, T := types.TextArray, types.Int4, types.Text
	subs := func(args []types.Datum) ([]types.Row, error) {
		if args[0].K == types.KNull || args[1].K == types.KNull || args[1].I != 1 {
			return nil, nil // Sluice's arrays have one dimension
		}
		n := len(args[0].Elems())
		reverse := len(args) > 2 && args[2].I != 0
		out := make([]types.Row, n)
		for i := range out {
			v := int64(i + 1)
			if reverse {
				v = int64(n - i)
			}
			out[i] = types.Row{types.NewInt(v)}
		}
		return out, nil
	}
	cols := []types.Column{{Name: "generate_subscripts", Type: types.TInt4}}
	tableFuncs["generate_subscripts"] = []tableFunc{
		{params: fams(TA, I4), cols: cols, run: subs},
		{params: fams(TA, I4, types.Bool), cols: cols, run: subs},
	}
	split := func(args []types.Datum) ([]types.Row, error) {
		for _, a := range args {
			if a.K == types.KNull {
				return nil, nil
			}
		}
		call := &spec.Func{Name: "regexp_split_to_array", T: types.TTextArray}
		for _, a := range args {
			call.Args = append(call.Args, &spec.Const{D: a, T: types.TText})
		}
		fn, err := Compile(call, nil)
		if err != nil {
			return nil, err
		}
		arr, err := fn(nil)
		if err != nil || arr.K == types.KNull {
			return nil, err
		}
		out := make([]types.Row, len(arr.Elems()))
		for i, e := range arr.Elems() {
			out[i] = types.Row{e}
		}
		return out, nil
	}
	scols := []types.Column{{Name: "regexp_split_to_table", Type: types.TText}}
	tableFuncs["regexp_split_to_table"] = []tableFunc{
		{params: fams(T, T), cols: scols, run: split},
		{params: fams(T, T, T), cols: scols, run: split},
	}
}
