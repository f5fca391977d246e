// Package socket is the 'socket' source connector: it listens on
// 127.0.0.1:port, accepts any number of TCP clients and reads
// newline-delimited records from each (ENCODE JSON by default, or CSV),
// decoded by the declared columns with connectors/internal/decode.
//
//	CREATE SOURCE events (id BIGINT, v TEXT)
//	WITH (connector = 'socket', port = '9999');
//
// Options: port (required; 0 picks a free port, for tests), on_error
// (fail, skip or dead_letter; a bad line's provenance is topic "socket",
// partition 0 and its line number on its connection as the offset) and
// max.message.bytes (default 1048576: a longer line is a bad record).
//
// A socket has no offsets: after a restart the records sent before it are
// gone and those sent while Sluice was down were never read. The source
// is not Seekable and its factory is connector.Unreplayable, so a pipeline
// reading it is at most once.
//
// Goroutines: one accepting connections and one per connection, all owned
// by the source and waited for by Close, which stops listening and closes
// the connections. Connection goroutines decode lines themselves and hand
// them to Read in chunks over a bounded channel, so a client that sends
// faster than the job reads is slowed down by TCP flow control.
//
// It imports only exec/connector, connectors/internal/decode and the sql
// leaf packages.
package socket
