package server

import (
	"testing"

	"sluice/sql/types"
)

// TestPgTypeRows checks pg_type's rows against Sluice's types: each type
// has a row under its oid and name, each array row names its element, and
// regtype knows the array oid.
func TestPgTypeRows(t *testing.T) {
	byOID := map[int64]pgTypeRow{}
	for _, r := range pgTypeRows {
		byOID[r.oid] = r
	}
	for _, ti := range pgTypes {
		r, ok := byOID[int64(ti.t.OID())]
		if !ok || r.name != ti.name {
			t.Errorf("%s (oid %d): pg_type row %+v", ti.name, ti.t.OID(), r)
			continue
		}
		if _, typed := types.ArrayElem(ti.t.Fam); ti.t.Fam == types.TextArray || typed {
			continue
		}
		a, ok := byOID[r.array]
		if !ok || a.elem != r.oid || a.category != "A" || a.name != "_"+r.name {
			t.Errorf("%s: array type %d: %+v", r.name, r.array, a)
		}
		if e, ok := types.ArrayElemOID(uint32(r.array)); !ok || int64(e) != r.oid {
			t.Errorf("%s: types.ArrayElemOID(%d) = %d, %v", r.name, r.array, e, ok)
		}
	}
	funcs := map[int64]bool{}
	for _, f := range pgTypeFuncs {
		funcs[f.oid] = true
	}
	for _, r := range pgTypeRows {
		for _, f := range []int64{r.subscript, r.input, r.output, r.receive, r.send, r.modin, r.modout, r.analyze} {
			if f != 0 && !funcs[f] {
				t.Errorf("%s: function %d is not in pgTypeFuncs", r.name, f)
			}
		}
	}
}
