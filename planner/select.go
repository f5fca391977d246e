package planner

import (
	"reflect"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/exec/eval"
	"sluice/exec/spec"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// errRecursiveCTE refuses WITH RECURSIVE, which the planner cannot run.
func errRecursiveCTE() error {
	return pgerror.Unsupported("WITH RECURSIVE is not supported").WithHint("Rewrite the query without WITH RECURSIVE; a plain WITH does not see its own name, as in PostgreSQL.")
}

func (p *Planner) planSelect(s *ast.SelectStmt) (*Query, error) {
	if s.With != nil && s.With.IsRecursive {
		return nil, errRecursiveCTE()
	}
	p.pushCTEs(s.With)
	defer p.popCTEs(s.With)
	// The clock is let through only in this query's own WHERE (temporal
	// filters), not in the queries nested in it.
	defer func(ok bool) { p.clockOK = ok }(p.clockOK)
	p.clockOK = false
	if s.Kind == ast.SelectStmtKindValues {
		return p.planValues(s.Lists)
	}
	b := &binder{p: p}
	var in int
	var sc *scope
	var err error
	if s.From != nil && s.From.TableRefs != nil {
		if in, sc, err = p.planFrom(s.From.TableRefs); err != nil {
			return nil, err
		}
	} else {
		sc = &scope{}
		in = p.plan.Add(&spec.Node{Kind: spec.Values, Rows: []types.Row{{}}})
		if p.Streaming {
			return nil, pgerror.Unsupported("a materialized view needs a FROM clause")
		}
	}
	// A view's subqueries in WHERE become joins (decorrelate.go), applied
	// after the other conditions have given the joins of FROM their keys.
	where := s.Where
	var subConds []ast.ExprNode
	if p.Streaming && where != nil {
		where, subConds = splitSubqueryConds(where)
	}
	if where != nil {
		// A view may compare a column with now() in WHERE (temporal
		// filters, temporal.go): the clock is let through the binder here
		// and its uses checked below.
		p.clockOK = p.Streaming
		pred, err := b.bind(where, sc, nil)
		p.clockOK = false
		if err != nil {
			return nil, err
		}
		if f := pred.Type().Fam; f != types.Bool && f != types.Unknown {
			return nil, pgerror.New(pgcode.DatatypeMismatch, "argument of WHERE must be type boolean, not type %s", pred.Type())
		}
		if pred, err = b.castTo(pred, types.TBool); err != nil {
			return nil, err
		}
		var bounds []spec.TimeBound
		if p.Streaming && hasClock(pred) {
			var rest []spec.Expr
			if bounds, rest, err = temporalBounds(pred); err != nil {
				return nil, err
			}
			pred = andAll(rest)
		}
		if pred != nil {
			key := p.keys[in]
			if src := p.plan.Nodes[in]; !p.Streaming && src.Kind == spec.Subscribe && key != nil {
				src.Lookup = KeyLookup(pred, key)
			}
			p.pushTopN(in, pred)
			// Conditions over the inputs of inner joins (comma joins: FROM a, b
			// WHERE a.id = b.aid) become the joins' keys and conditions.
			top := p.plan.Nodes[in]
			rest := p.pushJoinConds(in, conjuncts(pred))
			for i, n := range p.plan.Nodes { // inserted filters move it up
				if n == top {
					in = i
				}
			}
			if len(rest) > 0 {
				in = p.plan.Add(&spec.Node{Kind: spec.Filter, Inputs: []int{in}, Pred: andAll(rest), Cols: sc.columns()})
			}
			p.keys[in] = key
		}
		if bounds != nil {
			in = p.addTemporalFilter(in, sc.columns(), bounds)
		}
	}
	if len(subConds) > 0 {
		if in, err = p.applySubqueryConds(in, sc, subConds, nil); err != nil {
			return nil, err
		}
	}

	// Expand the select list.
	type item struct {
		expr ast.ExprNode
		name string
		ref  *spec.ColRef // for * expansion
	}
	var items []item
	fields := s.Fields.Fields
	var distinctOn []ast.ExprNode
	if len(fields) > 0 {
		if fc, ok := fields[0].Expr.(*ast.FuncCallExpr); ok && fc.FnName.L == "__pg_distinct_on" {
			distinctOn, fields = fc.Args, fields[1:]
		}
	}
	for _, f := range fields {
		if f.WildCard != nil {
			n := 0
			for i, c := range sc.cols {
				if f.WildCard.Table.O != "" && c.table != f.WildCard.Table.O {
					continue
				}
				if f.WildCard.Table.O == "" && c.merged {
					continue // JOIN … USING shows the merged column once
				}
				items = append(items, item{name: c.name, ref: &spec.ColRef{Idx: i, T: c.t, Name: c.name}})
				n++
			}
			if n == 0 && f.WildCard.Table.O != "" {
				return nil, pgerror.New(pgcode.UndefinedTable, "missing FROM-clause entry for table %q", f.WildCard.Table.O)
			}
			continue
		}
		items = append(items, item{expr: f.Expr, name: outputName(f)})
	}

	// GROUPING SETS, ROLLUP and CUBE become a list of sets over the
	// flattened GROUP BY items (groupingsets.go).
	var gsets *groupingSets
	if s.GroupBy != nil {
		flat, gs, err := expandGroupBy(s.GroupBy)
		if err != nil {
			return nil, err
		}
		s, gsets = shallowWithGroupBy(s, flat), gs
	}
	// A set-returning item that GROUP BY names by its alias runs before
	// the aggregation (srf.go).
	if s.GroupBy != nil {
		exprs := make([]ast.ExprNode, len(items))
		names := make([]string, len(items))
		for i, it := range items {
			exprs[i], names[i] = it.expr, it.name
		}
		var err error
		if in, err = p.planGroupedSRF(b, in, sc, s.GroupBy, exprs, names); err != nil {
			return nil, err
		}
		for i := range items {
			items[i].expr = exprs[i]
		}
		// GROUP BY 2 and GROUP BY alias name select-list items.
		exprs = exprs[:0]
		for _, it := range items {
			x := it.expr
			if it.ref != nil {
				c := sc.cols[it.ref.Idx]
				x = &ast.ColumnNameExpr{Name: &ast.ColumnName{Table: ast.NewCIStr(c.table), Name: ast.NewCIStr(c.name)}}
			}
			exprs = append(exprs, x)
		}
		gb, err := groupByOutputs(s.GroupBy, sc, exprs, names)
		if err != nil {
			return nil, err
		}
		s = shallowWithGroupBy(s, gb)
	}

	// Aggregation.
	var aggs []*ast.AggregateFuncExpr
	var filters []ast.ExprNode
	collect := func(e ast.Node) {
		if e == nil {
			return
		}
		e.Accept(&aggCollector{aggs: &aggs, filters: &filters})
	}
	for _, it := range items {
		if it.expr != nil {
			collect(it.expr)
		}
	}
	if s.Having != nil {
		collect(s.Having.Expr)
	}
	if s.OrderBy != nil {
		for _, o := range s.OrderBy.Items {
			collect(o.Expr)
		}
	}
	var h hook
	outKey := p.keys[in]
	if len(aggs) > 0 || s.GroupBy != nil || s.Having != nil {
		var err error
		in, sc, h, outKey, err = p.planAgg(b, in, sc, s.GroupBy, gsets, aggs, filters)
		if err != nil {
			return nil, err
		}
		var having ast.ExprNode
		if s.Having != nil {
			having = s.Having.Expr
		}
		var subHaving []ast.ExprNode
		if p.Streaming && having != nil {
			having, subHaving = splitSubqueryConds(having)
		}
		if having != nil {
			pred, err := b.bind(having, sc, h)
			if err != nil {
				return nil, err
			}
			if pred, err = b.castTo(pred, types.TBool); err != nil {
				return nil, err
			}
			in = p.plan.Add(&spec.Node{Kind: spec.Filter, Inputs: []int{in}, Pred: pred, Cols: p.plan.Nodes[in].Cols})
		}
		if len(subHaving) > 0 {
			p.keys[in] = outKey
			if in, err = p.applySubqueryConds(in, sc, subHaving, h); err != nil {
				return nil, err
			}
		}
	}

	aggregated := h != nil
	// Window functions.
	{
		var wexprs []ast.ExprNode
		for _, it := range items {
			wexprs = append(wexprs, it.expr)
		}
		if s.OrderBy != nil {
			for _, o := range s.OrderBy.Items {
				wexprs = append(wexprs, o.Expr)
			}
		}
		var err error
		before := in
		if in, h, err = p.planWindows(b, in, sc, h, wexprs, s.WindowSpecs); err != nil {
			return nil, err
		}
		if in != before {
			// Window nodes append columns; the input's key still holds.
			p.keys[in] = p.keys[before]
		}
	}

	// Set-returning functions in the select list (srf.go).
	var srfRefs map[int]*spec.ColRef
	{
		itemExprs := make([]ast.ExprNode, len(items))
		for i, it := range items {
			itemExprs[i] = it.expr
		}
		var err error
		var found bool
		if in, h, found, err = p.planNestedSRF(b, in, sc, h, itemExprs); err != nil {
			return nil, err
		}
		if found {
			outKey = nil // a row may repeat
		}
	}

	// A view's scalar subqueries in the select list are joined on as
	// columns (decorrelate.go).
	if p.Streaming {
		var sqs []*ast.SubqueryExpr
		for _, it := range items {
			if it.expr == nil {
				continue
			}
			f := findSubqueries(it.expr)
			if f.other {
				return nil, errSubquery("EXISTS, IN or ANY/ALL (subquery) in the select list")
			}
			sqs = append(sqs, f.scalars...)
		}
		if len(sqs) > 0 {
			key := p.keys[in]
			var err error
			if in, sc, err = p.joinScalars(in, sc, sqs); err != nil {
				return nil, err
			}
			p.keys[in] = key
			defer p.forgetScalars(sqs)
		}
	}

	// Projection.
	var exprs []spec.Expr
	var cols []types.Column
	for i, it := range items {
		var e spec.Expr
		if it.ref != nil {
			e = it.ref
		}
		if r := srfRefs[i]; r != nil {
			e = r
		}
		if it.ref != nil && aggregated {
			return nil, pgerror.New(pgcode.GroupingError, "column %q must appear in the GROUP BY clause or be used in an aggregate function", it.name)
		}
		if e == nil {
			x, err := b.bind(it.expr, sc, h)
			if err != nil {
				return nil, err
			}
			e = x
		}
		if e.Type().Fam == types.Unknown {
			var err error
			if e, err = b.castTo(e, types.TText); err != nil {
				return nil, err
			}
		}
		exprs = append(exprs, e)
		col := types.Column{Name: it.name, Type: e.Type()}
		if r, ok := e.(*spec.ColRef); ok && !aggregated && srfRefs[i] == nil && r.Idx < len(sc.cols) {
			col.TableOID, col.AttNum = sc.cols[r.Idx].rel, sc.cols[r.Idx].att
		}
		cols = append(cols, col)
	}
	q := &Query{Columns: cols, Limit: -1}
	// The output key survives when every key column is projected as is.
	if outKey != nil {
		var k []int
		for _, kc := range outKey {
			found := -1
			for i, e := range exprs {
				if r, ok := e.(*spec.ColRef); ok && r.Idx == kc {
					found = i
					break
				}
			}
			if found < 0 {
				k = nil
				break
			}
			k = append(k, found)
		}
		if k != nil || len(outKey) == 0 {
			if k == nil {
				k = []int{}
			}
			q.Key = k
		}
	}
	// ORDER BY: output columns by name or position, else hidden columns.
	if s.OrderBy != nil {
		for _, o := range s.OrderBy.Items {
			col := -1
			if pe, ok := o.Expr.(*ast.PositionExpr); ok && pe.P == nil {
				if pe.N < 1 || pe.N > len(cols) {
					return nil, pgerror.New(pgcode.InvalidColumnReference, "ORDER BY position %d is not in select list", pe.N)
				}
				col = pe.N - 1
			} else if v, ok := intLiteral(o.Expr); ok {
				if v < 1 || int(v) > len(cols) {
					return nil, pgerror.New(pgcode.InvalidColumnReference, "ORDER BY position %d is not in select list", v)
				}
				col = int(v) - 1
			} else if cn, ok := o.Expr.(*ast.ColumnNameExpr); ok && cn.Name.Table.O == "" {
				for i, c := range cols {
					if c.Name == cn.Name.Name.O {
						col = i
						break
					}
				}
			}
			if col < 0 {
				x, err := b.bind(o.Expr, sc, h)
				if err != nil {
					return nil, err
				}
				exprs = append(exprs, x)
				col = len(exprs) - 1
			}
			q.Order = append(q.Order, p.orderItem(col, o))
		}
	}
	var onCols []int
	if distinctOn != nil {
		var err error
		if exprs, onCols, err = p.distinctOnCols(b, sc, h, distinctOn, cols, exprs, q.Order); err != nil {
			return nil, err
		}
	}
	all := make([]types.Column, len(exprs))
	copy(all, cols)
	for i := len(cols); i < len(exprs); i++ {
		all[i] = types.Column{Name: "?order?", Type: exprs[i].Type()}
	}
	out := p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{in}, Exprs: exprs, Cols: all})
	if distinctOn != nil {
		out = p.planDistinctOn(out, onCols, q.Order)
	}
	if s.Distinct {
		if len(exprs) != len(cols) {
			return nil, pgerror.New(pgcode.InvalidColumnReference, "for SELECT DISTINCT, ORDER BY expressions must appear in select list")
		}
		g := make([]int, len(cols))
		for i := range g {
			g[i] = i
		}
		out = p.plan.Add(&spec.Node{Kind: spec.Agg, Inputs: []int{out}, GroupBy: g, Cols: cols})
		q.Key = g
	}
	if s.Limit != nil {
		if err := p.limit(s.Limit, q); err != nil {
			return nil, err
		}
		p.planTopN(q)
	}
	return q, nil
}

