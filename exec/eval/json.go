package eval

import (
	"strconv"
	"strings"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file holds jsonb's operators and scalar functions, with
// PostgreSQL's semantics and error messages: -> ->> #> #>> @> <@ ? ?| ?&
// || - #-, jsonb_build_object, jsonb_build_array, jsonb_typeof,
// jsonb_array_length, jsonb_set, jsonb_insert, jsonb_strip_nulls,
// to_jsonb, jsonb_pretty, jsonb_extract_path(_text). The value model is
// sql/types' JSON (jsonb.go); results are stored as canonical text.

func jsonD(v *types.JSON) types.Datum { return types.NewJSON(v.String()) }

// jsonArg parses a jsonb argument.
func jsonArg(d types.Datum) (*types.JSON, error) { return types.JSONOf(d) }

// jsonText is the text ->> and #>> return for v: a string's contents, SQL
// NULL for a JSON null, else the value's jsonb text.
func jsonText(v *types.JSON) types.Datum {
	switch v.Kind {
	case types.JNull:
		return types.Null
	case types.JString:
		return str(v.Str)
	}
	return str(v.String())
}

// jsonField is j -> key.
func jsonField(j *types.JSON, key string) *types.JSON { return j.Get(key) }

// jsonIndex is j -> i (negative counts from the end). A top-level scalar
// is, as in PostgreSQL, an array of itself.
func jsonIndex(j *types.JSON, i int64) *types.JSON {
	if j.Kind != types.JArray {
		if j.Kind != types.JObject && (i == 0 || i == -1) {
			return j
		}
		return nil
	}
	n := int64(len(j.Elems))
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return nil
	}
	return j.Elems[i]
}

// jsonPath is j #> path: object keys, and array indexes written as
// integers; nil when any step is missing.
func jsonPath(j *types.JSON, path []types.Datum) (*types.JSON, bool) {
	cur := j
	for _, p := range path {
		if p.K == types.KNull {
			return nil, false
		}
		switch cur.Kind {
		case types.JObject:
			cur = cur.Get(p.S)
		case types.JArray:
			i, err := strconv.ParseInt(strings.TrimSpace(p.S), 10, 32)
			if err != nil {
				return nil, false
			}
			cur = jsonIndex(cur, i)
		default:
			return nil, false
		}
		if cur == nil {
			return nil, false
		}
	}
	return cur, true
}

func flatText(a types.Datum) []types.Datum {
	var out []types.Datum
	var walk func([]types.Datum)
	walk = func(es []types.Datum) {
		for _, e := range es {
			if e.K == types.KArray {
				walk(e.Elems())
				continue
			}
			out = append(out, e)
		}
	}
	walk(a.Elems())
	return out
}

// jsonHasKey is j ? key: a key of an object, a string element of an
// array, or a top-level string scalar equal to key.
func jsonHasKey(j *types.JSON, key string) bool {
	switch j.Kind {
	case types.JObject:
		return j.Get(key) != nil
	case types.JArray:
		for _, e := range j.Elems {
			if e.Kind == types.JString && e.Str == key {
				return true
			}
		}
		return false
	case types.JString:
		return j.Str == key
	}
	return false
}

func errJSON(format string, args ...any) *pgerror.Error {
	return pgerror.New(pgcode.InvalidParameterValue, format, args...)
}

// jsonConcat is a || b.
func jsonConcat(a, b *types.JSON) *types.JSON {
	if a.Kind == types.JObject && b.Kind == types.JObject {
		out := &types.JSON{Kind: types.JObject}
		out.Keys = append(append(out.Keys, a.Keys...), b.Keys...)
		out.Vals = append(append(out.Vals, a.Vals...), b.Vals...)
		out.Normalize()
		return out
	}
	elems := func(v *types.JSON) []*types.JSON {
		if v.Kind == types.JArray {
			return v.Elems
		}
		return []*types.JSON{v}
	}
	out := &types.JSON{Kind: types.JArray}
	out.Elems = append(append(out.Elems, elems(a)...), elems(b)...)
	return out
}

