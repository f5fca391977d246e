package server

import (
	"sort"
	"strings"

	"sluice/planner/cat"
	"sluice/sql/types"
	"sluice/storage"
)

// This file serves the pg_catalog and information_schema relations that
// clients such as psql query (pgcatalog.go and infoschema.go define them).
// Their rows are computed from the live catalog and the reading session
// each time a statement reads them; they are small.
//
// How Sluice's objects appear in pg_class, and so in psql's \d:
//
//	table               relkind 'r'  "table"
//	materialized view   relkind 'm'  "materialized view"
//	view                relkind 'v'  "view"
//	source, sink        relkind 'f'  "foreign table"
//	primary key         relkind 'i'  "index" NAME_pkey (pg_index, pg_constraint)
//
// A source or sink is data that lives in another system, reached through
// a connector: what Postgres calls a foreign table. Each connector in use is
// a foreign server (pg_foreign_server) of the foreign-data wrapper
// "sluice", and the WITH options other than connector are the foreign
// table's options, so psql's \d NAME prints "Server: kafka" and
// "FDW options: (topic 'bids', ...)". (RisingWave's own kinds for sources
// and sinks, 's' and 'k', are ones psql leaves out of \d.)
//
// Oids: Sluice's objects are 16384 + catalog id (Postgres' first user oid);
// system relations, types, schemas, the database and the role use
// Postgres' own oids where it has fixed ones.

// Fixed oids.
const (
	oidPgCatalog  = 11
	oidPublic     = 2200
	oidInfoSchema = 12000
	// oidSluiceCatalog is the schema of Sluice's own system relations
	// (syscatalog.go).
	oidSluiceCatalog = 13909
	oidOwner         = 10 // the role owning everything
	oidDatabase      = 5
	oidFDW           = 14000 // foreign-data wrapper "sluice"
	oidFirstServer   = 14001 // foreign servers, one per connector
	oidFirstUser     = 16384
	// A table's primary key is a unique constraint backed by an index (the
	// table's rows are stored in key order): each has its own oid range.
	oidFirstPkey       = 1 << 30
	oidFirstConstraint = 3 << 29
)

// relOID returns the oid of a catalog entry.
func relOID(e *storage.CatalogEntry) int64 { return oidFirstUser + int64(e.ID) }

// sysEnv is what the rows of system relations are computed from: the
// catalog at the time of reading and the reading session.
type sysEnv struct {
	db, user string
	settings map[string]string
	entries  []*storage.CatalogEntry // sorted by name
	cursors  []types.Row             // pg_cursors: the session's cursors (cursor.go)
	roles    []roleEntry             // pg_roles, pg_authid (role.go)
	super    bool                    // the session's role is a superuser
}

// sysTable is one system relation.
type sysTable struct {
	schema, name string
	oid          int64
	kind         byte // pg_class.relkind: 'r' or 'v'
	cols         []types.Column
	rows         func(env *sysEnv) []types.Row
	// erows, when set, computes the rows from the engine's state instead.
	erows func(e *Engine) ([]types.Row, error)
}

// key is the name the catalog finds the relation by: bare for pg_catalog
// (which every search path includes), qualified for information_schema.
func (t *sysTable) key() string {
	if t.schema == "pg_catalog" {
		return t.name
	}
	return t.schema + "." + t.name
}

// sysTables lists every system relation, by key; filled by init functions.
var sysTables = map[string]*sysTable{}

func addSys(t *sysTable) { sysTables[t.key()] = t }

// sortedSysTables returns the system relations sorted by schema and name.
func sortedSysTables() []*sysTable {
	out := make([]*sysTable, 0, len(sysTables))
	for _, t := range sysTables {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].schema != out[j].schema {
			return out[i].schema < out[j].schema
		}
		return out[i].name < out[j].name
	})
	return out
}

// systemRelations returns the pg_catalog and information_schema relations
// Sluice answers, computed from the catalog when read. Sessions read them
// through sessionCatalog, which binds them to the session; these are bound
// to a session of user and database "sluice" with default settings.
func systemRelations(e *Engine) map[string]*cat.Relation {
	out := map[string]*cat.Relation{}
	for k, t := range sysTables {
		out[k] = t.relation(e, func() *sysEnv {
			return &sysEnv{db: "sluice", user: "sluice", settings: defaultSettings, super: true}
		})
	}
	return out
}

