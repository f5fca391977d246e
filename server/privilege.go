package server

import (
	"context"
	"strings"

	"sluice/planner/cat"
	"sluice/sql/acl"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/storage"
)

// Privileges, as in PostgreSQL. Every catalog object records its owner
// (the role that created it; storage.CatalogEntry.Owner, "" for entries
// older than owners: the bootstrap superuser) and its access-control list
// (CatalogEntry.ACL, aclitem texts; nil is the default: the owner holds
// every privilege of the object's kind). Indexes belong to their table's
// owner, as in PostgreSQL. Superusers pass every check.
//
// Where the checks are made:
//   - reads and writes of relations: in the planner, as it resolves each
//     relation (planner/privilege.go), through Engine.checkAccess; a
//     view's body with its owner's rights;
//   - DDL, TRUNCATE and COPY FROM: session.authorize, before the
//     statement runs (or is deferred to COMMIT in a transaction block);
//   - GRANT and REVOKE: privilege_grant.go.
//
// The roles themselves (who exists, who is a superuser) come from a
// roleDirectory, which the role catalog answers (privilege_roles.go).

// bootstrapRole is the superuser that owns what has no recorded owner.
const bootstrapRole = "sluice"

// roleDirectory answers the questions privilege checks ask about roles.
type roleDirectory interface {
	isSuperuser(role string) bool
	exists(role string) bool
}

type roleKey struct{}

// withRole returns ctx carrying the role a statement runs as; the engine
// reads it (roleOf) to record the owner of what the statement creates.
func withRole(ctx context.Context, role string) context.Context {
	return context.WithValue(ctx, roleKey{}, role)
}

// roleOf is the role ctx carries ("" for the server's own work).
func roleOf(ctx context.Context) string {
	r, _ := ctx.Value(roleKey{}).(string)
	return r
}

// role is the session's role.
func (s *session) role() string {
	if s.info.User == "" {
		return bootstrapRole
	}
	return s.info.User
}

// superuser reports whether role passes every check; "" is the server's
// own work.
func (e *Engine) superuser(role string) bool {
	return role == "" || e.roleDir().isSuperuser(role)
}

// entryOwner is the owner of a catalog entry.
func entryOwner(ent *storage.CatalogEntry) string {
	if ent.Owner == "" {
		return bootstrapRole
	}
	return ent.Owner
}

// objWord is PostgreSQL's word for an entry's kind in messages.
func objWord(ent *storage.CatalogEntry) string {
	switch ent.Kind {
	case kindMView:
		return "materialized view"
	case "":
		return "relation"
	}
	return ent.Kind
}

// objName is an entry's bare name (no schema), as PostgreSQL's messages
// name objects.
func objName(ent *storage.CatalogEntry) string {
	if ent.Kind == kindSchema {
		return strings.TrimPrefix(ent.Name, "schema:")
	}
	_, n := relSchema(ent.Name)
	return n
}

// kindPrivileges is every privilege an entry's kind has (what GRANT ALL
// gives) and the word of its kind in 0LP01 messages.
func kindPrivileges(ent *storage.CatalogEntry) (acl.Privilege, string) {
	switch ent.Kind {
	case kindSchema:
		return acl.AllSchema, "schema"
	case kindSequence:
		return acl.Select | acl.Update | acl.Usage, "sequence"
	case kindFunction:
		return acl.Execute, "function"
	}
	return acl.AllTable, "table"
}

// defaultACL is an entry's ACL before any GRANT or REVOKE, as
// PostgreSQL's acldefault: the owner holds every privilege; PUBLIC may
// EXECUTE functions and, in schema public, USAGE (PostgreSQL 15's public
// schema: CREATE only for its owner).
func defaultACL(ent *storage.CatalogEntry) acl.ACL {
	owner := entryOwner(ent)
	all, _ := kindPrivileges(ent)
	a := acl.Default(owner, all)
	switch {
	case ent.Kind == kindSchema && ent.Name == schemaKey("public"):
		a = append(a, acl.Item{Grantor: owner, Privs: acl.Usage})
	case ent.Kind == kindFunction:
		a = append(a, acl.Item{Grantor: owner, Privs: acl.Execute})
	}
	return a
}

// entryACL is an entry's ACL.
func entryACL(ent *storage.CatalogEntry) acl.ACL {
	if ent.ACL == nil {
		return defaultACL(ent)
	}
	a, err := acl.FromStrings(ent.ACL)
	if err != nil {
		// Unreadable: fall back to the owner alone, never to more.
		all, _ := kindPrivileges(ent)
		return acl.Default(entryOwner(ent), all)
	}
	return a
}

