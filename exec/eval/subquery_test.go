package eval

import (
	"strings"
	"testing"

	"sluice/exec/spec"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

func ints(vs ...int64) []types.Row {
	out := make([]types.Row, len(vs))
	for i, v := range vs {
		out[i] = types.Row{types.NewInt(v)}
	}
	return out
}

func show(d types.Datum, t types.T) string {
	if d.IsNull() {
		return "NULL"
	}
	return types.FormatText(d, t)
}

// TestSubqueryModes compiles subquery expressions against a fake plan
// runner that returns the outer value's rows.
func TestSubqueryModes(t *testing.T) {
	plan := &spec.Plan{}
	plan.Add(&spec.Node{Kind: spec.Values, Cols: []types.Column{{Name: "x", Type: types.TInt8}}})
	runs := 0
	ctx := &Context{RunPlan: func(_ *spec.Plan, outer []types.Datum) ([]types.Row, error) {
		runs++
		if len(outer) == 0 {
			return ints(3, 1, 2), nil
		}
		switch outer[0].I {
		case 0:
			return nil, nil
		case 1:
			return ints(7), nil
		}
		return []types.Row{{types.NewInt(1)}, {types.Null}}, nil
	}}
	col := &spec.ColRef{Idx: 0, T: types.TInt8}
	for _, c := range []struct {
		s    *spec.Subquery
		row  int64
		want string
	}{
		{&spec.Subquery{Mode: spec.ScalarSubquery, Outer: []spec.Expr{col}, Limit: -1, T: types.TInt8}, 0, "NULL"},
		{&spec.Subquery{Mode: spec.ScalarSubquery, Outer: []spec.Expr{col}, Limit: -1, T: types.TInt8}, 1, "7"},
		{&spec.Subquery{Mode: spec.ScalarSubquery, Outer: []spec.Expr{col}, Limit: -1, T: types.TInt8}, 2, "ERROR 21000"},
		{&spec.Subquery{Mode: spec.ScalarSubquery, Order: []spec.OrderItem{{Col: 0, Desc: true, NullsFirst: true}}, Limit: 1, T: types.TInt8}, 0, "3"},
		{&spec.Subquery{Mode: spec.ExistsSubquery, Outer: []spec.Expr{col}, Limit: -1, T: types.TBool}, 0, "f"},
		{&spec.Subquery{Mode: spec.ExistsSubquery, Outer: []spec.Expr{col}, Limit: -1, T: types.TBool}, 1, "t"},
		{&spec.Subquery{Mode: spec.ArraySubquery, Order: []spec.OrderItem{{Col: 0}}, Limit: -1, T: types.TTextArray}, 0, "{1,2,3}"},
		// 1 = ANY {1, NULL} is true; 2 = ANY {1, NULL} is NULL; x = ANY {} is false.
		{&spec.Subquery{Mode: spec.AnySubquery, Left: &spec.Const{D: types.NewInt(1), T: types.TInt8}, Op: "=", Outer: []spec.Expr{col}, Limit: -1, T: types.TBool}, 2, "t"},
		{&spec.Subquery{Mode: spec.AnySubquery, Left: &spec.Const{D: types.NewInt(2), T: types.TInt8}, Op: "=", Outer: []spec.Expr{col}, Limit: -1, T: types.TBool}, 2, "NULL"},
		{&spec.Subquery{Mode: spec.AnySubquery, Left: &spec.Const{D: types.NewInt(2), T: types.TInt8}, Op: "=", Outer: []spec.Expr{col}, Limit: -1, T: types.TBool}, 0, "f"},
		// 0 < ALL {1, NULL} is NULL; 5 < ALL {1, NULL} is false; x < ALL {} is true.
		{&spec.Subquery{Mode: spec.AllSubquery, Left: &spec.Const{D: types.NewInt(0), T: types.TInt8}, Op: "<", Outer: []spec.Expr{col}, Limit: -1, T: types.TBool}, 2, "NULL"},
		{&spec.Subquery{Mode: spec.AllSubquery, Left: &spec.Const{D: types.NewInt(5), T: types.TInt8}, Op: "<", Outer: []spec.Expr{col}, Limit: -1, T: types.TBool}, 2, "f"},
		{&spec.Subquery{Mode: spec.AllSubquery, Left: &spec.Const{D: types.NewInt(5), T: types.TInt8}, Op: "<", Outer: []spec.Expr{col}, Limit: -1, T: types.TBool}, 0, "t"},
	} {
		c.s.Plan = plan
		fn, err := Compile(c.s, ctx)
		if err != nil {
			t.Fatalf("%s: %v", c.s, err)
		}
		d, err := fn(types.Row{types.NewInt(c.row)})
		got := show(d, c.s.T)
		if err != nil {
			got = "ERROR " + string(pgerror.GetCode(err))
		}
		if got != c.want {
			t.Errorf("%s over %d: got %s, want %s", c.s, c.row, got, c.want)
		}
	}

	// An uncorrelated subquery runs once per compiled expression.
	runs = 0
	fn, err := Compile(&spec.Subquery{Mode: spec.ExistsSubquery, Plan: plan, Limit: -1, T: types.TBool}, ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := fn(nil); err != nil {
			t.Fatal(err)
		}
	}
	if runs != 1 {
		t.Errorf("uncorrelated subquery ran %d times, want 1", runs)
	}

	// Without a plan runner (a view's dataflow) a subquery is 0A000.
	fn, err = Compile(&spec.Subquery{Mode: spec.ExistsSubquery, Plan: plan, Limit: -1, T: types.TBool}, &Context{})
	if err == nil {
		_, err = fn(nil)
	}
	if pgerror.GetCode(err) != "0A000" {
		t.Errorf("subquery without RunPlan: %v", err)
	}
}

func TestOuterRef(t *testing.T) {
	ctx := &Context{Outer: []types.Datum{types.NewString("a"), types.NewInt(4)}}
	fn, err := Compile(&spec.Func{Name: "+", T: types.TInt8, Args: []spec.Expr{
		&spec.OuterRef{N: 1, T: types.TInt8}, &spec.ColRef{Idx: 0, T: types.TInt8}}}, ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := fn(types.Row{types.NewInt(3)}); err != nil || d.I != 7 {
		t.Errorf("outer.$1 + $0 = %v, %v; want 7", d, err)
	}
}

func TestOrderRows(t *testing.T) {
	rows := []types.Row{{types.NewInt(2)}, {types.Null}, {types.NewInt(1)}, {types.NewInt(3)}}
	for _, c := range []struct {
		o    spec.OrderItem
		want string
	}{
		{spec.OrderItem{}, "1 2 3 NULL"},
		{spec.OrderItem{Desc: true, NullsFirst: true}, "NULL 3 2 1"},
		{spec.OrderItem{NullsFirst: true}, "NULL 1 2 3"},
		{spec.OrderItem{Desc: true}, "3 2 1 NULL"},
	} {
		rs := orderRows(append([]types.Row(nil), rows...), []spec.OrderItem{c.o}, 0, -1)
		var got []string
		for _, r := range rs {
			got = append(got, show(r[0], types.TInt8))
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%+v: got %s, want %s", c.o, strings.Join(got, " "), c.want)
		}
	}
	if rs := orderRows(append([]types.Row(nil), rows...), []spec.OrderItem{{}}, 1, 2); len(rs) != 2 || rs[0][0].I != 2 {
		t.Errorf("offset 1 limit 2: %v", rs)
	}
}

func TestTableFuncs(t *testing.T) {
	run := func(name string, args ...types.Datum) (string, error) {
		ts := make([]types.T, len(args))
		for i, a := range args {
			switch a.K {
			case types.KInt:
				ts[i] = types.TInt4
			case types.KArray:
				ts[i] = types.TTextArray
			default:
				ts[i] = types.TUnknown
			}
		}
		cols, casts, err := ResolveTableFunc(name, ts)
		if err != nil {
			return "", err
		}
		rows, err := RunTableFunc(nil /* guard */, name, args, casts)
		if err != nil {
			return "", err
		}
		var out []string
		for _, r := range rows {
			var vs []string
			for i, d := range r {
				vs = append(vs, show(d, cols[i].Type))
			}
			out = append(out, strings.Join(vs, "="))
		}
		return strings.Join(out, " "), nil
	}
	arr := func(vs ...string) types.Datum {
		a := make([]types.Datum, len(vs))
		for i, v := range vs {
			a[i] = types.NewString(v)
		}
		return types.Datum{K: types.KArray, A: types.NewElems(a)}
	}
	i := types.NewInt
	for _, c := range []struct {
		name string
		args []types.Datum
		want string
	}{
		{"generate_series", []types.Datum{i(1), i(3)}, "1 2 3"},
		{"generate_series", []types.Datum{i(3), i(1)}, ""},
		{"generate_series", []types.Datum{i(10), i(1), i(-4)}, "10 6 2"},
		{"generate_series", []types.Datum{i(1), types.Null}, ""},
		{"pg_catalog.generate_series", []types.Datum{i(0), i(0)}, "0"},
		{"unnest", []types.Datum{arr("a", "b")}, "a b"},
		{"pg_options_to_table", []types.Datum{arr("k=v=w", "x")}, "k=v=w x=NULL"},
	} {
		got, err := run(c.name, c.args...)
		if err != nil || got != c.want {
			t.Errorf("%s%v: %q, %v; want %q", c.name, c.args, got, err, c.want)
		}
	}
	if _, err := run("generate_series", i(1), i(2), i(0)); pgerror.GetCode(err) != "22023" {
		t.Errorf("step 0: %v", err)
	}
	if _, err := run("nosuch", i(1)); pgerror.GetCode(err) != "42883" {
		t.Errorf("unknown table function: %v", err)
	}
	if _, err := run("lower", i(1)); pgerror.GetCode(err) != "0A000" {
		t.Errorf("scalar function in FROM: %v", err)
	}
}

func TestArrayForms(t *testing.T) {
	text := func(s string) spec.Expr { return &spec.Const{D: types.NewString(s), T: types.TUnknown} }
	arr := func(vs ...string) spec.Expr {
		a := make([]types.Datum, len(vs))
		for i, v := range vs {
			if v == "NULL" {
				continue
			}
			a[i] = types.NewString(v)
		}
		return &spec.Const{D: types.Datum{K: types.KArray, A: types.NewElems(a)}, T: types.TTextArray}
	}
	oid := &spec.Const{D: types.NewInt(10), T: types.TOid}
	for _, c := range []struct {
		e    spec.Expr
		want string
	}{
		// An untyped element takes the others' type, as in PostgreSQL
		// (ARRAY['a', 2] is 22P02 there and here).
		{&spec.Func{Name: "__pg_array", Args: []spec.Expr{text("12"), &spec.Const{D: types.NewInt(2), T: types.TInt4}}}, "{12,2}"},
		{&spec.Func{Name: "__pg_any", Args: []spec.Expr{oid, text("="), arr("1", "10")}}, "t"},
		{&spec.Func{Name: "__pg_any", Args: []spec.Expr{oid, text("="), arr("1", "NULL")}}, "NULL"},
		{&spec.Func{Name: "__pg_any", Args: []spec.Expr{oid, text("="), arr()}}, "f"},
		{&spec.Func{Name: "__pg_all", Args: []spec.Expr{oid, text("<>"), arr("1", "2")}}, "t"},
		{&spec.Func{Name: "__pg_any", Args: []spec.Expr{text("d"), text("="), arr("f", "d")}}, "t"},
		{&spec.Func{Name: "array_upper", Args: []spec.Expr{arr("x", "y"), &spec.Const{D: types.NewInt(1), T: types.TInt4}}}, "2"},
		{&spec.Func{Name: "array_lower", Args: []spec.Expr{arr(), &spec.Const{D: types.NewInt(1), T: types.TInt4}}}, "NULL"},
	} {
		ret, _, err := ResolveFunc(c.e.(*spec.Func).Name, argTypes(c.e.(*spec.Func).Args))
		if err != nil {
			t.Errorf("%s: %v", c.e, err)
			continue
		}
		fn, err := Compile(c.e, nil)
		if err != nil {
			t.Errorf("%s: %v", c.e, err)
			continue
		}
		d, err := fn(nil)
		if got := show(d, ret); err != nil || got != c.want {
			t.Errorf("%s = %s, %v; want %s", c.e, got, err, c.want)
		}
	}
	if _, err := ArrayElemType("=", types.TBool); err != nil {
		t.Errorf("bool = ANY (text[]): %v", err)
	}
	if _, err := ArrayElemType("+", types.TInt4); err == nil {
		t.Errorf("int + ANY (text[]) resolved")
	}
}

func argTypes(args []spec.Expr) []types.T {
	ts := make([]types.T, len(args))
	for i, a := range args {
		ts[i] = a.Type()
	}
	return ts
}
