package planner

import (
	"sluice/sql/acl"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/exec/spec"
	"sluice/planner/cat"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Planner plans one statement.
type Planner struct {
	// clockOK lets a view's WHERE call now() (temporal filters).
	clockOK bool
	Cat     cat.Catalog
	// Streaming: building a materialized view (sources may be read).
	Streaming bool
	// ParseType parses a type name (sql/parser.ParseType).
	ParseType func(string) (types.T, error)
	// ParseQuery parses the defining query of a plain view.
	ParseQuery func(string) (ast.StmtNode, error)
	// ParseView, when set, parses a plain view's query with the dialect
	// layer's side tables (its TUMBLE/HOP and other FROM functions, NULLS
	// order, column alias lists), which the view is then planned with.
	ParseView func(string) (*parser.Query, error)
	// Nulls returns the NULLS FIRST/LAST choice of an ORDER BY item (0
	// default, 1 first, 2 last); nil = defaults.
	Nulls func(*ast.ByItem) int
	// Params holds the types of $1…$n, given or inferred.
	Params []types.T
	// TableFuncs maps the placeholder table names the dialect layer writes
	// for set-returning functions in FROM to the calls
	// (sql/parser.Query.TableFuncs).
	TableFuncs map[string]parser.TableFunc
	// ColumnAliases holds the column alias lists of FROM items
	// (sql/parser.Query.ColumnAliases): `generate_series(1, 3) AS s(r)`.
	ColumnAliases map[*ast.TableSource][]string
	// EmitOnWindowClose plans a view's aggregation to emit each window's
	// rows once, when the watermark closes it (PlanView).
	EmitOnWindowClose bool
	// SinkInto, for a sink into a table, are the target columns in the
	// order of the sink's output (PlanSink casts to their types).
	SinkInto []types.Column
	// Role is the role whose privileges the relations read and written
	// are checked for, through Access (privilege.go); "" checks nothing.
	Role   string
	Access func(role string, rel *cat.Relation, priv acl.Privilege) error

	plan *spec.Plan
	keys map[int][]int // node -> unique key columns
	// ctes holds the CTE lists of the WITH clauses in scope, outermost
	// first.
	ctes [][]*ast.CommonTableExpression
	// depth is the binder's current recursion depth (see maxBindDepth)
	// and inlining the SQL functions being inlined, outermost first.
	depth    int
	inlining []string
	// outer holds the enclosing queries of the subquery being planned,
	// outermost first (see subquery.go).
	outer []*outerLevel
	// subCols holds the scalar subqueries of a view already joined on as
	// columns, while the expression holding them is bound (decorrelate.go).
	subCols map[*ast.SubqueryExpr]spec.Expr
	// Deps lists the relations the statement reads.
	Deps []uint64
	// AppendOnlyRel reports whether a relation's change stream never
	// retracts (nil: assume it may).
	AppendOnlyRel func(rel uint64) bool
	// Funcs finds a SQL function by name (nil: none).
	Funcs func(name string) *UserFunc
	// Returning and OnConflict are the DML statement's RETURNING and ON
	// CONFLICT clauses (sql/parser.Query), nil when absent.
	Returning  *parser.Returning
	OnConflict *parser.OnConflict
	// Overriding is INSERT's OVERRIDING SYSTEM|USER VALUE ("system",
	// "user" or "").
	Overriding string
	// TimeZone is the session's TimeZone setting ("" or "UTC": UTC): it
	// is recorded in the plan (spec.Plan.TimeZone) and constants are
	// folded in it.
	TimeZone string
}

// loc returns the zone of TimeZone (nil: UTC).
func (p *Planner) loc() *time.Location {
	if p.TimeZone == "" {
		return nil
	}
	loc, _, _ := types.ParseZone(p.TimeZone)
	return loc
}

// Query is a planned SELECT or view body.
type Query struct {
	Plan    *spec.Plan
	Columns []types.Column // visible columns
	Order   []spec.OrderItem
	Limit   int64 // -1 = none
	Offset  int64
	Key     []int // unique key of the output (nil = unknown)
	// ties: FETCH FIRST Limit ROWS WITH TIES (planned by planTopN).
	ties bool
}

func (p *Planner) param(n int) spec.Expr {
	for len(p.Params) < n {
		p.Params = append(p.Params, types.TUnknown)
	}
	return &spec.Param{N: n, T: p.Params[n-1]}
}

func (p *Planner) setParamType(n int, t types.T) {
	for len(p.Params) < n {
		p.Params = append(p.Params, types.TUnknown)
	}
	if p.Params[n-1].Fam == types.Unknown {
		p.Params[n-1] = t
	}
}

// PlanQuery plans a SELECT or set operation.
func (p *Planner) PlanQuery(stmt ast.StmtNode) (*Query, error) {
	p.plan = &spec.Plan{}
	if !strings.EqualFold(p.TimeZone, "UTC") {
		p.plan.TimeZone = p.TimeZone
	}
	p.keys = map[int][]int{}
	stmt = rewriteBatchAggs(stmt)
	q, err := p.planResultSet(stmt)
	if err != nil {
		return nil, err
	}
	if err := p.regclassOutput(q); err != nil {
		return nil, err
	}
	q.Plan = p.plan
	return q, nil
}

// PlanView plans the body of a materialized view with relation id and
// name: the query, then a Materialize root keyed by the query's unique key.
func (p *Planner) PlanView(stmt ast.StmtNode, id uint64, name string) (*Query, error) {
	p.Streaming = true
	q, err := p.PlanQuery(stmt)
	if err != nil {
		return nil, err
	}
	root := p.plan.Root()
	if p.EmitOnWindowClose {
		if err := p.markEOWC(root); err != nil {
			return nil, err
		}
	}
	// Drop hidden ORDER BY columns: a view is unordered.
	if len(p.plan.Nodes[root].Cols) != len(q.Columns) {
		exprs := make([]spec.Expr, len(q.Columns))
		for i, c := range q.Columns {
			exprs[i] = &spec.ColRef{Idx: i, T: c.Type, Name: c.Name}
		}
		root = p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{root}, Exprs: exprs, Cols: q.Columns})
	}
	p.plan.Add(&spec.Node{Kind: spec.Materialize, Inputs: []int{root}, Rel: id, RelName: name, Key: q.Key, Cols: q.Columns})
	optimizeStreaming(p.plan)
	q.Order, q.Limit, q.Offset = nil, -1, 0
	return q, nil
}

