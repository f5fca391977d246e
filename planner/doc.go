// Package planner binds parsed statements (TiDB ASTs after sql/parser's
// Postgres rewrites) against the catalog interfaces in planner/cat and
// builds exec/spec dataflow plans: the streaming plan of a materialized
// view and the one-shot plan of a SELECT. It never touches storage.
//
//	ast.SelectStmt ─bind─► scope + spec.Expr ─build─► spec.Plan
//	  FROM      → Subscribe / SourceRead / HashJoin / nested plans
//	  TUMBLE/HOP→ TimeWindow (+ window_start, window_end; timewindow.go)
//	  WHERE     → Filter
//	  GROUP BY  → Project(pre) → HashAgg → Filter(HAVING)
//	  GROUPING SETS/ROLLUP/CUBE → Project(pre) → a HashAgg per set →
//	            Project(NULL for absent columns, set index) → Union
//	            (groupingsets.go)
//	  LATERAL (SELECT … WHERE u.x = t.x [ORDER BY … LIMIT n]) → Top-N
//	            per key, HashJoin on the key (lateral.go)
//	  SELECT    → Project
//	  UNION ALL → Union
//	  WHERE/HAVING/SELECT subqueries of a view → semi/anti HashJoins and
//	            grouped HashAggs LEFT JOINed on the correlation keys
//	            (decorrelate.go)
//	  view root → Materialize (key = group key or primary key)
//	  EMIT ON WINDOW CLOSE → the view's HashAgg is marked EOWC; it needs a
//	              group column that carries a watermark (watermarkCols
//	              follows them from a source's WATERMARK through the plan)
//
// Batch queries (SELECT) also have what a dataflow cannot run: subqueries
// in expressions, correlated or not (spec.Subquery, each with its own plan,
// run per outer row; subquery.go; a view's are decorrelated instead, or
// refused), set-returning functions in FROM
// (spec.TableFunc; tablefunc.go), the aggregates that keep all their
// inputs (string_agg, array_agg, bool_and, bool_or), and the oid types
// resolved against the system relations (regclass, regnamespace, ...;
// pgtypes.go). Materialized views reject them with 0A000.
//
// planner imports exec/spec, exec/eval (function resolution), planner/cat,
// the TiDB parser's AST and the sql leaf packages.
package planner
