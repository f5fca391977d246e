package parser

import (
	"errors"
	"reflect"
	"testing"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/sql/pgerror"
	"sluice/sql/types"
)

func parseAs[T Statement](t *testing.T, sql string) T {
	t.Helper()
	st, err := ParseOne(sql)
	if err != nil {
		t.Fatalf("ParseOne(%q): %v", sql, err)
	}
	x, ok := st.(T)
	if !ok {
		t.Fatalf("ParseOne(%q) = %T", sql, st)
	}
	return x
}

func TestCreateTable(t *testing.T) {
	sql := `CREATE TABLE IF NOT EXISTS Public.Bids (
		id BIGINT PRIMARY KEY,
		"Name" VARCHAR(20) NOT NULL DEFAULT 'x',
		price NUMERIC(12, 2) NULL,
		ts TIMESTAMP,
		ok BOOLEAN DEFAULT true,
		WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
	) APPEND ONLY`
	ct := parseAs[*CreateTable](t, sql)
	if ct.Name != "public.bids" || !ct.IfNotExists || !ct.AppendOnly {
		t.Errorf("header = %q %v %v", ct.Name, ct.IfNotExists, ct.AppendOnly)
	}
	if ct.Text() != sql {
		t.Errorf("Text = %q", ct.Text())
	}
	want := []struct {
		name       string
		typ        types.T
		notNull, k bool
		def        string
	}{
		{"id", types.TInt8, true, true, ""},
		{"Name", types.T{Fam: types.Varchar, Prec: 20}, true, false, "'x'"},
		{"price", types.T{Fam: types.Numeric, Prec: 12, Scale: 2}, false, false, ""},
		{"ts", types.TTimestamp, false, false, ""},
		{"ok", types.TBool, false, false, "TRUE"},
	}
	if len(ct.Columns) != len(want) {
		t.Fatalf("columns = %+v", ct.Columns)
	}
	for k, w := range want {
		c := ct.Columns[k]
		def := ""
		if c.Default != nil {
			def = restoreNode(t, c.Default)
		}
		if c.Name != w.name || c.Type != w.typ || c.NotNull != w.notNull || c.PrimaryKey != w.k || def != w.def {
			t.Errorf("column %d = %+v (default %s), want %+v", k, c, def, w)
		}
	}
	if !reflect.DeepEqual(ct.PrimaryKey, []string{"id"}) {
		t.Errorf("PrimaryKey = %v", ct.PrimaryKey)
	}
	if ct.Watermark == nil || ct.Watermark.Column != "ts" || restoreNode(t, ct.Watermark.Expr) != "`ts`-__PG_INTERVAL('5 second')" {
		t.Errorf("Watermark = %+v", ct.Watermark)
	}

	ct = parseAs[*CreateTable](t, `CREATE TABLE t (a INT, b TEXT, c DOUBLE PRECISION, PRIMARY KEY (a, b))`)
	if !reflect.DeepEqual(ct.PrimaryKey, []string{"a", "b"}) || !ct.Columns[0].PrimaryKey || !ct.Columns[1].NotNull || ct.Columns[2].Type != types.TFloat8 {
		t.Errorf("table PK: %+v", ct)
	}
	ct = parseAs[*CreateTable](t, `CREATE TABLE t (a INT, CONSTRAINT pk PRIMARY KEY (a))`)
	if !reflect.DeepEqual(ct.PrimaryKey, []string{"a"}) {
		t.Errorf("constraint PK: %+v", ct.PrimaryKey)
	}
	ct = parseAs[*CreateTable](t, `CREATE TABLE t ()`)
	if len(ct.Columns) != 0 {
		t.Errorf("empty table: %+v", ct.Columns)
	}
}

func TestCreateTableWithConnector(t *testing.T) {
	ct := parseAs[*CreateTable](t, `CREATE TABLE t (id INT PRIMARY KEY, v TEXT)
		INCLUDE key AS k
		WITH (connector = 'kafka', topic = 'events', properties.bootstrap.server = 'localhost:9092', scan.startup.mode = earliest)
		FORMAT UPSERT ENCODE JSON`)
	if v, ok := ct.With.Get("connector"); !ok || v != "kafka" {
		t.Errorf("connector = %q %v", v, ok)
	}
	if v, _ := ct.With.Get("properties.bootstrap.server"); v != "localhost:9092" {
		t.Errorf("bootstrap = %q", v)
	}
	if v, _ := ct.With.Get("scan.startup.mode"); v != "earliest" {
		t.Errorf("startup = %q", v)
	}
	if ct.Format != "UPSERT" || ct.Encode != "JSON" {
		t.Errorf("format = %q %q", ct.Format, ct.Encode)
	}
	if !reflect.DeepEqual(ct.Includes, []Include{{What: "key", Alias: "k"}}) {
		t.Errorf("Includes = %+v", ct.Includes)
	}
}

