package parser

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"sluice/sql/types"
)

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		in    string
		texts []string
	}{
		{`SELECT 1; SELECT 2`, []string{"SELECT 1", "SELECT 2"}},
		{`SELECT ';'; SELECT 2;`, []string{"SELECT ';'", "SELECT 2"}},
		{`SELECT 'a;b'';c'`, []string{"SELECT 'a;b'';c'"}},
		{`SELECT "x;y" FROM t`, []string{`SELECT "x;y" FROM t`}},
		{`SELECT $$;$$; SELECT $f$ ; $$ ; $f$`, []string{"SELECT $$;$$", "SELECT $f$ ; $$ ; $f$"}},
		{"SELECT 1 -- ; comment\n; SELECT /* ; /* ; */ */ 2", []string{"SELECT 1", "SELECT /* ; /* ; */ */ 2"}},
		{`;;SELECT 1;;`, []string{"SELECT 1"}},
		{`SELECT E'\';'; SELECT 2`, []string{`SELECT E'\';'`, "SELECT 2"}},
		{`CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$; SELECT f()`, []string{"CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$", "SELECT f()"}},
		{"  SELECT 1  ;\n BEGIN ; COMMIT", []string{"SELECT 1", "BEGIN", "COMMIT"}},
	} {
		stmts, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		var texts []string
		for _, s := range stmts {
			texts = append(texts, s.Text())
		}
		if !reflect.DeepEqual(texts, c.texts) {
			t.Errorf("Parse(%q) texts = %q, want %q", c.in, texts, c.texts)
		}
	}
}

