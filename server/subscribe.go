package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"time"

	"sluice/exec/ops"
	"sluice/planner/cat"
	"sluice/server/pgwire"
	"sluice/sql/acl"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// This file serves SUBSCRIBE (Materialize's spelling): a table's or
// materialized view's rows at a committed epoch, then every committed
// change, as rows (mz_timestamp, [mz_progressed,] mz_diff, columns…) that
// stream until the client cancels or goes away. Forms: SUBSCRIBE v, COPY
// (SUBSCRIBE v) TO STDOUT, and DECLARE c CURSOR FOR SUBSCRIBE v with FETCH
// n c [WITH (timeout = '1s')].
//
// The changes come from the relation's change log (storage/changelog.go,
// written by its Materialize in each epoch's atomic commit), read from the
// store after each commit: the subscription holds no more than one chunk
// of rows, however far behind its client is. A client that falls behind
// the log's retention (MinRetention without one) is ended with 55000; a
// CancelRequest or a closed connection ends it at once (the statement's
// context), and Close gives back everything it holds.
//
// Opening: the subscription registers (Subs), then a barrier is flushed:
// every epoch injected after the registration is logged, and the snapshot
// taken after the flush is at or past that barrier's epoch, so the log
// covers every epoch after the snapshot.

// subRows are the rows of one subscription (pgwire.Rows).
type subRows struct {
	e        *Engine
	rel      uint64
	name     string
	hist     *storage.RelHist
	ncols    int
	progress bool

	// snap is the snapshot being read (nil once read); next is the key
	// after the last relation row returned.
	snap *storage.Snapshot
	next []byte
	// pos is the epoch up to which changes were returned; tail the chunk
	// key after the last returned (nil: start of epoch pos+1), up to end.
	pos    uint64
	tail   []byte
	end    uint64
	closed bool

	out     []types.Row
	changes []ops.HistChange
}

// subBatch is the most rows one Next returns.
const subBatch = 1024

// subscriptionCols returns the columns of a subscription to rel.
func subscriptionCols(rel *cat.Relation, progress bool) []types.Column {
	cols := []types.Column{{Name: "mz_timestamp", Type: types.TInt8}}
	if progress {
		cols = append(cols, types.Column{Name: "mz_progressed", Type: types.TBool})
	}
	cols = append(cols, types.Column{Name: "mz_diff", Type: types.TInt8})
	for _, c := range rel.Columns {
		cols = append(cols, types.Column{Name: c.Name, Type: c.Type})
	}
	return cols
}

// subscribeTarget resolves the relation of a SUBSCRIBE.
func (s *session) subscribeTarget(x *parser.Subscribe) (*cat.Relation, error) {
	schema, name := "", x.Name
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		schema, name = name[:i], name[i+1:]
	}
	rel, err := s.catalogView().Resolve(schema, name)
	if err != nil {
		return nil, err
	}
	switch rel.Kind {
	case cat.Table, cat.MaterializedView:
	default:
		return nil, pgerror.Unsupported("cannot SUBSCRIBE to %s \"%s\"", rel.Kind, rel.Name).
			WithHint("SUBSCRIBE reads a table or a materialized view; create a materialized view over it")
	}
	if s.e.cat.byIDGet(rel.ID) == nil {
		return nil, pgerror.New(pgcode.UndefinedTable, "relation \"%s\" does not exist", rel.Name)
	}
	if err := s.e.checkAccess(s.role(), rel, acl.Select); err != nil {
		return nil, err
	}
	return rel, nil
}