func TestCreateSource(t *testing.T) {
	cs := parseAs[*CreateSource](t, `CREATE SOURCE IF NOT EXISTS s (
			id BIGINT, v VARCHAR, ts TIMESTAMPTZ, PRIMARY KEY (id),
			WATERMARK FOR ts AS ts - INTERVAL '1 minute')
		INCLUDE key AS k INCLUDE partition INCLUDE offset AS off INCLUDE timestamp
		WITH (
			connector = 'kafka',
			topic = 'T1',
			"Properties.Bootstrap.Server" = 'localhost:9092',
			fields.id.kind = 'sequence',
			datagen.rows.per.second = 10,
			nexmark.table.type = Bid,
			neg = -5
		) FORMAT plain ENCODE avro (schema.registry = 'http://r:8081', message = 'x')`)
	if cs.Name != "s" || !cs.IfNotExists || len(cs.Columns) != 3 || cs.Columns[2].Type != types.TTimestampTZ {
		t.Errorf("source = %+v", cs)
	}
	if !reflect.DeepEqual(cs.PrimaryKey, []string{"id"}) || cs.Watermark == nil {
		t.Errorf("pk %v wm %v", cs.PrimaryKey, cs.Watermark)
	}
	wantWith := Options{
		{"connector", "kafka"}, {"topic", "T1"}, {"properties.bootstrap.server", "localhost:9092"},
		{"fields.id.kind", "sequence"}, {"datagen.rows.per.second", "10"}, {"nexmark.table.type", "Bid"}, {"neg", "-5"},
	}
	if !reflect.DeepEqual(cs.With, wantWith) {
		t.Errorf("With = %v", cs.With)
	}
	if cs.Format != "PLAIN" || cs.Encode != "AVRO" || !reflect.DeepEqual(cs.FormatOptions, Options{{"schema.registry", "http://r:8081"}, {"message", "x"}}) {
		t.Errorf("format %q %q %v", cs.Format, cs.Encode, cs.FormatOptions)
	}
	wantInc := []Include{{"key", "k"}, {"partition", ""}, {"offset", "off"}, {"timestamp", ""}}
	if !reflect.DeepEqual(cs.Includes, wantInc) {
		t.Errorf("Includes = %v", cs.Includes)
	}
	cs = parseAs[*CreateSource](t, `CREATE SOURCE s WITH (connector = 'datagen', fields.v1.length = 10) FORMAT PLAIN ENCODE JSON`)
	if len(cs.Columns) != 0 || len(cs.With) != 2 || cs.With[1].Key != "fields.v1.length" {
		t.Errorf("source without columns: %+v", cs)
	}
	if _, ok := cs.With.Get("missing"); ok {
		t.Errorf("Get(missing) found")
	}
}

func TestCreateMaterializedView(t *testing.T) {
	sql := `CREATE MATERIALIZED VIEW IF NOT EXISTS mv AS SELECT window_start, count(*) AS n FROM TUMBLE(bid, date_time, INTERVAL '10' SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE`
	mv := parseAs[*CreateMaterializedView](t, sql)
	if mv.Name != "mv" || !mv.IfNotExists || !mv.EmitOnWindowClose {
		t.Errorf("mv = %+v", mv)
	}
	if mv.QueryText != `SELECT window_start, count(*) AS n FROM TUMBLE(bid, date_time, INTERVAL '10' SECOND) GROUP BY window_start` {
		t.Errorf("QueryText = %q", mv.QueryText)
	}
	if got := restoreNode(t, mv.Query); got != "SELECT `window_start`,COUNT(1) AS `n` FROM `__pg_tumble__1` GROUP BY `window_start`" {
		t.Errorf("Query = %s", got)
	}
	if mv.Parsed == nil || mv.Parsed.Node != mv.Query || mv.Parsed.TableFuncs["__pg_tumble__1"].Name != "tumble" {
		t.Errorf("Parsed = %+v", mv.Parsed)
	}
	if mv.Text() != sql {
		t.Errorf("Text = %q", mv.Text())
	}
	mv = parseAs[*CreateMaterializedView](t, `CREATE MATERIALIZED VIEW m2 AS WITH x AS (SELECT 1 AS a) SELECT a FROM x`)
	if mv.EmitOnWindowClose || mv.Parsed.Node == nil {
		t.Errorf("m2 = %+v", mv)
	}
}

