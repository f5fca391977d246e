package server

import (
	"fmt"

	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/storage"
)

// Stored plans (issue 16): a materialized view's or sink's job is planned
// once, when it is created; its physical plan, with a StateID per node, is
// stored in the catalog entry and the job restarts from it, so a build
// that would plan the query differently still runs the plan that wrote
// the state.

// storePlan gives plan's nodes their state ids and returns its stored
// form (checked by a round trip, spec.Encode).
func storePlan(plan *spec.Plan) ([]byte, error) {
	plan.AssignStateIDs()
	return spec.Encode(plan)
}

// restoreJob restarts a materialized view's or sink's job at startup from
// its stored plan (no backfill: state comes from the checkpoint). An
// object this build cannot run (a plan format it does not read, or a
// dependency it refused) is refused alone: it stays in the catalog with
// the reason, shown by SHOW, and everything else starts.
func (e *Engine) restoreJob(ent *storage.CatalogEntry) error {
	if why := e.refusal(ent); why != "" {
		ent.Refused = why
		e.cfg.Logf("refusing to start %s %q: %s", ent.Kind, ent.Name, why)
		return nil
	}
	plan, err := spec.Decode(ent.Plan)
	if err != nil {
		return err
	}
	// A sink is validated again as at CREATE SINK: the server's policy
	// (--connector-allow-hosts, the file root) may have changed since.
	for _, n := range plan.Nodes {
		if n.Sink == nil {
			continue
		}
		cfg, err := e.rt.SinkConfig(n)
		if err != nil {
			return err
		}
		f, err := e.rt.LookupSink(n.Sink.Connector)
		if err != nil {
			return err
		}
		if _, err := f.Validate(cfg); err != nil {
			return err
		}
	}
	_, err = e.rt.StartJob(ent.ID, ent.Name, plan, false)
	return err
}

// refusal returns why ent cannot be started by this build, "" if it can.
func (e *Engine) refusal(ent *storage.CatalogEntry) string {
	if len(ent.Plan) == 0 {
		return fmt.Sprintf("%s %q has no stored plan (written before plans were stored); this build reads plan formats %d to %d",
			ent.Kind, ent.Name, spec.ReadPlanFormat, spec.PlanFormat)
	}
	if v := spec.PlanVersion(ent.Plan); v < spec.ReadPlanFormat || v > spec.PlanFormat {
		return fmt.Sprintf("the stored plan of %s %q has format %d; this build (%s) reads plan formats %d to %d",
			ent.Kind, ent.Name, v, storage.Build(), spec.ReadPlanFormat, spec.PlanFormat)
	}
	for _, d := range ent.Deps {
		if dep := e.cat.byIDGet(d); dep != nil && dep.Refused != "" {
			return fmt.Sprintf("it reads %s %q, which is refused: %s", dep.Kind, dep.Name, dep.Refused)
		}
	}
	return ""
}

// refusedError is the error of a statement that reads or changes a
// refused object.
func refusedError(ent *storage.CatalogEntry) error {
	return pgerror.Newf(pgcode.ObjectNotInPrerequisiteState, "%s %q is refused by this build: %s", ent.Kind, ent.Name, ent.Refused).
		WithHint("Start it with a build that reads its formats, or DROP it (its state is deleted).")
}
