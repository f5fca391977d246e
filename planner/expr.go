package planner

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"sluice/exec/eval"
	"sluice/exec/spec"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// scopeCol is one column visible to expressions.
type scopeCol struct {
	table string
	name  string
	t     types.T
	// merged: a column of a JOIN … USING input that the join's merged
	// column stands for: only a qualified name (a.c) or a.* reaches it.
	merged bool
	// rel and att: the table (or view) column it comes straight from.
	rel uint32
	att int16
}

// scope is the row an expression is evaluated over.
type scope struct {
	cols []scopeCol
}

func (s *scope) columns() []types.Column {
	out := make([]types.Column, len(s.cols))
	for i, c := range s.cols {
		out[i] = types.Column{Name: c.name, Type: c.t, TableOID: c.rel, AttNum: c.att}
	}
	return out
}

func (s *scope) resolve(table, name string) (int, error) {
	found := -1
	for i, c := range s.cols {
		if c.name != name || (table != "" && c.table != table) || (table == "" && c.merged) {
			continue
		}
		if found >= 0 {
			return 0, pgerror.New(pgcode.AmbiguousColumn, "column reference %q is ambiguous", name)
		}
		found = i
	}
	if found < 0 {
		if table != "" {
			return 0, pgerror.New(pgcode.UndefinedColumn, "column %s.%s does not exist", table, name)
		}
		return 0, pgerror.New(pgcode.UndefinedColumn, "column %q does not exist", name)
	}
	return found, nil
}

// hook lets the aggregate binder replace a node before normal binding.
type hook func(e ast.ExprNode) (spec.Expr, bool, error)

// binder binds expressions of one statement.
type binder struct {
	p *Planner
}

// maxBindDepth bounds the recursion of the binder (expression nesting,
// subqueries and inlined SQL functions together), so that a statement like
// a two-million-byte `SELECT 1+1+…` ends with 54001, as in PostgreSQL,
// instead of overflowing the goroutine stack.
const maxBindDepth = 10000

// bind binds e, counting the depth of the recursion in the planner.
func (b *binder) bind(e ast.ExprNode, sc *scope, h hook) (spec.Expr, error) {
	b.p.depth++
	defer func() { b.p.depth-- }()
	if b.p.depth > maxBindDepth {
		return nil, errTooComplex()
	}
	return b.bindExpr(e, sc, h)
}

// errTooComplex is PostgreSQL's answer to a statement whose expressions
// nest deeper than its stack allows.
func errTooComplex() error {
	return pgerror.New(pgcode.Code("54001"), "stack depth limit exceeded").
		WithHint("The statement is nested too deeply (statement too complex); simplify it.")
}

