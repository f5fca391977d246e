package planner

import (
	"strconv"
	"strings"

	"sluice/exec/eval"
	"sluice/exec/spec"
	"sluice/sql/types"
)

// This file binds the pg_proc functions psql's \df calls,
// pg_get_function_result, pg_get_function_arguments and
// pg_get_function_identity_arguments, from pg_proc's rows: each is a
// lookup by oid in the texts computed when the statement is planned.

// procTypeName is format_type of an argument or result oid, with the
// pseudo-types pg_proc uses.
func procTypeName(oid int64) string {
	switch oid {
	case eval.OidAny:
		return `"any"`
	case eval.OidAnyElement:
		return "anyelement"
	case eval.OidAnyArray:
		return "anyarray"
	case eval.OidAnyNonArray:
		return "anynonarray"
	case eval.OidRecord:
		return "record"
	}
	if t, ok := types.FromOID(uint32(oid)); ok {
		return t.String()
	}
	return strconv.FormatInt(oid, 10)
}

// procText computes one of the pg_get_function_* texts for every pg_proc
// row: (oid, text) rows.
func (p *Planner) procText(fn string) ([]types.Row, bool) {
	rel, idx, err := p.systemRel("pg_proc", "oid", "prorettype", "proretset", "proargtypes", "proargnames", "provariadic",
		"proname", "pronamespace", "prolang", "prosrc", "provolatile", "proisstrict", "proparallel")
	if err != nil {
		return nil, false
	}
	rows, err := rel.Rows()
	if err != nil {
		return nil, false
	}
	out := make([]types.Row, 0, len(rows))
	for _, r := range rows {
		var s string
		switch fn {
		case "pg_get_functiondef":
			s = functionDef(r, idx)
		case "pg_get_function_result":
			s = procTypeName(r[idx[1]].I)
			if r[idx[2]].Bool() {
				s = "SETOF " + s
			}
		default:
			var parts []string
			args := r[idx[3]].Elems()
			for i, a := range args {
				oid, _ := strconv.ParseInt(a.S, 10, 64)
				part := procTypeName(oid)
				if names := r[idx[4]].Elems(); fn == "pg_get_function_arguments" || fn == "pg_get_function_identity_arguments" {
					if i < len(names) && names[i].K == types.KString && names[i].S != "" {
						part = names[i].S + " " + part
					}
				}
				if i == len(args)-1 && r[idx[5]].I != 0 {
					part = "VARIADIC " + part
				}
				parts = append(parts, part)
			}
			s = strings.Join(parts, ", ")
		}
		out = append(out, types.Row{r[idx[0]], types.NewString(s)})
	}
	return out, true
}

// bindProcFunc binds pg_get_function_result(oid) and its kin; ok is false
// for other calls.
func (b *binder) bindProcFunc(name string, args []spec.Expr) (spec.Expr, bool, error) {
	switch name {
	case "pg_get_function_result", "pg_get_function_arguments", "pg_get_function_identity_arguments", "pg_get_functiondef":
	default:
		return nil, false, nil
	}
	if len(args) != 1 || b.p.Streaming || b.p.Cat == nil {
		return nil, false, nil
	}
	rows, ok := b.p.procText(name)
	if !ok {
		return nil, false, nil
	}
	x, err := b.lookupByOid(args[0], rows, name)
	return x, true, err
}

// lookupByOid binds (SELECT text FROM rows WHERE oid = x) over constant
// (oid, text) rows.
func (b *binder) lookupByOid(x spec.Expr, rows []types.Row, name string) (spec.Expr, error) {
	oid, err := b.castTo(x, types.TOid)
	if err != nil {
		return nil, err
	}
	cols := []types.Column{{Name: "oid", Type: types.TOid}, {Name: name, Type: types.TText}}
	plan := &spec.Plan{}
	in := plan.Add(&spec.Node{Kind: spec.Values, Rows: rows, Cols: cols})
	pred, err := b.call("=", []spec.Expr{&spec.ColRef{Idx: 0, T: types.TOid, Name: "oid"}, &spec.OuterRef{N: 0, T: types.TOid, Name: "oid"}})
	if err != nil {
		return nil, err
	}
	in = plan.Add(&spec.Node{Kind: spec.Filter, Inputs: []int{in}, Pred: pred, Cols: cols})
	plan.Add(&spec.Node{Kind: spec.Project, Inputs: []int{in}, Exprs: []spec.Expr{&spec.ColRef{Idx: 1, T: types.TText, Name: name}},
		Cols: cols[1:]})
	return &spec.Subquery{Mode: spec.ScalarSubquery, Plan: plan, Outer: []spec.Expr{oid}, Cols: 1, Limit: -1, T: types.TText}, nil
}

// functionDef is pg_get_functiondef's CREATE OR REPLACE FUNCTION text for
// a pg_proc row (idx as procText reads it).
func functionDef(r types.Row, idx []int) string {
	schema := "pg_catalog"
	if r[idx[7]].I == 2200 {
		schema = "public"
	}
	var args []string
	names := r[idx[4]].Elems()
	for i, a := range r[idx[3]].Elems() {
		oid, _ := strconv.ParseInt(a.S, 10, 64)
		part := procTypeName(oid)
		if i < len(names) && names[i].K == types.KString && names[i].S != "" {
			part = names[i].S + " " + part
		}
		args = append(args, part)
	}
	ret := procTypeName(r[idx[1]].I)
	if r[idx[2]].Bool() {
		ret = "SETOF " + ret
	}
	lang := "internal"
	if r[idx[8]].I == 14 {
		lang = "sql"
	}
	var sb strings.Builder
	sb.WriteString("CREATE OR REPLACE FUNCTION " + schema + "." + r[idx[6]].S + "(" + strings.Join(args, ", ") + ")\n")
	sb.WriteString(" RETURNS " + ret + "\n LANGUAGE " + lang + "\n")
	var attrs []string
	switch r[idx[10]].S {
	case "i":
		attrs = append(attrs, "IMMUTABLE")
	case "s":
		attrs = append(attrs, "STABLE")
	}
	switch r[idx[12]].S {
	case "s":
		attrs = append(attrs, "PARALLEL SAFE")
	case "r":
		attrs = append(attrs, "PARALLEL RESTRICTED")
	}
	if r[idx[11]].Bool() {
		attrs = append(attrs, "STRICT")
	}
	if len(attrs) > 0 {
		sb.WriteString(" " + strings.Join(attrs, " ") + "\n")
	}
	sb.WriteString("AS $function$" + r[idx[9]].S + "$function$\n")
	return sb.String()
}