func (p *Planner) limit(l *ast.Limit, q *Query) error {
	if l.Count != nil {
		if u, ok := l.Count.(ast.ValueExpr); ok {
			if x, ok := u.GetValue().(uint64); ok && x > 1<<62 {
				l = &ast.Limit{Offset: l.Offset} // OFFSET alone
			}
		}
	}
	if l.Count != nil {
		v, ok := intLiteral(l.Count)
		if !ok || v < 0 {
			return pgerror.Unsupported("LIMIT must be a non-negative integer constant")
		}
		if v >= parser.TiesBias {
			v -= parser.TiesBias
			if len(q.Order) == 0 {
				return pgerror.New(pgcode.Syntax, "WITH TIES cannot be specified without ORDER BY clause")
			}
			q.ties = true
		}
		q.Limit = v
	}
	if l.Offset != nil {
		v, ok := intLiteral(l.Offset)
		if !ok || v < 0 {
			return pgerror.Unsupported("OFFSET must be a non-negative integer constant")
		}
		q.Offset = v
	}
	return nil
}

type aggCollector struct {
	aggs    *[]*ast.AggregateFuncExpr
	filters *[]ast.ExprNode
}

func (c *aggCollector) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.AggregateFuncExpr:
		*c.aggs = append(*c.aggs, x)
		*c.filters = append(*c.filters, nil)
		return n, true
	case *ast.FuncCallExpr:
		if x.FnName.L == "__pg_filter" && len(x.Args) == 2 {
			if a, ok := x.Args[0].(*ast.AggregateFuncExpr); ok {
				*c.aggs = append(*c.aggs, a)
				*c.filters = append(*c.filters, x.Args[1])
				return n, true
			}
		}
	case *ast.SubqueryExpr:
		return n, true
	}
	return n, false
}

