package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/exec/connector"
	"sluice/exec/spec"
	"sluice/planner"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// sinkPlan is a planned CREATE SINK.
type sinkPlan struct {
	plan      *spec.Plan
	cols      []types.Column
	deps      []uint64
	cfg       connector.SinkConfig
	sp        connector.SinkPlan
	declared  connector.Guarantee
	effective connector.Guarantee
	link      string // the weakest link ("" when exactly once holds)
}

var writeModes = map[string]bool{connector.ModeAppend: true, connector.ModeUpsert: true, connector.ModeTransactional: true}

// planSink plans x as sink id (0 to only check it), checking that role
// may read what the sink reads ("": no check).
func (e *Engine) planSink(x *parser.CreateSink, id uint64, role, zone string) (*sinkPlan, error) {
	if x.Into != "" {
		return e.planSinkInto(x, id, role, zone)
	}
	opts := map[string]string{}
	for _, o := range x.With {
		opts[strings.ToLower(o.Key)] = o.Value
	}
	conn := strings.ToLower(opts["connector"])
	if conn == "" {
		return nil, pgerror.New(pgcode.InvalidParameterValue, "CREATE SINK needs WITH (connector = '…')")
	}
	f, err := connector.LookupSink(conn)
	if err != nil {
		return nil, err
	}
	declared, err := connector.ParseGuarantee(opts["delivery"])
	if err != nil {
		return nil, err
	}
	mode := strings.ToLower(strings.TrimSpace(opts["write_mode"]))
	if mode != "" && !writeModes[mode] {
		return nil, pgerror.New(pgcode.InvalidParameterValue, "invalid write_mode %q", opts["write_mode"]).
			WithHint("write_mode is transactional, upsert or append")
	}
	q, pl, err := e.planSinkQuery(x, id, role, zone, nil /* into */)
	if err != nil {
		return nil, err
	}
	key, err := connector.KeyColumns(q.Columns, opts["primary_key"])
	if err != nil {
		return nil, err
	}
	plan := q.Plan
	root := plan.Nodes[plan.Root()]
	appendOnly := planner.AppendOnly(plan, plan.Root(), e.appendOnlyRel)
	format, encode := strings.ToUpper(x.Format), strings.ToUpper(x.Encode)
	if key == nil && format == "DEBEZIUM" && q.Key != nil {
		// A changelog of a keyed view pairs each key's before and after.
		key = q.Key
	}
	fopts := map[string]string{}
	for _, o := range x.FormatOptions {
		fopts[strings.ToLower(o.Key)] = o.Value
	}
	cfg := connector.SinkConfig{Name: x.Name, ID: id, Columns: q.Columns, Key: key, AppendOnly: appendOnly,
		Options: opts, Format: format, Encode: encode, FormatOptions: fopts, WriteMode: mode}
	vcfg, err := e.connectorView(cfg)
	if err != nil {
		return nil, err
	}
	sp, err := f.Validate(vcfg)
	if err != nil {
		return nil, err
	}
	if !appendOnly && key == nil && format != "DEBEZIUM" && !sp.Discard {
		what := "its input"
		if x.From != "" {
			what = x.From
		}
		err := pgerror.New(pgcode.FeatureNotSupported, "sink %s: %s has updates and deletes, so a plain append sink cannot represent it", x.Name, what).
			WithHint("set primary_key = '…' to write upserts keyed by it, or use FORMAT DEBEZIUM for a changelog")
		if ent := e.cat.get(x.From); ent != nil && len(ent.Key) > 0 {
			var names []string
			for _, k := range ent.Key {
				names = append(names, ent.Columns[k].Name)
			}
			err = err.WithDetail("%s is keyed by (%s)", x.From, strings.Join(names, ", "))
		}
		return nil, err
	}
	cfg.WriteMode = sp.WriteMode
	sp2 := &sinkPlan{plan: plan, cols: q.Columns, deps: dedup(pl.Deps), cfg: cfg, sp: sp, declared: declared}
	sp2.effective, sp2.link = sp.Guarantee, ""
	if sp.Guarantee < connector.ExactlyOnce {
		sp2.link = fmt.Sprintf("sink connector %s (write_mode %s): %s", conn, sp.WriteMode, sp.Why)
	}
	if name, c, why := e.unreplayableSource(sp2.deps); why != "" {
		sp2.effective = connector.AtMostOnce
		sp2.link = fmt.Sprintf("source %s (connector %s): %s", name, c, why)
	}
	if declared > sp2.effective {
		return nil, pgerror.New(pgcode.InvalidParameterValue, "sink %s cannot be %s: the weakest link is %s", x.Name, declared, sp2.link).
			WithHint("declare delivery = '%s' to accept what this pipeline can give", sp2.effective)
	}
	root.Key = key
	root.Sink = &spec.SinkSpec{SinkID: id, Name: x.Name, Connector: conn, Options: opts, Format: format, Encode: encode,
		FormatOpts: fopts, WriteMode: sp.WriteMode, AppendOnly: appendOnly, Discard: sp.Discard}
	return sp2, nil
}

