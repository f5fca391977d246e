package server

import (
	"context"
	"strings"

	"sluice/planner/cat"
	"sluice/server/pgwire"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

func textCols(names ...string) []types.Column {
	out := make([]types.Column, len(names))
	for i, n := range names {
		out[i] = types.Column{Name: n, Type: types.TText}
	}
	return out
}

func textRow(vals ...string) types.Row {
	r := make(types.Row, len(vals))
	for i, v := range vals {
		r[i] = types.NewString(v)
	}
	return r
}

func (s *session) utilityColumns(st parser.Statement) []types.Column {
	switch x := st.(type) {
	case *parser.Show:
		switch strings.ToUpper(x.What) {
		case "TABLES", "SOURCES", "MATERIALIZED VIEWS", "VIEWS", "SINKS":
			return showListCols(strings.ToUpper(x.What))
		case "ALL":
			return textCols("name", "setting", "description")
		case "SECRETS":
			return textCols("Name")
		case "JOBS":
			return showJobsCols()
		}
		return textCols(strings.ToLower(x.What))
	case *parser.ShowCreate:
		return textCols("Name", "Create Sql")
	case *parser.Describe:
		return textCols("Name", "Type", "Is Hidden", "Description")
	case *parser.Explain:
		return textCols("QUERY PLAN")
	case *parser.CancelJobs:
		return []types.Column{{Name: "Id", Type: types.TInt8}}
	}
	return nil
}

func showListCols(what string) []types.Column {
	if what == "MATERIALIZED VIEWS" {
		return []types.Column{{Name: "Name", Type: types.TText}, {Name: "Rows", Type: types.TInt8}, {Name: "Errors", Type: types.TInt8},
			{Name: "Status", Type: types.TText}, {Name: "Last Error", Type: types.TText}}
	}
	if what == "SOURCES" {
		return []types.Column{{Name: "Name", Type: types.TText}, {Name: "Connector", Type: types.TText}, {Name: "Bad Records", Type: types.TInt8},
			{Name: "Late Records", Type: types.TInt8}, {Name: "Guarantee", Type: types.TText}, {Name: "Status", Type: types.TText}}
	}
	if what == "SINKS" {
		return showSinksCols()
	}
	return textCols("Name")
}

func (s *session) writeRows(w pgwire.ResultWriter, cols []types.Column, rows []types.Row, tag string) error {
	if err := w.Columns(cols); err != nil {
		return err
	}
	for _, r := range rows {
		if err := w.Row(r); err != nil {
			return err
		}
	}
	return w.Complete(tag)
}

func (s *session) show(x *parser.Show, w pgwire.ResultWriter) error {
	what := strings.ToUpper(x.What)
	kinds := map[string]string{"TABLES": kindTable, "SOURCES": kindSource, "MATERIALIZED VIEWS": kindMView, "VIEWS": kindView, "SINKS": kindSink}
	if kind, ok := kinds[what]; ok {
		var rows []types.Row
		for _, ent := range s.e.cat.list(kind) {
			if kind == kindSource {
				status := types.NewString(s.e.redactText(s.e.rt.SourceStatus(ent.ID)))
				if !s.ownsOrSuper(ent) {
					status = types.Null
				}
				rows = append(rows, types.Row{types.NewString(ent.Name), types.NewString(ent.Connector), types.NewInt(s.e.rt.BadRecords(ent.ID)),
					types.NewInt(s.e.rt.LateRecords(ent.ID)), types.NewString(s.e.sourceGuarantee(ent).String()), status})
				continue
			}
			if kind == kindSink {
				rows = append(rows, s.e.showSinkRow(ent, s.ownsOrSuper(ent)))
				continue
			}
			if kind == kindMView {
				var n, errs int64
				last, status := "", "stopped"
				if j := s.e.rt.Job(ent.ID); j != nil {
					status = j.Status()
					if j.Mat != nil {
						n = j.Mat.Rows.Load()
					}
					errs = j.Errors.Count.Load()
					if v, ok := j.Errors.Last.Load().(string); ok {
						last = v
					}
					if f := j.Failure(); f != nil {
						last = f.Error()
					}
				}
				if ent.Refused != "" {
					last, status = "refused: "+ent.Refused, "refused"
				}
				lastCell := types.NewString(s.e.redactText(last))
				if !s.ownsOrSuper(ent) {
					lastCell = types.Null
				}
				rows = append(rows, types.Row{types.NewString(ent.Name), types.NewInt(n), types.NewInt(errs), types.NewString(status), lastCell})
				continue
			}
			rows = append(rows, textRow(ent.Name))
		}
		return s.writeRows(w, showListCols(what), rows, "SHOW")
	}
	if what == "SECRETS" {
		return s.showSecrets(w)
	}
	if what == "JOBS" {
		return s.showJobs(w)
	}
	if what == "ALL" {
		var rows []types.Row
		for k, v := range s.settings {
			rows = append(rows, textRow(k, v, ""))
		}
		return s.writeRows(w, textCols("name", "setting", "description"), rows, "SHOW")
	}
	name := strings.ToLower(x.What)
	if name == "time zone" {
		name = "timezone"
	}
	v, ok := s.setting(name)
	if !ok {
		return pgerror.New(pgcode.UndefinedObject, "unrecognized configuration parameter %q", x.What)
	}
	return s.writeRows(w, textCols(name), []types.Row{textRow(v)}, "SHOW")
}

func (s *session) showCreate(x *parser.ShowCreate, w pgwire.ResultWriter) error {
	ent := s.e.cat.get(x.Name)
	if ent == nil {
		return pgerror.New(pgcode.UndefinedTable, "relation %q does not exist", x.Name)
	}
	return s.writeRows(w, textCols("Name", "Create Sql"), []types.Row{textRow(ent.Name, redactSQL(ent.SQL))}, "SHOW")
}

func (s *session) describeRel(name string, w pgwire.ResultWriter) error {
	rel, err := s.e.cat.Resolve("", name)
	if err != nil {
		return err
	}
	var rows []types.Row
	for i, c := range rel.Columns {
		desc := ""
		for _, k := range rel.Key {
			if k == i && rel.Kind == cat.Table {
				desc = "primary key"
			}
		}
		rows = append(rows, textRow(c.Name, c.Type.String(), "false", desc))
	}
	return s.writeRows(w, textCols("Name", "Type", "Is Hidden", "Description"), rows, "DESCRIBE")
}

func (s *session) explain(x *parser.Explain, w pgwire.ResultWriter) error {
	var text string
	switch st := x.Stmt.(type) {
	case *parser.CreateMaterializedView:
		q, err := s.e.viewPlanner(withZone(context.Background(), s.settings["timezone"]), st).PlanView(st.Query, 0, st.Name)
		if err != nil {
			return err
		}
		text = q.Plan.Explain()
	case *parser.Query:
		p := s.e.newPlanner()
		p.Cat, p.TableFuncs = s.catalogView(), st.TableFuncs
		p.ColumnAliases = st.ColumnAliases
		q, err := p.PlanQuery(st.Node)
		if err != nil {
			return err
		}
		text = q.Plan.Explain()
	default:
		return pgerror.Unsupported("EXPLAIN of %T", x.Stmt)
	}
	var rows []types.Row
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		rows = append(rows, textRow(l))
	}
	return s.writeRows(w, textCols("QUERY PLAN"), rows, "EXPLAIN")
}