func (c *aggCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// planAgg builds Project(group exprs, agg args, filters) → HashAgg and
// returns the hook that maps aggregates and group expressions of the
// select list onto the aggregation's output. With grouping sets (gs) there
// is one HashAgg per set and a Union of them (groupingsets.go).
func (p *Planner) planAgg(b *binder, in int, sc *scope, gb *ast.GroupByClause, gs *groupingSets, aggs []*ast.AggregateFuncExpr, filters []ast.ExprNode) (int, *scope, hook, []int, error) {
	var pre []spec.Expr
	var groupStr []string
	var items []*ast.ByItem
	if gb != nil {
		items = gb.Items
	}
	itemCol := make([]int, len(items))
	for i, it := range items {
		// GROUP BY may name an output column position; Postgres also allows
		// output aliases, which we leave for later.
		x, err := b.bind(it.Expr, sc, nil)
		if err != nil {
			return 0, nil, nil, nil, err
		}
		if gs != nil {
			// The sets refer to each expression once.
			if itemCol[i] = indexOfStr(groupStr, x.String()); itemCol[i] >= 0 {
				continue
			}
			itemCol[i] = len(pre)
		}
		pre = append(pre, x)
		groupStr = append(groupStr, x.String())
	}
	var sets [][]int
	if gs != nil {
		sets = gs.boundSets(itemCol)
	} else {
		sortGroupCols(pre, groupStr)
	}
	ng := len(pre)
	var calls []spec.AggCall
	aggIndex := map[*ast.AggregateFuncExpr]int{}
	for i, a := range aggs {
		call := spec.AggCall{Func: lower(a.F), Arg: -1, Distinct: a.Distinct, Filter: -1}
		if isBatchAgg(call.Func) {
			if err := p.bindBatchAgg(b, a, filters[i], sc, &call, &pre); err != nil {
				return 0, nil, nil, nil, err
			}
			aggIndex[a] = len(calls)
			calls = append(calls, call)
			continue
		}
		if isExtAgg(call.Func) {
			if err := p.bindExtAgg(b, a, filters[i], sc, &call, &pre); err != nil {
				return 0, nil, nil, nil, err
			}
			aggIndex[a] = len(calls)
			calls = append(calls, call)
			continue
		}
		switch call.Func {
		case "count", "sum", "avg", "min", "max":
		default:
			return 0, nil, nil, nil, pgerror.Unsupported("aggregate function %s", a.F)
		}
		if len(a.Args) != 1 {
			return 0, nil, nil, nil, pgerror.New(pgcode.UndefinedFunction, "function %s with %d arguments does not exist", a.F, len(a.Args))
		}
		arg := a.Args[0]
		if call.Func == "count" && !a.Distinct {
			if v, ok := arg.(ast.ValueExpr); ok && v.GetValue() != nil {
				call.Func = "count_star"
			}
		}
		if call.Func != "count_star" {
			x, err := b.bind(arg, sc, nil)
			if err != nil {
				return 0, nil, nil, nil, err
			}
			if x.Type().Fam == types.Unknown {
				if x, err = b.castTo(x, types.TText); err != nil {
					return 0, nil, nil, nil, err
				}
			}
			call.Arg = addPre(&pre, x)
			t, err := aggType(call.Func, x.Type())
			if err != nil {
				return 0, nil, nil, nil, err
			}
			call.T = t
		} else {
			call.T = types.TInt8
		}
		if call.Func == "count" {
			call.T = types.TInt8
		}
		if filters[i] != nil {
			f, err := b.bind(filters[i], sc, nil)
			if err != nil {
				return 0, nil, nil, nil, err
			}
			if f, err = b.castTo(f, types.TBool); err != nil {
				return 0, nil, nil, nil, err
			}
			call.Filter = addPre(&pre, f)
		}
		aggIndex[a] = len(calls)
		calls = append(calls, call)
	}
	preCols := make([]types.Column, len(pre))
	for i, e := range pre {
		preCols[i] = types.Column{Name: e.String(), Type: e.Type()}
	}
	proj := p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{in}, Exprs: pre, Cols: preCols})
	out := &scope{}
	gidx := make([]int, ng)
	for i := 0; i < ng; i++ {
		gidx[i] = i
		name := preCols[i].Name
		if r, ok := pre[i].(*spec.ColRef); ok {
			name = sc.cols[r.Idx].name
		}
		out.cols = append(out.cols, scopeCol{name: name, t: pre[i].Type()})
	}
	for _, c := range calls {
		out.cols = append(out.cols, scopeCol{name: aggName(c.Func), t: c.T})
	}
	var agg int
	if gs != nil {
		agg = p.planSetAggs(proj, sets, ng, calls, out)
		gidx = nil // duplicate sets repeat rows
	} else {
		aggNode := &spec.Node{Kind: spec.Agg, Inputs: []int{proj}, GroupBy: gidx, Aggs: calls, Cols: out.columns()}
		if p.Streaming {
			aggNode.InputAppendOnly = p.AppendOnlyRel != nil && AppendOnly(p.plan, proj, p.AppendOnlyRel)
		}
		agg = p.plan.Add(aggNode)
	}
	setCol := ng + len(calls)
	h := func(e ast.ExprNode) (spec.Expr, bool, error) {
		if fc, ok := e.(*ast.FuncCallExpr); ok && fc.FnName.L == "grouping" {
			x, err := b.groupingCall(fc, sc, groupStr, sets, setCol)
			return x, err == nil, err
		}
		switch x := e.(type) {
		case *ast.AggregateFuncExpr:
			i, ok := aggIndex[x]
			if !ok {
				return nil, false, pgerror.New(pgcode.GroupingError, "aggregate function calls cannot be nested")
			}
			return &spec.ColRef{Idx: ng + i, T: calls[i].T, Name: aggName(calls[i].Func)}, true, nil
		case *ast.FuncCallExpr:
			if x.FnName.L == "__pg_filter" && len(x.Args) == 2 {
				if a, ok := x.Args[0].(*ast.AggregateFuncExpr); ok {
					i := aggIndex[a]
					return &spec.ColRef{Idx: ng + i, T: calls[i].T, Name: aggName(calls[i].Func)}, true, nil
				}
			}
		case ast.ValueExpr:
			return nil, false, nil
		}
		// A group expression, bound over the input, is a column of the output.
		if bound, err := b.bind(e, sc, nil); err == nil {
			for i, g := range groupStr {
				if g == bound.String() {
					return &spec.ColRef{Idx: i, T: pre[i].Type(), Name: out.cols[i].name}, true, nil
				}
			}
		}
		if cn, ok := e.(*ast.ColumnNameExpr); ok {
			if _, err := sc.resolve(cn.Name.Table.O, cn.Name.Name.O); err != nil {
				return nil, false, err
			}
			return nil, false, pgerror.New(pgcode.GroupingError, "column %q must appear in the GROUP BY clause or be used in an aggregate function", cn.Name.Name.O)
		}
		return nil, false, nil
	}
	return agg, out, h, gidx, nil
}

