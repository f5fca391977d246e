package planner

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"sluice/sql/acl"

	"sluice/exec/eval"
	"sluice/exec/spec"
	"sluice/planner/cat"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Insert is a planned INSERT: rows of expressions, or a query, whose
// columns land in Targets of the table.
type Insert struct {
	Table   *cat.Relation
	Targets []int         // table column of each value
	Rows    [][]spec.Expr // VALUES, cast to the column types; nil = DEFAULT
	Query   *Query        // INSERT … SELECT (columns already cast)
	// OnConflict and Returning are nil when the statement has none.
	OnConflict *OnConflict
	Returning  *Returning
	// Overriding is OVERRIDING SYSTEM|USER VALUE: "system", "user" or "".
	Overriding string
}

// Update is a planned UPDATE: rows of Table matching Pred get Sets.
type Update struct {
	Table     *cat.Relation
	Pred      spec.Expr         // nil = all rows
	Sets      map[int]spec.Expr // a nil value is DEFAULT
	Returning *Returning
}

// Delete is a planned DELETE.
type Delete struct {
	Table     *cat.Relation
	Pred      spec.Expr
	Returning *Returning
}

func (p *Planner) dmlTable(refs *ast.TableRefsClause, priv acl.Privilege) (*cat.Relation, *scope, error) {
	if refs == nil || refs.TableRefs == nil || refs.TableRefs.Right != nil {
		return nil, nil, pgerror.Unsupported("DML on several tables")
	}
	ts, ok := refs.TableRefs.Left.(*ast.TableSource)
	if !ok {
		return nil, nil, pgerror.Unsupported("DML target")
	}
	tn, ok := ts.Source.(*ast.TableName)
	if !ok {
		return nil, nil, pgerror.Unsupported("DML target")
	}
	rel, err := p.Cat.Resolve(tn.Schema.O, tn.Name.O)
	if err != nil {
		return nil, nil, err
	}
	if rel.Kind != cat.Table {
		return nil, nil, pgerror.New(pgcode.WrongObjectType, "cannot change %s %q", rel.Kind, rel.Name).
			WithHint("only tables accept INSERT, UPDATE and DELETE")
	}
	if p.Returning != nil {
		priv |= acl.Select // RETURNING reads the rows
	}
	if err := p.checkAccess(rel, priv); err != nil {
		return nil, nil, err
	}
	alias := ts.AsName.O
	if alias == "" {
		alias = tn.Name.O
	}
	sc := &scope{}
	for _, c := range rel.Columns {
		sc.cols = append(sc.cols, scopeCol{table: alias, name: c.Name, t: c.Type})
	}
	return rel, sc, nil
}

