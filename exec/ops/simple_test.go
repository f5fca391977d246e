// Tests of the stateless operators: Filter and Project pass diffs through;
// a runtime error (division by zero) under a non-strict ErrorSink drops the
// row (Filter) or becomes NULL (Project) and is counted, while a strict
// sink (or none) returns it with its SQLSTATE; Union passes every input;
// Subscribe emits its backfill once at Start, then its input.
package ops_test

import (
	"errors"
	"strings"
	"testing"

	"sluice/exec/eval"
	"sluice/exec/flow"
	"sluice/exec/ops"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// hundredOver is 100 / $0 (bigint division).
func hundredOver() spec.Expr {
	return fn("/", types.TInt8, intConst(100), col(0, types.TInt8))
}

func TestFilter(t *testing.T) {
	// 100 / x > 10: true for 1..9, false for 10.., an error for 0, NULL for NULL.
	pred := fn(">", types.TBool, hundredOver(), intConst(10))
	input := []change{ins(row(5)), ins(row(0)), change{row(2), 3}, del(row(20)), ins(row(nil)), del(row(4)), ins(row(0))}

	for _, tc := range []struct {
		name    string
		errs    *ops.ErrorSink
		wantErr bool
	}{
		{"non-strict", &ops.ErrorSink{}, false},
		{"strict", &ops.ErrorSink{Strict: true}, true},
		{"no sink", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ops.NewFilter(pred, &eval.Context{}, tc.errs)
			if err != nil {
				t.Fatal(err)
			}
			c := newCollector()
			err = f.Process(0, batchOf(input...), c.em)
			if tc.wantErr {
				if c := pgerror.GetCode(err); c != pgcode.DivisionByZero {
					t.Fatalf("err = %v (code %s), want %s", err, c, pgcode.DivisionByZero)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := c.em.Flush(); err != nil {
				t.Fatal(err)
			}
			c.wantTotal(t, bagOf("(5)", "3×(2)", "-(4)"))
			if n := tc.errs.Count.Load(); n != 2 {
				t.Fatalf("error count = %d, want 2", n)
			}
			if last, _ := tc.errs.Last.Load().(string); !strings.Contains(last, "division by zero") {
				t.Fatalf("last error = %q", last)
			}
		})
	}

	if _, err := ops.NewFilter(col(0, types.TInt8), nil, nil); pgerror.GetCode(err) != pgcode.DatatypeMismatch {
		t.Fatalf("non-boolean predicate: %v", err)
	}
}

// TestProjectOwned: a projection that owns its input rows (a source's only
// reader) writes each output row over its input row, even when the output
// swaps and recomputes the columns it reads, and gives the same rows as
// one that builds new rows; a row narrower than the output gets a new one.
func TestProjectOwned(t *testing.T) {
	exprs := []spec.Expr{col(1, types.TInt8), fn("+", types.TInt8, col(0, types.TInt8), col(1, types.TInt8)), col(0, types.TInt8)}
	input := func() []change {
		return []change{ins(row(1, 10, 100)), del(row(2, 20, 200)), ins(row(3, 30)), {row(4, 40, 400, 4000), 2}}
	}
	want := bagOf("(10,11,1)", "-(20,22,2)", "(30,33,3)", "2×(40,44,4)")
	for _, owned := range []bool{false, true} {
		p, err := ops.NewProject(exprs, &eval.Context{}, &ops.ErrorSink{})
		if err != nil {
			t.Fatal(err)
		}
		p.Owned = owned
		in := input()
		first := in[0].row
		c := newCollector()
		c.signed = true
		c.step(t, process(p, 0, in...))
		c.wantTotal(t, want)
		if overwritten := fmtRow(first) != "(1,10,100)"; overwritten != owned {
			t.Fatalf("owned=%v: the first input row is now %s", owned, fmtRow(first))
		}
	}
}

func TestProject(t *testing.T) {
	exprs := []spec.Expr{col(0, types.TInt8), hundredOver(), fn("+", types.TInt8, col(0, types.TInt8), intConst(1))}
	input := []change{ins(row(5)), del(row(0)), change{row(nil), 2}}

	errs := &ops.ErrorSink{}
	p, err := ops.NewProject(exprs, &eval.Context{}, errs)
	if err != nil {
		t.Fatal(err)
	}
	c := newCollector()
	c.signed = true
	c.step(t, process(p, 0, input...))
	c.wantTotal(t, bagOf("(5,20,6)", "-(0,NULL,1)", "2×(NULL,NULL,NULL)"))
	if n := errs.Count.Load(); n != 1 {
		t.Fatalf("error count = %d, want 1", n)
	}

	p, err = ops.NewProject(exprs, nil, &ops.ErrorSink{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Process(0, batchOf(input...), flow.NewEmitter(func(*types.Batch) error { return nil }))
	if c := pgerror.GetCode(err); c != pgcode.DivisionByZero {
		t.Fatalf("strict project: %v (code %s)", err, c)
	}

	if _, err := ops.NewProject([]spec.Expr{fn("no_such_function", types.TInt8)}, nil, nil); err == nil {
		t.Fatal("unknown function compiled")
	}
}

func TestUnionAndSubscribe(t *testing.T) {
	c := newCollector()
	c.signed = true
	u := ops.Union{}
	c.step(t, process(u, 0, ins(row(1)), del(row(2))))
	c.step(t, process(u, 1, change{row(1), 2}))
	c.wantTotal(t, bagOf("3×(1)", "-(2)"))

	s := &ops.Subscribe{Backfill: func(emit func(types.Row, int64) error) error {
		if err := emit(row(10), 2); err != nil {
			return err
		}
		return emit(row(11), 1)
	}}
	c = newCollector()
	c.step(t, s.Start)
	c.wantDelta(t, bagOf("2×(10)", "(11)"))
	c.step(t, process(s, 0, del(row(10))))
	c.wantDelta(t, bagOf("-(10)"))
	// The backfill runs once.
	c.step(t, s.Start)
	c.wantDelta(t, bag{})

	boom := errors.New("boom")
	s = &ops.Subscribe{Backfill: func(func(types.Row, int64) error) error { return boom }}
	if err := s.Start(flow.NewEmitter(func(*types.Batch) error { return nil })); err != boom {
		t.Fatalf("Start = %v, want the backfill's error", err)
	}
}
