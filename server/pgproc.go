package server

import (
	"strconv"

	"sluice/exec/eval"
	"sluice/sql/parser"
	"sluice/sql/types"
	"sluice/storage"
)

// This file defines pg_proc (the built-in functions, aggregates and
// set-returning functions of exec/eval, in pg_catalog, and the user's SQL
// functions, in public), pg_language and pg_sequence, as PostgreSQL 15
// has them: what psql's \df and pgcli's completion read.

// oidFirstProc numbers the built-in functions (in eval.Builtins' order,
// stable for a given binary); user functions have their catalog oids.
const oidFirstProc = 1 << 29

// Languages (PostgreSQL's fixed oids).
const (
	oidLangInternal = 12
	oidLangSQL      = 14
)

// oidList prints oids as pg_proc's oidvector columns hold them.
func oidList(oids []uint32) []string {
	out := make([]string, len(oids))
	for i, o := range oids {
		out[i] = strconv.FormatUint(uint64(o), 10)
	}
	return out
}

func init() {
	add := func(name string, oid int64, cols string, rows func(env *sysEnv) []types.Row) {
		addSys(&sysTable{schema: "pg_catalog", name: name, oid: oid, kind: 'r', cols: colSpec(cols), rows: rows})
	}
	add("pg_proc", 1255, "oid:oid proname:name pronamespace:oid proowner:oid prolang:oid procost:float4 "+
		"prorows:float4 provariadic:oid prosupport:oid prokind:char prosecdef:bool proleakproof:bool "+
		"proisstrict:bool proretset:bool provolatile:char proparallel:char pronargs:int2 pronargdefaults:int2 "+
		"prorettype:oid proargtypes:oidvector proallargtypes:text[] proargmodes:text[] proargnames:text[] "+
		"proargdefaults:text protrftypes:text[] prosrc:text probin:text prosqlbody:text proconfig:text[] proacl:text[]",
		func(env *sysEnv) []types.Row {
			var out []types.Row
			for i, b := range eval.Builtins() {
				variadic := int64(0)
				if b.Variadic && len(b.Args) > 0 {
					variadic = int64(b.Args[len(b.Args)-1])
				}
				rows := float64(0)
				if b.RetSet {
					rows = 1000
				}
				vol := "i"
				if b.Volatile {
					vol = "s"
				}
				out = append(out, mkRow(int64(oidFirstProc+i), b.Name, oidPgCatalog, oidOwner, oidLangInternal, float64(1),
					rows, variadic, 0, string(b.Kind), false, false,
					true, b.RetSet, vol, "s", len(b.Args), 0,
					int64(b.Ret), oidList(b.Args), nil, nil, nil,
					nil, nil, b.Name, nil, nil, nil, nil))
			}
			for _, f := range pgTypeFuncs {
				out = append(out, mkRow(f.oid, f.name, oidPgCatalog, oidOwner, oidLangInternal, float64(1),
					float64(0), 0, 0, "f", false, false,
					true, false, f.volatile, "s", len(f.args), 0,
					f.ret, oidList(f.args), nil, nil, nil,
					nil, nil, f.name, nil, nil, nil, nil))
			}
			for _, e := range env.entries {
				if e.Kind != kindFunction {
					continue
				}
				st, err := parser.ParseOne(e.SQL)
				if err != nil {
					continue
				}
				f, ok := st.(*parser.CreateFunction)
				if !ok {
					continue
				}
				var argTypes []uint32
				var argNames []string
				named := false
				for _, a := range f.Args {
					argTypes = append(argTypes, a.Type.OID())
					argNames = append(argNames, a.Name)
					named = named || a.Name != ""
				}
				var names any
				if named {
					names = argNames
				}
				lang := int64(oidLangSQL)
				nsp, bare := schemaOID(env, e.Name)
				out = append(out, mkRow(relOID(e), bare, nsp, oidOwner, lang, float64(100),
					float64(0), 0, 0, "f", false, false,
					false, false, "v", "u", len(f.Args), 0,
					int64(f.Returns.OID()), oidList(argTypes), nil, nil, names,
					nil, nil, f.Body, nil, nil, nil, nil))
			}
			return out
		})
	add("pg_language", 2612, "oid:oid lanname:name lanowner:oid lanispl:bool lanpltrusted:bool "+
		"lanplcallfoid:oid laninline:oid lanvalidator:oid lanacl:text[]", func(*sysEnv) []types.Row {
		return []types.Row{
			mkRow(oidLangInternal, "internal", oidOwner, false, false, 0, 0, 2246, nil),
			mkRow(13, "c", oidOwner, false, false, 0, 0, 2247, nil),
			mkRow(oidLangSQL, "sql", oidOwner, false, true, 0, 0, 2248, nil),
		}
	})
	add("pg_depend", 2608, "classid:oid objid:oid objsubid:int4 refclassid:oid refobjid:oid refobjsubid:int4 deptype:char",
		seqDependRows)
	add("pg_sequence", 2224, "seqrelid:oid seqtypid:oid seqstart:int8 seqincrement:int8 seqmax:int8 "+
		"seqmin:int8 seqcache:int8 seqcycle:bool", func(env *sysEnv) []types.Row {
		var out []types.Row
		for _, e := range env.entries {
			if e.Kind == kindSequence && e.Sequence != nil {
				q := e.Sequence
				out = append(out, mkRow(relOID(e), int64(types.T{Fam: types.Family(q.Fam)}.OID()), q.Start, q.Increment,
					q.Max, q.Min, int64(1), q.Cycle))
			}
		}
		return out
	})
}

// seqDependRows are pg_depend's rows: a SERIAL column's sequence depends
// on its column automatically ('a'), an identity column's internally
// ('i'), as pg_get_serial_sequence finds them.
func seqDependRows(env *sysEnv) []types.Row {
	byID := map[uint64]*storage.CatalogEntry{}
	for _, e := range env.entries {
		byID[e.ID] = e
	}
	var out []types.Row
	for _, e := range env.entries {
		if e.Kind != kindSequence || e.Sequence == nil || e.Sequence.OwnedBy == 0 {
			continue
		}
		t := byID[e.Sequence.OwnedBy]
		if t == nil {
			continue
		}
		for i, c := range t.Columns {
			if c.Name != e.Sequence.OwnedCol {
				continue
			}
			deptype := "a"
			if c.Identity != "" {
				deptype = "i"
			}
			out = append(out, mkRow(oidPgClass, relOID(e), 0, oidPgClass, relOID(t), i+1, deptype))
		}
	}
	return out
}

// oidPgClass is pg_class's oid, pg_depend's classid of relations.
const oidPgClass = 1259
