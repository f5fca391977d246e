// Package job instantiates dataflow jobs from exec/spec plans: it wires
// operator actors and source actors together, attaches jobs to the change
// streams of the relations they read (with a backfill of their committed
// contents), registers them with the checkpoint coordinator, and tears them
// down. It also runs one-shot batch plans for SELECT over a snapshot.
package job
