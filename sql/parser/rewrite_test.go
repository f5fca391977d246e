package parser

import (
	"strings"
	"testing"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
)

// restoreNode renders a TiDB AST node with TiDB's default restore flags.
func restoreNode(t testing.TB, n ast.Node) string {
	t.Helper()
	var sb strings.Builder
	if err := n.Restore(format.NewRestoreCtx(format.DefaultRestoreFlags, &sb)); err != nil {
		t.Fatalf("restore: %v", err)
	}
	return sb.String()
}

// parseQuery parses sql as exactly one query.
func parseQuery(t testing.TB, sql string) *Query {
	t.Helper()
	st, err := ParseOne(sql)
	if err != nil {
		t.Fatalf("ParseOne(%q): %v", sql, err)
	}
	q, ok := st.(*Query)
	if !ok {
		t.Fatalf("ParseOne(%q) = %T, want *Query", sql, st)
	}
	return q
}

type rewriteCase struct {
	name string
	in   string
	want string // restored TiDB AST
}

func runRewriteCases(t *testing.T, cases []rewriteCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := parseQuery(t, c.in)
			if got := restoreNode(t, q.Node); got != c.want {
				t.Errorf("%s\nrewritten: %s\n got: %s\nwant: %s", c.in, q.Rewritten, got, c.want)
			}
		})
	}
}

func TestRewriteIdentifiers(t *testing.T) {
	runRewriteCases(t, []rewriteCase{
		{"fold", `SELECT Foo, FOO, foo FROM MyTable`, "SELECT `foo`,`foo`,`foo` FROM `mytable`"},
		{"quoted keeps case", `SELECT "Bar", "MiXed"."Col" FROM "T"`, "SELECT `Bar`,`MiXed`.`Col` FROM `T`"},
		{"quoted escape", `SELECT "a""b", "x` + "`" + `y" FROM t`, "SELECT `a\"b`,`x``y` FROM `t`"},
		{"star", `SELECT t.*, * FROM t`, "SELECT `t`.*,* FROM `t`"},
		{"aliases", `SELECT a AS "Alias", b bb FROM t AS "T" , u uu`, "SELECT `a` AS `Alias`,`b` AS `bb` FROM (`t` AS `T`) JOIN `u` AS `uu`"},
		{"mysql reserved names", `SELECT key, range, rank, "select", value, first, last, name, type, data FROM t`,
			"SELECT `key`,`range`,`rank`,`select`,`value`,`first`,`last`,`name`,`type`,`data` FROM `t`"},
		{"qualified", `SELECT pg_catalog.pg_class.oid FROM pg_catalog.pg_class`, "SELECT `pg_catalog`.`pg_class`.`oid` FROM `pg_catalog`.`pg_class`"},
		{"unicode", `SELECT "ÿé", é FROM t`, "SELECT `ÿé`,`é` FROM `t`"},
		{"truncated to 63 bytes", `SELECT ` + strings.Repeat("a", 70) + ` FROM t`, "SELECT `" + strings.Repeat("a", 63) + "` FROM `t`"},
		{"function names", `SELECT COUNT(*), Now(), pg_catalog.format_type(1, 2), myschema.myfunc(1), "MyFunc"(1)`,
			"SELECT COUNT(1),NOW(),FORMAT_TYPE(1, 2),`myschema`.`myfunc`(1),MYFUNC(1)"},
	})
}

