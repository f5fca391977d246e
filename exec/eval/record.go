package eval

import (
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Records (sql/types/record.go) in expressions: the planner builds one
// from a set-returning function's columns with __pg_record(cols…), typed
// by its shape, and reads a field with __pg_record_field(rec, i), i a
// constant. Neither goes through the function registry: their types come
// from the shape, which the planner knows. __pg_tuple(x…) is the same
// value but never NULL: the inputs of an ordered aggregate in a
// materialized view (exec/ops' FoldAgg), NULL arguments included.

// compileRecord compiles __pg_record and __pg_record_field.
func compileRecord(name string, f *spec.Func, args []arg) (arg, error) {
	if name == "__pg_record" || name == "__pg_tuple" {
		tuple := name == "__pg_tuple"
		// A function that ran out of rows before the others it is
		// zipped with is padded with NULLs (ops.ProjectSet), and its
		// record is then NULL, as in PostgreSQL; the functions whose
		// records Sluice builds never return a row of NULLs.
		return arg{t: f.T, fn: func(row types.Row) (types.Datum, error) {
			fields := make([]types.Datum, len(args))
			null := true
			for i, a := range args {
				d, err := a.fn(row)
				if err != nil {
					return types.Null, err
				}
				fields[i], null = d, null && d.K == types.KNull
			}
			if null && !tuple {
				return types.Null, nil
			}
			return types.Datum{K: types.KArray, A: types.NewElems(fields)}, nil
		}}, nil
	}
	c, ok := f.Args[1].(*spec.Const)
	if len(args) != 2 || !ok || c.D.K != types.KInt {
		return arg{}, pgerror.New(pgcode.Internal, "__pg_record_field takes a record and a constant field number")
	}
	i := int(c.D.I)
	rec := args[0].fn
	return arg{t: f.T, fn: func(row types.Row) (types.Datum, error) {
		d, err := rec(row)
		if err != nil || d.K != types.KArray || i >= len(d.Elems()) {
			return types.Null, err
		}
		return d.Elems()[i], nil
	}}, nil
}

// information_schema._pg_expandarray(a) yields (x, n): each element of a
// and its position from 1 (pgjdbc's getPrimaryKeys and getIndexInfo call
// it over pg_index.indkey). Over int2vector and oidvector x is int2 and
// oid, as their elements compare with attnum and oids.
func init() {
	expand := func(elem types.T) tableFunc {
		return tableFunc{cols: []types.Column{{Name: "x", Type: elem}, {Name: "n", Type: types.TInt4}},
			run: func(args []types.Datum) ([]types.Row, error) {
				if args[0].K == types.KNull {
					return nil, nil
				}
				out := make([]types.Row, 0, len(args[0].Elems()))
				for i, e := range args[0].Elems() {
					if e.K == types.KString && elem.Fam != types.Text {
						d, err := types.ParseText(e.S, elem)
						if err != nil {
							return nil, err
						}
						e = d
					}
					out = append(out, types.Row{e, types.NewInt(int64(i + 1))})
				}
				return out, nil
			}}
	}
	v2, vo, a2, ta := expand(types.TInt2), expand(types.TOid), expand(types.TInt2), expand(types.TText)
	v2.params, vo.params, a2.params, ta.params = fams(types.Int2Vector), fams(types.OidVector), fams(types.Int2Array), fams(types.TextArray)
	tableFuncs["_pg_expandarray"] = []tableFunc{v2, vo, a2, ta}
}