// PlanInsert plans an INSERT.
func (p *Planner) PlanInsert(s *ast.InsertStmt) (*Insert, error) {
	p.plan = &spec.Plan{}
	p.keys = map[int][]int{}
	if s.IsReplace || len(s.OnDuplicate) > 0 || s.Setlist {
		return nil, pgerror.Unsupported("this form of INSERT")
	}
	priv := acl.Insert
	if p.OnConflict != nil && !p.OnConflict.DoNothing {
		priv |= acl.Update
	}
	rel, sc, err := p.dmlTable(s.Table, priv)
	if err != nil {
		return nil, err
	}
	ins := &Insert{Table: rel, Overriding: p.Overriding}
	if ins.Returning, err = p.planReturning(rel, sc); err != nil {
		return nil, err
	}
	if p.OnConflict != nil {
		if ins.OnConflict, err = p.planOnConflict(rel, sc, p.OnConflict); err != nil {
			return nil, err
		}
	}
	if len(s.Columns) == 0 {
		for i := range rel.Columns {
			ins.Targets = append(ins.Targets, i)
		}
	} else {
		seen := map[int]bool{}
		for _, c := range s.Columns {
			i, err := sc.resolve("", c.Name.O)
			if err != nil {
				return nil, pgerror.New(pgcode.UndefinedColumn, "column %q of relation %q does not exist", c.Name.O, rel.Name)
			}
			if seen[i] {
				return nil, pgerror.New(pgcode.DuplicateColumn, "column %q specified more than once", c.Name.O)
			}
			seen[i] = true
			ins.Targets = append(ins.Targets, i)
		}
	}
	b := &binder{p: p}
	if s.Select != nil {
		q, err := p.planResultSet(s.Select)
		if err != nil {
			return nil, err
		}
		if len(q.Columns) > len(ins.Targets) {
			return nil, pgerror.New(pgcode.Syntax, "INSERT has more expressions than target columns")
		}
		exprs := make([]spec.Expr, len(q.Columns))
		cols := make([]types.Column, len(q.Columns))
		for i, c := range q.Columns {
			t := rel.Columns[ins.Targets[i]].Type
			x, err := b.assignCast(&spec.ColRef{Idx: i, T: c.Type}, t, rel.Columns[ins.Targets[i]].Name)
			if err != nil {
				return nil, err
			}
			exprs[i] = x
			cols[i] = types.Column{Name: c.Name, Type: t}
		}
		p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{p.plan.Root()}, Exprs: exprs, Cols: cols})
		q.Columns = cols
		q.Plan = p.plan
		ins.Targets = ins.Targets[:len(cols)]
		ins.Query = q
		return ins, nil
	}
	for _, l := range s.Lists {
		if len(l) > len(ins.Targets) {
			return nil, pgerror.New(pgcode.Syntax, "INSERT has more expressions than target columns")
		}
		row := make([]spec.Expr, len(l))
		for i, v := range l {
			if _, ok := v.(*ast.DefaultExpr); ok {
				row[i] = nil
				continue
			}
			x, err := b.bind(v, &scope{}, nil)
			if err != nil {
				return nil, err
			}
			col := rel.Columns[ins.Targets[i]]
			if row[i], err = b.assignCast(x, col.Type, col.Name); err != nil {
				return nil, err
			}
		}
		ins.Rows = append(ins.Rows, row)
	}
	return ins, nil
}

// assignCast converts a value for assignment to a column of type t, as
// Postgres does: implicit and assignment casts are allowed, anything else
// is a 42804 error.
func (b *binder) assignCast(x spec.Expr, t types.T, col string) (spec.Expr, error) {
	from := x.Type()
	if from.Fam != types.Unknown && from.Fam != t.Fam && !assignable(from, t) {
		return nil, pgerror.New(pgcode.DatatypeMismatch, "column %q is of type %s but expression is of type %s", col, t, from).
			WithHint("You will need to rewrite or cast the expression.")
	}
	if from == t {
		return x, nil
	}
	if (t.Fam == types.Varchar || t.Fam == types.VarcharArray) && t.Prec > 0 {
		// Assignment to varchar(n): a longer value is an error (22001),
		// where an explicit cast cuts it.
		if c, ok := x.(*spec.Const); ok {
			if from.Fam == types.Unknown {
				from = types.TText
			}
			if c.D.K == types.KString && t.Fam == types.VarcharArray {
				d, err := types.ParseText(c.D.S, t)
				return &spec.Const{D: d, T: t}, err
			}
			d, err := eval.AssignCast(c.D, from, t)
			return &spec.Const{D: d, T: t}, err
		}
		if pm, ok := x.(*spec.Param); ok && from.Fam == types.Unknown {
			// A parameter takes the column's type; its value is checked
			// against the length as an assignment.
			if _, err := b.castTo(x, t); err != nil {
				return nil, err
			}
			x = &spec.Param{N: pm.N, T: types.T{Fam: t.Fam}}
		} else if from.Fam == types.Unknown {
			return b.castTo(x, t)
		}
		return &spec.Func{Name: "__pg_assign_cast", Args: []spec.Expr{x}, T: t}, nil
	}
	return b.castTo(x, t)
}

func assignable(from, to types.T) bool {
	if from.Fam == types.Record && to.Fam == types.Record {
		// A row to a STRUCT column: field by field, by position.
		return len(to.RecordFields()) == 0 || len(from.RecordFields()) == len(to.RecordFields())
	}
	if types.IsArray(from.Fam) && types.IsArray(to.Fam) {
		// An array converts when its elements do (array_map of the
		// element cast, as PostgreSQL's array coercion).
		return from.Fam == to.Fam || assignable(arrayElem(from), arrayElem(to))
	}
	if from.IsNumeric() && to.IsNumeric() {
		return true
	}
	if to.IsString() || (from.IsString() && to.IsString()) {
		return true
	}
	switch from.Fam {
	case types.Date, types.Timestamp, types.TimestampTZ:
		switch to.Fam {
		case types.Date, types.Timestamp, types.TimestampTZ:
			return true
		}
	}
	return false
}

