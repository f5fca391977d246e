package pgwire

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Format codes of the protocol.
const (
	fmtText   int16 = 0
	fmtBinary int16 = 1
)

// statement is a prepared statement of the extended protocol.
type statement struct {
	empty  bool // the query holds no statement: executing it is an EmptyQueryResponse
	prep   Prepared
	params []types.T
	cols   []types.Column // nil: the statement returns no rows
}

type portalState uint8

const (
	portalReady     portalState = iota // bound, not yet executed
	portalSuspended                    // executed; rows beyond a row limit wait in pending and rows
	portalDone                         // executed to completion
	portalFailed                       // execution failed
)

// portal is a bound statement of the extended protocol.
type portal struct {
	name    string
	stmt    *statement
	params  []types.Datum
	fmts    []int16 // result format per column
	state   portalState
	pending []types.Row // rows not yet sent when suspended
	rows    Rows        // the unread rest of a streamed result; nil if none
	tag     string      // command tag, once executed
}

// release closes the portal's unread rows (a streamed result holds a
// snapshot and a paused scan).
func (p *portal) release() {
	if p.rows != nil {
		p.rows.Close()
		p.rows = nil
	}
	p.pending = nil
}

// dropPortal removes a portal, releasing what it holds.
func (c *conn) dropPortal(name string) {
	if p, ok := c.portals[name]; ok {
		p.release()
		delete(c.portals, name)
	}
}

// dropPortals removes every portal (the transaction ended, or the
// connection did).
func (c *conn) dropPortals() {
	for _, p := range c.portals {
		p.release()
	}
	clear(c.portals)
}

// pump sends a suspended portal's rows, at most maxRows (0 = all): first
// the ones kept in pending, then rows pulled from its streamed result. It
// reports how many it sent and whether the portal may hold more: as in
// Postgres, a portal that sent exactly maxRows stays suspended even if
// nothing follows, and the next Execute completes it with 0 rows.
func (c *conn) pump(ctx context.Context, p *portal, maxRows int) (sent int, more bool, err error) {
	for {
		for len(p.pending) > 0 {
			if maxRows > 0 && sent >= maxRows {
				return sent, true, nil
			}
			if err := c.writeDataRow(p.pending[0], p.stmt.cols, p.fmts); err != nil {
				return sent, false, err
			}
			p.pending[0] = nil
			p.pending = p.pending[1:]
			sent++
		}
		if maxRows > 0 && sent >= maxRows {
			return sent, p.rows != nil, nil
		}
		if p.rows == nil {
			return sent, false, nil
		}
		if _, live := p.rows.(LiveRows); live {
			if err := c.flush(); err != nil {
				return sent, false, err
			}
		}
		chunk, err := p.rows.Next(ctx)
		if err != nil {
			return sent, false, err
		}
		if chunk == nil {
			p.rows.Close()
			p.rows = nil
			return sent, false, nil
		}
		// pending aliases the chunk, valid until the next Next: every row
		// of it is sent (or the portal dropped) before that.
		p.pending = chunk
		if sent > 0 {
			// Rows are streaming: let the client have them.
			if err := c.flush(); err != nil {
				return sent, false, err
			}
		}
	}
}

func (c *conn) statement(name string) (*statement, error) {
	if st, ok := c.stmts[name]; ok {
		return st, nil
	}
	if name == "" {
		return nil, pgerror.New(pgcode.InvalidSQLStatementName, "unnamed prepared statement does not exist")
	}
	return nil, pgerror.New(pgcode.InvalidSQLStatementName, "prepared statement \"%s\" does not exist", name)
}

func (c *conn) portal(name string) (*portal, error) {
	if p, ok := c.portals[name]; ok {
		return p, nil
	}
	if name == "" {
		return nil, pgerror.New(pgcode.InvalidCursorName, "unnamed portal does not exist")
	}
	return nil, pgerror.New(pgcode.InvalidCursorName, "portal \"%s\" does not exist", name)
}

// parse creates a prepared statement (Parse).
func (c *conn) parse(name, query string, oids []uint32) error {
	if _, ok := c.stmts[name]; ok && name != "" {
		return pgerror.New(pgcode.DuplicatePreparedStatement, "prepared statement \"%s\" already exists", name)
	}
	if _, ok := c.stmts[name]; !ok && len(c.stmts) >= MaxPreparedStatements {
		return errTooManyStatements()
	}
	st := &statement{}
	if isEmptyQuery(query) {
		st.empty = true
		st.params = make([]types.T, len(oids))
		for i, oid := range oids {
			st.params[i], _ = types.FromOID(oid)
		}
	} else {
		var prep Prepared
		err := c.run(func(ctx context.Context) error {
			var err error
			prep, err = c.sess.Prepare(ctx, query, oids)
			return err
		})
		if err != nil {
			return err
		}
		if prep == nil {
			return pgerror.New(pgcode.Internal, "no prepared statement")
		}
		st.prep, st.params, st.cols = prep, prep.ParamTypes(), prep.Columns()
	}
	c.stmts[name] = st
	return nil
}