// addPre returns the column of the aggregation's input projection that
// computes x, adding one unless an equal expression is there already (the
// same argument or FILTER of several aggregates is computed once: Nexmark
// q16 has 12 aggregates over 3 filters and 2 columns).
func addPre(pre *[]spec.Expr, x spec.Expr) int {
	for i, e := range *pre {
		if reflect.DeepEqual(e, x) {
			return i
		}
	}
	*pre = append(*pre, x)
	return len(*pre) - 1
}

// sortGroupCols puts a GROUP BY of plain columns in input column order
// (keeping groupStr in step): the grouping is the same whatever order the
// query lists them in, and two aggregations of one input that group by the
// same columns become the same node, which the plan then computes once
// (shareCommon; Nexmark q5 counts bids per auction and window twice).
func sortGroupCols(pre []spec.Expr, groupStr []string) {
	idx := make([]int, len(pre))
	for i, e := range pre {
		r, ok := e.(*spec.ColRef)
		if !ok {
			return
		}
		idx[i] = r.Idx
	}
	// Insertion sort: GROUP BY lists are short.
	for i := 1; i < len(pre); i++ {
		for j := i; j > 0 && idx[j] < idx[j-1]; j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
			pre[j], pre[j-1] = pre[j-1], pre[j]
			groupStr[j], groupStr[j-1] = groupStr[j-1], groupStr[j]
		}
	}
}

