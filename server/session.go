package server

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"sluice/exec/eval"
	"sluice/server/pgwire"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// session is one client's SQL session.
type session struct {
	e        *Engine
	info     pgwire.StartupInfo
	settings map[string]string
	changed  map[string]string
	// initial is settings as the session started (the startup packet's
	// values included): what RESET ALL returns to, as PostgreSQL.
	initial map[string]string
	// tx is the open transaction block, nil outside one.
	tx *txn
	// lastWrite is the epoch holding the session's last committed write:
	// its next read waits for it (read-your-writes).
	lastWrite uint64
	// cursors are the DECLAREd cursors by name (cursor.go).
	cursors map[string]*cursor
	// seq is the session's currval/lastval state (sequence.go).
	seq seqSession
	// loc is the TimeZone setting (timezone.go); nil is UTC.
	loc *time.Location
}

func newSession(e *Engine, info pgwire.StartupInfo) *session {
	s := &session{e: e, info: info, settings: map[string]string{}}
	for k, v := range defaultSettings {
		s.settings[k] = v
	}
	if info.ApplicationName != "" {
		s.settings["application_name"] = info.ApplicationName
	}
	return s
}

var defaultSettings = map[string]string{
	"server_version":                "15.0",
	"server_version_num":            "150000",
	"server_encoding":               "UTF8",
	"client_encoding":               "UTF8",
	"datestyle":                     "ISO, MDY",
	"timezone":                      "UTC",
	"intervalstyle":                 "postgres",
	"integer_datetimes":             "on",
	"standard_conforming_strings":   "on",
	"transaction_isolation":         "read committed",
	"default_transaction_isolation": "read committed",
	"search_path":                   "\"$user\", public",
	"application_name":              "",
	"extra_float_digits":            "1",
	"statement_timeout":             "0",
	"max_identifier_length":         "63",
	"max_index_keys":                "32",
	"lc_collate":                    "C",
	"lc_ctype":                      "C",
	"is_superuser":                  "on",
	"password_encryption":           "scram-sha-256",
	"default_transaction_read_only": "off",
	"transaction_read_only":         "off",
	// read_your_writes on: a read waits for the epoch holding the
	// session's last write; off: it reads the last committed epoch.
	"read_your_writes": "on",
	// implicit_flush on (RisingWave's RW_IMPLICIT_FLUSH): a write is
	// acknowledged only once it is visible to every read.
	"implicit_flush":    "off",
	"rw_implicit_flush": "off",
	// background_ddl (RisingWave's): CREATE MATERIALIZED VIEW returns once
	// its job is started; SHOW JOBS follows its backfill (jobs.go).
	"background_ddl": "false",
}

// TxStatus reports the transaction status for ReadyForQuery.
func (s *session) TxStatus() byte {
	switch {
	case s.tx == nil:
		return 'I'
	case s.tx.failed:
		return 'E'
	}
	return 'T'
}

func (s *session) ChangedParameters() map[string]string {
	c := s.changed
	s.changed = nil
	return c
}

// Close ends the session: an open transaction block is rolled back and
// every cursor closed.
func (s *session) Close() {
	s.e.metrics.connections.Dec()
	s.closeAllCursors()
	if s.tx != nil {
		s.tx.rollback()
		s.tx = nil
	}
}

// SimpleQuery implements pgwire.Session. Several statements in one query
// string run as one implicit transaction, as in PostgreSQL: an error rolls
// back the writes of the statements before it. Two departures: a string
// holding transaction control (BEGIN, COMMIT, ...) runs statement by
// statement, and DDL in the string commits the writes before it (DDL does
// not run inside a transaction in Sluice).
func (s *session) SimpleQuery(ctx context.Context, sql string, w pgwire.ResultWriter) error {
	stmts, err := parser.Parse(sql)
	if err != nil {
		if s.tx != nil {
			s.tx.failed = true
		}
		return err
	}
	implicit := len(stmts) > 1 && s.tx == nil
	for _, st := range stmts {
		if txControl(st) {
			implicit = false
		}
	}
	if !implicit {
		for _, st := range stmts {
			if err := s.run(ctx, st, nil, nil, w); err != nil {
				return err
			}
		}
		return nil
	}
	s.tx = s.e.newTxn(true)
	defer func() {
		if s.tx != nil {
			s.tx.rollback()
			s.tx = nil
		}
	}()
	for _, st := range stmts {
		if isDDL(st) {
			if err := s.commitImplicit(ctx); err != nil {
				return err
			}
			if err := s.run(ctx, st, nil, nil, w); err != nil {
				return err
			}
			s.tx = s.e.newTxn(true)
			continue
		}
		if err := s.run(ctx, st, nil, nil, w); err != nil {
			return err
		}
	}
	return s.commitImplicit(ctx)
}