// schemaEntry returns the catalog entry of schema name; public, which has
// one only once its privileges change, gets a stand-in owned by the
// bootstrap superuser. nil if there is no such schema.
func (e *Engine) schemaEntry(name string) *storage.CatalogEntry {
	if ent := e.cat.get(schemaKey(name)); ent != nil {
		return ent
	}
	if name == "public" {
		return &storage.CatalogEntry{Kind: kindSchema, Name: schemaKey("public"), Owner: bootstrapRole}
	}
	return nil
}

// holds reports whether role holds every privilege of priv on ent.
func (e *Engine) holds(role string, ent *storage.CatalogEntry, priv acl.Privilege) bool {
	if e.superuser(role) {
		return true
	}
	privs, _ := entryACL(ent).Rights(role)
	return privs&priv == priv
}

// permissionDenied is PostgreSQL's 42501 for an object.
func permissionDenied(ent *storage.CatalogEntry) error {
	return pgerror.New(pgcode.InsufficientPrivilege, "permission denied for %s %s", objWord(ent), objName(ent))
}

// require fails with 42501 unless role holds priv on ent.
func (e *Engine) require(role string, ent *storage.CatalogEntry, priv acl.Privilege) error {
	if e.holds(role, ent, priv) {
		return nil
	}
	return permissionDenied(ent)
}

// requireOwner fails with 42501 unless role owns ent (or is a superuser).
func (e *Engine) requireOwner(role string, ent *storage.CatalogEntry) error {
	if e.superuser(role) || entryOwner(ent) == role {
		return nil
	}
	return pgerror.New(pgcode.InsufficientPrivilege, "must be owner of %s %s", objWord(ent), objName(ent))
}

// requireSchema fails with 42501 unless role holds priv on the schema of
// the catalog name name.
func (e *Engine) requireSchema(role, name string, priv acl.Privilege) error {
	sch, _ := relSchema(name)
	if ent := e.schemaEntry(sch); ent != nil {
		return e.require(role, ent, priv)
	}
	return nil
}

// checkAccess is the planner's Access: role must hold priv on rel, and
// USAGE on its schema.
func (e *Engine) checkAccess(role string, rel *cat.Relation, priv acl.Privilege) error {
	if e.superuser(role) {
		return nil
	}
	ent := e.cat.byIDGet(rel.ID)
	if ent == nil {
		return nil
	}
	if err := e.requireSchema(role, ent.Name, acl.Usage); err != nil {
		return err
	}
	return e.require(role, ent, priv)
}

// internalConnectors are the connectors that reach neither the network
// nor the file system: any role may create sources and sinks with them.
var internalConnectors = map[string]bool{"datagen": true, "nexmark": true, "blackhole": true}

// requireConnector refuses a source or sink whose connector reaches the
// network or the file system to a role that is not a superuser.
func (e *Engine) requireConnector(role, what string, with parser.Options) error {
	c, _ := with.Get("connector")
	c = strings.ToLower(c)
	if c == "" || internalConnectors[c] || e.superuser(role) {
		return nil
	}
	return pgerror.New(pgcode.InsufficientPrivilege, "must be superuser to create a %s %s", c, what).
		WithHint("A %s connector reaches the network or the file system; a superuser creates the %s. Any role may use datagen, nexmark and blackhole.", c, what)
}

