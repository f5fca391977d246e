// Package ops holds the dataflow operators: filter, project, hash
// aggregation and hash join with retractions, union, subscribe (backfill
// then follow a relation's changes), materialize, and TUMBLE/HOP time
// windows. Watermarks pass through filters and unions (minimum over
// inputs), follow the columns a projection passes through, gain
// window_start/window_end at a time window, stay on an aggregation's
// group columns (closing groups below them: EMIT ON WINDOW CLOSE emits
// them; their state is deleted either way) and on a join's key pairs
// (minimum of both sides; rows below it are deleted). Each keeps its state
// in memory and writes the changes since the last barrier into the epoch's
// writer at Checkpoint; New* constructors load state saved by a previous
// run. Operators run through exec/flow actors and evaluate expressions
// compiled by exec/eval.
package ops
