package eval

import (
	"strings"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Pseudo families used only in overload signatures.
const (
	// famAny accepts a value of any type (Postgres "any" / anynonarray);
	// an unknown argument is taken as text.
	famAny types.Family = 200 + iota
)

// codeAmbiguousFunction is Postgres' ambiguous_function (42725).
const codeAmbiguousFunction pgcode.Code = "42725"

// category returns the Postgres type category (pg_type.typcategory) of f.
func category(f types.Family) byte {
	switch f {
	case types.Bool:
		return 'B'
	case types.Int2, types.Int4, types.Int8, types.Float4, types.Float8, types.Numeric, types.Oid, types.RegClass,
		types.RegType, types.RegProc, types.RegNamespace:
		return 'N'
	case types.Text, types.Varchar, types.Name:
		return 'S'
	case types.Date, types.Time, types.Timestamp, types.TimestampTZ:
		return 'D'
	case types.Interval:
		return 'T'
	case types.TextArray, types.Int2Vector, types.OidVector, types.Int2Array, types.BoolArray:
		return 'A'
	case types.Char:
		return 'Z'
	case types.Unknown:
		return 'X'
	case famAny:
		return 'P'
	}
	if types.IsElemArray(f) {
		return 'A'
	}
	return 'U'
}

// isPreferred reports whether f is the preferred type of its category
// (pg_type.typispreferred).
func isPreferred(f types.Family) bool {
	switch f {
	case types.Bool, types.Text, types.Float8, types.Oid, types.TimestampTZ, types.Interval:
		return true
	}
	return false
}

// canImplicit reports whether a value of family from may be converted to
// family to implicitly (pg_cast with castcontext 'i', restricted to the
// types Sluice has).
func canImplicit(from, to types.Family) bool {
	if from == to || from == types.Unknown || to == famAny {
		return true
	}
	// int2/int4/int8 and oid convert implicitly to every oid alias type
	// and back to oid (pg_cast: int4 -> regtype 'i', regtype -> oid 'i').
	if types.IsOidFamily(to) && to != types.Oid && (from == types.Int2 || from == types.Int4 || from == types.Int8 || from == types.Oid) {
		return true
	}
	if types.IsOidFamily(from) && from != types.Oid && to == types.Oid {
		return true
	}
	if _, typed := types.ArrayElem(from); (types.IsVector(from) || typed) && to == types.TextArray {
		return true // Sluice's vectors, smallint[] and boolean[] are text[] values
	}
	switch from {
	case types.Int2:
		switch to {
		case types.Int4, types.Int8, types.Float4, types.Float8, types.Numeric, types.Oid, types.RegClass:
			return true
		}
	case types.Int4:
		switch to {
		case types.Int8, types.Float4, types.Float8, types.Numeric, types.Oid, types.RegClass:
			return true
		}
	case types.Int8:
		switch to {
		case types.Float4, types.Float8, types.Numeric, types.Oid, types.RegClass:
			return true
		}
	case types.Float4:
		return to == types.Float8
	case types.Numeric:
		return to == types.Float4 || to == types.Float8
	case types.Oid:
		return to == types.RegClass
	case types.RegClass:
		return to == types.Oid
	case types.Text:
		return to == types.Varchar || to == types.Name
	case types.Varchar:
		return to == types.Text || to == types.Name
	case types.Name, types.Char:
		return to == types.Text
	case types.Date:
		return to == types.Timestamp || to == types.TimestampTZ
	case types.Timestamp:
		return to == types.TimestampTZ
	case types.Time:
		return to == types.Interval
	}
	return false
}

// sameRepr reports whether a value of family from is already a valid value
// of family to with no conversion (binary-coercible widening).
func sameRepr(from, to types.Family) bool {
	if from == to {
		return true
	}
	switch {
	case isIntFam(from) && isIntFam(to):
		// Widening or oid/regclass relabelling: same KInt storage. (Only
		// implicit, hence range-safe, directions reach here.)
		return true
	case from == types.Float4 && to == types.Float8:
		return true
	case category(from) == 'S' && category(to) == 'S', from == types.Char && to == types.Text:
		return true
	case types.IsVector(from) && to == types.TextArray:
		return true
	case from == types.Int2Array && to == types.TextArray, from == types.BoolArray && to == types.TextArray:
		return true
	}
	return false
}

func isIntFam(f types.Family) bool {
	switch f {
	case types.Int2, types.Int4, types.Int8, types.Oid, types.RegClass, types.RegType, types.RegProc, types.RegNamespace:
		return true
	}
	return false
}

// typeOf returns the plain type of family f.
func typeOf(f types.Family) types.T {
	if f == types.Numeric {
		return types.TNumeric
	}
	return types.T{Fam: f}
}

// typeName is the name Postgres uses for t in error messages (no typmod).
func typeName(t types.T) string {
	return typeOf(t.Fam).String()
}

// castTarget returns the type an argument of type from must be cast to in
// order to fill a parameter of family to: from itself when no conversion
// is needed.
func castTarget(from types.T, to types.Family) types.T {
	if to == famAny {
		if from.Fam == types.Unknown {
			return types.TText
		}
		return from
	}
	if from.Fam != types.Unknown && sameRepr(from.Fam, to) {
		return from
	}
	return typeOf(to)
}

// sig is one overload's parameter list.
type sig struct {
	params   []types.Family
	variadic bool // the last parameter repeats (zero or more times)
}

// expand returns the parameter list of s for n arguments, or nil when s
// does not take n arguments (a function of no arguments gives an empty,
// non-nil list).
func (s sig) expand(n int) []types.Family {
	if !s.variadic {
		if len(s.params) != n {
			return nil
		}
		if s.params == nil {
			return []types.Family{}
		}
		return s.params
	}
	// VARIADIC takes at least one argument, as in Postgres.
	fixed := len(s.params) - 1
	if n < len(s.params) {
		return nil
	}
	out := make([]types.Family, n)
	copy(out, s.params[:fixed])
	for i := fixed; i < n; i++ {
		out[i] = s.params[fixed]
	}
	return out
}

// selectCandidate picks among candidate parameter lists for args following
// Postgres' operator and function resolution (parse_oper.c, parse_func.c):
// exact match, then implicit-coercion filtering, then most exact matches,
// most preferred types, unknown-argument category heuristics. It returns the
// index of the winner, or -1 and whether the failure is an ambiguity.
func selectCandidate(cands [][]types.Family, args []types.T, binaryOp bool) (int, bool) {
	n := len(args)
	// 1. Exact match; for a binary operator with one unknown side assume it
	// has the other side's type.
	look := make([]types.Family, n)
	for i, a := range args {
		look[i] = a.Fam
	}
	if binaryOp && n == 2 {
		if look[0] == types.Unknown && look[1] != types.Unknown {
			look[0] = look[1]
		} else if look[1] == types.Unknown && look[0] != types.Unknown {
			look[1] = look[0]
		}
	}
	for ci, c := range cands {
		if c == nil {
			continue
		}
		ok := true
		for i := range c {
			if c[i] != look[i] && !(c[i] == famAny && look[i] != types.Unknown) {
				ok = false
				break
			}
		}
		if ok {
			return ci, false
		}
	}
	// 2. Keep the candidates every argument can be coerced to.
	var live []int
	for ci, c := range cands {
		if c == nil {
			continue
		}
		ok := true
		for i := range c {
			if !canImplicit(args[i].Fam, c[i]) {
				ok = false
				break
			}
		}
		if ok {
			live = append(live, ci)
		}
	}
	if len(live) == 0 {
		return -1, false
	}
	if len(live) == 1 {
		return live[0], false
	}
	nunknown := 0
	for _, a := range args {
		if a.Fam == types.Unknown {
			nunknown++
		}
	}
	// 3a. Most exact matches on known arguments.
	live = keepMax(live, func(ci int) int {
		m := 0
		for i, a := range args {
			if a.Fam != types.Unknown && cands[ci][i] == a.Fam {
				m++
			}
		}
		return m
	})
	if len(live) == 1 {
		return live[0], false
	}
	// 3b. Most exact-or-preferred matches where coercion is needed.
	live = keepMax(live, func(ci int) int {
		m := 0
		for i, a := range args {
			if a.Fam != types.Unknown {
				p := cands[ci][i]
				if p == a.Fam || isPreferred(p) {
					m++
				}
			}
		}
		return m
	})
	if len(live) == 1 {
		return live[0], false
	}
	if nunknown == 0 {
		return -1, true
	}
	// 3c. Unknown arguments: at each unknown position pick the string
	// category if any candidate takes it, else the one category all agree
	// on (else give up on this step); note whether a preferred type is on
	// offer; then drop candidates of the wrong category or, where a
	// preferred type is on offer, of a non-preferred type.
	slotCat := make([]byte, n)
	slotPref := make([]bool, n)
	resolved := true
	for i, a := range args {
		if a.Fam != types.Unknown {
			continue
		}
		conflict := false
		for _, ci := range live {
			p := cands[ci][i]
			pc, pp := category(p), isPreferred(p)
			switch {
			case slotCat[i] == 0:
				slotCat[i], slotPref[i] = pc, pp
			case pc == slotCat[i]:
				slotPref[i] = slotPref[i] || pp
			case pc == 'S':
				slotCat[i], slotPref[i] = pc, pp
			default:
				conflict = true
			}
		}
		if conflict && slotCat[i] != 'S' {
			resolved = false
			break
		}
	}
	if resolved {
		var keep []int
		for _, ci := range live {
			ok := true
			for i, a := range args {
				if a.Fam != types.Unknown {
					continue
				}
				p := cands[ci][i]
				if category(p) != slotCat[i] || (slotPref[i] && !isPreferred(p)) {
					ok = false
					break
				}
			}
			if ok {
				keep = append(keep, ci)
			}
		}
		if len(keep) == 1 {
			return keep[0], false
		}
		if len(keep) > 0 {
			live = keep
		}
	}
	// 3d. If the known arguments all share one type, assume the unknowns
	// have it too.
	if nunknown < n {
		var known types.Family = types.Unknown
		same := true
		for _, a := range args {
			if a.Fam == types.Unknown {
				continue
			}
			if known == types.Unknown {
				known = a.Fam
			} else if a.Fam != known {
				same = false
			}
		}
		if same {
			var keep []int
			for _, ci := range live {
				ok := true
				for i, a := range args {
					if a.Fam == types.Unknown && !canImplicit(known, cands[ci][i]) {
						ok = false
						break
					}
				}
				if ok {
					keep = append(keep, ci)
				}
			}
			if len(keep) == 1 {
				return keep[0], false
			}
		}
	}
	return -1, true
}

func keepMax(live []int, score func(int) int) []int {
	best := -1
	var out []int
	for _, ci := range live {
		s := score(ci)
		switch {
		case s > best:
			best = s
			out = append(out[:0], ci)
		case s == best:
			out = append(out, ci)
		}
	}
	return out
}

// CommonType returns the type that values of the given types are all
// converted to when they meet in one CASE, COALESCE, GREATEST, IN list or
// UNION column, following Postgres' select_common_type: unknowns (untyped
// literals and NULLs) take the others' type and default to text; the known
// types must share a category; within it the preferred type, or the type
// the others can be implicitly converted to, wins. Mismatches are 42804.
func CommonType(ts []types.T) (types.T, error) {
	return CommonTypeFor("", ts)
}

// CommonTypeFor is CommonType with the SQL construct ("CASE", "COALESCE",
// "UNION", ...) named in the error message as Postgres does.
func CommonTypeFor(construct string, ts []types.T) (types.T, error) {
	prefix := ""
	if construct != "" {
		prefix = construct + " "
	}
	var p types.T
	found := false
	allSame := true
	for _, t := range ts {
		if t.Fam == types.Unknown {
			continue
		}
		if !found {
			p, found = t, true
			continue
		}
		if t != p {
			allSame = false
		}
	}
	if !found {
		return types.TText, nil
	}
	if allSame {
		return p, nil
	}
	pcat := category(p.Fam)
	for _, t := range ts {
		if t.Fam == types.Unknown || t.Fam == p.Fam {
			continue
		}
		if category(t.Fam) != pcat {
			return types.TUnknown, pgerror.New(pgcode.DatatypeMismatch,
				"%stypes %s and %s cannot be matched", prefix, typeName(p), typeName(t))
		}
		if !isPreferred(p.Fam) && canImplicit(p.Fam, t.Fam) && !canImplicit(t.Fam, p.Fam) {
			p = t
		}
	}
	// Inputs of different types lose their modifiers (select_common_typmod).
	out := typeOf(p.Fam)
	for _, t := range ts {
		if t.Fam != types.Unknown && !canImplicit(t.Fam, out.Fam) {
			return types.TUnknown, pgerror.New(codeCannotCoerce,
				"%scould not convert type %s to %s", prefix, typeName(t), typeName(out))
		}
	}
	return out, nil
}

// codeCannotCoerce is Postgres' cannot_coerce (42846).
const codeCannotCoerce pgcode.Code = "42846"

// normName lower-cases a function name and strips a pg_catalog. prefix.
func normName(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.TrimPrefix(n, "pg_catalog.")
	if alias, ok := aliases[n]; ok {
		return alias
	}
	return n
}

// aliases maps alternative spellings to the canonical name.
var aliases = map[string]string{
	"!=":                    "<>",
	"~~":                    "like",
	"!~~":                   "not like",
	"~~*":                   "ilike",
	"!~~*":                  "not ilike",
	"~*":                    "__pg_regexi",
	"!~":                    "__pg_not_regex",
	"!~*":                   "__pg_not_regexi",
	"ceiling":               "ceil",
	"pow":                   "power",
	"char_length":           "length",
	"character_length":      "length",
	"substr":                "substring",
	"strpos":                "position",
	"trim":                  "btrim",
	"current_timestamp":     "now",
	"transaction_timestamp": "now",
	"statement_timestamp":   "now",
	"clock_timestamp":       "now",
	"session_user":          "current_user",
	"user":                  "current_user",
	"current_role":          "current_user",
	"getpgusername":         "current_user",
	"is distinct from":      "__pg_distinct",
	"is not distinct from":  "__pg_not_distinct",
	"isnull":                "is null",
	"notnull":               "is not null",
	"date_part_numeric":     "__pg_extract",
	"extract":               "__pg_extract",
	"u-":                    "neg",
	"|/":                    "sqrt",
	"@":                     "abs",
}

// operatorNames maps internal names of operators to their SQL symbol in
// error messages; a name absent here is reported as a function.
var operatorNames = map[string]string{
	"+": "+", "-": "-", "*": "*", "/": "/", "%": "%", "^": "^",
	"=": "=", "<>": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">=",
	"||": "||", "&": "&", "|": "|", "#": "#", "<<": "<<", ">>": ">>",
	"like": "~~", "not like": "!~~", "ilike": "~~*", "not ilike": "!~~*",
	"__pg_regex": "~", "__pg_regexi": "~*", "__pg_not_regex": "!~", "__pg_not_regexi": "!~*",
	"neg": "-", "~": "~", "__pg_distinct": "=", "__pg_not_distinct": "=",
}

func isOperator(name string) bool {
	_, ok := operatorNames[name]
	return ok
}

// notFound builds the 42883 error for name applied to args.
func notFound(name string, args []types.T) error {
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = typeName(a)
	}
	if sym, ok := operatorNames[name]; ok {
		msg := ""
		switch len(args) {
		case 1:
			msg = sym + " " + names[0]
		case 2:
			msg = names[0] + " " + sym + " " + names[1]
		default:
			msg = sym + "(" + strings.Join(names, ", ") + ")"
		}
		return pgerror.New(pgcode.UndefinedFunction, "operator does not exist: %s", msg).
			WithHint("No operator matches the given name and argument types. You might need to add explicit type casts.")
	}
	return pgerror.New(pgcode.UndefinedFunction, "function %s(%s) does not exist", name, strings.Join(names, ", ")).
		WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
}