// castToTarget casts the rows of a sink into a table (p.SinkInto) to the
// target columns' types, by the casts an INSERT would make (42804 for any
// other), and returns the new root.
func (p *Planner) castToTarget(q *Query, root int, name string) (int, error) {
	if len(q.Columns) != len(p.SinkInto) {
		return 0, pgerror.New(pgcode.Syntax, "sink %s has %d columns but its target has %d", name, len(q.Columns), len(p.SinkInto)).
			WithHint("List the target columns after INTO t (…), or select one expression per column of the table.")
	}
	b := &binder{p: p}
	exprs := make([]spec.Expr, len(q.Columns))
	cast := false
	for i, c := range q.Columns {
		var err error
		if exprs[i], err = b.assignCast(&spec.ColRef{Idx: i, T: c.Type, Name: c.Name}, p.SinkInto[i].Type, p.SinkInto[i].Name); err != nil {
			return 0, err
		}
		cast = cast || c.Type != p.SinkInto[i].Type
		q.Columns[i] = types.Column{Name: p.SinkInto[i].Name, Type: p.SinkInto[i].Type}
	}
	if cast || len(p.plan.Nodes[root].Cols) != len(q.Columns) {
		root = p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{root}, Exprs: exprs, Cols: q.Columns})
	}
	return root, nil
}

// PlanSink plans the body of sink id: the query, then a Sink root. The
// caller fills the root's Sink spec and Key.
func (p *Planner) PlanSink(stmt ast.StmtNode, id uint64, name string) (*Query, error) {
	p.Streaming = true
	q, err := p.PlanQuery(stmt)
	if err != nil {
		return nil, err
	}
	root := p.plan.Root()
	if p.EmitOnWindowClose {
		if err := p.markEOWC(root); err != nil {
			return nil, err
		}
	}
	if p.SinkInto != nil {
		if root, err = p.castToTarget(q, root, name); err != nil {
			return nil, err
		}
	}
	if len(p.plan.Nodes[root].Cols) != len(q.Columns) {
		exprs := make([]spec.Expr, len(q.Columns))
		for i, c := range q.Columns {
			exprs[i] = &spec.ColRef{Idx: i, T: c.Type, Name: c.Name}
		}
		root = p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{root}, Exprs: exprs, Cols: q.Columns})
	}
	p.plan.Add(&spec.Node{Kind: spec.Sink, Inputs: []int{root}, Rel: id, RelName: name, Cols: q.Columns})
	optimizeStreaming(p.plan)
	q.Order, q.Limit, q.Offset = nil, -1, 0
	return q, nil
}

// optimizeStreaming runs the rewrites of a finished view or sink plan, in
// order: column pruning at joins and sources, projection folding, the
// window max joins and top counts, then sharing of common sub-plans (last, so the node order, which the
// operators' state ids follow, is a pure function of the query).
func optimizeStreaming(plan *spec.Plan) {
	pruneJoinSources(plan)
	pruneSources(plan)
	foldProjects(plan)
	planWindowMaxJoins(plan)
	planWindowTopCounts(plan)
	shareCommon(plan)
}

func upsertFormat(s *spec.SourceSpec) bool {
	return s != nil && strings.EqualFold(s.Options["format"], "upsert")
}