func TestRewriteCasts(t *testing.T) {
	runRewriteCases(t, []rewriteCase{
		{"names", `SELECT a::bigint, b::numeric(12,2), c::double precision, d::timestamp with time zone, e::regclass, f::text[], g::oid, h::name, i::pg_catalog.text, j::varchar(3)`,
			"SELECT __PG_CAST(`a`, 'bigint'),__PG_CAST(`b`, 'numeric(12,2)'),__PG_CAST(`c`, 'double precision'),__PG_CAST(`d`, 'timestamp with time zone'),__PG_CAST(`e`, 'regclass'),__PG_CAST(`f`, 'text[]'),__PG_CAST(`g`, 'oid'),__PG_CAST(`h`, 'name'),__PG_CAST(`i`, 'text'),__PG_CAST(`j`, 'character varying(3)')"},
		{"unsupported type names pass through", `SELECT a::pg_catalog.regtype, b::int[], c::foo`,
			"SELECT __PG_CAST(`a`, 'regtype'),__PG_CAST(`b`, 'integer[]'),__PG_CAST(`c`, 'foo')"},
		{"CAST", `SELECT CAST(a AS INT), CAST(b AS character varying), CAST(c AS timestamp)`,
			"SELECT __PG_CAST(`a`, 'integer'),__PG_CAST(`b`, 'character varying'),__PG_CAST(`c`, 'timestamp without time zone')"},
		{"left operands", `SELECT (a + b)::text, f(x)::int, a.b.c::int, x[1]::int, 'abc'::text, 1::text, $1::int`,
			"SELECT __PG_CAST((`a`+`b`), 'text'),__PG_CAST(F(`x`), 'integer'),__PG_CAST(`a`.`b`.`c`, 'integer'),__PG_CAST(__PG_SUBSCRIPT(`x`, 1), 'integer'),__PG_CAST('abc', 'text'),__PG_CAST(1, 'text'),__PG_CAST(__PG_PARAM(1), 'integer')"},
		{"binds tightest", `SELECT -a::int, a + b::int * 2, a::int::text`,
			"SELECT -__PG_CAST(`a`, 'integer'),`a`+__PG_CAST(`b`, 'integer')*2,__PG_CAST(__PG_CAST(`a`, 'integer'), 'text')"},
		{"regclass oid chain", `SELECT '123'::regclass::oid`, "SELECT __PG_CAST(__PG_CAST('123', 'regclass'), 'oid')"},
		{"typed literals", `SELECT TIMESTAMP '2024-01-01 00:00:00', DATE '2024-01-01', TIME '12:00', TIMESTAMPTZ '2024-01-01 00:00:00+00', TIMESTAMP WITH TIME ZONE '2024-01-01', int '1', jsonb '{}'`,
			"SELECT __PG_CAST('2024-01-01 00:00:00', 'timestamp without time zone'),__PG_CAST('2024-01-01', 'date'),__PG_CAST('12:00', 'time without time zone'),__PG_CAST('2024-01-01 00:00:00+00', 'timestamp with time zone'),__PG_CAST('2024-01-01', 'timestamp with time zone'),__PG_CAST('1', 'integer'),__PG_CAST('{}', 'jsonb')"},
		{"type words as columns", `SELECT date, time, timestamp, text FROM t WHERE date > '2024-01-01'`,
			"SELECT `date`,`time`,`timestamp`,`text` FROM `t` WHERE `date`>'2024-01-01'"},
	})
}

func TestRewriteParams(t *testing.T) {
	runRewriteCases(t, []rewriteCase{
		{"expressions", `SELECT $1, $2 + 1 FROM t WHERE a = $3 AND b IN ($4, $5)`,
			"SELECT __PG_PARAM(1),__PG_PARAM(2)+1 FROM `t` WHERE `a`=__PG_PARAM(3) AND `b` IN (__PG_PARAM(4),__PG_PARAM(5))"},
		{"insert", `INSERT INTO t VALUES ($1, $2)`, "INSERT INTO `t` VALUES (__PG_PARAM(1),__PG_PARAM(2))"},
		{"limit", `SELECT * FROM t LIMIT $1 OFFSET $2`, "SELECT * FROM `t` LIMIT ?,?"},
	})
	q := parseQuery(t, `SELECT * FROM t WHERE a = $3 LIMIT $2 OFFSET $1`)
	var got []int
	q.Node.Accept(visitFunc(func(n ast.Node) {
		if p, ok := n.(*ParamMarkerExpr); ok {
			got = append(got, p.N)
		}
	}))
	if len(got) != 2 || got[0]+got[1] != 3 {
		t.Errorf("param marker numbers = %v, want 2 and 1", got)
	}
	sel := q.Node.(*ast.SelectStmt)
	if sel.Limit.Count.(*ParamMarkerExpr).N != 2 || sel.Limit.Offset.(*ParamMarkerExpr).N != 1 {
		t.Errorf("LIMIT params = %d, %d", sel.Limit.Count.(*ParamMarkerExpr).N, sel.Limit.Offset.(*ParamMarkerExpr).N)
	}
}

// visitFunc is an ast.Visitor calling f on every node.
type visitFunc func(ast.Node)

func (f visitFunc) Enter(n ast.Node) (ast.Node, bool) { f(n); return n, false }
func (f visitFunc) Leave(n ast.Node) (ast.Node, bool) { return n, true }

func TestRewriteIntervals(t *testing.T) {
	runRewriteCases(t, []rewriteCase{
		{"unit field", `SELECT INTERVAL '10' SECOND, INTERVAL '2' DAY, INTERVAL '5' MINUTE, INTERVAL '1' HOUR TO MINUTE`,
			"SELECT __PG_INTERVAL('10 second'),__PG_INTERVAL('2 day'),__PG_INTERVAL('5 minute'),__PG_INTERVAL('1 minute')"},
		{"string", `SELECT INTERVAL '1 hour', interval '5 minutes', INTERVAL '1:30' HOUR TO MINUTE, INTERVAL '1 day 2 hours'`,
			"SELECT __PG_INTERVAL('1 hour'),__PG_INTERVAL('5 minutes'),__PG_INTERVAL('1:30'),__PG_INTERVAL('1 day 2 hours')"},
		{"bare number", `SELECT INTERVAL 3 DAYS`, "SELECT __PG_INTERVAL('3 day')"},
		{"in arithmetic", `SELECT ts - INTERVAL '5' SECOND FROM t`, "SELECT `ts`-__PG_INTERVAL('5 second') FROM `t`"},
		{"cast", `SELECT '1 hour'::interval`, "SELECT __PG_CAST('1 hour', 'interval')"},
	})
}

