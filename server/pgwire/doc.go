// Package pgwire owns Sluice's PostgreSQL wire protocol (v3.0) front end:
// the listener loop, startup (SSL/GSSENC refusal, trust authentication,
// parameter reporting, cancel keys), the simple and extended query
// protocols (statements, portals, row limits), the COPY sub-protocol
// (copy.go), text and binary value formats on the wire, error and notice
// reporting, and query cancellation.
//
// It knows nothing about SQL: it serves a Handler (the SQL engine), which
// opens one Session per connection.
//
// It imports only sql/types, sql/pgerror, sql/pgcode and
// github.com/jackc/pgproto3/v2 (besides the standard library); the
// pgproto3 message types are used only in conn.go and copy.go.
package pgwire
