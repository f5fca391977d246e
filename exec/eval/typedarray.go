package eval

import "sluice/sql/types"

// smallint[] and boolean[] (sql/types/typedarray.go) by subscript and
// unnest yield their element type, subscripts from 1 as every PostgreSQL
// array; the other text[] functions take them as text[] (they convert
// implicitly).
func init() {
	for _, f := range []types.Family{types.Int2Array, types.BoolArray} {
		elem, _ := types.ArrayElem(f)
		read := func(e types.Datum) (types.Datum, error) {
			if e.K != types.KString {
				return e, nil
			}
			return types.ParseText(e.S, elem)
		}
		reg("__pg_subscript", fams(f, types.Int4), elem, build2(func(a, c types.Datum) (types.Datum, error) {
			if c.I < 1 || c.I > int64(len(a.A)) {
				return types.Null, nil
			}
			return read(a.A[c.I-1])
		}))
		tableFuncs["unnest"] = append([]tableFunc{{params: fams(f), cols: []types.Column{{Name: "unnest", Type: elem}},
			run: func(args []types.Datum) ([]types.Row, error) {
				if args[0].K == types.KNull {
					return nil, nil
				}
				out := make([]types.Row, 0, len(args[0].A))
				for _, e := range args[0].A {
					d, err := read(e)
					if err != nil {
						return nil, err
					}
					out = append(out, types.Row{d})
				}
				return out, nil
			}}}, tableFuncs["unnest"]...)
	}
}
