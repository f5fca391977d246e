package planner

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/exec/eval"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// UserFunc is a SQL function created with CREATE FUNCTION … LANGUAGE SQL:
// a single expression over its arguments, inlined where it is called.
type UserFunc struct {
	ID       uint64
	Name     string
	ArgNames []string // "" for an unnamed argument ($n only)
	ArgTypes []types.T
	Returns  types.T
	// Body returns a fresh parse of the body expression (it is rewritten
	// in place when inlined).
	Body func() (ast.ExprNode, error)
}

// argSubst replaces the body's references to arguments (by name or $n)
// with the call's argument expressions.
type argSubst struct {
	f    *UserFunc
	args []ast.ExprNode
}

func (s argSubst) Enter(n ast.Node) (ast.Node, bool) {
	if _, ok := n.(*ast.SubqueryExpr); ok {
		return n, true
	}
	return n, false
}

func (s argSubst) Leave(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.ColumnNameExpr:
		if x.Name.Table.O != "" {
			return n, true
		}
		for i, name := range s.f.ArgNames {
			if name != "" && strings.EqualFold(name, x.Name.Name.O) {
				return s.args[i], true
			}
		}
	case *ast.FuncCallExpr:
		if x.FnName.L == "__pg_param" && len(x.Args) == 1 {
			if k, ok := intLiteral(x.Args[0]); ok && k >= 1 && int(k) <= len(s.args) {
				return s.args[k-1], true
			}
		}
	}
	return n, true
}

// maxInlineDepth bounds how deep SQL function calls nest when inlined.
const maxInlineDepth = 100

// bindUserFunc inlines a call of f.
func (b *binder) bindUserFunc(f *UserFunc, n *ast.FuncCallExpr, sc *scope, h hook) (spec.Expr, error) {
	if len(n.Args) != len(f.ArgTypes) {
		return nil, pgerror.New(pgcode.UndefinedFunction, "function %s takes %d arguments, not %d", f.Name, len(f.ArgTypes), len(n.Args))
	}
	body, err := f.Body()
	if err != nil {
		return nil, err
	}
	// Each argument is bound in the caller's scope and cast to the declared
	// type; the body sees it through a placeholder node that binds to it.
	args := make([]ast.ExprNode, len(n.Args))
	for i, a := range n.Args {
		x, err := b.bind(a, sc, h)
		if err != nil {
			return nil, err
		}
		if x, err = b.castTo(x, f.ArgTypes[i]); err != nil {
			return nil, err
		}
		args[i] = &boundExpr{x: x}
	}
	// The arguments are bound in the caller (h(h(1)) is no recursion);
	// the body is bound with f on the stack of inlined functions.
	// A function that calls itself, directly or through others, would be
	// inlined forever: refuse it (CREATE FUNCTION checks its body this way,
	// so it refuses recursion when it is created), and bound the nesting of
	// distinct functions with PostgreSQL's 54001.
	for _, name := range b.p.inlining {
		if name == f.Name {
			return nil, pgerror.Unsupported("recursive SQL function %s is not supported", f.Name).
				WithHint("Sluice inlines SQL functions where they are called, so a function cannot call itself, directly or through other functions.")
		}
	}
	b.p.inlining = append(b.p.inlining, f.Name)
	defer func() { b.p.inlining = b.p.inlining[:len(b.p.inlining)-1] }()
	if len(b.p.inlining) > maxInlineDepth {
		return nil, pgerror.New(pgcode.Code("54001"), "stack depth limit exceeded").
			WithHint("SQL functions are nested more than %d deep where %s is called.", maxInlineDepth, f.Name)
	}
	nb, ok := body.Accept(argSubst{f: f, args: args})
	if !ok {
		return nil, pgerror.New(pgcode.Internal, "inlining %s", f.Name)
	}
	b.p.Deps = append(b.p.Deps, f.ID)
	x, err := b.bind(nb.(ast.ExprNode), sc, h)
	if err != nil {
		if c := pgerror.GetCode(err); c == pgcode.Code("54001") || c == pgcode.FeatureNotSupported {
			return nil, err // not wrapped once per level of the recursion
		}
		return nil, pgerror.Wrap(err, pgerror.GetCode(err), "in function %s", f.Name)
	}
	return b.castTo(x, f.Returns)
}

// boundExpr is an already bound expression standing in the AST (an
// inlined function's argument).
type boundExpr struct {
	ast.ValueExpr
	x spec.Expr
}

func (e *boundExpr) Accept(v ast.Visitor) (ast.Node, bool) { return v.Leave(e) }

// userFunc finds the SQL function a call names, or nil for a built-in.
// Built-ins win for unqualified names, as if pg_catalog came first on
// every search path (PostgreSQL's rule): a user's abs() never changes what
// abs(-5) returns for anyone, and is reached as public.abs(…). A name
// qualified with a user schema (public included) is a user function or
// 42883.
func (b *binder) userFunc(n *ast.FuncCallExpr) (*UserFunc, error) {
	name := n.FnName.L
	switch s := n.Schema.L; s {
	case "pg_catalog", "information_schema":
		return nil, nil
	case "":
		if isBuiltinFunc(name) {
			return nil, nil
		}
		return b.p.Funcs(name), nil
	default:
		lookup := name
		if s != "public" {
			lookup = s + "." + name // a function of another schema (server/schema.go)
		}
		if f := b.p.Funcs(lookup); f != nil {
			return f, nil
		}
		return nil, pgerror.New(pgcode.UndefinedFunction, "function %s.%s does not exist", s, name).
			WithHint("No function matches the given name. Built-in functions are in pg_catalog.")
	}
}

// isBuiltinFunc reports whether name is a built-in of any signature:
// exec/eval's functions, aggregates and set-returning functions, and the
// catalog functions the planner binds itself.
func isBuiltinFunc(name string) bool {
	if eval.IsBuiltin(name) {
		return true
	}
	switch name {
	case "pg_get_function_result", "pg_get_function_arguments", "pg_get_function_identity_arguments", "pg_get_functiondef",
		"nextval", "setval", "currval", "lastval", "now", "current_timestamp", "localtimestamp", "current_date", "current_time":
		return true
	}
	for k := range catalogFuncs {
		if strings.HasPrefix(k, name+"/") {
			return true
		}
	}
	return false
}
