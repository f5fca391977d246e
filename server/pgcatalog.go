package server

import (
	"hash/fnv"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"sluice/sql/types"
	"sluice/storage"
)

// This file defines the pg_catalog relations (see system.go): their
// columns (the subset of Postgres 15's that clients read, with Postgres'
// names and types) and how their rows follow from Sluice's catalog.

// userRel is one of Sluice's objects as pg_class shows it.
type userRel struct {
	e    *storage.CatalogEntry
	oid  int64
	kind string // relkind
}

// userRels returns the objects of env's catalog with their pg_class kind.
func userRels(env *sysEnv) []userRel {
	out := make([]userRel, 0, len(env.entries))
	for _, e := range env.entries {
		kind := ""
		switch e.Kind {
		case kindTable:
			kind = "r"
		case kindMView:
			kind = "m"
		case kindView:
			kind = "v"
		case kindSource, kindSink:
			kind = "f"
		case kindSequence:
			kind = "S"
		default:
			continue
		}
		out = append(out, userRel{e: e, oid: relOID(e), kind: kind})
	}
	return out
}

// pkey is a table's primary key as pg_class, pg_index, pg_constraint and
// pg_indexes show it: a unique btree index NAME_pkey and its constraint.
type pkey struct {
	oid, conOID int64
	name        string
	attnums     []string // indkey, conkey
	cols        []string
}

// pkeyOf returns the primary key of a table, if it has one.
func pkeyOf(r userRel) (pkey, bool) {
	if r.kind != "r" || len(r.e.Key) == 0 {
		return pkey{}, false
	}
	k := pkey{oid: oidFirstPkey + int64(r.e.ID), conOID: oidFirstConstraint + int64(r.e.ID), name: r.e.Name + "_pkey"}
	for _, c := range r.e.Key {
		k.attnums = append(k.attnums, strconv.Itoa(c+1))
		k.cols = append(k.cols, r.e.Columns[c].Name)
	}
	return k, true
}

// nsOID returns the oid of a system relation's schema.
func nsOID(schema string) int64 {
	if schema == "information_schema" {
		return oidInfoSchema
	}
	if schema == "sluice_catalog" {
		return oidSluiceCatalog
	}
	return oidPgCatalog
}

// typeInfo is one of Sluice's types and its pg_type.typname (pgtype.go
// has pg_type's rows).
type typeInfo struct {
	t    types.T
	name string // typname
}

// pgTypes lists every type Sluice has, in oid order.
var pgTypes = []typeInfo{
	{types.TBool, "bool"},
	{types.TBytea, "bytea"},
	{types.TChar, "char"},
	{types.TName, "name"},
	{types.TInt8, "int8"},
	{types.TInt2, "int2"},
	{types.TInt4, "int4"},
	{types.TRegProc, "regproc"},
	{types.TText, "text"},
	{types.TOid, "oid"},
	{types.TFloat4, "float4"},
	{types.TFloat8, "float8"},
	{types.TBoolArray, "_bool"},
	{types.TByteaArray, "_bytea"},
	{types.TInt2Array, "_int2"},
	{types.TInt4Array, "_int4"},
	{types.TTextArray, "_text"},
	{types.TVarcharArray, "_varchar"},
	{types.TInt8Array, "_int8"},
	{types.TFloat4Array, "_float4"},
	{types.TFloat8Array, "_float8"},
	{types.TVarchar, "varchar"},
	{types.TDate, "date"},
	{types.TTime, "time"},
	{types.TTimestamp, "timestamp"},
	{types.TTsArray, "_timestamp"},
	{types.TDateArray, "_date"},
	{types.TTimeArray, "_time"},
	{types.TTimestampTZ, "timestamptz"},
	{types.TTstzArray, "_timestamptz"},
	{types.TInterval, "interval"},
	{types.TIntervalArr, "_interval"},
	{types.TNumericArray, "_numeric"},
	{types.TNumeric, "numeric"},
	{types.TRegClass, "regclass"},
	{types.TRegType, "regtype"},
	{types.TUUID, "uuid"},
	{types.TUUIDArray, "_uuid"},
	{types.TJSONB, "jsonb"},
	{types.TJSONBArray, "_jsonb"},
	{types.TRegNamespace, "regnamespace"},
}

