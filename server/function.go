package server

import (
	"context"
	"fmt"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/planner"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/storage"
)

// SQL functions (CREATE FUNCTION … LANGUAGE SQL) are catalog entries of
// kind function holding their CREATE statement; a call is inlined by the
// planner, and a view calling one depends on it.

const kindFunction = "function"

func (e *Engine) createFunction(ctx context.Context, x *parser.CreateFunction) error {
	if x.Language != "sql" {
		return pgerror.Unsupported("functions in language %s", x.Language).WithHint("Sluice runs LANGUAGE SQL functions")
	}
	if x.BodyExpr == nil {
		return pgerror.Unsupported("a SQL function body other than one expression (SELECT expr or RETURN expr)")
	}
	if sch, bare := relSchema(x.Name); sch == "pg_catalog" || sch == "information_schema" {
		// Built-ins are pg_catalog's: a user's function there would
		// shadow them for everyone.
		return pgerror.New(pgcode.InsufficientPrivilege, "permission denied to create \"%s.%s\"", sch, bare).
			WithDetail("System catalog modifications are currently disallowed.")
	}
	// Check the body binds with the declared arguments.
	f := userFuncOf(&storage.CatalogEntry{Name: x.Name, SQL: x.Text()}, x)
	if err := e.checkFunc(f); err != nil {
		return err
	}
	return e.ddl(ctx, func() error {
		old := e.cat.get(x.Name)
		if old != nil && (old.Kind != kindFunction || !x.OrReplace) {
			return pgerror.New(pgcode.DuplicateFunction, "function %q already exists with same argument types", x.Name)
		}
		if e.cat.system[x.Name] != nil {
			return pgerror.New(pgcode.DuplicateTable, "relation %q already exists", x.Name)
		}
		id := e.cat.allocID()
		if old != nil {
			if len(e.allDependents(old)) > 0 {
				return pgerror.Unsupported("replacing function %s that views use", x.Name)
			}
			e.dropOne(old)
		}
		ent := &storage.CatalogEntry{ID: id, Kind: kindFunction, Name: x.Name, SQL: x.Text()}
		e.persist(ent)
		return nil
	})
}

// checkFunc plans SELECT f(NULL::t1, …) to check the body.
func (e *Engine) checkFunc(f *planner.UserFunc) error {
	pl := e.newPlanner()
	prev := pl.Funcs
	pl.Funcs = func(name string) *planner.UserFunc {
		if name == f.Name {
			return f
		}
		return prev(name)
	}
	// Called qualified: an unqualified call of a name that is also a
	// built-in binds the built-in (planner/udf.go).
	sch, bare := relSchema(f.Name)
	sql := "SELECT " + quoteIdent(sch) + "." + quoteIdent(bare) + "("
	for i, t := range f.ArgTypes {
		if i > 0 {
			sql += ", "
		}
		sql += "CAST(NULL AS " + t.String() + ")"
	}
	st, err := parser.ParseOne(sql + ")")
	if err != nil {
		return err
	}
	_, err = pl.PlanQuery(st.(*parser.Query).Node)
	return err
}

func userFuncOf(ent *storage.CatalogEntry, x *parser.CreateFunction) *planner.UserFunc {
	f := &planner.UserFunc{ID: ent.ID, Name: ent.Name, Returns: x.Returns}
	for _, a := range x.Args {
		f.ArgNames = append(f.ArgNames, a.Name)
		f.ArgTypes = append(f.ArgTypes, a.Type)
	}
	sql := ent.SQL
	f.Body = func() (ast.ExprNode, error) {
		st, err := parser.ParseOne(sql)
		if err != nil {
			return nil, err
		}
		cf, ok := st.(*parser.CreateFunction)
		if !ok || cf.BodyExpr == nil {
			return nil, fmt.Errorf("catalog SQL of function %s is not CREATE FUNCTION", x.Name)
		}
		return cf.BodyExpr, nil
	}
	return f
}

// lookupFunc finds a SQL function for the planner.
func (e *Engine) lookupFunc(name string) *planner.UserFunc {
	ent := e.cat.get(name)
	if ent == nil || ent.Kind != kindFunction {
		return nil
	}
	st, err := parser.ParseOne(ent.SQL)
	if err != nil {
		return nil
	}
	x, ok := st.(*parser.CreateFunction)
	if !ok {
		return nil
	}
	return userFuncOf(ent, x)
}
