package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The catalog as clients read it: psql's \df, \d, \dt, \dv and \dn through
// the real psql 15 binary, psycopg 3's TypeInfo.fetch, and every catalog
// query pgcli's completion refresher sends. psql's output is compared with
// PostgreSQL's own answer to the same script, line for line (the owning
// role's name aside).

// psqlCatalogScript creates a table, a view and a SQL function, then runs
// the meta-commands.
const psqlCatalogScript = `CREATE TABLE items (id INT PRIMARY KEY, name TEXT NOT NULL, price NUMERIC(10,2), doc JSONB);
CREATE VIEW cheap AS SELECT id, name FROM items WHERE price < 10;
CREATE FUNCTION add_one(x integer) RETURNS integer LANGUAGE sql AS 'SELECT x + 1';
CREATE FUNCTION twice(integer) RETURNS integer LANGUAGE sql AS 'SELECT $1 * 2';
\echo ==== df
\df
\echo ==== df+ add_one
\df+ add_one
\echo ==== df tw*
\df tw*
\echo ==== d items
\d items
\echo ==== dt
\dt
\echo ==== dv
\dv
\echo ==== dn
\dn
\echo ==== end
`

func runPsqlCatalogScript(t *testing.T, tg wireTarget) map[string]string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "catalog.sql")
	if err := os.WriteFile(path, []byte(psqlCatalogScript), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runPsql(t, tg, true, "-f", path)
	if err != nil {
		t.Fatalf("psql -f: %v\n%s", err, out)
	}
	sections := splitPsqlSections(out)
	// The owner's name differs ("sluice", "postgres"), and with it the
	// width of psql's columns: compare with runs of blanks and of dashes
	// collapsed.
	owner := regexp.MustCompile(`\b` + tg.user + `\b`)
	blanks, dashes := regexp.MustCompile(`[ \t]+`), regexp.MustCompile(`-+`)
	for k, v := range sections {
		v = owner.ReplaceAllString(v, "OWNER")
		sections[k] = dashes.ReplaceAllString(blanks.ReplaceAllString(v, " "), "-")
	}
	return sections
}

// TestPsqlCatalogCommands runs \df, \df+ NAME, \d TABLE, \dt, \dv and \dn
// against Sluice and PostgreSQL and compares the outputs.
func TestPsqlCatalogCommands(t *testing.T) {
	EnsurePostgres(t)
	srv := StartServer(t, Options{})
	got := runPsqlCatalogScript(t, sluiceWireTarget(srv))
	want := runPsqlCatalogScript(t, postgresWireTarget(t, "sluice_psql_catalog"))
	for _, name := range []string{"df", "df+ add_one", "df tw*", "d items", "dt", "dv"} {
		g, w := got[name], want[name]
		if strings.Contains(g, "ERROR") {
			t.Errorf("%s failed on Sluice:\n%s", name, indent(g))
			continue
		}
		if g != w {
			t.Errorf("%s differs from PostgreSQL:\nsluice:\n%s\npostgres:\n%s", name, indent(g), indent(w))
		}
	}
	// PostgreSQL 15 owns public by pg_database_owner; Sluice's role owns
	// everything.
	expectMatches(t, `\dn`, got["dn"], `(?m)^\s*public\s*\|\s*OWNER\s*$`, `(?m)^\s*sluice_catalog\s*\|`, `\(2 rows\)`)
	expectMatches(t, `\df`, got["df"], `(?m)^ public \| add_one \| integer \| x integer \| func$`,
		`(?m)^ public \| twice \| integer \| integer \| func$`, `\(2 rows\)`)
}

// TestPsycopgTypeInfo runs psycopg 3's TypeInfo.fetch (its catalog query
// binds the type's name as a parameter cast to regtype) through Debian's
// python3.
func TestPsycopgTypeInfo(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	srv := StartServer(t, Options{})
	script := `
import sys, psycopg
from psycopg.types import TypeInfo
with psycopg.connect(sys.argv[1], autocommit=True) as conn:
    for name in ["jsonb", "int4", "text", "numeric", "timestamp with time zone", "character varying"]:
        ti = TypeInfo.fetch(conn, name)
        print(name, "->", ti.name, ti.oid, ti.array_oid, ti.regtype, ti.delimiter)
    print("missing ->", TypeInfo.fetch(conn, "nosuchtype"))
    cur = conn.execute("SELECT %s::regclass::oid = 'items'::regclass, %s::regtype, pg_typeof(1.5)", ["items", "jsonb"])
    print(cur.fetchone())
    print([d.type_code for d in cur.description])
`
	ExecAll(t, MustConnect(t, srv.ConnString()), "CREATE TABLE items (id INT PRIMARY KEY)")
	cmd := exec.Command("/usr/bin/python3", "-c", script, srv.ConnString())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
	// The array oids are PostgreSQL's (pg_type.typarray).
	want := `jsonb -> jsonb 3802 3807 jsonb ,
int4 -> int4 23 1007 integer ,
text -> text 25 1009 text ,
numeric -> numeric 1700 1231 numeric ,
timestamp with time zone -> timestamptz 1184 1185 timestamp with time zone ,
character varying -> varchar 1043 1015 character varying ,
missing -> None
(True, 'jsonb', 'numeric')
[16, 2206, 2206]
`
	if string(out) != want {
		t.Errorf("psycopg TypeInfo:\ngot:\n%s\nwant:\n%s", out, want)
	}
}