// AppendOnly reports whether node i of plan never retracts a row:
// appendOnly says it of the relations the plan subscribes to.
func AppendOnly(plan *spec.Plan, i int, appendOnly func(rel uint64) bool) bool {
	n := plan.Nodes[i]
	switch n.Kind {
	case spec.SourceRead:
		return n.Source == nil || !(upsertFormat(n.Source) || strings.EqualFold(n.Source.Options["format"], "debezium"))
	case spec.Subscribe:
		return appendOnly(n.Rel)
	case spec.Values:
		return true
	case spec.Agg:
		// EMIT ON WINDOW CLOSE emits each group's row once, final.
		return n.EOWC
	case spec.Window:
		// So does a window's (over an append-only input).
		return n.EOWC && AppendOnly(plan, n.Inputs[0], appendOnly)
	case spec.Filter, spec.Project, spec.Union, spec.TableFunc, spec.Sink, spec.Materialize, spec.TimeWindow:
		for _, in := range n.Inputs {
			if !AppendOnly(plan, in, appendOnly) {
				return false
			}
		}
		return true
	case spec.Join:
		// An ASOF join revises the rows it emitted when a nearer right row
		// comes.
		if n.EOWC {
			// Each row emitted once, final (an outer join's too).
			return AppendOnly(plan, n.Inputs[0], appendOnly) && AppendOnly(plan, n.Inputs[1], appendOnly)
		}
		if n.JoinKind != spec.InnerJoin || n.AsOf {
			return false
		}
		return AppendOnly(plan, n.Inputs[0], appendOnly) && AppendOnly(plan, n.Inputs[1], appendOnly)
	}
	return false
}

func (p *Planner) planResultSet(n ast.Node) (*Query, error) {
	switch s := n.(type) {
	case *ast.SelectStmt:
		return p.planSelect(s)
	case *ast.SetOprStmt:
		return p.planSetOpr(s)
	}
	return nil, pgerror.Unsupported("statement %T as a query", n)
}

// pushCTEs makes a WITH clause's CTEs visible to the query it heads.
func (p *Planner) pushCTEs(w *ast.WithClause) {
	if w == nil {
		return
	}
	p.ctes = append(p.ctes, w.CTEs)
}

func (p *Planner) popCTEs(w *ast.WithClause) {
	if w != nil {
		p.ctes = p.ctes[:len(p.ctes)-1]
	}
}

// lookupCTE finds the innermost CTE called name and returns it with the
// CTE scope its body is planned in: as in PostgreSQL, a non-recursive CTE
// sees the CTEs of enclosing queries and those written before it in its
// own WITH, never itself or later ones (so in `WITH t AS (SELECT * FROM
// t)` the inner t is the table, not the CTE).
func (p *Planner) lookupCTE(name string) (*ast.CommonTableExpression, [][]*ast.CommonTableExpression) {
	for i := len(p.ctes) - 1; i >= 0; i-- {
		// The last CTE of a name wins, as duplicates are refused anyway.
		for j := len(p.ctes[i]) - 1; j >= 0; j-- {
			if c := p.ctes[i][j]; c.Name.L == name {
				vis := make([][]*ast.CommonTableExpression, i+1)
				copy(vis, p.ctes[:i])
				vis[i] = p.ctes[i][:j:j]
				return c, vis
			}
		}
	}
	return nil, nil
}

// planFrom plans a FROM item and returns its node and scope.
func (p *Planner) planFrom(n ast.ResultSetNode) (int, *scope, error) {
	switch t := n.(type) {
	case *ast.Join:
		if t.Right == nil {
			return p.planFrom(t.Left)
		}
		return p.planJoin(t)
	case *ast.TableSource:
		idx, sc, err := p.planTableSource(t)
		if err != nil {
			return 0, nil, err
		}
		if names, ok := p.ColumnAliases[t]; ok {
			if len(names) > len(sc.cols) {
				return 0, nil, pgerror.New(pgcode.InvalidColumnReference,
					"table \"%s\" has %d columns available but %d columns specified", t.AsName.O, len(sc.cols), len(names))
			}
			for i, n := range names {
				sc.cols[i].name = n
			}
		}
		return idx, sc, nil
	}
	return 0, nil, pgerror.Unsupported("FROM item %T", n)
}

func (p *Planner) planTableSource(t *ast.TableSource) (int, *scope, error) {
	alias := t.AsName.O
	switch src := t.Source.(type) {
	case *ast.TableName:
		if alias == "" {
			alias = src.Name.O
		}
		return p.planTable(src, alias)
	case *ast.SelectStmt, *ast.SetOprStmt:
		return p.planDerived(src, alias, nil)
	case *ast.Join:
		return p.planFrom(src)
	}
	return 0, nil, pgerror.Unsupported("FROM item %T", t.Source)
}

func (p *Planner) planDerived(q ast.Node, alias string, colNames []ast.CIStr) (int, *scope, error) {
	sub, err := p.planResultSet(q)
	if err != nil {
		return 0, nil, err
	}
	idx := p.plan.Root()
	if sub.Limit >= 0 || sub.Offset > 0 {
		if p.Streaming {
			return 0, nil, pgerror.Unsupported("ORDER BY … LIMIT in a subquery of a materialized view")
		}
		idx = p.plan.Add(&spec.Node{Kind: spec.TopN, Inputs: []int{idx}, Order: sub.Order, Limit: sub.Limit, Offset: sub.Offset, Cols: p.plan.Nodes[idx].Cols})
	}
	if len(p.plan.Nodes[idx].Cols) != len(sub.Columns) {
		exprs := make([]spec.Expr, len(sub.Columns))
		for i, c := range sub.Columns {
			exprs[i] = &spec.ColRef{Idx: i, T: c.Type, Name: c.Name}
		}
		idx = p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{idx}, Exprs: exprs, Cols: sub.Columns})
	}
	sc := &scope{}
	for i, c := range sub.Columns {
		name := c.Name
		if i < len(colNames) {
			name = colNames[i].O
		}
		sc.cols = append(sc.cols, scopeCol{table: alias, name: name, t: c.Type, rel: c.TableOID, att: c.AttNum})
	}
	return idx, sc, nil
}