// jsonDeleteKey is j - key.
func jsonDeleteKey(j *types.JSON, keys ...string) (*types.JSON, error) {
	switch j.Kind {
	case types.JObject:
		out := &types.JSON{Kind: types.JObject}
		for i, k := range j.Keys {
			drop := false
			for _, d := range keys {
				if k == d {
					drop = true
				}
			}
			if !drop {
				out.Keys = append(out.Keys, k)
				out.Vals = append(out.Vals, j.Vals[i])
			}
		}
		return out, nil
	case types.JArray:
		out := &types.JSON{Kind: types.JArray, Elems: []*types.JSON{}}
		for _, e := range j.Elems {
			drop := false
			for _, d := range keys {
				if e.Kind == types.JString && e.Str == d {
					drop = true
				}
			}
			if !drop {
				out.Elems = append(out.Elems, e)
			}
		}
		return out, nil
	}
	return nil, errJSON("cannot delete from scalar")
}

// jsonDeleteIndex is j - i.
func jsonDeleteIndex(j *types.JSON, i int64) (*types.JSON, error) {
	switch j.Kind {
	case types.JArray:
	case types.JObject:
		return nil, errJSON("cannot delete from object using integer index")
	default:
		return nil, errJSON("cannot delete from scalar")
	}
	n := int64(len(j.Elems))
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return j, nil
	}
	out := &types.JSON{Kind: types.JArray, Elems: []*types.JSON{}}
	out.Elems = append(append(out.Elems, j.Elems[:i]...), j.Elems[i+1:]...)
	return out, nil
}

// jsonSetPath replaces (or, with create, adds) the value at path, as
// jsonb_set does; insert (jsonb_insert) inserts into arrays instead of
// replacing, before the position or, with after, after it.
func jsonSetPath(j *types.JSON, path []types.Datum, val *types.JSON, create, insert, after bool, level int) (*types.JSON, error) {
	if len(path) == 0 {
		return val, nil
	}
	if path[0].K == types.KNull {
		return nil, errJSON("path element at position %d is null", level+1)
	}
	key := path[0].S
	last := len(path) == 1
	switch j.Kind {
	case types.JObject:
		out := &types.JSON{Kind: types.JObject, Keys: append([]string(nil), j.Keys...), Vals: append([]*types.JSON(nil), j.Vals...)}
		for i, k := range out.Keys {
			if k != key {
				continue
			}
			if last {
				if insert {
					return nil, errJSON("cannot replace existing key").
						WithHint("Try using the function jsonb_set to replace key value.")
				}
				out.Vals[i] = val
				return out, nil
			}
			v, err := jsonSetPath(out.Vals[i], path[1:], val, create, insert, after, level+1)
			if err != nil {
				return nil, err
			}
			out.Vals[i] = v
			return out, nil
		}
		if last && (create || insert) {
			out.Keys = append(out.Keys, key)
			out.Vals = append(out.Vals, val)
			out.Normalize()
		}
		return out, nil
	case types.JArray:
		i, err := strconv.ParseInt(strings.TrimSpace(key), 10, 32)
		if err != nil {
			return nil, pgerror.New(pgcode.InvalidTextRepresentation,
				"path element at position %d is not an integer: \"%s\"", level+1, key)
		}
		n := int64(len(j.Elems))
		if i < 0 {
			i += n
			if i < 0 {
				i = -1 // before the first element
			}
		}
		out := &types.JSON{Kind: types.JArray, Elems: append([]*types.JSON(nil), j.Elems...)}
		if i >= 0 && i < n {
			if !last {
				v, err := jsonSetPath(out.Elems[i], path[1:], val, create, insert, after, level+1)
				if err != nil {
					return nil, err
				}
				out.Elems[i] = v
				return out, nil
			}
			if !insert {
				out.Elems[i] = val
				return out, nil
			}
			at := i
			if after {
				at = i + 1
			}
			out.Elems = append(out.Elems[:at], append([]*types.JSON{val}, out.Elems[at:]...)...)
			return out, nil
		}
		if last && (create || insert) {
			if i < 0 {
				out.Elems = append([]*types.JSON{val}, out.Elems...)
			} else {
				out.Elems = append(out.Elems, val)
			}
		}
		if out.Elems == nil {
			out.Elems = []*types.JSON{}
		}
		return out, nil
	}
	if level == 0 {
		return nil, errJSON("cannot set path in scalar")
	}
	return j, nil
}

