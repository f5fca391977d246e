package pgwire

import (
	"context"
	"io"

	"sluice/sql/types"
)

// Handler is what the wire protocol serves: the SQL engine.
type Handler interface {
	// Connect is called once per connection after a successful startup.
	Connect(ctx context.Context, p StartupInfo) (Session, error)
}

// StartupInfo describes a client connection from its StartupMessage.
type StartupInfo struct {
	User, Database, ApplicationName string
	// Params holds every parameter of the StartupMessage (user, database,
	// application_name, options, client_encoding, ...).
	Params     map[string]string
	RemoteAddr string
}

// Session is one client connection's SQL session. Calls on one Session never overlap.
//
// A Session may also implement interface{ TxStatus() byte }; the value it
// returns ('I' idle, 'T' in a transaction block, 'E' in a failed
// transaction block) is then reported in every ReadyForQuery, and named
// portals are dropped only when it is 'I'. Without it the server always
// reports 'I' and keeps portals until they are closed or replaced.
type Session interface {
	// SimpleQuery runs a query string that may hold several statements, writing each statement's results to w in order; it stops at the first error and returns it (earlier statements' results have been written).
	SimpleQuery(ctx context.Context, sql string, w ResultWriter) error
	// Prepare parses one statement; paramTypes holds the OIDs the client gave (0 = unspecified).
	Prepare(ctx context.Context, sql string, paramTypes []uint32) (Prepared, error)
	// Execute runs a prepared statement with bound parameters (NULL = types.Null), writing results to w.
	Execute(ctx context.Context, p Prepared, params []types.Datum, w ResultWriter) error
	// ChangedParameters returns settings whose change must be reported to the client (e.g. after SET TimeZone): name -> value; called after Connect and after each SimpleQuery and Execute call; may return nil.
	ChangedParameters() map[string]string
	Close()
}

// Prepared is a parsed statement.
type Prepared interface {
	ParamTypes() []types.T   // resolved parameter types, one per $n
	Columns() []types.Column // result columns; nil if the statement returns no rows
}

// ResultWriter receives a statement's results. Its methods return an error
// once the client connection is broken (or a value cannot be encoded); the
// Session should then stop and return that error.
//
// The ResultWriters this package passes also implement
// interface{ Flush() error }, which sends everything written so far to the
// client at once (results are otherwise buffered until the statement ends
// or the buffer fills); a long-running statement that produces rows over
// time should call it.
type ResultWriter interface {
	// Columns announces the result columns of a row-returning statement (before any row).
	Columns(cols []types.Column) error
	// Row writes one row. The writer does not keep r after returning.
	Row(r types.Row) error
	// Complete ends one statement with its command tag ("SELECT 2", "INSERT 0 3", "CREATE TABLE", ...).
	Complete(tag string) error
	Notice(msg string) error
}

// Copier is the COPY capability of the ResultWriters this package passes
// (find it by type assertion). A Session serves COPY ... FROM STDIN and
// COPY ... TO STDOUT through it, in the simple and the extended protocol
// alike, and then ends the statement with Complete("COPY n") as usual.
// format is 0 (text, also CSV) or 1 (binary); ncols is the number of
// columns copied (it is announced with the format of each).
type Copier interface {
	// CopyIn sends CopyInResponse and returns the client's data. Reading it
	// returns the bytes of the CopyData messages in order and io.EOF after
	// CopyDone; CopyFail makes it fail with 57014 "COPY from stdin failed:
	// <message>"; Flush and Sync are ignored meanwhile; another message is
	// a 08P01 error and a broken connection a FATAL one. ctx is checked
	// before each message is read (a CancelRequest stops the COPY at the
	// next message). If the statement fails before CopyDone, the Session
	// just returns the error: the client's remaining copy messages are
	// discarded by the connection, as PostgreSQL does.
	CopyIn(ctx context.Context, format int16, ncols int) (CopyReader, error)
	// CopyOut sends CopyOutResponse and returns a writer whose every Write
	// is one CopyData message (PostgreSQL sends one per row); Done sends
	// CopyDone and must be called before Complete.
	CopyOut(format int16, ncols int) (CopyWriter, error)
}

// CopyReader reads the data of a COPY FROM STDIN.
type CopyReader interface {
	io.Reader
	// Next returns the next chunk of data (the rest of a CopyData message
	// that Read left unread, or the next message's payload), valid until
	// the next call to Next or Read; io.EOF after CopyDone.
	Next() ([]byte, error)
}

// CopyWriter writes the data of a COPY TO STDOUT.
type CopyWriter interface {
	io.Writer
	Done() error
}

// Rows is a statement's result produced lazily: a SELECT streaming from
// its snapshot. Rows are pulled as the client takes them, so a large
// result is never held whole, and an Execute with a row limit leaves the
// rest unread in the suspended portal.
type Rows interface {
	// Next returns the next rows, nil at the end. The slice is valid until
	// the next call. ctx is the running statement's: a cancelled statement
	// stops the call.
	Next(ctx context.Context) ([]types.Row, error)
	// Close releases what the rows hold (the snapshot, the scan). It is
	// called exactly once, also when the rows were not read to the end.
	Close()
}

// LiveRows is implemented by Rows whose Next may wait for rows that do
// not exist yet (SUBSCRIBE): the rows already written are flushed to the
// client before each Next.
type LiveRows interface {
	Rows
	Live()
}

// RowStreamer is implemented by the ResultWriters this package passes:
// Stream announces cols and sends the rows of rows, completing the
// statement with "SELECT n", or suspends the portal when an Execute's row
// limit is reached (rows then stays open in the portal until it runs to
// its end or is closed). The writer owns rows from the call on and closes
// it.
type RowStreamer interface {
	Stream(ctx context.Context, cols []types.Column, rows Rows) error
}

// BinaryColumnsWriter is implemented by the simple-protocol ResultWriter:
// BinaryColumns announces cols like Columns, but the rows that follow go
// out in binary format (FETCH from a BINARY cursor). In the extended
// protocol, Bind's result formats decide instead, as in Postgres.
type BinaryColumnsWriter interface {
	BinaryColumns(cols []types.Column) error
}