// planSinkQuery plans the query of sink x (FROM relation or AS query) as
// sink id; into, for a sink into a table, are the target columns its
// output is cast to.
func (e *Engine) planSinkQuery(x *parser.CreateSink, id uint64, role, zone string, into []types.Column) (*planner.Query, *planner.Planner, error) {
	var stmt ast.StmtNode
	if x.From != "" {
		ent := e.cat.get(x.From)
		if ent == nil {
			return nil, nil, pgerror.New(pgcode.UndefinedTable, "relation %q does not exist", x.From)
		}
		if ent.Kind == kindSink {
			return nil, nil, pgerror.New(pgcode.WrongObjectType, "cannot create a sink from sink %q", x.From)
		}
		q, err := parser.ParseOne("SELECT * FROM " + quoteIdent(ent.Name))
		if err != nil {
			return nil, nil, err
		}
		stmt = q.(*parser.Query).Node
	} else {
		stmt = x.Query
	}
	pl := e.newPlanner()
	pl.Role = role
	pl.TimeZone = zone
	if x.Parsed != nil && x.From == "" {
		pl.TableFuncs, pl.Nulls = x.Parsed.TableFuncs, x.Parsed.Nulls
		pl.ColumnAliases = x.Parsed.ColumnAliases
	}
	pl.EmitOnWindowClose = x.EmitOnWindowClose
	pl.SinkInto = into
	q, err := pl.PlanSink(stmt, id, x.Name)
	if err != nil {
		return nil, nil, err
	}
	return q, pl, nil
}

// appendOnlyRel reports whether relation id's change stream never retracts.
func (e *Engine) appendOnlyRel(id uint64) bool {
	ent := e.cat.byIDGet(id)
	return ent != nil && ent.AppendOnly
}

// unreplayableSource finds a source among deps (transitively) that cannot
// replay after a crash.
func (e *Engine) unreplayableSource(deps []uint64) (name, conn, why string) {
	seen := map[uint64]bool{}
	var walk func(ids []uint64) bool
	walk = func(ids []uint64) bool {
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			ent := e.cat.byIDGet(id)
			if ent == nil {
				continue
			}
			if ent.Kind == kindSource {
				f, err := connector.LookupSource(ent.Connector)
				if err != nil {
					continue
				}
				if u, ok := f.(connector.Unreplayable); ok {
					if w := u.Unreplayable(connector.SourceConfig{Name: ent.Name, Columns: ent.Cols(), Options: ent.Options}); w != "" {
						name, conn, why = ent.Name, ent.Connector, w
						return true
					}
				}
			}
			if walk(ent.Deps) {
				return true
			}
		}
		return false
	}
	walk(deps)
	return
}