// bind creates a portal (Bind): it decodes the parameters by the
// statement's parameter types and resolves the result formats.
func (c *conn) bind(name, stmtName string, paramFmts []int16, raw [][]byte, resultFmts []int16) error {
	if name == "" {
		c.dropPortal("") // as Postgres: Bind replaces the unnamed portal even if it fails
	} else if _, ok := c.portals[name]; ok {
		return pgerror.New("42P03", "portal \"%s\" already exists", name)
	}
	if len(c.portals) >= MaxPortals {
		return errTooManyPortals()
	}
	st, err := c.statement(stmtName)
	if err != nil {
		return err
	}
	if len(paramFmts) > 1 && len(paramFmts) != len(raw) {
		return pgerror.New(pgcode.ProtocolViolation, "bind message has %d parameter formats but %d parameters", len(paramFmts), len(raw))
	}
	if len(raw) != len(st.params) {
		return pgerror.New(pgcode.ProtocolViolation, "bind message supplies %d parameters, but prepared statement \"%s\" requires %d", len(raw), stmtName, len(st.params))
	}
	params := make([]types.Datum, len(raw))
	for i, b := range raw {
		if b == nil {
			params[i] = types.Null
			continue
		}
		f := fmtText
		if len(paramFmts) == 1 {
			f = paramFmts[0]
		} else if len(paramFmts) > 1 {
			f = paramFmts[i]
		}
		t := st.params[i]
		switch f {
		case fmtText:
			s := string(b)
			if err := checkText(s); err != nil {
				return err
			}
			d, err := parseText(s, t, c.zone())
			if err != nil {
				if pgerror.GetCode(err).IsInternal() {
					return pgerror.Wrap(err, pgcode.InvalidTextRepresentation, "invalid input for parameter $%d", i+1)
				}
				return err
			}
			params[i] = d
		case fmtBinary:
			d, err := decodeBinary(b, t)
			if err != nil {
				e := pgerror.Flatten(err)
				code := e.Code
				if code.IsInternal() {
					code = pgcode.InvalidBinaryRepresentation
				}
				if code == pgcode.StringDataRightTrunc {
					// A well-formed value the column's type refuses
					// (varchar(n)): PostgreSQL's own message.
					return err
				}
				return pgerror.New(code, "incorrect binary data format in bind parameter %d", i+1).WithDetail("%s", e.Message)
			}
			params[i] = d
		default:
			return pgerror.New(pgcode.InvalidParameterValue, "unsupported format code: %d", f)
		}
	}

	ncols := len(st.cols)
	if len(resultFmts) > 1 && len(resultFmts) != ncols {
		return pgerror.New(pgcode.ProtocolViolation, "bind message has %d result formats but query has %d columns", len(resultFmts), ncols)
	}
	for _, f := range resultFmts {
		if f != fmtText && f != fmtBinary {
			return pgerror.New(pgcode.InvalidParameterValue, "unsupported format code: %d", f)
		}
	}
	var fmts []int16
	switch {
	case len(resultFmts) == 1 && resultFmts[0] == fmtBinary:
		fmts = make([]int16, ncols)
		for i := range fmts {
			fmts[i] = fmtBinary
		}
	case len(resultFmts) > 1:
		fmts = append([]int16(nil), resultFmts...)
	}
	c.portals[name] = &portal{name: name, stmt: st, params: params, fmts: fmts}
	return nil
}

// execute runs a portal (Execute), sending at most maxRows rows (0 = all).
// Rows beyond the limit are kept in the portal and the portal suspended;
// the next Execute continues from them.
func (c *conn) execute(p *portal, maxRows int) error {
	if p.stmt.empty {
		return c.sendEmptyQuery()
	}
	switch p.state {
	case portalReady:
		w := &portalWriter{c: c, p: p, max: maxRows}
		err := c.run(func(ctx context.Context) error { return c.sess.Execute(ctx, p.stmt.prep, p.params, w) })
		if perr := c.sendChangedParameters(); err == nil {
			err = perr
		}
		if err != nil {
			p.state = portalFailed
			p.release()
			return err
		}
		if !w.completed {
			// The Session did not end the statement: make up its tag.
			p.tag = ""
			if p.stmt.cols != nil {
				p.tag = "SELECT " + strconv.Itoa(w.sent+len(p.pending))
			}
		}
		if len(p.pending) > 0 || p.rows != nil {
			p.state = portalSuspended
			return c.sendPortalSuspended()
		}
		p.state = portalDone
		if !w.completed {
			return c.sendComplete(p.tag)
		}
		return nil
	case portalSuspended:
		var n int
		var more bool
		err := c.run(func(ctx context.Context) error {
			var err error
			n, more, err = c.pump(ctx, p, maxRows)
			return err
		})
		if err != nil {
			p.state = portalFailed
			p.release()
			return err
		}
		if more {
			return c.sendPortalSuspended()
		}
		p.state = portalDone
		p.release()
		return c.sendComplete(retag(p.tag, n))
	case portalDone:
		if p.stmt.cols != nil { // as Postgres: a finished query yields no more rows
			return c.sendComplete(retag(p.tag, 0))
		}
	}
	return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "portal \"%s\" cannot be run", p.name)
}

