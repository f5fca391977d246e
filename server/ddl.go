package server

import (
	"context"
	"slices"
	"strings"

	"sluice/exec/connector"
	"sluice/planner"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

func (e *Engine) checkName(name string, ifNotExists bool) (exists bool, err error) {
	if old := e.cat.get(name); old != nil {
		if ifNotExists {
			return true, nil
		}
		return true, pgerror.New(pgcode.DuplicateTable, "relation %q already exists", name)
	}
	if e.cat.system[name] != nil {
		return true, pgerror.New(pgcode.DuplicateTable, "relation %q already exists", name)
	}
	return false, nil
}

func columnsOf(defs []parser.ColumnDef) ([]storage.ColumnEntry, error) {
	var cols []storage.ColumnEntry
	seen := map[string]bool{}
	for _, d := range defs {
		if seen[d.Name] {
			return nil, pgerror.New(pgcode.DuplicateColumn, "column %q specified more than once", d.Name)
		}
		seen[d.Name] = true
		c := storage.ColumnOf(types.Column{Name: d.Name, Type: d.Type})
		c.NotNull = d.NotNull || d.PrimaryKey
		cols = append(cols, c)
	}
	return cols, nil
}

func keyOf(cols []storage.ColumnEntry, defs []parser.ColumnDef, pk []string) ([]int, error) {
	var key []int
	for i, d := range defs {
		if d.PrimaryKey {
			key = append(key, i)
		}
	}
	if len(pk) > 0 {
		key = nil
		for _, name := range pk {
			found := -1
			for i, c := range cols {
				if c.Name == name {
					found = i
				}
			}
			if found < 0 {
				return nil, pgerror.New(pgcode.UndefinedColumn, "column %q named in key does not exist", name)
			}
			key = append(key, found)
		}
	}
	return key, nil
}

// ddl runs f with the dataflow paused at a committed epoch, then resumes
// and waits until the epoch carrying the change is committed.
func (e *Engine) ddl(ctx context.Context, f func() error) error {
	if err := e.coord.Pause(ctx); err != nil {
		return err
	}
	e.ddlRole = roleOf(ctx)
	ferr := f()
	e.ddlRole = ""
	if err := e.coord.Resume(context.WithoutCancel(ctx)); err != nil && ferr == nil {
		return err
	}
	return ferr
}

func (e *Engine) createTable(ctx context.Context, x *parser.CreateTable) error {
	if len(x.With) > 0 {
		if c, _ := x.With.Get("connector"); c != "" {
			// A CDC connector's table is a source of keyed changes, read
			// through materialized views like any source.
			if f, err := connector.LookupSource(strings.ToLower(c)); err == nil {
				if _, ok := f.(connector.ChangeSource); ok {
					return e.createSource(ctx, &parser.CreateSource{Name: x.Name, Columns: x.Columns, PrimaryKey: x.PrimaryKey,
						With: x.With, Format: x.Format, Encode: x.Encode, FormatOptions: x.FormatOptions, Includes: x.Includes,
						IfNotExists: x.IfNotExists, Watermark: x.Watermark}, x.Text())
				}
			}
			return pgerror.Unsupported("tables with a connector").WithHint("use CREATE SOURCE")
		}
	}
	if x.Watermark != nil {
		// A table's rows come from INSERT, UPDATE and DELETE in any time
		// order; nothing would drop the late ones, so the clause is not
		// accepted and ignored.
		return pgerror.Unsupported("WATERMARK on a table").
			WithHint("declare the WATERMARK on a source (CREATE SOURCE … WATERMARK FOR ts AS ts - INTERVAL '…'), whose late rows it drops")
	}
	if exists, err := e.checkName(x.Name, x.IfNotExists); exists || err != nil {
		return err
	}
	if len(x.Columns) == 0 {
		return pgerror.New(pgcode.InvalidObjectDefinition, "a table needs at least one column")
	}
	cols, err := columnsOf(x.Columns)
	if err != nil {
		return err
	}
	key, err := keyOf(cols, x.Columns, x.PrimaryKey)
	if err != nil {
		return err
	}
	extras, err := e.tableExtrasOf(x, cols, key)
	if err != nil {
		return err
	}
	return e.ddl(ctx, func() error {
		if exists, err := e.checkName(x.Name, x.IfNotExists); exists || err != nil {
			return err
		}
		ent := &storage.CatalogEntry{ID: e.cat.allocID(), Kind: kindTable, Name: x.Name, SQL: x.Text(), Columns: cols, Key: key}
		extras.apply(e, ent)
		if err := e.startTable(ent); err != nil {
			return err
		}
		e.persist(ent)
		return nil
	})
}

func (e *Engine) persist(ent *storage.CatalogEntry) {
	if ent.Owner == "" && e.cat.byIDGet(ent.ID) == nil {
		ent.Owner = e.ddlRole // a new object belongs to its creator
	}
	e.cat.add(ent)
	next := e.cat.nextID
	e.coord.OnNextEpoch(func(w *storage.EpochWriter) { storage.PutCatalog(w, ent, next) })
}

func (e *Engine) createSource(ctx context.Context, x *parser.CreateSource, text string) error {
	if exists, err := e.checkName(x.Name, x.IfNotExists); exists || err != nil {
		return err
	}
	opts := map[string]string{}
	for _, o := range x.With {
		opts[o.Key] = o.Value
	}
	// ENCODE … (options) go to the connector with the others, which
	// refuses those it does not know (they used to be dropped).
	for _, o := range x.FormatOptions {
		if _, dup := opts[o.Key]; dup {
			return pgerror.New(pgcode.DuplicateObject, "option %s given twice", o.Key)
		}
		opts[o.Key] = o.Value
	}
	conn := strings.ToLower(opts["connector"])
	if conn == "" {
		return pgerror.New(pgcode.InvalidParameterValue, "CREATE SOURCE needs WITH (connector = '…')")
	}
	f, err := connector.LookupSource(conn)
	if err != nil {
		return err
	}
	var declared []types.Column
	for _, c := range x.Columns {
		declared = append(declared, types.Column{Name: c.Name, Type: c.Type})
	}
	// INCLUDE key|partition|offset|timestamp [AS name] adds the record's
	// metadata as a column: the connector fills the pseudo-columns _key,
	// _partition, _offset and _timestamp; the alias renames it.
	for _, inc := range x.Includes {
		what := strings.ToLower(inc.What)
		t, ok := map[string]types.T{"key": types.TBytea, "partition": types.TInt4, "offset": types.TInt8, "timestamp": types.TTimestampTZ}[what]
		if !ok {
			return pgerror.Unsupported("INCLUDE %s", inc.What).WithHint("INCLUDE key, partition, offset or timestamp")
		}
		if inc.Alias != "" && inc.Alias != "_"+what {
			return pgerror.Unsupported("INCLUDE %s AS %s", inc.What, inc.Alias).
				WithHint("the %s is the column _%s: write INCLUDE %s, or declare a column _%s", what, what, what, what)
		}
		declared = append(declared, types.Column{Name: "_" + what, Type: t})
	}
	if x.Format != "" {
		opts["format"] = x.Format
	}
	if _, ok := f.(connector.ChangeSource); ok && x.Format == "" {
		opts["format"] = "UPSERT"
	}
	if x.Encode != "" {
		opts["encode"] = x.Encode
	}
	var key []int
	for _, name := range x.PrimaryKey {
		found := -1
		for i, c := range declared {
			if strings.EqualFold(c.Name, name) {
				found = i
			}
		}
		if found < 0 {
			return pgerror.New(pgcode.UndefinedColumn, "column %q named in key does not exist", name)
		}
		key = append(key, found)
	}
	for i, c := range x.Columns {
		if c.PrimaryKey && !slices.Contains(key, i) { // CREATE TABLE's parse lists it in both
			key = append(key, i)
		}
	}
	resolved, err := e.policy().ResolveOptions(opts)
	if err != nil {
		return err
	}
	cols, err := f.Validate(connector.SourceConfig{Name: x.Name, Columns: declared, Key: key, Options: resolved, Policy: e.policy()})
	if err != nil {
		return err
	}
	var ccols []storage.ColumnEntry
	for _, c := range cols {
		ccols = append(ccols, storage.ColumnOf(c))
	}
	fmtName := strings.ToUpper(opts["format"])
	appendOnly := fmtName != "UPSERT" && fmtName != "DEBEZIUM"
	var wm *storage.WatermarkEntry
	if x.Watermark != nil {
		if !appendOnly {
			// Late rows are dropped: an update or delete cannot be.
			return pgerror.Unsupported("WATERMARK on a FORMAT %s source", fmtName).
				WithHint("watermarks need an append-only source")
		}
		w, err := e.newPlanner().BindWatermark(cols, x.Watermark.Column, x.Watermark.Expr)
		if err != nil {
			return err
		}
		wm = &storage.WatermarkEntry{Col: w.Col, Delay: w.Delay}
	}
	return e.ddl(ctx, func() error {
		if exists, err := e.checkName(x.Name, x.IfNotExists); exists || err != nil {
			return err
		}
		ent := &storage.CatalogEntry{ID: e.cat.allocID(), Kind: kindSource, Name: x.Name, SQL: text, Columns: ccols, Connector: conn, Options: opts,
			Key: key, AppendOnly: appendOnly, Watermark: wm}
		e.persist(ent)
		return nil
	})
}

func (e *Engine) createMView(ctx context.Context, x *parser.CreateMaterializedView, opts createOpts) error {
	if exists, err := e.checkName(x.Name, x.IfNotExists); exists || err != nil {
		return err
	}
	// Plan once outside the pause to report errors without stopping the
	// world; the owner needs SELECT on what the view reads.
	pre := e.viewPlanner(ctx, x)
	pre.Role = roleOf(ctx)
	if _, err := pre.PlanView(x.Query, 0, x.Name); err != nil {
		return err
	}
	var id uint64
	epoch, err := e.ddlNoWait(ctx, func() error {
		if exists, err := e.checkName(x.Name, x.IfNotExists); exists || err != nil {
			return err
		}
		id = e.cat.allocID()
		pl := e.viewPlanner(ctx, x)
		q, err := pl.PlanView(x.Query, id, x.Name)
		if err != nil {
			return err
		}
		if err := e.creatingErr(pl.Deps); err != nil {
			return err
		}
		stored, err := storePlan(q.Plan)
		if err != nil {
			return err
		}
		if opts.background {
			if err := e.persistPending(ctx, id, x.Text()); err != nil {
				return err
			}
		}
		if _, err := e.rt.StartJob(id, x.Name, q.Plan, true); err != nil {
			if opts.background {
				_ = e.dropPending(id)
			}
			return err
		}
		e.markForeground(id, opts)
		var cols []storage.ColumnEntry
		for _, c := range q.Columns {
			cols = append(cols, storage.ColumnOf(c))
		}
		ent := &storage.CatalogEntry{ID: id, Kind: kindMView, Name: x.Name, SQL: x.Text(), Columns: cols, Key: q.Key, Deps: dedup(pl.Deps),
			AppendOnly: planner.AppendOnly(q.Plan, q.Plan.Root(), e.appendOnlyRel), Plan: stored}
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

func (e *Engine) createView(ctx context.Context, x *parser.CreateView) error {
	if exists, err := e.checkName(x.Name, x.IfNotExists); exists || err != nil {
		return err
	}
	pl := e.newPlanner()
	if x.Parsed != nil {
		pl.TableFuncs, pl.Nulls = x.Parsed.TableFuncs, x.Parsed.Nulls
		pl.ColumnAliases = x.Parsed.ColumnAliases
	}
	q, err := pl.PlanQuery(x.Query)
	if err != nil {
		// A view over a source can only be read by materialized views and
		// sinks: check it as a streaming query.
		pl = e.newPlanner()
		pl.Streaming = true
		if x.Parsed != nil {
			pl.TableFuncs, pl.Nulls = x.Parsed.TableFuncs, x.Parsed.Nulls
			pl.ColumnAliases = x.Parsed.ColumnAliases
		}
		var err2 error
		if q, err2 = pl.PlanQuery(x.Query); err2 != nil {
			return err
		}
	}
	if x.EmitOnWindowClose {
		// Only a streaming reader can wait for windows to close: check
		// that the query has an aggregation EMIT ON WINDOW CLOSE can mark.
		vp := e.newPlanner()
		if x.Parsed != nil {
			vp.TableFuncs, vp.Nulls = x.Parsed.TableFuncs, x.Parsed.Nulls
			vp.ColumnAliases = x.Parsed.ColumnAliases
		}
		vp.EmitOnWindowClose = true
		if _, err := vp.PlanView(x.Query, 0, x.Name); err != nil {
			return err
		}
	}
	var cols []storage.ColumnEntry
	for _, c := range q.Columns {
		cols = append(cols, storage.ColumnOf(c))
	}
	return e.ddl(ctx, func() error {
		if exists, err := e.checkName(x.Name, x.IfNotExists); exists || err != nil {
			return err
		}
		if err := e.creatingErr(pl.Deps); err != nil {
			return err // its catalog entry would commit before theirs
		}
		ent := &storage.CatalogEntry{ID: e.cat.allocID(), Kind: kindView, Name: x.Name, SQL: x.Text(), Columns: cols, Deps: dedup(pl.Deps), Query: x.QueryText,
			EmitOnWindowClose: x.EmitOnWindowClose}
		e.persist(ent)
		return nil
	})
}

func dedup(ids []uint64) []uint64 {
	var out []uint64
	seen := map[uint64]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

var dropKinds = map[string]string{
	"TABLE": kindTable, "SOURCE": kindSource, "MATERIALIZED VIEW": kindMView, "VIEW": kindView, "SINK": kindSink, "FUNCTION": kindFunction,
	"SEQUENCE": kindSequence,
}

func (e *Engine) drop(ctx context.Context, x *parser.Drop) error {
	switch strings.ToUpper(x.Kind) {
	case "INDEX":
		return e.dropIndex(ctx, x)
	case "SCHEMA":
		return e.dropSchema(ctx, x)
	case "SECRET":
		return e.dropSecret(ctx, x)
	}
	kind, ok := dropKinds[strings.ToUpper(x.Kind)]
	if !ok {
		return pgerror.Unsupported("DROP %s", x.Kind)
	}
	return e.ddl(ctx, func() error {
		for _, name := range x.Names {
			ent := e.cat.get(name)
			if ent == nil {
				if x.IfExists {
					continue
				}
				return pgerror.New(pgcode.UndefinedTable, "%s %q does not exist", kind, name)
			}
			if ent.Kind != kind {
				return pgerror.New(pgcode.WrongObjectType, "%q is a %s, not a %s", name, ent.Kind, kind).
					WithHint("use DROP %s", strings.ToUpper(ent.Kind))
			}
			if err := e.dropOwnedCheck(ent, x.Cascade); err != nil {
				return err
			}
			deps := e.allDependents(ent)
			if len(deps) > 0 && !x.Cascade {
				return pgerror.New(pgcode.DependentObjectsStillExist, "cannot drop %s %s because other objects depend on it", kind, name).
					WithDetail("%s %s depends on %s %s", deps[0].Kind, deps[0].Name, kind, name).
					WithHint("Use DROP ... CASCADE to drop the dependent objects too.")
			}
			if err := e.dropCreatingErr(append(deps, ent)...); err != nil {
				return err
			}
			// Dependents first, newest first.
			for i := len(deps) - 1; i >= 0; i-- {
				e.dropOne(deps[i])
			}
			e.dropOne(ent)
		}
		return nil
	})
}

// allDependents returns every object depending on ent, transitively, in
// creation order.
func (e *Engine) allDependents(ent *storage.CatalogEntry) []*storage.CatalogEntry {
	seen := map[uint64]bool{}
	var out []*storage.CatalogEntry
	var walk func(id uint64)
	walk = func(id uint64) {
		for _, d := range e.cat.dependents(id) {
			if !seen[d.ID] {
				seen[d.ID] = true
				walk(d.ID)
				out = append(out, d)
			}
		}
	}
	walk(ent.ID)
	// Creation order is id order.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].ID < out[j-1].ID; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func (e *Engine) dropOne(ent *storage.CatalogEntry) {
	switch ent.Kind {
	case kindTable, kindMView, kindSink:
		if ent.Refused != "" {
			e.rt.DropState(ent.ID) // no job ran: StopJob has nothing to stop
		}
		e.rt.StopJob(ent.ID, 0)
		e.tablesMu.Lock()
		delete(e.tables, ent.ID)
		e.tablesMu.Unlock()
		if ent.Kind == kindSink {
			e.db.ForgetSink(ent.ID) // a sink paused after a restore (storage/backup.go)
		}
	}
	e.cat.remove(ent)
	id := ent.ID
	e.coord.OnNextEpoch(func(w *storage.EpochWriter) {
		storage.DeleteCatalog(w, id)
		w.Delete(rowIDKey(id))
		w.Delete(seqKey(id))
		w.Delete(intoKey(id))
	})
	e.dropOwned(ent)
}
