package server

import (
	"context"
	"fmt"
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
	inTx     bool
	cursors  map[string]*cursor // DECLAREd cursors by name (cursor.go)
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
	"lc_collate":                    "C",
	"lc_ctype":                      "C",
	"is_superuser":                  "on",
}

// TxStatus reports the transaction status for ReadyForQuery.
func (s *session) TxStatus() byte {
	if s.inTx {
		return 'T'
	}
	return 'I'
}

func (s *session) ChangedParameters() map[string]string {
	c := s.changed
	s.changed = nil
	return c
}

func (s *session) Close() { s.closeAllCursors() }

// SimpleQuery implements pgwire.Session.
func (s *session) SimpleQuery(ctx context.Context, sql string, w pgwire.ResultWriter) error {
	stmts, err := parser.Parse(sql)
	if err != nil {
		return err
	}
	for _, st := range stmts {
		if err := s.run(ctx, st, nil, nil, w); err != nil {
			return err
		}
	}
	return nil
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
	return &eval.Context{Now: time.Now().UnixMicro(), Params: params, User: s.info.User, Database: s.info.Database}
}

// run executes one statement.
func (s *session) run(ctx context.Context, st parser.Statement, params []types.Datum, ptypes []types.T, w pgwire.ResultWriter) error {
	switch x := st.(type) {
	case *parser.Query:
		return s.runQuery(ctx, x, params, ptypes, w)
	case *parser.CreateTable:
		if err := s.e.createTable(ctx, x); err != nil {
			return err
		}
		return w.Complete("CREATE TABLE")
	case *parser.CreateSource:
		if err := s.e.createSource(ctx, x); err != nil {
			return err
		}
		return w.Complete("CREATE SOURCE")
	case *parser.CreateMaterializedView:
		if err := s.e.createMView(ctx, x); err != nil {
			return err
		}
		return w.Complete("CREATE MATERIALIZED VIEW")
	case *parser.CreateFunction:
		if err := s.e.createFunction(ctx, x); err != nil {
			return err
		}
		return w.Complete("CREATE FUNCTION")
	case *parser.CreateSink:
		if err := s.e.createSink(ctx, x); err != nil {
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
	case *parser.Flush:
		if err := s.e.coord.Flush(ctx); err != nil {
			return err
		}
		return w.Complete("FLUSH")
	case *parser.Begin:
		if s.inTx {
			_ = w.Notice("there is already a transaction in progress")
		}
		s.inTx = true
		return w.Complete("BEGIN")
	case *parser.Commit:
		if !s.inTx {
			_ = w.Notice("there is no transaction in progress")
		}
		s.inTx = false
		s.closeCursorsAtTxEnd(false /* rollback */)
		return w.Complete("COMMIT")
	case *parser.Rollback:
		if !s.inTx {
			_ = w.Notice("there is no transaction in progress")
		}
		s.inTx = false
		s.closeCursorsAtTxEnd(true /* rollback */)
		return w.Complete("ROLLBACK")
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
	}
	return params, nil, nil
}

func (s *session) set(x *parser.Set, w pgwire.ResultWriter) error {
	name := strings.ToLower(x.Name)
	val := x.Value
	switch name {
	case "time zone":
		name = "timezone"
	}
	if name == "timezone" {
		up := strings.ToUpper(strings.Trim(val, "'"))
		if up != "UTC" && up != "GMT" && up != "Z" && up != "ETC/UTC" && up != "DEFAULT" && up != "LOCAL" && up != "+00" && up != "0" {
			return pgerror.Unsupported("time zone %q: Sluice sessions run in UTC", val).WithHint("SET TIME ZONE 'UTC'")
		}
		val = "UTC"
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
