package eval

import (
	"sluice/exec/limit"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sort"
	"strings"
	"time"
)

// Fn evaluates a compiled expression over one input row. An Fn holds no
// mutable state: it may be called from several goroutines at once.
type Fn func(row types.Row) (types.Datum, error)

// Context is what an expression may read besides its row. Fns read it at
// call time, so a caller may update Now and Params between statements and
// keep the compiled Fns.
type Context struct {
	Now      int64         // statement time, microseconds since the Unix epoch (UTC)
	Params   []types.Datum // $1 is Params[0]
	User     string        // current_user / session_user
	Database string        // current_database()
	// Outer holds the enclosing row's values a correlated subquery's plan
	// reads (spec.OuterRef).
	Outer []types.Datum
	// RunPlan runs a subquery's plan as a batch query over the statement's
	// snapshot, with outer as the plan's Outer values; nil where
	// subqueries cannot run (views).
	RunPlan func(plan *spec.Plan, outer []types.Datum) ([]types.Row, error)
	// ReadRel, when set, may replace what a batch query reads of relation
	// rel: a transaction reads the tables it wrote with its own uncommitted
	// rows. key is nil for the whole relation, or a relation key (as
	// storage.SpaceRelation keys are encoded, after the relation's prefix)
	// for a point read. ok false: read the snapshot.
	ReadRel func(rel uint64, key []byte) (rows func(emit func(types.Row, int64) error) error, ok bool)
	// Seq serves nextval, currval, setval and lastval (nil: refused).
	Seq Sequences
	// Priv answers has_table_privilege and has_schema_privilege (nil:
	// refused).
	Priv Privileges
	// Guard is the running statement's limits (cancellation, memory
	// budget); nil outside a statement. Long loops check it.
	Guard *limit.Guard
	// MemLimit is the statement's memory budget in bytes (statement_mem;
	// <= 0: none), from which the batch runner makes the Guard.
	MemLimit int64
	// Loc is the time zone (the session's TimeZone, or the one a view
	// was created in) of timestamptz text, casts and calendar functions;
	// nil is UTC.
	Loc *time.Location
}

// loc returns the context's time zone (nil: UTC).
func (c *Context) loc() *time.Location {
	if c == nil {
		return nil
	}
	return c.Loc
}

// arg is a compiled sub-expression: its Fn and, when its builder made
// them, typed evaluators (see fast.go).
type arg struct {
	fn    Fn
	t     types.T
	konst bool        // fn always returns val (and no error)
	val   types.Datum // the value when konst
	ifn   intFn
	ffn   floatFn
	bfn   boolFn
	dfn   decFn
	efn   elemFn
	// lowerOf is x's Fn when the arg is lower(x): a consumer matching
	// the result against constants may fold the case of x itself,
	// without a new string (see indexLower).
	lowerOf Fn
}

// builder makes the evaluator of one resolved call from its compiled,
// already-cast arguments.
type builder func(b *bctx) (Fn, error)

// bctx is what a builder gets. A builder may also set ifn, ffn, bfn or dfn,
// and may then return a nil Fn: the Datum form is derived; and efn and
// lowerOf, besides its Fn.
type bctx struct {
	name string
	args []arg
	ret  types.T
	ctx  *Context
	ifn  intFn
	ffn  floatFn
	bfn  boolFn
	dfn  decFn
	efn  elemFn
	// lowerOf: see arg.
	lowerOf Fn
}

func (b *bctx) fn(i int) Fn { return b.args[i].fn }

// konst reports whether argument i is a constant and returns it.
func (b *bctx) konst(i int) (types.Datum, bool) {
	if i < len(b.args) && b.args[i].konst {
		return b.args[i].val, true
	}
	return types.Null, false
}

// Compile turns e into an evaluator. The argument types of every spec.Func
// are resolved again as ResolveFunc does, and any cast the planner did not
// insert is added. Compile once and call the Fn per row: arithmetic,
// comparison and logic on integers, floats, decimals, booleans and
// timestamps do not allocate.
func Compile(e spec.Expr, ctx *Context) (Fn, error) {
	if ctx == nil {
		ctx = &Context{}
	}
	c := &compiler{ctx: ctx}
	a, err := c.compile(e)
	if err != nil {
		return nil, err
	}
	return a.fn, nil
}

