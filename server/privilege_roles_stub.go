package server

// TEMPORARY (privs branch): a stand-in for the role catalog, which the
// auth work builds (CREATE/ALTER/DROP ROLE, pg_roles). The lead replaces
// this file with the real catalog when merging: roleDir must then answer
// from it, and roleOID give each role's pg_authid oid.
//
// Here: the bootstrap user "sluice" and "postgres" are superusers, and
// every other name is an ordinary role that exists.

import "hash/fnv"

// stubRoles is the temporary roleDirectory.
type stubRoles struct{}

func (stubRoles) isSuperuser(role string) bool { return role == bootstrapRole || role == "postgres" }

func (stubRoles) exists(role string) bool { return role != "" }

// roleDir returns the engine's role directory.
func (e *Engine) roleDir() roleDirectory { return stubRoles{} }

// roleOID is the oid of role (pg_class.relowner, pg_namespace.nspowner):
// the bootstrap superuser is 10, as in PostgreSQL; others get a stable
// oid from their name.
func roleOID(role string) int64 {
	if role == "" || role == bootstrapRole {
		return oidOwner
	}
	h := fnv.New32a()
	h.Write([]byte(role))
	return 1<<30 + int64(h.Sum32()%(1<<29))
}
