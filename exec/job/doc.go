// Package job instantiates dataflow jobs from exec/spec plans: it wires
// operator actors and source actors together, attaches jobs to the change
// streams of the relations they read (with a backfill of their committed
// contents), registers them with the checkpoint coordinator, and tears them
// down. It also runs one-shot batch plans for SELECT over a snapshot,
// with what only batch plans have (subquery.go): subqueries in expressions,
// run as nested batch plans over the same snapshot, table functions in
// FROM, and the aggregates that keep all their inputs. A SELECT's rows are
// pulled from a Result (stream.go), which streams them from the snapshot
// when the plan allows it.
package job