// openSubscription starts a subscription: see the file comment.
func (s *session) openSubscription(ctx context.Context, x *parser.Subscribe) (*subRows, []types.Column, error) {
	rel, err := s.subscribeTarget(x)
	if err != nil {
		return nil, nil, err
	}
	sr := &subRows{e: s.e, rel: rel.ID, name: rel.Name, hist: s.e.db.Hist(rel.ID), ncols: len(rel.Columns), progress: x.Progress}
	sr.hist.Subs.Add(1)
	if err := s.e.coord.Flush(ctx); err != nil {
		sr.Close()
		return nil, nil, err
	}
	snap := s.e.db.Snapshot()
	lo, ok, err := histLo(snap, rel.ID)
	if err == nil && !ok {
		err = pgerror.New(pgcode.ObjectNotInPrerequisiteState, "the change log of \"%s\" is not being written", rel.Name).
			WithHint("Its materialized view may have failed: see SHOW MATERIALIZED VIEWS.")
	}
	if err == nil && x.HasAsOf && x.AsOf < lo {
		err = pgerror.New(pgcode.ObjectNotInPrerequisiteState, "AS OF %d is before the retained history of \"%s\", which starts after epoch %d", x.AsOf, rel.Name, lo).
			WithHint("Subscribe AS OF %d or later, or keep more history: ALTER MATERIALIZED VIEW %s SET (retention = '1h').", lo, rel.Name)
	}
	if err != nil {
		snap.Release()
		sr.Close()
		return nil, nil, err
	}
	sr.pos = snap.Epoch
	if x.HasAsOf {
		sr.pos = x.AsOf
	}
	if x.NoSnapshot {
		snap.Release()
	} else {
		sr.snap = snap
		sr.next = storage.Key(storage.SpaceRelation, rel.ID)
	}
	return sr, subscriptionCols(rel, x.Progress), nil
}

// histLo reads relation rel's change-log low mark in snap.
func histLo(snap *storage.Snapshot, rel uint64) (uint64, bool, error) {
	v, err := snap.Get(storage.HistLoKey(rel))
	if err != nil || v == nil {
		return 0, false, err
	}
	lo, n := binary.Uvarint(v)
	if n <= 0 {
		return 0, false, pgerror.New(pgcode.DataCorrupted, "corrupt change log mark")
	}
	return lo, true, nil
}

// Live implements pgwire.LiveRows: Next may wait, so what was written
// goes out before it is called.
func (r *subRows) Live() {}

// Close implements pgwire.Rows.
func (r *subRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	if r.snap != nil {
		r.snap.Release()
		r.snap = nil
	}
	r.hist.Subs.Add(-1)
}

// Next implements pgwire.Rows: it waits until there is something to
// return (never returning nil: a subscription does not end).
func (r *subRows) Next(ctx context.Context) ([]types.Row, error) {
	return r.next1(ctx, time.Time{})
}

var errSubTimeout = errors.New("subscription wait timed out")

