package server

import (
	"context"
	"fmt"

	"sluice/server/pgwire"
	"sluice/sql/acl"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/storage"
)

// alterOwner runs ALTER TABLE name OWNER TO role, for every relation kind
// (PostgreSQL's ALTER TABLE accepts views and sequences too). As in
// PostgreSQL: the current owner (session.authorize checked it) may give
// the object only to a role it is a member of — Sluice has no role
// membership, so to itself — and the new owner needs CREATE on the
// schema; a superuser gives it to anyone. The ACL follows the owner
// (acl.NewOwner), and so do the sequences of the table's serial columns.
func (s *session) alterOwner(ctx context.Context, x *parser.AlterTable, w pgwire.ResultWriter) error {
	e, role := s.e, s.role()
	newOwner := x.NewName
	switch newOwner {
	case "current_user", "current_role", "session_user":
		newOwner = role
	}
	if !e.roleDir().exists(newOwner) {
		return pgerror.New(pgcode.UndefinedObject, "role %q does not exist", newOwner)
	}
	return e.ddl(ctx, func() error {
		ent := e.cat.get(x.Name)
		if ent == nil || !relationKinds[ent.Kind] && ent.Kind != kindSink {
			if x.IfExists {
				return w.Notice(fmt.Sprintf("relation %q does not exist, skipping", x.Name))
			}
			return pgerror.New(pgcode.UndefinedTable, "relation %q does not exist", x.Name)
		}
		if err := e.requireOwner(role, ent); err != nil {
			return err
		}
		old := entryOwner(ent)
		if old == newOwner {
			return nil
		}
		if !e.superuser(role) {
			if newOwner != role {
				return pgerror.New(pgcode.InsufficientPrivilege, "must be member of role %q", newOwner)
			}
			if err := e.requireSchema(newOwner, ent.Name, acl.Create); err != nil {
				return err
			}
		}
		for _, o := range append([]*storage.CatalogEntry{ent}, e.ownedSequences(ent.ID)...) {
			nt := copyEntry(o)
			nt.Owner = newOwner
			if o.ACL != nil {
				nt.ACL = entryACL(o).NewOwner(old, newOwner).Strings()
				if nt.ACL == nil {
					nt.ACL = []string{}
				}
			}
			e.persist(nt)
		}
		return nil
	})
}
