package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"sort"
	"strings"

	"sluice/exec/flow"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// A txn is the writes of one transaction that are not yet visible to
// anyone else: per table, the rows it changed, keyed as the table's write
// set (w/<table>/<key>) is. Every DML statement runs in one: the session's
// open transaction block, or a transaction of its own that commits when
// the statement ends.
//
// Isolation. A row a transaction changes is locked (tableWriter.locks)
// from its first change until the transaction ends; its committed value is
// read under the table's mutex when the lock is taken, so nobody can change
// it in between and no update is lost. A transaction block that meets a
// row locked by another fails with 40001 at once (no waits, so no
// deadlocks); a single statement outside a block waits for the block that
// holds the row to end (it holds no locks of its own while it waits).
//
// Commit writes every table's changes, their change-log entries and the
// row-id counters in one synced batch, then hands each table's changes to
// its source under Coordinator.Atomic: they enter the dataflow in one
// epoch, so views and other sessions see all of the transaction or none.
type txn struct {
	e      *Engine
	tables map[uint64]*txTable
	undo   []undoEntry
	saves  []savepoint
	done   chan struct{} // closed when the transaction ends (lock waiters)
	// block is true for an explicit transaction block.
	block    bool
	failed   bool
	readOnly bool
	// isolation is "read committed" or "repeatable read".
	isolation string
	// snap is the repeatable-read snapshot, taken at the first statement.
	snap *storage.Snapshot
	// ddl holds the DDL statements of the block, run at COMMIT.
	ddl []parser.Statement
	// wrote is set once the block wrote a row (DDL may then not follow).
	wrote bool
	// marks are written in the commit's batch, changes or not: a sink's
	// applied epoch beside the rows it wrote (sinkinto.go).
	marks map[string][]byte
}

// txTable is a transaction's changes to one table.
type txTable struct {
	tw   *tableWriter
	rows map[string]*txRow
}

// txRow is a changed row: orig is the committed row when the transaction
// first touched the key (nil: absent), cur the row now (nil: deleted).
type txRow struct {
	orig, cur types.Row
}

type undoEntry struct {
	tt     *txTable
	key    string
	prev   *txRow // the entry before the change; nil: none
	locked bool   // the change took the key's lock
}

type savepoint struct {
	name string
	undo int
	ddl  int
}

func (e *Engine) newTxn(block bool) *txn {
	return &txn{e: e, tables: map[uint64]*txTable{}, done: make(chan struct{}), block: block, isolation: "read committed"}
}

func (tx *txn) table(tw *tableWriter) *txTable {
	tt := tx.tables[tw.id]
	if tt == nil {
		tt = &txTable{tw: tw, rows: map[string]*txRow{}}
		tx.tables[tw.id] = tt
	}
	return tt
}

// errConflict is a row locked by another transaction block.
var errConflict = pgerror.New(pgcode.SerializationFailure, "could not serialize access due to concurrent update").
	WithHint("Another transaction changed the same row and has not ended; retry this transaction.")

// lockWait is returned by a statement outside a block that met a row
// locked by a block: the statement waits for it and starts again.
type lockWait struct{ done chan struct{} }

func (lockWait) Error() string { return "waiting for a transaction to end" }

// get returns the row the transaction sees at write-set key k of tw (the
// caller holds tw.mu): its own change, else the committed row.
func (tx *txn) get(tw *tableWriter, k []byte) (types.Row, error) {
	if tt := tx.tables[tw.id]; tt != nil {
		if r := tt.rows[string(k)]; r != nil {
			return r.cur, nil
		}
	}
	return tx.committed(k)
}

// committed reads the committed row at k (the repeatable-read snapshot's
// row for a block that has one).
func (tx *txn) committed(k []byte) (types.Row, error) {
	v, err := tx.e.db.Get(k)
	if err != nil || v == nil {
		return nil, err
	}
	return types.DecodeRow(v)
}

// put records the row at key k of tw as r (nil: deleted). The caller holds
// tw.mu. It takes the key's lock, or fails when another transaction holds
// it.
func (tx *txn) put(tw *tableWriter, k []byte, r types.Row) error {
	return tx.putRow(tw, k, r, false)
}

// insert is put for a key the caller has just read as absent (tx.get
// returned nil): the committed row need not be read again.
func (tx *txn) insert(tw *tableWriter, k []byte, r types.Row) error {
	return tx.putRow(tw, k, r, true)
}

// reserve sizes the transaction's row map of tw for n more rows.
func (tx *txn) reserve(tw *tableWriter, n int) {
	if tt := tx.tables[tw.id]; tt == nil {
		tx.tables[tw.id] = &txTable{tw: tw, rows: make(map[string]*txRow, n)}
	}
}