func TestRewriteSpecialFunctions(t *testing.T) {
	runRewriteCases(t, []rewriteCase{
		{"extract", `SELECT extract(epoch FROM ts), EXTRACT(DOW FROM ts), extract(doy from ts), extract('year' from ts), extract(year from ts + interval '1 day') FROM t`,
			"SELECT __PG_EXTRACT('epoch', `ts`),__PG_EXTRACT('dow', `ts`),__PG_EXTRACT('doy', `ts`),__PG_EXTRACT('year', `ts`),__PG_EXTRACT('year', `ts`+__PG_INTERVAL('1 day')) FROM `t`"},
		{"date_part stays", `SELECT date_part('year', ts) FROM t`, "SELECT DATE_PART('year', `ts`) FROM `t`"},
		{"substring", `SELECT substring(s FROM 2 FOR 3), substring(s FROM 2), substring(s FOR 3), substring(s, 1, 2), substring(s FOR 3 FROM 2) FROM t`,
			"SELECT SUBSTRING(`s`, 2, 3),SUBSTRING(`s`, 2),SUBSTRING(`s`, 1, 3),SUBSTRING(`s`, 1, 2),SUBSTRING(`s`, 2, 3) FROM `t`"},
		{"position", `SELECT position('a' IN s), position(x || 'b' IN s) FROM t`,
			"SELECT __PG_POSITION('a', `s`),__PG_POSITION(__PG_CONCAT(`x`, 'b'), `s`) FROM `t`"},
		{"trim", `SELECT trim(both 'x' FROM s), trim(leading FROM s), trim(trailing 'y' FROM s), trim(s), trim('x' FROM s), trim(s, 'x'), trim(leading s, 'x') FROM t`,
			"SELECT BTRIM(`s`, 'x'),LTRIM(`s`),RTRIM(`s`, 'y'),BTRIM(`s`),BTRIM(`s`, 'x'),BTRIM(`s`, 'x'),LTRIM(`s`, 'x') FROM `t`"},
		{"overlay", `SELECT overlay(s PLACING 'x' FROM 2 FOR 3) FROM t`, "SELECT __PG_OVERLAY(`s`, 'x', 2, 3) FROM `t`"},
		{"niladic", `SELECT now(), current_timestamp, current_date, localtimestamp, user, session_user, current_schema, current_user, current_timestamp(3)`,
			"SELECT NOW(),CURRENT_TIMESTAMP(),CURRENT_DATE(),LOCALTIMESTAMP(),CURRENT_USER(),SESSION_USER(),CURRENT_SCHEMA(),CURRENT_USER(),CURRENT_TIMESTAMP(3)"},
		{"mysql keyword functions", `SELECT left(s, 2), right(s, 3), replace(s, 'a', 'b'), repeat(s, 2), coalesce(a, b), nullif(a, b), greatest(a, b), least(a, b) FROM t`,
			"SELECT LEFT(`s`, 2),RIGHT(`s`, 3),REPLACE(`s`, 'a', 'b'),REPEAT(`s`, 2),COALESCE(`a`, `b`),NULLIF(`a`, `b`),GREATEST(`a`, `b`),LEAST(`a`, `b`) FROM `t`"},
		{"tidb reserved function name", `SELECT convert(a, 'UTF8'), insert(x) FROM t`, "SELECT CONVERT(`a` USING 'UTF8'),INSERT(`x`) FROM `t`"},
	})
}

func TestRewriteAggregates(t *testing.T) {
	runRewriteCases(t, []rewriteCase{
		{"filter", `SELECT count(*) FILTER (WHERE a > 1), sum(b) FILTER (WHERE b IS NOT NULL) FROM t`,
			"SELECT __PG_FILTER(COUNT(1), `a`>1),__PG_FILTER(SUM(`b`), `b` IS NOT NULL) FROM `t`"},
		{"filter over", `SELECT sum(b) FILTER (WHERE b > 0) OVER (PARTITION BY c) FROM t`,
			"SELECT __PG_FILTER(SUM(`b`) OVER (PARTITION BY `c`), `b`>0) FROM `t`"},
		{"distinct", `SELECT count(DISTINCT a), array_agg(DISTINCT a), string_agg(DISTINCT a, ',') FROM t`,
			"SELECT COUNT(DISTINCT `a`),__PG_AGG_DISTINCT(ARRAY_AGG(`a`)),__PG_AGG_DISTINCT(STRING_AGG(`a`, ',')) FROM `t`"},
		{"ordered", `SELECT string_agg(a, ',' ORDER BY b DESC NULLS LAST, c), percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM t`,
			"SELECT __PG_AGG_ORDER(STRING_AGG(`a`, ','), `b`, 'desc nulls last', `c`, 'asc'),__PG_AGG_ORDER(PERCENTILE_CONT(0.5), `x`, 'asc') FROM `t`"},
		{"window", `SELECT rank() OVER w, row_number() OVER (ORDER BY a), lag(a, 1) OVER (PARTITION BY b ORDER BY c ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) FROM t WINDOW w AS (PARTITION BY b ORDER BY c)`,
			"SELECT RANK() OVER `w`,ROW_NUMBER() OVER (ORDER BY `a`),LAG(`a`, 1) OVER (PARTITION BY `b` ORDER BY `c` ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) FROM `t` WINDOW `w` AS (PARTITION BY `b` ORDER BY `c`)"},
		{"range frame interval", `SELECT sum(a) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW), sum(a) OVER (ORDER BY ts RANGE INTERVAL '2 days' PRECEDING) FROM t`,
			"SELECT SUM(`a`) OVER (ORDER BY `ts` RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW),SUM(`a`) OVER (ORDER BY `ts` RANGE BETWEEN INTERVAL '2' DAY PRECEDING AND CURRENT ROW) FROM `t`"},
		{"frame numbers", `SELECT sum(a) OVER (ORDER BY b ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING) FROM t`,
			"SELECT SUM(`a`) OVER (ORDER BY `b` ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING) FROM `t`"},
	})
}

