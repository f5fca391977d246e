package planner

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/exec/eval"
	"sluice/exec/spec"
	"sluice/planner/cat"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file binds the Postgres object-identifier types that clients such
// as psql use in catalog queries, on top of the system relations:
//
//	'name'::regclass            the relation's oid, looked up in pg_class
//	x::regclass::text           the relation's name (pg_class), else the oid
//	x::regnamespace             the schema's name (pg_namespace), else the oid
//	x::regtype                  format_type(x, NULL)
//	x::regrole                  pg_get_userbyid(x)
//	x::int2[], x::oid[], ...    text[], Sluice's only array type
//
// regnamespace, regtype and regrole values are their text form: Sluice has
// no such types, and their names are what clients read.

// codeInvalidSchemaName is Postgres' invalid_schema_name (3F000).
const codeInvalidSchemaName pgcode.Code = "3F000"

// castToUnsupported binds a cast to a type name ParseType rejected with
// perr, when it is one of the forms above.
func (b *binder) castToUnsupported(x spec.Expr, name string, perr error) (spec.Expr, error) {
	name = strings.TrimPrefix(strings.TrimSpace(name), "pg_catalog.")
	switch {
	case name == "regrole":
		oid, err := b.castTo(x, types.TOid)
		if err != nil {
			return nil, err
		}
		return b.call("pg_get_userbyid", []spec.Expr{oid})
	case name == "regtype[]":
		// oid[] (text[] in Sluice) to the types' names, as regtype[]
		// prints them.
		arr, err := b.castTo(x, types.TTextArray)
		if err != nil {
			return nil, err
		}
		return &spec.Func{Name: "__pg_regtype_names", Args: []spec.Expr{arr}, T: types.TTextArray}, nil
	case strings.HasSuffix(name, "[]"):
		if et, err := b.p.ParseType(strings.TrimSuffix(name, "[]")); err == nil {
			arr, err := b.castTo(x, types.TTextArray)
			if err != nil || et.Fam == types.Text {
				return arr, err
			}
			// The elements take the element type's input and output.
			return b.call("__pg_array_elems", []spec.Expr{arr, &spec.Const{D: types.NewInt(int64(et.OID())), T: types.TInt4}})
		}
	}
	return nil, perr
}

// systemRel resolves a pg_catalog relation and the positions of the named
// columns in it.
func (p *Planner) systemRel(name string, cols ...string) (*cat.Relation, []int, error) {
	rel, err := p.Cat.Resolve("pg_catalog", name)
	if err != nil {
		return nil, nil, err
	}
	if rel.Kind != cat.System || rel.Rows == nil {
		return nil, nil, pgerror.New(pgcode.WrongObjectType, "pg_catalog.%s is not a system relation", name)
	}
	idx := make([]int, len(cols))
	for i, c := range cols {
		idx[i] = -1
		for j, rc := range rel.Columns {
			if rc.Name == c {
				idx[i] = j
			}
		}
		if idx[i] < 0 {
			return nil, nil, pgerror.New(pgcode.UndefinedColumn, "column %q of pg_catalog.%s does not exist", c, name)
		}
	}
	return rel, idx, nil
}

// regclassOid is regclassin: the oid of the relation named s (optionally
// schema-qualified, optionally quoted), or of the oid s spells.
func (b *binder) regclassOid(s string) (int64, error) {
	if d, err := types.ParseText(s, types.TOid); err == nil {
		return d.I, nil
	}
	schema, rel := splitQualified(s)
	cls, ci, err := b.p.systemRel("pg_class", "oid", "relname", "relnamespace")
	if err != nil {
		return 0, err
	}
	nsOid := int64(-1)
	if schema != "" {
		ns, ni, err := b.p.systemRel("pg_namespace", "oid", "nspname")
		if err != nil {
			return 0, err
		}
		rows, err := ns.Rows()
		if err != nil {
			return 0, err
		}
		for _, r := range rows {
			if r[ni[1]].S == schema {
				nsOid = r[ni[0]].I
			}
		}
		if nsOid < 0 {
			return 0, pgerror.New(codeInvalidSchemaName, "schema %q does not exist", schema)
		}
	}
	rows, err := cls.Rows()
	if err != nil {
		return 0, err
	}
	for _, r := range rows {
		if r[ci[1]].S == rel && (nsOid < 0 || r[ci[2]].I == nsOid) {
			return r[ci[0]].I, nil
		}
	}
	return 0, pgerror.New(pgcode.UndefinedTable, "relation %q does not exist", strings.TrimSpace(s))
}

