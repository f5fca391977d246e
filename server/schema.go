package server

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"sluice/server/pgwire"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// Schemas. An object in schema s other than public is a catalog entry
// named "s.name"; public objects keep their bare names, so `public.t` and
// `t` are the same relation. A schema is a catalog entry of kind schema
// named "schema:s" (schemas and relations are separate namespaces).
// Unqualified names are created in, and looked up through, the session's
// search_path.

const kindSchema = "schema"

func schemaKey(name string) string { return "schema:" + name }

// schemaExists reports whether schema name exists (public always does).
func (e *Engine) schemaExists(name string) bool {
	return name == "public" || e.cat.get(schemaKey(name)) != nil
}

// splitQualified splits "s.t" into its schema and name ("" schema when
// unqualified).
func splitQualified(name string) (string, string) {
	if i := strings.IndexByte(name, '.'); i >= 0 {
		return name[:i], name[i+1:]
	}
	return "", name
}

// relSchema returns the schema and bare name of a catalog entry's name.
func relSchema(name string) (string, string) {
	s, n := splitQualified(name)
	if s == "" {
		return "public", n
	}
	return s, n
}

// searchPath returns the session's search_path schemas that exist, in
// order ("$user" and missing schemas skipped).
func (s *session) searchPath() []string {
	var out []string
	for _, p := range strings.Split(s.settings["search_path"], ",") {
		p = strings.TrimSpace(p)
		if len(p) >= 2 && p[0] == '"' && p[len(p)-1] == '"' {
			p = p[1 : len(p)-1]
		} else {
			p = strings.ToLower(p)
		}
		if p == "$user" {
			p = s.info.User
		}
		if p == "" || p == "pg_catalog" || !s.e.schemaExists(p) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// qualify maps a name as written to its catalog name. A qualified name's
// schema must exist. An unqualified name, for creating, goes to the first
// schema of the search_path; for finding, to the first schema of the
// search_path holding it.
func (s *session) qualify(name string, create bool) (string, error) {
	sch, n := splitQualified(name)
	if sch != "" {
		if strings.Contains(n, ".") {
			return "", pgerror.New(pgcode.Syntax, "improper qualified name (too many dotted names): %s", name)
		}
		if sch == "public" {
			return n, nil
		}
		if sch == "pg_catalog" || sch == "information_schema" {
			return name, nil
		}
		if !s.e.schemaExists(sch) {
			return "", pgerror.New(pgcode.InvalidSchemaName, "schema %q does not exist", sch)
		}
		return name, nil
	}
	path := s.searchPath()
	if create {
		if len(path) == 0 {
			return "", pgerror.New(pgcode.InvalidSchemaName, "no schema has been selected to create in")
		}
		if path[0] == "public" {
			return n, nil
		}
		return path[0] + "." + n, nil
	}
	for _, p := range path {
		q := n
		if p != "public" {
			q = p + "." + n
		}
		if s.e.cat.get(q) != nil {
			return q, nil
		}
	}
	return n, nil
}

// qualifyNames rewrites the relation names of a DDL statement to catalog
// names before it runs.
func (s *session) qualifyNames(st parser.Statement) error {
	var err error
	q := func(p *string, create bool) {
		if err == nil && *p != "" {
			*p, err = s.qualify(*p, create)
		}
	}
	switch x := st.(type) {
	case *parser.CreateTable:
		q(&x.Name, true)
	case *parser.CreateSource:
		q(&x.Name, true)
	case *parser.CreateMaterializedView:
		q(&x.Name, true)
	case *parser.CreateView:
		q(&x.Name, true)
	case *parser.CreateSink:
		q(&x.Name, true)
		q(&x.From, false)
	case *parser.CreateSequence:
		q(&x.Name, true)
	case *parser.CreateFunction:
		q(&x.Name, true)
	case *parser.CreateIndex:
		q(&x.Table, false)
	case *parser.AlterResume:
		q(&x.Name, false)
	case *parser.AlterTable:
		q(&x.Name, false)
		if x.Action == "rename" && err == nil {
			if sch, _ := splitQualified(x.Name); sch != "" {
				x.NewName = sch + "." + x.NewName
			}
		}
	case *parser.Truncate:
		for i := range x.Names {
			q(&x.Names[i], false)
		}
	case *parser.Drop:
		if strings.EqualFold(x.Kind, "SCHEMA") || strings.EqualFold(x.Kind, "INDEX") || strings.EqualFold(x.Kind, "SECRET") {
			return nil
		}
		for i := range x.Names {
			q(&x.Names[i], false)
		}
	case *parser.Describe:
		q(&x.Name, false)
	case *parser.ShowCreate:
		q(&x.Name, false)
	}
	return err
}

func (e *Engine) createSchema(ctx context.Context, x *parser.CreateSchema, w pgwire.ResultWriter) error {
	if strings.HasPrefix(x.Name, "pg_") {
		return pgerror.New(pgcode.ReservedName, "unacceptable schema name %q", x.Name).
			WithDetail("The prefix \"pg_\" is reserved for system schemas.")
	}
	exists := func() bool {
		return e.schemaExists(x.Name) || x.Name == "information_schema"
	}
	if exists() {
		if x.IfNotExists {
			return w.Notice(fmt.Sprintf("schema %q already exists, skipping", x.Name))
		}
		return pgerror.New(pgcode.DuplicateSchema, "schema %q already exists", x.Name)
	}
	return e.ddl(ctx, func() error {
		if exists() {
			return pgerror.New(pgcode.DuplicateSchema, "schema %q already exists", x.Name)
		}
		e.persist(&storage.CatalogEntry{ID: e.cat.allocID(), Kind: kindSchema, Name: schemaKey(x.Name), SQL: x.Text()})
		return nil
	})
}

// schemaObjects returns the objects of schema name, newest first.
func (e *Engine) schemaObjects(name string) []*storage.CatalogEntry {
	var out []*storage.CatalogEntry
	for _, ent := range e.cat.list("") {
		if ent.Kind != kindSchema && strings.HasPrefix(ent.Name, name+".") {
			out = append(out, ent)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out
}

func (e *Engine) dropSchema(ctx context.Context, x *parser.Drop) error {
	return e.ddl(ctx, func() error {
		for _, name := range x.Names {
			if name == "public" || name == "pg_catalog" || name == "information_schema" {
				return pgerror.Unsupported("dropping schema %s", name)
			}
			ent := e.cat.get(schemaKey(name))
			if ent == nil {
				if x.IfExists {
					continue
				}
				return pgerror.New(pgcode.InvalidSchemaName, "schema %q does not exist", name)
			}
			objs := e.schemaObjects(name)
			if len(objs) > 0 && !x.Cascade {
				var lines []string
				for i := len(objs) - 1; i >= 0; i-- {
					lines = append(lines, fmt.Sprintf("%s %s depends on schema %s", objs[i].Kind, objs[i].Name, name))
				}
				return pgerror.New(pgcode.DependentObjectsStillExist, "cannot drop schema %s because other objects depend on it", name).
					WithDetail("%s", strings.Join(lines, "\n")).
					WithHint("Use DROP ... CASCADE to drop the dependent objects too.")
			}
			for _, o := range objs {
				if err := e.dropCreatingErr(append(e.allDependents(o), o)...); err != nil {
					return err
				}
			}
			for _, o := range objs {
				if e.cat.byIDGet(o.ID) == nil {
					continue // went with an earlier one
				}
				deps := e.allDependents(o)
				for i := len(deps) - 1; i >= 0; i-- {
					if e.cat.byIDGet(deps[i].ID) != nil {
						e.dropOne(deps[i])
					}
				}
				e.dropOne(o)
			}
			e.dropOne(ent)
		}
		return nil
	})
}

// userSchemaRows are pg_namespace's rows of the schemas users created.
func userSchemaRows(env *sysEnv) []types.Row {
	var out []types.Row
	for _, ent := range env.entries {
		if ent.Kind == kindSchema && ent.Name != schemaKey("public") {
			out = append(out, mkRow(relOID(ent), strings.TrimPrefix(ent.Name, "schema:"), roleOID(env.roles, entryOwner(ent)), aclText(ent)))
		}
	}
	return out
}

// schemaOID returns the namespace oid and bare name of a relation's
// catalog name, for pg_class.
func schemaOID(env *sysEnv, name string) (int64, string) {
	sch, n := splitQualified(name)
	if sch == "" {
		return oidPublic, n
	}
	for _, ent := range env.entries {
		if ent.Kind == kindSchema && ent.Name == schemaKey(sch) {
			return relOID(ent), n
		}
	}
	return oidPublic, n
}

// columnDefault is information_schema.columns' column_default,
// is_identity and identity_generation of column i of a user table, as
// PostgreSQL shows them (a sequence default as nextval('s'::regclass)).
func columnDefault(cols []storage.ColumnEntry, i int) (any, string, any) {
	if i >= len(cols) {
		return nil, "NO", nil
	}
	c := cols[i]
	if c.Identity != "" {
		return nil, "YES", strings.ToUpper(c.Identity)
	}
	if c.Default == "" {
		return nil, "NO", nil
	}
	d := c.Default
	if strings.HasPrefix(d, "nextval('") && strings.HasSuffix(d, "')") {
		d = strings.TrimSuffix(d, ")") + "::regclass)"
	}
	return d, "NO", nil
}
