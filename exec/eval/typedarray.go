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
			if c.I < 1 || c.I > int64(len(a.Elems())) {
				return types.Null, nil
			}
			return read(a.Elems()[c.I-1])
		}))
		tableFuncs["unnest"] = append([]tableFunc{{params: fams(f), cols: []types.Column{{Name: "unnest", Type: elem}},
			run: func(args []types.Datum) ([]types.Row, error) {
				if args[0].K == types.KNull {
					return nil, nil
				}
				out := make([]types.Row, 0, len(args[0].Elems()))
				for _, e := range args[0].Elems() {
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

// "__pg_array_elems"(a text[], elem oid) converts every element of a to
// the element type and back to its text form, so that a cast to int[] or
// bool[] (Sluice's arrays are text[]) applies to the elements as in
// PostgreSQL: ARRAY[1,0]::bool[] is {t,f}, ARRAY['x']::int[] is 22P02.
func init() {
	reg("__pg_array_elems", fams(types.TextArray, types.Int4), types.TTextArray, build2(func(a, oid types.Datum) (types.Datum, error) {
		t, ok := types.FromOID(uint32(oid.I))
		if !ok || a.K != types.KArray {
			return a, nil
		}
		return convertArrayElems(a, t)
	}))
}

func convertArrayElems(a types.Datum, t types.T) (types.Datum, error) {
	out := make([]types.Datum, len(a.Elems()))
	for i, e := range a.Elems() {
		switch e.K {
		case types.KNull:
			out[i] = e
		case types.KArray:
			c, err := convertArrayElems(e, t)
			if err != nil {
				return types.Null, err
			}
			out[i] = c
		default:
			s := e.S
			if e.K != types.KString {
				s = types.FormatText(e, types.TUnknown)
			}
			d, err := types.ParseText(s, t)
			if err != nil {
				return types.Null, err
			}
			out[i] = types.NewString(types.FormatText(d, t))
		}
	}
	r := a
	r.SetElems(out)
	return r, nil
}