func errColumn(idx, n int) error {
	return pgerror.New(pgcode.Internal, "column reference %d out of range for row of %d", idx, n)
}

// CompilePredicate compiles a boolean expression for filtering: NULL and
// false both reject the row. The expression must be of type boolean (or an
// untyped NULL).
func CompilePredicate(e spec.Expr, ctx *Context) (func(types.Row) (bool, error), error) {
	if t := e.Type(); t.Fam != types.Bool && t.Fam != types.Unknown {
		return nil, pgerror.New(pgcode.DatatypeMismatch, "argument of WHERE must be type boolean, not type %s", typeName(t))
	}
	if ctx == nil {
		ctx = &Context{}
	}
	a, err := (&compiler{ctx: ctx}).compile(e)
	if err != nil {
		return nil, err
	}
	if a.t.Fam == types.Unknown {
		return func(types.Row) (bool, error) { return false, nil }, nil
	}
	bfn := a.bools()
	return func(row types.Row) (bool, error) {
		v, null, err := bfn(row)
		return v && !null && err == nil, err
	}, nil
}

type compiler struct {
	ctx *Context
}

func constArg(d types.Datum, t types.T) arg {
	return withFast(arg{fn: func(types.Row) (types.Datum, error) { return d, nil }, t: t, konst: true, val: d})
}

func (c *compiler) compile(e spec.Expr) (arg, error) {
	switch x := e.(type) {
	case *spec.ColRef:
		if x.Idx < 0 {
			return arg{}, pgerror.New(pgcode.Internal, "column reference %d out of range", x.Idx)
		}
		return colArg(x.Idx, x.T), nil
	case *spec.Const:
		return constArg(x.D, x.T), nil
	case *spec.Param:
		n := x.N
		ctx := c.ctx
		if n < 1 {
			return arg{}, pgerror.New(pgcode.UndefinedParameter, "there is no parameter $%d", n)
		}
		return arg{t: x.T, fn: func(types.Row) (types.Datum, error) {
			if n > len(ctx.Params) {
				return types.Null, pgerror.New(pgcode.UndefinedParameter, "there is no parameter $%d", n)
			}
			return ctx.Params[n-1], nil
		}}, nil
	case *spec.Cast:
		a, err := c.compile(x.E)
		if err != nil {
			return arg{}, err
		}
		return castArg(a, x.T, castExplicit, c.ctx)
	case *spec.Case:
		return c.compileCase(x)
	case *spec.Func:
		return c.compileFunc(x)
	case *spec.OuterRef:
		return c.compileOuterRef(x)
	case *spec.Subquery:
		return c.compileSubquery(x)
	case nil:
		return arg{}, pgerror.New(pgcode.Internal, "nil expression")
	}
	return arg{}, pgerror.New(pgcode.Internal, "unsupported expression %T", e)
}

// flattenLogic appends to out the operands of the and/or named name in
// exprs, descending into operands that are the same operator.
func flattenLogic(name string, exprs []spec.Expr, out []spec.Expr) []spec.Expr {
	for _, e := range exprs {
		if f, ok := e.(*spec.Func); ok && len(f.Args) > 1 && normName(f.Name) == name {
			out = flattenLogic(name, f.Args, out)
			continue
		}
		out = append(out, e)
	}
	return out
}

// exprCost ranks an expression's evaluation cost: regular expressions and
// subqueries are expensive, the rest is cheap.
func exprCost(e spec.Expr) int {
	cost := 0
	spec.Walk(e, func(x spec.Expr) bool {
		switch y := x.(type) {
		case *spec.Subquery:
			cost += 100
		case *spec.Func:
			n := normName(y.Name)
			if strings.HasPrefix(n, "regexp") || strings.Contains(n, "~") || n == "similar_to" {
				cost += 10
			}
		}
		return true
	})
	return cost
}

