// Package parser is Sluice's SQL front end. Users speak PostgreSQL-flavoured
// SQL with RisingWave's streaming DDL; the package turns it into statements.
//
// # API
//
//	Parse(sql)     splits sql on top-level semicolons (respecting quotes,
//	               dollar quotes and comments) and parses each statement.
//	ParseOne(sql)  parses exactly one statement (42601 for zero or several).
//	ParseExpr(sql) parses one scalar expression into an ast.ExprNode.
//	ParseType(s)   parses a Postgres type name into a types.T.
//
// Every statement implements Statement; Text returns its own original text.
// Errors are *pgerror.Error values: syntax errors are 42601 with Position
// set to the 1-based character offset in the whole string given to Parse
// (as Postgres reports it for multi-statement strings) and a message like
// `syntax error at or near "x"` or `syntax error at end of input`;
// unsupported syntax is 0A000 with a message naming what is unsupported.
//
// # Three parsers
//
// Queries (SELECT, set operations, WITH, VALUES, TABLE, INSERT, UPDATE,
// DELETE) become *Query, parsed by the TiDB parser
// (github.com/pingcap/tidb/pkg/parser, a MySQL grammar) from text that a
// Postgres-dialect layer (rewrite.go, expressions in rewrite_expr.go) produced. The TiDB parser runs with
// SQL mode PIPES_AS_CONCAT | NO_BACKSLASH_ESCAPES | ANSI_QUOTES and with this
// package's own value driver (driver.go): literal values are ValueExpr
// holding plain Go values (int64, uint64, float64, Decimal, string, []byte,
// nil; TRUE/FALSE are int64 with mysql.IsBooleanFlag).
//
// Streaming DDL and utility statements (ddl.go) are parsed by this package:
// CREATE TABLE / SOURCE / MATERIALIZED VIEW / VIEW / SINK / FUNCTION, DROP,
// SHOW, SHOW CREATE, SET, RESET, DESCRIBE, EXPLAIN, FLUSH, COPY (copy.go), BEGIN, START
// TRANSACTION, COMMIT, END, ROLLBACK, ABORT, DISCARD, DEALLOCATE; and
// (ddl_alter.go) ALTER TABLE (one action), TRUNCATE, CREATE [UNIQUE] INDEX,
// CREATE SEQUENCE, CREATE SCHEMA, DROP INDEX / SEQUENCE / SCHEMA. Column
// types go through ParseType (SERIAL, BIGSERIAL and SMALLSERIAL become the
// integer type with ColumnDef.Serial); expressions inside them (DEFAULT,
// CHECK, WATERMARK, function bodies) and the queries of views and sinks go
// through the dialect layer and TiDB. Column constraints NOT NULL, DEFAULT,
// UNIQUE, CHECK, PRIMARY KEY and GENERATED {ALWAYS | BY DEFAULT} AS
// IDENTITY, and table constraints PRIMARY KEY, UNIQUE and CHECK (named with
// CONSTRAINT or not) are parsed; the source text of DEFAULT and CHECK
// expressions is kept for the catalog.
//
// INSERT's ON CONFLICT and the RETURNING clause of INSERT, UPDATE and
// DELETE (dml_tail.go) are cut out of the text TiDB parses and attached to
// the Query: OnConflict (target columns or constraint, DO NOTHING or DO
// UPDATE SET col = expr | DEFAULT [WHERE ...]; EXCLUDED.col is a column of
// table "excluded") and Returning (a TiDB select list, * included).
// nextval, setval and lastval are emitted backquoted: TiDB's grammar has
// its own forms of them.
//
// # The dialect layer
//
// A Postgres tokenizer (lexer.go) reads single-quoted strings (a doubled quote
// escapes a quote;
// standard_conforming_strings: backslash is literal), E'...' escape strings,
// U&'...' strings, $$ and $tag$ dollar quotes, "quoted identifiers" ("" escape),
// -- and nested /* */ comments, numbers, $n parameters and operators with
// Postgres' rules. The rewriter then parses expressions with Postgres
// precedence and writes TiDB text, adding parentheses wherever TiDB's
// precedence would group differently (e.g. around the operands of ||,
// which TiDB binds tighter than +). Pieces of output text keep the offset
// of the user's text they came from, so TiDB's `line L column C near "..."`
// errors are mapped back onto the user's token.
//
// Identifiers: unquoted identifiers are folded to lower case; all
// identifiers in name position (columns, tables, aliases) are emitted
// backquoted, so quoted ones keep their case and Postgres column names that
// MySQL reserves (key, range, ...) work. Unquoted function names are emitted
// bare (TiDB parses count(), sum(), rank() ... by keyword) unless TiDB
// reserves the word; a pg_catalog. qualifier on a function is dropped.
//
// Rewrites onto reserved names (the binder recognises every name beginning
// with __pg_):
//
//	expr::type, CAST(expr AS type)   __pg_cast(expr, 'type')
//	    'type' is the canonical name, types.T.String() for a supported type
//	    ('bigint', 'numeric(12,2)', 'character varying(10)', 'double
//	    precision', 'timestamp with time zone', 'timestamp without time
//	    zone', 'regclass', 'oid', 'name', 'text[]'), which ParseType
//	    accepts; any other type keeps its written name lower-cased with
//	    pg_catalog dropped ('regtype', 'int2[]', 'character(3)') so that the
//	    binder can report 42704/0A000. :: binds tighter than any operator.
//	typed literal TYPE 'x'           __pg_cast('x', 'type') (TIMESTAMP,
//	    TIMESTAMPTZ, DATE, TIME, and any other type name: int '1', ...)
//	$n                               __pg_param(n), except in LIMIT/OFFSET
//	    where TiDB takes no expression: there it is a '?' ParamMarkerExpr
//	    whose N field is n.
//	INTERVAL '10' SECOND, INTERVAL '1 hour', INTERVAL 5 MINUTE
//	                                 __pg_interval('10 second') — one string
//	    in Postgres interval input syntax (a bare number with a unit field
//	    gets the unit appended; other field qualifiers are dropped).
//	extract(field FROM x)            __pg_extract('field', x) (field lower-cased)
//	substring(x FROM a FOR b)        substring(x, a, b) (FOR b alone: a = 1)
//	position(a IN b)                 __pg_position(a, b)
//	trim([BOTH|LEADING|TRAILING] [c] FROM s)  TiDB's TRIM(...) forms;
//	    trim(s, c) is btrim(s, c) (ltrim/rtrim with LEADING/TRAILING)
//	overlay(a PLACING b FROM c [FOR d])  __pg_overlay(a, b, c[, d])
//	agg(...) FILTER (WHERE c)        __pg_filter(agg(...), c); with OVER the
//	    window call is inside: __pg_filter(agg(...) OVER (...), c)
//	agg(DISTINCT x) for aggregates other than count, sum, avg, min, max
//	                                 __pg_agg_distinct(agg(x)) (TiDB takes
//	                                 DISTINCT only in its own aggregates)
//	agg(x ORDER BY k [DESC] [NULLS ..]), agg(x) WITHIN GROUP (ORDER BY k)
//	                                 __pg_agg_order(agg(x), k1, 'dir1', k2, 'dir2', ...)
//	    with dir 'asc' | 'desc', optionally followed by ' nulls first' or
//	    ' nulls last'
//	a ~ b, a ~* b                    __pg_regex(a, b), __pg_regexi(a, b)
//	a !~ b, a !~* b                  NOT __pg_regex(a, b), NOT __pg_regexi(a, b)
//	OPERATOR(schema.op)              the plain operator
//	a ~~ b, !~~, ~~*, !~~*           LIKE, NOT LIKE, ILIKE, NOT ILIKE
//	a ILIKE b, a NOT ILIKE b         TiDB's ILIKE (ast.PatternLikeOrIlikeExpr,
//	    IsLike false)
//	a SIMILAR TO b [ESCAPE e]        __pg_similar(a, b[, e]); NOT SIMILAR TO
//	    is NOT __pg_similar(...)
//	a || b                           __pg_concat(a, b) (NULL if either is NULL; TiDB's pipes would be concat())
//	a IS DISTINCT FROM b             __pg_distinct(a, b)
//	a IS NOT DISTINCT FROM b         NOT __pg_distinct(a, b)
//	a ISNULL, a NOTNULL              a IS NULL, a IS NOT NULL
//	a BETWEEN SYMMETRIC b AND c      __pg_between_symmetric(a, b, c)
//	a op ANY|SOME|ALL (array expr)   __pg_any(a, 'op', arr), __pg_all(a, 'op', arr)
//	    (with a subquery it stays TiDB's CompareSubqueryExpr)
//	a AT TIME ZONE z                 __pg_at_time_zone(a, z)
//	a ^ b                            power(a, b)
//	a # b                            a ^ b (TiDB's bitwise XOR)
//	@ a, |/ a, ||/ a                 abs(a), sqrt(a), cbrt(a)
//	a ^@ b                           starts_with(a, b)
//	JSON and array operators         -> __pg_json_get, ->> __pg_json_get_text,
//	    #> __pg_json_path, #>> __pg_json_path_text, @> __pg_contains,
//	    <@ __pg_contained_by, ? __pg_json_exists, ?| __pg_json_exists_any,
//	    ?& __pg_json_exists_all, && __pg_overlap, #- __pg_json_delete_path
//	    (all as f(left, right))
//	expr[i], expr[i:j]               __pg_subscript(expr, i), __pg_slice(expr, i, j)
//	    (a missing bound is NULL)
//	ARRAY[a, b], ARRAY[[..],[..]]    __pg_array(a, b), nested __pg_array
//	ARRAY(subquery)                  __pg_array_subquery((subquery))
//	COLLATE name                     dropped (collations are ignored)
//	x IS [NOT] TRUE/FALSE/UNKNOWN, IS [NOT] NULL   as in TiDB
//	true/false/null                  TRUE/FALSE/NULL
//	current_timestamp, current_date, localtime, ... as in TiDB
//	user, session_user, current_schema, current_catalog, current_role
//	                                 current_user(), session_user(),
//	                                 current_schema(), current_catalog(),
//	                                 current_role()
//	E'\n', U&'\0041', $$x$$, 'a' 'b' across lines   plain '...' literals
//	'a' || 'b'                       || (PIPES_AS_CONCAT: TiDB's concat)
//
// Clause rewrites:
//
//	FULL [OUTER] JOIN        STRAIGHT_JOIN. The TiDB AST of `a STRAIGHT_JOIN b
//	    ON c` is an *ast.Join with StraightJoin set (Tp 0): the binder reads
//	    StraightJoin as FULL OUTER JOIN (users never write STRAIGHT_JOIN).
//	TUMBLE(t, col, size), HOP(t, col, slide, size), SESSION(...) and any
//	    other function call in FROM (generate_series, unnest, ...) become a
//	    table name __pg_tumble__<n>, __pg_hop__<n>, __pg_session__<n> or
//	    __pg_func__<n> (n counts table functions in the statement from 1);
//	    Query.TableFuncs maps that name to the call (Name and Args parsed
//	    as TiDB expressions; the relation argument is an *ast.ColumnNameExpr).
//	    The user's alias is kept; without one the table source has no
//	    alias (Postgres would name it after the function, RisingWave also
//	    lets TUMBLE/HOP columns be qualified by the relation's name: the
//	    binder chooses).
//	    LATERAL before a function call is dropped (functions in FROM are
//	    implicitly lateral).
//	FROM item AS alias(c1, c2)  the alias is kept and Query.ColumnAliases
//	    maps the *ast.TableSource to the column names.
//	VALUES (a, b), (c, d)    TiDB's VALUES ROW(a, b), ROW(c, d) (in INSERT
//	    the rows stay plain); DEFAULT VALUES becomes () VALUES ().
//	TABLE t                  SELECT * FROM t
//	LIMIT n OFFSET m, OFFSET m alone (LIMIT 18446744073709551615 OFFSET m),
//	    FETCH {FIRST|NEXT} n {ROW|ROWS} ONLY, LIMIT ALL (dropped);
//	    FETCH … n ROWS WITH TIES is LIMIT n+TiesBias
//	ORDER BY x NULLS FIRST|LAST  the item is emitted as __pg_nulls(x, 1|2)
//	    and the marker is removed after parsing; Query.NullsOrder and
//	    Query.Nulls report it (0 default, 1 first, 2 last).
//	RANGE frame offsets INTERVAL '1' HOUR / INTERVAL '1 hour' in window
//	    specs keep TiDB's own syntax INTERVAL '1' HOUR (ast.FrameBound with
//	    Expr and Unit), not __pg_interval.
//	FOR UPDATE / FOR SHARE ... dropped.
//	WITH ... AS [NOT] MATERIALIZED  the hint is dropped.
//
//	SELECT DISTINCT ON (e, …) items  SELECT __pg_distinct_on(e, …), items
//	    (the planner takes the first item out)
//	GROUP BY grouping elements (grouping.go): ROLLUP (…) __pg_rollup(…),
//	    CUBE (…) __pg_cube(…), GROUPING SETS (…) __pg_grouping_sets(…),
//	    () and (e, f) __pg_gset() and __pg_gset(e, f), GROUP BY DISTINCT
//	    a first item __pg_group_distinct(); GROUPING(e, …) stays a call
//	GROUP BY grouping elements (grouping.go): ROLLUP (…) __pg_rollup(…),
//	    CUBE (…) __pg_cube(…), GROUPING SETS (…) __pg_grouping_sets(…),
//	    () and (e, f) __pg_gset() and __pg_gset(e, f), GROUP BY DISTINCT
//	    a first item __pg_group_distinct(); GROUPING(e, …) stays a call
//
// Not supported (0A000): SELECT INTO,
// UPDATE ... FROM, DELETE ... USING, WITH ORDINALITY, TABLESAMPLE,
// NATURAL FULL JOIN, named and VARIADIC arguments, bit
// string literals (B'..', X'..'), LIKE ANY/ALL, IS OF/DOCUMENT/NORMALIZED,
// substring(... SIMILAR ...), ORDER BY USING other than < and >, non-constant
// LIMIT/OFFSET, ON CONFLICT with an expression target or WHERE on the
// target, ALTER TABLE ADD PRIMARY/FOREIGN KEY, ALTER of anything but a table,
// and statements such as GRANT, PREPARE.
package parser