func (tx *txn) putRow(tw *tableWriter, k []byte, r types.Row, absent bool) error {
	if tx.readOnly {
		return pgerror.New(pgcode.ReadOnlySQLTransaction, "cannot execute a write in a read-only transaction")
	}
	tt := tx.table(tw)
	ent := tt.rows[string(k)]
	u := undoEntry{tt: tt, key: string(k)}
	if ent != nil {
		cp := *ent
		u.prev = &cp
		ent.cur = r
	} else {
		if owner := tw.locks[string(k)]; owner != nil && owner != tx {
			if tx.block {
				return errConflict
			}
			return lockWait{done: owner.done}
		}
		var orig types.Row
		if !absent {
			var err error
			if orig, err = tx.committed(k); err != nil {
				return err
			}
		}
		if tx.snap != nil {
			// Repeatable read: a row committed after the snapshot may not be
			// overwritten (first updater wins, as in PostgreSQL).
			v, err := tx.snap.Get(k)
			if err != nil {
				return err
			}
			cur, _ := tx.e.db.Get(k)
			if !bytes.Equal(v, cur) {
				return pgerror.New(pgcode.SerializationFailure, "could not serialize access due to concurrent update")
			}
		}
		ent = &txRow{orig: orig, cur: r}
		tt.rows[string(k)] = ent
		if tx.block {
			if tw.locks == nil {
				tw.locks = map[string]*txn{}
			}
			tw.locks[string(k)] = tx
			u.locked = true
		}
	}
	if tx.block {
		// A single statement's transaction is discarded whole on error.
		tx.undo = append(tx.undo, u)
	}
	tx.wrote = true
	return nil
}

// scan calls f for every row of tw the transaction sees (its own changes
// over the committed rows) that pred accepts; lookup, when not nil, pins
// the primary key. The caller holds tw.mu.
func (tx *txn) scan(tw *tableWriter, pred func(types.Row) (bool, error), lookup []types.Datum, f func(k []byte, r types.Row) error) error {
	tt := tx.tables[tw.id]
	match := func(r types.Row) (bool, error) {
		if pred == nil {
			return true, nil
		}
		return pred(r)
	}
	if lookup != nil {
		k := storage.Key(storage.SpaceWrite, tw.id)
		for _, d := range lookup {
			k = types.AppendKey(k, d)
		}
		r, err := tx.get(tw, k)
		if err != nil || r == nil {
			return err
		}
		if ok, err := match(r); err != nil || !ok {
			return err
		}
		return f(k, r)
	}
	// Collect first, the matching rows only: f changes the transaction's
	// rows (a DELETE of a few rows of a large table holds those rows, not
	// the table).
	type kr struct {
		k []byte
		r types.Row
	}
	var rows []kr
	err := tx.e.db.Scan(storage.Key(storage.SpaceWrite, tw.id), func(k, v []byte) error {
		if tt != nil {
			if _, ok := tt.rows[string(k)]; ok {
				return nil
			}
		}
		r, err := types.DecodeRow(v)
		if err != nil {
			return err
		}
		if ok, err := match(r); err != nil || !ok {
			return err
		}
		rows = append(rows, kr{append([]byte(nil), k...), r})
		return nil
	})
	if err != nil {
		return err
	}
	if tt != nil {
		for k, ent := range tt.rows {
			if ent.cur == nil {
				continue
			}
			if ok, err := match(ent.cur); err != nil {
				return err
			} else if ok {
				rows = append(rows, kr{[]byte(k), ent.cur})
			}
		}
	}
	for _, x := range rows {
		if err := f(x.k, x.r); err != nil {
			return err
		}
	}
	return nil
}

// readRel is the eval.Context.ReadRel of a statement in transaction tx:
// a table the transaction changed is read as its write set with the
// transaction's rows over it.
func (tx *txn) readRel(rel uint64, key []byte) (func(emit func(types.Row, int64) error) error, bool) {
	tt := tx.tables[rel]
	if tt == nil || len(tt.rows) == 0 {
		return nil, false
	}
	tw := tt.tw
	// No table mutex: the block's rows change only between the session's
	// statements (a DML statement's subquery may read the table it is
	// changing while its statement holds the mutex), and the committed
	// rows are read from the store.
	return func(emit func(types.Row, int64) error) error {
		if key != nil {
			r, err := tx.get(tw, append(storage.Key(storage.SpaceWrite, rel), key...))
			if err != nil || r == nil {
				return err
			}
			return emit(r, 1)
		}
		return tx.scan(tw, nil, nil, func(_ []byte, r types.Row) error { return emit(r, 1) })
	}, true
}

