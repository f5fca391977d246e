// Package flow is the dataflow runtime: actors that run operators on
// goroutines, typed channels of messages (batches, barriers, watermarks)
// between them, barrier alignment at multi-input operators, fan-out to
// several consumers, source actors that inject barriers in-band, and the
// checkpoint coordinator that commits one epoch atomically once every
// collector has seen its barrier.
//
//	coordinator ──barrier N──► source actors ──batches… barrier N──► operators
//	     ▲                                                              │
//	     └──────────── collect(N) ◄── materialize / source actors ◄─────┘
//	commit(N): one synced Pebble batch with all state, positions, catalog
//
// Watermarks: a source with a WATERMARK drops the rows whose event time is
// behind max(time read) - delay (counted as Late), and sends Watermark
// messages (a column of its output and a time) after its batches and
// before each barrier; it saves the largest time with its position. An
// actor hands its operator (WatermarkOp) each watermark that advances an
// input column and sends on what the operator derives, in order with its
// rows; operators without WatermarkOp stop them.
//
// flow imports exec/spec, exec/connector, storage and the sql leaf packages.
package flow