// commitImplicit commits the implicit transaction of a multi-statement
// query string.
func (s *session) commitImplicit(ctx context.Context) error {
	tx := s.tx
	s.tx = nil
	epoch, err := tx.commit(ctx, nil)
	if err != nil {
		return err
	}
	return s.noteWrite(ctx, epoch)
}

// prepared is a parsed statement with its parameter and result types.
type prepared struct {
	stmt   parser.Statement
	params []types.T
	cols   []types.Column
}

func (p *prepared) ParamTypes() []types.T   { return p.params }
func (p *prepared) Columns() []types.Column { return p.cols }

// Prepare implements pgwire.Session.
func (s *session) Prepare(ctx context.Context, sql string, paramOIDs []uint32) (pgwire.Prepared, error) {
	st, err := parser.ParseOne(sql)
	if err != nil {
		return nil, err
	}
	if s.tx != nil && s.tx.failed && !txControl(st) {
		return nil, errAborted
	}
	p := &prepared{stmt: st}
	for _, oid := range paramOIDs {
		t, ok := types.FromOID(oid)
		if !ok {
			t = types.TUnknown
		}
		p.params = append(p.params, t)
	}
	params, cols, err := s.describe(st, p.params)
	if err != nil {
		return nil, err
	}
	for i := range params {
		if params[i].Fam == types.Unknown {
			params[i] = types.TText
		}
	}
	p.params, p.cols = params, cols
	return p, nil
}

// Execute implements pgwire.Session.
func (s *session) Execute(ctx context.Context, pp pgwire.Prepared, params []types.Datum, w pgwire.ResultWriter) error {
	p := pp.(*prepared)
	return s.run(ctx, p.stmt, params, p.params, w)
}

func (s *session) evalCtx(params []types.Datum) *eval.Context {
	c := &eval.Context{Now: time.Now().UnixMicro(), Params: params, User: s.info.User, Database: s.info.Database, Seq: sessionSeqs{s}, Priv: sessionPrivs{s}, MemLimit: s.statementMem(), Loc: s.loc}
	if s.tx != nil {
		c.ReadRel = s.tx.readRel
	}
	return c
}

// run executes one statement. An error inside a transaction block puts the
// block in the failed state: until ROLLBACK (or ROLLBACK TO SAVEPOINT) every
// other statement fails with 25P02.
func (s *session) run(ctx context.Context, st parser.Statement, params []types.Datum, ptypes []types.T, w pgwire.ResultWriter) (err error) {
	defer func(start time.Time) {
		s.e.metrics.statement(st, start, err)
		if err == nil && isDDL(st) && s.tx == nil {
			s.e.cfg.Logf("ddl: %s by role %s (%s)", ddlTag(st), s.role(), time.Since(start).Round(time.Millisecond))
		}
	}(time.Now())
	if s.tx != nil && s.tx.failed && !txControl(st) {
		return errAborted
	}
	ctx = withRole(ctx, s.role())
	ctx = withZone(ctx, s.settings["timezone"])
	if err := s.qualifyAndAuthorize(st); err != nil {
		if s.tx != nil {
			s.tx.failed = true
		}
		return err
	}
	if s.tx != nil {
		if isDDL(st) {
			return s.deferDDL(st, w)
		}
	}
	if isDDL(st) {
		// A catalog change commits with a checkpoint: refuse it while the
		// disk is full rather than wait (storage/space.go).
		if err := s.e.db.WriteRefused(); err != nil {
			return err
		}
	}
	err = s.e.redactErr(s.exec(ctx, st, params, ptypes, w), st)
	if err != nil && s.tx != nil {
		s.tx.failed = true
	}
	return err
}

