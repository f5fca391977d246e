// Package ops holds the dataflow operators: filter, project, hash
// aggregation and hash join with retractions, union, subscribe (backfill
// then follow a relation's changes) and materialize. Each keeps its state
// in memory and writes the changes since the last barrier into the epoch's
// writer at Checkpoint; New* constructors load state saved by a previous
// run. Operators run through exec/flow actors and evaluate expressions
// compiled by exec/eval.
package ops