func (b *binder) bindExpr(e ast.ExprNode, sc *scope, h hook) (spec.Expr, error) {
	if h != nil {
		if x, ok, err := h(e); err != nil || ok {
			return x, err
		}
	}
	switch n := e.(type) {
	case *boundExpr:
		return n.x, nil
	case *ast.ParenthesesExpr:
		return b.bind(n.Expr, sc, h)
	case *ast.ColumnNameExpr:
		idx, err := sc.resolve(n.Name.Table.O, n.Name.Name.O)
		if err != nil {
			if x, ok, oerr := b.outerColumn(n.Name.Table.O, n.Name.Name.O); ok || oerr != nil {
				return x, oerr
			}
			return nil, err
		}
		return &spec.ColRef{Idx: idx, T: sc.cols[idx].t, Name: sc.cols[idx].name}, nil
	case ast.ValueExpr:
		return constFromValue(n)
	case *ast.RowExpr:
		return b.bindRow(n, sc, h)
	case *ast.BinaryOperationExpr:
		if x, ok, err := b.bindRowCompare(n, sc, h); ok || err != nil {
			return x, err
		}
		args, err := b.bindAll(sc, h, n.L, n.R)
		if err != nil {
			return nil, err
		}
		name, ok := binaryOps[n.Op]
		if !ok {
			return nil, pgerror.Unsupported("operator %s is not supported", n.Op)
		}
		return b.call(name, args)
	case *ast.UnaryOperationExpr:
		x, err := b.bind(n.V, sc, h)
		if err != nil {
			return nil, err
		}
		switch n.Op {
		case opcode.Minus:
			if c, ok := x.(*spec.Const); ok && !c.D.IsNull() {
				switch c.D.K {
				case types.KInt:
					return &spec.Const{D: types.NewInt(-c.D.I), T: c.T}, nil
				case types.KFloat:
					return &spec.Const{D: types.NewFloat(-c.D.Float()), T: c.T}, nil
				case types.KDecimal:
					if d, err := types.DecNeg(c.D); err == nil {
						return &spec.Const{D: d, T: c.T}, nil
					}
				}
			}
			return b.call("neg", []spec.Expr{x})
		case opcode.Plus:
			return x, nil
		case opcode.Not, opcode.Not2:
			return b.call("not", []spec.Expr{x})
		case opcode.BitNeg:
			return b.call("~", []spec.Expr{x})
		}
		return nil, pgerror.Unsupported("unary operator %s is not supported", n.Op)
	case *ast.IsNullExpr:
		x, err := b.bind(n.Expr, sc, h)
		if err != nil {
			return nil, err
		}
		if n.Not {
			return &spec.Func{Name: "is not null", Args: []spec.Expr{x}, T: types.TBool}, nil
		}
		return &spec.Func{Name: "is null", Args: []spec.Expr{x}, T: types.TBool}, nil
	case *ast.IsTruthExpr:
		x, err := b.bind(n.Expr, sc, h)
		if err != nil {
			return nil, err
		}
		name := "is true"
		if n.True == 0 {
			name = "is false"
		}
		if n.Not {
			name = strings.Replace(name, "is ", "is not ", 1)
		}
		return b.call(name, []spec.Expr{x})
	case *ast.BetweenExpr:
		args, err := b.bindAll(sc, h, n.Expr, n.Left, n.Right)
		if err != nil {
			return nil, err
		}
		x, lo, hi := args[0], args[1], args[2]
		ge, err := b.call(">=", []spec.Expr{x, lo})
		if err != nil {
			return nil, err
		}
		le, err := b.call("<=", []spec.Expr{x, hi})
		if err != nil {
			return nil, err
		}
		and := &spec.Func{Name: "and", Args: []spec.Expr{ge, le}, T: types.TBool}
		if n.Not {
			return &spec.Func{Name: "not", Args: []spec.Expr{and}, T: types.TBool}, nil
		}
		return and, nil
	case *ast.PatternInExpr:
		if n.Sel != nil {
			return b.bindSubqueryExpr(n, sc, h)
		}
		args := make([]spec.Expr, 0, len(n.List)+1)
		x, err := b.bind(n.Expr, sc, h)
		if err != nil {
			return nil, err
		}
		args = append(args, x)
		for _, it := range n.List {
			y, err := b.bind(it, sc, h)
			if err != nil {
				return nil, err
			}
			args = append(args, y)
		}
		ts := make([]types.T, len(args))
		for i, a := range args {
			ts[i] = a.Type()
		}
		t, err := eval.CommonTypeFor("IN", ts)
		if err != nil {
			return nil, err
		}
		for i := range args {
			if args[i], err = b.castTo(args[i], t); err != nil {
				return nil, err
			}
		}
		var in spec.Expr = &spec.Func{Name: "in", Args: args, T: types.TBool}
		if n.Not {
			in = &spec.Func{Name: "not", Args: []spec.Expr{in}, T: types.TBool}
		}
		return in, nil
	case *ast.PatternLikeOrIlikeExpr:
		args, err := b.bindAll(sc, h, n.Expr, n.Pattern)
		if err != nil {
			return nil, err
		}
		name := "like"
		if !n.IsLike {
			name = "ilike"
		}
		if n.Not {
			name = "not " + name
		}
		return b.call(name, args)
	case *ast.PatternRegexpExpr:
		args, err := b.bindAll(sc, h, n.Expr, n.Pattern)
		if err != nil {
			return nil, err
		}
		r, err := b.call("__pg_regex", args)
		if err != nil || !n.Not {
			return r, err
		}
		return &spec.Func{Name: "not", Args: []spec.Expr{r}, T: types.TBool}, nil
	case *ast.CaseExpr:
		return b.bindCase(n, sc, h)
	case *ast.FuncCallExpr:
		return b.bindFunc(n, sc, h)
	case *ast.AggregateFuncExpr:
		return nil, pgerror.New(pgcode.GroupingError, "aggregate functions are not allowed here")
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr, *ast.CompareSubqueryExpr:
		return b.bindSubqueryExpr(e, sc, h)
	case *ast.FuncCastExpr:
		x, err := b.bind(n.Expr, sc, h)
		if err != nil {
			return nil, err
		}
		t, err := mysqlCastType(n)
		if err != nil {
			return nil, err
		}
		return b.castTo(x, t)
	case *ast.DefaultExpr:
		return nil, pgerror.Unsupported("DEFAULT is not supported here")
	}
	return nil, pgerror.Unsupported("expression %T is not supported", e)
}

