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
	m := memCatalog{
		"orders": {ID: 1, Name: "orders", Kind: cat.Table, Key: []int{0}, Columns: []types.Column{
			col("id", types.TInt8), col("customer", types.TText), col("amount", types.T{Fam: types.Numeric, Prec: 12, Scale: 2}), col("ts", types.TTimestamp)}},
		"customers": {ID: 2, Name: "customers", Kind: cat.Table, Key: []int{0}, Columns: []types.Column{
			col("name", types.TText), col("region", types.TText)}},
		"g": {ID: 3, Name: "g", Kind: cat.Source, Columns: []types.Column{col("id", types.TInt8), col("v", types.TInt8)},
			Source: &spec.SourceSpec{SourceID: 3, Name: "g", Connector: "datagen"}},
		"revenue": {ID: 4, Name: "revenue", Kind: cat.MaterializedView, Key: []int{0}, Columns: []types.Column{
			col("region", types.TText), col("n", types.TInt8)}},
	}
	// Nexmark sources with a watermark 4 s behind their event time.
	nexmark := func(id uint64, name string, cols ...types.Column) {
		wm := -1
		for i, c := range cols {
			if c.Name == "date_time" {
				wm = i
			}
		}
		m[name] = &cat.Relation{ID: id, Name: name, Kind: cat.Source, Columns: cols, Source: &spec.SourceSpec{
			SourceID: id, Name: name, Connector: "nexmark", Columns: cols, Watermark: &spec.WatermarkSpec{Col: wm, Delay: 4_000_000}}}
	}
	nexmark(5, "bid", col("auction", types.TInt8), col("bidder", types.TInt8), col("price", types.TInt8),
		col("channel", types.TVarchar), col("url", types.TVarchar), col("date_time", types.TTimestamp), col("extra", types.TVarchar))
	nexmark(6, "person", col("id", types.TInt8), col("name", types.TVarchar), col("email_address", types.TVarchar),
		col("credit_card", types.TVarchar), col("city", types.TVarchar), col("state", types.TVarchar), col("date_time", types.TTimestamp),
		col("extra", types.TVarchar))
	nexmark(7, "auction", col("id", types.TInt8), col("item_name", types.TVarchar), col("description", types.TVarchar),
		col("initial_bid", types.TInt8), col("reserve", types.TInt8), col("date_time", types.TTimestamp), col("expires", types.TTimestamp),
		col("seller", types.TInt8), col("category", types.TInt8), col("extra", types.TVarchar))
	return m
}

// TestExplain runs the golden plan files in testdata/explain: each
// `explain` directive plans a statement (a CREATE MATERIALIZED VIEW as a
// streaming job, a query as a batch plan) and prints the dataflow.
// Refresh with -rewrite.
func TestExplain(t *testing.T) {
	datadriven.RunTest(t, "testdata/explain", explainCase)
}

// TestExplainGroupingSets runs testdata/groupingsets: GROUPING SETS,
// ROLLUP and CUBE as a union of aggregations, and LATERAL subqueries.
func TestExplainGroupingSets(t *testing.T) {
	datadriven.RunTest(t, "testdata/groupingsets", explainCase)
}

// TestExplainTimeWindows runs testdata/timewindows: TUMBLE, HOP,
// watermarks and EMIT ON WINDOW CLOSE, including the Nexmark queries built
// on them.
func TestExplainTimeWindows(t *testing.T) {
	datadriven.RunTest(t, "testdata/timewindows", explainCase)
}

func explainCase(t *testing.T, d *datadriven.TestData) string {
	st, err := parser.ParseOne(d.Input)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	p := &planner.Planner{Cat: testCatalog(), ParseType: parser.ParseType}
	var q *planner.Query
	switch x := st.(type) {
	case *parser.CreateMaterializedView:
		p.TableFuncs, p.EmitOnWindowClose = x.Parsed.TableFuncs, x.EmitOnWindowClose
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
	return b.String()
}
