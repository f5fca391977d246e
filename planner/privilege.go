package planner

import (
	"sluice/planner/cat"
	"sluice/sql/acl"
)

// Privilege checks. The planner is the one place that sees every relation
// a statement reads or writes (FROM items, subqueries, view bodies, DML
// targets), so it asks Access about each as it resolves it, for Role. A
// view's body is planned with the rights of the view's owner, as in
// PostgreSQL. An empty Role (the server's own planning: restoring views
// at startup, binding defaults) checks nothing.

// checkAccess asks whether the current role holds priv on rel.
func (p *Planner) checkAccess(rel *cat.Relation, priv acl.Privilege) error {
	if p.Role == "" || p.Access == nil || rel.Kind == cat.System {
		return nil
	}
	return p.Access(p.Role, rel, priv)
}

// asOwner runs f with the rights of owner (a view body).
func (p *Planner) asOwner(owner string, f func() error) error {
	if p.Role == "" || owner == "" {
		return f()
	}
	saved := p.Role
	p.Role = owner
	defer func() { p.Role = saved }()
	return f()
}