func TestStatementKinds(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Statement
	}{
		{`SELECT 1`, (*Query)(nil)},
		{`WITH x AS (SELECT 1) SELECT * FROM x`, (*Query)(nil)},
		{`VALUES (1)`, (*Query)(nil)},
		{`(SELECT 1)`, (*Query)(nil)},
		{`INSERT INTO t VALUES (1)`, (*Query)(nil)},
		{`UPDATE t SET a = 1`, (*Query)(nil)},
		{`DELETE FROM t`, (*Query)(nil)},
		{`TABLE t`, (*Query)(nil)},
		{`SHOW TABLES`, &Show{What: "TABLES"}},
		{`show sources`, &Show{What: "SOURCES"}},
		{`SHOW MATERIALIZED VIEWS`, &Show{What: "MATERIALIZED VIEWS"}},
		{`SHOW VIEWS`, &Show{What: "VIEWS"}},
		{`SHOW SINKS`, &Show{What: "SINKS"}},
		{`SHOW FUNCTIONS`, &Show{What: "FUNCTIONS"}},
		{`SHOW ALL`, &Show{What: "ALL"}},
		{`SHOW TABLES FROM public`, &Show{What: "TABLES"}},
		{`SHOW transaction_isolation`, &Show{What: "transaction_isolation"}},
		{`SHOW server_version`, &Show{What: "server_version"}},
		{`SHOW TimeZone`, &Show{What: "timezone"}},
		{`SHOW "TimeZone"`, &Show{What: "timezone"}},
		{`SHOW TIME ZONE`, &Show{What: "timezone"}},
		{`SHOW search_path`, &Show{What: "search_path"}},
		{`SHOW TRANSACTION ISOLATION LEVEL`, &Show{What: "transaction_isolation"}},
		{`SHOW CREATE TABLE t`, &ShowCreate{Kind: "TABLE", Name: "t"}},
		{`SHOW CREATE SOURCE s`, &ShowCreate{Kind: "SOURCE", Name: "s"}},
		{`SHOW CREATE MATERIALIZED VIEW public.mv`, &ShowCreate{Kind: "MATERIALIZED VIEW", Name: "public.mv"}},
		{`SHOW CREATE VIEW v`, &ShowCreate{Kind: "VIEW", Name: "v"}},
		{`SHOW CREATE SINK "Sk"`, &ShowCreate{Kind: "SINK", Name: "Sk"}},
		{`SHOW COLUMNS FROM t`, &Describe{Name: "t"}},
		{`SET x = 1`, &Set{Name: "x", Value: "1"}},
		{`SET x TO 'v'`, &Set{Name: "x", Value: "v"}},
		{`SET SESSION streaming_parallelism = 4`, &Set{Name: "streaming_parallelism", Value: "4"}},
		{`SET LOCAL x = on`, &Set{Name: "x", Value: "on", Local: true}},
		{`SET extra_float_digits = -3`, &Set{Name: "extra_float_digits", Value: "-3"}},
		{`SET search_path TO public, "$user"`, &Set{Name: "search_path", Value: `public, "$user"`}},
		{`SET DateStyle = ISO, MDY`, &Set{Name: "datestyle", Value: "iso, mdy"}},
		{`SET x TO DEFAULT`, &Set{Name: "x", Default: true}},
		{`SET TIME ZONE 'UTC'`, &Set{Name: "timezone", Value: "UTC"}},
		{`SET TIME ZONE LOCAL`, &Set{Name: "timezone", Default: true}},
		{`SET TimeZone = 'Europe/Paris'`, &Set{Name: "timezone", Value: "Europe/Paris"}},
		{`SET NAMES 'UTF8'`, &Set{Name: "client_encoding", Value: "UTF8"}},
		{`SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED`, &Set{Name: "transaction_characteristics", Value: "ISOLATION LEVEL READ COMMITTED"}},
		{`SET TRANSACTION READ ONLY`, &Set{Name: "transaction", Value: "READ ONLY"}},
		{`RESET x`, &Set{Name: "x", Default: true}},
		{`RESET ALL`, &Set{Name: "all", Default: true}},
		{`RESET TIME ZONE`, &Set{Name: "timezone", Default: true}},
		{`DESCRIBE t`, &Describe{Name: "t"}},
		{`DESC public.T`, &Describe{Name: "public.t"}},
		{`FLUSH`, &Flush{}},
		{`SHOW JOBS`, &Show{What: "JOBS"}},
		{`CANCEL JOB 12`, &CancelJobs{IDs: []uint64{12}}},
		{`cancel jobs 12, 7`, &CancelJobs{IDs: []uint64{12, 7}}},
		{`BACKUP TO '/var/backups/s1'`, &Backup{Dir: "/var/backups/s1"}},
		{`BEGIN`, &Begin{}},
		{`BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ`, &Begin{Isolation: "repeatable read"}},
		{`BEGIN WORK READ ONLY`, &Begin{ReadOnly: true}},
		{`START TRANSACTION`, &Begin{}},
		{`START TRANSACTION READ WRITE, ISOLATION LEVEL SERIALIZABLE`, &Begin{Isolation: "serializable"}},
		{`COMMIT AND CHAIN`, &Commit{Chain: true}},
		{`COMMIT AND NO CHAIN`, &Commit{}},
		{`ROLLBACK AND CHAIN`, &Rollback{Chain: true}},
		{`ROLLBACK TO SAVEPOINT sp1`, &Rollback{To: "sp1"}},
		{`ROLLBACK WORK TO "Sp"`, &Rollback{To: "Sp"}},
		{`SAVEPOINT sp1`, &Savepoint{Name: "sp1"}},
		{`RELEASE SAVEPOINT sp1`, &Release{Name: "sp1"}},
		{`RELEASE sp1`, &Release{Name: "sp1"}},
		{`COMMIT`, &Commit{}},
		{`COMMIT WORK`, &Commit{}},
		{`END`, &Commit{}},
		{`END TRANSACTION`, &Commit{}},
		{`ROLLBACK`, &Rollback{}},
		{`ROLLBACK TRANSACTION`, &Rollback{}},
		{`ABORT`, &Rollback{}},
		{`DISCARD ALL`, &Discard{}},
		{`DEALLOCATE foo`, &Deallocate{Name: "foo"}},
		{`DEALLOCATE PREPARE "S_1"`, &Deallocate{Name: "S_1"}},
		{`DEALLOCATE ALL`, &Deallocate{All: true}},
	} {
		st, err := ParseOne(c.in)
		if err != nil {
			t.Errorf("ParseOne(%q): %v", c.in, err)
			continue
		}
		if reflect.TypeOf(st) != reflect.TypeOf(c.want) {
			t.Errorf("ParseOne(%q) = %T, want %T", c.in, st, c.want)
			continue
		}
		if st.Text() != c.in {
			t.Errorf("ParseOne(%q).Text() = %q", c.in, st.Text())
		}
		if _, ok := st.(*Query); ok {
			continue
		}
		// compare without the text
		got := reflect.ValueOf(st).Elem()
		want := reflect.ValueOf(c.want).Elem()
		for k := 0; k < got.NumField(); k++ {
			if got.Type().Field(k).Name == "stmtText" {
				continue
			}
			if !reflect.DeepEqual(got.Field(k).Interface(), want.Field(k).Interface()) {
				t.Errorf("ParseOne(%q).%s = %v, want %v", c.in, got.Type().Field(k).Name, got.Field(k).Interface(), want.Field(k).Interface())
			}
		}
	}
}