func (p *Planner) planTable(tn *ast.TableName, alias string) (int, *scope, error) {
	if tn.Schema.O == "" {
		if c, vis := p.lookupCTE(tn.Name.L); c != nil {
			saved := p.ctes
			p.ctes = vis
			defer func() { p.ctes = saved }()
			return p.planDerived(c.Query.Query, alias, c.ColNameList)
		}
	}
	if isTableFunc(tn) {
		return p.planTableFunc(tn, alias)
	}
	if isTimeWindow(tn) {
		return p.planTimeWindow(tn, alias)
	}
	if isSession(tn) {
		return p.planSession(tn, alias)
	}
	name, temporal := strings.CutPrefix(tn.Name.O, parser.LookupPrefix)
	if temporal {
		if alias == tn.Name.O {
			alias = name
		}
		tn2 := *tn
		tn2.Name = ast.NewCIStr(name)
		tn = &tn2
	}
	rel, err := p.Cat.Resolve(tn.Schema.O, tn.Name.O)
	if err != nil {
		return 0, nil, err
	}
	if err := p.checkAccess(rel, acl.Select); err != nil {
		return 0, nil, err
	}
	sc := &scope{}
	for i, c := range rel.Columns {
		sc.cols = append(sc.cols, scopeCol{table: alias, name: c.Name, t: c.Type, rel: rel.OID, att: int16(i + 1)})
	}
	p.Deps = append(p.Deps, rel.ID)
	var node *spec.Node
	switch rel.Kind {
	case cat.Table, cat.MaterializedView:
		node = &spec.Node{Kind: spec.Subscribe, Rel: rel.ID, RelName: rel.Name, Cols: rel.Columns}
	case cat.Source:
		if !p.Streaming {
			return 0, nil, pgerror.Unsupported("cannot SELECT from source %q directly", rel.Name).
				WithHint("create a materialized view over it and query the view")
		}
		node = &spec.Node{Kind: spec.SourceRead, Source: rel.Source, Cols: rel.Columns}
		if upsertFormat(rel.Source) {
			if len(rel.Source.Key) == 0 {
				return 0, nil, pgerror.New(pgcode.InvalidObjectDefinition, "FORMAT UPSERT source %q has no primary key", rel.Name)
			}
			in := p.plan.Add(node)
			node = &spec.Node{Kind: spec.UpsertKey, Inputs: []int{in}, Key: rel.Source.Key, Cols: rel.Columns}
		}
	case cat.System:
		rows, err := rel.Rows()
		if err != nil {
			return 0, nil, err
		}
		if p.Streaming {
			return 0, nil, pgerror.Unsupported("materialized views over system tables")
		}
		node = &spec.Node{Kind: spec.Values, Rows: rows, Cols: rel.Columns}
	case cat.View:
		q, side, err := p.parseView(rel.Query)
		if err != nil {
			return 0, nil, err
		}
		var idx int
		var vsc *scope
		err = p.asOwner(rel.Owner, func() (err error) {
			return p.withSideTables(side, func() error {
				idx, vsc, err = p.planDerived(q, alias, nil)
				return err
			})
		})
		if err != nil {
			return 0, nil, err
		}
		if rel.EmitOnWindowClose && p.Streaming {
			if err := p.markEOWC(idx); err != nil {
				return 0, nil, pgerror.Wrap(err, pgcode.FeatureNotSupported, "view %q", rel.Name)
			}
		}
		if n := len(rel.Columns); n > 0 && len(vsc.cols) > n {
			// Its query's * now covers a column added to a table since
			// (ALTER TABLE ADD COLUMN): as in PostgreSQL, a view keeps the
			// columns it was created with, which come first.
			vsc = &scope{cols: vsc.cols[:n:n]}
			idx = p.projectPrefix(idx, vsc)
		}
		for i := range vsc.cols { // a view's columns are its own
			vsc.cols[i].rel, vsc.cols[i].att = rel.OID, int16(i+1)
		}
		return idx, vsc, nil
	default:
		return 0, nil, pgerror.New(pgcode.WrongObjectType, "%q is a %s, not a relation", rel.Name, rel.Kind)
	}
	if temporal {
		if node.Kind != spec.Subscribe {
			return 0, nil, pgerror.Unsupported("FOR SYSTEM_TIME AS OF PROCTIME() on %s %q", rel.Kind, rel.Name).
				WithHint("a lookup join reads a table or materialized view")
		}
		node.Temporal = true
	}
	idx := p.plan.Add(node)
	if rel.Key != nil {
		p.keys[idx] = rel.Key
	}
	return idx, sc, nil
}