// next1 is Next, returning (nil, nil) once deadline passes (zero: none).
func (r *subRows) next1(ctx context.Context, deadline time.Time) ([]types.Row, error) {
	r.out = r.out[:0]
	if r.snap != nil {
		rows, err := r.snapshotRows()
		if err != errEmptySnapshot {
			return rows, err
		}
	}
	var timer <-chan time.Time
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ch, committed := r.e.db.Committed()
		if r.end > r.pos || committed > r.pos {
			if err := r.tailRows(); err != nil {
				return nil, err
			}
			if len(r.out) > 0 {
				return r.out, nil
			}
			continue
		}
		if !deadline.IsZero() && timer == nil {
			t := time.NewTimer(time.Until(deadline))
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-ch:
		case <-timer:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// snapshotRows returns the next rows of the snapshot, then its progress
// row.
func (r *subRows) snapshotRows() ([]types.Row, error) {
	hi := storage.PrefixEnd(storage.Key(storage.SpaceRelation, r.rel))
	err := r.snap.ScanRange(r.next, hi, func(k, v []byte) error {
		if len(r.out) >= subBatch {
			return errStopSub
		}
		n, row, err := ops.DecodeRelValue(v)
		if err != nil {
			return err
		}
		r.out = append(r.out, r.row(r.snap.Epoch, n, row))
		r.next = append(append(r.next[:0], k...), 0)
		return nil
	})
	if err != nil && err != errStopSub {
		return nil, err
	}
	if err == nil {
		if r.progress {
			r.out = append(r.out, r.progressRow(r.snap.Epoch))
		}
		r.snap.Release()
		r.snap = nil
	}
	if len(r.out) == 0 { // an empty relation without progress rows
		return nil, errEmptySnapshot
	}
	return r.out, nil
}

var errStopSub = errors.New("stop")

// errEmptySnapshot: the snapshot gave no row (an empty relation without
// progress rows); the changes follow.
var errEmptySnapshot = errors.New("empty snapshot")

// tailRows reads the log after pos: the epochs up to the committed one, a
// chunk at a time, then a progress row for the last.
func (r *subRows) tailRows() error {
	if r.end <= r.pos {
		// A new round: read up to the epoch committed now, checking that
		// the log still holds everything after pos.
		snap := r.e.db.Snapshot()
		defer snap.Release()
		lo, ok, err := histLo(snap, r.rel)
		if err != nil {
			return err
		}
		if r.e.cat.byIDGet(r.rel) == nil {
			return pgerror.New(pgcode.UndefinedTable, "relation \"%s\" subscribed to was dropped", r.name)
		}
		if !ok || lo > r.pos {
			return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "subscription to \"%s\" fell behind: the changes after epoch %d are no longer retained", r.name, r.pos).
				WithHint("The client read too slowly (or the view's query was replaced); subscribe again, or keep more history with ALTER MATERIALIZED VIEW … SET (retention = …).")
		}
		r.end = snap.Epoch
		r.tail = storage.HistEpochKey(r.rel, r.pos+1)
	}
	hi := storage.HistEpochKey(r.rel, r.end+1)
	var last []byte
	err := r.e.db.ScanRange(r.tail, hi, func(k, v []byte) error {
		if len(r.out) >= subBatch {
			return errStopSub
		}
		e := storage.HistKeyEpoch(k)
		var err error
		r.changes = r.changes[:0]
		if _, r.changes, err = ops.DecodeHistChunk(v, r.changes); err != nil {
			return err
		}
		for _, c := range r.changes {
			r.out = append(r.out, r.row(e, c.Diff, c.Row))
		}
		last = k
		return nil
	})
	if err != nil && err != errStopSub {
		return err
	}
	if err == errStopSub {
		r.tail = append(bytes.Clone(last), 0)
		return nil
	}
	r.pos = r.end
	if r.progress {
		r.out = append(r.out, r.progressRow(r.end))
	}
	return nil
}

// row builds an output row.
func (r *subRows) row(epoch uint64, diff int64, row types.Row) types.Row {
	out := make(types.Row, 0, 3+len(row))
	out = append(out, types.NewInt(int64(epoch)))
	if r.progress {
		out = append(out, types.NewBool(false))
	}
	out = append(out, types.NewInt(diff))
	return append(out, row...)
}

// progressRow says every change up to epoch was sent.
func (r *subRows) progressRow(epoch uint64) types.Row {
	out := make(types.Row, 3+r.ncols)
	out[0], out[1] = types.NewInt(int64(epoch)), types.NewBool(true)
	return out
}

// subscribe runs SUBSCRIBE.
func (s *session) subscribe(ctx context.Context, x *parser.Subscribe, w pgwire.ResultWriter) error {
	rs, ok := w.(pgwire.RowStreamer)
	if !ok {
		return pgerror.Unsupported("SUBSCRIBE is not supported here").WithHint("use COPY (SUBSCRIBE …) TO STDOUT")
	}
	sr, cols, err := s.openSubscription(ctx, x)
	if err != nil {
		return err
	}
	return rs.Stream(ctx, cols, sr)
}

// describeSubscribe gives a SUBSCRIBE's result columns.
func (s *session) describeSubscribe(x *parser.Subscribe, params []types.T) ([]types.T, []types.Column, error) {
	rel, err := s.subscribeTarget(x)
	if err != nil {
		return nil, nil, err
	}
	return params, subscriptionCols(rel, x.Progress), nil
}

// copySubscribe runs COPY (SUBSCRIBE …) TO STDOUT: each row is one line
// of COPY data, sent as its epoch commits.
func (s *session) copySubscribe(ctx context.Context, x *parser.Copy, opts *copyOpts, cp pgwire.Copier) error {
	if x.From || x.File != "" {
		return pgerror.Unsupported("COPY (SUBSCRIBE …) goes TO STDOUT only")
	}
	sr, cols, err := s.openSubscription(ctx, x.Subscribe)
	if err != nil {
		return err
	}
	defer sr.Close()
	cw, enc, err := startCopyOut(cp, opts, cols)
	if err != nil {
		return err
	}
	fl, _ := cw.(interface{ Flush() error })
	for {
		if fl != nil {
			if err := fl.Flush(); err != nil {
				return err
			}
		}
		rows, err := sr.Next(ctx)
		if err != nil {
			return err
		}
		for _, r := range rows {
			b, err := enc.row(r)
			if err != nil {
				return err
			}
			if _, err := cw.Write(b); err != nil {
				return err
			}
		}
	}
}

// parseRetention parses a retention: a PostgreSQL interval ('1h' style
// Go durations too); '0' turns retention off.
func parseRetention(v string) (time.Duration, error) {
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return d, nil
	}
	iv, err := types.ParseText(v, types.TInterval)
	if err != nil {
		return 0, pgerror.New(pgcode.InvalidParameterValue, "invalid retention %q", v).WithHint("give an interval such as '1h' or '30 minutes'")
	}
	d := time.Duration(iv.M)*30*24*time.Hour + time.Duration(iv.X)*24*time.Hour + time.Duration(iv.I)*time.Microsecond
	if d < 0 {
		return 0, pgerror.New(pgcode.InvalidParameterValue, "retention %q is negative", v)
	}
	return d, nil
}