var binaryOps = map[opcode.Op]string{
	opcode.Plus: "+", opcode.Minus: "-", opcode.Mul: "*", opcode.Div: "/", opcode.IntDiv: "/", opcode.Mod: "%",
	opcode.EQ: "=", opcode.NE: "<>", opcode.LT: "<", opcode.LE: "<=", opcode.GT: ">", opcode.GE: ">=",
	opcode.LogicAnd: "and", opcode.LogicOr: "or",
	// The bitwise operators (the dialect layer turns Postgres' # into ^).
	opcode.And: "&", opcode.Or: "|", opcode.Xor: "#", opcode.LeftShift: "<<", opcode.RightShift: ">>",
}

func (b *binder) bindCase(n *ast.CaseExpr, sc *scope, h hook) (spec.Expr, error) {
	c := &spec.Case{}
	var operand spec.Expr
	var err error
	if n.Value != nil {
		if operand, err = b.bind(n.Value, sc, h); err != nil {
			return nil, err
		}
	}
	var results []spec.Expr
	for _, w := range n.WhenClauses {
		cond, err := b.bind(w.Expr, sc, h)
		if err != nil {
			return nil, err
		}
		if operand != nil {
			if cond, err = b.call("=", []spec.Expr{operand, cond}); err != nil {
				return nil, err
			}
		} else if cond, err = b.castTo(cond, types.TBool); err != nil {
			return nil, err
		}
		then, err := b.bind(w.Result, sc, h)
		if err != nil {
			return nil, err
		}
		c.Whens = append(c.Whens, spec.When{Cond: cond, Then: then})
		results = append(results, then)
	}
	if n.ElseClause != nil {
		e, err := b.bind(n.ElseClause, sc, h)
		if err != nil {
			return nil, err
		}
		c.Else = e
		results = append(results, e)
	}
	ts := make([]types.T, len(results))
	for i, r := range results {
		ts[i] = r.Type()
	}
	t, err := eval.CommonTypeFor("CASE", ts)
	if err != nil {
		return nil, err
	}
	if t.Fam == types.Unknown {
		t = types.TText
	}
	for i := range c.Whens {
		if c.Whens[i].Then, err = b.castTo(c.Whens[i].Then, t); err != nil {
			return nil, err
		}
	}
	if c.Else != nil {
		if c.Else, err = b.castTo(c.Else, t); err != nil {
			return nil, err
		}
	}
	c.T = t
	return c, nil
}

