package planner

import (
	"sort"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// GROUPING SETS, ROLLUP and CUBE (the dialect layer writes them as
// __pg_grouping_sets, __pg_rollup, __pg_cube and __pg_gset calls; see
// sql/parser/grouping.go) expand, as in PostgreSQL, into a list of grouping
// sets. Each set is one aggregation over the shared input projection; a
// projection over each lays it out as the whole GROUP BY list, NULL in the
// columns the set does not group by, followed by the aggregates and the
// set's index; a Union of them is the result:
//
//	Project(group exprs, agg args) ─┬─ Agg(set 0) ─ Project(cols | NULL, aggs, 0) ─┐
//	                                ├─ Agg(set 1) ─ Project(…, 1) ─────────────────┼─ Union
//	                                └─ …                                           ┘
//
// Every operator is an ordinary incremental one, so a materialized view
// maintains itself under inserts, updates and deletes. GROUPING(e, …) reads
// the set's index: its value per set is known when planning. The empty set
// () is a global aggregation, which has its row (count 0) on empty input,
// as in PostgreSQL. The result has no unique key (duplicate sets give
// duplicate rows), so a view over it is a multiset.

// maxGroupingSets is PostgreSQL's limit on the sets of one GROUP BY.
const maxGroupingSets = 4096

// groupingSets is the expansion of a GROUP BY with grouping elements.
type groupingSets struct {
	// sets lists the grouping sets, as indexes into the flattened GROUP BY
	// items (groupByLeaves), duplicates kept.
	sets [][]int
	// distinct is GROUP BY DISTINCT: duplicate sets are dropped.
	distinct bool
}

// expandGroupBy flattens the grouping elements of gb: the returned clause
// lists every expression of them once per occurrence (so that positions
// and output aliases resolve as for a plain GROUP BY), and gs says which
// of them each grouping set groups by. gs is nil for a plain GROUP BY.
func expandGroupBy(gb *ast.GroupByClause) (*ast.GroupByClause, *groupingSets, error) {
	if gb == nil {
		return nil, nil, nil
	}
	x := &setExpander{}
	gs := &groupingSets{}
	sets := [][]int{{}}
	plain := true
	for _, it := range gb.Items {
		if fc, ok := it.Expr.(*ast.FuncCallExpr); ok {
			switch fc.FnName.L {
			case "__pg_group_distinct":
				gs.distinct = true
				continue
			case "__pg_rollup", "__pg_cube", "__pg_grouping_sets":
				plain = false
			}
		}
		elem, err := x.elem(it.Expr)
		if err != nil {
			return nil, nil, err
		}
		if len(sets)*len(elem) > maxGroupingSets {
			return nil, nil, errTooManySets()
		}
		var cross [][]int
		for _, s := range sets {
			for _, e := range elem {
				cross = append(cross, append(append([]int(nil), s...), e...))
			}
		}
		sets = cross
	}
	flat := &ast.GroupByClause{Items: x.leaves}
	if plain {
		return flat, nil, nil
	}
	gs.sets = sets
	return flat, gs, nil
}

func errTooManySets() error {
	return pgerror.New(pgcode.Code("54001"), "too many grouping sets present (maximum %d)", maxGroupingSets).
		WithHint("Group by fewer ROLLUP or CUBE elements.")
}

// setExpander collects the expressions of grouping elements.
type setExpander struct {
	leaves []*ast.ByItem
}

// leaf records one expression. An integer constant names a select-list
// item by position, as a plain GROUP BY item does (TiDB's grammar makes
// only those a PositionExpr).
func (x *setExpander) leaf(e ast.ExprNode) int {
	if v, ok := intLiteral(e); ok {
		e = &ast.PositionExpr{N: int(v)}
	}
	x.leaves = append(x.leaves, &ast.ByItem{Expr: e})
	return len(x.leaves) - 1
}

// unit reads an element of ROLLUP or CUBE: an expression or a list.
func (x *setExpander) unit(e ast.ExprNode) []int {
	if fc, ok := e.(*ast.FuncCallExpr); ok && fc.FnName.L == "__pg_gset" {
		u := []int{}
		for _, a := range fc.Args {
			u = append(u, x.leaf(a))
		}
		return u
	}
	return []int{x.leaf(e)}
}

// elem expands one grouping element into its grouping sets.
func (x *setExpander) elem(e ast.ExprNode) ([][]int, error) {
	fc, ok := e.(*ast.FuncCallExpr)
	if !ok {
		return [][]int{{x.leaf(e)}}, nil
	}
	switch fc.FnName.L {
	case "__pg_gset":
		return [][]int{x.unit(e)}, nil
	case "__pg_rollup":
		units := make([][]int, len(fc.Args))
		for i, a := range fc.Args {
			units[i] = x.unit(a)
		}
		var sets [][]int
		for k := len(units); k >= 0; k-- {
			s := []int{}
			for _, u := range units[:k] {
				s = append(s, u...)
			}
			sets = append(sets, s)
		}
		return sets, nil
	case "__pg_cube":
		if len(fc.Args) > 12 {
			return nil, pgerror.New(pgcode.Code("54011"), "CUBE is limited to 12 elements")
		}
		units := make([][]int, len(fc.Args))
		for i, a := range fc.Args {
			units[i] = x.unit(a)
		}
		var sets [][]int
		n := len(units)
		for m := (1 << n) - 1; m >= 0; m-- {
			s := []int{}
			for i, u := range units {
				if m&(1<<(n-1-i)) != 0 {
					s = append(s, u...)
				}
			}
			sets = append(sets, s)
		}
		return sets, nil
	case "__pg_grouping_sets":
		var sets [][]int
		for _, a := range fc.Args {
			sub, err := x.elem(a)
			if err != nil {
				return nil, err
			}
			if len(sets)+len(sub) > maxGroupingSets {
				return nil, errTooManySets()
			}
			sets = append(sets, sub...)
		}
		return sets, nil
	}
	return [][]int{{x.leaf(e)}}, nil
}

// boundSets maps the grouping sets onto columns of the aggregation's input
// projection (itemCol: GROUP BY item → column), each set's columns sorted
// and unique; GROUP BY DISTINCT drops repeated sets.
func (gs *groupingSets) boundSets(itemCol []int) [][]int {
	var out [][]int
	seen := map[string]bool{}
	for _, s := range gs.sets {
		cols := map[int]bool{}
		for _, it := range s {
			cols[itemCol[it]] = true
		}
		c := make([]int, 0, len(cols))
		for k := range cols {
			c = append(c, k)
		}
		sort.Ints(c)
		if gs.distinct {
			k := setKey(c)
			if seen[k] {
				continue
			}
			seen[k] = true
		}
		out = append(out, c)
	}
	return out
}

func setKey(cols []int) string {
	var sb strings.Builder
	for _, c := range cols {
		sb.WriteString(strconv.Itoa(c))
		sb.WriteByte(',')
	}
	return sb.String()
}

// planSetAggs builds the aggregations of sets over proj (whose first ng
// columns are the group expressions) and their Union; out holds the
// group and aggregate columns and gets the set index column appended.
func (p *Planner) planSetAggs(proj int, sets [][]int, ng int, calls []spec.AggCall, out *scope) int {
	pre := p.plan.Nodes[proj].Cols
	appendOnly := p.Streaming && p.AppendOnlyRel != nil && AppendOnly(p.plan, proj, p.AppendOnlyRel)
	out.cols = append(out.cols, scopeCol{name: "?grouping set?", t: types.TInt8})
	cols := out.columns()
	aggs := map[string]int{}
	var branches []int
	for k, set := range sets {
		key := setKey(set)
		agg, ok := aggs[key]
		if !ok {
			acols := make([]types.Column, 0, len(set)+len(calls))
			for _, c := range set {
				acols = append(acols, pre[c])
			}
			for _, c := range calls {
				acols = append(acols, types.Column{Name: aggName(c.Func), Type: c.T})
			}
			agg = p.plan.Add(&spec.Node{Kind: spec.Agg, Inputs: []int{proj}, GroupBy: set, Aggs: calls,
				Cols: acols, InputAppendOnly: appendOnly})
			aggs[key] = agg
		}
		exprs := make([]spec.Expr, 0, len(cols))
		for g := 0; g < ng; g++ {
			if i := indexOf(set, g); i >= 0 {
				exprs = append(exprs, &spec.ColRef{Idx: i, T: cols[g].Type, Name: cols[g].Name})
			} else {
				exprs = append(exprs, &spec.Const{D: types.Null, T: cols[g].Type})
			}
		}
		for i, c := range calls {
			exprs = append(exprs, &spec.ColRef{Idx: len(set) + i, T: c.T, Name: aggName(c.Func)})
		}
		exprs = append(exprs, &spec.Const{D: types.NewInt(int64(k)), T: types.TInt8})
		branches = append(branches, p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{agg}, Exprs: exprs, Cols: cols}))
	}
	if len(branches) == 1 {
		return branches[0]
	}
	return p.plan.Add(&spec.Node{Kind: spec.Union, Inputs: branches, Cols: cols})
}