// alterRetention runs ALTER MATERIALIZED VIEW v | TABLE t SET (retention =
// '…').
func (s *session) alterRetention(ctx context.Context, x *parser.AlterRetention, w pgwire.ResultWriter) error {
	tag := "ALTER " + x.Kind
	d, err := parseRetention(x.Retention)
	if err != nil {
		return err
	}
	kind, what := kindMView, "materialized view"
	if x.Kind == "TABLE" {
		kind, what = kindTable, "table"
	}
	ent, err := s.alterTarget(x.Name, kind, what, x.IfExists, tag, w)
	if ent == nil {
		return err
	}
	err = s.e.ddl(ctx, func() error {
		nt := copyEntry(ent)
		if nt.Options == nil {
			nt.Options = map[string]string{}
		}
		nt.Options["retention"] = d.String()
		s.e.persist(nt)
		s.e.db.Hist(ent.ID).Retention.Store(int64(d))
		return nil
	})
	if err != nil {
		return err
	}
	return w.Complete(tag)
}

// restoreRetention sets a relation's retention from its catalog entry.
func (e *Engine) restoreRetention(ent *storage.CatalogEntry) {
	if v := ent.Options["retention"]; v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			e.db.Hist(ent.ID).Retention.Store(int64(d))
		}
	}
}

// declareSubscribe runs DECLARE c CURSOR FOR SUBSCRIBE ….
func (s *session) declareSubscribe(ctx context.Context, x *parser.DeclareCursor, w pgwire.ResultWriter) error {
	if x.Hold {
		return pgerror.Unsupported("a SUBSCRIBE cursor cannot be WITH HOLD").WithHint("declare it inside a transaction block")
	}
	if x.Scroll == parser.ScrollYes {
		return pgerror.Unsupported("a SUBSCRIBE cursor cannot SCROLL")
	}
	sr, cols, err := s.openSubscription(ctx, x.Subscribe)
	if err != nil {
		return err
	}
	if s.cursors == nil {
		s.cursors = map[string]*cursor{}
	}
	s.cursors[x.Name] = &cursor{
		name: x.Name, text: x.Text(), binary: x.Binary, scroll: parser.ScrollNo,
		cols: cols, sub: sr, inTx: s.inTxBlock(), total: -1, since: time.Now().UnixMicro(),
	}
	return w.Complete("DECLARE CURSOR")
}

// fetchSub runs FETCH from a SUBSCRIBE cursor: it waits until a row is
// there (at most the timeout, then returns none) and returns up to the
// count of the rows there are, without waiting for more.
func (c *cursor) fetchSub(ctx context.Context, x *parser.Fetch, out *fetchSink) error {
	if x.Dir != parser.FetchForward {
		return errForwardOnly()
	}
	var deadline time.Time
	if x.HasTimeout {
		d, err := parseRetention(x.Timeout)
		if err != nil {
			return pgerror.New(pgcode.InvalidParameterValue, "invalid FETCH timeout %q", x.Timeout)
		}
		deadline = time.Now().Add(d)
	}
	for out.n < x.Count {
		if len(c.chunk) == 0 {
			dl := deadline
			if out.n > 0 {
				dl = time.Now() // rows already taken: return what there is now
			}
			rows, err := c.sub.next1(ctx, dl)
			if err != nil {
				return err
			}
			if rows == nil {
				break
			}
			c.chunk = rows
		}
		r := c.chunk[0]
		c.chunk = c.chunk[1:]
		if err := out.row(r); err != nil {
			return err
		}
	}
	return nil
}