func (p *Planner) planJoin(j *ast.Join) (int, *scope, error) {
	li, lsc, err := p.planFrom(j.Left)
	if err != nil {
		return 0, nil, err
	}
	n := len(p.plan.Nodes)
	if ts, tn := lateralFunc(j); ts != nil && p.Streaming {
		return p.planLateralFunc(j, li, lsc, ts, tn)
	}
	ri, rsc, err := p.planFrom(j.Right)
	if err != nil {
		// A set-returning function whose arguments name the FROM items
		// before it: a lateral function (tablefunc.go).
		if ts, tn := lateralFunc(j); ts != nil && isOuterRefErr(err) {
			p.truncatePlan(n)
			return p.planLateralFunc(j, li, lsc, ts, tn)
		}
		// A LATERAL subquery that names the FROM items before it fails
		// alone: it is decorrelated instead (lateral.go).
		if ts, sel := lateralSubquery(j); ts != nil && isOuterRefErr(err) {
			if sel == nil {
				return 0, nil, errLateral("a set operation")
			}
			p.truncatePlan(n)
			return p.planLateral(j, li, lsc, ts, sel)
		}
		return 0, nil, err
	}
	sc := &scope{cols: append(append([]scopeCol{}, lsc.cols...), rsc.cols...)}
	kind := spec.InnerJoin
	switch {
	case j.StraightJoin:
		kind = spec.FullJoin
	case j.Tp == ast.LeftJoin:
		kind = spec.LeftJoin
	case j.Tp == ast.RightJoin:
		kind = spec.RightJoin
	}
	node := &spec.Node{Kind: spec.Join, Inputs: []int{li, ri}, JoinKind: kind, Cols: sc.columns()}
	if j.NaturalJoin {
		return 0, nil, pgerror.Unsupported("NATURAL JOIN")
	}
	if on := asofCond(j); on != nil {
		return p.planAsOf(node, li, ri, lsc, rsc, sc, on)
	}
	var conds []spec.Expr
	var keyExprs []keyExpr
	b := &binder{p: p}
	for _, u := range j.Using {
		l, err := lsc.resolve("", u.Name.O)
		if err != nil {
			return 0, nil, err
		}
		r, err := rsc.resolve("", u.Name.O)
		if err != nil {
			return 0, nil, err
		}
		node.LeftKeys = append(node.LeftKeys, l)
		node.RightKeys = append(node.RightKeys, r)
	}
	if j.On != nil {
		on, err := b.bindBool(j.On.Expr, sc)
		if err != nil {
			return 0, nil, err
		}
		nl := len(lsc.cols)
		for _, c := range conjuncts(on) {
			if f, ok := c.(*spec.Func); ok && f.Name == "=" {
				l, lok := f.Args[0].(*spec.ColRef)
				r, rok := f.Args[1].(*spec.ColRef)
				if lok && rok && l.T == r.T {
					if l.Idx >= nl && r.Idx < nl {
						l, r = r, l
					}
					if l.Idx < nl && r.Idx >= nl {
						node.LeftKeys = append(node.LeftKeys, l.Idx)
						node.RightKeys = append(node.RightKeys, r.Idx-nl)
						continue
					}
				}
				if k, ok := exprKey(f, nl); ok {
					keyExprs = append(keyExprs, k)
					continue
				}
			}
			conds = append(conds, c)
		}
	}
	lookup := p.plan.Nodes[ri].Kind == spec.Subscribe && p.plan.Nodes[ri].Temporal
	if p.plan.Nodes[li].Kind == spec.Subscribe && p.plan.Nodes[li].Temporal {
		return 0, nil, pgerror.Unsupported("a lookup table (FOR SYSTEM_TIME AS OF PROCTIME()) on the left of a join").
			WithHint("put the lookup table on the right")
	}
	if lookup {
		if kind != spec.InnerJoin && kind != spec.LeftJoin {
			return 0, nil, pgerror.Unsupported("%s join with a lookup table", kind)
		}
		node.Temporal = true
	}
	if len(keyExprs) > 0 {
		return p.joinOnExprs(node, li, ri, len(lsc.cols), len(rsc.cols), keyExprs, conds, sc)
	}
	node.Cond = andAll(conds)
	idx := p.plan.Add(node)
	if len(j.Using) > 0 {
		return p.mergeUsing(idx, kind, node.LeftKeys, node.RightKeys, len(lsc.cols), sc)
	}
	return idx, sc, nil
}

