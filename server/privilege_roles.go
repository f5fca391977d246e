package server

import (
	"fmt"
	"strings"

	"sluice/storage"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// The privilege checks ask the role catalog (role.go) through
// roleDirectory: whether a role is a superuser, whether it exists, and
// its OID (pg_class.relowner, pg_namespace.nspowner, aclitem display).
// Owners and grantees are recorded by name, so a role that owns or is
// granted anything can be neither dropped (2BP01, as PostgreSQL) nor
// renamed (0A000) until those are gone.

// catalogRoles is the roleDirectory of the engine's role catalog.
type catalogRoles struct{ rc *roleCatalog }

func (r catalogRoles) isSuperuser(role string) bool {
	e, ok := r.rc.get(role)
	return ok && e.Super
}

func (r catalogRoles) exists(role string) bool {
	_, ok := r.rc.get(role)
	return ok
}

// roleDir returns the engine's role directory.
func (e *Engine) roleDir() roleDirectory { return catalogRoles{e.roles} }

// roleOID is the OID of role among roles (a sysEnv's snapshot): the
// bootstrap superuser's is 10, as in PostgreSQL. A name the catalog does
// not hold (an owner recorded before roles existed) maps to 10 when it is
// the default owner, else 0.
func roleOID(roles []roleEntry, role string) int64 {
	if role == "" || role == bootstrapRole {
		for _, r := range roles {
			if r.Name == role {
				return r.OID
			}
		}
		return oidOwner
	}
	for _, r := range roles {
		if r.Name == role {
			return r.OID
		}
	}
	return 0
}

// roleDependents describes what refers to role by name: the objects it
// owns and the objects that grant it privileges, one line each in
// PostgreSQL's words ("owner of table t", "privileges for table u").
func (e *Engine) roleDependents(role string) []string {
	var out []string
	for _, ent := range e.cat.list("") {
		if ent.Owner == role {
			out = append(out, fmt.Sprintf("owner of %s %s", objWord(ent), objName(ent)))
		}
		if ent.ACL == nil {
			continue // the owner's default
		}
		for _, it := range entryACL(ent) {
			if it.Grantee == role || it.Grantor == role {
				out = append(out, fmt.Sprintf("privileges for %s %s", objWord(ent), objName(ent)))
				break
			}
		}
	}
	return out
}

// checkRoleUnused refuses to drop or rename a role that objects refer to.
func (e *Engine) checkRoleUnused(role, verb string) error {
	deps := e.roleDependents(role)
	if len(deps) == 0 {
		return nil
	}
	if verb == "drop" {
		return pgerror.New(pgcode.DependentObjectsStillExist, "role %q cannot be dropped because some objects depend on it", role).
			WithDetail("%s", strings.Join(deps, "\n")).
			WithHint("Drop those objects, change their owner (ALTER TABLE … OWNER TO) or revoke the privileges first.")
	}
	return pgerror.New(pgcode.FeatureNotSupported, "role %q cannot be renamed while objects depend on it", role).
		WithDetail("%s", strings.Join(deps, "\n")).
		WithHint("Sluice records owners and grantees by name: drop those objects, change their owner or revoke the privileges first.")
}

// ownsOrSuper reports whether the session's role owns ent or is a
// superuser: only they see an object's errors (SHOW SINKS' and SHOW
// MATERIALIZED VIEWS' Last Error), which may name hosts, users and
// paths of its connections.
func (s *session) ownsOrSuper(ent *storage.CatalogEntry) bool {
	role := s.role()
	return s.e.superuser(role) || entryOwner(ent) == role
}
