package server

import (
	"context"
	"strings"

	"sluice/server/pgwire"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// isDDL reports whether st changes the catalog. Inside a transaction block
// DDL is deferred to COMMIT (deferDDL).
func isDDL(st parser.Statement) bool {
	switch st.(type) {
	case *parser.CreateTable, *parser.CreateSource, *parser.CreateMaterializedView, *parser.CreateFunction,
		*parser.CreateSink, *parser.CreateView, *parser.Drop, *parser.AlterTable, *parser.CreateIndex,
		*parser.CreateSequence, *parser.CreateSchema, *parser.Grant:
		return true
	}
	return false
}

// ddlTag is the command tag of a DDL statement.
func ddlTag(st parser.Statement) string {
	switch x := st.(type) {
	case *parser.CreateTable:
		return "CREATE TABLE"
	case *parser.CreateSource:
		return "CREATE SOURCE"
	case *parser.CreateMaterializedView:
		return "CREATE MATERIALIZED VIEW"
	case *parser.CreateFunction:
		return "CREATE FUNCTION"
	case *parser.CreateSink:
		return "CREATE SINK"
	case *parser.CreateView:
		return "CREATE VIEW"
	case *parser.Drop:
		return "DROP " + strings.ToUpper(x.Kind)
	case *parser.AlterTable:
		if x.Source {
			return "ALTER SOURCE"
		}
		return "ALTER TABLE"
	case *parser.CreateIndex:
		return "CREATE INDEX"
	case *parser.CreateSequence:
		return "CREATE SEQUENCE"
	case *parser.CreateSchema:
		return "CREATE SCHEMA"
	case *parser.Grant:
		if x.Revoke {
			return "REVOKE"
		}
		return "GRANT"
	}
	return ""
}

// deferDDL takes a DDL statement inside a transaction block: Sluice runs
// a block's DDL when the block commits (ROLLBACK discards it), so a block
// may hold DDL or writes, not both.
func (s *session) deferDDL(st parser.Statement, w pgwire.ResultWriter) error {
	if mv, ok := st.(*parser.CreateMaterializedView); ok && mv.OrReplace {
		s.tx.failed = true
		return pgerror.New(pgcode.ActiveSQLTransaction, "%s … AS cannot run inside a transaction block", map[bool]string{true: "ALTER MATERIALIZED VIEW", false: "CREATE OR REPLACE MATERIALIZED VIEW"}[mv.Alter]).
			WithHint("Run it outside BEGIN … COMMIT: the change commits in one epoch of its own.")
	}
	if s.tx.wrote {
		s.tx.failed = true
		return pgerror.New(pgcode.ActiveSQLTransaction, "%s cannot run inside a transaction block that has written rows", ddlTag(st)).
			WithHint("Sluice runs DDL when the transaction block commits; COMMIT the writes first, or run the DDL outside the block.")
	}
	s.tx.ddl = append(s.tx.ddl, st)
	return w.Complete(ddlTag(st))
}

func (s *session) begin(x *parser.Begin, w pgwire.ResultWriter) error {
	if s.tx != nil {
		return w.Notice("there is already a transaction in progress")
	}
	level := x.Isolation
	if level == "" {
		level = s.settings["default_transaction_isolation"]
	}
	iso, err := isolationOf(level)
	if err != nil {
		return err
	}
	tx := s.e.newTxn(true)
	tx.isolation = iso
	tx.readOnly = x.ReadOnly || s.settings["default_transaction_read_only"] == "on"
	if iso == "repeatable read" {
		tx.snap = s.e.db.Snapshot()
	}
	s.tx = tx
	return w.Complete("BEGIN")
}

// chain starts the block that COMMIT AND CHAIN / ROLLBACK AND CHAIN open,
// with the characteristics of the one that ended.
func (s *session) chain(old *txn) {
	tx := s.e.newTxn(true)
	tx.isolation, tx.readOnly = old.isolation, old.readOnly
	if tx.isolation == "repeatable read" {
		tx.snap = s.e.db.Snapshot()
	}
	s.tx = tx
}

func (s *session) commit(ctx context.Context, x *parser.Commit, w pgwire.ResultWriter) error {
	tx := s.tx
	if tx == nil {
		if x.Chain {
			return pgerror.New(pgcode.NoActiveSQLTransaction, "COMMIT AND CHAIN can only be used in transaction blocks")
		}
		_ = w.Notice("there is no transaction in progress")
		return w.Complete("COMMIT")
	}
	s.tx = nil
	s.closeCursorsAtTxEnd(tx.failed)
	if tx.failed {
		tx.rollback()
		if x.Chain {
			s.chain(tx)
		}
		return w.Complete("ROLLBACK")
	}
	if len(tx.ddl) > 0 {
		tx.rollback() // holds no rows: a block with DDL writes none
		if err := s.runDeferredDDL(ctx, tx.ddl); err != nil {
			return err
		}
	} else {
		epoch, err := tx.commit(ctx, nil)
		if err != nil {
			return err
		}
		if err := s.noteWrite(ctx, epoch); err != nil {
			return err
		}
	}
	if x.Chain {
		s.chain(tx)
	}
	return w.Complete("COMMIT")
}

// runDeferredDDL runs a committing block's DDL in order. When one fails,
// the objects the earlier ones created are dropped again, so that the
// failed COMMIT leaves the catalog as it was (a crash in the middle of a
// block of several DDL statements can leave the first ones done).
func (s *session) runDeferredDDL(ctx context.Context, ddl []parser.Statement) error {
	var created []*parser.Drop
	discard := &discardWriter{}
	for _, st := range ddl {
		if err := s.exec(ctx, st, nil, nil, discard); err != nil {
			for i := len(created) - 1; i >= 0; i-- {
				_ = s.e.drop(ctx, created[i])
			}
			return err
		}
		if d := undoDDL(st); d != nil {
			created = append(created, d)
		}
	}
	return nil
}

// undoDDL returns the DROP that undoes a CREATE, nil for other DDL.
func undoDDL(st parser.Statement) *parser.Drop {
	switch x := st.(type) {
	case *parser.CreateTable:
		return &parser.Drop{Kind: "table", Names: []string{x.Name}, Cascade: true}
	case *parser.CreateSource:
		return &parser.Drop{Kind: "source", Names: []string{x.Name}, Cascade: true}
	case *parser.CreateMaterializedView:
		return &parser.Drop{Kind: "materialized view", Names: []string{x.Name}, Cascade: true}
	case *parser.CreateSink:
		return &parser.Drop{Kind: "sink", Names: []string{x.Name}, Cascade: true}
	case *parser.CreateView:
		return &parser.Drop{Kind: "view", Names: []string{x.Name}, Cascade: true}
	case *parser.CreateSequence:
		return &parser.Drop{Kind: "sequence", Names: []string{x.Name}, Cascade: true}
	case *parser.CreateSchema:
		return &parser.Drop{Kind: "schema", Names: []string{x.Name}, Cascade: true}
	}
	return nil
}

func (s *session) rollback(x *parser.Rollback, w pgwire.ResultWriter) error {
	if x.To != "" {
		return s.rollbackTo(x.To, w)
	}
	tx := s.tx
	if tx == nil {
		if x.Chain {
			return pgerror.New(pgcode.NoActiveSQLTransaction, "ROLLBACK AND CHAIN can only be used in transaction blocks")
		}
		_ = w.Notice("there is no transaction in progress")
		return w.Complete("ROLLBACK")
	}
	s.tx = nil
	s.closeCursorsAtTxEnd(true /* rollback */)
	tx.rollback()
	if x.Chain {
		s.chain(tx)
	}
	return w.Complete("ROLLBACK")
}

func (s *session) savepoint(x *parser.Savepoint, w pgwire.ResultWriter) error {
	if s.tx == nil {
		return pgerror.New(pgcode.NoActiveSQLTransaction, "SAVEPOINT can only be used in transaction blocks")
	}
	if s.tx.failed {
		return errAborted
	}
	s.tx.setSavepoint(x.Name)
	return w.Complete("SAVEPOINT")
}

func (s *session) rollbackTo(name string, w pgwire.ResultWriter) error {
	if s.tx == nil {
		return pgerror.New(pgcode.NoActiveSQLTransaction, "ROLLBACK TO SAVEPOINT can only be used in transaction blocks")
	}
	i, err := s.tx.findSavepoint(name)
	if err != nil {
		s.tx.failed = true
		return err
	}
	s.tx.rollbackTo(i)
	return w.Complete("ROLLBACK")
}

func (s *session) release(x *parser.Release, w pgwire.ResultWriter) error {
	if s.tx == nil {
		return pgerror.New(pgcode.NoActiveSQLTransaction, "RELEASE SAVEPOINT can only be used in transaction blocks")
	}
	if s.tx.failed {
		return errAborted
	}
	i, err := s.tx.findSavepoint(x.Name)
	if err != nil {
		s.tx.failed = true
		return err
	}
	s.tx.saves = s.tx.saves[:i]
	return w.Complete("RELEASE")
}

// noteWrite records that the session's write committed in epoch: its
// next read waits for that epoch (read-your-writes), and with
// implicit_flush on the write itself waits for it before it is
// acknowledged.
func (s *session) noteWrite(ctx context.Context, epoch uint64) error {
	if epoch == 0 {
		return nil
	}
	if epoch > s.lastWrite {
		s.lastWrite = epoch
	}
	if settingOn(s.settings["implicit_flush"]) || settingOn(s.settings["rw_implicit_flush"]) {
		return s.e.coord.Sync(ctx, epoch)
	}
	return nil
}

// awaitReads makes a read see the session's acknowledged writes: it waits
// for the epoch holding the last of them, asking for it at once, unless
// read_your_writes is off (the read then sees the last committed epoch).
func (s *session) awaitReads(ctx context.Context) error {
	if s.lastWrite == 0 || !settingOn(s.settings["read_your_writes"]) {
		return nil
	}
	if err := s.e.coord.Sync(ctx, s.lastWrite); err != nil {
		return err
	}
	s.lastWrite = 0
	return nil
}

func settingOn(v string) bool {
	switch strings.ToLower(strings.Trim(v, "'\" ")) {
	case "on", "true", "1", "yes":
		return true
	}
	return false
}

// setTransaction handles SET TRANSACTION ... (local) and SET SESSION
// CHARACTERISTICS AS TRANSACTION ... (session defaults).
func (s *session) setTransaction(x *parser.Set, w pgwire.ResultWriter) error {
	iso, ro, setRO, err := parseTxModes(x.Value)
	if err != nil {
		return err
	}
	if x.Name == "transaction_characteristics" {
		if iso != "" {
			s.settings["default_transaction_isolation"] = iso
		}
		if setRO {
			s.settings["default_transaction_read_only"] = map[bool]string{true: "on", false: "off"}[ro]
		}
		return w.Complete("SET")
	}
	if s.tx == nil {
		_ = w.Notice("SET TRANSACTION can only be used in transaction blocks")
		return w.Complete("SET")
	}
	if iso != "" {
		if len(s.tx.undo) > 0 || s.tx.snap != nil && s.tx.isolation != iso {
			return pgerror.New(pgcode.ActiveSQLTransaction, "SET TRANSACTION ISOLATION LEVEL must be called before any query")
		}
		v, _ := isolationOf(iso)
		s.tx.isolation = v
		if v == "repeatable read" && s.tx.snap == nil {
			s.tx.snap = s.e.db.Snapshot()
		}
	}
	if setRO {
		s.tx.readOnly = ro
	}
	return w.Complete("SET")
}

// discardWriter drops a statement's results (deferred DDL at COMMIT).
type discardWriter struct{}

func (discardWriter) Columns([]types.Column) error { return nil }
func (discardWriter) Row(types.Row) error          { return nil }
func (discardWriter) Complete(string) error        { return nil }
func (discardWriter) Notice(string) error          { return nil }

// txSnapshot is the snapshot reads of the open block use (repeatable
// read), nil for the latest committed one.
func (s *session) txSnapshot() *storage.Snapshot {
	if s.tx == nil {
		return nil
	}
	return s.tx.snap
}

// setting returns a setting's value as SHOW reports it: the transaction's
// own characteristics inside a block.
func (s *session) setting(name string) (string, bool) {
	switch name {
	case "transaction_isolation":
		if s.tx != nil {
			return s.tx.isolation, true
		}
		return s.settings["default_transaction_isolation"], true
	case "transaction_read_only":
		if s.tx != nil && s.tx.readOnly {
			return "on", true
		}
		if s.tx != nil {
			return "off", true
		}
		return s.settings["default_transaction_read_only"], true
	}
	v, ok := s.settings[name]
	return v, ok
}

// AbortTx implements pgwire's failed-message hook: an error in any message
// of the extended protocol fails the open block.
func (s *session) AbortTx() {
	if s.tx != nil {
		s.tx.failed = true
	}
}
