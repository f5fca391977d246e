// Package eval owns scalar expressions at run time: it resolves operators
// and functions to overloads with Postgres' rules (ResolveFunc, used by the
// planner's binder, and CommonType for CASE, COALESCE, IN and UNION), and
// compiles exec/spec expressions into allocation-free closures (Compile,
// CompilePredicate) that the executor calls once per row.
//
// It holds the whole scalar function library: arithmetic with Postgres'
// overflow and division-by-zero errors, three-valued logic, comparisons
// across numeric and date/time kinds, casts with numeric and varchar
// modifiers, LIKE and regular expressions, the string, math and date/time
// functions (extract, date_trunc, to_char, ...), and the catalog helpers
// psql calls.
//
// Names in spec.Func: operators use their SQL spelling ("+", "-", "*", "/",
// "%", "^", "=", "<>", "<", "<=", ">", ">=", "||", "&", "|", "#", "<<",
// ">>", "~"), with "neg" for unary minus; LIKE is "like", "not like",
// "ilike", "not ilike" (an optional third argument is the ESCAPE string);
// regular expressions are "__pg_regex", "__pg_regexi", "__pg_not_regex",
// "__pg_not_regexi"; IS [NOT] DISTINCT FROM is "__pg_distinct" /
// "__pg_not_distinct"; EXTRACT is "__pg_extract"(field, source);
// POSITION(a IN b) is "__pg_position"(a, b); array subscripts are
// "__pg_subscript"(array, index); ARRAY[...] is "__pg_array"(elements...);
// x op ANY (array) and x op ALL (array) are "__pg_any"(x, 'op', array) and
// "__pg_all"(x, 'op', array) (array.go). Subqueries (spec.Subquery) run
// through Context.RunPlan (subquery.go); set-returning functions in FROM
// are resolved and run by ResolveTableFunc and RunTableFunc (tablefunc.go).
// The special forms:
//
//	"and", "or"        two or more boolean arguments, three-valued, lazy
//	"not"              one boolean argument
//	"is null", "is not null", "is true", "is false", "is not true",
//	"is not false", "is unknown", "is not unknown"
//	"in", "not in"     Args[0] is the needle, the rest the list
//	"coalesce", "greatest", "least", "nullif"
//	"case"             cond1, then1, cond2, then2, ... [else]
//	"cast"             one argument, converted to Func.T (as spec.Cast)
//	"__pg_assign_cast" one argument, converted to Func.T with assignment
//	                   rules (varchar(n) overflow is an error)
//
// Function names are lower case; a "pg_catalog." prefix is ignored.
//
// The session time zone is UTC. It imports only exec/spec, sql/types,
// sql/pgerror, sql/pgcode and the standard library.
package eval