// splitQualified splits a possibly qualified, possibly quoted name the
// way Postgres reads identifiers: unquoted parts are lower-cased.
func splitQualified(s string) (schema, name string) {
	parts := eval.QualifiedNameParts(s)
	switch len(parts) {
	case 0:
		return "", ""
	case 1:
		return "", parts[0]
	}
	return parts[len(parts)-2], parts[len(parts)-1]
}

// oidName binds the name of the object with oid x in the system relation
// rel (its column nameCol, quoted where Postgres quotes identifiers), or
// x's digits when there is none: the output of regclass and regnamespace.
func (b *binder) oidName(x spec.Expr, rel, nameCol string) (spec.Expr, error) {
	if b.p.Streaming {
		return nil, pgerror.Unsupported("object names in materialized views")
	}
	r, idx, err := b.p.systemRel(rel, "oid", nameCol)
	if err != nil {
		return nil, err
	}
	oid, err := b.castTo(x, types.TOid)
	if err != nil {
		return nil, err
	}
	rows, err := r.Rows()
	if err != nil {
		return nil, err
	}
	// (SELECT quote_ident(name) FROM rel WHERE oid = $outer)
	plan := &spec.Plan{}
	in := plan.Add(&spec.Node{Kind: spec.Values, Rows: rows, Cols: r.Columns})
	oidCol := &spec.ColRef{Idx: idx[0], T: r.Columns[idx[0]].Type, Name: "oid"}
	pred, err := b.call("=", []spec.Expr{oidCol, &spec.OuterRef{N: 0, T: types.TOid, Name: "oid"}})
	if err != nil {
		return nil, err
	}
	in = plan.Add(&spec.Node{Kind: spec.Filter, Inputs: []int{in}, Pred: pred, Cols: r.Columns})
	nameRef, err := b.castTo(&spec.ColRef{Idx: idx[1], T: r.Columns[idx[1]].Type, Name: nameCol}, types.TText)
	if err != nil {
		return nil, err
	}
	quoted, err := b.call("quote_ident", []spec.Expr{nameRef})
	if err != nil {
		return nil, err
	}
	plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{in}, Exprs: []spec.Expr{quoted}, Cols: []types.Column{{Name: nameCol, Type: types.TText}}})
	sub := &spec.Subquery{Mode: spec.ScalarSubquery, Plan: plan, Outer: []spec.Expr{oid}, Cols: 1, Limit: -1, T: types.TText}
	digits, err := b.castTo(oid, types.TText)
	if err != nil {
		return nil, err
	}
	return &spec.Func{Name: "coalesce", Args: []spec.Expr{sub, digits}, T: types.TText}, nil
}

// callUntypedElements retries a call that did not resolve, taking the
// elements of text[] arrays it reads by subscript (arr[i]) as untyped
// literals of the type the call needs, as ANY/ALL does (see exec/eval's
// array.go): catalog columns Postgres types as int2vector or oid[] are
// text[] in Sluice. ok is false when no argument is such an element or the
// call still does not resolve.
func (b *binder) callUntypedElements(name string, args []spec.Expr) (spec.Expr, bool) {
	ts := make([]types.T, len(args))
	elem := make([]bool, len(args))
	found := false
	for i, a := range args {
		ts[i] = a.Type()
		if f, ok := a.(*spec.Func); ok && f.Name == "__pg_subscript" && len(f.Args) > 0 && (f.Args[0].Type().Fam == types.TextArray || types.IsVector(f.Args[0].Type().Fam)) {
			ts[i], elem[i], found = types.TUnknown, true, true
		}
	}
	if !found {
		return nil, false
	}
	ret, casts, err := eval.ResolveFunc(name, ts)
	if err != nil {
		return nil, false
	}
	out := make([]spec.Expr, len(args))
	for i, a := range args {
		out[i] = a
		if elem[i] && a.Type() != casts[i] {
			out[i] = &spec.Cast{E: a, T: casts[i]}
		} else if i < len(casts) && casts[i] != a.Type() {
			x, err := b.castTo(a, casts[i])
			if err != nil {
				return nil, false
			}
			out[i] = x
		}
	}
	return &spec.Func{Name: name, Args: out, T: ret}, true
}

// catalogFunc is a catalog function whose answer depends on the catalog:
// it is bound as a scalar subquery over the system relations, in which
// __arg1, __arg2, ... are its arguments.
type catalogFunc struct {
	params []types.T
	sql    string
}

