package planner_test

import (
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"sluice/exec/spec"
	"sluice/planner"
	"sluice/planner/cat"
	"sluice/sql/parser"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// memCatalog is an in-memory catalog for plan tests.
type memCatalog map[string]*cat.Relation

func (m memCatalog) Resolve(schema, name string) (*cat.Relation, error) {
	if r, ok := m[name]; ok {
		return r, nil
	}
	return nil, pgerror.New("42P01", "relation %q does not exist", name)
}

func testCatalog() memCatalog {
	col := func(n string, t types.T) types.Column { return types.Column{Name: n, Type: t} }
	return memCatalog{
		"orders": {ID: 1, Name: "orders", Kind: cat.Table, Key: []int{0}, Columns: []types.Column{
			col("id", types.TInt8), col("customer", types.TText), col("amount", types.T{Fam: types.Numeric, Prec: 12, Scale: 2}), col("ts", types.TTimestamp)}},
		"customers": {ID: 2, Name: "customers", Kind: cat.Table, Key: []int{0}, Columns: []types.Column{
			col("name", types.TText), col("region", types.TText)}},
		"g": {ID: 3, Name: "g", Kind: cat.Source, Columns: []types.Column{col("id", types.TInt8), col("v", types.TInt8)},
			Source: &spec.SourceSpec{SourceID: 3, Name: "g", Connector: "datagen"}},
		"revenue": {ID: 4, Name: "revenue", Kind: cat.MaterializedView, Key: []int{0}, Columns: []types.Column{
			col("region", types.TText), col("n", types.TInt8)}},
	}
}

// TestExplain runs the golden plan files in testdata/explain: each
// `explain` directive plans a statement (a CREATE MATERIALIZED VIEW as a
// streaming job, a query as a batch plan) and prints the dataflow.
// Refresh with -rewrite.
func TestExplain(t *testing.T) {
	datadriven.RunTest(t, "testdata/explain", func(t *testing.T, d *datadriven.TestData) string {
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
		return b.String()
	})
}