func (c *compiler) compileFunc(f *spec.Func) (arg, error) {
	name := normName(f.Name)
	exprs := f.Args
	if (name == "and" || name == "or") && len(exprs) > 1 {
		// AND and OR stop at the first deciding argument and their
		// result does not depend on the order: evaluate cheap arguments
		// first, so that a regular expression runs only when needed.
		// Nested ANDs (ORs) are flattened into one list first (both are
		// associative): a chain of 10,000 binary ANDs would otherwise cost
		// each level a walk of everything below it, quadratic (seconds).
		exprs = flattenLogic(name, exprs, nil)
		costs := make(map[spec.Expr]int, len(exprs))
		for _, e := range exprs {
			costs[e] = exprCost(e)
		}
		sort.SliceStable(exprs, func(i, j int) bool { return costs[exprs[i]] < costs[exprs[j]] })
	}
	args := make([]arg, len(exprs))
	for i, e := range exprs {
		a, err := c.compile(e)
		if err != nil {
			return arg{}, err
		}
		args[i] = a
	}
	switch name {
	case "cast", "__pg_assign_cast":
		if len(args) != 1 {
			return arg{}, pgerror.New(pgcode.Internal, "%s takes one argument", name)
		}
		mode := castExplicit
		if name == "__pg_assign_cast" {
			mode = castAssign
		}
		return castArg(args[0], f.T, mode, c.ctx)
	case "__pg_record", "__pg_record_field", "__pg_tuple":
		return compileRecord(name, f, args)
	}
	ts := make([]types.T, len(args))
	for i, a := range args {
		ts[i] = a.t
	}
	r, err := resolve(name, ts)
	if err != nil {
		return arg{}, err
	}
	for i := range args {
		if r.casts[i] != args[i].t {
			a, err := castArg(args[i], r.casts[i], castImplicit, c.ctx)
			if err != nil {
				return arg{}, err
			}
			args[i] = a
		}
	}
	b := &bctx{name: name, args: args, ret: r.ret, ctx: c.ctx}
	fn, err := r.build(b)
	if err != nil {
		return arg{}, err
	}
	if fn == nil {
		switch {
		case b.bfn != nil:
			fn = datumFromBool(b.bfn)
		case b.ffn != nil:
			fn = datumFromFloat(b.ffn)
		case b.ifn != nil:
			fn = datumFromInt(b.ifn, kindOf(r.ret.Fam))
		case b.dfn != nil:
			fn = datumFromDec(b.dfn)
		default:
			return arg{}, pgerror.New(pgcode.Internal, "%s: no evaluator", name)
		}
	}
	out := arg{fn: fn, t: r.ret, ifn: b.ifn, ffn: b.ffn, bfn: b.bfn, dfn: b.dfn, efn: b.efn, lowerOf: b.lowerOf}
	if !r.volatile {
		out = fold(out, args)
	}
	return out, nil
}

// fold evaluates a call whose arguments are all constants once. A call that
// fails is left to fail at run time, so that a branch never taken (CASE WHEN
// false THEN 1/0 END) does not fail the statement.
func fold(a arg, args []arg) arg {
	for _, x := range args {
		if !x.konst {
			return a
		}
	}
	d, err := a.fn(nil)
	if err != nil {
		return a
	}
	return constArg(d, a.t)
}

