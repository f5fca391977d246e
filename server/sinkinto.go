package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"sluice/exec/connector"
	"sluice/exec/eval"
	"sluice/exec/flow"
	"sluice/exec/spec"
	"sluice/planner"
	"sluice/sql/acl"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// Sinks into tables (RisingWave's CREATE SINK s INTO t [(cols)] FROM x |
// AS query): the sink's job logs each epoch's changes in its sink log with
// the checkpoint, as any sink does; its deliverer applies a committed
// epoch to the target table as one transaction whose batch also records
// the epoch under m/<sink>/into (intoKey). The table write and the record
// of it are one synced Pebble write, so after a kill -9 an epoch is
// applied once: LastEpoch tells the deliverer which epochs are in.
//
// A keyed target takes inserts as upserts and retractions as deletes by
// its primary key (the sink's changes are netted per key per epoch); a
// target without a primary key takes only append-only sinks, as in
// RisingWave (a delete could not say which of equal rows to remove).

// intoConnector is the connector name of a sink into a table; it is the
// runtime's own (job.Runtime.Sinks), not a registered one.
const intoConnector = "table"

// Options of an INTO sink's stored plan: the target's id and, per output
// column, the table column it fills.
const (
	optIntoTable   = "into.table"
	optIntoColumns = "into.columns"
)

// intoKey is where the last epoch a sink applied to its table is kept.
func intoKey(sink uint64) []byte { return storage.Key(storage.SpaceMeta, sink, []byte("into")) }

// planSinkInto plans CREATE SINK x INTO t.
func (e *Engine) planSinkInto(x *parser.CreateSink, id uint64, role, zone string) (*sinkPlan, error) {
	opts := map[string]string{}
	for _, o := range x.With {
		k := strings.ToLower(o.Key)
		if k != "delivery" {
			return nil, pgerror.New(pgcode.FeatureNotSupported, "CREATE SINK … INTO does not take the option %q", o.Key).
				WithHint("A sink into a table takes only delivery = '…'; its target is the table.")
		}
		opts[k] = o.Value
	}
	if x.Format != "" {
		return nil, pgerror.New(pgcode.FeatureNotSupported, "CREATE SINK … INTO takes no FORMAT").
			WithHint("A sink into a table writes rows of the table's columns.")
	}
	declared, err := connector.ParseGuarantee(opts["delivery"])
	if err != nil {
		return nil, err
	}
	target := e.cat.get(x.Into)
	if target == nil {
		return nil, pgerror.New(pgcode.UndefinedTable, "relation %q does not exist", x.Into)
	}
	if target.Kind != kindTable || target.Connector != "" {
		what := target.Kind
		if target.Kind == kindTable {
			what = "table fed by connector " + target.Connector
		}
		return nil, pgerror.New(pgcode.WrongObjectType, "cannot sink into %q: it is a %s, not a table", target.Name, what).
			WithHint("The target of CREATE SINK … INTO is a table that takes DML (CREATE TABLE without a connector).")
	}
	if role != "" {
		priv := acl.Insert
		if len(target.Key) > 0 {
			priv |= acl.Update | acl.Delete
		}
		if err := e.require(role, target, priv); err != nil {
			return nil, err
		}
	}
	tcols := target.Cols()
	// pos[i] is the table column output column i fills.
	var pos []int
	if x.IntoColumns == nil {
		for i := range tcols {
			pos = append(pos, i)
		}
	} else {
		seen := map[int]bool{}
		for _, n := range x.IntoColumns {
			c := colIndex(tcols, n)
			if c < 0 {
				return nil, pgerror.New(pgcode.UndefinedColumn, "column %q of relation %q does not exist", n, target.Name)
			}
			if seen[c] {
				return nil, pgerror.New(pgcode.DuplicateColumn, "column %q specified more than once", n)
			}
			seen[c] = true
			pos = append(pos, c)
		}
	}
	cons, err := e.buildConstraints(target)
	if err != nil {
		return nil, err
	}
	listed := map[int]bool{}
	into := make([]types.Column, len(pos))
	for i, c := range pos {
		listed[c] = true
		into[i] = tcols[c]
	}
	for c := range tcols {
		if !listed[c] && cons.identity[c] != "" {
			return nil, pgerror.New(pgcode.FeatureNotSupported, "sink %s leaves out the identity column %q of %q", x.Name, tcols[c].Name, target.Name).
				WithHint("List the column and give it a value: a sink's row is written again after a restart, so it cannot draw from a sequence.")
		}
	}
	q, pl, err := e.planSinkQuery(x, id, role, zone, into)
	if err != nil {
		return nil, err
	}
	deps := dedup(pl.Deps)
	if cyc := e.sinkCycle(target.ID, deps); cyc != "" {
		return nil, pgerror.New(pgcode.InvalidObjectDefinition, "cannot create sink %s into %q: it would form a cycle (%s)", x.Name, target.Name, cyc).
			WithHint("A sink may not write into a table that its own query reads, directly or through views and other sinks.")
	}
	// The sink's key is the target's primary key, as output positions.
	var key []int
	for _, k := range target.Key {
		i := indexOf(pos, k)
		if i < 0 {
			return nil, pgerror.New(pgcode.FeatureNotSupported, "sink %s does not write the primary key column %q of %q", x.Name, tcols[k].Name, target.Name).
				WithHint("List every primary key column among the sink's columns.")
		}
		key = append(key, i)
	}
	plan := q.Plan
	root := plan.Nodes[plan.Root()]
	appendOnly := planner.AppendOnly(plan, plan.Root(), e.appendOnlyRel)
	mode := connector.ModeUpsert
	if key == nil {
		if !appendOnly {
			return nil, pgerror.New(pgcode.FeatureNotSupported, "sink %s: only an append-only sink can write into %q, a table without a primary key", x.Name, target.Name).
				WithDetail("Its input has updates or deletes, and a delete could not say which of equal rows to remove.").
				WithHint("Give the table a PRIMARY KEY (the sink then upserts and deletes by it), or sink an append-only query.")
		}
		mode = connector.ModeAppend
	}
	colsOpt := make([]string, len(pos))
	for i, c := range pos {
		colsOpt[i] = strconv.Itoa(c)
	}
	opts["connector"] = intoConnector
	opts[optIntoTable] = strconv.FormatUint(target.ID, 10)
	opts[optIntoColumns] = strings.Join(colsOpt, ",")
	sp := connector.SinkPlan{WriteMode: mode, Guarantee: connector.ExactlyOnce}
	cfg := connector.SinkConfig{Name: x.Name, ID: id, Columns: q.Columns, Key: key, AppendOnly: appendOnly, Options: opts, WriteMode: mode}
	out := &sinkPlan{plan: plan, cols: q.Columns, deps: deps, cfg: cfg, sp: sp, declared: declared, effective: connector.ExactlyOnce}
	if name, c, why := e.unreplayableSource(deps); why != "" {
		out.effective = connector.AtMostOnce
		out.link = fmt.Sprintf("source %s (connector %s): %s", name, c, why)
	}
	if declared > out.effective {
		return nil, pgerror.New(pgcode.InvalidParameterValue, "sink %s cannot be %s: the weakest link is %s", x.Name, declared, out.link).
			WithHint("declare delivery = '%s' to accept what this pipeline can give", out.effective)
	}
	// The target is a dependency: DROP TABLE refuses it (2BP01) unless
	// CASCADE, which drops the sink; ALTER TABLE refuses to change it.
	out.deps = append(out.deps, target.ID)
	root.Key = key
	root.Sink = &spec.SinkSpec{SinkID: id, Name: x.Name, Connector: intoConnector, Options: opts, WriteMode: mode, AppendOnly: appendOnly}
	return out, nil
}

