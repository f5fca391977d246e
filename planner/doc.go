// Package planner binds parsed statements (TiDB ASTs after sql/parser's
// Postgres rewrites) against the catalog interfaces in planner/cat and
// builds exec/spec dataflow plans: the streaming plan of a materialized
// view and the one-shot plan of a SELECT. It never touches storage.
//
//	ast.SelectStmt ─bind─► scope + spec.Expr ─build─► spec.Plan
//	  FROM      → Subscribe / SourceRead / HashJoin / nested plans
//	  WHERE     → Filter
//	  GROUP BY  → Project(pre) → HashAgg → Filter(HAVING)
//	  SELECT    → Project
//	  UNION ALL → Union
//	  view root → Materialize (key = group key or primary key)
//
// planner imports exec/spec, exec/eval (function resolution), planner/cat,
// the TiDB parser's AST and the sql leaf packages.
package planner
