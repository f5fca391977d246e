package server

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"sluice/exec/spec"
	"sluice/server/pgwire"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/storage"
)

// This file runs ALTER MATERIALIZED VIEW v RESUME and ALTER SINK s RESUME,
// and says, to a SELECT of a failed view, what it is reading (see
// exec/job/failstop.go for what a failed job keeps).

// alterTarget finds the object of kind an ALTER names. When there is none
// it returns nil and either the error that it does not exist or, with IF
// EXISTS, the outcome of the notice and the command's completion.
func (s *session) alterTarget(name, kind, what string, ifExists bool, tag string, w pgwire.ResultWriter) (*storage.CatalogEntry, error) {
	if ent := s.e.cat.get(name); ent != nil && ent.Kind == kind {
		return ent, nil
	}
	if ifExists {
		if err := w.Notice(fmt.Sprintf("%s %q does not exist, skipping", what, name)); err != nil {
			return nil, err
		}
		return nil, w.Complete(tag)
	}
	code := pgcode.UndefinedTable
	if kind == kindSink {
		code = pgcode.UndefinedObject
	}
	return nil, pgerror.New(code, "%s %q does not exist", what, name)
}

// alterResume starts a failed view or sink again from the last epoch it
// completed, with every failed job that reads it.
func (s *session) alterResume(ctx context.Context, x *parser.AlterResume, w pgwire.ResultWriter) error {
	tag := "ALTER " + x.Kind
	if s.tx != nil {
		return pgerror.New(pgcode.ActiveSQLTransaction, "%s … RESUME cannot run inside a transaction block", tag)
	}
	kind, what := kindMView, "materialized view"
	if x.Kind == "SINK" {
		kind, what = kindSink, "sink"
	}
	ent, err := s.alterTarget(x.Name, kind, what, x.IfExists, tag, w)
	if ent == nil {
		return err
	}
	err = s.e.ddl(ctx, func() error {
		ids, err := s.e.rt.ResumeSet(ent.ID, ent.Name)
		if err != nil {
			return err
		}
		for i := len(ids) - 1; i >= 0; i-- {
			s.e.rt.Halt(ids[i])
		}
		slices.Sort(ids) // creation order: what a job reads starts first
		var names []string
		for _, id := range ids {
			d := s.e.cat.byIDGet(id)
			if d == nil {
				continue
			}
			if err := s.e.restore(d); err != nil {
				return pgerror.Wrap(err, pgcode.ObjectNotInPrerequisiteState, "resuming %s", d.Name)
			}
			names = append(names, d.Name)
		}
		s.e.cfg.Logf("resumed %s", strings.Join(names, ", "))
		return nil
	})
	if err != nil {
		return err
	}
	return w.Complete(tag)
}

// failedNotice is the NOTICE a SELECT reading failed views gets: their
// contents are those of the last epoch each completed.
func (e *Engine) failedNotice(rels []uint64) string {
	var parts []string
	for _, id := range rels {
		j := e.rt.Job(id)
		if j == nil || j.Failure() == nil {
			continue
		}
		ent := e.cat.byIDGet(id)
		if ent == nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("%q failed (%s); its contents are those of epoch %d, the last it completed", ent.Name, firstLine(e.redactText(j.Failure().Error())), j.HaltedAt()))
	}
	if len(parts) == 0 {
		return ""
	}
	return "materialized view " + strings.Join(parts, "; ") + ". ALTER MATERIALIZED VIEW … RESUME starts it again."
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// readRels returns the relations plan subscribes to.
func readRels(plan *spec.Plan) []uint64 {
	var ids []uint64
	for _, n := range plan.Nodes {
		if n.Kind == spec.Subscribe && !slices.Contains(ids, n.Rel) {
			ids = append(ids, n.Rel)
		}
	}
	return ids
}