func TestRewriteOperators(t *testing.T) {
	runRewriteCases(t, []rewriteCase{
		{"regex", `SELECT a ~ 'x', a ~* 'x', a !~ 'x', a !~* 'x' FROM t`,
			"SELECT __PG_REGEX(`a`, 'x'),__PG_REGEXI(`a`, 'x'),NOT __PG_REGEX(`a`, 'x'),NOT __PG_REGEXI(`a`, 'x') FROM `t`"},
		{"OPERATOR()", `SELECT a OPERATOR(pg_catalog.~) 'y', a OPERATOR(pg_catalog.=) b, a OPERATOR(+) 1 FROM t`,
			"SELECT __PG_REGEX(`a`, 'y'),`a`=`b`,`a`+1 FROM `t`"},
		{"ilike", `SELECT a ILIKE 'x', a NOT ILIKE 'y', a LIKE 'z' ESCAPE '!', a NOT LIKE 'w', a ~~ 'v', a !~~* 'u' FROM t`,
			"SELECT `a` ILIKE 'x',`a` NOT ILIKE 'y',`a` LIKE 'z' ESCAPE '!',`a` NOT LIKE 'w',`a` LIKE 'v',`a` NOT ILIKE 'u' FROM `t`"},
		{"distinct from", `SELECT a IS DISTINCT FROM b, a IS NOT DISTINCT FROM b + 1 FROM t`,
			"SELECT __PG_DISTINCT(`a`, `b`),NOT __PG_DISTINCT(`a`, `b`+1) FROM `t`"},
		{"is", `SELECT a IS NULL, a IS NOT NULL, a IS TRUE, a IS NOT FALSE, a IS UNKNOWN, a ISNULL, a NOTNULL FROM t`,
			"SELECT `a` IS NULL,`a` IS NOT NULL,`a` IS TRUE,`a` IS NOT FALSE,`a` IS NULL,`a` IS NULL,`a` IS NOT NULL FROM `t`"},
		{"similar", `SELECT a SIMILAR TO 'x%', a NOT SIMILAR TO 'y' ESCAPE '#' FROM t`,
			"SELECT __PG_SIMILAR(`a`, 'x%'),NOT __PG_SIMILAR(`a`, 'y', '#') FROM `t`"},
		{"at time zone", `SELECT x AT TIME ZONE 'UTC', x::timestamp AT TIME ZONE 'UTC' FROM t`,
			"SELECT __PG_AT_TIME_ZONE(`x`, 'UTC'),__PG_AT_TIME_ZONE(__PG_CAST(`x`, 'timestamp without time zone'), 'UTC') FROM `t`"},
		{"json", `SELECT d->'a', d->>'b', d#>'{a,b}', d#>>'{a}', d @> '{}', d <@ '{}', d ? 'k', d ?| '{a}', d ?& '{a}', a && b, d #- '{a}' FROM t`,
			"SELECT __PG_JSON_GET(`d`, 'a'),__PG_JSON_GET_TEXT(`d`, 'b'),__PG_JSON_PATH(`d`, '{a,b}'),__PG_JSON_PATH_TEXT(`d`, '{a}'),__PG_CONTAINS(`d`, '{}'),__PG_CONTAINED_BY(`d`, '{}'),__PG_JSON_EXISTS(`d`, 'k'),__PG_JSON_EXISTS_ANY(`d`, '{a}'),__PG_JSON_EXISTS_ALL(`d`, '{a}'),__PG_OVERLAP(`a`, `b`),__PG_JSON_DELETE_PATH(`d`, '{a}') FROM `t`"},
		{"math", `SELECT 2 ^ 3 ^ 2, -x ^ 2, a # b, a & b | c, a << 1, ~a, @ a, |/ a, ||/ a, 7 % 3, a != b FROM t`,
			"SELECT POWER(POWER(2, 3), 2),POWER(-`x`, 2),`a`^`b`,`a`&`b`|`c`,`a`<<1,~`a`,ABS(`a`),SQRT(`a`),CBRT(`a`),7%3,`a`!=`b` FROM `t`"},
		{"any all", `SELECT a = ANY (SELECT b FROM u), a = ANY ($1), a <> ALL (ARRAY[1,2]), a < SOME (SELECT 1), 'd' = any(k) FROM t`,
			"SELECT `a`=ANY (SELECT `b` FROM `u`),__PG_ANY(`a`, '=', __PG_PARAM(1)),__PG_ALL(`a`, '<>', __PG_ARRAY(1, 2)),`a`<ANY (SELECT 1),__PG_ANY('d', '=', `k`) FROM `t`"},
		{"between", `SELECT a BETWEEN 1 AND 2 + 3, a NOT BETWEEN b AND c, a BETWEEN SYMMETRIC 3 AND 1 FROM t`,
			"SELECT `a` BETWEEN 1 AND 2+3,`a` NOT BETWEEN `b` AND `c`,__PG_BETWEEN_SYMMETRIC(`a`, 3, 1) FROM `t`"},
		{"in", `SELECT a IN (1, 2), a NOT IN (SELECT 1), (a, b) IN ((1, 2)) FROM t`,
			"SELECT `a` IN (1,2),`a` NOT IN (SELECT 1),ROW(`a`,`b`) IN (ROW(1,2)) FROM `t`"},
		{"collate dropped", `SELECT a COLLATE "C", b COLLATE pg_catalog.default = 'x' FROM t`, "SELECT `a`,`b`='x' FROM `t`"},
	})
}