// exec executes one statement.
func (s *session) exec(ctx context.Context, st parser.Statement, params []types.Datum, ptypes []types.T, w pgwire.ResultWriter) error {
	switch x := st.(type) {
	case *parser.Query:
		return s.runQuery(ctx, x, params, ptypes, w)
	case *parser.CreateTable:
		if err := s.e.createTable(ctx, x); err != nil {
			return err
		}
		return w.Complete("CREATE TABLE")
	case *parser.CreateSource:
		if err := s.e.createSource(ctx, x, x.Text()); err != nil {
			return err
		}
		return w.Complete("CREATE SOURCE")
	case *parser.CreateMaterializedView:
		if x.OrReplace {
			if err := s.e.replaceMView(ctx, x); err != nil {
				return err
			}
			if x.Alter {
				return w.Complete("ALTER MATERIALIZED VIEW")
			}
			return w.Complete("CREATE MATERIALIZED VIEW")
		}
		bg := settingOn(s.settings["background_ddl"])
		if err := s.e.createMView(ctx, x, createOpts{background: bg, notice: noticeNow(w)}); err != nil {
			return err
		}
		return w.Complete("CREATE MATERIALIZED VIEW")
	case *parser.CreateFunction:
		if err := s.e.createFunction(ctx, x); err != nil {
			return err
		}
		return w.Complete("CREATE FUNCTION")
	case *parser.CreateSink:
		if err := s.e.createSink(ctx, x, createOpts{background: settingOn(s.settings["background_ddl"]), notice: noticeNow(w)}); err != nil {
			return err
		}
		return w.Complete("CREATE SINK")
	case *parser.CreateView:
		if err := s.e.createView(ctx, x); err != nil {
			return err
		}
		return w.Complete("CREATE VIEW")
	case *parser.Drop:
		if err := s.e.drop(ctx, x); err != nil {
			return err
		}
		return w.Complete("DROP " + strings.ToUpper(x.Kind))
	case *parser.Copy:
		return s.copyStmt(ctx, x, w)
	case *parser.RoleStmt:
		return s.roleStmt(ctx, x, w)
	case *parser.Subscribe:
		return s.subscribe(ctx, x, w)
	case *parser.AlterRetention:
		return s.alterRetention(ctx, x, w)
	case *parser.CancelJobs:
		return s.cancelJobs(ctx, x, w)
	case *parser.Flush:
		if err := s.e.coord.Flush(ctx); err != nil {
			return err
		}
		return w.Complete("FLUSH")
	case *parser.Backup:
		return s.backup(ctx, x, w)
	case *parser.Begin:
		return s.begin(x, w)
	case *parser.Commit:
		return s.commit(ctx, x, w)
	case *parser.Rollback:
		return s.rollback(x, w)
	case *parser.Savepoint:
		return s.savepoint(x, w)
	case *parser.Release:
		return s.release(x, w)
	case *parser.Set:
		return s.set(x, w)
	case *parser.Show:
		return s.show(x, w)
	case *parser.ShowCreate:
		return s.showCreate(x, w)
	case *parser.Describe:
		return s.describeRel(x.Name, w)
	case *parser.Explain:
		return s.explain(x, w)
	case *parser.DeclareCursor, *parser.Fetch, *parser.CloseCursor:
		return s.runCursorStmt(ctx, st, params, ptypes, w)
	case *parser.Discard:
		if isDiscardAll(x) {
			s.closeAllCursors() // DISCARD ALL includes CLOSE ALL
		}
		return w.Complete("DISCARD ALL")
	case *parser.Deallocate:
		return w.Complete("DEALLOCATE")
	case *parser.Grant:
		return s.grant(ctx, x, w)
	case *parser.AlterTable, *parser.Truncate, *parser.CreateIndex, *parser.CreateSequence, *parser.CreateSchema:
		return s.runDDLExt(ctx, st, w)
	case *parser.CreateSecret, *parser.AlterSecret:
		return s.runSecretStmt(ctx, st, w)
	case *parser.AlterResume:
		return s.alterResume(ctx, x, w)
	}
	return pgerror.Unsupported("statement %T is not supported yet", st)
}

