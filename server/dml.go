package server

import (
	"context"
	"encoding/binary"
	"sync"

	"sluice/exec/eval"
	"sluice/exec/flow"
	"sluice/exec/job"
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
	mu    sync.Mutex
	id    uint64
	name  string
	cols  []types.Column
	key   []int // primary key columns; nil: rows are keyed by a hidden row id
	seq   uint64
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

// commit writes the change chunk durably and hands it to the table source.
func (e *Engine) commitChanges(ctx context.Context, tw *tableWriter, wb *storage.WriteBatch, b *types.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	seq := tw.seq + 1
	wb.Set(storage.Key(storage.SpaceLog, tw.id, flow.EncodeSeq(seq)), job.EncodeLogBatch(b))
	if tw.key == nil {
		wb.Set(rowIDKey(tw.id), binary.AppendUvarint(nil, tw.rowID))
	}
	if err := e.db.WriteSync(wb); err != nil {
		return err
	}
	tw.seq = seq
	tw.noteCommitted(b)
	// The statement is durable from here on; the source gets it even if the
	// client has gone away.
	return tw.src.Push(context.WithoutCancel(ctx), flow.TableChunk{Seq: seq, Batch: b})
}

func (e *Engine) insert(ctx context.Context, ins *planner.Insert, ectx *eval.Context) (int, error) {
	tw, err := e.tableWriter(ins.Table.ID)
	if err != nil {
		return 0, err
	}
	rows, err := e.insertValues(ctx, tw, ins, ectx)
	if err != nil {
		return 0, err
	}
	return e.insertRows(ctx, tw, rows)
}

// insertRows inserts full-width rows into the table as one statement.
func (e *Engine) insertRows(ctx context.Context, tw *tableWriter, rows []types.Row) (int, error) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	wb := e.db.NewWriteBatch()
	b := types.NewBatch(len(rows))
	seen := map[string]bool{}
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
			old, err := e.db.Get(k)
			if err != nil {
				return 0, err
			}
			if old != nil || seen[string(k)] {
				return 0, pgerror.New(pgcode.UniqueViolation, "duplicate key value violates unique constraint \"%s_pkey\"", tw.name).
					WithDetail("Key (%s)=(%s) already exists.", keyNames(tw), keyValues(tw, r))
			}
			seen[string(k)] = true
		}
		wb.Set(k, types.EncodeRow(nil, r))
		b.Add(r, 1)
	}
	if err := e.checkUniques(tw, nil, rows); err != nil {
		return 0, err
	}
	if err := e.commitChanges(ctx, tw, wb, b); err != nil {
		return 0, err
	}
	return len(rows), nil
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

// scanMatching calls f for every current row of the table matching pred,
// using a key lookup when pred pins the primary key.
func (e *Engine) scanMatching(tw *tableWriter, pred func(types.Row) (bool, error), lookup []types.Datum, f func(k []byte, r types.Row) error) error {
	visit := func(k, v []byte) error {
		r, err := types.DecodeRow(v)
		if err != nil {
			return err
		}
		if pred != nil {
			ok, err := pred(r)
			if err != nil || !ok {
				return err
			}
		}
		return f(append([]byte(nil), k...), r)
	}
	if lookup != nil {
		k := storage.Key(storage.SpaceWrite, tw.id)
		for _, d := range lookup {
			k = types.AppendKey(k, d)
		}
		v, err := e.db.Get(k)
		if err != nil || v == nil {
			return err
		}
		return visit(k, v)
	}
	return e.db.Scan(storage.Key(storage.SpaceWrite, tw.id), visit)
}

func (e *Engine) update(ctx context.Context, up *planner.Update, ectx *eval.Context, out *[]types.Row) (int, error) {
	tw, err := e.tableWriter(up.Table.ID)
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
	tw.mu.Lock()
	defer tw.mu.Unlock()
	type change struct {
		oldKey   []byte
		old, new types.Row
	}
	var changes []change
	err = e.scanMatching(tw, pred, lookup, func(k []byte, r types.Row) error {
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
	wb := e.db.NewWriteBatch()
	b := types.NewBatch(2 * len(changes))
	moved := map[string]bool{}
	for _, c := range changes {
		if err := tw.check(c.new); err != nil {
			return 0, err
		}
		if tw.key != nil {
			nk := tw.wkey(c.new)
			if string(nk) != string(c.oldKey) {
				moved[string(c.oldKey)] = true
			}
		}
	}
	var oldRows, newRows []types.Row
	for _, c := range changes {
		oldRows, newRows = append(oldRows, c.old), append(newRows, c.new)
	}
	if err := e.checkUniques(tw, oldRows, newRows); err != nil {
		return 0, err
	}
	final := map[string]bool{}
	for _, c := range changes {
		k := c.oldKey
		if tw.key != nil {
			k = tw.wkey(c.new)
			if string(k) != string(c.oldKey) {
				if final[string(k)] {
					return 0, dupKey(tw, c.new)
				}
				if !moved[string(k)] {
					old, err := e.db.Get(k)
					if err != nil {
						return 0, err
					}
					if old != nil {
						return 0, dupKey(tw, c.new)
					}
				}
				if !final[string(c.oldKey)] {
					wb.Delete(c.oldKey)
				}
			}
		}
		final[string(k)] = true
		wb.Set(k, types.EncodeRow(nil, c.new))
		b.Add(c.old, -1)
		b.Add(c.new, 1)
	}
	if err := e.commitChanges(ctx, tw, wb, b); err != nil {
		return 0, err
	}
	if out != nil {
		*out = newRows
	}
	return len(changes), nil
}

func dupKey(tw *tableWriter, r types.Row) error {
	return pgerror.New(pgcode.UniqueViolation, "duplicate key value violates unique constraint \"%s_pkey\"", tw.name).
		WithDetail("Key (%s)=(%s) already exists.", keyNames(tw), keyValues(tw, r))
}

func (e *Engine) delete(ctx context.Context, d *planner.Delete, ectx *eval.Context, out *[]types.Row) (int, error) {
	tw, err := e.tableWriter(d.Table.ID)
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
	tw.mu.Lock()
	defer tw.mu.Unlock()
	wb := e.db.NewWriteBatch()
	b := types.NewBatch(16)
	err = e.scanMatching(tw, pred, lookup, func(k []byte, r types.Row) error {
		wb.Delete(k)
		b.Add(r, -1)
		if out != nil {
			*out = append(*out, r)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if err := e.commitChanges(ctx, tw, wb, b); err != nil {
		return 0, err
	}
	return b.Len(), nil
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
	return s.e.insertRows(ctx, tw, rows)
}
