package eval

import "sluice/sql/types"

// uuid: comparison operators between uuids (bytewise, as PostgreSQL's
// uuid_cmp) and gen_random_uuid(), a version 4 uuid per call. It is
// volatile: never constant-folded, so a column default or a select list
// calls it once per row.
func init() {
	for name := range cmpOps {
		reg(name, fams(types.UUID, types.UUID), types.TBool, buildCompare)
	}
	reg("gen_random_uuid", nil, types.TUUID, func(*bctx) (Fn, error) {
		return func(types.Row) (types.Datum, error) { return types.NewRandomUUID(), nil }, nil
	}).volatile = true
}
