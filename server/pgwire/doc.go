// Package pgwire owns Sluice's PostgreSQL wire protocol (v3.0) front end:
// the listener loop, startup (TLS after SSLRequest or PostgreSQL 17's
// direct TLS, tls.go; GSSENC refusal; authentication, auth.go: SCRAM-SHA-256,
// md5 when enabled, trust for local clients when no password is configured;
// session slots, limits.go; parameter reporting, cancel keys), the simple
// and extended query protocols (statements, portals, row limits), the COPY
// sub-protocol (copy.go), text and binary value formats on the wire, error
// and notice reporting, and query cancellation.
//
// It knows nothing about SQL: it serves a Handler (the SQL engine), which
// opens one Session per connection, and asks an Authenticator (the engine
// too) about roles.
//
// It imports only sql/types, sql/pgerror, sql/pgcode and
// github.com/jackc/pgproto3/v2 (besides the standard library); the
// pgproto3 message types are used only in conn.go, copy.go and auth.go.
package pgwire
