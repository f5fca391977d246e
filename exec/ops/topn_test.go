// Tests of SortRows and TopN: ORDER BY with ASC/DESC and NULLS FIRST/LAST
// as Postgres orders them (NULL sorts above every value; the planner sets
// NullsFirst for DESC unless told otherwise), multi-key ordering with a
// stable tie order, and TopN's LIMIT/OFFSET over an input with
// duplicates and retractions.
package ops_test

import (
	"strings"
	"testing"

	"sluice/exec/flow"
	"sluice/exec/ops"
	"sluice/exec/spec"
	"sluice/sql/types"
)

func fmtRows(rows []types.Row) string {
	s := make([]string, len(rows))
	for i, r := range rows {
		s[i] = fmtRow(r)
	}
	return strings.Join(s, " ")
}

func TestSortRows(t *testing.T) {
	single := []types.Row{row(3), row(nil), row(1), row(2), row(nil), row(-5)}
	for _, tc := range []struct {
		name  string
		rows  []types.Row
		order []spec.OrderItem
		want  string
	}{
		// ORDER BY x  ==  ASC NULLS LAST
		{"asc", single, []spec.OrderItem{{Col: 0}}, "(-5) (1) (2) (3) (NULL) (NULL)"},
		{"asc nulls first", single, []spec.OrderItem{{Col: 0, NullsFirst: true}}, "(NULL) (NULL) (-5) (1) (2) (3)"},
		// ORDER BY x DESC  ==  DESC NULLS FIRST
		{"desc", single, []spec.OrderItem{{Col: 0, Desc: true, NullsFirst: true}}, "(NULL) (NULL) (3) (2) (1) (-5)"},
		{"desc nulls last", single, []spec.OrderItem{{Col: 0, Desc: true}}, "(3) (2) (1) (-5) (NULL) (NULL)"},
		{
			"text and float",
			[]types.Row{row("b", 1.5), row("a", nil), row("b", -0.5), row(nil, 2.0), row("a", 0.0)},
			[]spec.OrderItem{{Col: 0, Desc: true, NullsFirst: true}, {Col: 1}},
			"(NULL,f2) ('b',f-0.5) ('b',f1.5) ('a',f0) ('a',NULL)",
		},
		{
			// Rows equal on every key keep their input order.
			"stable ties",
			[]types.Row{row(1, "first"), row(0, "x"), row(1, "second"), row(1, "third")},
			[]spec.OrderItem{{Col: 0, Desc: true}},
			"(1,'first') (1,'second') (1,'third') (0,'x')",
		},
		{
			"second key breaks ties",
			[]types.Row{row(1, nil), row(1, 2), row(0, 9), row(1, 1)},
			[]spec.OrderItem{{Col: 0}, {Col: 1, Desc: true, NullsFirst: true}},
			"(0,9) (1,NULL) (1,2) (1,1)",
		},
		{"no order", []types.Row{row(2), row(1)}, nil, "(2) (1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := append([]types.Row(nil), tc.rows...)
			ops.SortRows(rows, tc.order)
			if got := fmtRows(rows); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestTopN(t *testing.T) {
	input := []change{
		ins(row(5)), ins(row(nil)), change{row(3), 2}, ins(row(9)), ins(row(1)),
		del(row(9)), ins(row(7)), change{row(4), 2}, del(row(4)),
	}
	// Current input, ascending: 1 3 3 4 5 7 NULL.
	for _, tc := range []struct {
		name          string
		order         []spec.OrderItem
		limit, offset int64
		want          string
	}{
		{"all", []spec.OrderItem{{Col: 0}}, -1, 0, "(1) (3) (3) (4) (5) (7) (NULL)"},
		{"limit", []spec.OrderItem{{Col: 0}}, 3, 0, "(1) (3) (3)"},
		{"offset", []spec.OrderItem{{Col: 0}}, -1, 5, "(7) (NULL)"},
		{"limit offset", []spec.OrderItem{{Col: 0}}, 2, 2, "(3) (4)"},
		{"desc limit", []spec.OrderItem{{Col: 0, Desc: true, NullsFirst: true}}, 2, 0, "(NULL) (7)"},
		{"desc nulls last", []spec.OrderItem{{Col: 0, Desc: true}}, 2, 0, "(7) (5)"},
		{"limit 0", []spec.OrderItem{{Col: 0}}, 0, 0, ""},
		{"offset past the end", []spec.OrderItem{{Col: 0}}, 3, 7, ""},
		{"limit past the end", []spec.OrderItem{{Col: 0}}, 100, 6, "(NULL)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tn := ops.NewTopN(&spec.Node{Kind: spec.TopN, Order: tc.order, Limit: tc.limit, Offset: tc.offset})
			var got []types.Row
			em := flow.NewEmitter(func(b *types.Batch) error {
				for i, r := range b.Rows {
					if b.Diffs[i] != 1 {
						t.Errorf("TopN emitted %s with diff %d", fmtRow(r), b.Diffs[i])
					}
					got = append(got, r)
				}
				return nil
			})
			// Input in two batches; nothing is emitted before Finish.
			if err := tn.Process(0, batchOf(input[:4]...), em); err != nil {
				t.Fatal(err)
			}
			if err := tn.Checkpoint(&flow.Barrier{Epoch: 1}, em); err != nil {
				t.Fatal(err)
			}
			if err := tn.Process(0, batchOf(input[4:]...), em); err != nil {
				t.Fatal(err)
			}
			if err := em.Flush(); err != nil {
				t.Fatal(err)
			}
			if len(got) != 0 {
				t.Fatalf("TopN emitted %s before Finish", fmtRows(got))
			}
			if err := tn.Finish(em); err != nil {
				t.Fatal(err)
			}
			if err := em.Flush(); err != nil {
				t.Fatal(err)
			}
			if s := fmtRows(got); s != tc.want {
				t.Fatalf("got  %s\nwant %s", s, tc.want)
			}
		})
	}
}