// setSavepoint marks the current state under name.
func (tx *txn) setSavepoint(name string) {
	tx.saves = append(tx.saves, savepoint{name: name, undo: len(tx.undo), ddl: len(tx.ddl)})
}

func (tx *txn) findSavepoint(name string) (int, error) {
	for i := len(tx.saves) - 1; i >= 0; i-- {
		if tx.saves[i].name == name {
			return i, nil
		}
	}
	return 0, pgerror.New(pgcode.InvalidSavepointSpecification, "savepoint \"%s\" does not exist", name)
}

// rollbackTo undoes every change after savepoint i (which stays).
func (tx *txn) rollbackTo(i int) {
	sp := tx.saves[i]
	tx.undoTo(sp.undo)
	tx.ddl = tx.ddl[:sp.ddl]
	tx.saves = tx.saves[:i+1]
	tx.failed = false
}

func (tx *txn) undoTo(n int) {
	for j := len(tx.undo) - 1; j >= n; j-- {
		u := tx.undo[j]
		if u.prev != nil {
			u.tt.rows[u.key] = u.prev
		} else {
			delete(u.tt.rows, u.key)
		}
		if u.locked {
			u.tt.tw.mu.Lock()
			if u.tt.tw.locks[u.key] == tx {
				delete(u.tt.tw.locks, u.key)
			}
			u.tt.tw.mu.Unlock()
		}
	}
	tx.undo = tx.undo[:n]
}

// release ends the transaction: its locks go and waiters wake.
func (tx *txn) release() {
	for _, tt := range tx.tables {
		if !tx.block {
			break // a single statement's transaction takes no locks
		}
		tw := tt.tw
		tw.mu.Lock()
		for k := range tt.rows {
			if tw.locks[k] == tx {
				delete(tw.locks, k)
			}
		}
		tw.mu.Unlock()
	}
	if tx.snap != nil {
		tx.snap.Release()
		tx.snap = nil
	}
	select {
	case <-tx.done:
	default:
		close(tx.done)
	}
}

// rollback discards the transaction.
func (tx *txn) rollback() {
	tx.release()
	tx.tables = map[uint64]*txTable{}
}