func TestRewritePrecedence(t *testing.T) {
	runRewriteCases(t, []rewriteCase{
		// || binds looser than + in Postgres but tighter in TiDB.
		{"concat vs plus", `SELECT 'a' || 1 + 2, 'a' || 'b' || 'c'`, "SELECT __PG_CONCAT('a', 1+2),__PG_CONCAT(__PG_CONCAT('a', 'b'), 'c')"},
		{"concat in like", `SELECT a LIKE 'x' || 'y' FROM t`, "SELECT `a` LIKE __PG_CONCAT('x', 'y') FROM `t`"},
		{"not", `SELECT NOT a = b, NOT (a AND b), NOT a IS NULL FROM t`, "SELECT NOT `a`=`b`,NOT (`a` AND `b`),NOT `a` IS NULL FROM `t`"},
		{"and or", `SELECT a OR b AND c, (a OR b) AND c FROM t`, "SELECT `a` OR `b` AND `c`,(`a` OR `b`) AND `c` FROM `t`"},
		{"regex negation in comparison", `SELECT (a !~ 'x') = true FROM t`, "SELECT (NOT __PG_REGEX(`a`, 'x'))=TRUE FROM `t`"},
		{"not regex compared", `SELECT a !~ 'x' = true FROM t`, "SELECT (NOT __PG_REGEX(`a`, 'x'))=TRUE FROM `t`"},
		{"unary minus of concat", `SELECT -(a || b) FROM t`, "SELECT -(__PG_CONCAT(`a`, `b`)) FROM `t`"},
		{"arith", `SELECT a - b - c, a - (b - c), a * b + c, a * (b + c) FROM t`, "SELECT `a`-`b`-`c`,`a`-(`b`-`c`),`a`*`b`+`c`,`a`*(`b`+`c`) FROM `t`"},
		{"comparison of comparison", `SELECT a = b IS NULL FROM t`, "SELECT `a`=`b` IS NULL FROM `t`"},
	})
}

func TestRewriteArrays(t *testing.T) {
	runRewriteCases(t, []rewriteCase{
		{"subscripts", `SELECT a[1], a[1][2], a[1:2], a[:2], a[2:], (f(x))[1] FROM t`,
			"SELECT __PG_SUBSCRIPT(`a`, 1),__PG_SUBSCRIPT(`a`, 1, 2),__PG_SLICE(`a`, 1, 2),__PG_SLICE(`a`, NULL, 2),__PG_SLICE(`a`, 2, NULL),__PG_SUBSCRIPT((F(`x`)), 1) FROM `t`"},
		{"constructors", `SELECT ARRAY[1, 2], ARRAY[[1,2],[3,4]], ARRAY[]::int[], ARRAY(SELECT 1)`,
			"SELECT __PG_ARRAY(1, 2),__PG_ARRAY(__PG_ARRAY(1, 2), __PG_ARRAY(3, 4)),__PG_CAST(__PG_ARRAY(), 'integer[]'),__PG_ARRAY_SUBQUERY((SELECT 1))"},
	})
}