func TestCreateView(t *testing.T) {
	v := parseAs[*CreateView](t, `CREATE OR REPLACE VIEW v (x, "Y") AS SELECT a, b FROM t`)
	if v.Name != "v" || !v.OrReplace || !reflect.DeepEqual(v.Columns, []string{"x", "Y"}) || v.QueryText != "SELECT a, b FROM t" {
		t.Errorf("view = %+v", v)
	}
	if _, ok := v.Query.(*ast.SelectStmt); !ok {
		t.Errorf("Query = %T", v.Query)
	}
}

func TestCreateSink(t *testing.T) {
	s := parseAs[*CreateSink](t, `CREATE SINK IF NOT EXISTS sk FROM mv WITH (connector = 'blackhole')`)
	if s.Name != "sk" || s.From != "mv" || s.Query != nil || !s.IfNotExists {
		t.Errorf("sink from = %+v", s)
	}
	s = parseAs[*CreateSink](t, `CREATE SINK sk AS SELECT * FROM mv WHERE a IN (SELECT 1) WITH (connector = 'kafka', topic = 't') FORMAT UPSERT ENCODE JSON (force_append_only = 'true') KEY ENCODE TEXT`)
	if s.QueryText != "SELECT * FROM mv WHERE a IN (SELECT 1)" || s.Query == nil {
		t.Errorf("sink as = %+v", s)
	}
	if v, _ := s.With.Get("topic"); v != "t" || s.Format != "UPSERT" || s.Encode != "JSON" {
		t.Errorf("sink options = %+v", s)
	}
	if v, _ := s.FormatOptions.Get("force_append_only"); v != "true" {
		t.Errorf("format options = %v", s.FormatOptions)
	}
	if v, _ := s.FormatOptions.Get("key.encode"); v != "TEXT" {
		t.Errorf("key encode = %v", s.FormatOptions)
	}
	s = parseAs[*CreateSink](t, `CREATE SINK sk AS WITH x AS (SELECT 1) SELECT * FROM x WITH (connector = 'blackhole')`)
	if s.QueryText != "WITH x AS (SELECT 1) SELECT * FROM x" {
		t.Errorf("sink with CTE: %q", s.QueryText)
	}
	s = parseAs[*CreateSink](t, `CREATE SINK sk INTO public.t (a, "B") FROM mv`)
	if s.Into != "public.t" || !reflect.DeepEqual(s.IntoColumns, []string{"a", "B"}) || s.From != "mv" || len(s.With) != 0 {
		t.Errorf("sink into from = %+v", s)
	}
	s = parseAs[*CreateSink](t, `CREATE SINK sk INTO t AS SELECT a, b FROM x WHERE a > 1`)
	if s.Into != "t" || s.IntoColumns != nil || s.QueryText != "SELECT a, b FROM x WHERE a > 1" {
		t.Errorf("sink into as = %+v", s)
	}
}