func aggType(fn string, t types.T) (types.T, error) {
	switch fn {
	case "count":
		return types.TInt8, nil
	case "min", "max":
		// Like every Postgres aggregate, the result has no type modifier:
		// max(numeric(12,2)) is numeric.
		if t.Fam == types.Numeric {
			return types.TNumeric, nil
		}
		return types.T{Fam: t.Fam}, nil
	case "sum":
		switch t.Fam {
		case types.Int2, types.Int4:
			return types.TInt8, nil
		case types.Int8, types.Numeric:
			return types.TNumeric, nil
		case types.Float4:
			return types.TFloat4, nil
		case types.Float8:
			return types.TFloat8, nil
		case types.Interval:
			return types.TInterval, nil
		}
	case "avg":
		switch t.Fam {
		case types.Int2, types.Int4, types.Int8, types.Numeric:
			return types.TNumeric, nil
		case types.Float4, types.Float8:
			return types.TFloat8, nil
		case types.Interval:
			return types.TInterval, nil
		}
	}
	return types.TUnknown, pgerror.New(pgcode.UndefinedFunction, "function %s(%s) does not exist", fn, t)
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

func (p *Planner) planValues(lists []*ast.RowExpr) (*Query, error) {
	b := &binder{p: p}
	var rows []types.Row
	var cols []types.Column
	// Each column takes the common type of its rows, as PostgreSQL's
	// VALUES does: ('{"a":1}'::jsonb), ('[]') is a jsonb column.
	consts := make([][]*spec.Const, len(lists))
	var colTypes [][]types.T
	for ri, l := range lists {
		if len(l.Values) != len(lists[0].Values) {
			return nil, pgerror.New(pgcode.Syntax, "VALUES lists must all be the same length")
		}
		consts[ri] = make([]*spec.Const, len(l.Values))
		for i, v := range l.Values {
			x, err := b.bind(v, &scope{}, nil)
			if err != nil {
				return nil, err
			}
			c, ok := x.(*spec.Const)
			if !ok {
				if c, ok, err = foldValuesExpr(x, p.loc()); err != nil {
					return nil, err
				} else if !ok {
					return nil, pgerror.Unsupported("non-constant VALUES")
				}
			}
			consts[ri][i] = c
			if i >= len(colTypes) {
				colTypes = append(colTypes, nil)
			}
			colTypes[i] = append(colTypes[i], c.T)
		}
	}
	for i, ts := range colTypes {
		t, err := eval.CommonTypeFor("VALUES", ts)
		if err != nil {
			return nil, err
		}
		cols = append(cols, types.Column{Name: "column" + itoa(i+1), Type: t})
	}
	for _, cs := range consts {
		row := make(types.Row, len(cs))
		for i, c := range cs {
			x, err := b.castTo(c, cols[i].Type)
			if err != nil {
				return nil, err
			}
			cc, ok := x.(*spec.Const)
			if !ok {
				return nil, pgerror.Unsupported("non-constant VALUES")
			}
			row[i] = cc.D
		}
		rows = append(rows, row)
	}
	p.plan.Add(&spec.Node{Kind: spec.Values, Rows: rows, Cols: cols})
	return &Query{Columns: cols, Limit: -1}, nil
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

func (p *Planner) planSetOpr(s *ast.SetOprStmt) (*Query, error) {
	if s.With != nil && s.With.IsRecursive {
		return nil, errRecursiveCTE()
	}
	p.pushCTEs(s.With)
	defer p.popCTEs(s.With)
	var branches []int
	var qs []*Query
	distinct := false
	for i, sel := range s.SelectList.Selects {
		if i > 0 {
			var t *ast.SetOprType
			switch x := sel.(type) {
			case *ast.SelectStmt:
				t = x.AfterSetOperator
			case *ast.SetOprSelectList:
				t = x.AfterSetOperator
			}
			if t != nil {
				switch *t {
				case ast.UnionAll:
				case ast.Union:
					distinct = true
				default:
					return nil, pgerror.Unsupported("%s", t.String())
				}
			}
		}
		var q *Query
		var err error
		switch x := sel.(type) {
		case *ast.SelectStmt:
			q, err = p.planSelect(x)
		case *ast.SetOprSelectList:
			q, err = p.planSetOpr(&ast.SetOprStmt{SelectList: x, With: x.With})
		default:
			err = pgerror.Unsupported("set operation branch %T", sel)
		}
		if err != nil {
			return nil, err
		}
		if len(qs) > 0 && len(q.Columns) != len(qs[0].Columns) {
			return nil, pgerror.New(pgcode.Syntax, "each UNION query must have the same number of columns")
		}
		qs = append(qs, q)
		branches = append(branches, p.plan.Root())
	}
	cols := make([]types.Column, len(qs[0].Columns))
	for c := range cols {
		ts := make([]types.T, len(qs))
		for i, q := range qs {
			ts[i] = q.Columns[c].Type
		}
		t, err := eval.CommonTypeFor("UNION", ts)
		if err != nil {
			return nil, err
		}
		cols[c] = types.Column{Name: qs[0].Columns[c].Name, Type: t}
	}
	b := &binder{p: p}
	for i, br := range branches {
		exprs := make([]spec.Expr, len(cols))
		for c := range cols {
			x, err := b.castTo(&spec.ColRef{Idx: c, T: qs[i].Columns[c].Type, Name: qs[i].Columns[c].Name}, cols[c].Type)
			if err != nil {
				return nil, err
			}
			exprs[c] = x
		}
		branches[i] = p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{br}, Exprs: exprs, Cols: cols})
	}
	out := p.plan.Add(&spec.Node{Kind: spec.Union, Inputs: branches, Cols: cols})
	q := &Query{Columns: cols, Limit: -1}
	if distinct {
		g := make([]int, len(cols))
		for i := range g {
			g[i] = i
		}
		p.plan.Add(&spec.Node{Kind: spec.Agg, Inputs: []int{out}, GroupBy: g, Cols: cols})
		q.Key = g
	}
	if s.OrderBy != nil {
		for _, o := range s.OrderBy.Items {
			col := -1
			if v, ok := intLiteral(o.Expr); ok && v >= 1 && int(v) <= len(cols) {
				col = int(v) - 1
			} else if cn, ok := o.Expr.(*ast.ColumnNameExpr); ok {
				for i, c := range cols {
					if c.Name == cn.Name.Name.O {
						col = i
					}
				}
			}
			if col < 0 {
				return nil, pgerror.Unsupported("ORDER BY of a UNION must name an output column")
			}
			q.Order = append(q.Order, p.orderItem(col, o))
		}
	}
	if s.Limit != nil {
		if err := p.limit(s.Limit, q); err != nil {
			return nil, err
		}
		p.planTopN(q)
	}
	return q, nil
}

func aggName(f string) string {
	if f == "count_star" {
		return "count"
	}
	return f
}

// orderItem builds one ORDER BY key; NULLs sort as larger than any value
// unless NULLS FIRST/LAST says otherwise.
func (p *Planner) orderItem(col int, o *ast.ByItem) spec.OrderItem {
	it := spec.OrderItem{Col: col, Desc: o.Desc, NullsFirst: o.Desc}
	if p.Nulls != nil {
		switch p.Nulls(o) {
		case 1:
			it.NullsFirst = true
		case 2:
			it.NullsFirst = false
		}
	}
	return it
}