// TestRowDescriptionSources checks the table OID and column number that
// RowDescription gives each result column against PostgreSQL's: set for
// a column straight from a table or view (through subqueries and USING
// joins), zero for a computed one; and a reg* column's type OID.
func TestRowDescriptionSources(t *testing.T) {
	EnsurePostgres(t)
	srv := StartServer(t, Options{})
	queries := []string{
		"SELECT b, a, a + 1 AS x, 1 AS k FROM rdt",
		"SELECT * FROM rdv",
		"SELECT s.b FROM (SELECT b FROM rdt) s",
		"SELECT a, t.c, u.b FROM rdt t JOIN rdt u USING (a)",
		"SELECT relname, oid FROM pg_class WHERE relname = 'rdt'",
		"SELECT max(a) AS m FROM rdt",
		"SELECT 'rdt'::regclass AS r, 'int4'::regtype AS ty, 'public'::regnamespace AS n",
	}
	describe := func(connString string) []string {
		conn := MustConnect(t, connString)
		ExecAll(t, conn, "CREATE TABLE rdt (a INT PRIMARY KEY, b TEXT, c INT)", "CREATE VIEW rdv AS SELECT c, a FROM rdt")
		var tOID, vOID uint32
		if err := conn.QueryRow(context.Background(), "SELECT 'rdt'::regclass::oid, 'rdv'::regclass::oid").Scan(&tOID, &vOID); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, q := range queries {
			rows, err := conn.Query(context.Background(), q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			var fields []string
			for _, f := range rows.FieldDescriptions() {
				rel := strconv.FormatUint(uint64(f.TableOID), 10)
				switch f.TableOID {
				case tOID:
					rel = "rdt"
				case vOID:
					rel = "rdv"
				}
				fields = append(fields, fmt.Sprintf("%s:%s.%d:%d", f.Name, rel, f.TableAttributeNumber, f.DataTypeOID))
			}
			rows.Close()
			out = append(out, q+" -> "+strings.Join(fields, " "))
		}
		return out
	}
	got := describe(srv.ConnString())
	want := describe(FreshPostgresDB(t, "sluice_rowdesc"))
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("sluice:   %s\npostgres: %s", got[i], want[i])
		}
	}
}

// pgcliScript runs every catalog query of pgcli's completion refresher
// (pgcli.pgexecute.PGExecute's methods, as pgcli/completion_refresher.py
// calls them) and prints a line per query: its result, or FAILED.
const pgcliScript = `
import sys
from pgcli.pgexecute import PGExecute
ex = PGExecute(database="sluice", user="sluice", host=sys.argv[1], port=int(sys.argv[2]))
calls = [
    ("search_path", lambda: ex.search_path()),
    ("schemata", lambda: list(ex.schemata())),
    ("tables", lambda: [t for t in ex.tables() if t[0] == "public"]),
    ("views", lambda: [v for v in ex.views() if v[0] == "public"]),
    ("table_columns", lambda: [c[:4] for c in ex.table_columns() if c[0] == "public"]),
    ("view_columns", lambda: [c[:4] for c in ex.view_columns() if c[0] == "public"]),
    ("databases", lambda: list(ex.databases())),
    ("foreignkeys", lambda: list(ex.foreignkeys())),
    ("functions", lambda: [(f.schema_name, f.func_name, f.arg_names, f.arg_types, f.return_type, f.is_aggregate, f.is_set_returning)
                           for f in ex.functions() if f.schema_name == "public" or f.func_name in ("lower", "jsonb_each")]),
    ("datatypes", lambda: list(ex.datatypes())),
    ("casing", lambda: sorted(ex.casing())),
    ("view_definition", lambda: ex.view_definition("cheap")),
    ("function_definition", lambda: ex.function_definition("add_one")),
]
for name, f in calls:
    try:
        print(name, "->", f())
    except Exception as e:
        print(name, "FAILED", type(e).__name__, str(e).strip().replace("\n", " | "))
`