// mergeUsing projects the output of a JOIN … USING (c, …) as PostgreSQL
// shows it: one merged column per USING column first (the left input's
// for inner and left joins, the right's for right joins, COALESCE of both
// for full joins), then the inputs' columns, whose USING columns only a
// qualified name reaches.
func (p *Planner) mergeUsing(in int, kind spec.JoinKind, lk, rk []int, nl int, sc *scope) (int, *scope, error) {
	var exprs []spec.Expr
	out := &scope{}
	b := &binder{p: p}
	for i := range lk {
		l, r := sc.cols[lk[i]], sc.cols[nl+rk[i]]
		lref := &spec.ColRef{Idx: lk[i], T: l.t, Name: l.name}
		rref := &spec.ColRef{Idx: nl + rk[i], T: r.t, Name: r.name}
		var e spec.Expr = lref
		switch kind {
		case spec.RightJoin:
			e = rref
		case spec.FullJoin:
			x, err := b.call("coalesce", []spec.Expr{lref, rref})
			if err != nil {
				return 0, nil, err
			}
			e = x
		}
		exprs = append(exprs, e)
		mc := scopeCol{name: l.name, t: e.Type()}
		switch kind {
		case spec.InnerJoin, spec.LeftJoin:
			mc.rel, mc.att = l.rel, l.att
		case spec.RightJoin:
			mc.rel, mc.att = r.rel, r.att
		}
		out.cols = append(out.cols, mc)
	}
	using := map[int]bool{}
	for i := range lk {
		using[lk[i]], using[nl+rk[i]] = true, true
	}
	for i, c := range sc.cols {
		exprs = append(exprs, &spec.ColRef{Idx: i, T: c.t, Name: c.name})
		c.merged = c.merged || using[i]
		out.cols = append(out.cols, c)
	}
	return p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{in}, Exprs: exprs, Cols: out.columns()}), out, nil
}

// pushJoinConds moves each condition of conds (over node in's columns)
// into the inner join that in is, or that it is built on, as a join key
// (an equality of a left and a right column) or as part of the join's
// condition, as deep as the columns it uses allow. It returns the
// conditions it could not place.
func (p *Planner) pushJoinConds(in int, conds []spec.Expr) []spec.Expr {
	n := p.plan.Nodes[in]
	if n.Kind != spec.Join || n.JoinKind != spec.InnerJoin || n.Temporal || n.AsOf || len(conds) == 0 {
		return conds
	}
	nl := len(p.plan.Nodes[n.Inputs[0]].Cols)
	var rest, left, right []spec.Expr
	for _, c := range conds {
		lo, hi, sub := colRange(c)
		switch {
		case sub || lo < 0:
			rest = append(rest, c) // constant or with a subquery: keep above
		case hi < nl:
			left = append(left, c)
		case lo >= nl:
			if m, ok := spec.MapCols(c, func(i int) int { return i - nl }); ok {
				right = append(right, m)
			} else {
				rest = append(rest, c)
			}
		default:
			if f, ok := c.(*spec.Func); ok && f.Name == "=" {
				l, lok := f.Args[0].(*spec.ColRef)
				r, rok := f.Args[1].(*spec.ColRef)
				if lok && rok && l.T == r.T {
					if l.Idx >= nl {
						l, r = r, l
					}
					if l.Idx < nl && r.Idx >= nl {
						n.LeftKeys = append(n.LeftKeys, l.Idx)
						n.RightKeys = append(n.RightKeys, r.Idx-nl)
						continue
					}
				}
			}
			if n.Cond == nil {
				n.Cond = c
			} else {
				n.Cond = andAll([]spec.Expr{n.Cond, c})
			}
		}
	}
	// Conditions on one side filter that side before the join (less state).
	for side, cs := range [][]spec.Expr{left, right} {
		if rest := p.pushJoinConds(n.Inputs[side], cs); len(rest) > 0 {
			ci := n.Inputs[side]
			f := &spec.Node{Kind: spec.Filter, Inputs: []int{ci}, Pred: andAll(rest), Cols: p.plan.Nodes[ci].Cols}
			idx := p.insertAfter(ci, f)
			p.keys[idx] = p.keys[ci]
			n.Inputs[side] = idx
		}
	}
	return rest
}

// insertAfter inserts n into the plan right after node pos, keeping the
// nodes in topological order, and returns its index; later nodes move up
// by one.
func (p *Planner) insertAfter(pos int, n *spec.Node) int {
	nodes := append(p.plan.Nodes, nil)
	copy(nodes[pos+2:], nodes[pos+1:])
	nodes[pos+1] = n
	for i, m := range nodes {
		if i == pos+1 {
			continue
		}
		for k, in := range m.Inputs {
			if in > pos {
				m.Inputs[k] = in + 1
			}
		}
	}
	keys := make(map[int][]int, len(p.keys))
	for k, v := range p.keys {
		if k > pos {
			k++
		}
		keys[k] = v
	}
	p.keys = keys
	p.plan.Nodes = nodes
	return pos + 1
}

// colRange returns the lowest and highest column a condition reads (-1
// if none) and whether it holds a subquery.
func colRange(e spec.Expr) (lo, hi int, sub bool) {
	lo, hi = -1, -1
	spec.Walk(e, func(x spec.Expr) bool {
		switch c := x.(type) {
		case *spec.ColRef:
			if lo < 0 || c.Idx < lo {
				lo = c.Idx
			}
			if c.Idx > hi {
				hi = c.Idx
			}
		case *spec.Subquery:
			sub = true
		}
		return true
	})
	return lo, hi, sub
}

