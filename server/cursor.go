package server

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"time"

	"sluice/server/pgwire"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file serves SQL cursors: DECLARE, FETCH, MOVE and CLOSE, with
// Postgres's positioning rules (PortalRunFetch in pquery.c), command tags
// and errors.
//
// A cursor reads its query's rows lazily from the snapshot taken at
// DECLARE, which it keeps open until it is closed: a FETCH of n rows reads
// about n rows, whatever the size of the result. Going backward (PRIOR,
// BACKWARD, ABSOLUTE to an earlier row) rewinds the result and reads it
// again up to the target row: from memory when the result was collected
// (ORDER BY, aggregates, joins), else by running the scan again over the
// same snapshot, which yields the same rows in the same order. So every
// cursor can scroll, as a Postgres cursor over a plan that supports
// backward scans; only NO SCROLL refuses (55000). A WITH HOLD cursor keeps
// its snapshot past COMMIT instead of being copied out.

// SQLSTATEs of cursors that sql/pgcode does not name.
const (
	codeDuplicateCursor        pgcode.Code = "42P03"
	codeNoActiveSQLTransaction pgcode.Code = "25P01"
)

// cursor is one DECLAREd cursor of a session.
type cursor struct {
	name   string
	text   string // the DECLARE statement (pg_cursors.statement)
	hold   bool
	binary bool
	scroll int // parser.ScrollDefault, ScrollYes or ScrollNo
	cols   []types.Column
	rows   *queryRows
	inTx   bool  // declared in the current transaction block
	since  int64 // creation time, µs since the epoch

	// Position as Postgres counts it: 0 before the first row, k on row k,
	// total+1 after the last (atEnd).
	pos   int64
	atEnd bool
	total int64 // known once the end was seen; -1 before

	read  int64       // rows taken from rows since the last rewind
	chunk []types.Row // rows of rows' current chunk not yet taken

	// sub is set, and rows nil, for a cursor over SUBSCRIBE
	// (subscribe.go); chunk then holds its rows not yet fetched.
	sub *subRows
}

// close releases what the cursor holds.
func (c *cursor) close() {
	if c.sub != nil {
		c.sub.Close()
		return
	}
	c.rows.Close()
}

// inTxBlock reports whether the session is inside an explicit transaction
// block (BEGIN … COMMIT/ROLLBACK), where cursors without HOLD may live.
func (s *session) inTxBlock() bool { return s.tx != nil }

// closeCursorsAtTxEnd closes the cursors that end with the transaction
// block: those without HOLD, and on ROLLBACK also the holdable ones
// declared in it, as Postgres does. Holdable cursors that survive no
// longer belong to a transaction.
func (s *session) closeCursorsAtTxEnd(rollback bool) {
	for name, c := range s.cursors {
		if !c.hold || (rollback && c.inTx) {
			c.close()
			delete(s.cursors, name)
			continue
		}
		c.inTx = false
	}
}

// closeAllCursors closes every cursor (CLOSE ALL, end of the session).
func (s *session) closeAllCursors() {
	for name, c := range s.cursors {
		c.close()
		delete(s.cursors, name)
	}
}

func init() {
	addSys(&sysTable{schema: "pg_catalog", name: "pg_cursors", oid: oidPgCursors, kind: 'v',
		cols: colSpec("name:text statement:text is_holdable:bool is_binary:bool is_scrollable:bool creation_time:timestamptz"),
		rows: func(env *sysEnv) []types.Row { return env.cursors }})
}

// oidPgCursors is the oid of the pg_cursors view, away from the range
// pgcatalog.go numbers its views in.
const oidPgCursors = 12900