func indexOf(s []int, v int) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// groupingCall binds GROUPING(e, …): bit i (from the right) of its value
// is 1 when the last-but-i argument is not grouped by the row's set.
// groupStr holds the bound group expressions; sets is nil for a plain
// GROUP BY (every argument is grouped: the value is 0); setCol is the
// column holding the set index.
func (b *binder) groupingCall(fc *ast.FuncCallExpr, sc *scope, groupStr []string, sets [][]int, setCol int) (spec.Expr, error) {
	if len(fc.Args) > 31 {
		return nil, pgerror.New(pgcode.Code("54023"), "GROUPING must have fewer than 32 arguments")
	}
	args := make([]int, len(fc.Args))
	for i, a := range fc.Args {
		x, err := b.bind(a, sc, nil)
		if err != nil {
			return nil, err
		}
		args[i] = indexOfStr(groupStr, x.String())
		if args[i] < 0 {
			return nil, errGroupingArgs()
		}
	}
	value := func(set []int) int64 {
		var v int64
		for _, a := range args {
			v <<= 1
			if indexOf(set, a) < 0 {
				v |= 1
			}
		}
		return v
	}
	if sets == nil {
		return &spec.Const{D: types.NewInt(0), T: types.TInt4}, nil
	}
	c := &spec.Case{Operand: &spec.ColRef{Idx: setCol, T: types.TInt8, Name: "?grouping set?"}, T: types.TInt4,
		Else: &spec.Const{D: types.NewInt(0), T: types.TInt4}}
	for k, s := range sets {
		if v := value(s); v != 0 {
			c.Whens = append(c.Whens, spec.When{Cond: &spec.Const{D: types.NewInt(int64(k)), T: types.TInt8},
				Then: &spec.Const{D: types.NewInt(v), T: types.TInt4}})
		}
	}
	if len(c.Whens) == 0 {
		return c.Else, nil
	}
	return c, nil
}

func indexOfStr(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// errGroupingArgs is PostgreSQL's error for GROUPING outside an
// aggregation or over an expression it does not group by.
func errGroupingArgs() error {
	return pgerror.New(pgcode.GroupingError, "arguments to GROUPING must be grouping expressions of the associated query level")
}
