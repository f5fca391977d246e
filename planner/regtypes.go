package planner

import (
	"strconv"

	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file binds the oid alias types regclass, regtype, regproc and
// regnamespace as PostgreSQL has them: values are oids (compared, hashed
// and sent in binary as oids, converted to and from oid and the integer
// types without change), their input is an object's name ('jsonb'::regtype,
// 'public.t'::regclass, $1::regclass) and their output its name. A
// constant name is resolved when the statement is planned; a name computed
// at run time (a parameter, a text column) is looked up in the catalog as
// of planning (__pg_regin); a query's reg* result columns carry the names
// (sql/types.NewRegName) so that RowDescription keeps their types.

// regRel is the system relation and name column naming the objects of an
// oid alias type.
func regRel(f types.Family) (rel, nameCol string) {
	switch f {
	case types.RegClass:
		return "pg_class", "relname"
	case types.RegProc:
		return "pg_proc", "proname"
	case types.RegNamespace:
		return "pg_namespace", "nspname"
	}
	return "", ""
}

// castRegclass binds the casts of the oid alias types that need the
// catalog: a string to one of them, and one of them to a string. ok is
// false for every other cast (oid and integers convert as plain casts).
func (b *binder) castRegclass(x spec.Expr, t types.T) (out spec.Expr, ok bool, err error) {
	from := x.Type()
	switch {
	case types.IsOidFamily(t.Fam) && t.Fam != types.Oid && (from.Fam == types.Unknown || from.IsString()):
		if c, isConst := x.(*spec.Const); isConst {
			if c.D.IsNull() {
				return &spec.Const{D: types.Null, T: t}, true, nil
			}
			oid, err := b.regIn(c.D.S, t.Fam)
			if err != nil {
				return nil, true, err
			}
			return &spec.Const{D: types.NewInt(oid), T: t}, true, nil
		}
		if from.Fam == types.Unknown {
			// An untyped parameter: the client sends the name as text.
			if x, err = b.castTo(x, types.TText); err != nil {
				return nil, true, err
			}
		}
		if t.Fam == types.RegType {
			return &spec.Func{Name: "__pg_regtypein", Args: []spec.Expr{x}, T: t}, true, nil
		}
		names, err := b.regNames(t.Fam)
		if err != nil {
			return nil, true, err
		}
		return &spec.Func{Name: "__pg_regin_" + t.String(), Args: []spec.Expr{x, names}, T: t}, true, nil
	case types.IsOidFamily(from.Fam) && from.Fam != types.Oid && t.IsString() && !b.p.Streaming:
		name, err := b.regName(x)
		if err != nil {
			return nil, true, err
		}
		out, err := b.castTo(name, t)
		return out, true, err
	}
	return nil, false, nil
}

// regName binds the name of the object an oid alias value x stands for,
// or its digits when there is none, as the type's output function prints
// it.
func (b *binder) regName(x spec.Expr) (spec.Expr, error) {
	f := x.Type().Fam
	if f == types.RegType {
		oid, err := b.castTo(x, types.TOid)
		if err != nil {
			return nil, err
		}
		return b.call("format_type", []spec.Expr{oid, &spec.Const{D: types.Null, T: types.TInt4}})
	}
	rel, col := regRel(f)
	return b.oidName(x, rel, col)
}

// regIn resolves a constant name (or oid digits) of an object of the oid
// alias type f, with PostgreSQL's errors.
func (b *binder) regIn(s string, f types.Family) (int64, error) {
	if d, err := types.ParseText(s, types.TOid); err == nil {
		return d.I, nil
	}
	switch f {
	case types.RegClass:
		return b.regclassOid(s)
	case types.RegType:
		if d, err := types.RegTypeIn(s); err == nil {
			return d.I, nil
		}
		t, err := b.p.ParseType(s)
		if err != nil {
			return 0, err
		}
		return int64(t.OID()), nil
	}
	rel, idx, err := b.p.systemRel(map[types.Family]string{types.RegProc: "pg_proc", types.RegNamespace: "pg_namespace"}[f],
		"oid", map[types.Family]string{types.RegProc: "proname", types.RegNamespace: "nspname"}[f])
	if err != nil {
		return 0, err
	}
	rows, err := rel.Rows()
	if err != nil {
		return 0, err
	}
	_, name := splitQualified(s)
	found, n := int64(0), 0
	for _, r := range rows {
		if r[idx[1]].S == name {
			found, n = r[idx[0]].I, n+1
		}
	}
	switch {
	case n == 1:
		return found, nil
	case f == types.RegNamespace:
		return 0, pgerror.New(codeInvalidSchemaName, "schema \"%s\" does not exist", name)
	case n == 0:
		return 0, pgerror.New(pgcode.UndefinedFunction, "function \"%s\" does not exist", s)
	}
	return 0, pgerror.New(codeAmbiguousFunction, "more than one function named \"%s\"", s)
}

// codeAmbiguousFunction is Postgres' ambiguous_function (42725).
const codeAmbiguousFunction pgcode.Code = "42725"

// regNames binds the constant text[] of "name=oid" entries (and
// "schema.name=oid" for relations) that __pg_regin_<type> looks names up in.
func (b *binder) regNames(f types.Family) (spec.Expr, error) {
	relName, col := regRel(f)
	cols := []string{"oid", col}
	if f == types.RegClass {
		cols = append(cols, "relnamespace")
	}
	rel, idx, err := b.p.systemRel(relName, cols...)
	if err != nil {
		return nil, err
	}
	rows, err := rel.Rows()
	if err != nil {
		return nil, err
	}
	schemas := map[int64]string{}
	if f == types.RegClass {
		ns, ni, err := b.p.systemRel("pg_namespace", "oid", "nspname")
		if err != nil {
			return nil, err
		}
		nrows, err := ns.Rows()
		if err != nil {
			return nil, err
		}
		for _, r := range nrows {
			schemas[r[ni[0]].I] = r[ni[1]].S
		}
	}
	var elems []types.Datum
	for _, r := range rows {
		oid := strconv.FormatInt(r[idx[0]].I, 10)
		elems = append(elems, types.NewString(r[idx[1]].S+"="+oid))
		if f == types.RegClass {
			if s, ok := schemas[r[idx[2]].I]; ok {
				elems = append(elems, types.NewString(s+"."+r[idx[1]].S+"="+oid))
			}
		}
	}
	return &spec.Const{D: types.Datum{K: types.KArray, A: types.NewElems(elems)}, T: types.TTextArray}, nil
}

// regclassOutput makes the oid alias columns of a batch query's result
// carry their objects' names (they print as names, as in PostgreSQL, and
// keep their types in RowDescription).
func (p *Planner) regclassOutput(q *Query) error {
	if p.Streaming {
		return nil
	}
	root := p.plan.Root()
	cols := p.plan.Nodes[root].Cols
	found := false
	for i := range q.Columns {
		if f := q.Columns[i].Type.Fam; types.IsOidFamily(f) && f != types.Oid {
			found = true
		}
	}
	if !found {
		return nil
	}
	b := &binder{p: p}
	exprs := make([]spec.Expr, len(cols))
	for i, c := range cols {
		exprs[i] = &spec.ColRef{Idx: i, T: c.Type, Name: c.Name}
		if f := c.Type.Fam; i < len(q.Columns) && types.IsOidFamily(f) && f != types.Oid {
			name, err := b.regName(exprs[i])
			if err != nil {
				return err
			}
			exprs[i] = &spec.Func{Name: "__pg_regout", Args: []spec.Expr{exprs[i], name}, T: c.Type}
		}
	}
	p.plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{root}, Exprs: exprs, Cols: cols})
	return nil
}