func colIndex(cols []types.Column, name string) int {
	for i, c := range cols {
		if c.Name == name {
			return i
		}
	}
	for i, c := range cols {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

func indexOf(xs []int, x int) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1
}

// sinkCycle reports how a sink into table reading deps would feed itself
// ("" when it would not): through the relations it reads, transitively,
// and through the sinks into the tables among them.
func (e *Engine) sinkCycle(table uint64, deps []uint64) string {
	into := map[uint64][]*storage.CatalogEntry{} // table -> sinks into it
	for _, s := range e.cat.list(kindSink) {
		if s.Connector == intoConnector && len(s.Deps) > 0 {
			t := s.Deps[len(s.Deps)-1] // planSinkInto puts the target last
			into[t] = append(into[t], s)
		}
	}
	seen := map[uint64]bool{}
	var walk func(ids []uint64, path []string) string
	walk = func(ids []uint64, path []string) string {
		for _, id := range ids {
			ent := e.cat.byIDGet(id)
			if ent == nil {
				continue
			}
			p := append(append([]string(nil), path...), ent.Name)
			if id == table {
				return strings.Join(p, " ← ")
			}
			if seen[id] {
				continue
			}
			seen[id] = true
			reads := ent.Deps
			if ent.Kind == kindSink && ent.Connector == intoConnector && len(reads) > 0 {
				reads = reads[:len(reads)-1] // not its own target
			}
			if c := walk(reads, p); c != "" {
				return c
			}
			for _, s := range into[id] {
				if c := walk([]uint64{s.ID}, p); c != "" {
					return c
				}
			}
		}
		return ""
	}
	return walk(deps, nil)
}

// intoFactory is the runtime's sink connector of INTO sinks.
type intoFactory struct{ e *Engine }

// Validate implements connector.SinkFactory.
func (f intoFactory) Validate(cfg connector.SinkConfig) (connector.SinkPlan, error) {
	if _, _, err := parseIntoOptions(cfg.Options); err != nil {
		return connector.SinkPlan{}, err
	}
	return connector.SinkPlan{WriteMode: cfg.WriteMode, Guarantee: connector.ExactlyOnce}, nil
}

func parseIntoOptions(opts map[string]string) (uint64, []int, error) {
	id, err := strconv.ParseUint(opts[optIntoTable], 10, 64)
	if err != nil {
		return 0, nil, pgerror.New(pgcode.DataCorrupted, "sink into a table: bad %s %q", optIntoTable, opts[optIntoTable])
	}
	var pos []int
	for _, s := range strings.Split(opts[optIntoColumns], ",") {
		c, err := strconv.Atoi(s)
		if err != nil {
			return 0, nil, pgerror.New(pgcode.DataCorrupted, "sink into a table: bad %s %q", optIntoColumns, opts[optIntoColumns])
		}
		pos = append(pos, c)
	}
	return id, pos, nil
}

// Open implements connector.SinkFactory.
func (f intoFactory) Open(_ context.Context, cfg connector.SinkConfig) (connector.Sink, error) {
	table, pos, err := parseIntoOptions(cfg.Options)
	if err != nil {
		return nil, err
	}
	return &intoSink{e: f.e, id: cfg.ID, name: cfg.Name, table: table, pos: pos, keyed: cfg.Key != nil}, nil
}

// intoSink applies a sink's committed epochs to its target table.
type intoSink struct {
	e     *Engine
	id    uint64
	name  string
	table uint64
	pos   []int
	keyed bool
}

// LastEpoch implements connector.Progress: the last epoch applied.
func (s *intoSink) LastEpoch(context.Context) (uint64, error) {
	v, err := s.e.db.Get(intoKey(s.id))
	if err != nil || len(v) != 8 {
		return 0, err
	}
	return binary.BigEndian.Uint64(v), nil
}

// Close implements connector.Sink.
func (s *intoSink) Close() error { return nil }

// Write implements connector.Sink: epoch's changes and the record of
// the epoch commit together, in one transaction of the table, or not at
// all. A row locked by an open transaction block is waited for.
func (s *intoSink) Write(ctx context.Context, epoch uint64, changes []connector.Change) error {
	for {
		tw, err := s.e.tableWriter(s.table)
		if err != nil {
			return err
		}
		tx := s.e.newTxn(false)
		tx.marks = map[string][]byte{string(intoKey(s.id)): binary.BigEndian.AppendUint64(nil, epoch)}
		tw.mu.Lock()
		err = s.apply(tx, tw, changes)
		if err == nil {
			_, err = tx.commit(ctx, tw)
		}
		tw.mu.Unlock()
		if err == nil {
			return nil
		}
		tx.rollback()
		lw, ok := err.(lockWait)
		if !ok {
			return err
		}
		select {
		case <-lw.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// apply puts changes into tx as rows of tw (the caller holds tw.mu).
func (s *intoSink) apply(tx *txn, tw *tableWriter, changes []connector.Change) error {
	width := len(tw.cols)
	for _, c := range s.pos {
		if c >= width {
			return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "sink %s: table %q no longer has the sink's columns", s.name, tw.name)
		}
	}
	defs, err := tw.cons.defaultFns(&eval.Context{Now: time.Now().UnixMicro()})
	if err != nil {
		return err
	}
	full := func(r types.Row) (types.Row, error) {
		out := make(types.Row, width)
		given := make([]bool, width)
		for i, c := range s.pos {
			out[c], given[c] = r[i], true
		}
		for c := range out {
			if given[c] {
				continue
			}
			out[c] = types.Null
			if defs[c] != nil {
				if out[c], err = defs[c](nil); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	}
	type put struct {
		k        []byte
		old, cur types.Row
	}
	puts := make([]put, 0, len(changes))
	var olds, curs []types.Row
	for _, ch := range changes {
		if !s.keyed {
			if ch.Before != nil || ch.After == nil {
				return pgerror.New(pgcode.DataException, "sink %s: a retraction reached %q, a table without a primary key", s.name, tw.name)
			}
			r, err := full(ch.After)
			if err != nil {
				return err
			}
			tw.rowID++
			puts = append(puts, put{k: storage.Key(storage.SpaceWrite, tw.id, flow.EncodeSeq(tw.rowID)), cur: r})
			olds, curs = append(olds, nil), append(curs, r)
			continue
		}
		var r types.Row
		if ch.After != nil {
			if r, err = full(ch.After); err != nil {
				return err
			}
		} else if r, err = full(ch.Before); err != nil {
			return err
		}
		k := tw.wkey(r)
		old, err := tx.get(tw, k)
		if err != nil {
			return err
		}
		if ch.After == nil {
			if old == nil {
				continue
			}
			r = nil
		}
		puts = append(puts, put{k: k, old: old, cur: r})
		olds, curs = append(olds, old), append(curs, r)
	}
	for _, p := range puts {
		if p.cur == nil {
			continue
		}
		if err := tw.check(p.cur); err != nil {
			return err
		}
	}
	if err := s.e.checkUniques(tx, tw, olds, curs); err != nil {
		return err
	}
	tx.reserve(tw, len(puts))
	for _, p := range puts {
		if err := tx.put(tw, p.k, p.cur); err != nil {
			return err
		}
	}
	return nil
}
