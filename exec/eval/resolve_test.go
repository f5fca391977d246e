package eval

import (
	"reflect"
	"testing"

	"sluice/sql/pgerror"
	"sluice/sql/types"
)

var (
	tI2, tI4, tI8     = types.TInt2, types.TInt4, types.TInt8
	tF4, tF8, tNum    = types.TFloat4, types.TFloat8, types.TNumeric
	tText, tVarchar   = types.TText, types.TVarchar
	tUnk, tBool       = types.TUnknown, types.TBool
	tDate, tTS, tTSTZ = types.TDate, types.TTimestamp, types.TTimestampTZ
	tIv, tTime        = types.TInterval, types.TTime
)

func ts(t ...types.T) []types.T { return t }

func TestResolveFunc(t *testing.T) {
	for _, c := range []struct {
		name  string
		args  []types.T
		ret   types.T
		casts []types.T
	}{
		{"+", ts(tI4, tI4), tI4, ts(tI4, tI4)},
		{"+", ts(tI2, tI4), tI4, ts(tI2, tI4)}, // widening needs no cast
		{"+", ts(tI2, tI2), tI2, ts(tI2, tI2)},
		{"*", ts(tI4, tI8), tI8, ts(tI4, tI8)},
		{"+", ts(tI4, tNum), tNum, ts(tNum, tNum)},
		{"-", ts(tNum, tI8), tNum, ts(tNum, tNum)},
		{"+", ts(tI4, tF8), tF8, ts(tF8, tF8)},
		{"+", ts(tNum, tF8), tF8, ts(tF8, tF8)},
		{"+", ts(tI4, tF4), tF8, ts(tF8, tF4)}, // float84pl, as Postgres
		{"+", ts(tF4, tF4), tF4, ts(tF4, tF4)},
		{"/", ts(tI4, tI4), tI4, ts(tI4, tI4)},
		{"+", ts(tI4, tUnk), tI4, ts(tI4, tI4)},
		{"+", ts(tUnk, tNum), tNum, ts(tNum, tNum)},
		{"=", ts(tUnk, tDate), tBool, ts(tDate, tDate)},
		{"=", ts(tUnk, tUnk), tBool, ts(tText, tText)},
		{"=", ts(tVarchar, tText), tBool, ts(tVarchar, tText)},
		{"<", ts(tDate, tTSTZ), tBool, ts(tDate, tTSTZ)}, // cross-type operator
		{"=", ts(tI4, tNum), tBool, ts(tNum, tNum)},
		{"=", ts(tI8, tF8), tBool, ts(tF8, tF8)},
		{"||", ts(tText, tText), tText, ts(tText, tText)},
		{"||", ts(tI4, tText), tText, ts(tI4, tText)},
		{"||", ts(tUnk, tUnk), tText, ts(tText, tText)},
		{"||", ts(tVarchar, tI8), tText, ts(tVarchar, tI8)},
		{"-", ts(tTS, tIv), tTS, ts(tTS, tIv)},
		{"-", ts(tTS, tTS), tIv, ts(tTS, tTS)},
		{"-", ts(tDate, tDate), tI4, ts(tDate, tDate)},
		{"-", ts(tDate, tUnk), tI4, ts(tDate, tDate)},
		{"+", ts(tDate, tI4), tDate, ts(tDate, tI4)},
		{"+", ts(tDate, tIv), tTS, ts(tDate, tIv)},
		{"+", ts(tTSTZ, tIv), tTSTZ, ts(tTSTZ, tIv)},
		{"-", ts(tTime, tTime), tIv, ts(tTime, tTime)},
		{"*", ts(tIv, tI4), tIv, ts(tIv, tF8)},
		{"neg", ts(tI8), tI8, ts(tI8)},
		{"round", ts(tI4), tF8, ts(tF8)},
		{"round", ts(tNum, tI4), tNum, ts(tNum, tI4)},
		{"round", ts(tI4, tI4), tNum, ts(tNum, tI4)},
		{"upper", ts(tUnk), tText, ts(tText)},
		{"pg_catalog.upper", ts(tVarchar), tText, ts(tVarchar)},
		{"length", ts(tUnk), tI4, ts(tText)},
		{"concat", ts(tI4, tUnk, tBool), tText, ts(tI4, tText, tBool)},
		{"coalesce", ts(tUnk, tI8), tI8, ts(tI8, tI8)},
		{"coalesce", ts(tI4, tNum), tNum, ts(tNum, tNum)},
		{"coalesce", ts(tUnk, tUnk), tText, ts(tText, tText)},
		{"greatest", ts(tDate, tTS), tTS, ts(tTS, tTS)},
		{"nullif", ts(tI4, tUnk), tI4, ts(tI4, tI4)},
		{"in", ts(tI4, tI8, tUnk), tBool, ts(tI4, tI8, tI8)},
		{"and", ts(tBool, tUnk), tBool, ts(tBool, tBool)},
		{"is null", ts(tUnk), tBool, ts(tUnk)},
		{"__pg_distinct", ts(tI4, tNum), tBool, ts(tNum, tNum)},
		{"like", ts(tVarchar, tUnk), tBool, ts(tVarchar, tText)},
		{"__pg_extract", ts(tUnk, tTS), tNum, ts(tText, tTS)},
		{"date_part", ts(tUnk, tDate), tF8, ts(tText, tDate)},
		{"date_trunc", ts(tUnk, tDate), tTSTZ, ts(tText, tTSTZ)},
		{"now", nil, tTSTZ, ts()},
		{"current_timestamp", nil, tTSTZ, ts()},
		{"to_char", ts(tDate, tUnk), tText, ts(tTSTZ, tText)},
		{"to_char", ts(tI8, tUnk), tText, ts(tI8, tText)},
		{"__pg_subscript", ts(types.TTextArray, tI4), tText, ts(types.TTextArray, tI4)},
		{"format_type", ts(tI4, tI4), tText, ts(tI4, tI4)}, // int4 -> oid needs no conversion
		{"format_type", ts(tUnk, tUnk), tText, ts(types.TOid, tI4)},
	} {
		ret, casts, err := ResolveFunc(c.name, c.args)
		if err != nil {
			t.Errorf("%s%v: %v", c.name, c.args, err)
			continue
		}
		if len(casts) == 0 && len(c.casts) == 0 {
			casts, c.casts = nil, nil
		}
		if ret != c.ret || !reflect.DeepEqual(casts, c.casts) {
			t.Errorf("%s%v = %v %v, want %v %v", c.name, c.args, ret, casts, c.ret, c.casts)
		}
	}
}