func TestCreateFunction(t *testing.T) {
	f := parseAs[*CreateFunction](t, `CREATE FUNCTION f(a INT, b TEXT) RETURNS TEXT LANGUAGE SQL IMMUTABLE AS $$ SELECT b || a::text $$`)
	if f.Name != "f" || f.Language != "sql" || f.Returns != types.TText || !reflect.DeepEqual(f.Args, []FuncArg{{"a", types.TInt4}, {"b", types.TText}}) {
		t.Errorf("f = %+v", f)
	}
	if f.Body != " SELECT b || a::text " || restoreNode(t, f.BodyExpr) != "__PG_CONCAT(`b`, __PG_CAST(`a`, 'text'))" {
		t.Errorf("body = %q %s", f.Body, restoreNode(t, f.BodyExpr))
	}
	f = parseAs[*CreateFunction](t, `CREATE OR REPLACE FUNCTION g(int, double precision) RETURNS int STRICT PARALLEL SAFE RETURN $1 + 1`)
	if !f.OrReplace || len(f.Args) != 2 || f.Args[0].Name != "" || f.Args[1].Type != types.TFloat8 || restoreNode(t, f.BodyExpr) != "__PG_PARAM(1)+1" || f.Body != "$1 + 1" {
		t.Errorf("g = %+v", f)
	}
	f = parseAs[*CreateFunction](t, `CREATE FUNCTION h(x numeric) RETURNS numeric AS 'select x * 2;' LANGUAGE sql`)
	if restoreNode(t, f.BodyExpr) != "`x`*2" {
		t.Errorf("h = %s", restoreNode(t, f.BodyExpr))
	}
	f = parseAs[*CreateFunction](t, `CREATE FUNCTION k() RETURNS timestamp with time zone AS 'now()'`)
	if f.Returns != types.TTimestampTZ || restoreNode(t, f.BodyExpr) != "NOW()" {
		t.Errorf("k = %+v", f)
	}
	f = parseAs[*CreateFunction](t, `CREATE FUNCTION py(a int) RETURNS int LANGUAGE python AS $$def py(a): return a$$`)
	if f.Language != "python" || f.BodyExpr != nil || f.Body != "def py(a): return a" {
		t.Errorf("py = %+v", f)
	}
	for _, bad := range []string{
		`CREATE FUNCTION f() RETURNS int AS 'SELECT 1 FROM t'`,
		`CREATE FUNCTION f() RETURNS int`,
		`CREATE FUNCTION f() RETURNS TABLE (a int) AS 'select 1'`,
		`CREATE FUNCTION f(OUT a int) RETURNS int AS 'select 1'`,
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

func TestDrop(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Drop
	}{
		{`DROP TABLE t`, Drop{Kind: "TABLE", Names: []string{"t"}}},
		{`DROP SOURCE IF EXISTS s`, Drop{Kind: "SOURCE", Names: []string{"s"}, IfExists: true}},
		{`DROP MATERIALIZED VIEW IF EXISTS a, Public.B CASCADE`, Drop{Kind: "MATERIALIZED VIEW", Names: []string{"a", "public.b"}, IfExists: true, Cascade: true}},
		{`DROP VIEW v RESTRICT`, Drop{Kind: "VIEW", Names: []string{"v"}}},
		{`DROP SINK sk`, Drop{Kind: "SINK", Names: []string{"sk"}}},
		{`DROP FUNCTION f(int, text), g`, Drop{Kind: "FUNCTION", Names: []string{"f", "g"}}},
	} {
		d := parseAs[*Drop](t, c.in)
		if d.Kind != c.want.Kind || !reflect.DeepEqual(d.Names, c.want.Names) || d.IfExists != c.want.IfExists || d.Cascade != c.want.Cascade {
			t.Errorf("%s = %+v", c.in, d)
		}
	}
}

func TestDDLErrors(t *testing.T) {
	for _, bad := range []string{
		`CREATE TABLE t (a int, a text)`,
		`CREATE TABLE t (a int PRIMARY KEY, b int, PRIMARY KEY (b))`,
		`CREATE TABLE t (a int, PRIMARY KEY (z))`,
		`CREATE TABLE t (a int UNIQUE (b))`,
		`CREATE TABLE t (a int GENERATED ALWAYS AS (1) STORED)`,
		`CREATE TABLE t (a int) WITH (x)`,
		`CREATE TABLE t AS SELECT 1`,
		`CREATE SOURCE s (a int) APPEND ONLY`,
		`CREATE MATERIALIZED VIEW mv`,
		`CREATE SINK s WITH (connector = 'x')`,
		`CREATE TEMP TABLE t (a int)`,
		`CREATE TABLE t (a numeric(0))`,
		`DROP THING x`,
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

func TestAlterResume(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want AlterResume
	}{
		{`ALTER MATERIALIZED VIEW mv RESUME`, AlterResume{Kind: "MATERIALIZED VIEW", Name: "mv"}},
		{`alter materialized view if exists public.mv resume`, AlterResume{Kind: "MATERIALIZED VIEW", Name: "public.mv", IfExists: true}},
		{`ALTER SINK "Out" RESUME`, AlterResume{Kind: "SINK", Name: "Out"}},
	} {
		x := parseAs[*AlterResume](t, c.sql)
		if x.Kind != c.want.Kind || x.Name != c.want.Name || x.IfExists != c.want.IfExists || x.Text() != c.sql {
			t.Errorf("%s: got %+v", c.sql, x)
		}
	}
	for _, c := range []struct {
		sql  string
		code string
		msg  string
	}{
		{`ALTER SINK s PAUSE`, "0A000", "ALTER SINK … PAUSE is not supported (only RESUME)"},
		{`ALTER MATERIALIZED VIEW mv RESUME now`, "42601", `syntax error at or near "now"`},
		{`ALTER MATERIALIZED VIEW RESUME`, "42601", "syntax error at end of input"},
	} {
		_, err := ParseOne(c.sql)
		var pe *pgerror.Error
		if !errors.As(err, &pe) || string(pe.Code) != c.code || pe.Message != c.msg {
			t.Errorf("%s: err %v, want %s %s", c.sql, err, c.code, c.msg)
		}
	}
}