// arrayElem returns the element type of the array type t (text for text[]).
func arrayElem(t types.T) types.T {
	if e, ok := types.ArrayElem(t.Fam); ok {
		return e
	}
	return types.TText
}

// PlanUpdate plans an UPDATE.
func (p *Planner) PlanUpdate(s *ast.UpdateStmt) (*Update, error) {
	p.plan = &spec.Plan{}
	p.keys = map[int][]int{}
	if s.Order != nil || s.Limit != nil {
		return nil, pgerror.Unsupported("UPDATE with ORDER BY or LIMIT")
	}
	priv := acl.Update
	if s.Where != nil {
		priv |= acl.Select // as PostgreSQL: reading the rows to match needs SELECT
	}
	rel, sc, err := p.dmlTable(s.TableRefs, priv)
	if err != nil {
		return nil, err
	}
	b := &binder{p: p}
	up := &Update{Table: rel, Sets: map[int]spec.Expr{}}
	if up.Returning, err = p.planReturning(rel, sc); err != nil {
		return nil, err
	}
	for _, a := range s.List {
		i, err := sc.resolve("", a.Column.Name.O)
		if err != nil {
			return nil, pgerror.New(pgcode.UndefinedColumn, "column %q of relation %q does not exist", a.Column.Name.O, rel.Name)
		}
		if _, dup := up.Sets[i]; dup {
			return nil, pgerror.New(pgcode.Syntax, "multiple assignments to same column %q", a.Column.Name.O)
		}
		var x spec.Expr
		if _, ok := a.Expr.(*ast.DefaultExpr); ok {
			up.Sets[i] = nil
			continue
		} else if x, err = b.bind(a.Expr, sc, nil); err != nil {
			return nil, err
		}
		if up.Sets[i], err = b.assignCast(x, rel.Columns[i].Type, rel.Columns[i].Name); err != nil {
			return nil, err
		}
	}
	if s.Where != nil {
		pred, err := b.bind(s.Where, sc, nil)
		if err != nil {
			return nil, err
		}
		if up.Pred, err = b.castTo(pred, types.TBool); err != nil {
			return nil, err
		}
	}
	return up, nil
}

// PlanDelete plans a DELETE.
func (p *Planner) PlanDelete(s *ast.DeleteStmt) (*Delete, error) {
	p.plan = &spec.Plan{}
	p.keys = map[int][]int{}
	if s.IsMultiTable || s.Order != nil || s.Limit != nil {
		return nil, pgerror.Unsupported("this form of DELETE")
	}
	priv := acl.Delete
	if s.Where != nil {
		priv |= acl.Select
	}
	rel, sc, err := p.dmlTable(s.TableRefs, priv)
	if err != nil {
		return nil, err
	}
	d := &Delete{Table: rel}
	if d.Returning, err = p.planReturning(rel, sc); err != nil {
		return nil, err
	}
	if s.Where != nil {
		b := &binder{p: p}
		pred, err := b.bind(s.Where, sc, nil)
		if err != nil {
			return nil, err
		}
		if d.Pred, err = b.castTo(pred, types.TBool); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// KeyLookup returns, when pred pins every key column to a constant or
// parameter, or to a correlated subquery's outer value (key = value AND …),
// the expression for each key column.
func KeyLookup(pred spec.Expr, key []int) []spec.Expr {
	if pred == nil || len(key) == 0 {
		return nil
	}
	vals := make([]spec.Expr, len(key))
	for _, c := range conjuncts(pred) {
		f, ok := c.(*spec.Func)
		if !ok || f.Name != "=" || len(f.Args) != 2 {
			continue
		}
		col, val := f.Args[0], f.Args[1]
		if _, ok := col.(*spec.ColRef); !ok {
			col, val = val, col
		}
		r, ok := col.(*spec.ColRef)
		if !ok {
			continue
		}
		switch val.(type) {
		case *spec.Const, *spec.Param, *spec.OuterRef: // fixed for one run of the plan
		default:
			continue
		}
		for i, k := range key {
			if k == r.Idx {
				vals[i] = val
			}
		}
	}
	for _, v := range vals {
		if v == nil {
			return nil
		}
	}
	return vals
}
