package eval

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"sluice/exec/spec"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

func i(v int64) types.Datum { return types.NewInt(v) }

func dec(s string) types.Datum {
	d, err := types.ParseText(s, types.TNumeric)
	if err != nil {
		panic(err)
	}
	return d
}

var null = types.Null

// TestColumns evaluates expressions over rows, where values (and NULLs)
// come from columns rather than constants.
func TestColumns(t *testing.T) {
	for _, c := range []struct {
		expr string
		cols []types.T
		row  types.Row
		want string
	}{
		{"c0 + c1", ts(tI4, tI4), types.Row{i(2), i(3)}, "5"},
		{"c0 + c1", ts(tI4, tI4), types.Row{null, i(3)}, "NULL"},
		{"c0 + c1", ts(tI4, tI4), types.Row{i(2147483647), i(1)}, "ERROR 22003: integer out of range"},
		{"c0 + c1", ts(tI2, tI2), types.Row{i(32767), i(1)}, "ERROR 22003: smallint out of range"},
		{"c0 * c1", ts(tI8, tI8), types.Row{i(1 << 62), i(2)}, "ERROR 22003: bigint out of range"},
		{"c0 / c1", ts(tI8, tI8), types.Row{i(7), i(0)}, "ERROR 22012: division by zero"},
		{"c0 / c1", ts(tI8, tI4), types.Row{i(-7), i(2)}, "-3"},
		{"c0 % c1", ts(tI8, tI8), types.Row{i(-9223372036854775808), i(-1)}, "0"},
		{"c0 + c1", ts(tI4, tNum), types.Row{i(2), dec("0.5")}, "2.5"},
		{"c0 * 2 + c1 > 10", ts(tI8, tI8), types.Row{i(4), i(3)}, "t"},
		{"c0 / c1", ts(tNum, tNum), types.Row{dec("1"), dec("0")}, "ERROR 22012: division by zero"},
		{"c0 / c1", ts(tF8, tF8), types.Row{types.NewFloat(1), types.NewFloat(0)}, "ERROR 22012: division by zero"},
		{"c0 = c1", ts(tDate, tTS), types.Row{types.NewDate(1), types.NewTimestamp(86400e6)}, "t"},
		{"c0 = c1", ts(tVarchar, tText), types.Row{types.NewString("a"), types.NewString("a")}, "t"},
		{"c0 || c1", ts(tVarchar, tI8), types.Row{types.NewString("a"), i(5)}, "a5"},
		{"length(c0)", ts(tVarchar), types.Row{types.NewString("héllo")}, "5"},
		{"c0 like 'a%'", ts(tText), types.Row{null}, "NULL"},
		{"c0 like c1", ts(tText, tText), types.Row{types.NewString("abc"), types.NewString("_b%")}, "t"},
		{"c0 ~ c1", ts(tText, tText), types.Row{types.NewString("abc"), types.NewString("^a.c$")}, "t"},
		{"c0 ~ c1", ts(tText, tText), types.Row{types.NewString("abc"), types.NewString("(")}, "ERROR 2201B: invalid regular expression: parentheses () not balanced"},
		{"c0 in (1, 2, 3, 4, 5)", ts(tI8), types.Row{i(4)}, "t"},
		{"c0 in (1, 2, 3, 4, null)", ts(tI8), types.Row{i(6)}, "NULL"},
		{"c0 in ('a', 'b', 'c', 'd')", ts(tText), types.Row{types.NewString("d")}, "t"},
		{"c0 in (c1, 2)", ts(tI4, tI4), types.Row{i(1), null}, "NULL"},
		{"c0 is null", ts(tI4), types.Row{null}, "t"},
		{"c0 and c1", ts(tBool, tBool), types.Row{null, types.NewBool(false)}, "f"},
		{"c0 or c1", ts(tBool, tBool), types.Row{null, types.NewBool(true)}, "t"},
		{"c0 or c1", ts(tBool, tBool), types.Row{null, types.NewBool(false)}, "NULL"},
		{"extract(year from c0)", ts(tTS), types.Row{types.NewTimestamp(1589723130123456)}, "2020"},
		{"date_trunc('hour', c0)", ts(tTSTZ), types.Row{types.NewTimestampTZ(1589723130123456)}, "2020-05-17 13:00:00+00"},
		{"to_char(c0, 'YYYY-MM-DD')", ts(tTS), types.Row{types.NewTimestamp(1589723130123456)}, "2020-05-17"},
		{"date_trunc(c1, c0)", ts(tTS, tText), types.Row{types.NewTimestamp(1589723130123456), types.NewString("month")}, "2020-05-01 00:00:00"},
		{"c0 - interval '1 day'", ts(tTS), types.Row{types.NewTimestamp(0)}, "1969-12-31 00:00:00"},
		{"case c0 when 1 then 'one' when 2 then 'two' end", ts(tI8), types.Row{i(2)}, "two"},
		{"case c0 when 1 then 'one' end", ts(tI8), types.Row{null}, "NULL"},
		{"greatest(c0, c1, 3)", ts(tI4, tI4), types.Row{null, i(7)}, "7"},
		{"nullif(c0, c1)", ts(tI4, tI8), types.Row{i(2), i(2)}, "NULL"},
		{"coalesce(c0, c1, 0)", ts(tI4, tI4), types.Row{null, null}, "0"},
		{"substring(c0, c1, 2)", ts(tText, tI4), types.Row{types.NewString("hello"), i(2)}, "el"},
		{"c0[2]", ts(types.TTextArray), types.Row{{K: types.KArray, A: types.NewElems([]types.Datum{types.NewString("a"), types.NewString("b")})}}, "b"},
		{"(regexp_match(c0, '(&|^)channel_id=([^&]*)'))[2]", ts(tVarchar), types.Row{types.NewString("a?b=1&channel_id=42&c=2")}, "42"},
		{"(regexp_match(c0, '(&|^)channel_id=([^&]*)'))[1]", ts(tText), types.Row{types.NewString("channel_id=7")}, ""},
		{"(regexp_match(c0, '(&|^)channel_id=([^&]*)'))[3]", ts(tText), types.Row{types.NewString("channel_id=7")}, "NULL"},
		{"(regexp_match(c0, '(&|^)channel_id=([^&]*)'))[0]", ts(tText), types.Row{types.NewString("channel_id=7")}, "NULL"},
		{"(regexp_match(c0, '(&|^)channel_id=([^&]*)'))[2]", ts(tText), types.Row{types.NewString("a?xchannel_id=7")}, "NULL"},
		{"(regexp_match(c0, '(&|^)channel_id=([^&]*)'))[2]", ts(tText), types.Row{null}, "NULL"},
		{"(regexp_match(c0, 'b(x)?'))[1]", ts(tText), types.Row{types.NewString("abc")}, "NULL"},
		{"(regexp_match(c0, 'b.'))[1]", ts(tText), types.Row{types.NewString("abc")}, "bc"},
		{"(regexp_match(c0, 'b.'))[2]", ts(tText), types.Row{types.NewString("abc")}, "NULL"},
		{"(regexp_match(c0, c1))[1]", ts(tText, tText), types.Row{types.NewString("abc"), types.NewString("(c)")}, "c"},
		{"(regexp_match(c0, 'B', 'i'))[1]", ts(tText), types.Row{types.NewString("abc")}, "b"},
		{"lower(c0) in ('apple', 'google', 'facebook', 'baidu')", ts(tVarchar), types.Row{types.NewString("GooGle")}, "t"},
		{"lower(c0) in ('apple', 'google', 'facebook', 'baidu')", ts(tText), types.Row{types.NewString("channel-1")}, "f"},
		{"lower(c0) in ('apple', 'google', 'facebook', 'baidu')", ts(tText), types.Row{null}, "NULL"},
		{"lower(c0) in ('apple', 'google', 'facebook', null)", ts(tText), types.Row{types.NewString("x")}, "NULL"},
		{"lower(c0) in ('épée', 'google', 'facebook', 'baidu')", ts(tText), types.Row{types.NewString("ÉPÉE")}, "t"},
		{"lower(c0) in ('kelvin', 'google', 'facebook', 'baidu')", ts(tText), types.Row{types.NewString("\u212aELVIN")}, "t"},
		{"case lower(c0) when 'a' then 1 when 'b' then 2 when 'a' then 3 end", ts(tText), types.Row{types.NewString("A")}, "1"},
		{"case lower(c0) when 'a' then 1 when 'b' then 2 end", ts(tText), types.Row{types.NewString("c")}, "NULL"},
		{"case lower(c0) when 'a' then 1 when null then 2 else 0 end", ts(tText), types.Row{null}, "0"},
		{"case lower(c0) when 'ä' then 1 when 'b' then 2 end", ts(tText), types.Row{types.NewString("Ä")}, "1"},
		{"case c0 when 'a' then 1 when 'B' then 2 end", ts(tVarchar), types.Row{types.NewString("B")}, "2"},
	} {
		if got := evalSQL(c.expr, c.row, c.cols...); got != c.want {
			t.Errorf("%s %v: got %s, want %s", c.expr, c.row, got, c.want)
		}
	}
}