func (b *binder) bindFunc(n *ast.FuncCallExpr, sc *scope, h hook) (spec.Expr, error) {
	name := n.FnName.L
	if b.p.Funcs != nil && !strings.HasPrefix(name, "__pg_") {
		if f, err := b.userFunc(n); f != nil || err != nil {
			if err != nil {
				return nil, err
			}
			return b.bindUserFunc(f, n, sc, h)
		}
	}
	switch name {
	case "grouping":
		// The aggregation's hook binds GROUPING (groupingsets.go); here
		// it is outside one, or over what it does not group by.
		return nil, errGroupingArgs()
	case "__pg_cast":
		if len(n.Args) != 2 {
			return nil, pgerror.New(pgcode.Syntax, "bad cast")
		}
		if x, ok, err := b.bindArrayCtorCast(n, sc, h); ok || err != nil {
			return x, err
		}
		x, err := b.bind(n.Args[0], sc, h)
		if err != nil {
			return nil, err
		}
		tn, ok := stringLiteral(n.Args[1])
		if !ok {
			return nil, pgerror.New(pgcode.Syntax, "bad cast type")
		}
		t, err := b.p.ParseType(tn)
		if err != nil {
			return b.castToUnsupported(x, tn, err)
		}
		return b.castTo(x, t)
	case "__pg_param":
		num, ok := intLiteral(n.Args[0])
		if !ok || num < 1 || num > 65535 {
			return nil, pgerror.New(pgcode.UndefinedParameter, "bad parameter number")
		}
		return b.p.param(int(num)), nil
	case "__pg_interval":
		s, ok := stringLiteral(n.Args[0])
		if !ok {
			return nil, pgerror.New(pgcode.Syntax, "bad interval literal")
		}
		d, err := types.ParseText(s, types.TInterval)
		if err != nil {
			return nil, err
		}
		return &spec.Const{D: d, T: types.TInterval}, nil
	case "__pg_any", "__pg_all":
		return b.bindQuantifiedArray(n, sc, h)
	case "__pg_array_subquery":
		return b.bindArraySubquery(n, sc)
	case "__pg_filter":
		return nil, pgerror.New(pgcode.Syntax, "FILTER is only allowed on aggregate functions")
	case "__pg_field":
		return b.bindField(n, sc, h)
	case "__pg_concat":
		// a || b: NULL if either side is NULL, unlike concat().
		name = "||"
	case "current_timestamp", "now", "localtimestamp", "current_date", "current_time":
		// TiDB parses these keywords as calls; keep the Postgres names.
		if err := refuseClockInView(b.p.Streaming && !(b.p.clockOK && clockFuncs[name]), name, len(n.Args)); err != nil {
			return nil, err
		}
	case "localtime", "transaction_timestamp", "statement_timestamp", "clock_timestamp", "age":
		if err := refuseClockInView(b.p.Streaming && !(b.p.clockOK && clockFuncs[name]), name, len(n.Args)); err != nil {
			return nil, err
		}
	case "gen_random_uuid":
		if b.p.Streaming {
			return nil, pgerror.Unsupported("gen_random_uuid() in a materialized view or sink").
				WithHint("a view's rows are computed again on restart and on every change; generate the uuid when the row is inserted (a column DEFAULT gen_random_uuid())")
		}
	case "nextval", "setval", "currval", "lastval":
		if b.p.Streaming {
			return nil, pgerror.Unsupported("%s() in a materialized view or sink", name).
				WithHint("a sequence hands each value out once; a view's rows are computed again")
		}
	}
	args := make([]spec.Expr, len(n.Args))
	for i, a := range n.Args {
		x, err := b.bind(a, sc, h)
		if err != nil {
			return nil, err
		}
		args[i] = x
	}
	if x, ok, err := b.bindCatalogFunc(name, args); ok || err != nil {
		return x, err
	}
	return b.call(name, args)
}

// call resolves an operator or function and inserts the casts its
// arguments need; unknown-typed parameters take the type asked for.
func (b *binder) call(name string, args []spec.Expr) (spec.Expr, error) {
	ts := make([]types.T, len(args))
	for i, a := range args {
		ts[i] = a.Type()
	}
	ret, casts, err := eval.ResolveFunc(name, ts)
	if err != nil {
		if x, ok := b.callUntypedElements(name, args); ok {
			return x, nil
		}
		return nil, err
	}
	for i := range args {
		if i < len(casts) && casts[i] != ts[i] {
			if args[i], err = b.castTo(args[i], casts[i]); err != nil {
				return nil, err
			}
		}
	}
	f := &spec.Func{Name: name, Args: args, T: ret}
	return f, nil
}

// castTo converts x to t, folding constants now (so that bad literals fail
// at plan time, with their SQLSTATE) and typing unknown parameters.
func (b *binder) castTo(x spec.Expr, t types.T) (spec.Expr, error) {
	if x.Type() == t {
		return x, nil
	}
	if y, ok, err := b.castRegclass(x, t); ok || err != nil {
		return y, err
	}
	switch c := x.(type) {
	case *spec.Const:
		if c.D.IsNull() {
			return &spec.Const{D: types.Null, T: t}, nil
		}
		from := c.T
		if from.Fam == types.Unknown {
			from = types.TText
		}
		if loc := b.p.loc(); isTstz(from.Fam) != isTstz(t.Fam) && loc != nil && loc != time.UTC {
			// Read or printed in the session's zone: exec/eval knows how.
			f, _, err := foldValuesExpr(&spec.Cast{E: &spec.Const{D: c.D, T: from}, T: t}, loc)
			if err != nil {
				return nil, err
			}
			return f, nil
		}
		d, err := types.Cast(c.D, from, t)
		if err != nil {
			return nil, err
		}
		return &spec.Const{D: d, T: t}, nil
	case *spec.Param:
		if c.T.Fam == types.Unknown {
			b.p.setParamType(c.N, t)
			return &spec.Param{N: c.N, T: t}, nil
		}
	}
	return &spec.Cast{E: x, T: t}, nil
}

