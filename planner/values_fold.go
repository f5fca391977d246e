package planner

import (
	"sync"
	"time"

	"sluice/exec/eval"
	"sluice/exec/spec"
)

// volatileFuncs holds the functions whose value changes from call to call
// or reads the session (now(), nextval(), current_user, ...): a VALUES row
// that calls one is not folded at plan time.
var volatileFuncs = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{
		"now": true, "current_timestamp": true, "localtimestamp": true, "current_date": true,
		"current_time": true, "localtime": true, "transaction_timestamp": true,
		"statement_timestamp": true, "clock_timestamp": true, "proctime": true,
		"nextval": true, "setval": true, "currval": true, "lastval": true,
		"random": true, "gen_random_uuid": true,
	}
	for _, b := range eval.Builtins() {
		if b.Volatile {
			m[b.Name] = true
		}
	}
	return m
})

// foldValuesExpr evaluates an expression of a VALUES row made only of
// constants, casts, CASE and non-volatile function calls (INTERVAL '1 hour'
// / 3.0::float8, 1.0 / 3), so that each column takes the common type of its
// rows as PostgreSQL's VALUES does. ok is false when x cannot be folded; an
// evaluation error (1/0) is the statement's error, as in PostgreSQL.
func foldValuesExpr(x spec.Expr, loc *time.Location) (c *spec.Const, ok bool, err error) {
	foldable := true
	spec.Walk(x, func(e spec.Expr) bool {
		switch f := e.(type) {
		case *spec.Const, *spec.Case, *spec.Cast:
		case *spec.Func:
			if volatileFuncs()[f.Name] {
				foldable = false
			}
		default:
			foldable = false
		}
		return foldable
	})
	if !foldable {
		return nil, false, nil
	}
	fn, err := eval.Compile(x, &eval.Context{Loc: loc} /* nothing volatile; the session's zone */)
	if err != nil {
		return nil, false, err
	}
	d, err := fn(nil)
	if err != nil {
		return nil, false, err
	}
	return &spec.Const{D: d, T: x.Type()}, true, nil
}