// cursorRows returns the session's cursors as pg_cursors shows them.
func (s *session) cursorRows() []types.Row {
	names := make([]string, 0, len(s.cursors))
	for n := range s.cursors {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []types.Row
	for _, n := range names {
		c := s.cursors[n]
		r := mkRow(c.name, c.text, c.hold, c.binary, c.scroll != parser.ScrollNo, nil)
		r[5] = types.NewTimestampTZ(c.since)
		out = append(out, r)
	}
	return out
}

// isDiscardAll reports whether d is DISCARD ALL (rather than PLANS,
// SEQUENCES or TEMP).
func isDiscardAll(d *parser.Discard) bool {
	f := strings.Fields(strings.ToLower(d.Text()))
	return len(f) == 2 && f[1] == "all"
}

// runCursorStmt runs DECLARE, FETCH, MOVE or CLOSE.
func (s *session) runCursorStmt(ctx context.Context, st parser.Statement, params []types.Datum, ptypes []types.T, w pgwire.ResultWriter) error {
	switch x := st.(type) {
	case *parser.DeclareCursor:
		return s.declareCursor(ctx, x, params, ptypes, w)
	case *parser.Fetch:
		c, err := s.cursor(x.Name)
		if err != nil {
			return err
		}
		return c.fetch(ctx, x, w)
	case *parser.CloseCursor:
		if x.All {
			s.closeAllCursors()
			return w.Complete("CLOSE CURSOR ALL")
		}
		c, err := s.cursor(x.Name)
		if err != nil {
			return err
		}
		c.close()
		delete(s.cursors, c.name)
		return w.Complete("CLOSE CURSOR")
	}
	return internalf("not a cursor statement: %T", st)
}

// describeCursorStmt returns the parameter and result types of a cursor
// statement (extended protocol): DECLARE takes its query's parameters;
// FETCH returns the cursor's columns if it exists now (as Postgres
// describes it), no rows otherwise.
func (s *session) describeCursorStmt(st parser.Statement, params []types.T) ([]types.T, []types.Column, error) {
	switch x := st.(type) {
	case *parser.DeclareCursor:
		if x.Subscribe != nil {
			return params, nil, nil
		}
		ps, _, err := s.describeQuery(x.Query, params)
		return ps, nil, err
	case *parser.Fetch:
		if c := s.cursors[x.Name]; c != nil && !x.Move {
			return params, c.cols, nil
		}
	}
	return params, nil, nil
}

func (s *session) cursor(name string) (*cursor, error) {
	if c := s.cursors[name]; c != nil {
		return c, nil
	}
	return nil, pgerror.New(pgcode.InvalidCursorName, "cursor \"%s\" does not exist", name)
}

func (s *session) declareCursor(ctx context.Context, x *parser.DeclareCursor, params []types.Datum, ptypes []types.T, w pgwire.ResultWriter) error {
	if !x.Hold && !s.inTxBlock() {
		return pgerror.New(codeNoActiveSQLTransaction, "DECLARE CURSOR can only be used in transaction blocks")
	}
	if s.cursors[x.Name] != nil {
		return pgerror.New(codeDuplicateCursor, "cursor \"%s\" already exists", x.Name)
	}
	if len(s.cursors) >= pgwire.MaxPortals {
		return errTooManyCursors()
	}
	if x.Subscribe != nil {
		return s.declareSubscribe(ctx, x, w)
	}
	p := s.plannerWith(ptypes)
	p.Nulls = x.Query.Nulls
	p.TableFuncs = x.Query.TableFuncs
	pq, err := p.PlanQuery(x.Query.Node)
	if err != nil {
		return err
	}
	if err := checkParams(p, params); err != nil {
		return err
	}
	if err := s.awaitReads(ctx); err != nil {
		return err
	}
	// A holdable cursor outlives the block: it reads a snapshot of its own.
	snap := s.txSnapshot()
	if x.Hold {
		snap = nil
	}
	rows, err := s.e.openQuery(ctx, pq, s.evalCtx(params), snap)
	if err != nil {
		return err
	}
	if s.cursors == nil {
		s.cursors = map[string]*cursor{}
	}
	s.cursors[x.Name] = &cursor{
		name: x.Name, text: x.Text(), hold: x.Hold, binary: x.Binary, scroll: x.Scroll,
		cols: pq.Columns, rows: rows, inTx: s.inTxBlock(), total: -1, since: time.Now().UnixMicro(),
	}
	return w.Complete("DECLARE CURSOR")
}

// errForwardOnly is Postgres's error for going backward in a NO SCROLL
// cursor.
func errForwardOnly() error {
	return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "cursor can only scan forward").
		WithHint("Declare it with SCROLL option to enable backward scan.")
}