// keyExpr is an equality between an expression over the left input and
// one over the right input (right column indexes relative to the right).
type keyExpr struct{ l, r spec.Expr }

// exprKey recognises l = r with l over left columns only and r over right
// columns only (or the reverse), at least one not a plain column.
func exprKey(f *spec.Func, nl int) (keyExpr, bool) {
	side := func(e spec.Expr) int {
		s := -1
		mixed := false
		spec.Walk(e, func(x spec.Expr) bool {
			if c, ok := x.(*spec.ColRef); ok {
				cs := 0
				if c.Idx >= nl {
					cs = 1
				}
				if s >= 0 && s != cs {
					mixed = true
				}
				s = cs
			}
			if _, ok := x.(*spec.Subquery); ok {
				mixed = true
			}
			return true
		})
		if mixed {
			return -1
		}
		return s
	}
	a, b := f.Args[0], f.Args[1]
	sa, sb := side(a), side(b)
	if sa == 1 && sb == 0 {
		a, b, sa, sb = b, a, sb, sa
	}
	if sa != 0 || sb != 1 || a.Type() != b.Type() {
		return keyExpr{}, false
	}
	r, ok := spec.MapCols(b, func(i int) int { return i - nl })
	if !ok {
		return keyExpr{}, false
	}
	return keyExpr{l: a, r: r}, true
}

// joinOnExprs plans a join whose keys include expressions: each input gets
// a Project appending its key expressions, and a Project after the join
// restores the column layout the scope expects.
func (p *Planner) joinOnExprs(node *spec.Node, li, ri, nl, nr int, keys []keyExpr, conds []spec.Expr, sc *scope) (int, *scope, error) {
	extend := func(in, n int, exprs []spec.Expr) int {
		cols := append([]types.Column(nil), p.plan.Nodes[in].Cols...)
		pe := make([]spec.Expr, 0, n+len(exprs))
		for i := 0; i < n; i++ {
			pe = append(pe, &spec.ColRef{Idx: i, T: cols[i].Type, Name: cols[i].Name})
		}
		for _, e := range exprs {
			pe = append(pe, e)
			cols = append(cols, types.Column{Name: "?key?", Type: e.Type()})
		}
		return p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{in}, Exprs: pe, Cols: cols})
	}
	var le, re []spec.Expr
	for i, k := range keys {
		le = append(le, k.l)
		re = append(re, k.r)
		node.LeftKeys = append(node.LeftKeys, nl+i)
		node.RightKeys = append(node.RightKeys, nr+i)
	}
	k := len(keys)
	li2, ri2 := extend(li, nl, le), extend(ri, nr, re)
	shift := func(i int) int {
		if i >= nl {
			return i + k
		}
		return i
	}
	for i, c := range conds {
		m, ok := spec.MapCols(c, shift)
		if !ok {
			return 0, nil, pgerror.Unsupported("a subquery in a join condition with computed keys")
		}
		conds[i] = m
	}
	node.Inputs = []int{li2, ri2}
	node.Cols = append(append([]types.Column(nil), p.plan.Nodes[li2].Cols...), p.plan.Nodes[ri2].Cols...)
	node.Cond = andAll(conds)
	j := p.plan.Add(node)
	out := make([]spec.Expr, 0, nl+nr)
	for i := 0; i < nl; i++ {
		out = append(out, &spec.ColRef{Idx: i, T: node.Cols[i].Type, Name: node.Cols[i].Name})
	}
	for i := 0; i < nr; i++ {
		c := node.Cols[nl+k+i]
		out = append(out, &spec.ColRef{Idx: nl + k + i, T: c.Type, Name: c.Name})
	}
	return p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{j}, Exprs: out, Cols: sc.columns()}), sc, nil
}

func conjuncts(e spec.Expr) []spec.Expr {
	if e == nil {
		return nil
	}
	return appendConjuncts(nil, e)
}

// appendConjuncts appends e's conjuncts to out: one slice for the whole
// chain (a chain of 10,000 ANDs copied at every level was quadratic).
func appendConjuncts(out []spec.Expr, e spec.Expr) []spec.Expr {
	if f, ok := e.(*spec.Func); ok && f.Name == "and" {
		for _, a := range f.Args {
			out = appendConjuncts(out, a)
		}
		return out
	}
	return append(out, e)
}

func andAll(es []spec.Expr) spec.Expr {
	if len(es) == 0 {
		return nil
	}
	e := es[0]
	for _, x := range es[1:] {
		e = &spec.Func{Name: "and", Args: []spec.Expr{e, x}, T: types.TBool}
	}
	return e
}

func outputName(f *ast.SelectField) string {
	if f.AsName.O != "" {
		return f.AsName.O
	}
	return exprName(f.Expr)
}

