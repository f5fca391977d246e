package spec

import (
	"fmt"
	"strings"

	"sluice/sql/types"
)

// SubqueryMode is what a Subquery expression computes from its rows.
type SubqueryMode uint8

// Subquery modes.
const (
	// ScalarSubquery is (SELECT x ...): the single value of the single row,
	// NULL for no row, an error (21000) for more than one.
	ScalarSubquery SubqueryMode = iota
	// ExistsSubquery is EXISTS (SELECT ...).
	ExistsSubquery
	// AnySubquery is Left Op ANY (SELECT x ...), and IN (SELECT x ...)
	// with Op "=": three-valued, as in SQL.
	AnySubquery
	// AllSubquery is Left Op ALL (SELECT x ...).
	AllSubquery
	// ArraySubquery is ARRAY(SELECT x ...): the column's values, in the
	// subquery's order, as an array.
	ArraySubquery
)

var subqueryNames = [...]string{"", "EXISTS ", "ANY ", "ALL ", "ARRAY"}

// Subquery is a subquery used as an expression (batch queries only). Its
// Plan is run as a batch query over the statement's snapshot, once per
// distinct set of Outer values (once when it has none). Inside Plan,
// OuterRef{N} reads the value of Outer[N], an expression over the row of
// the enclosing query: that is how a correlated subquery sees it.
type Subquery struct {
	Mode SubqueryMode
	Plan *Plan
	// Outer are the enclosing row's values the plan reads as OuterRefs.
	Outer []Expr
	// Cols is the number of visible columns of the plan's root; columns
	// after them only carry ORDER BY keys.
	Cols int
	// Order, Limit (-1 = none) and Offset apply to the plan's rows.
	Order  []OrderItem
	Limit  int64
	Offset int64
	// Left and Op are the comparison of AnySubquery and AllSubquery: Op
	// is a comparison operator ("=", "<", ...) and the subquery's first
	// column has Left's type.
	Left Expr
	Op   string
	T    types.T
}

// OuterRef reads value N of the enclosing query's row, handed to a
// correlated subquery's plan (see Subquery.Outer).
type OuterRef struct {
	N    int
	T    types.T
	Name string // for EXPLAIN only
}

// Type implements Expr.
func (e *Subquery) Type() types.T { return e.T }

// Type implements Expr.
func (e *OuterRef) Type() types.T { return e.T }

func (e *Subquery) String() string {
	var b strings.Builder
	if e.Left != nil {
		b.WriteString(e.Left.String() + " " + e.Op + " ")
	}
	b.WriteString(subqueryNames[e.Mode])
	b.WriteString("(subquery")
	if len(e.Outer) > 0 {
		o := make([]string, len(e.Outer))
		for i, x := range e.Outer {
			o[i] = x.String()
		}
		b.WriteString(" with " + strings.Join(o, ", "))
	}
	b.WriteString(")")
	return b.String()
}

func (e *OuterRef) String() string {
	if e.Name != "" {
		return "outer." + e.Name
	}
	return fmt.Sprintf("outer.$%d", e.N)
}