func (c *compiler) compileCase(x *spec.Case) (arg, error) {
	if x.Operand == nil {
		x = withCommonOperand(x)
	}
	var operand arg
	hasOperand := x.Operand != nil
	if hasOperand {
		var err error
		if operand, err = c.compile(x.Operand); err != nil {
			return arg{}, err
		}
	}
	conds := make([]arg, len(x.Whens))
	thens := make([]arg, len(x.Whens))
	branchTypes := make([]types.T, 0, len(x.Whens)+1)
	for i, w := range x.Whens {
		var err error
		if conds[i], err = c.compile(w.Cond); err != nil {
			return arg{}, err
		}
		if thens[i], err = c.compile(w.Then); err != nil {
			return arg{}, err
		}
		branchTypes = append(branchTypes, thens[i].t)
	}
	var els arg
	if x.Else != nil {
		var err error
		if els, err = c.compile(x.Else); err != nil {
			return arg{}, err
		}
		branchTypes = append(branchTypes, els.t)
	} else {
		els = constArg(types.Null, types.TUnknown)
	}
	rt := x.T
	if rt.Fam == types.Unknown {
		var err error
		if rt, err = CommonTypeFor("CASE", branchTypes); err != nil {
			return arg{}, err
		}
	} else if _, err := CommonTypeFor("CASE", branchTypes); err != nil {
		return arg{}, err
	}
	for i := range thens {
		var err error
		if thens[i], err = castArg(thens[i], rt, castImplicit, c.ctx); err != nil {
			return arg{}, err
		}
	}
	var err error
	if els, err = castArg(els, rt, castImplicit, c.ctx); err != nil {
		return arg{}, err
	}
	// Conditions: with an operand, each WHEN value is compared with "=".
	tests := make([]func(types.Row, types.Datum) (bool, error), len(conds))
	for i, cond := range conds {
		if hasOperand {
			t, err := equalityTest(operand.t, cond, c.ctx)
			if err != nil {
				return arg{}, err
			}
			tests[i] = t
			continue
		}
		if cond.t.Fam != types.Bool && cond.t.Fam != types.Unknown {
			return arg{}, pgerror.New(pgcode.DatatypeMismatch, "argument of CASE/WHEN must be type boolean, not type %s", typeName(cond.t))
		}
		cfn := cond.bools()
		tests[i] = func(row types.Row, _ types.Datum) (bool, error) {
			v, null, err := cfn(row)
			return v && !null, err
		}
	}
	thenFns := make([]Fn, len(thens))
	for i := range thens {
		thenFns[i] = thens[i].fn
	}
	elseFn := els.fn
	if hasOperand {
		if look := constTextIndex(operand, conds); look != nil {
			// Text compared with constants: one map look-up finds the
			// first WHEN that is equal.
			fn := func(row types.Row) (types.Datum, error) {
				i, err := look(row)
				if err != nil {
					return types.Null, err
				}
				if i < 0 {
					return elseFn(row)
				}
				return thenFns[i](row)
			}
			return arg{fn: fn, t: rt}, nil
		}
	}
	opFn := operand.fn
	fn := func(row types.Row) (types.Datum, error) {
		var op types.Datum
		if opFn != nil {
			var err error
			if op, err = opFn(row); err != nil {
				return types.Null, err
			}
		}
		for i, t := range tests {
			ok, err := t(row, op)
			if err != nil {
				return types.Null, err
			}
			if ok {
				return thenFns[i](row)
			}
		}
		return elseFn(row)
	}
	return arg{fn: fn, t: rt}, nil
}

// kindOf returns the Datum kind of values of an int-like family.
func kindOf(f types.Family) types.Kind {
	switch f {
	case types.Date:
		return types.KDate
	case types.Time:
		return types.KTime
	case types.Timestamp:
		return types.KTimestamp
	case types.TimestampTZ:
		return types.KTimestampTZ
	case types.Bool:
		return types.KBool
	}
	return types.KInt
}

// equalityTest returns a test of "operand = cond(row)" for a CASE with an
// operand, where the operand value is computed once per row by the caller.
func equalityTest(opType types.T, cond arg, ctx *Context) (func(types.Row, types.Datum) (bool, error), error) {
	r, err := resolve("=", []types.T{opType, cond.t})
	if err != nil {
		return nil, err
	}
	castL, err := datumCast(opType, r.casts[0], castImplicit, ctx)
	if err != nil {
		return nil, err
	}
	castR, err := datumCast(cond.t, r.casts[1], castImplicit, ctx)
	if err != nil {
		return nil, err
	}
	cmp := compareKernel(r.casts[0].Fam, r.casts[1].Fam)
	cfn := cond.fn
	return func(row types.Row, op types.Datum) (bool, error) {
		y, err := cfn(row)
		if err != nil || op.K == types.KNull || y.K == types.KNull {
			return false, err
		}
		x := op
		if castL != nil {
			if x, err = castL(x); err != nil {
				return false, err
			}
		}
		if castR != nil {
			if y, err = castR(y); err != nil {
				return false, err
			}
		}
		return cmp(x, y) == 0, nil
	}, nil
}

