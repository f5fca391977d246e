package eval

import (
	"os"
	"strconv"

	"sluice/sql/types"
)

// This file holds the catalog and session functions clients such as psql
// call: version(), current_user, format_type, pg_table_is_visible, ... They
// answer with sensible constants until the catalog is wired in.

// ServerVersion is what version() reports.
const ServerVersion = "PostgreSQL 15.0 (Sluice)"

func constFn(d types.Datum) builder {
	return func(*bctx) (Fn, error) {
		return func(types.Row) (types.Datum, error) { return d, nil }, nil
	}
}

// anyArgs returns a builder ignoring its arguments and returning d.
func anyArgs(d types.Datum) builder { return constFn(d) }

// formatType is format_type(oid, typmod).
func formatType(oid int64, typmod int64, hasMod bool) string {
	t, ok := types.FromOID(uint32(oid))
	if types.IsElemArray(t.Fam) {
		ok = false // numeric(10,2)[]: the element's typmod
	}
	if !ok {
		if n, ok := types.PseudoTypeName(uint32(oid)); ok {
			return n
		}
		if e, ok := types.ArrayElemOID(uint32(oid)); ok {
			return formatType(int64(e), typmod, hasMod) + "[]"
		}
		return "???"
	}
	if hasMod && typmod >= 4 {
		switch t.Fam {
		case types.Numeric:
			m := typmod - 4
			t.Prec = int16((m >> 16) & 0xffff)
			t.Scale = int16(m & 0xffff)
		case types.Varchar:
			t.Prec = int16(typmod - 4)
		}
	}
	return t.String()
}

