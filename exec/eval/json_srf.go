package eval

import (
	"sluice/sql/types"
)

// This file holds jsonb's set-returning functions: jsonb_each,
// jsonb_each_text, jsonb_array_elements, jsonb_array_elements_text and
// jsonb_object_keys, with PostgreSQL's column names and errors.

func init() {
	J := types.JSONB
	kv := func(text bool) []types.Column {
		vt := types.TJSONB
		if text {
			vt = types.TText
		}
		return []types.Column{{Name: "key", Type: types.TText}, {Name: "value", Type: vt}}
	}
	each := func(name string, text bool) tableFunc {
		return tableFunc{params: fams(J), cols: kv(text), run: func(args []types.Datum) ([]types.Row, error) {
			if args[0].K == types.KNull {
				return nil, nil
			}
			j, err := jsonArg(args[0])
			if err != nil {
				return nil, err
			}
			if j.Kind != types.JObject {
				return nil, errJSON("cannot call %s on a non-object", name)
			}
			out := make([]types.Row, len(j.Keys))
			for i, k := range j.Keys {
				v := jsonD(j.Vals[i])
				if text {
					v = jsonText(j.Vals[i])
				}
				out[i] = types.Row{str(k), v}
			}
			return out, nil
		}}
	}
	tableFuncs["jsonb_each"] = []tableFunc{each("jsonb_each", false)}
	tableFuncs["jsonb_each_text"] = []tableFunc{each("jsonb_each_text", true)}
	elems := func(text bool) tableFunc {
		vt := types.TJSONB
		if text {
			vt = types.TText
		}
		return tableFunc{params: fams(J), cols: []types.Column{{Name: "value", Type: vt}}, run: func(args []types.Datum) ([]types.Row, error) {
			if args[0].K == types.KNull {
				return nil, nil
			}
			j, err := jsonArg(args[0])
			if err != nil {
				return nil, err
			}
			switch j.Kind {
			case types.JArray:
			case types.JObject:
				return nil, errJSON("cannot extract elements from an object")
			default:
				return nil, errJSON("cannot extract elements from a scalar")
			}
			out := make([]types.Row, len(j.Elems))
			for i, e := range j.Elems {
				if text {
					out[i] = types.Row{jsonText(e)}
				} else {
					out[i] = types.Row{jsonD(e)}
				}
			}
			return out, nil
		}}
	}
	tableFuncs["jsonb_array_elements"] = []tableFunc{elems(false)}
	tableFuncs["jsonb_array_elements_text"] = []tableFunc{elems(true)}
	tableFuncs["jsonb_object_keys"] = []tableFunc{{params: fams(J), cols: []types.Column{{Name: "jsonb_object_keys", Type: types.TText}},
		run: func(args []types.Datum) ([]types.Row, error) {
			if args[0].K == types.KNull {
				return nil, nil
			}
			j, err := jsonArg(args[0])
			if err != nil {
				return nil, err
			}
			switch j.Kind {
			case types.JObject:
			case types.JArray:
				return nil, errJSON("cannot call jsonb_object_keys on an array")
			default:
				return nil, errJSON("cannot call jsonb_object_keys on a scalar")
			}
			out := make([]types.Row, len(j.Keys))
			for i, k := range j.Keys {
				out[i] = types.Row{str(k)}
			}
			return out, nil
		}}}
}
