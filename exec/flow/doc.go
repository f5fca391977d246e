// Package flow is the dataflow runtime: actors that run operators on
// goroutines, typed channels of messages (batches, barriers) between them,
// barrier alignment at multi-input operators, fan-out to several consumers,
// source actors that inject barriers in-band, and the checkpoint
// coordinator that commits one epoch atomically once every collector has
// seen its barrier.
//
//	coordinator ──barrier N──► source actors ──batches… barrier N──► operators
//	     ▲                                                              │
//	     └──────────── collect(N) ◄── materialize / source actors ◄─────┘
//	commit(N): one synced Pebble batch with all state, positions, catalog
//
// flow imports exec/spec, exec/connector, storage and the sql leaf packages.
package flow
