package spec

import (
	"fmt"
	"strings"

	"sluice/sql/types"
)

// Expr is a typed scalar expression over the columns of one input row.
// Expressions are plain data: the planner builds them, exec/eval compiles
// them into closures.
type Expr interface {
	Type() types.T
	String() string
}

// ColRef reads column Idx of the input row.
type ColRef struct {
	Idx  int
	T    types.T
	Name string // for EXPLAIN only
}

// Const is a literal value.
type Const struct {
	D types.Datum
	T types.T
}

// Param is the $N parameter of a prepared statement (1-based); the
// server substitutes Consts before execution.
type Param struct {
	N int
	T types.T
}

// Func is a call of a scalar function or operator, resolved by name. Names
// of operators are their SQL spelling ("+", "=", "||", "like", ...); names
// of functions are lower-case ("round", "coalesce", ...). The special forms
// "and", "or", "not", "is null", "is not null", "case", "coalesce",
// "nullif", "in", "cast" are also Funcs (see exec/eval for their
// argument conventions).
type Func struct {
	Name string
	Args []Expr
	T    types.T
}

// Case is CASE [operand] WHEN … THEN … [ELSE …] END. With an Operand, each
// When is compared to it with "=".
type Case struct {
	Operand Expr // may be nil
	Whens   []When
	Else    Expr // may be nil (NULL)
	T       types.T
}

// When is one arm of a Case.
type When struct {
	Cond, Then Expr
}

// Cast converts its argument to T.
type Cast struct {
	E Expr
	T types.T
}

// Type implements Expr.
func (e *ColRef) Type() types.T { return e.T }

// Type implements Expr.
func (e *Const) Type() types.T { return e.T }

// Type implements Expr.
func (e *Param) Type() types.T { return e.T }

// Type implements Expr.
func (e *Func) Type() types.T { return e.T }

// Type implements Expr.
func (e *Case) Type() types.T { return e.T }

// Type implements Expr.
func (e *Cast) Type() types.T { return e.T }

func (e *ColRef) String() string {
	if e.Name != "" {
		return e.Name
	}
	return fmt.Sprintf("$%d", e.Idx)
}

func (e *Const) String() string {
	if e.D.IsNull() {
		return "NULL"
	}
	s := types.FormatText(e.D, e.T)
	if e.T.IsString() {
		return "'" + strings.ReplaceAll(s, "'", "''") + "'"
	}
	if e.T.IsNumeric() || e.T.Fam == types.Bool {
		return s
	}
	return "'" + s + "'::" + e.T.String()
}

func (e *Param) String() string { return fmt.Sprintf("$%d", e.N) }

func (e *Func) String() string {
	args := make([]string, len(e.Args))
	for i, a := range e.Args {
		args[i] = a.String()
	}
	switch {
	case len(args) == 2 && isInfix(e.Name):
		return "(" + args[0] + " " + e.Name + " " + args[1] + ")"
	case e.Name == "not" && len(args) == 1:
		return "(NOT " + args[0] + ")"
	case e.Name == "is null" || e.Name == "is not null":
		return "(" + args[0] + " " + strings.ToUpper(e.Name) + ")"
	case e.Name == "neg":
		return "(-" + args[0] + ")"
	}
	return e.Name + "(" + strings.Join(args, ", ") + ")"
}

func isInfix(name string) bool {
	switch name {
	case "+", "-", "*", "/", "%", "=", "<>", "<", "<=", ">", ">=", "||", "and", "or", "like", "not like", "ilike", "not ilike":
		return true
	}
	return false
}

func (e *Case) String() string {
	var b strings.Builder
	b.WriteString("CASE")
	if e.Operand != nil {
		b.WriteString(" " + e.Operand.String())
	}
	for _, w := range e.Whens {
		b.WriteString(" WHEN " + w.Cond.String() + " THEN " + w.Then.String())
	}
	if e.Else != nil {
		b.WriteString(" ELSE " + e.Else.String())
	}
	b.WriteString(" END")
	return b.String()
}

func (e *Cast) String() string { return e.E.String() + "::" + e.T.String() }

// Walk calls f for e and every sub-expression, depth first; f returning
// false stops the descent into that node's children.
func Walk(e Expr, f func(Expr) bool) {
	if e == nil || !f(e) {
		return
	}
	switch x := e.(type) {
	case *Func:
		for _, a := range x.Args {
			Walk(a, f)
		}
	case *Case:
		Walk(x.Operand, f)
		for _, w := range x.Whens {
			Walk(w.Cond, f)
			Walk(w.Then, f)
		}
		Walk(x.Else, f)
	case *Cast:
		Walk(x.E, f)
	case *Subquery:
		// The plan's own expressions are not visited: they see another row.
		Walk(x.Left, f)
		for _, o := range x.Outer {
			Walk(o, f)
		}
	}
}

// MapCols returns a copy of e with every column reference's index
// replaced by f(index); ok is false if e holds a subquery (not mapped).
func MapCols(e Expr, f func(int) int) (Expr, bool) {
	if e == nil {
		return nil, true
	}
	switch x := e.(type) {
	case *ColRef:
		c := *x
		c.Idx = f(x.Idx)
		return &c, true
	case *Const, *Param:
		return e, true
	case *Func:
		c := *x
		c.Args = make([]Expr, len(x.Args))
		for i, a := range x.Args {
			m, ok := MapCols(a, f)
			if !ok {
				return nil, false
			}
			c.Args[i] = m
		}
		return &c, true
	case *Case:
		c := *x
		var ok bool
		if c.Operand, ok = MapCols(x.Operand, f); !ok {
			return nil, false
		}
		if c.Else, ok = MapCols(x.Else, f); !ok {
			return nil, false
		}
		c.Whens = make([]When, len(x.Whens))
		for i, w := range x.Whens {
			cw, ok1 := MapCols(w.Cond, f)
			th, ok2 := MapCols(w.Then, f)
			if !ok1 || !ok2 {
				return nil, false
			}
			c.Whens[i] = When{Cond: cw, Then: th}
		}
		return &c, true
	case *Cast:
		m, ok := MapCols(x.E, f)
		if !ok {
			return nil, false
		}
		return &Cast{E: m, T: x.T}, true
	}
	return nil, false
}
