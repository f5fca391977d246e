package ops

import (
	"sluice/exec/flow"
	"sluice/sql/types"
	"sluice/storage"
)

// UpsertKey turns the upsert stream of a FORMAT UPSERT source into exact
// changes. Its input's +1 rows replace the row with the same key, its -1
// rows delete the key (only the key columns matter); it emits the
// retraction of the row it replaces. The current row per key is its
// state, saved under s/<op>/<key> at each checkpoint.
type UpsertKey struct {
	key   []int
	opID  uint64 // state under s/<opID> (storage.AppendStateKey)
	rows  map[string]types.Row
	dirty map[string]struct{}
	kbuf  []byte
}

// NewUpsertKey creates the operator with id opID, restoring its state.
func NewUpsertKey(key []int, opID uint64, db *storage.DB) (*UpsertKey, error) {
	u := &UpsertKey{key: key, opID: opID, rows: map[string]types.Row{}, dirty: map[string]struct{}{}}
	if db != nil {
		err := db.Scan(storage.StatePrefix(u.opID), func(k, v []byte) error {
			r, err := types.DecodeRow(v)
			if err != nil {
				return err
			}
			u.rows[string(storage.StateUserKey(k))] = r
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return u, nil
}

// Process implements flow.Operator.
func (u *UpsertKey) Process(_ int, b *types.Batch, out *flow.Emitter) error {
	for i, r := range b.Rows {
		u.kbuf = RelKey(u.kbuf[:0], u.key, r)
		old, had := u.rows[string(u.kbuf)]
		if had {
			if err := out.Emit(old, -1); err != nil {
				return err
			}
		}
		k := string(u.kbuf)
		if b.Diffs[i] > 0 {
			u.rows[k] = r
			if err := out.Emit(r, 1); err != nil {
				return err
			}
		} else if had {
			delete(u.rows, k)
		}
		u.dirty[k] = struct{}{}
	}
	return nil
}

// Checkpoint implements flow.Operator.
func (u *UpsertKey) Checkpoint(b *flow.Barrier, _ *flow.Emitter) error {
	for k := range u.dirty {
		key := storage.AppendStateKey(nil, u.opID, []byte(k))
		if r, ok := u.rows[k]; ok {
			b.W.Set(key, types.EncodeRow(nil, r))
		} else {
			b.W.Delete(key)
		}
	}
	clear(u.dirty)
	return nil
}