// sourceGuarantee is what a source gives on its own: exactly once when it
// replays from its checkpointed position, at most once when it cannot.
func (e *Engine) sourceGuarantee(ent *storage.CatalogEntry) connector.Guarantee {
	if f, err := connector.LookupSource(ent.Connector); err == nil {
		if u, ok := f.(connector.Unreplayable); ok && u.Unreplayable(connector.SourceConfig{Name: ent.Name, Columns: ent.Cols(), Options: ent.Options}) != "" {
			return connector.AtMostOnce
		}
	}
	return connector.ExactlyOnce
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func (e *Engine) createSink(ctx context.Context, x *parser.CreateSink, opts createOpts) error {
	if exists, err := e.checkName(x.Name, x.IfNotExists); exists || err != nil {
		return err
	}
	if _, err := e.planSink(x, 0, roleOf(ctx), zoneOf(ctx)); err != nil {
		return err
	}
	// As CREATE MATERIALIZED VIEW (jobs.go): the epoch that creates the
	// sink commits once its backfill is read; meanwhile the statement
	// reports progress and a CancelRequest cancels the creation.
	var id uint64
	epoch, err := e.ddlNoWait(ctx, func() error {
		if exists, err := e.checkName(x.Name, x.IfNotExists); exists || err != nil {
			return err
		}
		id = e.cat.allocID()
		sp, err := e.planSink(x, id, "", zoneOf(ctx))
		if err != nil {
			return err
		}
		if err := e.creatingErr(sp.deps); err != nil {
			return err
		}
		stored, err := storePlan(sp.plan)
		if err != nil {
			return err
		}
		if opts.background {
			if err := e.persistPending(ctx, id, x.Text()); err != nil {
				return err
			}
		}
		if _, err := e.rt.StartJob(id, x.Name, sp.plan, true); err != nil {
			if opts.background {
				_ = e.dropPending(id)
			}
			return err
		}
		e.markForeground(id, opts)
		var cols []storage.ColumnEntry
		for _, c := range sp.cols {
			cols = append(cols, storage.ColumnOf(c))
		}
		ent := &storage.CatalogEntry{ID: id, Kind: kindSink, Name: x.Name, SQL: x.Text(), Columns: cols, Key: sp.cfg.Key,
			Deps: sp.deps, Connector: sp.cfg.Options["connector"], Options: sp.cfg.Options, Plan: stored}
		e.persist(ent)
		return nil
	})
	if err != nil || e.rt.Job(id) == nil { // IF NOT EXISTS of one created meanwhile
		if err == nil && epoch != 0 {
			err = e.coord.Wait(context.WithoutCancel(ctx), epoch)
		}
		return err
	}
	e.rt.SetCreationEpoch(id, epoch)
	if opts.background {
		return nil
	}
	return e.awaitCreation(ctx, id, x.Name, epoch, opts.notice)
}

func showSinksCols() []types.Column {
	return []types.Column{
		{Name: "Name", Type: types.TText}, {Name: "Connector", Type: types.TText}, {Name: "Delivery", Type: types.TText},
		{Name: "Write Mode", Type: types.TText}, {Name: "Effective", Type: types.TText}, {Name: "Weakest Link", Type: types.TText},
		{Name: "Logged Epoch", Type: types.TInt8}, {Name: "Delivered Epoch", Type: types.TInt8}, {Name: "Pending Epochs", Type: types.TInt8},
		{Name: "Written", Type: types.TInt8}, {Name: "Status", Type: types.TText}, {Name: "Last Error", Type: types.TText},
	}
}

// showSinkRow is one row of SHOW SINKS; showErr is false when the
// session may not see the sink's last error (ownsOrSuper).
func (e *Engine) showSinkRow(ent *storage.CatalogEntry, showErr bool) types.Row {
	r := types.Row{types.NewString(ent.Name), types.NewString(ent.Connector)}
	var sp *sinkPlan
	if st, err := parser.ParseOne(ent.SQL); err == nil {
		if x, ok := st.(*parser.CreateSink); ok {
			sp, _ = e.planSink(x, ent.ID, "", "" /* UTC: only the guarantee is shown */)
		}
	}
	if sp == nil {
		r = append(r, types.Null, types.Null, types.Null, types.Null)
	} else {
		link := sp.link
		if link == "" {
			link = "none"
		}
		r = append(r, types.NewString(sp.declared.String()), types.NewString(sp.sp.WriteMode), types.NewString(sp.effective.String()), types.NewString(link))
	}
	var logged, delivered, pending, written int64
	lastErr, status := "", "stopped"
	if j := e.rt.Job(ent.ID); j != nil {
		status = j.Status()
		if j.Sink != nil {
			logged = int64(j.Sink.LastEpoch.Load())
		}
		if j.Deliverer != nil {
			st := j.Deliverer.Status()
			delivered, pending, written = int64(st.Delivered), int64(st.Pending), st.Written
			if st.Failures > 0 {
				lastErr = st.LastError
			}
			if st.Paused != "" {
				lastErr = st.Paused // after a restore (exec/sink/restore.go)
				status = "paused"
			}
		}
		if f := j.Failure(); f != nil {
			lastErr = f.Error()
		}
	}
	if ent.Refused != "" {
		lastErr, status = "refused: "+ent.Refused, "refused"
	}
	// After a restart the writer has logged nothing yet: what was
	// delivered was logged before.
	logged = max(logged, delivered)
	errCell := types.NewString(e.redactText(lastErr))
	if !showErr {
		errCell = types.Null
	}
	return append(r, types.NewInt(logged), types.NewInt(delivered), types.NewInt(pending), types.NewInt(written), types.NewString(status), errCell)
}
