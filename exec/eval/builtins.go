package eval

import (
	"sort"
	"strings"

	"sluice/sql/types"
)

// Builtin is one overload of a built-in function as pg_proc lists it.
type Builtin struct {
	Name     string
	Args     []uint32 // argument type oids (pseudo-types: 2276 "any", 2283 anyelement)
	Ret      uint32
	RetSet   bool // a set-returning function
	Variadic bool // the last argument repeats
	Kind     byte // pg_proc.prokind: 'f' function, 'a' aggregate, 'w' window
	Volatile bool
}

// Pseudo-type oids pg_proc uses for polymorphic arguments.
const (
	OidAny         = 2276
	OidAnyElement  = 2283
	OidAnyArray    = 2277
	OidRecord      = 2249
	OidAnyNonArray = 2776
)

// builtinAggs are the aggregate and window functions the planner knows, with
// the argument and result oids pg_proc shows for them.
var builtinAggs = []Builtin{
	{Name: "count", Ret: 20, Kind: 'a'},
	{Name: "count", Args: []uint32{OidAny}, Ret: 20, Kind: 'a'},
	{Name: "sum", Args: []uint32{20}, Ret: 1700, Kind: 'a'},
	{Name: "sum", Args: []uint32{23}, Ret: 20, Kind: 'a'},
	{Name: "sum", Args: []uint32{1700}, Ret: 1700, Kind: 'a'},
	{Name: "sum", Args: []uint32{701}, Ret: 701, Kind: 'a'},
	{Name: "avg", Args: []uint32{20}, Ret: 1700, Kind: 'a'},
	{Name: "avg", Args: []uint32{23}, Ret: 1700, Kind: 'a'},
	{Name: "avg", Args: []uint32{1700}, Ret: 1700, Kind: 'a'},
	{Name: "avg", Args: []uint32{701}, Ret: 701, Kind: 'a'},
	{Name: "min", Args: []uint32{OidAnyNonArray}, Ret: OidAnyNonArray, Kind: 'a'},
	{Name: "max", Args: []uint32{OidAnyNonArray}, Ret: OidAnyNonArray, Kind: 'a'},
	{Name: "string_agg", Args: []uint32{25, 25}, Ret: 25, Kind: 'a'},
	{Name: "array_agg", Args: []uint32{OidAnyNonArray}, Ret: OidAnyArray, Kind: 'a'},
	{Name: "bool_and", Args: []uint32{16}, Ret: 16, Kind: 'a'},
	{Name: "bool_or", Args: []uint32{16}, Ret: 16, Kind: 'a'},
	{Name: "every", Args: []uint32{16}, Ret: 16, Kind: 'a'},
	{Name: "jsonb_agg", Args: []uint32{OidAnyElement}, Ret: 3802, Kind: 'a'},
	{Name: "jsonb_object_agg", Args: []uint32{OidAny, OidAny}, Ret: 3802, Kind: 'a'},
	{Name: "row_number", Ret: 20, Kind: 'w'},
	{Name: "rank", Ret: 20, Kind: 'w'},
	{Name: "dense_rank", Ret: 20, Kind: 'w'},
	{Name: "lag", Args: []uint32{OidAnyElement}, Ret: OidAnyElement, Kind: 'w'},
	{Name: "lead", Args: []uint32{OidAnyElement}, Ret: OidAnyElement, Kind: 'w'},
	{Name: "first_value", Args: []uint32{OidAnyElement}, Ret: OidAnyElement, Kind: 'w'},
	{Name: "last_value", Args: []uint32{OidAnyElement}, Ret: OidAnyElement, Kind: 'w'},
}

// Builtins lists the built-in functions, aggregates and set-returning
// functions in a stable order (by name, then signature), for pg_proc.
// Internal forms (names starting with "__pg_", operators, special forms)
// are left out.
func Builtins() []Builtin {
	var out []Builtin
	visible := func(name string) bool {
		if strings.HasPrefix(name, "__") || isOperator(name) {
			return false
		}
		for _, c := range name {
			if !(c == '_' || ('a' <= c && c <= 'z') || ('0' <= c && c <= '9')) {
				return false
			}
		}
		return true
	}
	oidOf := func(f types.Family) uint32 {
		if f == famAny {
			return OidAnyElement
		}
		return typeOf(f).OID()
	}
	for name, ovs := range registry {
		if !visible(name) {
			continue
		}
		for _, ov := range ovs {
			b := Builtin{Name: name, Ret: ov.ret.OID(), Variadic: ov.sig.variadic, Kind: 'f', Volatile: ov.volatile}
			if ov.retFn != nil {
				b.Ret = OidAnyElement
			}
			for _, p := range ov.sig.params {
				b.Args = append(b.Args, oidOf(p))
			}
			out = append(out, b)
		}
	}
	for name, ovs := range tableFuncs {
		for _, tf := range ovs {
			b := Builtin{Name: name, Ret: tf.cols[0].Type.OID(), RetSet: true, Kind: 'f'}
			if len(tf.cols) > 1 {
				b.Ret = OidRecord
			}
			for _, p := range tf.params {
				b.Args = append(b.Args, oidOf(p))
			}
			out = append(out, b)
		}
	}
	out = append(out, builtinAggs...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		a, b := out[i].Args, out[j].Args
		for k := 0; k < len(a) && k < len(b); k++ {
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		return len(a) < len(b)
	})
	return out
}