// jsonDeletePath is j #- path.
func jsonDeletePath(j *types.JSON, path []types.Datum, level int) (*types.JSON, error) {
	if len(path) == 0 {
		return j, nil
	}
	if path[0].K == types.KNull {
		return nil, errJSON("path element at position %d is null", level+1)
	}
	key, last := path[0].S, len(path) == 1
	switch j.Kind {
	case types.JObject:
		for i, k := range j.Keys {
			if k != key {
				continue
			}
			out := &types.JSON{Kind: types.JObject, Keys: append([]string(nil), j.Keys...), Vals: append([]*types.JSON(nil), j.Vals...)}
			if last {
				out.Keys = append(out.Keys[:i], out.Keys[i+1:]...)
				out.Vals = append(out.Vals[:i], out.Vals[i+1:]...)
				return out, nil
			}
			v, err := jsonDeletePath(j.Vals[i], path[1:], level+1)
			if err != nil {
				return nil, err
			}
			out.Vals[i] = v
			return out, nil
		}
		return j, nil
	case types.JArray:
		i, err := strconv.ParseInt(strings.TrimSpace(key), 10, 32)
		if err != nil {
			return nil, pgerror.New(pgcode.InvalidTextRepresentation,
				"path element at position %d is not an integer: \"%s\"", level+1, key)
		}
		n := int64(len(j.Elems))
		if i < 0 {
			i += n
		}
		if i < 0 || i >= n {
			return j, nil
		}
		out := &types.JSON{Kind: types.JArray, Elems: append([]*types.JSON(nil), j.Elems...)}
		if last {
			out.Elems = append(out.Elems[:i], out.Elems[i+1:]...)
			return out, nil
		}
		v, err := jsonDeletePath(j.Elems[i], path[1:], level+1)
		if err != nil {
			return nil, err
		}
		out.Elems[i] = v
		return out, nil
	}
	if level == 0 {
		return nil, errJSON("cannot delete path in scalar")
	}
	return j, nil
}

// stripNulls is jsonb_strip_nulls: object fields whose value is null go,
// at every depth (array elements stay).
func stripNulls(j *types.JSON) *types.JSON {
	switch j.Kind {
	case types.JObject:
		out := &types.JSON{Kind: types.JObject}
		for i, k := range j.Keys {
			if j.Vals[i].Kind == types.JNull {
				continue
			}
			out.Keys = append(out.Keys, k)
			out.Vals = append(out.Vals, stripNulls(j.Vals[i]))
		}
		return out
	case types.JArray:
		out := &types.JSON{Kind: types.JArray, Elems: make([]*types.JSON, len(j.Elems))}
		for i, e := range j.Elems {
			out.Elems[i] = stripNulls(e)
		}
		return out
	}
	return j
}

// ToJSON converts a SQL value of type t to JSON as to_jsonb does.
func ToJSON(d types.Datum, t types.T) (*types.JSON, error) {
	if d.K == types.KNull {
		return types.JSONNull(), nil
	}
	switch d.K {
	case types.KJSON:
		return types.JSONOf(d)
	case types.KBool:
		return &types.JSON{Kind: types.JBool, Bool: d.I != 0}, nil
	case types.KInt, types.KDecimal:
		if types.IsOidFamily(t.Fam) {
			return types.JSONString(types.FormatText(d, t)), nil
		}
		s := types.FormatText(d, t)
		if s == "NaN" || strings.HasSuffix(s, "Infinity") {
			return types.JSONString(s), nil
		}
		return &types.JSON{Kind: types.JNumber, Str: s}, nil
	case types.KFloat:
		s := types.FormatText(d, t)
		if s == "NaN" || strings.HasSuffix(s, "Infinity") {
			return types.JSONString(s), nil
		}
		n, err := types.DecFromString(s)
		if err != nil {
			return types.JSONString(s), nil
		}
		return &types.JSON{Kind: types.JNumber, Str: types.FormatText(n, types.TNumeric)}, nil
	case types.KTimestamp, types.KTimestampTZ:
		s := types.FormatText(d, t)
		if strings.Contains(s, "infinity") {
			return types.JSONString(s), nil
		}
		s = strings.Replace(s, " ", "T", 1)
		if d.K == types.KTimestampTZ {
			// JSON dates carry the zone as +HH:MM.
			if n := len(s); n >= 3 && (s[n-3] == '+' || s[n-3] == '-') {
				s += ":00"
			}
		}
		return types.JSONString(s), nil
	case types.KArray:
		out := &types.JSON{Kind: types.JArray, Elems: []*types.JSON{}}
		et := types.TText
		for _, e := range d.Elems() {
			v, err := ToJSON(e, et)
			if err != nil {
				return nil, err
			}
			out.Elems = append(out.Elems, v)
		}
		return out, nil
	}
	if t.Fam == types.Unknown {
		t = types.TText
	}
	return types.JSONString(types.FormatText(d, t)), nil
}