// retag returns a "SELECT n" tag with the number of rows of the last
// Execute of a portal, which is what Postgres reports.
func retag(tag string, n int) string {
	if strings.HasPrefix(tag, "SELECT ") {
		return "SELECT " + strconv.Itoa(n)
	}
	return tag
}

// simpleWriter writes a simple Query's results: a RowDescription per
// statement, rows in text format.
type simpleWriter struct {
	c         *conn
	cols      []types.Column
	fmts      []int16 // nil: text
	completed int
}

func (w *simpleWriter) Columns(cols []types.Column) error {
	w.cols, w.fmts = cols, nil
	return w.c.sendRowDescription(cols, nil)
}

// BinaryColumns implements BinaryColumnsWriter.
func (w *simpleWriter) BinaryColumns(cols []types.Column) error {
	w.cols = cols
	w.fmts = make([]int16, len(cols))
	for i := range w.fmts {
		w.fmts[i] = fmtBinary
	}
	return w.c.sendRowDescription(cols, w.fmts)
}

func (w *simpleWriter) Row(r types.Row) error { return w.c.writeDataRow(r, w.cols, w.fmts) }

func (w *simpleWriter) Complete(tag string) error {
	w.completed++
	w.cols, w.fmts = nil, nil
	return w.c.sendComplete(tag)
}

func (w *simpleWriter) Notice(msg string) error { return w.c.sendNotice(msg) }

// Flush sends everything written so far.
func (w *simpleWriter) Flush() error { return w.c.flush() }

// Stream implements RowStreamer: every row goes out as it is pulled.
func (w *simpleWriter) Stream(ctx context.Context, cols []types.Column, rows Rows) error {
	defer rows.Close()
	if err := w.Columns(cols); err != nil {
		return err
	}
	n := 0
	_, live := rows.(LiveRows)
	for {
		if live {
			// Next may wait: the client has everything before it.
			if err := w.c.flush(); err != nil {
				return err
			}
		}
		chunk, err := rows.Next(ctx)
		if err != nil {
			return err
		}
		if chunk == nil {
			break
		}
		for _, r := range chunk {
			if err := w.c.writeDataRow(r, cols, nil); err != nil {
				return err
			}
		}
		n += len(chunk)
		if err := w.c.flush(); err != nil {
			return err
		}
	}
	return w.Complete("SELECT " + strconv.Itoa(n))
}

// portalWriter writes an Execute's results in the portal's formats (the
// RowDescription was sent by Describe). Rows beyond the row limit are
// kept in the portal.
type portalWriter struct {
	c         *conn
	p         *portal
	max       int // row limit; 0 = none
	sent      int
	completed bool
}

func (w *portalWriter) Columns([]types.Column) error { return nil }

func (w *portalWriter) Row(r types.Row) error {
	if w.max > 0 && w.sent >= w.max {
		w.p.pending = append(w.p.pending, r.Copy())
		return nil
	}
	if err := w.c.writeDataRow(r, w.p.stmt.cols, w.p.fmts); err != nil {
		return err
	}
	w.sent++
	return nil
}

func (w *portalWriter) Complete(tag string) error {
	if w.completed {
		return fmt.Errorf("pgwire: statement completed twice (%q)", tag)
	}
	w.completed = true
	w.p.tag = tag
	if len(w.p.pending) > 0 {
		return nil // sent when the portal runs to its end
	}
	return w.c.sendComplete(tag)
}

func (w *portalWriter) Notice(msg string) error { return w.c.sendNotice(msg) }

// Flush sends everything written so far.
func (w *portalWriter) Flush() error { return w.c.flush() }

// Stream implements RowStreamer: rows up to the row limit are sent; the
// rest stay unread in the portal, which is then suspended.
func (w *portalWriter) Stream(ctx context.Context, _ []types.Column, rows Rows) error {
	if w.completed {
		rows.Close()
		return fmt.Errorf("pgwire: statement completed twice")
	}
	w.p.release()
	w.p.rows = rows
	limit := 0
	if w.max > 0 {
		limit = max(w.max-w.sent, 0)
		if limit == 0 {
			limit = -1 // already at the limit: send nothing more now
		}
	}
	var n int
	var more bool
	var err error
	if limit >= 0 {
		n, more, err = w.c.pump(ctx, w.p, limit)
	} else {
		more = true
	}
	w.sent += n
	if err != nil {
		w.p.release()
		return err
	}
	w.completed = true
	w.p.tag = "SELECT " + strconv.Itoa(w.sent)
	if more {
		return nil // the portal is suspended; its tag is sent when it ends
	}
	return w.c.sendComplete(w.p.tag)
}
