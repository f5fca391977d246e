package server

import (
	"sluice/sql/types"
	"sluice/storage"
)

// sluice_dead_letters lists the bad records kept by sources with
// on_error = 'dead_letter': the raw bytes with their provenance. They are
// stored with the checkpoint, so after recovery each appears once. The
// same relation is sluice_catalog.dead_letters, with the other system
// relations.
func init() {
	cols := []types.Column{
		{Name: "source", Type: types.TText}, {Name: "topic", Type: types.TText}, {Name: "partition", Type: types.TInt4},
		{Name: "offset", Type: types.TInt8}, {Name: "error", Type: types.TText}, {Name: "raw", Type: types.TBytea},
	}
	for _, t := range []struct {
		schema, name string
		oid          int64
	}{{"pg_catalog", "sluice_dead_letters", 13900}, {"sluice_catalog", "dead_letters", 13915}} {
		addSys(&sysTable{schema: t.schema, name: t.name, oid: t.oid, kind: 'v', cols: cols,
			rows:  func(*sysEnv) []types.Row { return nil }, // computed by erows
			erows: deadLetters})
	}
}

// deadLetters reads the stored dead letters. Each job reading a source
// has its own reader: each bad record is reported once.
func deadLetters(e *Engine) ([]types.Row, error) {
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
}