// notUnique builds the 42725 error for an ambiguous call.
func notUnique(name string, args []types.T) error {
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = typeName(a)
	}
	if sym, ok := operatorNames[name]; ok {
		msg := ""
		if len(args) == 1 {
			msg = sym + " " + names[0]
		} else {
			msg = names[0] + " " + sym + " " + names[1]
		}
		return pgerror.New(codeAmbiguousFunction, "operator is not unique: %s", msg).
			WithHint("Could not choose a best candidate operator. You might need to add explicit type casts.")
	}
	return pgerror.New(codeAmbiguousFunction, "function %s(%s) is not unique", name, strings.Join(names, ", ")).
		WithHint("Could not choose a best candidate function. You might need to add explicit type casts.")
}

// resolution is the outcome of resolving a call: its result type, the
// per-argument cast targets and how to build the evaluator.
type resolution struct {
	ret      types.T
	casts    []types.T
	build    builder
	volatile bool // reads the Context at run time: never constant-folded
}

// ResolveFunc chooses the overload of the operator or function name for
// arguments of the given types. It returns the result type and, for each
// argument, the type it must be cast to (args[i] itself when no conversion
// is needed). Names are those of spec.Func (see the package documentation);
// a "pg_catalog." prefix is ignored. Unknown names and argument types no
// overload accepts are 42883, ambiguous calls 42725, mismatched branch
// types of CASE-like forms 42804.
func ResolveFunc(name string, args []types.T) (ret types.T, argCasts []types.T, err error) {
	r, err := resolve(normName(name), args)
	if err != nil {
		return types.TUnknown, nil, err
	}
	return r.ret, r.casts, nil
}