// fetchSink receives the rows of one FETCH (nothing for MOVE).
type fetchSink struct {
	w     pgwire.ResultWriter
	move  bool
	n     int64
	bin   bool
	cols  []types.Column
	begun bool
}

func (f *fetchSink) begin() error {
	if f.move || f.begun {
		return nil
	}
	f.begun = true
	if bw, ok := f.w.(pgwire.BinaryColumnsWriter); ok && f.bin {
		return bw.BinaryColumns(f.cols)
	}
	return f.w.Columns(f.cols)
}

func (f *fetchSink) row(r types.Row) error {
	f.n++
	if f.move {
		return nil
	}
	if err := f.begin(); err != nil {
		return err
	}
	return f.w.Row(r)
}

func (f *fetchSink) complete() error {
	if f.move {
		return f.w.Complete("MOVE " + strconv.FormatInt(f.n, 10))
	}
	if err := f.begin(); err != nil {
		return err
	}
	return f.w.Complete("FETCH " + strconv.FormatInt(f.n, 10))
}

// fetch runs FETCH or MOVE x on c.
func (c *cursor) fetch(ctx context.Context, x *parser.Fetch, w pgwire.ResultWriter) error {
	// The row description goes out with the first row or the tag, so that
	// an error (NO SCROLL) comes alone, as in Postgres.
	out := &fetchSink{w: w, move: x.Move, bin: c.binary, cols: c.cols}
	if c.sub != nil {
		if err := c.fetchSub(ctx, x, out); err != nil {
			return err
		}
		return out.complete()
	}
	var err error
	switch x.Dir {
	case parser.FetchForward:
		if x.Count == 0 {
			err = c.relative(ctx, 0, out)
		} else {
			err = c.forward(ctx, x.Count, out)
		}
	case parser.FetchBackward:
		if x.Count == 0 {
			err = c.relative(ctx, 0, out)
		} else {
			err = c.backward(ctx, x.Count, out)
		}
	case parser.FetchAbsolute:
		err = c.absolute(ctx, x.Count, out)
	case parser.FetchRelative:
		err = c.relative(ctx, x.Count, out)
	}
	if err != nil {
		return err
	}
	return out.complete()
}

// next takes the next row of the result (row read+1), or reports its end.
func (c *cursor) next(ctx context.Context) (types.Row, bool, error) {
	for len(c.chunk) == 0 {
		if c.total >= 0 && c.read >= c.total {
			return nil, false, nil
		}
		chunk, err := c.rows.Next(ctx)
		if err != nil {
			return nil, false, err
		}
		if chunk == nil {
			c.total = c.read
			return nil, false, nil
		}
		c.chunk = chunk
	}
	r := c.chunk[0]
	c.chunk = c.chunk[1:]
	c.read++
	return r, true, nil
}

// seek prepares to read row k (>= 1) with next: it rewinds if row k was
// read already and skips the rows before it.
func (c *cursor) seek(ctx context.Context, k int64) error {
	if k <= c.read {
		if err := c.rows.res.Rewind(); err != nil {
			return err
		}
		c.read, c.chunk = 0, nil
	}
	for c.read < k-1 {
		if len(c.chunk) > 0 {
			skip := min(int64(len(c.chunk)), k-1-c.read)
			c.chunk = c.chunk[skip:]
			c.read += skip
			continue
		}
		if _, ok, err := c.next(ctx); err != nil || !ok {
			return err
		}
	}
	return nil
}

// rowAt returns row k (>= 1), or reports that there is none.
func (c *cursor) rowAt(ctx context.Context, k int64) (types.Row, bool, error) {
	if err := c.seek(ctx, k); err != nil {
		return nil, false, err
	}
	if c.read != k-1 {
		return nil, false, nil // the result ended before row k-1
	}
	return c.next(ctx)
}

