package parser

import (
	"strings"

	tidb "github.com/pingcap/tidb/pkg/parser"
)

// pgReserved are the words the query rewriter treats as keywords: they
// never start an expression, are emitted as they are, and cannot be bare
// aliases. These are Postgres' reserved words plus the type_func_name and
// col_name keywords that appear in query syntax.
var pgReserved = wordSet(`
all analyse analyze and any array as asc asymmetric both case cast check
collate column constraint create current_catalog current_date current_role
current_time current_timestamp current_user default deferrable desc distinct
do else end except false fetch for foreign from grant group having in
initially intersect into lateral leading limit localtime localtimestamp not
null offset on only or order placing primary references returning select
session_user some symmetric table then to trailing true union unique user
using variadic when where window with
authorization binary collation concurrently cross current_schema freeze full
ilike inner is isnull join left like natural notnull outer overlaps right
similar tablesample verbose between by`)

// exprKeywords are reserved words that may start an expression.
var exprKeywords = wordSet(`not case cast array true false null current_catalog
current_date current_role current_time current_timestamp current_user localtime
localtimestamp session_user user current_schema`)

// typeStartWords are words that may begin a type name in a typed literal
// (`date '2024-01-01'`).
var typeStartWords = wordSet(`bool boolean int integer int2 int4 int8 smallint
bigint real float float4 float8 double numeric decimal text varchar character
char bytea date time timestamp timestamptz timetz jsonb json oid name regclass
string uuid bit`)

// windowWords are keywords inside an OVER (...) or WINDOW w AS (...) spec.
var windowWords = wordSet(`partition rows range groups preceding following
unbounded current row exclude ties others no and between`)

// tidbReserved are the TiDB (MySQL) reserved words, lower-cased.
var tidbReserved = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range tidb.Keywords {
		if k.Reserved {
			m[strings.ToLower(k.Word)] = true
		}
	}
	return m
}()

// tidbFuncKeywords are TiDB reserved words that TiDB parses as functions
// (window functions and niladic datetime functions among them) and that
// must therefore be emitted unquoted as function names.
var tidbFuncKeywords = wordSet(`cume_dist dense_rank first_value lag last_value
lead nth_value ntile percent_rank rank row_number current_date current_time
current_timestamp current_user current_role localtime localtimestamp utc_date
utc_time utc_timestamp left right repeat replace mod if database`)

// tidbKeywordNames are function names TiDB's grammar does not take
// unquoted as a call although they are not reserved.
var tidbKeywordNames = wordSet(`cardinality`)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}