// commit makes the transaction's changes durable and hands them to the
// tables' sources in one epoch, which it returns (0: nothing was written).
// held is the table whose mutex the caller holds (a single statement), or
// nil.
func (tx *txn) commit(ctx context.Context, held *tableWriter) (uint64, error) {
	defer tx.release()
	var tts []*txTable
	for _, tt := range tx.tables {
		if len(tt.rows) > 0 {
			tts = append(tts, tt)
		}
	}
	if len(tts) == 0 {
		if len(tx.marks) == 0 {
			return 0, nil
		}
		wb := tx.e.db.NewWriteBatch()
		tx.addMarks(wb)
		return 0, tx.e.db.WriteSync(wb)
	}
	sort.Slice(tts, func(i, j int) bool { return tts[i].tw.id < tts[j].tw.id })
	for _, tt := range tts {
		if tt.tw != held {
			tt.tw.mu.Lock()
			defer tt.tw.mu.Unlock()
		}
	}
	e := tx.e
	for _, tt := range tts {
		// A table dropped or rebuilt (ALTER TABLE) since the block wrote it.
		if cur, err := e.tableWriter(tt.tw.id); err != nil || cur != tt.tw {
			return 0, pgerror.New(pgcode.SerializationFailure, "table %q changed while the transaction was writing it", tt.tw.name).
				WithHint("Retry the transaction.")
		}
	}
	if tx.block {
		// UNIQUE constraints other than the primary key are not locked:
		// check the block's rows again against what is committed now.
		for _, tt := range tts {
			if tt.tw.cons == nil || len(tt.tw.cons.uniques) == 0 {
				continue
			}
			var olds, news []types.Row
			for _, ent := range tt.rows {
				olds, news = append(olds, ent.orig), append(news, ent.cur)
			}
			if err := e.checkUniques(e.newTxn(false), tt.tw, olds, news); err != nil {
				return 0, err
			}
		}
	}
	wb := e.db.NewWriteBatch()
	chunks := make([]*types.Batch, len(tts))
	for i, tt := range tts {
		tw := tt.tw
		b := types.NewBatch(2 * len(tt.rows))
		keys := make([]string, 0, len(tt.rows))
		for k := range tt.rows {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		// Each row is encoded once, for the write set and the log entry.
		logRows := make([]types.Datum, 0, 2*len(keys))
		for _, k := range keys {
			ent := tt.rows[k]
			if ent.orig == nil && ent.cur == nil {
				continue
			}
			var encOrig, encCur []byte
			if ent.orig != nil {
				encOrig = types.EncodeRow(nil, ent.orig)
			}
			if ent.cur != nil {
				encCur = types.EncodeRow(nil, ent.cur)
			}
			if ent.orig != nil && ent.cur != nil && bytes.Equal(encOrig, encCur) {
				continue
			}
			if ent.cur == nil {
				wb.Delete([]byte(k))
			} else {
				wb.Set([]byte(k), encCur)
			}
			if ent.orig != nil {
				b.Add(ent.orig, -1)
				logRows = append(logRows, types.NewInt(-1), types.NewBytes(encOrig))
			}
			if ent.cur != nil {
				b.Add(ent.cur, 1)
				logRows = append(logRows, types.NewInt(1), types.NewBytes(encCur))
			}
		}
		chunks[i] = b
		if b.Len() > 0 {
			// The log entry's format is job.EncodeLogBatch's.
			wb.Set(storage.Key(storage.SpaceLog, tw.id, flow.EncodeSeq(tw.seq+1)), types.EncodeRow(nil, logRows))
		}
		if tw.key == nil {
			wb.Set(rowIDKey(tw.id), binary.AppendUvarint(nil, tw.rowID))
		}
	}
	tx.addMarks(wb)
	if err := e.db.WriteSync(wb); err != nil {
		return 0, err
	}
	for i, tt := range tts {
		tt.tw.noteCommitted(chunks[i])
	}
	// Durable from here on: the sources get the changes even if the client
	// has gone away.
	pctx := context.WithoutCancel(ctx)
	for _, tt := range tts { // the dataflow's state is over its cache
		tt.tw.src.AwaitRoom(ctx)
	}
	return e.coord.Atomic(func() error {
		for i, tt := range tts {
			if chunks[i].Len() == 0 {
				continue
			}
			tt.tw.seq++
			if err := tt.tw.src.Push(pctx, flow.TableChunk{Seq: tt.tw.seq, Batch: chunks[i]}); err != nil {
				return err
			}
		}
		return nil
	})
}

func (tx *txn) addMarks(wb *storage.WriteBatch) {
	for k, v := range tx.marks {
		wb.Set([]byte(k), v)
	}
}

// ---- the session's side ----

// txStatement reports whether st may run in a failed transaction block
// or is transaction control.
func txControl(st parser.Statement) bool {
	switch st.(type) {
	case *parser.Begin, *parser.Commit, *parser.Rollback, *parser.Savepoint, *parser.Release:
		return true
	}
	return false
}

var errAborted = pgerror.New(pgcode.InFailedSQLTransaction, "current transaction is aborted, commands ignored until end of transaction block")

// isolationOf validates an isolation level for a transaction.
func isolationOf(level string) (string, error) {
	switch level {
	case "", "read committed", "read uncommitted":
		return "read committed", nil
	case "repeatable read":
		return "repeatable read", nil
	case "serializable":
		return "", pgerror.Unsupported("SERIALIZABLE isolation is not supported").
			WithHint("Sluice offers READ COMMITTED and REPEATABLE READ (a snapshot per transaction, first updater wins).")
	}
	return "", pgerror.New(pgcode.InvalidParameterValue, "invalid value for parameter \"transaction_isolation\": \"%s\"", level)
}

// parseTxModes parses the modes of SET TRANSACTION / SET SESSION
// CHARACTERISTICS AS TRANSACTION: ISOLATION LEVEL x, READ ONLY|WRITE,
// [NOT] DEFERRABLE.
func parseTxModes(text string) (isolation string, readOnly, setRO bool, err error) {
	words := strings.Fields(strings.ToLower(strings.ReplaceAll(text, ",", " ")))
	for i := 0; i < len(words); i++ {
		switch {
		case words[i] == "isolation" && i+1 < len(words) && words[i+1] == "level":
			i += 2
			if i >= len(words) {
				return "", false, false, pgerror.New(pgcode.Syntax, "syntax error at end of input")
			}
			if words[i] == "serializable" {
				isolation = "serializable"
			} else if i+1 < len(words) {
				isolation = words[i] + " " + words[i+1]
				i++
			} else {
				isolation = words[i]
			}
		case words[i] == "read" && i+1 < len(words) && (words[i+1] == "only" || words[i+1] == "write"):
			readOnly, setRO = words[i+1] == "only", true
			i++
		case words[i] == "deferrable":
		case words[i] == "not" && i+1 < len(words) && words[i+1] == "deferrable":
			i++
		default:
			return "", false, false, pgerror.New(pgcode.Syntax, "syntax error at or near \"%s\"", words[i])
		}
	}
	if isolation != "" {
		if _, err := isolationOf(isolation); err != nil {
			return "", false, false, err
		}
	}
	return isolation, readOnly, setRO, nil
}
