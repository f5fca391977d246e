package server

import (
	"context"
	"encoding/binary"
	"sync"

	"sluice/exec/eval"
	"sluice/exec/flow"
	"sluice/exec/ops"
	"sluice/exec/spec"
	"sluice/planner"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// tableWriter serializes a table's DML. The table's current rows live in
// the write set (w/<table>/<key>), updated with the change log entry
// (l/<table>/<seq>) in one synced batch before the client is told the
// statement succeeded; the change then flows to the table's source.
type tableWriter struct {
	mu   sync.Mutex
	id   uint64
	name string
	cols []types.Column
	key  []int // primary key columns; nil: rows are keyed by a hidden row id
	seq  uint64
	// locks maps a write-set key to the transaction block that changed
	// the row and has not ended (see txn).
	locks map[string]*txn
	rowID uint64
	src   *flow.TableSource
	cons  *tableConstraints // NOT NULL, CHECK, UNIQUE, defaults (constraints.go)
}

func rowIDKey(table uint64) []byte {
	return storage.Key(storage.SpaceMeta, table, []byte("rowid"))
}

func (e *Engine) startTable(ent *storage.CatalogEntry) error {
	ts, err := e.rt.StartTable(ent.ID, ent.Name, ent.Key)
	if err != nil {
		return err
	}
	tw := &tableWriter{id: ent.ID, name: ent.Name, cols: ent.Cols(), key: ent.Key, seq: ts.LastSeq(), src: ts}
	if tw.cons, err = e.buildConstraints(ent); err != nil {
		// A default or check that no longer binds (a function it calls was
		// dropped) must not keep the server from starting: the table reads,
		// and its writes fail with the reason.
		e.cfg.Logf("table %s: constraints: %v", ent.Name, err)
		tw.cons = brokenConstraints(ent, err)
	}
	if ts.Backlog() > 0 {
		e.replaying = true
	}
	v, err := e.db.Get(rowIDKey(ent.ID))
	if err != nil {
		return err
	}
	if v != nil {
		tw.rowID, _ = binary.Uvarint(v)
	}
	e.tablesMu.Lock()
	e.tables[ent.ID] = tw
	e.tablesMu.Unlock()
	return nil
}

func (e *Engine) tableWriter(id uint64) (*tableWriter, error) {
	e.tablesMu.Lock()
	defer e.tablesMu.Unlock()
	tw := e.tables[id]
	if tw == nil {
		return nil, pgerror.New(pgcode.UndefinedTable, "table %d does not exist", id)
	}
	return tw, nil
}

func (tw *tableWriter) wkey(r types.Row) []byte {
	return ops.RelKey(storage.Key(storage.SpaceWrite, tw.id), tw.key, r)
}

// dml runs one DML statement's writes to tw: in the session's transaction
// block, or in a transaction of its own that commits (durably, and handed
// to the table's source) before it returns. A statement outside a block
// that meets a row locked by a block waits for the block to end and runs
// again.
func (s *session) dml(ctx context.Context, tw *tableWriter, f func(tx *txn) (int, error)) (int, error) {
	for {
		tx := s.tx
		own := tx == nil
		if own {
			tx = s.e.newTxn(false)
		} else if len(tx.ddl) > 0 {
			return 0, pgerror.New(pgcode.ActiveSQLTransaction, "cannot write rows in a transaction block that holds DDL").
				WithHint("Sluice runs DDL when the transaction block commits; COMMIT the DDL first.")
		}
		mark := len(tx.undo)
		tw.mu.Lock()
		n, err := f(tx)
		var epoch uint64
		if err == nil && own {
			epoch, err = tx.commit(ctx, tw)
		}
		tw.mu.Unlock()
		if err == nil {
			if own {
				return n, s.noteWrite(ctx, epoch)
			}
			return n, nil
		}
		if own {
			tx.rollback()
		} else {
			tx.undoTo(mark)
		}
		if lw, ok := err.(lockWait); ok {
			select {
			case <-lw.done:
				continue
			case <-ctx.Done():
				return 0, pgerror.New(pgcode.QueryCanceled, "canceling statement due to user request")
			}
		}
		return 0, err
	}
}

// insertInto inserts full-width rows into the table as one statement.
func (s *session) insertInto(ctx context.Context, tw *tableWriter, rows []types.Row) (int, error) {
	return s.dml(ctx, tw, func(tx *txn) (int, error) {
		if err := s.e.checkUniques(tx, tw, nil, rows); err != nil {
			return 0, err
		}
		tx.reserve(tw, len(rows))
		for _, r := range rows {
			if err := tw.check(r); err != nil {
				return 0, err
			}
			var k []byte
			if tw.key == nil {
				tw.rowID++
				k = storage.Key(storage.SpaceWrite, tw.id, flow.EncodeSeq(tw.rowID))
			} else {
				k = tw.wkey(r)
				old, err := tx.get(tw, k)
				if err != nil {
					return 0, err
				}
				if old != nil {
					return 0, dupKey(tw, r)
				}
			}
			if err := tx.insert(tw, k, r); err != nil {
				return 0, err
			}
		}
		return len(rows), nil
	})
}

func keyNames(tw *tableWriter) string {
	s := ""
	for i, k := range tw.key {
		if i > 0 {
			s += ", "
		}
		s += tw.cols[k].Name
	}
	return s
}

func keyValues(tw *tableWriter, r types.Row) string {
	s := ""
	for i, k := range tw.key {
		if i > 0 {
			s += ", "
		}
		s += types.FormatText(r[k], tw.cols[k].Type)
	}
	return s
}

// update runs UPDATE; out, when not nil, receives the new rows (RETURNING).
func (s *session) update(ctx context.Context, up *planner.Update, ectx *eval.Context, out *[]types.Row) (int, error) {
	tw, err := s.e.tableWriter(up.Table.ID)
	if err != nil {
		return 0, err
	}
	var pred func(types.Row) (bool, error)
	if up.Pred != nil {
		if pred, err = eval.CompilePredicate(up.Pred, ectx); err != nil {
			return 0, err
		}
	}
	lookup, err := keyLookup(up.Pred, tw, ectx)
	if err != nil {
		return 0, err
	}
	sets, err := tw.updateSets(up.Sets, ectx)
	if err != nil {
		return 0, err
	}
	return s.dml(ctx, tw, func(tx *txn) (int, error) {
		type change struct {
			oldKey   []byte
			old, new types.Row
		}
		var changes []change
		err := tx.scan(tw, pred, lookup, func(k []byte, r types.Row) error {
			nr := r.Copy()
			for c, fn := range sets {
				d, err := fn(r)
				if err != nil {
					return err
				}
				nr[c] = d
			}
			changes = append(changes, change{oldKey: k, old: r, new: nr})
			return nil
		})
		if err != nil {
			return 0, err
		}
		var oldRows, newRows []types.Row
		for _, c := range changes {
			oldRows, newRows = append(oldRows, c.old), append(newRows, c.new)
		}
		if err := s.e.checkUniques(tx, tw, oldRows, newRows); err != nil {
			return 0, err
		}
		// Rows whose key changes leave their old keys first, so that keys
		// may be swapped or shifted (SET id = id + 1) within the statement.
		for _, c := range changes {
			if err := tw.check(c.new); err != nil {
				return 0, err
			}
			if tw.key != nil && string(tw.wkey(c.new)) != string(c.oldKey) {
				if err := tx.put(tw, c.oldKey, nil); err != nil {
					return 0, err
				}
			}
		}
		for _, c := range changes {
			k := c.oldKey
			if tw.key != nil {
				if nk := tw.wkey(c.new); string(nk) != string(c.oldKey) {
					k = nk
					cur, err := tx.get(tw, k)
					if err != nil {
						return 0, err
					}
					if cur != nil {
						return 0, dupKey(tw, c.new)
					}
				}
			}
			if err := tx.put(tw, k, c.new); err != nil {
				return 0, err
			}
		}
		if out != nil {
			*out = newRows
		}
		return len(changes), nil
	})
}

func dupKey(tw *tableWriter, r types.Row) error {
	return pgerror.New(pgcode.UniqueViolation, "duplicate key value violates unique constraint \"%s_pkey\"", tw.name).
		WithDetail("Key (%s)=(%s) already exists.", keyNames(tw), keyValues(tw, r))
}

// delete runs DELETE; out, when not nil, receives the deleted rows
// (RETURNING).
func (s *session) delete(ctx context.Context, d *planner.Delete, ectx *eval.Context, out *[]types.Row) (int, error) {
	tw, err := s.e.tableWriter(d.Table.ID)
	if err != nil {
		return 0, err
	}
	var pred func(types.Row) (bool, error)
	if d.Pred != nil {
		if pred, err = eval.CompilePredicate(d.Pred, ectx); err != nil {
			return 0, err
		}
	}
	lookup, err := keyLookup(d.Pred, tw, ectx)
	if err != nil {
		return 0, err
	}
	return s.dml(ctx, tw, func(tx *txn) (int, error) {
		var keys [][]byte
		err := tx.scan(tw, pred, lookup, func(k []byte, r types.Row) error {
			keys = append(keys, k)
			if out != nil {
				*out = append(*out, r)
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		for _, k := range keys {
			if err := tx.put(tw, k, nil); err != nil {
				return 0, err
			}
		}
		return len(keys), nil
	})
}

// keyLookup evaluates the key values a predicate pins, if it pins them all.
func keyLookup(pred spec.Expr, tw *tableWriter, ectx *eval.Context) ([]types.Datum, error) {
	exprs := planner.KeyLookup(pred, tw.key)
	if exprs == nil {
		return nil, nil
	}
	out := make([]types.Datum, len(exprs))
	for i, x := range exprs {
		fn, err := eval.Compile(x, ectx)
		if err != nil {
			return nil, err
		}
		d, err := fn(nil)
		if err != nil {
			return nil, err
		}
		if t := tw.cols[tw.key[i]].Type; x.Type().Fam != t.Fam && !d.IsNull() {
			if d, err = types.Cast(d, x.Type(), t); err != nil {
				return nil, nil // not comparable as a key: scan instead
			}
		}
		out[i] = d
	}
	return out, nil
}

// insertRows inserts full-width rows (one datum per table column, in
// column order) into table tableID as one statement of the session: inside
// its transaction block if one is open, else committed durably before it
// returns. COPY FROM and INSERT share it.
func (s *session) insertRows(ctx context.Context, tableID uint64, rows []types.Row) (int, error) {
	tw, err := s.e.tableWriter(tableID)
	if err != nil {
		return 0, err
	}
	if s.tx == nil && len(rows) >= bulkMin {
		return s.bulkInsertRows(ctx, tw, rows)
	}
	return s.insertInto(ctx, tw, rows)
}

// scanMatching calls f for every committed row of the table matching pred
// (DDL that checks or rebuilds a table's rows). The caller holds tw.mu.
func (e *Engine) scanMatching(tw *tableWriter, pred func(types.Row) (bool, error), lookup []types.Datum, f func(k []byte, r types.Row) error) error {
	return e.newTxn(false).scan(tw, pred, lookup, f)
}
