package server

import (
	"bytes"
	"context"
	"net"
	"os"
	osexec "os/exec"
	"strings"
	"testing"
	"time"

	_ "sluice/connectors/datagen"
	"sluice/server/pgwire"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// The objects both tests create.
var pgcatalogSchema = []string{
	`CREATE TABLE orders (id BIGINT PRIMARY KEY, customer TEXT, amount NUMERIC(12,2), ts TIMESTAMP)`,
	`CREATE TABLE customers (name TEXT PRIMARY KEY, region TEXT)`,
	`CREATE SOURCE g (id BIGINT, v DOUBLE PRECISION) WITH (connector = 'datagen', fields.id.kind = 'sequence',
		fields.id.start = '1', fields.v.kind = 'random', fields.v.seed = '7', datagen.rows.per.second = '10')`,
	`CREATE MATERIALIZED VIEW revenue AS SELECT customer, sum(amount) AS total, count(*) AS n FROM orders GROUP BY customer`,
	`CREATE VIEW big AS SELECT id, amount FROM orders WHERE amount > 100`,
}

// openCatalogTest opens an engine with pgcatalogSchema and a session.
func openCatalogTest(t *testing.T) (*Engine, pgwire.Session) {
	t.Helper()
	e, s := openTest(t)
	for _, q := range pgcatalogSchema {
		if _, err := query(s, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return e, s
}

// collect is a ResultWriter keeping rows as text, NULL as "NULL" and
// columns separated by "|".
type collect struct {
	cols []types.Column
	rows []string
}

func (c *collect) Columns(cols []types.Column) error { c.cols = cols; return nil }
func (c *collect) Complete(string) error             { return nil }
func (c *collect) Notice(string) error               { return nil }
func (c *collect) Row(r types.Row) error {
	parts := make([]string, len(r))
	for i, d := range r {
		if d.IsNull() {
			parts[i] = "NULL"
		} else {
			parts[i] = types.FormatText(d, c.cols[i].Type)
		}
	}
	c.rows = append(c.rows, strings.Join(parts, "|"))
	return nil
}

func query(s pgwire.Session, sql string) (*collect, error) {
	c := &collect{}
	err := s.SimpleQuery(context.Background(), sql, c)
	return c, err
}

// TestCatalogQueries runs the SQL that catalog queries need — system
// relations, subqueries, table functions, arrays, oid types — through a
// session, with Postgres 15's answers.
func TestCatalogQueries(t *testing.T) {
	_, s := openCatalogTest(t)
	for _, q := range []string{
		`INSERT INTO customers VALUES ('ann', 'north'), ('bob', 'south'), ('cy', NULL)`,
		`INSERT INTO orders VALUES (1, 'ann', 10.5, now()), (2, 'bob', 7, now()), (3, 'ann', 200, now())`,
		`FLUSH`,
	} {
		if _, err := query(s, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, c := range []struct {
		sql  string
		cols string // column names, "|"-separated; "" = not checked
		want []string
	}{
		// Correlated scalar subqueries, nested two deep.
		{`SELECT o.id, (SELECT region FROM customers c WHERE c.name = o.customer) FROM orders o ORDER BY 1`,
			"id|region", []string{"1|north", "2|south", "3|north"}},
		{`SELECT o.id, (SELECT (SELECT o.customer || c.region) FROM customers c WHERE c.name = o.customer) AS x FROM orders o ORDER BY 1`,
			"id|x", []string{"1|annnorth", "2|bobsouth", "3|annnorth"}},
		{`SELECT id FROM orders WHERE amount > (SELECT avg(amount) FROM orders)`, "", []string{"3"}},
		{`SELECT (SELECT name FROM customers ORDER BY 1 DESC LIMIT 1), (SELECT 1 WHERE false)`, "name|?column?", []string{"cy|NULL"}},
		// EXISTS, IN, ANY, ALL with SQL's NULL rules.
		{`SELECT name FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer = c.name) ORDER BY 1`, "", []string{"ann", "bob"}},
		{`SELECT name FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer = c.name)`, "", []string{"cy"}},
		{`SELECT name FROM customers WHERE name IN (SELECT customer FROM orders) ORDER BY 1`, "", []string{"ann", "bob"}},
		{`SELECT name FROM customers WHERE name NOT IN (SELECT customer FROM orders)`, "", []string{"cy"}},
		{`SELECT count(*) FROM customers WHERE name NOT IN (SELECT region FROM customers)`, "", []string{"0"}},
		{`SELECT 1 = ANY (SELECT id FROM orders), 5 = ANY (SELECT id FROM orders), 5 > ALL (SELECT id FROM orders),
			NULL::int = ANY (SELECT id FROM orders), 1 = ANY (SELECT 1 WHERE false)`, "", []string{"t|f|t|NULL|f"}},
		{`SELECT EXISTS (SELECT 1), ARRAY(SELECT name FROM customers ORDER BY 1 DESC)`, "exists|array", []string{"t|{cy,bob,ann}"}},
		// Arrays.
		{`SELECT ARRAY['a', 'b'], array_to_string(ARRAY['a', NULL, 'c'], ',', '*'), 'b' = ANY (ARRAY['a', 'b']),
			2 = ANY ('{1,2}'), 3 <> ALL ('{1,2}'::int[]), array_upper(ARRAY['x'], 1)`, "", []string{"{a,b}|a,*,c|t|t|t|1"}},
		// Table functions and the aggregates of whole inputs.
		{`SELECT s, s * 2 FROM generate_series(10, 1, -4) s`, "s|?column?", []string{"10|20", "6|12", "2|4"}},
		{`SELECT count(*) FROM generate_series(1, 5) a, generate_series(1, 4) b`, "", []string{"20"}},
		{`SELECT u FROM unnest(ARRAY['x', 'y']) u`, "u", []string{"x", "y"}},
		{`SELECT * FROM pg_catalog.pg_options_to_table(ARRAY['a=1', 'b'])`, "option_name|option_value", []string{"a|1", "b|NULL"}},
		{`SELECT string_agg(name, ', '), array_agg(name), bool_and(name > 'b'), bool_or(name > 'b'), count(*) FROM customers`,
			"string_agg|array_agg|bool_and|bool_or|count", []string{"ann, bob, cy|{ann,bob,cy}|f|t|3"}},
		{`SELECT region, string_agg(name, '|') FROM customers GROUP BY region ORDER BY 1`, "", []string{"north|ann", "south|bob", "NULL|cy"}},
		{`SELECT string_agg(name, ',') FROM customers WHERE false`, "", []string{"NULL"}},
		// Object identifier types.
		{`SELECT 'orders'::regclass, 'public.orders'::regclass::oid, 16385::regclass::text, 'pg_class'::regclass::oid`,
			"", []string{"orders|16385|orders|1259"}},
		{`SELECT c.oid::regclass FROM pg_class c WHERE c.relname = 'revenue'`, "oid", []string{"revenue"}},
		{`SELECT 23::regtype, 'int8'::regtype, 2200::regnamespace, 11::regnamespace::text, 10::regrole`, "",
			[]string{"integer|bigint|public|pg_catalog|sluice"}},
		// System relations.
		{`SELECT c.relname, c.relkind FROM pg_class c, pg_namespace n WHERE n.oid = c.relnamespace AND n.nspname = 'public' ORDER BY 1`,
			"", []string{"big|v", "customers|r", "customers_pkey|i", "g|f", "orders|r", "orders_pkey|i", "revenue|m"}},
		{`SELECT c2.relname, i.indisprimary, pg_get_indexdef(i.indexrelid, 0, true), pg_get_indexdef(i.indexrelid, 1, true),
			pg_get_constraintdef(con.oid, true), contype
			FROM pg_catalog.pg_class c, pg_catalog.pg_class c2, pg_catalog.pg_index i
			LEFT JOIN pg_catalog.pg_constraint con ON (conrelid = i.indrelid AND conindid = i.indexrelid AND contype IN ('p','u','x'))
			WHERE c.oid = 'orders'::regclass AND c.oid = i.indrelid AND i.indexrelid = c2.oid`, "",
			[]string{"orders_pkey|t|CREATE UNIQUE INDEX orders_pkey ON public.orders USING btree (id)|id|PRIMARY KEY (id)|p"}},
		{`SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull FROM pg_attribute a
			WHERE a.attrelid = 'orders'::regclass AND a.attnum > 0 ORDER BY a.attnum`, "",
			[]string{"id|bigint|t", "customer|text|f", "amount|numeric(12,2)|f", "ts|timestamp without time zone|f"}},
		{`SELECT s.srvname, f.ftoptions FROM pg_foreign_table f, pg_foreign_server s WHERE s.oid = f.ftserver`, "",
			[]string{`datagen|{datagen.rows.per.second=10,fields.id.kind=sequence,fields.id.start=1,fields.v.kind=random,fields.v.seed=7}`}},
		{`SELECT datname FROM pg_database`, "", []string{"postgres", "sluice"}},
		{`SELECT nspname FROM pg_namespace WHERE nspname !~ '^pg_' ORDER BY 1`, "", []string{"information_schema", "public", "sluice_catalog"}},
		{`SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`, "",
			[]string{"big|VIEW", "customers|BASE TABLE", "g|FOREIGN", "orders|BASE TABLE"}},
		{`SELECT column_name, data_type, is_nullable, numeric_precision, numeric_scale FROM information_schema.columns
			WHERE table_name = 'orders' ORDER BY ordinal_position`, "",
			[]string{"id|bigint|NO|64|0", "customer|text|YES|NULL|NULL", "amount|numeric|YES|12|2", "ts|timestamp without time zone|YES|NULL|NULL"}},
	} {
		got, err := query(s, c.sql)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if c.cols != "" {
			names := make([]string, len(got.cols))
			for i, col := range got.cols {
				names[i] = col.Name
			}
			if strings.Join(names, "|") != c.cols {
				t.Errorf("%s: columns %s, want %s", c.sql, strings.Join(names, "|"), c.cols)
			}
		}
		if strings.Join(got.rows, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s:\ngot\n\t%s\nwant\n\t%s", c.sql, strings.Join(got.rows, "\n\t"), strings.Join(c.want, "\n\t"))
		}
	}
	for _, c := range []struct {
		sql, code string
	}{
		{`SELECT (SELECT id FROM orders)`, "21000"},
		{`SELECT (SELECT 1, 2)`, "42601"},
		{`SELECT 'nosuch'::regclass`, "42P01"},
		{`SELECT id FROM orders WHERE id IN (SELECT name FROM customers)`, "42883"},
		{`CREATE MATERIALIZED VIEW bad AS SELECT id, (SELECT 1) FROM orders`, "0A000"},
		{`CREATE MATERIALIZED VIEW bad AS SELECT * FROM generate_series(1, 3)`, "0A000"},
	} {
		_, err := query(s, c.sql)
		if got := string(pgerror.GetCode(err)); got != c.code {
			t.Errorf("%s: error %v (%s), want SQLSTATE %s", c.sql, err, got, c.code)
		}
	}
}

// TestPsqlMetaCommands runs psql 15's meta-commands against a server and
// compares their output with what psql prints for PostgreSQL 15 given the
// same objects. The differences are Sluice's own: the owner is "sluice", a
// view's definition is its query as written (not deparsed), and the source
// g, which PostgreSQL cannot have, is a foreign table of server "datagen".
func TestPsqlMetaCommands(t *testing.T) {
	const psql = "/usr/bin/psql"
	if _, err := os.Stat(psql); err != nil {
		t.Skip("no psql")
	}
	e, _ := openCatalogTest(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pgwire.NewServer(e, pgwire.Options{Logf: t.Logf}).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	// run runs one command; psql must exit with status 0 (1 if fails)
	// and write wantErr, if not empty, else nothing, to stderr.
	run := func(cmd, wantErr string, fails bool) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := osexec.CommandContext(ctx, psql, "-X", "-h", host, "-p", port, "-U", "sluice", "-d", "sluice",
			"-P", "pager=off", "-v", "ON_ERROR_STOP=1", "-c", cmd)
		c.Env = append(os.Environ(), "PGPASSWORD=", "PSQLRC=/dev/null", "PGCONNECT_TIMEOUT=10", "PGSSLMODE=prefer")
		var stdout, stderr bytes.Buffer
		c.Stdout, c.Stderr = &stdout, &stderr
		err := c.Run()
		if (err != nil) != fails || stderr.String() != wantErr {
			t.Errorf("psql -c %q: exit %v, stderr %q, want %q\n%s", cmd, err, stderr.String(), wantErr, stdout.String())
		}
		return stdout.String()
	}
	cases := []struct{ cmd, want string }{
		{`SELECT 1 AS one`, `
 one 
-----
   1
(1 row)

`},
		{`\d`, `
                List of relations
 Schema |   Name    |       Type        | Owner  
--------+-----------+-------------------+--------
 public | big       | view              | sluice
 public | customers | table             | sluice
 public | g         | foreign table     | sluice
 public | orders    | table             | sluice
 public | revenue   | materialized view | sluice
(5 rows)

`},
		{`\dt`, `
          List of relations
 Schema |   Name    | Type  | Owner  
--------+-----------+-------+--------
 public | customers | table | sluice
 public | orders    | table | sluice
(2 rows)

`},
		{`\dm`, `
               List of relations
 Schema |  Name   |       Type        | Owner  
--------+---------+-------------------+--------
 public | revenue | materialized view | sluice
(1 row)

`},
		{`\dv`, `
       List of relations
 Schema | Name | Type | Owner  
--------+------+------+--------
 public | big  | view | sluice
(1 row)

`},
		{`\d orders`, `
                          Table "public.orders"
  Column  |            Type             | Collation | Nullable | Default 
----------+-----------------------------+-----------+----------+---------
 id       | bigint                      |           | not null | 
 customer | text                        |           |          | 
 amount   | numeric(12,2)               |           |          | 
 ts       | timestamp without time zone |           |          | 
Indexes:
    "orders_pkey" PRIMARY KEY, btree (id)

`},
		{`\d orders_pkey`, `
     Index "public.orders_pkey"
 Column |  Type  | Key? | Definition 
--------+--------+------+------------
 id     | bigint | yes  | id
primary key, btree, for table "public.orders"

`},
		{`\di`, `
                  List of relations
 Schema |      Name      | Type  | Owner  |   Table   
--------+----------------+-------+--------+-----------
 public | customers_pkey | index | sluice | customers
 public | orders_pkey    | index | sluice | orders
(2 rows)

`},
		{`\d revenue`, `
         Materialized view "public.revenue"
  Column  |  Type   | Collation | Nullable | Default 
----------+---------+-----------+----------+---------
 customer | text    |           |          | 
 total    | numeric |           |          | 
 n        | bigint  |           |          | 

`},
		{`\d big`, `
                    View "public.big"
 Column |     Type      | Collation | Nullable | Default 
--------+---------------+-----------+----------+---------
 id     | bigint        |           |          | 
 amount | numeric(12,2) |           |          | 

`},
		{`\d+ big`, `
                                View "public.big"
 Column |     Type      | Collation | Nullable | Default | Storage | Description 
--------+---------------+-----------+----------+---------+---------+-------------
 id     | bigint        |           |          |         | plain   | 
 amount | numeric(12,2) |           |          |         | main    | 
View definition:
 SELECT id, amount FROM orders WHERE amount > 100;

`},
		{`\d g`, `
                         Foreign table "public.g"
 Column |       Type       | Collation | Nullable | Default | FDW options 
--------+------------------+-----------+----------+---------+-------------
 id     | bigint           |           |          |         | 
 v      | double precision |           |          |         | 
Server: datagen
FDW options: ("datagen.rows.per.second" '10', "fields.id.kind" 'sequence', "fields.id.start" '1', "fields.v.kind" 'random', "fields.v.seed" '7')

`},
		{`\l`, `
                                         List of databases
   Name   | Owner  | Encoding | Collate | Ctype | ICU Locale | Locale Provider | Access privileges 
----------+--------+----------+---------+-------+------------+-----------------+-------------------
 postgres | sluice | UTF8     | C       | C     |            | libc            | 
 sluice   | sluice | UTF8     | C       | C     |            | libc            | 
(2 rows)

`},
		{`\dn`, `
     List of schemas
      Name      | Owner  
----------------+--------
 public         | sluice
 sluice_catalog | sluice
(2 rows)

`},
	}
	for _, c := range cases {
		got := run(c.cmd, "", false)
		if want := strings.TrimPrefix(c.want, "\n"); got != want {
			t.Errorf("psql -c %q:\ngot\n%s\nwant\n%s", c.cmd, got, want)
		}
	}
	// Empty lists and unknown names are reported on stderr, as for
	// PostgreSQL.
	for _, c := range []struct {
		cmd, stderr string
		fails       bool
	}{
		{`\ds`, "Did not find any relations.\n", false},
		{`\d nosuch`, "Did not find any relation named \"nosuch\".\n", true},
	} {
		if out := run(c.cmd, c.stderr, c.fails); out != "" {
			t.Errorf("psql -c %q printed %q", c.cmd, out)
		}
	}
}

// TestSystemRelationsShape checks that every system relation's rows have
// its columns' number and kinds of values, and that each can be read.
func TestSystemRelationsShape(t *testing.T) {
	e, s := openCatalogTest(t)
	kinds := map[types.Family]types.Kind{
		types.Oid: types.KInt, types.RegProc: types.KInt, types.Int2: types.KInt, types.Int4: types.KInt, types.Int8: types.KInt,
		types.Name: types.KString, types.Char: types.KString, types.Text: types.KString, types.Varchar: types.KString,
		types.Bool: types.KBool, types.Float4: types.KFloat, types.TextArray: types.KArray,
		types.Int2Vector: types.KArray, types.OidVector: types.KArray, types.Int2Array: types.KArray,
		types.TimestampTZ: types.KTimestampTZ,
	}
	env := &sysEnv{db: "sluice", user: "other", settings: defaultSettings, entries: e.cat.list("")}
	for _, st := range sortedSysTables() {
		for _, r := range st.rows(env) {
			if len(r) != len(st.cols) {
				t.Errorf("%s: row of %d values for %d columns: %v", st.name, len(r), len(st.cols), r)
				continue
			}
			for i, d := range r {
				if !d.IsNull() && d.K != kinds[st.cols[i].Type.Fam] {
					t.Errorf("%s.%s: value %v of kind %d for type %s", st.name, st.cols[i].Name, d, d.K, st.cols[i].Type)
				}
			}
		}
		if _, err := query(s, "SELECT * FROM "+st.schema+"."+st.name); err != nil {
			t.Errorf("SELECT * FROM %s.%s: %v", st.schema, st.name, err)
		}
	}
}