func init() {
	J, T, I4, TA := types.JSONB, types.Text, types.Int4, types.TextArray
	tj, tt := types.TJSONB, types.TText
	get := func(text bool, f func(j *types.JSON, k types.Datum) *types.JSON) builder {
		return build2(func(a, k types.Datum) (types.Datum, error) {
			j, err := jsonArg(a)
			if err != nil {
				return types.Null, err
			}
			v := f(j, k)
			if v == nil {
				return types.Null, nil
			}
			if text {
				return jsonText(v), nil
			}
			return jsonD(v), nil
		})
	}
	byKey := func(j *types.JSON, k types.Datum) *types.JSON { return jsonField(j, k.S) }
	byIdx := func(j *types.JSON, k types.Datum) *types.JSON { return jsonIndex(j, k.I) }
	byPath := func(j *types.JSON, k types.Datum) *types.JSON {
		v, _ := jsonPath(j, flatText(k))
		return v
	}
	reg("__pg_json_get", fams(J, T), tj, get(false, byKey))
	reg("__pg_json_get", fams(J, I4), tj, get(false, byIdx))
	reg("__pg_json_get_text", fams(J, T), tt, get(true, byKey))
	reg("__pg_json_get_text", fams(J, I4), tt, get(true, byIdx))
	reg("__pg_json_path", fams(J, TA), tj, get(false, byPath))
	reg("__pg_json_path_text", fams(J, TA), tt, get(true, byPath))
	extract := func(text bool) builder {
		return func(b *bctx) (Fn, error) {
			fns := argFns(b)
			return strictN(fns, func(args []types.Datum) (types.Datum, error) {
				j, err := jsonArg(args[0])
				if err != nil {
					return types.Null, err
				}
				v, ok := jsonPath(j, args[1:])
				if !ok {
					return types.Null, nil
				}
				if text {
					return jsonText(v), nil
				}
				return jsonD(v), nil
			}), nil
		}
	}
	regVariadic("jsonb_extract_path", fams(J, T), tj, extract(false))
	regVariadic("jsonb_extract_path_text", fams(J, T), tt, extract(true))

	two := func(f func(a, c *types.JSON) (types.Datum, error)) builder {
		return build2(func(a, c types.Datum) (types.Datum, error) {
			x, err := jsonArg(a)
			if err != nil {
				return types.Null, err
			}
			y, err := jsonArg(c)
			if err != nil {
				return types.Null, err
			}
			return f(x, y)
		})
	}
	reg("__pg_contains", fams(J, J), types.TBool, two(func(a, c *types.JSON) (types.Datum, error) {
		return types.NewBool(types.JSONContains(a, c)), nil
	}))
	reg("__pg_contained_by", fams(J, J), types.TBool, two(func(a, c *types.JSON) (types.Datum, error) {
		return types.NewBool(types.JSONContains(c, a)), nil
	}))
	reg("__pg_json_exists", fams(J, T), types.TBool, build2(func(a, k types.Datum) (types.Datum, error) {
		j, err := jsonArg(a)
		if err != nil {
			return types.Null, err
		}
		return types.NewBool(jsonHasKey(j, k.S)), nil
	}))
	exists := func(all bool) builder {
		return build2(func(a, ks types.Datum) (types.Datum, error) {
			j, err := jsonArg(a)
			if err != nil {
				return types.Null, err
			}
			for _, k := range flatText(ks) {
				if k.K == types.KNull {
					continue
				}
				has := jsonHasKey(j, k.S)
				if has && !all {
					return types.NewBool(true), nil
				}
				if !has && all {
					return types.NewBool(false), nil
				}
			}
			return types.NewBool(all), nil
		})
	}
	reg("__pg_json_exists_any", fams(J, TA), types.TBool, exists(false))
	reg("__pg_json_exists_all", fams(J, TA), types.TBool, exists(true))
	reg("-", fams(J, T), tj, build2(func(a, k types.Datum) (types.Datum, error) {
		j, err := jsonArg(a)
		if err != nil {
			return types.Null, err
		}
		v, err := jsonDeleteKey(j, k.S)
		if err != nil {
			return types.Null, err
		}
		return jsonD(v), nil
	}))
	reg("-", fams(J, TA), tj, build2(func(a, ks types.Datum) (types.Datum, error) {
		j, err := jsonArg(a)
		if err != nil {
			return types.Null, err
		}
		var keys []string
		for _, k := range flatText(ks) {
			if k.K != types.KNull {
				keys = append(keys, k.S)
			}
		}
		if len(keys) == 0 {
			return a, nil
		}
		v, err := jsonDeleteKey(j, keys...)
		if err != nil {
			return types.Null, err
		}
		return jsonD(v), nil
	}))
	reg("-", fams(J, I4), tj, build2(func(a, i types.Datum) (types.Datum, error) {
		j, err := jsonArg(a)
		if err != nil {
			return types.Null, err
		}
		v, err := jsonDeleteIndex(j, i.I)
		if err != nil {
			return types.Null, err
		}
		return jsonD(v), nil
	}))
	reg("__pg_json_delete_path", fams(J, TA), tj, build2(func(a, p types.Datum) (types.Datum, error) {
		j, err := jsonArg(a)
		if err != nil {
			return types.Null, err
		}
		v, err := jsonDeletePath(j, flatText(p), 0)
		if err != nil {
			return types.Null, err
		}
		return jsonD(v), nil
	}))
	reg("jsonb_typeof", fams(J), tt, build1(func(a types.Datum) (types.Datum, error) {
		j, err := jsonArg(a)
		if err != nil {
			return types.Null, err
		}
		return str(j.TypeName()), nil
	}))
	reg("jsonb_array_length", fams(J), types.TInt4, build1(func(a types.Datum) (types.Datum, error) {
		j, err := jsonArg(a)
		if err != nil {
			return types.Null, err
		}
		switch j.Kind {
		case types.JArray:
			return intD(int64(len(j.Elems))), nil
		case types.JObject:
			return types.Null, errJSON("cannot get array length of a non-array")
		}
		return types.Null, errJSON("cannot get array length of a scalar")
	}))
	reg("jsonb_strip_nulls", fams(J), tj, build1(func(a types.Datum) (types.Datum, error) {
		j, err := jsonArg(a)
		if err != nil {
			return types.Null, err
		}
		return jsonD(stripNulls(j)), nil
	}))
	reg("jsonb_pretty", fams(J), tt, build1(func(a types.Datum) (types.Datum, error) {
		j, err := jsonArg(a)
		if err != nil {
			return types.Null, err
		}
		return str(j.Pretty()), nil
	}))
	set := func(insert bool) builder {
		return func(b *bctx) (Fn, error) {
			fns := argFns(b)
			return strictN(fns, func(args []types.Datum) (types.Datum, error) {
				j, err := jsonArg(args[0])
				if err != nil {
					return types.Null, err
				}
				val, err := jsonArg(args[2])
				if err != nil {
					return types.Null, err
				}
				flag := !insert // create_if_missing defaults to true; insert_after to false
				if len(args) > 3 {
					flag = args[3].I != 0
				}
				var v *types.JSON
				if insert {
					v, err = jsonSetPath(j, flatText(args[1]), val, false, true, flag, 0)
				} else {
					v, err = jsonSetPath(j, flatText(args[1]), val, flag, false, false, 0)
				}
				if err != nil {
					return types.Null, err
				}
				return jsonD(v), nil
			}), nil
		}
	}
	for _, name := range []string{"jsonb_set", "jsonb_insert"} {
		reg(name, fams(J, TA, J), tj, set(name == "jsonb_insert"))
		reg(name, fams(J, TA, J, types.Bool), tj, set(name == "jsonb_insert"))
	}
	reg("to_jsonb", fams(famAny), tj, func(b *bctx) (Fn, error) {
		x, t := b.fn(0), b.args[0].t
		return func(row types.Row) (types.Datum, error) {
			d, err := x(row)
			if err != nil || d.K == types.KNull {
				return types.Null, err
			}
			v, err := ToJSON(d, t)
			if err != nil {
				return types.Null, err
			}
			return jsonD(v), nil
		}, nil
	})
	reg("jsonb_build_array", nil, tj, constFn(types.NewJSON("[]")))
	regVariadic("jsonb_build_array", fams(famAny), tj, func(b *bctx) (Fn, error) {
		fns := argFns(b)
		return func(row types.Row) (types.Datum, error) {
			out := &types.JSON{Kind: types.JArray, Elems: make([]*types.JSON, len(fns))}
			for i, f := range fns {
				d, err := f(row)
				if err != nil {
					return types.Null, err
				}
				if out.Elems[i], err = ToJSON(d, b.args[i].t); err != nil {
					return types.Null, err
				}
			}
			return jsonD(out), nil
		}, nil
	})
	// json_build_object answers as jsonb_build_object: Sluice has no json
	// type, and the drivers read both as JSON (SQLAlchemy's reflection
	// builds a column's identity options with it).
	for _, name := range []string{"jsonb_build_object", "json_build_object"} {
		reg(name, nil, tj, constFn(types.NewJSON("{}")))
		regVariadic(name, fams(famAny), tj, buildJSONObject(name))
	}
}

