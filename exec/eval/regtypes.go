package eval

import (
	"strings"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file holds the run-time halves of the oid alias types (the planner
// binds the rest, see planner/regtypes.go): __pg_regtypein(text) is
// regtypein; __pg_regin_regclass(text, names), __pg_regin_regproc and
// __pg_regin_regnamespace look a name up in a text[] of "name=oid"
// entries the planner took from the catalog; __pg_regout(value, name)
// gives a reg* value its name for output.

func init() {
	reg("__pg_regtypein", fams(types.Text), types.TRegType, build1(func(a types.Datum) (types.Datum, error) {
		return types.RegTypeIn(a.S)
	}))
	for _, t := range []types.T{types.TRegClass, types.TRegProc, types.TRegNamespace} {
		t := t
		reg("__pg_regin_"+t.String(), fams(types.Text, types.TextArray), t, build2(func(a, names types.Datum) (types.Datum, error) {
			return regIn(a.S, names, t)
		}))
	}
	specials["__pg_regout"] = func(name string, args []types.T) (*resolution, error) {
		if len(args) != 2 || !types.IsOidFamily(args[0].Fam) {
			return nil, notFound(name, args)
		}
		return &resolution{ret: args[0], casts: []types.T{args[0], types.TText}, build: func(b *bctx) (Fn, error) {
			x, y := b.fn(0), b.fn(1)
			return func(row types.Row) (types.Datum, error) {
				v, err := x(row)
				if err != nil || v.K == types.KNull {
					return types.Null, err
				}
				n, err := y(row)
				if err != nil {
					return types.Null, err
				}
				if n.K == types.KNull {
					return v, nil
				}
				return types.NewRegName(v.I, n.S), nil
			}, nil
		}}, nil
	}
}

// regIn resolves s (oid digits, a name, for relations optionally
// schema-qualified, quoted as identifiers are) among names.
func regIn(s string, names types.Datum, t types.T) (types.Datum, error) {
	if d, err := types.ParseText(s, types.TOid); err == nil {
		return d, nil
	}
	key := unquoteQualified(s)
	var found []string
	for _, e := range names.Elems() {
		n, oid, ok := strings.Cut(e.S, "=")
		if ok && n == key {
			found = append(found, oid)
		}
	}
	switch {
	case len(found) == 1:
		return types.ParseText(found[0], types.TOid)
	case len(found) > 1 && t.Fam == types.RegProc:
		return types.Null, pgerror.New(codeAmbiguousFunction, "more than one function named \"%s\"", strings.TrimSpace(s))
	case len(found) > 1:
		return types.ParseText(found[0], types.TOid)
	}
	switch t.Fam {
	case types.RegProc:
		return types.Null, pgerror.New(pgcode.UndefinedFunction, "function \"%s\" does not exist", strings.TrimSpace(s))
	case types.RegNamespace:
		return types.Null, pgerror.New("3F000", "schema \"%s\" does not exist", key)
	}
	return types.Null, pgerror.New(pgcode.UndefinedTable, "relation \"%s\" does not exist", strings.TrimSpace(s))
}

// QualifiedNameParts splits a possibly qualified name as PostgreSQL reads
// identifiers: unquoted parts lower-cased, "quoted" parts kept.
func QualifiedNameParts(s string) []string {
	var parts []string
	s = strings.TrimSpace(s)
	for len(s) > 0 {
		var part string
		if s[0] == '"' {
			var sb strings.Builder
			i := 1
			for i < len(s) {
				if s[i] == '"' {
					if i+1 < len(s) && s[i+1] == '"' {
						sb.WriteByte('"')
						i += 2
						continue
					}
					break
				}
				sb.WriteByte(s[i])
				i++
			}
			part, s = sb.String(), s[min(i+1, len(s)):]
		} else {
			j := strings.IndexByte(s, '.')
			if j < 0 {
				j = len(s)
			}
			part, s = strings.ToLower(strings.TrimSpace(s[:j])), s[j:]
		}
		parts = append(parts, part)
		s = strings.TrimPrefix(strings.TrimSpace(s), ".")
	}
	return parts
}

// unquoteQualified is the name's parts (QualifiedNameParts) joined by ".".
func unquoteQualified(s string) string {
	return strings.Join(QualifiedNameParts(s), ".")
}

func init() {
	// __pg_regtype_names(oids text[]) is oids::regtype[] in Sluice, whose
	// arrays are text[]: each element becomes its type's name.
	reg("__pg_regtype_names", fams(types.TextArray), types.TTextArray, build1(func(a types.Datum) (types.Datum, error) {
		out := types.Datum{K: types.KArray, A: types.NewElems(make([]types.Datum, len(a.Elems())))}
		for i, e := range a.Elems() {
			if e.K == types.KNull {
				out.Elems()[i] = e
				continue
			}
			d, err := types.ParseText(e.S, types.TOid)
			if err != nil {
				return types.Null, err
			}
			out.Elems()[i] = str(formatType(d.I, 0, false))
		}
		return out, nil
	}))
}