func TestResolveErrors(t *testing.T) {
	for _, c := range []struct {
		name      string
		args      []types.T
		code, msg string
		hint      string
	}{
		{"+", ts(tText, tI4), "42883", "operator does not exist: text + integer",
			"No operator matches the given name and argument types. You might need to add explicit type casts."},
		{"neg", ts(tText), "42883", "operator does not exist: - text", ""},
		{"=", ts(tBool, tI4), "42883", "operator does not exist: boolean = integer", ""},
		{"like", ts(tI4, tText), "42883", "operator does not exist: integer ~~ text", ""},
		{"foo", ts(tI4), "42883", "function foo(integer) does not exist",
			"No function matches the given name and argument types. You might need to add explicit type casts."},
		{"upper", ts(tI4), "42883", "function upper(integer) does not exist", ""},
		{"concat", nil, "42883", "function concat() does not exist", ""},
		{"+", ts(tUnk, tUnk), "42725", "operator is not unique: unknown + unknown",
			"Could not choose a best candidate operator. You might need to add explicit type casts."},
		{"+", ts(tDate, tUnk), "42725", "operator is not unique: date + unknown", ""},
		{"neg", ts(tUnk), "42725", "operator is not unique: - unknown", ""},
		{"date_trunc", ts(tUnk, tUnk), "42725", "function date_trunc(unknown, unknown) is not unique", ""},
		{"coalesce", ts(tI4, tText), "42804", "COALESCE types integer and text cannot be matched", ""},
		{"and", ts(tBool, tI4), "42804", "argument of AND must be type boolean, not type integer", ""},
		{"not", ts(tText), "42804", "argument of NOT must be type boolean, not type text", ""},
		{"in", ts(tI4, tText), "42883", "operator does not exist: integer = text", ""},
		{"nullif", ts(tI4, tBool), "42883", "operator does not exist: integer = boolean", ""},
	} {
		_, _, err := ResolveFunc(c.name, c.args)
		if err == nil {
			t.Errorf("%s%v: no error", c.name, c.args)
			continue
		}
		pe := pgerror.Flatten(err)
		if string(pe.Code) != c.code || pe.Message != c.msg || (c.hint != "" && pe.Hint != c.hint) {
			t.Errorf("%s%v: %s %q hint %q, want %s %q hint %q", c.name, c.args, pe.Code, pe.Message, pe.Hint, c.code, c.msg, c.hint)
		}
	}
}

func TestCommonType(t *testing.T) {
	v3 := types.T{Fam: types.Varchar, Prec: 3}
	v5 := types.T{Fam: types.Varchar, Prec: 5}
	n52 := types.T{Fam: types.Numeric, Prec: 5, Scale: 2}
	for _, c := range []struct {
		in   []types.T
		want types.T
	}{
		{ts(tI2, tI4), tI4},
		{ts(tI4, tI2), tI4},
		{ts(tI4, tI8, tI2), tI8},
		{ts(tI4, tNum), tNum},
		{ts(tNum, tF8), tF8},
		{ts(tI4, tF4), tF4},
		{ts(tUnk, tI4, tUnk), tI4},
		{ts(tUnk, tUnk), tText},
		{ts(), tText},
		{ts(tDate, tTS), tTS},
		{ts(tDate, tTSTZ, tTS), tTSTZ},
		{ts(tVarchar, tText), tVarchar},
		{ts(tText, tVarchar), tText},
		{ts(v3, v3), v3},
		{ts(v3, v5), tVarchar},
		{ts(n52, n52, tUnk), n52},
		{ts(n52, tI4), tNum},
	} {
		got, err := CommonType(c.in)
		if err != nil || got != c.want {
			t.Errorf("CommonType(%v) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, c := range []struct {
		construct string
		in        []types.T
		msg       string
	}{
		{"CASE", ts(tI4, tText), "CASE types integer and text cannot be matched"},
		{"UNION", ts(tBool, tI4), "UNION types boolean and integer cannot be matched"},
		{"", ts(tDate, tIv), "types date and interval cannot be matched"},
		{"COALESCE", ts(tTime, tIv), "COALESCE types time without time zone and interval cannot be matched"},
	} {
		_, err := CommonTypeFor(c.construct, c.in)
		pe := pgerror.Flatten(err)
		if err == nil || pe.Code != "42804" || pe.Message != c.msg {
			t.Errorf("CommonTypeFor(%q, %v) = %v, want 42804 %q", c.construct, c.in, err, c.msg)
		}
	}
}