// relation returns t as a planner relation whose rows are computed for the
// environment env returns (entries filled in at read time).
func (t *sysTable) relation(e *Engine, env func() *sysEnv) *cat.Relation {
	return &cat.Relation{Name: t.name, OID: uint32(t.oid), Kind: cat.System, Columns: t.cols, Rows: func() ([]types.Row, error) {
		if t.erows != nil {
			return t.erows(e)
		}
		en := env()
		if err := checkSysRead(t.name, en); err != nil {
			return nil, err
		}
		en.entries = e.cat.list("")
		en.roles = e.roles.list()
		return t.rows(en), nil
	}}
}

// sessionCatalog is the catalog as one session sees it: system relations
// answer with the session's database, user and settings.
type sessionCatalog struct {
	*catalog
	s *session
}

// Resolve implements cat.Catalog.
func (c sessionCatalog) Resolve(schema, name string) (*cat.Relation, error) {
	if schema == "" && c.catalog.system[name] == nil {
		// An unqualified name is looked up through the search_path.
		if q, err := c.s.qualify(name, false); err == nil && q != name {
			schema, name = splitQualified(q)
		}
	}
	r, err := c.catalog.Resolve(schema, name)
	if err != nil || r.Kind != cat.System {
		return r, err
	}
	for k, sr := range c.catalog.system {
		if sr == r {
			return sysTables[k].relation(c.s.e, c.s.sysEnv), nil
		}
	}
	return r, nil
}

// catalogView returns the catalog as the session sees it.
func (s *session) catalogView() cat.Catalog { return sessionCatalog{catalog: s.e.cat, s: s} }

// sysEnv returns the session's environment for system relations.
func (s *session) sysEnv() *sysEnv {
	db, user := s.info.Database, s.info.User
	if db == "" {
		db = "sluice"
	}
	if user == "" {
		user = "sluice"
	}
	settings := make(map[string]string, len(s.settings))
	for k, v := range s.settings {
		settings[k] = v
	}
	me, _ := s.e.roles.get(user)
	return &sysEnv{db: db, user: user, settings: settings, cursors: s.cursorRows(), super: me.Super}
}

// colSpec parses column specs "name:type ..." of a system relation. Types
// are Postgres' catalog types Sluice has (oid, name, "char", bool, int2,
// int4, int8, float4, text, varchar, timestamptz); arrays are text[].
func colSpec(spec string) []types.Column {
	var out []types.Column
	for _, f := range strings.Fields(spec) {
		name, typ, _ := strings.Cut(f, ":")
		var t types.T
		switch typ {
		case "oid":
			t = types.TOid
		case "name":
			t = types.TName
		case "char":
			t = types.TChar
		case "bool":
			t = types.TBool
		case "int2":
			t = types.TInt2
		case "int4":
			t = types.TInt4
		case "int8":
			t = types.TInt8
		case "float4":
			t = types.TFloat4
		case "text":
			t = types.TText
		case "varchar":
			t = types.TVarchar
		case "timestamptz":
			t = types.TTimestampTZ
		case "text[]":
			t = types.TTextArray
		case "int2[]":
			t = types.TInt2Array
		case "int2vector":
			t = types.TInt2Vector
		case "oidvector":
			t = types.TOidVector
		case "regproc":
			t = types.TRegProc
		default:
			panic("system relation column type " + typ)
		}
		out = append(out, types.Column{Name: name, Type: t})
	}
	return out
}

// mkRow builds a row from Go values: nil is NULL; bool, integers, float64,
// string and []string (a text[]) become the matching datums.
func mkRow(vals ...any) types.Row {
	r := make(types.Row, len(vals))
	for i, v := range vals {
		switch x := v.(type) {
		case nil:
			r[i] = types.Null
		case bool:
			r[i] = types.NewBool(x)
		case int:
			r[i] = types.NewInt(int64(x))
		case int64:
			r[i] = types.NewInt(x)
		case uint32:
			r[i] = types.NewInt(int64(x))
		case int16:
			r[i] = types.NewInt(int64(x))
		case int32:
			r[i] = types.NewInt(int64(x))
		case float64:
			r[i] = types.NewFloat(x)
		case string:
			r[i] = types.NewString(x)
		case []string:
			a := make([]types.Datum, len(x))
			for j, s := range x {
				a[j] = types.NewString(s)
			}
			r[i] = types.Datum{K: types.KArray, A: types.NewElems(a)}
		default:
			panic("mkRow: unsupported value")
		}
	}
	return r
}