func exprName(e ast.ExprNode) string {
	switch x := e.(type) {
	case *ast.ColumnNameExpr:
		return x.Name.Name.O
	case *ast.ParenthesesExpr:
		return exprName(x.Expr)
	case *ast.AggregateFuncExpr:
		return strings.ToLower(x.F)
	case *ast.WindowFuncExpr:
		return strings.ToLower(x.Name)
	case *ast.FuncCallExpr:
		switch x.FnName.L {
		case "__pg_cast":
			if len(x.Args) == 2 {
				if name, _, ok := castColname(x); ok {
					return name
				}
			}
		case "__pg_filter", "__pg_exclude":
			if len(x.Args) > 0 {
				return exprName(x.Args[0])
			}
		case "__pg_extract":
			return "extract"
		case "__pg_interval", "__pg_param", "__pg_any", "__pg_all",
			// Operators the dialect layer spells as functions.
			"__pg_concat", "__pg_json_get", "__pg_json_get_text", "__pg_json_path", "__pg_json_path_text",
			"__pg_contains", "__pg_contained_by", "__pg_json_exists", "__pg_json_exists_any",
			"__pg_json_exists_all", "__pg_overlap", "__pg_json_delete_path":
			return "?column?"
		case "__pg_array", "__pg_array_subquery":
			return "array"
		case "__pg_field":
			if f, ok := stringLiteral(x.Args[1]); ok && len(x.Args) == 2 {
				return f // (expr).field is named after the field
			}
		case "__pg_subscript", "__pg_slice":
			return exprName(x.Args[0]) // a[1] is named after a
		}
		if strings.HasPrefix(x.FnName.L, "__pg_") {
			return strings.TrimPrefix(x.FnName.L, "__pg_")
		}
		return x.FnName.L
	case *ast.RowExpr:
		return "row" // ROW(…) and (a, b), as PostgreSQL's FigureColname
	case *ast.CaseExpr:
		return "case"
	case *ast.ExistsSubqueryExpr:
		return "exists"
	case *ast.SubqueryExpr:
		// (SELECT x …) is named after x, as in Postgres.
		if sel, ok := x.Query.(*ast.SelectStmt); ok && sel.Fields != nil && len(sel.Fields.Fields) == 1 && sel.Fields.Fields[0].WildCard == nil {
			return outputName(sel.Fields.Fields[0])
		}
	}
	return "?column?"
}

// castColname names a cast (a __pg_cast call with two arguments) as
// PostgreSQL's FigureColname does: after its argument when that has a name
// of its own (strong), else after its type, so a cast of a cast is named
// after its own type ('int4'::regtype::oid is "oid"). ok is false when the
// cast has neither. A chain of casts is walked once: naming each level by
// calling exprName on both the inner cast and its argument took time
// exponential in the chain's length (SELECT 1::int::int… hung the server).
func castColname(x *ast.FuncCallExpr) (name string, strong, ok bool) {
	if f, isCast := x.Args[0].(*ast.FuncCallExpr); isCast && f.FnName.L == "__pg_cast" && len(f.Args) == 2 {
		name, strong, _ = castColname(f)
	} else {
		name = exprName(x.Args[0])
		strong = name != "?column?"
	}
	if strong {
		return name, true, true
	}
	if s, isLit := stringLiteral(x.Args[1]); isLit {
		return pgTypeName(s), false, true
	}
	return "", false, false
}

// pgTypeName is the column name Postgres gives a bare cast: the type's
// internal name.
func pgTypeName(s string) string {
	if e, ok := strings.CutSuffix(s, "[]"); ok {
		return pgTypeName(e) // an array cast is named after its element type
	}
	switch s {
	case "bigint":
		return "int8"
	case "integer", "int":
		return "int4"
	case "smallint":
		return "int2"
	case "double precision":
		return "float8"
	case "real":
		return "float4"
	case "boolean":
		return "bool"
	case "timestamp with time zone":
		return "timestamptz"
	case "timestamp without time zone":
		return "timestamp"
	case "character varying":
		return "varchar"
	}
	if i := strings.IndexByte(s, '('); i > 0 {
		return pgTypeName(s[:i])
	}
	return s
}

// parseView parses a plain view's query: with its side tables when
// ParseView is set (nil side: none).
func (p *Planner) parseView(text string) (ast.StmtNode, *parser.Query, error) {
	if p.ParseView != nil {
		q, err := p.ParseView(text)
		if err != nil {
			return nil, nil, err
		}
		return q.Node, q, nil
	}
	n, err := p.ParseQuery(text)
	return n, nil, err
}

// withSideTables runs f with the dialect layer's side tables of a view's
// query in place of the enclosing query's (their placeholder names,
// __pg_tumble__1 and so on, are numbered per statement), then restores
// them.
func (p *Planner) withSideTables(q *parser.Query, f func() error) error {
	if q == nil {
		return f()
	}
	tf, nulls, aliases := p.TableFuncs, p.Nulls, p.ColumnAliases
	p.TableFuncs, p.Nulls = q.TableFuncs, q.Nulls
	if len(q.ColumnAliases) > 0 {
		merged := make(map[*ast.TableSource][]string, len(aliases)+len(q.ColumnAliases))
		for k, v := range aliases {
			merged[k] = v
		}
		for k, v := range q.ColumnAliases {
			merged[k] = v
		}
		p.ColumnAliases = merged
	}
	defer func() { p.TableFuncs, p.Nulls, p.ColumnAliases = tf, nulls, aliases }()
	return f()
}
