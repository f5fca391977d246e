package server

import (
	"sluice/sql/types"
	"sluice/storage"
)

// sluice_dead_letters lists the bad records kept by sources with
// on_error = 'dead_letter': the raw bytes with their provenance. They are
// stored with the checkpoint, so after recovery each appears once.
func init() {
	addSys(&sysTable{schema: "pg_catalog", name: "sluice_dead_letters", oid: 13900, kind: 'v',
		cols: []types.Column{
			{Name: "source", Type: types.TText}, {Name: "topic", Type: types.TText}, {Name: "partition", Type: types.TInt4},
			{Name: "offset", Type: types.TInt8}, {Name: "error", Type: types.TText}, {Name: "raw", Type: types.TBytea},
		},
		rows: func(*sysEnv) []types.Row { return nil }, // computed by erows
		erows: func(e *Engine) ([]types.Row, error) {
			// Each job reading a source has its own reader: report each
			// bad record once.
			var rows []types.Row
			seen := map[string]bool{}
			err := e.db.Scan([]byte{storage.SpaceDeadLetter, '/'}, func(_, v []byte) error {
				r, err := types.DecodeRow(v)
				if err != nil {
					return err
				}
				k := string(types.EncodeRow(nil, r[:4]))
				if !seen[k] {
					seen[k] = true
					rows = append(rows, r)
				}
				return nil
			})
			return rows, err
		}})
}