// toEnd reads to the end of the result, so that its size is known.
func (c *cursor) toEnd(ctx context.Context) error {
	for c.total < 0 {
		if _, _, err := c.next(ctx); err != nil {
			return err
		}
	}
	return nil
}

// setAfterEnd positions the cursor after the last row.
func (c *cursor) setAfterEnd() {
	c.atEnd = true
	c.pos = c.total + 1
}

// forward fetches up to n rows after the current position.
func (c *cursor) forward(ctx context.Context, n int64, out *fetchSink) error {
	if c.atEnd {
		return nil
	}
	if err := c.seek(ctx, c.pos+1); err != nil {
		return err
	}
	for k := int64(0); k < n; k++ {
		r, ok, err := c.next(ctx)
		if err != nil {
			return err
		}
		if !ok {
			c.setAfterEnd()
			return nil
		}
		c.pos++
		if err := out.row(r); err != nil {
			return err
		}
		if k%1024 == 1023 && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// backward fetches up to n rows before the current position, nearest
// first.
func (c *cursor) backward(ctx context.Context, n int64, out *fetchSink) error {
	if c.scroll == parser.ScrollNo {
		return errForwardOnly()
	}
	hi := c.pos - 1
	if hi < 1 {
		c.pos, c.atEnd = 0, false
		return nil
	}
	lo := max(hi-n+1, 1)
	if err := c.seek(ctx, lo); err != nil {
		return err
	}
	var rows []types.Row
	for k := lo; k <= hi; k++ {
		r, ok, err := c.next(ctx)
		if err != nil {
			return err
		}
		if !ok {
			return internalf("cursor %q: row %d vanished", c.name, k)
		}
		if !out.move {
			rows = append(rows, r)
		}
	}
	for i := len(rows) - 1; i >= 0; i-- {
		if err := out.row(rows[i]); err != nil {
			return err
		}
	}
	if out.move {
		out.n += hi - lo + 1
	}
	c.atEnd = false
	if c.pos-n >= 1 {
		c.pos = c.pos - n
	} else {
		c.pos = 0
	}
	return nil
}

// absolute fetches row k (negative: counted from the end; 0: none, the
// cursor goes before the first row).
func (c *cursor) absolute(ctx context.Context, k int64, out *fetchSink) error {
	if c.scroll == parser.ScrollNo && (k <= 0 || k <= c.pos) && (c.pos > 0 || c.atEnd) {
		return errForwardOnly()
	}
	if c.scroll == parser.ScrollNo && k < 0 {
		return errForwardOnly()
	}
	if k < 0 {
		if err := c.toEnd(ctx); err != nil {
			return err
		}
		k = c.total + k + 1
	}
	if k <= 0 {
		c.pos, c.atEnd = 0, false
		return nil
	}
	return c.fetchRow(ctx, k, out)
}

// relative fetches the row k rows from the current one (0: the current
// row again, if the cursor is on one).
func (c *cursor) relative(ctx context.Context, k int64, out *fetchSink) error {
	onRow := c.pos > 0 && !c.atEnd
	if k == 0 {
		if !onRow {
			return nil
		}
		if c.scroll == parser.ScrollNo && !out.move {
			return errForwardOnly() // Postgres backs up one row to fetch it again
		}
		if out.move {
			out.n++
			return nil
		}
		return c.fetchRow(ctx, c.pos, out)
	}
	if k < 0 && c.scroll == parser.ScrollNo {
		return errForwardOnly()
	}
	if k > 0 && c.atEnd {
		return nil
	}
	target := c.pos + k
	if target <= 0 {
		c.pos, c.atEnd = 0, false
		return nil
	}
	return c.fetchRow(ctx, target, out)
}

// fetchRow positions the cursor on row k (>= 1) and fetches it, or after
// the last row if there is no row k.
func (c *cursor) fetchRow(ctx context.Context, k int64, out *fetchSink) error {
	r, ok, err := c.rowAt(ctx, k)
	if err != nil {
		return err
	}
	if !ok {
		if err := c.toEnd(ctx); err != nil {
			return err
		}
		c.setAfterEnd()
		return nil
	}
	c.pos, c.atEnd = k, false
	return out.row(r)
}