func resolve(name string, args []types.T) (*resolution, error) {
	if sp, ok := specials[name]; ok {
		return sp(name, args)
	}
	ovs, ok := registry[name]
	if !ok {
		return nil, notFound(name, args)
	}
	cands := make([][]types.Family, len(ovs))
	for i, ov := range ovs {
		cands[i] = ov.sig.expand(len(args))
	}
	ci, ambiguous := selectCandidate(cands, args, isOperator(name) && len(args) == 2)
	if ci < 0 {
		if ambiguous {
			return nil, notUnique(name, args)
		}
		return nil, notFound(name, args)
	}
	ov := ovs[ci]
	casts := make([]types.T, len(args))
	for i, p := range cands[ci] {
		casts[i] = castTarget(args[i], p)
	}
	ret := ov.ret
	if ov.retFn != nil {
		ret = ov.retFn(casts)
	}
	return &resolution{ret: ret, casts: casts, build: ov.build, volatile: ov.volatile}, nil
}

// overload is one signature of a registered function.
type overload struct {
	sig      sig
	ret      types.T
	retFn    func(args []types.T) types.T // overrides ret when set
	build    builder
	volatile bool
}

// registry holds the table-resolved functions and operators.
var registry = map[string][]*overload{}

// specials holds the forms with their own resolution rules (polymorphic
// functions, logic, CASE-like forms).
var specials = map[string]func(name string, args []types.T) (*resolution, error){}

func reg(name string, params []types.Family, ret types.T, b builder) *overload {
	ov := &overload{sig: sig{params: params}, ret: ret, build: b}
	registry[name] = append(registry[name], ov)
	return ov
}

func regVariadic(name string, params []types.Family, ret types.T, b builder) *overload {
	ov := &overload{sig: sig{params: params, variadic: true}, ret: ret, build: b}
	registry[name] = append(registry[name], ov)
	return ov
}

// fams is shorthand for a parameter list.
func fams(fs ...types.Family) []types.Family { return fs }

// IsBuiltin reports whether name (a "pg_catalog." prefix ignored) is a
// built-in function, aggregate or set-returning function of any signature.
// The planner uses it to let built-ins win over user functions of the same
// name, as if pg_catalog came first on every search path.
func IsBuiltin(name string) bool {
	name = normName(name)
	if _, ok := registry[name]; ok {
		return true
	}
	if _, ok := specials[name]; ok {
		return true
	}
	if _, ok := tableFuncs[name]; ok {
		return true
	}
	for _, b := range builtinAggs {
		if b.Name == name {
			return true
		}
	}
	return false
}
