package server

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"sluice/exec/eval"
	"sluice/server/pgwire"
	"sluice/sql/acl"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// GRANT and REVOKE on tables, views, materialized views, sources and
// sequences (the relation kinds; ON [TABLE] and ALL TABLES IN SCHEMA) and
// on schemas, following PostgreSQL's ExecGrant_Relation and
// merge_acl_with_grant: the owner, a superuser (acting as the owner) or a
// holder of the grant option grants; a role with some privileges but no
// grant option gets a warning (01007) and nothing changes; a role with
// none gets 42501.

// qualifyAndAuthorize maps a statement's names to catalog names and checks
// the privileges it needs (privilege.go).
func (s *session) qualifyAndAuthorize(st parser.Statement) error {
	if err := s.qualifyNames(st); err != nil {
		return err
	}
	return s.authorize(st)
}

// relationKinds are the kinds GRANT ... ON [TABLE] applies to.
var relationKinds = map[string]bool{kindTable: true, kindView: true, kindMView: true, kindSource: true, kindSequence: true}

// grantTargets resolves the objects of a GRANT or REVOKE.
func (s *session) grantTargets(x *parser.Grant) ([]*storage.CatalogEntry, error) {
	var out []*storage.CatalogEntry
	switch x.On {
	case "schema":
		for _, n := range x.Objects {
			ent := s.e.schemaEntry(n)
			if ent == nil {
				return nil, pgerror.New(pgcode.InvalidSchemaName, "schema %q does not exist", n)
			}
			out = append(out, ent)
		}
	case "all tables":
		for _, n := range x.Objects {
			if s.e.schemaEntry(n) == nil {
				return nil, pgerror.New(pgcode.InvalidSchemaName, "schema %q does not exist", n)
			}
			for _, ent := range s.e.cat.list("") {
				if sch, _ := relSchema(ent.Name); sch == n && relationKinds[ent.Kind] && ent.Kind != kindSequence {
					out = append(out, ent)
				}
			}
		}
	default:
		for _, n := range x.Objects {
			q, err := s.qualify(n, false)
			if err != nil {
				return nil, err
			}
			ent := s.e.cat.get(q)
			if ent == nil || ent.Kind == kindSchema || ent.Kind == kindFunction {
				return nil, pgerror.New(pgcode.UndefinedTable, "relation %q does not exist", n)
			}
			if x.On == "sequence" && ent.Kind != kindSequence {
				return nil, pgerror.New(pgcode.WrongObjectType, "%q is not a sequence", n)
			}
			if !relationKinds[ent.Kind] {
				return nil, pgerror.Unsupported("GRANT and REVOKE on %s %s", objWord(ent), objName(ent)).
					WithHint("privileges apply to tables, views, materialized views, sources, sequences and schemas")
			}
			out = append(out, ent)
		}
	}
	return out, nil
}

// grantPrivileges is the privilege set x names for an entry of ent's kind.
func grantPrivileges(x *parser.Grant, ent *storage.CatalogEntry) (acl.Privilege, error) {
	all, word := kindPrivileges(ent)
	if x.Privileges == nil {
		return all, nil
	}
	var p acl.Privilege
	for _, n := range x.Privileges {
		b, ok := acl.Parse(n)
		if !ok || b&all == 0 {
			return 0, pgerror.New(pgcode.InvalidGrantOperation, "invalid privilege type %s for %s", strings.ToUpper(n), word)
		}
		p |= b
	}
	return p, nil
}

// grantees resolves the role names of x ("" is PUBLIC).
func (s *session) grantees(x *parser.Grant) ([]string, error) {
	var out []string
	for _, g := range x.Grantees {
		switch g {
		case "public":
			if x.GrantOption && !x.Revoke {
				return nil, pgerror.New(pgcode.InvalidGrantOperation, "grant options can only be granted to roles")
			}
			out = append(out, "")
			continue
		case "current_user", "current_role", "session_user":
			g = s.role()
		default:
			g = strings.Trim(g, `"`)
		}
		if !s.e.roleDir().exists(g) {
			return nil, pgerror.New(pgcode.UndefinedObject, "role %q does not exist", g)
		}
		out = append(out, g)
	}
	return out, nil
}

