package planner

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Row constructors: ROW(a, b) and (a, b) as values are records
// (sql/types/record.go) whose fields are named f1, f2, … as PostgreSQL
// names them, built with __pg_tuple (a row of NULLs is a record, not
// NULL); they print as PostgreSQL prints a record, (1,x), and their
// fields read back with (expr).f1. Comparisons between two row
// constructors expand field by field as the SQL standard and PostgreSQL
// do: = is the AND of the fields' =, <> the OR of their <>, and < <= > >=
// compare left to right, so that a NULL pair on the way gives NULL.

// bindRow binds a row constructor as a record value.
func (b *binder) bindRow(n *ast.RowExpr, sc *scope, h hook) (spec.Expr, error) {
	args := make([]spec.Expr, len(n.Values))
	cols := make([]types.Column, len(n.Values))
	for i, v := range n.Values {
		x, err := b.bind(v, sc, h)
		if err != nil {
			return nil, err
		}
		if x.Type().Fam == types.Unknown {
			// An unknown literal in a row constructor is text (PostgreSQL
			// resolves it so).
			if x, err = b.castTo(x, types.TText); err != nil {
				return nil, err
			}
		}
		args[i] = x
		cols[i] = types.Column{Name: "f" + itoa(i+1), Type: x.Type()}
	}
	t := types.RecordType(cols)
	if t.Prec == 0 {
		return nil, pgerror.Unsupported("too many distinct row shapes").
			WithHint("a server process interns at most 16384 record shapes")
	}
	return &spec.Func{Name: "__pg_tuple", Args: args, T: t}, nil
}

// rowOf returns e as a row constructor (through parentheses).
func rowOf(e ast.ExprNode) (*ast.RowExpr, bool) {
	for {
		p, ok := e.(*ast.ParenthesesExpr)
		if !ok {
			break
		}
		e = p.Expr
	}
	r, ok := e.(*ast.RowExpr)
	return r, ok
}

// bindRowCompare expands a comparison of two row constructors. ok is
// false when n is not one.
func (b *binder) bindRowCompare(n *ast.BinaryOperationExpr, sc *scope, h hook) (x spec.Expr, ok bool, err error) {
	l, lok := rowOf(n.L)
	r, rok := rowOf(n.R)
	if !lok && !rok {
		return nil, false, nil
	}
	op, isCmp := binaryOps[n.Op]
	switch n.Op {
	case opcode.EQ, opcode.NE, opcode.LT, opcode.LE, opcode.GT, opcode.GE:
	default:
		isCmp = false
	}
	if !isCmp || !lok || !rok {
		return nil, true, pgerror.Unsupported("this comparison of a row value").
			WithHint("compare two row constructors with = <> < <= > >=, e.g. ROW(a, b) = ROW(1, 2), or compare their fields")
	}
	if len(l.Values) != len(r.Values) {
		return nil, true, pgerror.New(pgcode.Syntax, "unequal number of entries in row expressions")
	}
	pair := func(i int, name string) (spec.Expr, error) {
		args, err := b.bindAll(sc, h, l.Values[i], r.Values[i])
		if err != nil {
			return nil, err
		}
		return b.call(name, args)
	}
	and := func(a, c spec.Expr) spec.Expr {
		return &spec.Func{Name: "and", Args: []spec.Expr{a, c}, T: types.TBool}
	}
	or := func(a, c spec.Expr) spec.Expr {
		return &spec.Func{Name: "or", Args: []spec.Expr{a, c}, T: types.TBool}
	}
	last := len(l.Values) - 1
	switch n.Op {
	case opcode.EQ, opcode.NE:
		for i := 0; i <= last; i++ {
			c, err := pair(i, op)
			if err != nil {
				return nil, true, err
			}
			switch {
			case x == nil:
				x = c
			case n.Op == opcode.EQ:
				x = and(x, c)
			default:
				x = or(x, c)
			}
		}
		return x, true, nil
	}
	// a < b: (a1 < b1) OR (a1 = b1 AND (a2 < b2 OR …(an op bn))), the
	// strict operator on every field but the last.
	strict := map[opcode.Op]string{opcode.LT: "<", opcode.LE: "<", opcode.GT: ">", opcode.GE: ">"}[n.Op]
	for i := last; i >= 0; i-- {
		if i == last {
			if x, err = pair(i, op); err != nil {
				return nil, true, err
			}
			continue
		}
		s, err := pair(i, strict)
		if err != nil {
			return nil, true, err
		}
		eq, err := pair(i, "=")
		if err != nil {
			return nil, true, err
		}
		x = or(s, and(eq, x))
	}
	return x, true, nil
}
