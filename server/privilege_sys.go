package server

import (
	"sluice/sql/acl"
	"sluice/sql/types"
)

// information_schema.table_privileges, as PostgreSQL's view: one row per
// privilege of each aclitem (the default ACL when none was granted) of
// tables, views and foreign tables (sources, sinks), shown to a user when
// it is the grantor or the grantee or the grantee is PUBLIC (a superuser
// sees all). The owner's privileges are grantable.
func init() {
	addSys(&sysTable{schema: "information_schema", name: "table_privileges", oid: 12190, kind: 'v',
		cols: colSpec("grantor:name grantee:name table_catalog:name table_schema:name table_name:name " +
			"privilege_type:varchar is_grantable:varchar with_hierarchy:varchar"),
		rows: tablePrivilegeRows})
}

func tablePrivilegeRows(env *sysEnv) []types.Row {
	var out []types.Row
	for _, r := range userRels(env) {
		if r.kind == "m" || r.kind == "S" {
			continue
		}
		sch, name := relSchema(r.e.Name)
		owner := entryOwner(r.e)
		for _, it := range sortedItems(entryACL(r.e)) {
			if !env.super && it.Grantor != env.user && it.Grantee != env.user && it.Grantee != "" {
				continue
			}
			grantee := it.Grantee
			if grantee == "" {
				grantee = "PUBLIC"
			}
			(it.Privs & acl.AllTable).Each(func(p acl.Privilege) {
				out = append(out, mkRow(it.Grantor, grantee, env.db, sch, name, p.Name(),
					yesNo(it.GrantOpts&p != 0 || it.Grantee == owner), yesNo(p == acl.Select)))
			})
		}
	}
	return out
}
