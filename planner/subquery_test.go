package planner_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"sluice/exec/spec"
	"sluice/planner"
	"sluice/sql/parser"
	"sluice/sql/pgerror"
)

// TestSubqueryPlans runs the golden plan files in testdata/subquery:
// subqueries in expressions, table functions in FROM and batch-only
// aggregates. After the statement's plan it prints the plan of every
// subquery, depth first, with the outer values handed to it. Refresh with
// -rewrite.
func TestSubqueryPlans(t *testing.T) {
	datadriven.RunTest(t, "testdata/subquery", func(t *testing.T, d *datadriven.TestData) string {
		st, err := parser.ParseOne(d.Input)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		p := &planner.Planner{Cat: testCatalog(), ParseType: parser.ParseType}
		var q *planner.Query
		switch x := st.(type) {
		case *parser.CreateMaterializedView:
			q, err = p.PlanView(x.Query, 100, x.Name)
		case *parser.Query:
			p.TableFuncs = x.TableFuncs
			q, err = p.PlanQuery(x.Node)
		default:
			t.Fatalf("unexpected statement %T", st)
		}
		if err != nil {
			return "error (" + string(pgerror.GetCode(err)) + "): " + err.Error() + "\n"
		}
		var b strings.Builder
		b.WriteString(q.Plan.Explain())
		names := make([]string, len(q.Columns))
		for i, c := range q.Columns {
			names[i] = c.Name + " " + c.Type.String()
		}
		b.WriteString("columns: " + strings.Join(names, ", ") + "\n")
		n := 0
		var subplans func(plan *spec.Plan)
		subplans = func(plan *spec.Plan) {
			for _, node := range plan.Nodes {
				exprs := append(append([]spec.Expr{node.Pred, node.Cond}, node.Exprs...), node.Lookup...)
				for _, e := range exprs {
					spec.Walk(e, func(x spec.Expr) bool {
						s, ok := x.(*spec.Subquery)
						if !ok {
							return true
						}
						n++
						outer := make([]string, len(s.Outer))
						for i, o := range s.Outer {
							outer[i] = o.String()
						}
						fmt.Fprintf(&b, "subquery %d (outer: %s):\n", n, strings.Join(outer, ", "))
						for _, l := range strings.Split(strings.TrimRight(s.Plan.Explain(), "\n"), "\n") {
							b.WriteString("  " + l + "\n")
						}
						subplans(s.Plan)
						return true
					})
				}
			}
		}
		subplans(q.Plan)
		return b.String()
	})
}