func TestExplain(t *testing.T) {
	for _, c := range []struct {
		in       string
		inner    string
		analyze  bool
		verbose  bool
		innerTyp Statement
	}{
		{`EXPLAIN SELECT 1`, "SELECT 1", false, false, (*Query)(nil)},
		{`EXPLAIN ANALYZE VERBOSE SELECT * FROM t`, "SELECT * FROM t", true, true, (*Query)(nil)},
		{`EXPLAIN (ANALYZE, VERBOSE false, FORMAT TEXT) SELECT 1`, "SELECT 1", true, false, (*Query)(nil)},
		{`EXPLAIN CREATE MATERIALIZED VIEW mv AS SELECT 1`, "CREATE MATERIALIZED VIEW mv AS SELECT 1", false, false, (*CreateMaterializedView)(nil)},
		{`EXPLAIN CREATE SINK s FROM mv WITH (connector='blackhole')`, "CREATE SINK s FROM mv WITH (connector='blackhole')", false, false, (*CreateSink)(nil)},
		{`EXPLAIN (SELECT 1)`, "(SELECT 1)", false, false, (*Query)(nil)},
	} {
		ex := parseAs[*Explain](t, c.in)
		if reflect.TypeOf(ex.Stmt) != reflect.TypeOf(c.innerTyp) || ex.Stmt.Text() != c.inner || ex.Analyze != c.analyze || ex.Verbose != c.verbose {
			t.Errorf("%s = %+v (inner %T %q)", c.in, ex, ex.Stmt, ex.Stmt.Text())
		}
	}
	if _, err := Parse(`EXPLAIN`); err == nil {
		t.Errorf("EXPLAIN alone succeeded")
	}
}