// describe returns the parameter and result types of a statement.
func (s *session) describe(st parser.Statement, params []types.T) ([]types.T, []types.Column, error) {
	switch x := st.(type) {
	case *parser.Query:
		return s.describeQuery(x, params)
	case *parser.Show, *parser.ShowCreate, *parser.Describe, *parser.Explain:
		// Run-time shape; describe by a dry run would have side effects, so
		// give the fixed shapes.
		return params, s.utilityColumns(st), nil
	case *parser.DeclareCursor, *parser.Fetch:
		return s.describeCursorStmt(st, params)
	case *parser.Subscribe:
		return s.describeSubscribe(x, params)
	}
	return params, nil, nil
}

func (s *session) set(x *parser.Set, w pgwire.ResultWriter) error {
	name := strings.ToLower(x.Name)
	val := x.Value
	if name == "all" && x.Default {
		return s.resetAll(w)
	}
	if err := checkSet(name, val); err != nil { // role.go
		return err
	}
	switch name {
	case "transaction", "transaction_characteristics":
		return s.setTransaction(x, w)
	case "default_transaction_isolation", "transaction_isolation":
		if !x.Default && !strings.EqualFold(val, "default") {
			iso, err := isolationOf(strings.ToLower(strings.Trim(val, "'\"")))
			if err != nil {
				return err
			}
			if name == "transaction_isolation" {
				return s.setTransaction(&parser.Set{Name: "transaction", Value: "isolation level " + iso}, w)
			}
			val = iso
		}
	}
	switch name {
	case "time zone":
		name = "timezone"
	}
	if name == "timezone" {
		v, err := s.setTimeZone(val, x.Default)
		if err != nil {
			return err
		}
		val = v
	}
	if ok, err := s.setLimit(name, val, x.Default); ok {
		if err != nil {
			return err
		}
		return w.Complete("SET")
	}
	if val == "" || strings.EqualFold(val, "default") {
		val = defaultSettings[name]
	}
	s.settings[name] = val
	switch name {
	case "application_name", "timezone", "datestyle", "intervalstyle", "client_encoding", "standard_conforming_strings", "is_superuser":
		if s.changed == nil {
			s.changed = map[string]string{}
		}
		s.changed[reportName(name)] = val
	}
	return w.Complete("SET")
}

// resetAll is RESET ALL: every setting changed since the session started
// goes back to its value then, through SET (so that limits and reported
// parameters follow); settings made since are reset to their defaults.
func (s *session) resetAll(w pgwire.ResultWriter) error {
	initial := s.initial
	if initial == nil {
		initial = defaultSettings
	}
	quiet := &discardWriter{}
	for _, k := range slices.Sorted(maps.Keys(s.settings)) {
		if serverSettings[k] || k == "transaction_isolation" {
			continue
		}
		v, had := initial[k]
		if had && s.settings[k] == v {
			continue
		}
		x := &parser.Set{Name: k, Value: v, Default: !had}
		if err := s.set(x, quiet); err != nil {
			return err
		}
		if !had {
			delete(s.settings, k)
		}
	}
	return w.Complete("RESET")
}

func reportName(n string) string {
	switch n {
	case "timezone":
		return "TimeZone"
	case "datestyle":
		return "DateStyle"
	case "intervalstyle":
		return "IntervalStyle"
	}
	return n
}

func commandTag(verb string, n int) string {
	if verb == "INSERT" {
		return fmt.Sprintf("INSERT 0 %d", n)
	}
	return fmt.Sprintf("%s %d", verb, n)
}

func internalf(format string, args ...any) error {
	return pgerror.New(pgcode.Internal, format, args...)
}