// TestLazy checks that CASE, COALESCE, AND and OR do not evaluate what
// they do not need: no division by zero here.
func TestLazy(t *testing.T) {
	cols := ts(tI8, tI8)
	row := types.Row{i(10), i(0)}
	for _, c := range []struct{ expr, want string }{
		{"case when c1 <> 0 then c0 / c1 end", "NULL"},
		{"case when c1 = 0 then -1 else c0 / c1 end", "-1"},
		{"case c1 when 0 then 0 else c0 / c1 end", "0"},
		{"coalesce(c0, c0 / c1)", "10"},
		{"c1 <> 0 and c0 / c1 > 1", "f"},
		{"c1 = 0 or c0 / c1 > 1", "t"},
		{"case when c1 <> 0 then c0 / c1 else c0 end + 1", "11"},
		{"case when false then 1 / 0 else 2 end", "2"},
	} {
		if got := evalSQL(c.expr, row, cols...); got != c.want {
			t.Errorf("%s: got %s, want %s", c.expr, got, c.want)
		}
	}
}

func compile(t *testing.T, e spec.Expr, ctx *Context) Fn {
	t.Helper()
	fn, err := Compile(e, ctx)
	if err != nil {
		t.Fatal(err)
	}
	return fn
}

func TestParamsAndContext(t *testing.T) {
	ctx := &Context{Now: testNow, Params: []types.Datum{i(41)}, User: "alice", Database: "shop"}
	e, err := call("+", &spec.Param{N: 1, T: tI8}, &spec.Const{D: i(1), T: tI4})
	if err != nil {
		t.Fatal(err)
	}
	fn := compile(t, e, ctx)
	if d, err := fn(nil); err != nil || d.I != 42 {
		t.Fatalf("$1 + 1 = %v, %v", d, err)
	}
	ctx.Params[0] = i(1) // re-bound between executions
	if d, _ := fn(nil); d.I != 2 {
		t.Fatalf("after rebinding: %v", d)
	}
	ctx.Params = nil
	if _, err := fn(nil); pgerror.GetCode(err) != "42P02" {
		t.Fatalf("missing parameter: %v", err)
	}

	now, _ := call("now")
	fn = compile(t, now, ctx)
	if d, _ := fn(nil); d.K != types.KTimestampTZ || d.I != testNow {
		t.Fatalf("now() = %v", d)
	}
	ctx.Now += 1000000 // the next statement
	if d, _ := fn(nil); d.I != testNow+1000000 {
		t.Fatalf("now() not read at call time: %v", d)
	}
	for name, want := range map[string]string{
		"current_user": "alice", "session_user": "alice", "current_database": "shop",
		"current_date": "2024-03-15", "localtimestamp": "2024-03-15 12:34:57.789012",
		"transaction_timestamp": "2024-03-15 12:34:57.789012+00", "statement_timestamp": "2024-03-15 12:34:57.789012+00",
	} {
		e, err := call(name)
		if err != nil {
			t.Fatal(err)
		}
		d, err := compile(t, e, ctx)(nil)
		if got := types.FormatText(d, e.Type()); err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
}

func TestCompilePredicate(t *testing.T) {
	for _, c := range []struct {
		expr string
		row  types.Row
		want bool
	}{
		{"c0 > 1", types.Row{i(2)}, true},
		{"c0 > 1", types.Row{i(1)}, false},
		{"c0 > 1", types.Row{null}, false},
		{"null", types.Row{null}, false},
	} {
		e, err := parseSQL(c.expr, tI4)
		if err != nil {
			t.Fatal(err)
		}
		p, err := CompilePredicate(e, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := p(c.row); err != nil || got != c.want {
			t.Errorf("%s %v = %v, %v", c.expr, c.row, got, err)
		}
	}
	e, _ := parseSQL("c0 + 1", tI4)
	if _, err := CompilePredicate(e, nil); pgerror.GetCode(err) != "42804" {
		t.Errorf("non-boolean predicate: %v", err)
	}
}

// TestCompileAddsCasts checks that a Func whose arguments the planner did
// not cast still evaluates, with the casts resolution calls for.
func TestCompileAddsCasts(t *testing.T) {
	e := &spec.Func{Name: "+", T: tNum, Args: []spec.Expr{
		&spec.ColRef{Idx: 0, T: tI4},
		&spec.Const{D: dec("0.25"), T: tNum},
	}}
	d, err := compile(t, e, nil)(types.Row{i(2)})
	if err != nil || types.FormatText(d, tNum) != "2.25" {
		t.Fatalf("got %v, %v", d, err)
	}
	// Untyped literals are converted, and a bad one fails compilation.
	e = &spec.Func{Name: "=", T: tBool, Args: []spec.Expr{
		&spec.ColRef{Idx: 0, T: tDate},
		&spec.Const{D: types.NewString("2020-01-02"), T: tUnk},
	}}
	if d, err := compile(t, e, nil)(types.Row{types.NewDate(18263)}); err != nil || !d.Bool() {
		t.Fatalf("date = '2020-01-02': %v, %v", d, err)
	}
	e.Args[1] = &spec.Const{D: types.NewString("nope"), T: tUnk}
	if _, err := Compile(e, nil); pgerror.GetCode(err) != "22007" {
		t.Fatalf("bad literal: %v", err)
	}
	if _, err := Compile(&spec.Func{Name: "no_such_fn", Args: nil}, nil); pgerror.GetCode(err) != "42883" {
		t.Fatalf("unknown function: %v", err)
	}
}

func TestFuncForms(t *testing.T) {
	row := types.Row{i(3)}
	col := &spec.ColRef{Idx: 0, T: tI8}
	for _, c := range []struct {
		e    spec.Expr
		want string
	}{
		{&spec.Func{Name: "cast", Args: []spec.Expr{col}, T: tText}, "3"},
		{&spec.Func{Name: "cast", Args: []spec.Expr{&spec.Const{D: types.NewString("abcdef"), T: tText}}, T: types.T{Fam: types.Varchar, Prec: 3}}, "abc"},
		{&spec.Func{Name: "__pg_assign_cast", Args: []spec.Expr{&spec.Const{D: types.NewString("abc   "), T: tText}}, T: types.T{Fam: types.Varchar, Prec: 3}}, "abc"},
		{&spec.Func{Name: "__pg_assign_cast", Args: []spec.Expr{&spec.Const{D: types.NewString("abcdef"), T: tText}}, T: types.T{Fam: types.Varchar, Prec: 3}},
			"ERROR 22001: value too long for type character varying(3)"},
		{&spec.Func{Name: "cast", Args: []spec.Expr{&spec.Const{D: dec("123.456"), T: tNum}}, T: types.T{Fam: types.Numeric, Prec: 5, Scale: 2}}, "123.46"},
		{&spec.Func{Name: "cast", Args: []spec.Expr{&spec.Const{D: dec("1234.5"), T: tNum}}, T: types.T{Fam: types.Numeric, Prec: 5, Scale: 2}},
			"ERROR 22003: numeric field overflow"},
		{&spec.Func{Name: "case", T: tText, Args: []spec.Expr{
			&spec.Func{Name: ">", T: tBool, Args: []spec.Expr{col, &spec.Const{D: i(5), T: tI4}}},
			&spec.Const{D: types.NewString("big"), T: tText},
			&spec.Func{Name: ">", T: tBool, Args: []spec.Expr{col, &spec.Const{D: i(1), T: tI4}}},
			&spec.Const{D: types.NewString("medium"), T: tText},
			&spec.Const{D: types.NewString("small"), T: tText},
		}}, "medium"},
		{&spec.Func{Name: "pg_catalog.lower", T: tText, Args: []spec.Expr{&spec.Const{D: types.NewString("ABC"), T: tText}}}, "abc"},
		{&spec.Func{Name: "is distinct from", T: tBool, Args: []spec.Expr{col, &spec.Const{T: tUnk}}}, "t"},
	} {
		got := ""
		fn, err := Compile(c.e, nil)
		var d types.Datum
		if err == nil {
			d, err = fn(row)
		}
		if err != nil {
			pe := pgerror.Flatten(err)
			got = "ERROR " + string(pe.Code) + ": " + pe.Message
		} else {
			got = types.FormatText(d, c.e.Type())
		}
		if got != c.want {
			t.Errorf("%s: got %s, want %s", c.e, got, c.want)
		}
	}
}

func TestAssignCast(t *testing.T) {
	v3 := types.T{Fam: types.Varchar, Prec: 3}
	for _, c := range []struct {
		in   string
		want string
		code string
	}{
		{"ab", "ab", ""},
		{"abc", "abc", ""},
		{"abc  ", "abc", ""},
		{"abcd", "", "22001"},
		{"héé", "héé", ""},
		{"héé!", "", "22001"},
	} {
		d, err := AssignCast(types.NewString(c.in), tText, v3)
		if c.code != "" {
			if pgerror.GetCode(err) != "22001" {
				t.Errorf("%q: %v, want 22001", c.in, err)
			}
			continue
		}
		if err != nil || d.S != c.want {
			t.Errorf("%q: %v %v", c.in, d, err)
		}
	}
	if d, err := AssignCast(i(7), tI8, tI2); err != nil || d.I != 7 {
		t.Errorf("int8 -> int2: %v %v", d, err)
	}
	if _, err := AssignCast(i(70000), tI8, tI2); pgerror.GetCode(err) != "22003" {
		t.Errorf("int8 -> int2 overflow: %v", err)
	}
}

// TestConcurrentUse calls one compiled Fn from several goroutines, with a
// per-row regular expression (its compile cache is shared).
func TestConcurrentUse(t *testing.T) {
	e, err := parseSQL("c0 ~ c1 and c0 like c2", tText, tText, tText)
	if err != nil {
		t.Fatal(err)
	}
	fn := compile(t, e, nil)
	pats := []string{"^a", "b+", "c$", "[0-9]"}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for k := 0; k < 500; k++ {
				p := pats[(g+k)%len(pats)]
				d, err := fn(types.Row{types.NewString("abc"), types.NewString(p), types.NewString("a%")})
				want := p != "[0-9]"
				if err != nil || d.Bool() != want {
					t.Errorf("%s: %v %v", p, d, err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
}

// TestNoAllocs checks the per-row evaluation of arithmetic, comparison and
// logic on integers, floats, decimals, booleans and timestamps does not
// allocate.
func TestNoAllocs(t *testing.T) {
	row := types.Row{i(7), i(3), types.NewFloat(2.5), dec("12.34"), types.NewTimestamp(1589723130123456), types.NewBool(true), dec("0.5")}
	cols := ts(tI8, tI4, tF8, tNum, tTS, tBool, tNum)
	for _, src := range []string{
		"c0 * 2 + c1 > 10",
		"c0 / c1 - c0 % c1 = 1 or c1 < 0",
		"(c2 * 2.0::float8 - c2) / 3.0::float8 <= 1",
		"c3 * c6 + 1.5 - c3 > 5 and c3 / c6 < 100",
		"c3 * 2 >= c0",
		"c4 + interval '1 day' > c4 and c4 - interval '1 month' < timestamp '2021-01-01'",
		"c4 >= date '2020-01-01'",
		"not c5 or c0 is null",
		"c0 in (1, 2, 3, 7, 9)",
		"case when c1 <> 0 then c0 / c1 else 0 end",
		"coalesce(c0, 0) + abs(-c1)",
		"c0 between 1 and 10",
		"greatest(c0, c1) - least(c0, c1)",
		"c0::float8 + c2",
		"c1::numeric + c3",
		"extract(epoch from c4) > 0",
	} {
		e, err := parseSQL(src, cols...)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		fn := compile(t, e, nil)
		if _, err := fn(row); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if n := testing.AllocsPerRun(100, func() { _, _ = fn(row) }); n != 0 {
			t.Errorf("%s: %v allocs per row", src, n)
		}
	}
}

// TestNoAllocsText checks that Nexmark q21's expressions — a regexp group,
// lower() compared with constants — allocate nothing per row.
func TestNoAllocsText(t *testing.T) {
	for _, row := range []types.Row{
		{types.NewString("channel-2718"), types.NewString(q21URL)},
		{types.NewString("Google"), types.NewString(q21URL)},
		{types.NewString("channel-1"), types.NewString("https://www.nexmark.com/a/b/c/item.htm?query=1")},
	} {
		for _, src := range []string{q21Where, q21Case} {
			e, err := parseSQL(src, tText, tText)
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			fn := compile(t, e, nil)
			if _, err := fn(row); err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			if n := testing.AllocsPerRun(100, func() { _, _ = fn(row) }); n != 0 {
				t.Errorf("%s on %v: %v allocs per row", src, row, n)
			}
		}
	}
}

// TestIndexLower checks indexLower against strings.ToLower.
func TestIndexLower(t *testing.T) {
	keys := []string{"apple", "google", "ä", "k", "straße", "i̇", "", strings.Repeat("x", 70)}
	idx := map[string]int{}
	for i, k := range keys {
		idx[k] = i
	}
	pieces := []string{"A", "a", "G", "oogle", "pple", "Ä", "ä", "\u212a", "K", "İ", "I", "STRASSE", "straße", "x", strings.Repeat("X", 35), "\xff"}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(4) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		wi, wok := idx[strings.ToLower(s)]
		if gi, gok := indexLower(idx, s); gi != wi || gok != wok {
			t.Fatalf("%q: got %d %v, want %d %v", s, gi, gok, wi, wok)
		}
	}
}

// TestCaseCommonOperand checks that a searched CASE comparing one
// expression with constants becomes the simple form, and gives the same
// answers, NULLs included.
func TestCaseCommonOperand(t *testing.T) {
	const src = "CASE WHEN lower(c0) = 'apple'::text THEN 0 WHEN lower(c0) = 'baidu'::text THEN 3 ELSE c1 END"
	e, err := parseSQL(src, types.TText, types.TInt4)
	if err != nil {
		t.Fatal(err)
	}
	if got := withCommonOperand(e.(*spec.Case)); got.Operand == nil || got.Operand.String() != "lower(c0)" {
		t.Fatalf("operand %v, want lower(c0)", got.Operand)
	}
	for _, c := range []struct {
		row  types.Row
		want string
	}{
		{types.Row{types.NewString("Apple"), i(9)}, "0"},
		{types.Row{types.NewString("BAIDU"), i(9)}, "3"},
		{types.Row{types.NewString("other"), i(9)}, "9"},
		{types.Row{null, i(9)}, "9"},
		{types.Row{null, null}, "NULL"},
	} {
		if got := evalSQL(src, c.row, types.TText, types.TInt4); got != c.want {
			t.Errorf("%v: got %s, want %s", c.row, got, c.want)
		}
	}
	for _, src := range []string{
		"CASE WHEN lower(c0) = 'a'::text THEN 0 WHEN upper(c0) = 'B'::text THEN 1 END",
		"CASE WHEN lower(c0) = 'a'::text THEN 0 WHEN lower(c0) <> 'b'::text THEN 1 END",
		"CASE WHEN lower(c0) = 'a'::text THEN 0 WHEN lower(c0) = c0 THEN 1 END",
	} {
		e, err := parseSQL(src, types.TText)
		if err != nil {
			t.Fatal(err)
		}
		if got := withCommonOperand(e.(*spec.Case)); got.Operand != nil {
			t.Errorf("%s: rewritten with operand %v", src, got.Operand)
		}
	}
}