func stringLiteral(e ast.ExprNode) (string, bool) {
	v, ok := e.(ast.ValueExpr)
	if !ok {
		return "", false
	}
	s, ok := v.GetValue().(string)
	return s, ok
}

func intLiteral(e ast.ExprNode) (int64, bool) {
	if p, ok := e.(*ast.PositionExpr); ok && p.P == nil {
		return int64(p.N), true // ORDER BY 1 as the TiDB parser reads it
	}
	v, ok := e.(ast.ValueExpr)
	if !ok {
		return 0, false
	}
	switch x := v.GetValue().(type) {
	case int64:
		return x, true
	case uint64:
		return int64(x), true
	}
	return 0, false
}

// constFromValue turns a literal into a typed constant the way Postgres
// types literals: integers are int4 when they fit, else int8, else
// numeric; decimals are numeric; strings are of unknown type until used.
func constFromValue(v ast.ValueExpr) (spec.Expr, error) {
	val := v.GetValue()
	switch x := val.(type) {
	case nil:
		return &spec.Const{D: types.Null, T: types.TUnknown}, nil
	case int64:
		if tp := v.GetType(); tp != nil && tp.GetFlag()&mysql.IsBooleanFlag != 0 {
			return &spec.Const{D: types.NewBool(x != 0), T: types.TBool}, nil
		}
		if x >= -1<<31 && x < 1<<31 {
			return &spec.Const{D: types.NewInt(x), T: types.TInt4}, nil
		}
		return &spec.Const{D: types.NewInt(x), T: types.TInt8}, nil
	case uint64:
		if x <= 1<<63-1 {
			return &spec.Const{D: types.NewInt(int64(x)), T: types.TInt8}, nil
		}
		d, err := types.DecFromString(strconv.FormatUint(x, 10))
		if err != nil {
			return nil, err
		}
		return &spec.Const{D: d, T: types.TNumeric}, nil
	case float64:
		return &spec.Const{D: types.NewFloat(x), T: types.TFloat8}, nil
	case float32:
		return &spec.Const{D: types.NewFloat(float64(x)), T: types.TFloat8}, nil
	case string:
		return &spec.Const{D: types.NewString(x), T: types.TUnknown}, nil
	case []byte:
		return &spec.Const{D: types.NewString(string(x)), T: types.TUnknown}, nil
	case parser.Decimal:
		d, err := types.DecFromString(string(x))
		if err != nil {
			return nil, err
		}
		return &spec.Const{D: d, T: types.TNumeric}, nil
	case fmt.Stringer:
		d, err := types.DecFromString(x.String())
		if err != nil {
			return nil, err
		}
		return &spec.Const{D: d, T: types.TNumeric}, nil
	}
	return nil, pgerror.Unsupported("literal of type %T", val)
}

func mysqlCastType(n *ast.FuncCastExpr) (types.T, error) {
	switch n.Tp.GetType() {
	case mysql.TypeLonglong, mysql.TypeLong:
		return types.TInt8, nil
	case mysql.TypeDouble, mysql.TypeFloat:
		return types.TFloat8, nil
	case mysql.TypeNewDecimal:
		return types.TNumeric, nil
	case mysql.TypeVarString, mysql.TypeString, mysql.TypeVarchar:
		return types.TText, nil
	case mysql.TypeDate:
		return types.TDate, nil
	case mysql.TypeDatetime:
		return types.TTimestamp, nil
	case mysql.TypeDuration:
		return types.TTime, nil
	case mysql.TypeJSON:
		return types.TJSONB, nil
	}
	return types.TUnknown, pgerror.Unsupported("CAST to %s", n.Tp.String())
}

// bindAll binds several expressions in the same scope.
func (b *binder) bindAll(sc *scope, h hook, es ...ast.ExprNode) ([]spec.Expr, error) {
	out := make([]spec.Expr, len(es))
	for i, e := range es {
		x, err := b.bind(e, sc, h)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}