// grant runs GRANT or REVOKE.
func (s *session) grant(ctx context.Context, x *parser.Grant, w pgwire.ResultWriter) error {
	tag := "GRANT"
	if x.Revoke {
		tag = "REVOKE"
	}
	grantees, err := s.grantees(x)
	if err != nil {
		return err
	}
	role := s.role()
	var notices [][2]string // SQLSTATE, message
	err = s.e.ddl(ctx, func() error {
		targets, err := s.grantTargets(x)
		if err != nil {
			return err
		}
		var changed []*storage.CatalogEntry
		for _, ent := range targets {
			want, err := grantPrivileges(x, ent)
			if err != nil {
				return err
			}
			owner := entryOwner(ent)
			a := entryACL(ent)
			grantor := role
			if s.e.superuser(role) || role == owner {
				grantor = owner // a superuser grants as the owner, as in PostgreSQL
			} else {
				held, grantable := a.Rights(role)
				if held == 0 {
					if ent.Kind == kindSchema {
						return permissionDenied(ent)
					}
					if err := s.e.requireSchema(role, ent.Name, acl.Usage); err != nil {
						return err
					}
					return permissionDenied(ent)
				}
				if grantable&want != want {
					code, verb := string(pgcode.WarningPrivilegeNotGranted), "were granted"
					if x.Revoke {
						code, verb = string(pgcode.WarningPrivilegeNotRevoked), "could be revoked"
					}
					what := "no"
					if grantable&want != 0 {
						what = "not all"
					}
					notices = append(notices, [2]string{code, fmt.Sprintf("%s privileges %s for %q", what, verb, objName(ent))})
					want &= grantable
				}
			}
			if want == 0 {
				continue
			}
			for _, g := range grantees {
				if x.Revoke {
					var blocked string
					a, blocked = a.Revoke(grantor, g, want, x.GrantOption, x.Cascade, owner)
					if blocked != "" {
						return pgerror.New(pgcode.DependentObjectsStillExist, "dependent privileges exist").
							WithHint("Use CASCADE to revoke them too.")
					}
				} else {
					a = a.Grant(grantor, g, want, x.GrantOption)
				}
			}
			nt := copyEntry(ent)
			nt.ACL = a.Strings()
			if nt.ACL == nil {
				nt.ACL = []string{} // every privilege revoked: not the default
			}
			if ent.ID == 0 { // schema public's first change of privileges
				nt.ID = s.e.cat.allocID()
				nt.SQL = "CREATE SCHEMA public"
			}
			changed = append(changed, nt)
		}
		for _, nt := range changed {
			s.e.persist(nt)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, n := range notices {
		var err error
		if ww, ok := w.(pgwire.Warner); ok {
			err = ww.Warning(n[0], n[1])
		} else {
			err = w.Notice(n[1])
		}
		if err != nil {
			return err
		}
	}
	return w.Complete(tag)
}

// sessionPrivs answers has_table_privilege and has_schema_privilege for a
// session.
type sessionPrivs struct{ s *session }

// HasPrivilege implements eval.Privileges.
func (p sessionPrivs) HasPrivilege(kind, role string, obj types.Datum, privs string) (bool, error) {
	s := p.s
	if role == "" {
		role = s.role()
	} else if !s.e.roleDir().exists(role) {
		return false, pgerror.New(pgcode.UndefinedObject, "role %q does not exist", role)
	}
	var ent *storage.CatalogEntry
	switch kind {
	case "schema":
		name := obj.S
		if obj.K == types.KInt {
			name = ""
			for _, e := range s.e.cat.list(kindSchema) {
				if relOID(e) == obj.I {
					name = strings.TrimPrefix(e.Name, "schema:")
				}
			}
			if obj.I == oidPublic {
				name = "public"
			}
			if obj.I == oidPgCatalog || obj.I == oidInfoSchema {
				return true, nil
			}
		} else if parts := eval.QualifiedNameParts(name); len(parts) == 1 {
			name = parts[0]
		}
		if name == "pg_catalog" || name == "information_schema" {
			return true, nil
		}
		if ent = s.e.schemaEntry(name); ent == nil {
			return false, pgerror.New(pgcode.InvalidSchemaName, "schema %q does not exist", obj.S)
		}
	default:
		if obj.K == types.KInt {
			if obj.I < oidFirstUser {
				return true, nil // a system relation: readable by all
			}
			ent = s.e.cat.byIDGet(uint64(obj.I - oidFirstUser))
			if ent == nil {
				return false, nil
			}
		} else {
			parts := eval.QualifiedNameParts(obj.S)
			if len(parts) == 0 || len(parts) > 2 {
				return false, pgerror.New(pgcode.InvalidParameterValue, "invalid name syntax")
			}
			schema, name := "", parts[len(parts)-1]
			if len(parts) == 2 {
				schema = parts[0]
			}
			rel, err := s.catalogView().Resolve(schema, name)
			if err != nil {
				return false, err
			}
			if ent = s.e.cat.byIDGet(rel.ID); ent == nil || rel.OID < oidFirstUser {
				return true, nil // a system relation
			}
		}
	}
	want, opts, err := parsePrivilegeString(privs)
	if err != nil {
		return false, err
	}
	if s.e.superuser(role) {
		return true, nil
	}
	held, grantable := entryACL(ent).Rights(role)
	return held&want != 0 || grantable&opts != 0, nil
}

// parsePrivilegeString reads has_*_privilege's privilege list: names
// separated by commas, each optionally WITH GRANT OPTION.
func parsePrivilegeString(s string) (privs, opts acl.Privilege, err error) {
	for _, part := range strings.Split(s, ",") {
		f := strings.Fields(strings.ToLower(part))
		withOpt := false
		if len(f) == 4 && f[1] == "with" && f[2] == "grant" && f[3] == "option" {
			f, withOpt = f[:1], true
		}
		if len(f) != 1 {
			return 0, 0, pgerror.New(pgcode.InvalidParameterValue, "unrecognized privilege type: %q", strings.TrimSpace(part))
		}
		p, ok := acl.Parse(f[0])
		if !ok || f[0] == "temp" {
			return 0, 0, pgerror.New(pgcode.InvalidParameterValue, "unrecognized privilege type: %q", strings.TrimSpace(part))
		}
		if withOpt {
			opts |= p
		} else {
			privs |= p
		}
	}
	return privs, opts, nil
}

// aclText is the ACL column value of an entry (relacl, nspacl): NULL while
// it has the default ACL, as in PostgreSQL.
func aclText(ent *storage.CatalogEntry) any {
	if ent == nil || ent.ACL == nil {
		return nil
	}
	return entryACL(ent).Strings()
}

// sortedGrantees is for information_schema.table_privileges: the items of
// an ACL in a stable order.
func sortedItems(a acl.ACL) acl.ACL {
	out := append(acl.ACL(nil), a...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Grantor != out[j].Grantor {
			return out[i].Grantor < out[j].Grantor
		}
		return out[i].Grantee < out[j].Grantee
	})
	return out
}

// publicSchemaRow is pg_namespace's row of schema public, whose ACL is
// always shown (as PostgreSQL 15 shows {pg_database_owner=UC/...,=U/...}).
func publicSchemaRow(env *sysEnv) types.Row {
	ent := &storage.CatalogEntry{Kind: kindSchema, Name: schemaKey("public"), Owner: bootstrapRole}
	for _, e := range env.entries {
		if e.Kind == kindSchema && e.Name == ent.Name {
			ent = e
		}
	}
	return mkRow(oidPublic, "public", roleOID(env.roles, entryOwner(ent)), entryACL(ent).Strings())
}

// setOwnerACL fills a system row's owner (column ownerCol) and ACL
// (aclCol) from a catalog entry.
func setOwnerACL(env *sysEnv, row types.Row, ownerCol, aclCol int, ent *storage.CatalogEntry) {
	row[ownerCol] = types.NewInt(roleOID(env.roles, entryOwner(ent)))
	if a := aclText(ent); a != nil {
		row[aclCol] = mkRow(a)[0]
	}
}

// RoleName implements eval.Privileges: the role with oid in the role
// catalog; PostgreSQL's "unknown (OID=n)" otherwise.
func (p sessionPrivs) RoleName(oid int64) string {
	for _, r := range p.s.e.roles.list() {
		if r.OID == oid {
			return r.Name
		}
	}
	return fmt.Sprintf("unknown (OID=%d)", oid)
}