// TestPgcliCompletionQueries runs pgcli's completion refresher queries
// against Sluice: every one must succeed and see the user's objects.
func TestPgcliCompletionQueries(t *testing.T) {
	if _, err := os.Stat("/usr/lib/python3/dist-packages/pgcli/pgexecute.py"); err != nil {
		t.Skip("pgcli is not installed")
	}
	srv := StartServer(t, Options{})
	ExecAll(t, MustConnect(t, srv.ConnString()),
		"CREATE TABLE items (id INT PRIMARY KEY, name TEXT)",
		"CREATE VIEW cheap AS SELECT id FROM items",
		"CREATE FUNCTION add_one(x integer) RETURNS integer LANGUAGE sql AS 'SELECT x + 1'")
	host, port, _ := strings.Cut(srv.Addr, ":")
	out, err := exec.Command("/usr/bin/python3", "-c", pgcliScript, host, port).CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
	text := string(out)
	if strings.Contains(text, "FAILED") {
		t.Errorf("pgcli queries failed:\n%s", text)
	}
	expectMatches(t, "pgcli", text,
		`(?m)^search_path -> \['pg_catalog', 'public'\]$`,
		`(?m)^schemata -> \['information_schema', 'pg_catalog', 'public', 'sluice_catalog'\]$`,
		`(?m)^tables -> \[\('public', 'items'\)\]$`,
		`(?m)^views -> \[\('public', 'cheap'\)\]$`,
		`(?m)^table_columns -> \[\('public', 'items', 'id', 'integer'\), \('public', 'items', 'name', 'text'\)\]$`,
		`(?m)^view_columns -> \[\('public', 'cheap', 'id', 'integer'\)\]$`,
		`(?m)^databases -> \['postgres', 'sluice'\]$`,
		`(?m)^foreignkeys -> \[\]$`,
		`\('pg_catalog', 'jsonb_each', None, \('jsonb',\), 'record', False, True\)`,
		`\('pg_catalog', 'lower', None, \('text',\), 'text', False, False\)`,
		`\('public', 'add_one', \('x',\), \('integer',\), 'integer', False, False\)`,
		`(?m)^casing -> \['x'\]$`, // the words of SQL function bodies that name something
		`(?m)^view_definition -> CREATE OR REPLACE VIEW`,
		`(?m)^function_definition -> CREATE OR REPLACE FUNCTION public\.add_one\(x integer\)$`,
		`(?m)^ RETURNS integer$`,
		`(?m)^AS \$function\$SELECT x \+ 1\$function\$$`)
}

// TestJSONBBinaryWire sends and reads jsonb in the binary format (a
// version byte 1, then the text), as drivers do, and checks that it is
// stored normalized.
func TestJSONBBinaryWire(t *testing.T) {
	srv := StartServer(t, Options{})
	ctx := context.Background()
	conn := MustConnect(t, srv.ConnString())
	ExecAll(t, conn, "CREATE TABLE j (id INT PRIMARY KEY, doc JSONB)")
	in := append([]byte{1}, `{"z": 1.50, "a": [true, null], "z": 2}`...)
	res := conn.PgConn().ExecParams(ctx, "INSERT INTO j VALUES (1, $1)", [][]byte{in}, []uint32{3802}, []int16{1}, nil).Read()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	ExecAll(t, conn, "FLUSH")
	res = conn.PgConn().ExecParams(ctx, "SELECT doc, doc::text FROM j", nil, nil, nil, []int16{1, 0}).Read()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	want := `{"a": [true, null], "z": 2}`
	if len(res.Rows) != 1 || string(res.Rows[0][0]) != "\x01"+want || string(res.Rows[0][1]) != want {
		t.Fatalf("jsonb read back as %q", res.Rows)
	}
	if f := res.FieldDescriptions[0]; f.DataTypeOID != 3802 || f.Format != 1 {
		t.Errorf("jsonb column described as type %d format %d", f.DataTypeOID, f.Format)
	}
	res = conn.PgConn().ExecParams(ctx, "SELECT $1::jsonb", [][]byte{{2, '{', '}'}}, []uint32{3802}, []int16{1}, nil).Read()
	if res.Err == nil || !strings.Contains(res.Err.Error(), "22P03") {
		t.Errorf("jsonb version 2 accepted or wrong error: %v", res.Err)
	}
}