// withCommonOperand rewrites a searched CASE whose every WHEN compares the
// same expression with a constant (CASE WHEN lower(c) = 'a' THEN … WHEN
// lower(c) = 'b' THEN …) into the simple form, which evaluates that
// expression once per row instead of once per WHEN. Both sides of each
// "=" must have the same type, so that the comparison is the same one.
func withCommonOperand(x *spec.Case) *spec.Case {
	if len(x.Whens) < 2 {
		return x
	}
	var op spec.Expr
	whens := make([]spec.When, len(x.Whens))
	for i, w := range x.Whens {
		f, ok := w.Cond.(*spec.Func)
		if !ok || normName(f.Name) != "=" || len(f.Args) != 2 || f.Args[0].Type() != f.Args[1].Type() {
			return x
		}
		e, k := f.Args[0], f.Args[1]
		if constExpr(e) {
			e, k = k, e
		}
		if !constExpr(k) {
			return x
		}
		if op == nil {
			op = e
		} else if !sameExpr(op, e) {
			return x
		}
		whens[i] = spec.When{Cond: k, Then: w.Then}
	}
	return &spec.Case{Operand: op, Whens: whens, Else: x.Else, T: x.T}
}

// constExpr reports whether e reads nothing of the row: a constant, or
// casts and functions of constants.
func constExpr(e spec.Expr) bool {
	ok := true
	spec.Walk(e, func(x spec.Expr) bool {
		switch x.(type) {
		case *spec.Const, *spec.Cast, *spec.Func:
		default:
			ok = false
		}
		return ok
	})
	return ok
}

// sameExpr reports whether a and b are the same expression of columns,
// constants, casts and functions (all of which are deterministic within a
// row).
func sameExpr(a, b spec.Expr) bool {
	switch x := a.(type) {
	case *spec.ColRef:
		y, ok := b.(*spec.ColRef)
		return ok && x.Idx == y.Idx && x.T == y.T
	case *spec.Const:
		y, ok := b.(*spec.Const)
		return ok && x.T == y.T && x.D.IsNull() == y.D.IsNull() && (x.D.IsNull() || types.Compare(x.D, y.D) == 0) && x.D.K == y.D.K
	case *spec.Cast:
		y, ok := b.(*spec.Cast)
		return ok && x.T == y.T && sameExpr(x.E, y.E)
	case *spec.Func:
		y, ok := b.(*spec.Func)
		if !ok || normName(x.Name) != normName(y.Name) || x.T != y.T || len(x.Args) != len(y.Args) {
			return false
		}
		for i := range x.Args {
			if !sameExpr(x.Args[i], y.Args[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// constTextIndex returns, for a CASE operand of a string type and WHEN
// values all constants compared with it as bytes, an evaluator of the
// index of the first WHEN value equal to the operand (-1: none, or a NULL
// operand); nil when the WHENs are not of that form.
func constTextIndex(operand arg, conds []arg) func(types.Row) (int, error) {
	if category(operand.t.Fam) != 'S' {
		return nil
	}
	idx := make(map[string]int, len(conds))
	for i, c := range conds {
		if !c.konst || category(c.t.Fam) != 'S' {
			return nil
		}
		r, err := resolve("=", []types.T{operand.t, c.t})
		if err != nil {
			return nil
		}
		castL, errL := datumCast(operand.t, r.casts[0], castImplicit, nil)
		castR, errR := datumCast(c.t, r.casts[1], castImplicit, nil)
		if errL != nil || errR != nil || castL != nil || castR != nil {
			return nil
		}
		if _, dup := idx[c.val.S]; !dup && c.val.K != types.KNull {
			idx[c.val.S] = i
		}
	}
	return textIndex(operand, idx)
}

// textIndex returns an evaluator of idx[a's value] for an arg of a string
// type (-1: absent or NULL).
func textIndex(a arg, idx map[string]int) func(types.Row) (int, error) {
	fn, lower := a.fn, false
	if a.lowerOf != nil {
		fn, lower = a.lowerOf, true
	}
	return func(row types.Row) (int, error) {
		d, err := fn(row)
		if err != nil || d.K == types.KNull {
			return -1, err
		}
		i, ok := 0, false
		if lower {
			i, ok = indexLower(idx, d.S)
		} else {
			i, ok = idx[d.S]
		}
		if !ok {
			return -1, nil
		}
		return i, nil
	}
}
