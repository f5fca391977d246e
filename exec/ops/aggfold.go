package ops

import (
	"sort"
	"strings"

	"sluice/exec/eval"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// The aggregates whose result depends on every input and its order
// (string_agg, array_agg, jsonb_agg, jsonb_object_agg) and bool_and/or:
// FoldAgg computes one from its inputs, for batch queries (exec/job) and
// for materialized views, where Agg keeps the multiset of each group's
// inputs (retractable) and folds it again when the group changes.

// FoldAgg computes the aggregate call over its inputs in, each the call's
// argument values (the argument, then Extra's columns, order keys
// included), in input order: it sorts them by call.Order, keeps the first
// of equal arguments when DISTINCT, then folds them.
func FoldAgg(call *spec.AggCall, in [][]types.Datum) (types.Datum, error) {
	if len(call.Order) > 0 {
		sort.SliceStable(in, func(i, j int) bool {
			for _, o := range call.Order {
				a, b := in[i][o.Col], in[j][o.Col]
				if a.K == types.KNull || b.K == types.KNull {
					if (a.K == types.KNull) == (b.K == types.KNull) {
						continue
					}
					return (a.K == types.KNull) == o.NullsFirst
				}
				c := types.Compare(a, b)
				if c == 0 {
					continue
				}
				return (c < 0) != o.Desc
			}
			return false
		})
	}
	if call.Distinct {
		seen := map[string]bool{}
		var kept [][]types.Datum
		for _, args := range in {
			k := string(types.AppendKey(nil, args[0]))
			if !seen[k] {
				seen[k] = true
				kept = append(kept, args)
			}
		}
		in = kept
	}
	switch call.Func {
	case "string_agg":
		var b strings.Builder
		any := false
		for _, args := range in {
			if args[0].K == types.KNull {
				continue
			}
			sep := ""
			if any && len(args) > 1 && args[1].K != types.KNull {
				sep = args[1].S
			}
			if b.Len()+len(sep)+len(args[0].S) > eval.MaxStringLen {
				// As PostgreSQL's enlargeStringInfo.
				return types.Null, pgerror.New(pgcode.ProgramLimitExceeded, "out of memory").WithDetail(
					"Cannot enlarge string buffer containing %d bytes by %d more bytes.", b.Len(), len(sep)+len(args[0].S))
			}
			b.WriteString(sep)
			b.WriteString(args[0].S)
			any = true
		}
		if !any {
			return types.Null, nil
		}
		return types.NewString(b.String()), nil
	case "array_agg":
		if len(in) == 0 {
			return types.Null, nil
		}
		elems := make([]types.Datum, len(in))
		for i, args := range in {
			elems[i] = args[0]
			if e := args[0]; e.K == types.KBool {
				// boolean[] holds its elements' text (sql/types/typedarray.go).
				elems[i] = types.NewString(types.FormatText(e, types.TBool))
			}
		}
		return types.Datum{K: types.KArray, A: types.NewElems(elems)}, nil
	case "jsonb_agg", "jsonb_object_agg":
		return jsonbAggResult(call.Func, in)
	case "bool_and", "every", "bool_or":
		seen, and, or := false, true, false
		for _, args := range in {
			if args[0].K == types.KNull {
				continue
			}
			seen = true
			and = and && args[0].Bool()
			or = or || args[0].Bool()
		}
		if !seen {
			return types.Null, nil
		}
		if call.Func == "bool_or" {
			return types.NewBool(or), nil
		}
		return types.NewBool(and), nil
	}
	return types.Null, pgerror.New(pgcode.Internal, "unknown batch aggregate %s", call.Func)
}

// jsonbAggResult is jsonb_agg(x) (x already jsonb; NULL is JSON null) and
// jsonb_object_agg(key, value) (a NULL key is an error, as in PostgreSQL).
func jsonbAggResult(fn string, in [][]types.Datum) (types.Datum, error) {
	if len(in) == 0 {
		return types.Null, nil
	}
	val := func(d types.Datum) (*types.JSON, error) {
		if d.K == types.KNull {
			return types.JSONNull(), nil
		}
		return types.JSONOf(d)
	}
	out := &types.JSON{Kind: types.JArray}
	if fn == "jsonb_object_agg" {
		out.Kind = types.JObject
	}
	for _, args := range in {
		if fn == "jsonb_agg" {
			v, err := val(args[0])
			if err != nil {
				return types.Null, err
			}
			out.Elems = append(out.Elems, v)
			continue
		}
		if args[0].K == types.KNull {
			return types.Null, pgerror.New(pgcode.InvalidParameterValue, "field name must not be null")
		}
		v, err := val(args[1])
		if err != nil {
			return types.Null, err
		}
		out.Keys = append(out.Keys, types.FormatText(args[0], types.TText))
		out.Vals = append(out.Vals, v)
	}
	out.Normalize()
	return types.NewJSON(out.String()), nil
}

// IsFoldAgg reports whether f is an aggregate FoldAgg computes. In a
// materialized view each keeps the multiset of its inputs per group (the
// argument tuple __pg_tuple(arg, extra…) the planner makes, counted per
// FILTER slot), saved at each checkpoint with the other multisets, so a
// retraction removes exactly one equal input.
func IsFoldAgg(f string) bool {
	switch f {
	case "string_agg", "array_agg", "jsonb_agg", "jsonb_object_agg", "bool_and", "bool_or", "every":
		return true
	}
	return false
}

// foldSet folds slot slot of the multiset vs for ag: its entries in the
// order of their keys (so that inputs ORDER BY leaves tied come out the
// same way every time), each as many times as it was counted.
func foldSet(ag *spec.AggCall, vs *vset, slot int) (types.Datum, error) {
	entries := make([]*setEntry, 0, len(vs.m))
	for _, e := range vs.m {
		if e.n[slot] > 0 {
			entries = append(entries, e)
		}
	}
	if len(entries) == 0 {
		return types.Null, nil
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].k < entries[j].k })
	var in [][]types.Datum
	for _, e := range entries {
		n := e.n[slot]
		if ag.Distinct {
			n = 1
		}
		for ; n > 0; n-- {
			in = append(in, e.v.Elems())
		}
	}
	return FoldAgg(ag, in)
}
