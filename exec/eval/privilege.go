package eval

import (
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Privileges is what has_table_privilege and has_schema_privilege ask:
// the session's view of the catalog's access-control lists (server
// implements it). role "" is the current user; obj is the object as given
// (a name or an oid); privs is PostgreSQL's privilege string
// ("SELECT, INSERT WITH GRANT OPTION").
type Privileges interface {
	HasPrivilege(kind, role string, obj types.Datum, privs string) (bool, error)
	// RoleName is pg_get_userbyid: the name of the role with oid.
	RoleName(oid int64) string
}

func init() {
	T := types.Text
	privFn := func(kind string, withRole bool) builder {
		return strictCall(func(ctx *Context, vals []types.Datum) (types.Datum, error) {
			if ctx == nil || ctx.Priv == nil {
				return types.Null, pgerror.New(pgcode.FeatureNotSupported, "has_%s_privilege() cannot be called here", kind)
			}
			role := ""
			if withRole {
				role, vals = vals[0].S, vals[1:]
			}
			ok, err := ctx.Priv.HasPrivilege(kind, role, vals[0], vals[1].S)
			if err != nil {
				return types.Null, err
			}
			return types.NewBool(ok), nil
		})
	}
	reg("pg_get_userbyid", fams(types.Oid), types.TName, func(b *bctx) (Fn, error) {
		ctx, arg := b.ctx, b.fn(0)
		return func(row types.Row) (types.Datum, error) {
			d, err := arg(row)
			if err != nil || d.IsNull() {
				return types.Null, err
			}
			if ctx == nil || ctx.Priv == nil {
				return str("sluice"), nil
			}
			return str(ctx.Priv.RoleName(d.I)), nil
		}, nil
	}).volatile = true
	for _, kind := range []string{"table", "schema"} {
		n := "has_" + kind + "_privilege"
		reg(n, fams(famAny, T), types.TBool, privFn(kind, false)).volatile = true
		reg(n, fams(famAny, famAny, T), types.TBool, privFn(kind, true)).volatile = true
	}
}