// catalogFuncs are the catalog functions answered from the system
// relations (in batch queries; elsewhere exec/eval's fallbacks apply), by
// name and number of arguments.
var catalogFuncs = map[string]catalogFunc{
	// Visible: in a schema of the search path (pg_catalog, public).
	"pg_table_is_visible/1": {[]types.T{types.TOid},
		`SELECT c.relnamespace IN (11, 2200) FROM pg_catalog.pg_class c WHERE c.oid = __arg1`},
	"pg_get_indexdef/1": {[]types.T{types.TOid}, `SELECT i.indexdef FROM pg_catalog.pg_indexes i, pg_catalog.pg_class c
		WHERE c.oid = __arg1 AND c.relkind = 'i' AND i.indexname = c.relname`},
	// Column 0 is the whole definition, column n the n-th key column.
	"pg_get_indexdef/3": {[]types.T{types.TOid, types.TInt4, types.TBool}, `SELECT CASE WHEN __arg2 = 0 THEN i.indexdef
		ELSE (SELECT a.attname::text FROM pg_catalog.pg_attribute a WHERE a.attrelid = __arg1 AND a.attnum = __arg2) END
		FROM pg_catalog.pg_indexes i, pg_catalog.pg_class c WHERE c.oid = __arg1 AND c.relkind = 'i' AND i.indexname = c.relname`},
	// The defining query of a view or materialized view.
	"pg_get_viewdef/1": {[]types.T{types.TOid}, viewDef},
	"pg_get_viewdef/2": {[]types.T{types.TOid, types.TBool}, viewDef},
	// Sluice's constraints are primary keys: PRIMARY KEY (columns).
	"pg_get_constraintdef/1": {[]types.T{types.TOid}, pkeyConstraintDef},
	"pg_get_constraintdef/2": {[]types.T{types.TOid, types.TBool}, pkeyConstraintDef},
	// The sequence a SERIAL or identity column owns, schema-qualified; the
	// column name is taken literally, the table's is parsed as SQL.
	"pg_get_serial_sequence/2": {[]types.T{types.TText, types.TText}, `SELECT quote_ident(n.nspname) || '.' || quote_ident(s.relname)
		FROM pg_catalog.pg_depend d, pg_catalog.pg_class s, pg_catalog.pg_namespace n, pg_catalog.pg_attribute a
		WHERE d.refobjid = __arg1::regclass AND d.classid = 1259 AND d.deptype IN ('a', 'i') AND a.attrelid = d.refobjid
		AND a.attnum = d.refobjsubid AND a.attname = __arg2 AND s.oid = d.objid AND s.relkind = 'S' AND n.oid = s.relnamespace`},
}

const viewDef = `SELECT d.definition FROM pg_catalog.pg_class c,
	(SELECT viewname AS name, definition FROM pg_catalog.pg_views WHERE schemaname = 'public'
	 UNION ALL SELECT matviewname, definition FROM pg_catalog.pg_matviews) d
	WHERE c.oid = __arg1 AND c.relnamespace = 2200 AND d.name = c.relname`

const pkeyConstraintDef = `SELECT 'PRIMARY KEY ' || split_part(i.indexdef, ' USING btree ', 2)
	FROM pg_catalog.pg_constraint k, pg_catalog.pg_class c, pg_catalog.pg_indexes i
	WHERE k.oid = __arg1 AND k.contype = 'p' AND c.oid = k.conindid AND i.indexname = c.relname`

// bindCatalogFunc binds a call of one of catalogFuncs; ok is false for
// other functions.
func (b *binder) bindCatalogFunc(name string, args []spec.Expr) (x spec.Expr, ok bool, err error) {
	if x, ok, err := b.bindProcFunc(name, args); ok || err != nil {
		return x, ok, err
	}
	f, found := catalogFuncs[name+"/"+itoa(len(args))]
	if !found || b.p.Streaming || b.p.ParseQuery == nil || len(args) != len(f.params) {
		return nil, false, nil
	}
	sc := &scope{}
	for i, t := range f.params {
		if args[i], err = b.castTo(args[i], t); err != nil {
			return nil, true, err
		}
		sc.cols = append(sc.cols, scopeCol{name: "__arg" + itoa(i+1), t: t})
	}
	stmt, err := b.p.ParseQuery(f.sql)
	if err != nil {
		return nil, true, err
	}
	rs, isQuery := stmt.(ast.ResultSetNode)
	if !isQuery {
		return nil, true, pgerror.New(pgcode.Internal, "definition of %s is not a query", name)
	}
	s, q, err := b.planSubquery(rs, sc)
	if err != nil {
		return nil, true, err
	}
	if err := oneColumn(q); err != nil {
		return nil, true, err
	}
	// The subquery read its arguments as columns of sc: hand it the
	// arguments themselves.
	for i, o := range s.Outer {
		if r, isCol := o.(*spec.ColRef); isCol {
			s.Outer[i] = args[r.Idx]
		}
	}
	s.Mode, s.T = spec.ScalarSubquery, q.Columns[0].Type
	return s, true, nil
}