func init() {
	tt, tn, tb := types.TText, types.TName, types.TBool
	O, I4, T, B := types.Oid, types.Int4, types.Text, types.Bool
	null := types.Null

	reg("version", nil, tt, constFn(str(ServerVersion)))
	reg("current_schema", nil, tn, constFn(str("public")))
	reg("current_schemas", fams(B), types.TTextArray, build1(func(a types.Datum) (types.Datum, error) {
		if a.I != 0 {
			return types.Datum{K: types.KArray, A: types.NewElems([]types.Datum{str("pg_catalog"), str("public")})}, nil
		}
		return types.Datum{K: types.KArray, A: types.NewElems([]types.Datum{str("public")})}, nil
	}))
	user := func(b *bctx) (Fn, error) {
		ctx := b.ctx
		return func(types.Row) (types.Datum, error) {
			if ctx.User == "" {
				return str("sluice"), nil
			}
			return str(ctx.User), nil
		}, nil
	}
	reg("current_user", nil, tn, user).volatile = true
	db := func(b *bctx) (Fn, error) {
		ctx := b.ctx
		return func(types.Row) (types.Datum, error) {
			if ctx.Database == "" {
				return str("sluice"), nil
			}
			return str(ctx.Database), nil
		}, nil
	}
	reg("current_database", nil, tn, db).volatile = true
	reg("current_catalog", nil, tn, db).volatile = true
	reg("pg_backend_pid", nil, types.TInt4, constFn(intD(int64(os.Getpid()))))
	reg("format_type", fams(O, I4), tt, func(b *bctx) (Fn, error) {
		x, y := b.fn(0), b.fn(1)
		return func(row types.Row) (types.Datum, error) {
			o, m, _, err := eval2(x, y, row)
			if err != nil || o.K == types.KNull {
				return types.Null, err
			}
			return str(formatType(o.I, m.I, m.K != types.KNull)), nil
		}, nil
	})
	reg("pg_encoding_to_char", fams(I4), tn, build1(func(a types.Datum) (types.Datum, error) {
		switch a.I {
		case 0:
			return str("SQL_ASCII"), nil
		case 6:
			return str("UTF8"), nil
		}
		return str(""), nil
	}))
	reg("pg_char_to_encoding", fams(types.Name), types.TInt4, build1(func(a types.Datum) (types.Datum, error) {
		switch a.S {
		case "SQL_ASCII", "sql_ascii":
			return intD(0), nil
		case "UTF8", "utf8", "UTF-8", "utf-8":
			return intD(6), nil
		}
		return intD(-1), nil
	}))
	reg("obj_description", fams(O), tt, anyArgs(null))
	reg("obj_description", fams(O, types.Name), tt, anyArgs(null))
	reg("shobj_description", fams(O, types.Name), tt, anyArgs(null))
	reg("col_description", fams(O, I4), tt, anyArgs(null))
	for _, n := range []string{"has_database_privilege",
		"has_column_privilege", "has_function_privilege", "has_sequence_privilege", "has_any_column_privilege"} {
		reg(n, fams(famAny, T), tb, constFn(dTrue))
		reg(n, fams(famAny, famAny, T), tb, constFn(dTrue))
		reg(n, fams(famAny, famAny, famAny, T), tb, constFn(dTrue))
	}
	for _, n := range []string{"pg_table_is_visible", "pg_type_is_visible", "pg_function_is_visible",
		"pg_operator_is_visible", "pg_opclass_is_visible", "pg_collation_is_visible", "pg_conversion_is_visible"} {
		reg(n, fams(O), tb, build1(func(types.Datum) (types.Datum, error) { return dTrue, nil }))
	}
	// Answered from pg_proc by the planner in queries; NULL elsewhere.
	reg("pg_get_function_result", fams(O), tt, anyArgs(null))
	reg("pg_get_function_arguments", fams(O), tt, anyArgs(null))
	reg("pg_get_function_identity_arguments", fams(O), tt, anyArgs(null))
	reg("pg_get_function_sqlbody", fams(O), tt, anyArgs(null))
	reg("pg_get_functiondef", fams(O), tt, anyArgs(null))
	// pg_attrdef.adbin holds the expression's SQL text: pg_get_expr
	// returns it.
	firstArg := func(b *bctx) (Fn, error) { return b.fn(0), nil }
	reg("pg_get_expr", fams(T, O), tt, firstArg)
	reg("pg_get_expr", fams(T, O, B), tt, firstArg)
	reg("pg_get_indexdef", fams(O), tt, anyArgs(null))
	reg("pg_get_indexdef", fams(O, I4, B), tt, anyArgs(null))
	reg("pg_get_constraintdef", fams(O), tt, anyArgs(null))
	reg("pg_get_constraintdef", fams(O, B), tt, anyArgs(null))
	reg("pg_get_viewdef", fams(O), tt, anyArgs(null))
	reg("pg_get_viewdef", fams(O, B), tt, anyArgs(null))
	reg("pg_get_triggerdef", fams(O), tt, anyArgs(null))
	reg("pg_get_triggerdef", fams(O, B), tt, anyArgs(null))
	reg("pg_is_in_recovery", nil, tb, constFn(dFalse))
	reg("pg_size_pretty", fams(types.Int8), tt, build1(func(a types.Datum) (types.Datum, error) {
		return str(sizePretty(a.I)), nil
	}))
	reg("pg_size_pretty", fams(types.Numeric), tt, build1(func(a types.Datum) (types.Datum, error) {
		i, err := types.DecToInt(a)
		if err != nil {
			return types.Null, err
		}
		return str(sizePretty(i)), nil
	}))
	reg("pg_typeof", fams(famAny), types.TRegType, func(b *bctx) (Fn, error) {
		t := b.args[0].t
		if t.Fam == types.Unknown {
			t = types.TText
		}
		name := types.NewRegName(int64(typeOf(t.Fam).OID()), typeOf(t.Fam).String())
		return func(types.Row) (types.Datum, error) { return name, nil }, nil
	})
}

// sizePretty is pg_size_pretty(bigint).
func sizePretty(size int64) string {
	units := []string{"bytes", "kB", "MB", "GB", "TB", "PB"}
	limit := int64(10 * 1024)
	limit2 := limit*2 - 1
	abs := size
	if abs < 0 {
		abs = -abs
	}
	if abs < limit {
		return strconv.FormatInt(size, 10) + " " + units[0]
	}
	size >>= 9 // keep one extra bit for rounding
	for i := 1; i < len(units); i++ {
		a := size
		if a < 0 {
			a = -a
		}
		if a < limit2 || i == len(units)-1 {
			return strconv.FormatInt(halfRound(size), 10) + " " + units[i]
		}
		size >>= 10
	}
	return ""
}

func halfRound(v int64) int64 {
	if v < 0 {
		return -((-v + 1) / 2)
	}
	return (v + 1) / 2
}