// authorize checks the privileges a DDL statement, TRUNCATE or COPY FROM
// needs before it runs; queries and DML are checked by the planner.
func (s *session) authorize(st parser.Statement) error {
	e, role := s.e, s.role()
	if e.superuser(role) {
		return nil
	}
	create := func(name string) error { return e.requireSchema(role, name, acl.Create) }
	ownerIfExists := func(name string) error {
		if ent := e.cat.get(name); ent != nil {
			return e.requireOwner(role, ent)
		}
		return nil
	}
	switch x := st.(type) {
	case *parser.CreateTable:
		return create(x.Name)
	case *parser.CreateView:
		if x.OrReplace {
			if err := ownerIfExists(x.Name); err != nil {
				return err
			}
		}
		return create(x.Name)
	case *parser.CreateMaterializedView:
		if x.OrReplace && e.cat.get(x.Name) != nil {
			return ownerIfExists(x.Name)
		}
		return create(x.Name)
	case *parser.CreateSequence:
		return create(x.Name)
	case *parser.CreateFunction:
		if x.OrReplace {
			if err := ownerIfExists(x.Name); err != nil {
				return err
			}
		}
		return create(x.Name)
	case *parser.CreateSource:
		if err := e.requireConnector(role, "source", x.With); err != nil {
			return err
		}
		return create(x.Name)
	case *parser.CreateSink:
		if err := e.requireConnector(role, "sink", x.With); err != nil {
			return err
		}
		return create(x.Name)
	case *parser.CreateSchema:
		db := s.info.Database
		if db == "" {
			db = "sluice"
		}
		return pgerror.New(pgcode.InsufficientPrivilege, "permission denied for database %s", db).
			WithHint("A superuser creates schemas (and may GRANT CREATE on them).")
	case *parser.CreateSecret:
		return errSecretsSuperuser("create")
	case *parser.AlterSecret:
		return errSecretsSuperuser("alter")
	case *parser.CreateIndex:
		return ownerIfExists(x.Table)
	case *parser.AlterTable:
		return ownerIfExists(x.Name)
	case *parser.AlterResume:
		return ownerIfExists(x.Name)
	case *parser.Truncate:
		for _, n := range x.Names {
			if ent := e.cat.get(n); ent != nil {
				if err := e.requireSchema(role, ent.Name, acl.Usage); err != nil {
					return err
				}
				if err := e.require(role, ent, acl.Truncate); err != nil {
					return err
				}
			}
		}
	case *parser.Drop:
		return s.authorizeDrop(role, x)
	case *parser.Copy:
		if x.Query != nil || x.File != "" || x.Program {
			return nil // the planner checks the query; files are refused
		}
		schema, name := "", x.Table
		if i := strings.LastIndexByte(name, '.'); i >= 0 {
			schema, name = name[:i], name[i+1:]
		}
		rel, err := s.catalogView().Resolve(schema, name)
		if err != nil || rel.Kind == cat.System {
			return nil // COPY reports it
		}
		priv := acl.Select
		if x.From {
			priv = acl.Insert
		}
		return e.checkAccess(role, rel, priv)
	}
	return nil
}

// authorizeDrop checks that role owns what DROP names.
func (s *session) authorizeDrop(role string, x *parser.Drop) error {
	e := s.e
	switch strings.ToUpper(x.Kind) {
	case "SECRET":
		return errSecretsSuperuser("drop")
	case "INDEX":
		for _, n := range x.Names {
			if t, _, _ := e.indexOwner(n); t != nil && !e.superuser(role) && entryOwner(t) != role {
				return pgerror.New(pgcode.InsufficientPrivilege, "must be owner of index %s", n)
			}
		}
	case "SCHEMA":
		for _, n := range x.Names {
			if ent := e.cat.get(schemaKey(n)); ent != nil {
				if err := e.requireOwner(role, ent); err != nil {
					return err
				}
			}
		}
	default:
		kind := dropKinds[strings.ToUpper(x.Kind)]
		for _, n := range x.Names {
			if ent := e.cat.get(n); ent != nil && ent.Kind == kind {
				if err := e.requireOwner(role, ent); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// requireSequence checks a sequence function's privileges: any one of
// anyOf (nextval: USAGE or UPDATE; currval: USAGE or SELECT; setval:
// UPDATE), as PostgreSQL. A sequence owned by a table (serial and
// identity columns) may also be advanced by a role that may INSERT into
// the table: PostgreSQL exempts identity columns; Sluice cannot tell them
// from serial ones when the default runs, and exempts both.
func (s *session) requireSequence(ent *storage.CatalogEntry, anyOf acl.Privilege) error {
	role := s.role()
	if s.e.superuser(role) {
		return nil
	}
	privs, _ := entryACL(ent).Rights(role)
	if privs&anyOf != 0 {
		return s.e.requireSchema(role, ent.Name, acl.Usage)
	}
	if anyOf&acl.Usage != 0 && ent.Sequence != nil && ent.Sequence.OwnedBy != 0 {
		if t := s.e.cat.byIDGet(ent.Sequence.OwnedBy); t != nil && s.e.holds(role, t, acl.Insert) {
			return nil
		}
	}
	return permissionDenied(ent)
}

// errSecretsSuperuser refuses a secret statement to a non-superuser:
// secrets feed only the connectors that touch the network or the file
// system, which superusers alone may create.
func errSecretsSuperuser(verb string) error {
	return pgerror.New(pgcode.InsufficientPrivilege, "must be superuser to %s secrets", verb).
		WithHint("Secrets hold credentials for sources and sinks, which only superusers create.")
}
