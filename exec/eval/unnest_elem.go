package eval

import "sluice/sql/types"

// unnest of the element-typed arrays yields the element type, every leaf
// in row-major order. (This file's init runs after tablefunc.go's, which
// sets text[]'s unnest.)
func init() {
	for _, f := range arrayFams {
		if !types.IsElemArray(f) {
			continue
		}
		elem, _ := types.ArrayElem(f)
		tableFuncs["unnest"] = append([]tableFunc{{params: fams(f), cols: []types.Column{{Name: "unnest", Type: elem}},
			run: func(args []types.Datum) ([]types.Row, error) {
				if args[0].K == types.KNull {
					return nil, nil
				}
				var out []types.Row
				for _, e := range flatLeaves(args[0].Elems(), nil) {
					out = append(out, types.Row{e})
				}
				return out, nil
			}}}, tableFuncs["unnest"]...)
	}
}

// __pg_unnest_ordinality(a) is unnest(a) WITH ORDINALITY (the parser
// renames it): each leaf with its position from 1, as bigint.
func init() {
	for _, f := range arrayFams {
		elem, text := arrayElemOf(f)
		tableFuncs["__pg_unnest_ordinality"] = append(tableFuncs["__pg_unnest_ordinality"], tableFunc{params: fams(f),
			cols: []types.Column{{Name: "unnest", Type: elem}, {Name: "ordinality", Type: types.TInt8}},
			run: func(args []types.Datum) ([]types.Row, error) {
				if args[0].K == types.KNull {
					return nil, nil
				}
				var out []types.Row
				for i, e := range flatLeaves(args[0].Elems(), nil) {
					if text && f != types.TextArray && e.K == types.KString {
						d, err := types.ParseText(e.S, elem)
						if err != nil {
							return nil, err
						}
						e = d
					}
					out = append(out, types.Row{e, types.NewInt(int64(i + 1))})
				}
				return out, nil
			}})
	}
}