func TestRewriteLiterals(t *testing.T) {
	runRewriteCases(t, []rewriteCase{
		{"bools and null", `SELECT true, false, null, TRUE`, "SELECT TRUE,FALSE,NULL,TRUE"},
		{"strings", `SELECT 'it''s', E'it\'s', 'back\slash', E'a\tb\\c', $$dollar 'q'$$, $tag$x$$y$tag$, U&'\0041', U&'d!0061t!+000061' UESCAPE '!', N'n'`,
			"SELECT 'it''s','it''s','back\\slash','a\tb\\c','dollar ''q''','x$$y','A','data','n'"},
		{"escape newline", "SELECT E'a\\nb'", "SELECT 'a\nb'"},
		{"continuation", "SELECT 'a'\n  'b'", "SELECT 'ab'"},
		{"concat", `SELECT 'a' || 'b'`, "SELECT __PG_CONCAT('a', 'b')"},
		{"numbers", `SELECT 1.5, .5, 5., 1e10, 1E-3, 123456789012345678901234567890, 9223372036854775807, 18446744073709551615, 42`,
			"SELECT 1.5,.5,(5.),__PG_CAST('1e10', 'numeric'),__PG_CAST('1E-3', 'numeric'),123456789012345678901234567890,9223372036854775807,18446744073709551615,42"},
		{"comments", "SELECT /* a /* nested */ comment */ 1 -- trailing\n + 2", "SELECT 1+2"},
	})
}

func TestRewriteFromClause(t *testing.T) {
	runRewriteCases(t, []rewriteCase{
		{"full join", `SELECT * FROM a FULL JOIN b ON a.x = b.x FULL OUTER JOIN c USING (x)`,
			"SELECT * FROM (`a` STRAIGHT_JOIN `b` ON `a`.`x`=`b`.`x`) STRAIGHT_JOIN `c` USING (`x`)"},
		{"joins", `SELECT * FROM a LEFT JOIN b ON true RIGHT OUTER JOIN c ON true INNER JOIN d ON true CROSS JOIN e NATURAL JOIN f`,
			"SELECT * FROM ((((`a` LEFT JOIN `b` ON TRUE) RIGHT JOIN `c` ON TRUE) JOIN `d` ON TRUE) JOIN `e`) NATURAL JOIN `f`"},
		{"derived", `SELECT * FROM (SELECT 1 AS a) AS s, (SELECT 2) t`, "SELECT * FROM (SELECT 1 AS `a`) AS `s`, (SELECT 2) AS `t`"},
		{"parenthesised join", `SELECT * FROM (a JOIN b ON true) JOIN c ON true`, "SELECT * FROM (`a` JOIN `b` ON TRUE) JOIN `c` ON TRUE"},
		{"only lateral", `SELECT * FROM ONLY t, LATERAL (SELECT 1) x`, "SELECT * FROM (`t`) JOIN LATERAL (SELECT 1) AS `x`"},
		{"values alias", `SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v(id, name)`, "SELECT * FROM (VALUES ROW(1,'a'), ROW(2,'b')) AS `v`"},
		{"tumble", `SELECT * FROM TUMBLE(bid, date_time, INTERVAL '10' MINUTE)`, "SELECT * FROM `__pg_tumble__1`"},
		{"hop and tumble", `SELECT * FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND) AS h JOIN TUMBLE(t, ts, INTERVAL '1' HOUR) w ON h.a = w.a`,
			"SELECT * FROM `__pg_hop__1` AS `h` JOIN `__pg_tumble__2` AS `w` ON `h`.`a`=`w`.`a`"},
		{"other table functions", `SELECT * FROM generate_series(1, 10) AS g(i), pg_catalog.unnest(ARRAY[1,2]) u`,
			"SELECT * FROM (`__pg_func__1` AS `g`) JOIN `__pg_func__2` AS `u`"},
		{"lateral function", `SELECT * FROM t, LATERAL unnest(t.arr) AS u(x)`, "SELECT * FROM (`t`) JOIN `__pg_func__1` AS `u`"},
		{"where without from", `SELECT 1 WHERE false`, "SELECT 1 FROM DUAL WHERE FALSE"},
	})
}

func TestTableFuncs(t *testing.T) {
	q := parseQuery(t, `SELECT window_start, count(*) FROM HOP(bids, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND) GROUP BY window_start`)
	tf, ok := q.TableFuncs["__pg_hop__1"]
	if !ok {
		t.Fatalf("TableFuncs = %v", q.TableFuncs)
	}
	if tf.Name != "hop" || len(tf.Args) != 4 {
		t.Fatalf("TableFunc = %+v", tf)
	}
	if c, ok := tf.Args[0].(*ast.ColumnNameExpr); !ok || c.Name.Name.O != "bids" {
		t.Errorf("arg 0 = %s, want column bids", restoreNode(t, tf.Args[0]))
	}
	want := []string{"`bids`", "`date_time`", "__PG_INTERVAL('2 second')", "__PG_INTERVAL('10 second')"}
	for k, a := range tf.Args {
		if got := restoreNode(t, a); got != want[k] {
			t.Errorf("arg %d = %s, want %s", k, got, want[k])
		}
	}
	// the table source of a table function
	sel := q.Node.(*ast.SelectStmt)
	ts := sel.From.TableRefs.Left.(*ast.TableSource)
	if tn := ts.Source.(*ast.TableName); tn.Name.O != "__pg_hop__1" || ts.AsName.O != "" {
		t.Errorf("table source = %s AS %s", tn.Name.O, ts.AsName.O)
	}

	q = parseQuery(t, `SELECT * FROM generate_series(1, $1) AS g(i)`)
	tf = q.TableFuncs["__pg_func__1"]
	if tf.Name != "generate_series" || len(tf.Args) != 2 || restoreNode(t, tf.Args[1]) != "__PG_PARAM(1)" {
		t.Errorf("generate_series = %+v", tf)
	}
	ts = q.Node.(*ast.SelectStmt).From.TableRefs.Left.(*ast.TableSource)
	if cols := q.ColumnAliases[ts]; len(cols) != 1 || cols[0] != "i" || ts.AsName.O != "g" {
		t.Errorf("column aliases = %v (alias %s)", cols, ts.AsName.O)
	}
}