// typCollation is pg_type.typcollation: the default collation for the
// collatable types.
func typCollation(t types.T) int64 {
	switch t.Fam {
	case types.Text, types.Varchar, types.TextArray, types.VarcharArray:
		return 100
	case types.Name:
		return 950
	}
	return 0
}

// connectorOID returns the oid of the foreign server standing for a
// connector: stable across restarts and catalog changes.
func connectorOID(conn string) int64 {
	known := []string{"blackhole", "datagen", "file", "kafka", "nexmark", "postgres", "redis", "socket"}
	for i, k := range known {
		if k == conn {
			return oidFirstServer + int64(i)
		}
	}
	h := fnv.New32a()
	h.Write([]byte(conn))
	return oidFirstServer + 64 + int64(h.Sum32()%1000)
}

// ftOptions returns a source's or sink's options but connector (its
// server), as "key=value", sorted.
func ftOptions(e *storage.CatalogEntry) []string {
	var out []string
	for k, v := range redactedOptions(e) {
		if k != "connector" {
			out = append(out, k+"="+v)
		}
	}
	sort.Strings(out)
	return out
}

func init() {
	// Fixed-oid catalogs first; the views get oids from 12001 on.
	nextViewOID := int64(12001)
	add := func(name string, oid int64, kind byte, cols string, rows func(env *sysEnv) []types.Row) {
		if oid == 0 {
			oid = nextViewOID
			nextViewOID++
		}
		addSys(&sysTable{schema: "pg_catalog", name: name, oid: oid, kind: kind, cols: colSpec(cols), rows: rows})
	}
	none := func(*sysEnv) []types.Row { return nil }

	add("pg_namespace", 2615, 'r', "oid:oid nspname:name nspowner:oid nspacl:text[]", func(env *sysEnv) []types.Row {
		return append([]types.Row{
			mkRow(oidPgCatalog, "pg_catalog", oidOwner, nil),
			publicSchemaRow(env),
			mkRow(oidInfoSchema, "information_schema", oidOwner, nil),
			mkRow(oidSluiceCatalog, "sluice_catalog", oidOwner, nil),
		}, userSchemaRows(env)...)
	})

	add("pg_class", 1259, 'r', "oid:oid relname:name relnamespace:oid reltype:oid reloftype:oid relowner:oid relam:oid "+
		"relfilenode:oid reltablespace:oid relpages:int4 reltuples:float4 relallvisible:int4 reltoastrelid:oid "+
		"relhasindex:bool relisshared:bool relpersistence:char relkind:char relnatts:int2 relchecks:int2 "+
		"relhasrules:bool relhastriggers:bool relhassubclass:bool relrowsecurity:bool relforcerowsecurity:bool "+
		"relispopulated:bool relreplident:char relispartition:bool relrewrite:oid relacl:text[] reloptions:text[] "+
		"relpartbound:text", func(env *sysEnv) []types.Row {
		row := func(oid int64, name string, ns int64, kind string, natts int, replident string) types.Row {
			am := 0
			if kind == "i" {
				am = 403 // btree
			}
			return mkRow(oid, name, ns, 0, 0, oidOwner, am,
				0, 0, 0, float64(-1), 0, 0,
				false, false, "p", kind, natts, 0,
				false, false, false, false, false,
				true, replident, false, 0, nil, nil,
				nil)
		}
		var out []types.Row
		for _, t := range sortedSysTables() {
			out = append(out, row(t.oid, t.name, nsOID(t.schema), string(t.kind), len(t.cols), "n"))
		}
		for _, r := range userRels(env) {
			replident := "d"
			if r.kind == "v" || r.kind == "f" || r.kind == "S" {
				replident = "n"
			}
			ns, relname := schemaOID(env, r.e.Name)
			rel := row(r.oid, relname, ns, r.kind, len(r.e.Columns), replident)
			setOwnerACL(env, rel, 5, 28, r.e)
			for _, ix := range indexesOf(r) {
				rel[13] = types.NewBool(true) // relhasindex
				idx := row(ix.oid, ix.name, ns, "i", len(ix.cols), "n")
				idx[5] = rel[5] // an index belongs to its table's owner
				out = append(out, idx)
			}
			out = append(out, rel)
		}
		return out
	})

	add("pg_attribute", 1249, 'r', "attrelid:oid attname:name atttypid:oid attstattarget:int4 attlen:int2 attnum:int2 "+
		"attndims:int4 attcacheoff:int4 atttypmod:int4 attbyval:bool attalign:char attstorage:char attcompression:char "+
		"attnotnull:bool atthasdef:bool atthasmissing:bool attidentity:char attgenerated:char attisdropped:bool "+
		"attislocal:bool attinhcount:int4 attcollation:oid attacl:text[] attoptions:text[] attfdwoptions:text[]",
		func(env *sysEnv) []types.Row {
			var out []types.Row
			col := func(rel int64, i int, c types.Column, notNull bool) types.Row {
				t := c.Type
				ndims := 0
				if types.IsArray(t.Fam) {
					ndims = 1
				}
				byval := t.Size() > 0 && t.Size() <= 8
				storage := "p" // plain; variable-length types as in Postgres
				switch {
				case t.Fam == types.Numeric:
					storage = "m"
				case t.Size() < 0:
					storage = "x"
				}
				return mkRow(rel, c.Name, int64(t.OID()), -1, t.Size(), i+1,
					ndims, -1, t.Modifier(), byval, "i", storage, "",
					notNull, false, false, "", "", false,
					true, 0, typCollation(t), nil, nil, nil)
			}
			for _, t := range sortedSysTables() {
				for i, c := range t.cols {
					out = append(out, col(t.oid, i, c, false))
				}
			}
			for _, r := range userRels(env) {
				for i, c := range r.e.Columns {
					row := col(r.oid, i, types.Column{Name: c.Name, Type: c.Type()}, c.NotNull)
					setDefaultAttrs(row, c)
					out = append(out, row)
				}
				for _, ix := range indexesOf(r) {
					for i, a := range ix.attnums {
						n, _ := strconv.Atoi(a)
						cc := r.e.Columns[n-1]
						out = append(out, col(ix.oid, i, types.Column{Name: cc.Name, Type: cc.Type()}, false))
					}
				}
			}
			return out
		})

	add("pg_type", 1247, 'r', "oid:oid typname:name typnamespace:oid typowner:oid typlen:int2 typbyval:bool "+
		"typtype:char typcategory:char typispreferred:bool typisdefined:bool typdelim:char typrelid:oid "+
		"typsubscript:regproc typelem:oid typarray:oid typinput:regproc typoutput:regproc typreceive:regproc "+
		"typsend:regproc typmodin:regproc typmodout:regproc typanalyze:regproc typalign:char typstorage:char "+
		"typnotnull:bool typbasetype:oid typtypmod:int4 typndims:int4 typcollation:oid typdefaultbin:text "+
		"typdefault:text typacl:text[]", pgTypeRelRows)

	add("pg_database", 1262, 'r', "oid:oid datname:name datdba:oid encoding:int4 datlocprovider:char datistemplate:bool "+
		"datallowconn:bool datconnlimit:int4 dattablespace:oid datcollate:text datctype:text daticulocale:text "+
		"datcollversion:text datacl:text[]", func(env *sysEnv) []types.Row {
		var out []types.Row
		for _, d := range databases { // role.go
			oid := int64(oidDatabase)
			if d != env.db {
				oid = oidOtherDatabase
			}
			out = append(out, mkRow(oid, d, oidOwner, 6, "c", false, true, -1, 1663, "C", "C", nil, nil, nil))
		}
		return out
	})

	add("pg_am", 2601, 'r', "oid:oid amname:name amtype:char", func(*sysEnv) []types.Row {
		return []types.Row{mkRow(2, "heap", "t"), mkRow(403, "btree", "i")}
	})
	add("pg_index", 2610, 'r', "indexrelid:oid indrelid:oid indnatts:int2 indnkeyatts:int2 indisunique:bool "+
		"indnullsnotdistinct:bool indisprimary:bool indisexclusion:bool indimmediate:bool indisclustered:bool "+
		"indisvalid:bool indcheckxmin:bool indisready:bool indislive:bool indisreplident:bool indkey:int2vector "+
		"indcollation:oidvector indclass:oidvector indoption:int2vector indexprs:text indpred:text", func(env *sysEnv) []types.Row {
		var out []types.Row
		for _, r := range userRels(env) {
			for _, ix := range indexesOf(r) {
				zeros := make([]string, len(ix.cols))
				for i := range zeros {
					zeros[i] = "0"
				}
				out = append(out, mkRow(ix.oid, r.oid, len(ix.cols), len(ix.cols), ix.unique,
					false, ix.primary, false, true, false,
					true, false, true, true, false, ix.attnums,
					zeros, zeros, zeros, nil, nil))
			}
		}
		return out
	})
	add("pg_constraint", 2606, 'r', "oid:oid conname:name connamespace:oid contype:char condeferrable:bool "+
		"condeferred:bool convalidated:bool conrelid:oid contypid:oid conindid:oid conparentid:oid confrelid:oid "+
		"confupdtype:char confdeltype:char confmatchtype:char conislocal:bool coninhcount:int4 connoinherit:bool "+
		"conkey:int2[] confkey:int2[] conbin:text", func(env *sysEnv) []types.Row {
		var out []types.Row
		for _, r := range userRels(env) {
			if k, ok := pkeyOf(r); ok {
				out = append(out, mkRow(k.conOID, k.name, oidPublic, "p", false,
					false, true, r.oid, 0, k.oid, 0, 0,
					" ", " ", " ", true, 0, true,
					k.attnums, nil, nil))
			}
			out = append(out, constraintRows(r)...)
		}
		return out
	})
	add("pg_attrdef", 2604, 'r', "oid:oid adrelid:oid adnum:int2 adbin:text", attrdefRows)
	add("pg_collation", 3456, 'r', "oid:oid collname:name collnamespace:oid collowner:oid collprovider:char "+
		"collisdeterministic:bool collencoding:int4 collcollate:text collctype:text colliculocale:text collversion:text",
		func(*sysEnv) []types.Row {
			return []types.Row{
				mkRow(100, "default", oidPgCatalog, oidOwner, "d", true, -1, nil, nil, nil, nil),
				mkRow(950, "C", oidPgCatalog, oidOwner, "c", true, -1, "C", "C", nil, nil),
				mkRow(951, "POSIX", oidPgCatalog, oidOwner, "c", true, -1, "POSIX", "POSIX", nil, nil),
			}
		})
	// Sluice has no enum types.
	add("pg_enum", 3501, 'r', "oid:oid enumtypid:oid enumsortorder:float4 enumlabel:name", none)
	add("pg_inherits", 2611, 'r', "inhrelid:oid inhparent:oid inhseqno:int4 inhdetachpending:bool", none)
	add("pg_description", 2609, 'r', "objoid:oid classoid:oid objsubid:int4 description:text", none)
	add("pg_shdescription", 2396, 'r', "objoid:oid classoid:oid description:text", none)
	add("pg_tablespace", 1213, 'r', "oid:oid spcname:name spcowner:oid spcacl:text[] spcoptions:text[]", func(*sysEnv) []types.Row {
		return []types.Row{mkRow(1663, "pg_default", oidOwner, nil, nil), mkRow(1664, "pg_global", oidOwner, nil, nil)}
	})
	add("pg_policy", 3256, 'r', "oid:oid polname:name polrelid:oid polcmd:char polpermissive:bool polroles:text[] "+
		"polqual:text polwithcheck:text", none)
	add("pg_statistic_ext", 3381, 'r', "oid:oid stxrelid:oid stxname:name stxnamespace:oid stxowner:oid "+
		"stxstattarget:int4 stxkeys:text[] stxkind:text[] stxexprs:text", none)
	add("pg_publication", 6104, 'r', "oid:oid pubname:name pubowner:oid puballtables:bool pubinsert:bool "+
		"pubupdate:bool pubdelete:bool pubtruncate:bool pubviaroot:bool", none)
	add("pg_publication_rel", 6106, 'r', "oid:oid prpubid:oid prrelid:oid prqual:text prattrs:text[]", none)
	add("pg_publication_namespace", 6237, 'r', "oid:oid pnpubid:oid pnnspid:oid", none)
	add("pg_trigger", 2620, 'r', "oid:oid tgrelid:oid tgparentid:oid tgname:name tgfoid:oid tgtype:int2 "+
		"tgenabled:char tgisinternal:bool", none)
	add("pg_rewrite", 2618, 'r', "oid:oid rulename:name ev_class:oid ev_type:char ev_enabled:char is_instead:bool", none)
	add("pg_extension", 3079, 'r', "oid:oid extname:name extowner:oid extnamespace:oid extrelocatable:bool "+
		"extversion:text extconfig:text[] extcondition:text[]", none)
	add("pg_auth_members", 1261, 'r', "roleid:oid member:oid grantor:oid admin_option:bool", none)

	add("pg_foreign_data_wrapper", 2328, 'r', "oid:oid fdwname:name fdwowner:oid fdwhandler:oid fdwvalidator:oid "+
		"fdwacl:text[] fdwoptions:text[]", func(*sysEnv) []types.Row {
		return []types.Row{mkRow(oidFDW, "sluice", oidOwner, 0, 0, nil, nil)}
	})
	add("pg_foreign_server", 1417, 'r', "oid:oid srvname:name srvowner:oid srvfdw:oid srvtype:text srvversion:text "+
		"srvacl:text[] srvoptions:text[]", func(env *sysEnv) []types.Row {
		seen := map[string]bool{}
		var out []types.Row
		for _, r := range userRels(env) {
			if r.kind != "f" || seen[r.e.Connector] {
				continue
			}
			seen[r.e.Connector] = true
			out = append(out, mkRow(connectorOID(r.e.Connector), r.e.Connector, oidOwner, oidFDW, nil, nil, nil, nil))
		}
		return out
	})
	add("pg_foreign_table", 3118, 'r', "ftrelid:oid ftserver:oid ftoptions:text[]", func(env *sysEnv) []types.Row {
		var out []types.Row
		for _, r := range userRels(env) {
			if r.kind == "f" {
				out = append(out, mkRow(r.oid, connectorOID(r.e.Connector), ftOptions(r.e)))
			}
		}
		return out
	})

	// The roles (role.go): pg_authid, and its views pg_roles and pg_user
	// which hide the password.
	add("pg_roles", 0, 'v', "rolname:name rolsuper:bool rolinherit:bool rolcreaterole:bool rolcreatedb:bool "+
		"rolcanlogin:bool rolreplication:bool rolconnlimit:int4 rolpassword:text rolvaliduntil:timestamptz "+
		"rolbypassrls:bool rolconfig:text[] oid:oid", func(env *sysEnv) []types.Row {
		var out []types.Row
		for _, r := range env.roles {
			out = append(out, mkRow(r.Name, r.Super, true, r.CreateRole || r.Super, r.Super, r.Login, r.Super, -1, "********", nil, r.Super, nil, r.OID))
		}
		return out
	})
	add("pg_user", 0, 'v', "usename:name usesysid:oid usecreatedb:bool usesuper:bool userepl:bool usebypassrls:bool "+
		"passwd:text valuntil:timestamptz useconfig:text[]", func(env *sysEnv) []types.Row {
		var out []types.Row
		for _, r := range env.roles {
			if r.Login {
				out = append(out, mkRow(r.Name, r.OID, r.Super, r.Super, r.Super, r.Super, "********", nil, nil))
			}
		}
		return out
	})
	add("pg_authid", 1260, 'r', "oid:oid rolname:name rolsuper:bool rolinherit:bool rolcreaterole:bool rolcreatedb:bool "+
		"rolcanlogin:bool rolreplication:bool rolbypassrls:bool rolconnlimit:int4 rolpassword:text rolvaliduntil:timestamptz",
		func(env *sysEnv) []types.Row {
			var out []types.Row
			for _, r := range env.roles {
				var pw any
				if r.Password != "" {
					pw = r.Password
				}
				out = append(out, mkRow(r.OID, r.Name, r.Super, true, r.CreateRole || r.Super, r.Super, r.Login, r.Super, r.Super, -1, pw, nil))
			}
			return out
		})
	add("pg_settings", 0, 'v', "name:text setting:text unit:text category:text short_desc:text extra_desc:text "+
		"context:text vartype:text source:text min_val:text max_val:text enumvals:text[] boot_val:text "+
		"reset_val:text sourcefile:text sourceline:int4 pending_restart:bool", func(env *sysEnv) []types.Row {
		names := make([]string, 0, len(env.settings))
		for k := range env.settings {
			names = append(names, k)
		}
		sort.Strings(names)
		var out []types.Row
		for _, k := range names {
			def := defaultSettings[k]
			source := "default"
			if env.settings[k] != def {
				source = "session"
			}
			out = append(out, mkRow(k, env.settings[k], nil, "Sluice", "", nil, "user", "string", source,
				nil, nil, nil, def, def, nil, nil, false))
		}
		return out
	})
	add("pg_tables", 0, 'v', "schemaname:name tablename:name tableowner:name tablespace:name hasindexes:bool "+
		"hasrules:bool hastriggers:bool rowsecurity:bool", func(env *sysEnv) []types.Row {
		var out []types.Row
		for _, t := range sortedSysTables() {
			if t.kind == 'r' {
				out = append(out, mkRow(t.schema, t.name, "sluice", nil, false, false, false, false))
			}
		}
		for _, r := range userRels(env) {
			if r.kind == "r" {
				out = append(out, mkRow("public", r.e.Name, "sluice", nil, len(indexesOf(r)) > 0, false, false, false))
			}
		}
		return out
	})
	add("pg_indexes", 0, 'v', "schemaname:name tablename:name indexname:name tablespace:name indexdef:text", func(env *sysEnv) []types.Row {
		var out []types.Row
		for _, r := range userRels(env) {
			for _, ix := range indexesOf(r) {
				out = append(out, mkRow("public", r.e.Name, ix.name, nil, ix.def(r.e.Name)))
			}
		}
		return out
	})
	add("pg_views", 0, 'v', "schemaname:name viewname:name viewowner:name definition:text", func(env *sysEnv) []types.Row {
		var out []types.Row
		for _, t := range sortedSysTables() {
			if t.kind == 'v' {
				out = append(out, mkRow(t.schema, t.name, "sluice", nil))
			}
		}
		for _, r := range userRels(env) {
			if r.kind == "v" {
				out = append(out, mkRow("public", r.e.Name, "sluice", viewDefinition(r.e)))
			}
		}
		return out
	})
	add("pg_matviews", 0, 'v', "schemaname:name matviewname:name matviewowner:name tablespace:name hasindexes:bool "+
		"ispopulated:bool definition:text", func(env *sysEnv) []types.Row {
		var out []types.Row
		for _, r := range userRels(env) {
			if r.kind == "m" {
				out = append(out, mkRow("public", r.e.Name, "sluice", nil, false, true, viewDefinition(r.e)))
			}
		}
		return out
	})
}

// viewDefinition is the defining query of a view or materialized view, as
// pg_views and pg_matviews show it: the query as written, after a space and
// with a semicolon.
func viewDefinition(e *storage.CatalogEntry) string {
	q := e.Query
	if q == "" {
		if m := viewQueryRE.FindStringSubmatch(e.SQL); m != nil {
			q = m[1]
		} else {
			q = e.SQL
		}
	}
	return " " + strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(q), ";")) + ";"
}

// viewQueryRE finds the query of a CREATE [MATERIALIZED] VIEW statement.
var viewQueryRE = regexp.MustCompile(`(?is)^\s*create\s+(?:materialized\s+)?view\s+(?:if\s+not\s+exists\s+)?(?:"(?:[^"]|"")*"|\S+)\s+as\s+(.*)$`)