// buildJSONObject builds name(VARIADIC "any"), jsonb_build_object.
func buildJSONObject(name string) builder {
	return func(b *bctx) (Fn, error) { return buildJSONObjectFn(b, name) }
}

func buildJSONObjectFn(b *bctx, name string) (Fn, error) {
	fns := argFns(b)
	if len(fns)%2 != 0 {
		return nil, errJSON("argument list must have even number of elements").
			WithHint("The arguments of %s() must consist of alternating keys and values.", name)
	}
	return func(row types.Row) (types.Datum, error) {
		out := &types.JSON{Kind: types.JObject}
		for i := 0; i < len(fns); i += 2 {
			k, err := fns[i](row)
			if err != nil {
				return types.Null, err
			}
			if k.K == types.KNull {
				return types.Null, errJSON("argument %d: key must not be null", i+1)
			}
			v, err := fns[i+1](row)
			if err != nil {
				return types.Null, err
			}
			jv, err := ToJSON(v, b.args[i+1].t)
			if err != nil {
				return types.Null, err
			}
			out.Keys = append(out.Keys, catText(k, b.args[i].t))
			out.Vals = append(out.Vals, jv)
		}
		out.Normalize()
		return jsonD(out), nil
	}, nil
}

func isJSONOrUnknown(f types.Family) bool { return f == types.JSONB || f == types.Unknown }

// resolveJSONConcat is jsonb || jsonb.
func resolveJSONConcat() (*resolution, error) {
	return &resolution{ret: types.TJSONB, casts: []types.T{types.TJSONB, types.TJSONB}, build: func(b *bctx) (Fn, error) {
		return strict2(b.fn(0), b.fn(1), func(a, c types.Datum) (types.Datum, error) {
			x, err := jsonArg(a)
			if err != nil {
				return types.Null, err
			}
			y, err := jsonArg(c)
			if err != nil {
				return types.Null, err
			}
			return jsonD(jsonConcat(x, y)), nil
		}), nil
	}}, nil
}
