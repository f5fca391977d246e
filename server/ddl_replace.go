package server

import (
	"cmp"
	"context"
	"strings"

	"sluice/exec/job"
	"sluice/exec/spec"
	"sluice/planner"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/storage"
)

// ALTER MATERIALIZED VIEW name AS query and CREATE OR REPLACE MATERIALIZED
// VIEW change a view's query in place (issue 16): the new plan keeps the
// state of every sub-plan it shares with the stored one, rebuilds only
// what changed, and the view's rows turn from old to new in one epoch as
// retractions and insertions of the rows that differ, which dependent
// views and sinks receive like any other change (exec/job/replace.go).

// replaceMView runs ALTER MATERIALIZED VIEW … AS and CREATE OR REPLACE
// MATERIALIZED VIEW.
func (e *Engine) replaceMView(ctx context.Context, x *parser.CreateMaterializedView) error {
	check := func() (*storage.CatalogEntry, error) {
		ent := e.cat.get(x.Name)
		switch {
		case ent == nil && x.Alter:
			return nil, pgerror.New(pgcode.UndefinedTable, "materialized view %q does not exist", x.Name)
		case ent == nil:
			return nil, nil
		case ent.Kind != kindMView:
			return nil, pgerror.New(pgcode.WrongObjectType, "%q is not a materialized view", x.Name)
		case ent.Refused != "":
			return nil, refusedError(ent)
		}
		return ent, nil
	}
	ent, err := check()
	if err != nil {
		return err
	}
	if ent == nil {
		return e.createMView(ctx, x, createOpts{})
	}
	// Plan once outside the pause to report errors without stopping the
	// world; the owner needs SELECT on what the view reads.
	pre := e.viewPlanner(ctx, x)
	pre.Role = roleOf(ctx)
	if _, err := pre.PlanView(x.Query, 0, x.Name); err != nil {
		return err
	}
	return e.ddl(ctx, func() error {
		ent, err := check()
		if err != nil {
			return err
		}
		if ent == nil {
			return pgerror.New(pgcode.UndefinedTable, "materialized view %q does not exist", x.Name)
		}
		old, err := spec.Decode(ent.Plan)
		if err != nil {
			return err
		}
		pl := e.viewPlanner(ctx, x)
		q, err := pl.PlanView(x.Query, ent.ID, x.Name)
		if err != nil {
			return err
		}
		deps := dedup(pl.Deps)
		// Not while it, or what it is to read, is being created (its
		// catalog entry commits before its state: detached.go).
		if err := e.creatingErr(append([]uint64{ent.ID}, deps...)); err != nil {
			return err
		}
		dependents := e.allDependents(ent)
		for _, d := range deps {
			if d == ent.ID {
				return pgerror.New(pgcode.InvalidObjectDefinition, "materialized view %q cannot read itself", x.Name)
			}
			for _, dep := range dependents {
				if dep.ID == d {
					return pgerror.New(pgcode.InvalidObjectDefinition, "materialized view %q cannot read %s %q, which depends on it", x.Name, dep.Kind, dep.Name)
				}
			}
		}
		var cols []storage.ColumnEntry
		for _, c := range q.Columns {
			cols = append(cols, storage.ColumnOf(c))
		}
		if len(dependents) > 0 {
			if err := sameColumns(ent, cols, dependents[0]); err != nil {
				return err
			}
		}
		if old.TimeZone != q.Plan.TimeZone {
			// The kept operators' state was computed in the old zone.
			return pgerror.Unsupported("cannot replace materialized view %q created in TimeZone %s from a session in TimeZone %s",
				x.Name, cmp.Or(old.TimeZone, "UTC"), cmp.Or(q.Plan.TimeZone, "UTC")).
				WithHint("SET TIME ZONE '%s' first, or drop and re-create the view.", cmp.Or(old.TimeZone, "UTC"))
		}
		m := spec.MatchPlans(old, q.Plan, job.CanReplay)
		stored, err := spec.Encode(q.Plan)
		if err != nil {
			return err
		}
		if !m.Same {
			if err := e.rt.ReplaceJob(ent.ID, x.Name, old, q.Plan, m); err != nil {
				return err
			}
		}
		next := *ent
		next.SQL = "CREATE MATERIALIZED VIEW " + x.Name + " AS " + x.QueryText
		if x.EmitOnWindowClose {
			next.SQL += " EMIT ON WINDOW CLOSE"
		}
		next.Columns, next.Key, next.Deps, next.Plan = cols, q.Key, deps, stored
		next.AppendOnly = planner.AppendOnly(q.Plan, q.Plan.Root(), e.appendOnlyRel)
		e.persist(&next)
		return nil
	})
}

// sameColumns refuses a new output schema that a dependent object relies
// on: as PostgreSQL's CREATE OR REPLACE VIEW, the columns may not change
// (42P16 there); Sluice refuses any change then (0A000), since its
// dependents' plans read the columns by position.
func sameColumns(ent *storage.CatalogEntry, cols []storage.ColumnEntry, dep *storage.CatalogEntry) error {
	differ := len(cols) != len(ent.Columns)
	for i := 0; !differ && i < len(cols); i++ {
		o, n := ent.Columns[i], cols[i]
		differ = o.Name != n.Name || o.Fam != n.Fam || o.Prec != n.Prec || o.Scale != n.Scale
	}
	if !differ {
		return nil
	}
	var names []string
	for _, c := range ent.Columns {
		names = append(names, c.Name)
	}
	return pgerror.New(pgcode.FeatureNotSupported, "cannot change the columns of materialized view %q: %s %q depends on it", ent.Name, dep.Kind, dep.Name).
		WithDetail("The view's columns are (%s).", strings.Join(names, ", ")).
		WithHint("Keep the columns' names, types and order, or DROP the dependent objects first.")
}