func TestParseType(t *testing.T) {
	for _, c := range []struct {
		in   string
		want types.T
	}{
		{"BOOLEAN", types.TBool}, {"bool", types.TBool},
		{"SMALLINT", types.TInt2}, {"int2", types.TInt2},
		{"INT", types.TInt4}, {"integer", types.TInt4}, {"int4", types.TInt4},
		{"BIGINT", types.TInt8}, {"int8", types.TInt8},
		{"REAL", types.TFloat4}, {"float4", types.TFloat4}, {"float(10)", types.TFloat4},
		{"DOUBLE PRECISION", types.TFloat8}, {"float8", types.TFloat8}, {"FLOAT", types.TFloat8}, {"float(53)", types.TFloat8},
		{"NUMERIC", types.TNumeric}, {"decimal", types.TNumeric},
		{"NUMERIC(12,2)", types.T{Fam: types.Numeric, Prec: 12, Scale: 2}}, {"decimal(5)", types.T{Fam: types.Numeric, Prec: 5}},
		{"TEXT", types.TText}, {"STRING", types.TText},
		{"VARCHAR", types.TVarchar}, {"varchar(10)", types.T{Fam: types.Varchar, Prec: 10}},
		{"CHARACTER VARYING", types.TVarchar}, {"character varying(3)", types.T{Fam: types.Varchar, Prec: 3}},
		{"BYTEA", types.TBytea}, {"DATE", types.TDate},
		{"TIME", types.TTime}, {"time without time zone", types.TTime}, {"time(3)", types.TTime},
		{"TIMESTAMP", types.TTimestamp}, {"timestamp without time zone", types.TTimestamp}, {"timestamp(6)", types.TTimestamp},
		{"TIMESTAMPTZ", types.TTimestampTZ}, {"timestamp with time zone", types.TTimestampTZ}, {"timestamp(3) with time zone", types.TTimestampTZ},
		{"INTERVAL", types.TInterval}, {"interval day to second", types.TInterval},
		{"JSONB", types.TJSONB}, {"json", types.TJSONB},
		{"oid", types.TOid}, {"name", types.TName}, {"regclass", types.TRegClass}, {`"char"`, types.TChar},
		{"text[]", types.TTextArray}, {"_text", types.TTextArray}, {"pg_catalog.int8", types.TInt8},
		{"UUID", types.TUUID}, {"pg_catalog.uuid", types.TUUID},
	} {
		got, err := ParseType(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseType(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	// every canonical name parses back to its type
	for _, typ := range []types.T{
		types.TBool, types.TInt2, types.TInt4, types.TInt8, types.TFloat4, types.TFloat8, types.TNumeric,
		{Fam: types.Numeric, Prec: 12, Scale: 2}, types.TText, types.TVarchar, {Fam: types.Varchar, Prec: 20},
		types.TBytea, types.TDate, types.TTime, types.TTimestamp, types.TTimestampTZ, types.TInterval,
		types.TJSONB, types.TOid, types.TName, types.TRegClass, types.TChar, types.TTextArray, types.TUUID,
		types.TInt4Array, types.TInt8Array, types.TFloat8Array, types.TNumericArray, types.TTstzArray,
		types.TFloat4Array, types.TDateArray, types.TTimeArray, types.TTsArray, types.TIntervalArr,
		types.TJSONBArray, types.TVarcharArray, {Fam: types.VarcharArray, Prec: 7}, types.TUUIDArray, types.TByteaArray,
	} {
		got, err := ParseType(typ.String())
		if err != nil || got != typ {
			t.Errorf("ParseType(%q) = %v, %v; want %v", typ.String(), got, err, typ)
		}
	}
	for _, bad := range []string{"foo", "char(3)", "money", "money[]", "time with time zone[]", "time with time zone", "numeric(2,3)", "varchar(0)", "int(3)", "", "int int", "myschema.t"} {
		if _, err := ParseType(bad); err == nil {
			t.Errorf("ParseType(%q) succeeded", bad)
		}
	}
}

func TestPsqlDescribeQueries(t *testing.T) {
	data, err := os.ReadFile("testdata/psql_describe.sql")
	if err != nil {
		t.Fatal(err)
	}
	queries := strings.Split(string(data), "\n-- next\n")
	if len(queries) < 10 {
		t.Fatalf("only %d queries", len(queries))
	}
	for _, sql := range queries {
		stmts, err := Parse(sql)
		if err != nil {
			t.Errorf("Parse(%q): %v", sql, err)
			continue
		}
		if len(stmts) != 1 {
			t.Errorf("Parse(%q): %d statements", sql, len(stmts))
			continue
		}
		if _, ok := stmts[0].(*Query); !ok {
			t.Errorf("Parse(%q) = %T", sql, stmts[0])
		}
	}
}