func TestColumnAliases(t *testing.T) {
	q := parseQuery(t, `SELECT * FROM (VALUES (1, 'a')) AS v("Id", name) JOIN t AS x(a) ON true`)
	var got []string
	for ts, cols := range q.ColumnAliases {
		got = append(got, ts.AsName.O+":"+strings.Join(cols, ","))
	}
	if len(got) != 2 {
		t.Fatalf("ColumnAliases = %v", got)
	}
	joined := strings.Join(got, " ")
	if !strings.Contains(joined, "v:Id,name") || !strings.Contains(joined, "x:a") {
		t.Errorf("ColumnAliases = %v", got)
	}
}

func TestFullJoinIsStraightJoin(t *testing.T) {
	q := parseQuery(t, `SELECT * FROM a FULL OUTER JOIN b ON a.id = b.id`)
	j := q.Node.(*ast.SelectStmt).From.TableRefs
	if !j.StraightJoin || j.On == nil || j.Right == nil {
		t.Fatalf("join = %+v, want StraightJoin with ON", j)
	}
	q = parseQuery(t, `SELECT * FROM a LEFT JOIN b ON a.id = b.id`)
	if j := q.Node.(*ast.SelectStmt).From.TableRefs; j.StraightJoin || j.Tp != ast.LeftJoin {
		t.Fatalf("left join = %+v", j)
	}
}

func TestRewriteLimit(t *testing.T) {
	runRewriteCases(t, []rewriteCase{
		{"limit offset", `SELECT * FROM t LIMIT 10 OFFSET 5`, "SELECT * FROM `t` LIMIT 5,10"},
		{"offset limit", `SELECT * FROM t OFFSET 5 LIMIT 10`, "SELECT * FROM `t` LIMIT 5,10"},
		{"offset alone", `SELECT * FROM t OFFSET 5`, "SELECT * FROM `t` LIMIT 5,18446744073709551615"},
		{"fetch", `SELECT * FROM t OFFSET 5 ROWS FETCH FIRST 3 ROWS ONLY`, "SELECT * FROM `t` LIMIT 5,3"},
		{"fetch next row", `SELECT * FROM t FETCH NEXT ROW ONLY`, "SELECT * FROM `t` LIMIT 1"},
		{"limit all", `SELECT * FROM t LIMIT ALL`, "SELECT * FROM `t`"},
		{"paren", `SELECT * FROM t LIMIT (3)`, "SELECT * FROM `t` LIMIT 3"},
		{"union", `SELECT 1 UNION SELECT 2 ORDER BY 1 LIMIT 1`, "SELECT 1 UNION SELECT 2 ORDER BY 1 LIMIT 1"},
		{"subquery", `SELECT * FROM (SELECT a FROM t LIMIT 1) s`, "SELECT * FROM (SELECT `a` FROM `t` LIMIT 1) AS `s`"},
	})
}

func TestNullsOrder(t *testing.T) {
	q := parseQuery(t, `SELECT * FROM t ORDER BY a NULLS FIRST, b DESC NULLS LAST, c, 1 NULLS LAST`)
	if got := restoreNode(t, q.Node); got != "SELECT * FROM `t` ORDER BY `a`,`b` DESC,`c`,1" {
		t.Errorf("restored %s", got)
	}
	want := []int{1, 2, 0, 2}
	if len(q.NullsOrder) != len(want) {
		t.Fatalf("NullsOrder = %v, want %v", q.NullsOrder, want)
	}
	items := q.Node.(*ast.SelectStmt).OrderBy.Items
	for k, w := range want {
		if q.NullsOrder[k] != w || q.Nulls(items[k]) != w {
			t.Errorf("item %d: NullsOrder %d, Nulls %d, want %d", k, q.NullsOrder[k], q.Nulls(items[k]), w)
		}
	}
	if _, ok := items[3].Expr.(*ast.PositionExpr); !ok {
		t.Errorf("ORDER BY 1 NULLS LAST: %T, want *ast.PositionExpr", items[3].Expr)
	}
	if !items[1].Desc {
		t.Errorf("DESC lost")
	}
	q = parseQuery(t, `SELECT rank() OVER (ORDER BY x DESC NULLS FIRST) FROM t ORDER BY 1`)
	if len(q.NullsOrder) != 2 {
		t.Fatalf("NullsOrder = %v", q.NullsOrder)
	}
	sum := q.NullsOrder[0] + q.NullsOrder[1]
	if sum != 1 {
		t.Errorf("NullsOrder = %v, want one 1 and one 0", q.NullsOrder)
	}
}

