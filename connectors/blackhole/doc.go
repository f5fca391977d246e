// Package blackhole is the 'blackhole' sink connector: it discards every
// change. It is exactly once trivially (nothing is written, so nothing
// can be written twice), and its plan says Discard so that the runtime
// keeps no sink log for it. Useful to measure a pipeline without the cost
// of an external system. It counts what it was given (Sink.Changes).
//
// It imports exec/connector and the sql leaf packages.
package blackhole
