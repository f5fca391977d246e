package eval

import "sluice/sql/types"

// unnest over int2vector and oidvector (pg_index.indkey, pg_proc's
// proargtypes) yields int2 and oid elements, as in PostgreSQL, so that
// they compare with pg_attribute.attnum and oids (SQLAlchemy's
// get_pk_constraint joins unnest(indkey) with attnum). These overloads
// come before unnest(text[]), which would yield text. Their subscripts
// start at 0 (generate_subscripts).
func init() {
	vec := func(fam types.Family, t types.T) tableFunc {
		return tableFunc{params: fams(fam), cols: []types.Column{{Name: "unnest", Type: t}},
			run: func(args []types.Datum) ([]types.Row, error) {
				if args[0].K == types.KNull {
					return nil, nil
				}
				out := make([]types.Row, 0, len(args[0].Elems()))
				for _, e := range args[0].Elems() {
					if e.K == types.KString {
						d, err := types.ParseText(e.S, t)
						if err != nil {
							return nil, err
						}
						e = d
					}
					out = append(out, types.Row{e})
				}
				return out, nil
			}}
	}
	tableFuncs["unnest"] = append([]tableFunc{vec(types.Int2Vector, types.TInt2), vec(types.OidVector, types.TOid)},
		tableFuncs["unnest"]...)
	subs := func(args []types.Datum) ([]types.Row, error) {
		if args[0].K == types.KNull || args[1].K == types.KNull || args[1].I != 1 {
			return nil, nil // one dimension
		}
		n := len(args[0].Elems())
		reverse := len(args) > 2 && args[2].I != 0
		out := make([]types.Row, n)
		for i := range out {
			v := int64(i)
			if reverse {
				v = int64(n - 1 - i)
			}
			out[i] = types.Row{types.NewInt(v)}
		}
		return out, nil
	}
	cols := []types.Column{{Name: "generate_subscripts", Type: types.TInt4}}
	var ovs []tableFunc
	for _, f := range []types.Family{types.Int2Vector, types.OidVector} {
		ovs = append(ovs, tableFunc{params: fams(f, types.Int4), cols: cols, run: subs},
			tableFunc{params: fams(f, types.Int4, types.Bool), cols: cols, run: subs})
	}
	tableFuncs["generate_subscripts"] = append(ovs, tableFuncs["generate_subscripts"]...)
}