func TestRewriteStatements(t *testing.T) {
	runRewriteCases(t, []rewriteCase{
		{"union etc", `SELECT a FROM t1 UNION SELECT a FROM t2 INTERSECT SELECT a FROM t3 EXCEPT ALL SELECT 1`,
			"SELECT `a` FROM `t1` UNION SELECT `a` FROM `t2` INTERSECT SELECT `a` FROM `t3` EXCEPT ALL SELECT 1"},
		{"parenthesised union", `(SELECT 1) UNION ALL (SELECT 2)`, "(SELECT 1) UNION ALL (SELECT 2)"},
		{"with recursive", `WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 10) SELECT * FROM r`,
			"WITH RECURSIVE `r` (`n`) AS (SELECT 1 UNION ALL SELECT `n`+1 FROM `r` WHERE `n`<10) SELECT * FROM `r`"},
		{"with materialized", `WITH a AS MATERIALIZED (SELECT 1), b AS NOT MATERIALIZED (SELECT 2) SELECT * FROM a, b`,
			"WITH `a` AS (SELECT 1), `b` AS (SELECT 2) SELECT * FROM (`a`) JOIN `b`"},
		{"values", `VALUES (1, 'a'), (2, 'b') ORDER BY 1`, "VALUES ROW(1,'a'), ROW(2,'b') ORDER BY 1"},
		{"table", `TABLE t`, "SELECT * FROM `t`"},
		{"insert values", `INSERT INTO t VALUES (1, 'a'), (2, DEFAULT)`, "INSERT INTO `t` VALUES (1,'a'),(2,DEFAULT)"},
		{"insert columns select", `INSERT INTO t (a, "B") SELECT x, y FROM u`, "INSERT INTO `t` (`a`,`B`) SELECT `x`,`y` FROM `u`"},
		{"insert default values", `INSERT INTO t DEFAULT VALUES`, "INSERT INTO `t` () VALUES ()"},
		{"update", `UPDATE t SET a = 1, b = b + 1 WHERE c = 2`, "UPDATE `t` SET `a`=1, `b`=`b`+1 WHERE `c`=2"},
		{"update alias default", `UPDATE t AS x SET a = DEFAULT`, "UPDATE `t` AS `x` SET `a`=DEFAULT"},
		{"delete", `DELETE FROM t WHERE a IN (1, 2)`, "DELETE FROM `t` WHERE `a` IN (1,2)"},
		{"case", `SELECT CASE a WHEN 1 THEN 'one' ELSE 'many' END, CASE WHEN a > 0 THEN 1 END FROM t`,
			"SELECT CASE `a` WHEN 1 THEN 'one' ELSE 'many' END,CASE WHEN `a`>0 THEN 1 END FROM `t`"},
		{"exists", `SELECT EXISTS (SELECT 1), NOT EXISTS (SELECT 1 FROM t WHERE a = b)`,
			"SELECT EXISTS (SELECT 1),NOT EXISTS (SELECT 1 FROM `t` WHERE `a`=`b`)"},
		{"for update dropped", `SELECT a FROM t FOR UPDATE`, "SELECT `a` FROM `t`"},
		{"rows", `SELECT (1, 2), ROW(1, 2)`, "SELECT ROW(1,2),ROW(1,2)"},
		{"group having", `SELECT a, count(*) FROM t GROUP BY a HAVING count(*) > 1`, "SELECT `a`,COUNT(1) FROM `t` GROUP BY `a` HAVING COUNT(1)>1"},
		{"distinct", `SELECT DISTINCT a FROM t`, "SELECT DISTINCT `a` FROM `t`"},
	})
}

func TestParseExpr(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`ts - INTERVAL '5' SECOND`, "`ts`-__PG_INTERVAL('5 second')"},
		{`now()`, "NOW()"},
		{`'x'::text`, "__PG_CAST('x', 'text')"},
		{`a IS DISTINCT FROM b`, "__PG_DISTINCT(`a`, `b`)"},
		{`$1 + 1`, "__PG_PARAM(1)+1"},
	} {
		e, err := ParseExpr(c.in)
		if err != nil {
			t.Fatalf("ParseExpr(%q): %v", c.in, err)
		}
		if got := restoreNode(t, e); got != c.want {
			t.Errorf("ParseExpr(%q) = %s, want %s", c.in, got, c.want)
		}
	}
	for _, bad := range []string{``, `1 2`, `SELECT 1`, `a +`, `(1`} {
		if _, err := ParseExpr(bad); err == nil {
			t.Errorf("ParseExpr(%q) succeeded", bad)
		}
	}
}
