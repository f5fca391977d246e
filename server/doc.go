// Package server is Sluice's SQL engine behind the wire protocol: sessions,
// statement dispatch, the catalog (persisted in storage, seen by the
// planner through planner/cat), DDL that changes the running dataflow
// while it is paused at a committed epoch, DML on tables (durable before it
// is acknowledged), COPY FROM STDIN / TO STDOUT (copy.go, copyfrom.go,
// copyout.go), SELECT over a committed snapshot, roles (role.go:
// CREATE/ALTER/DROP ROLE, the password verifiers pgwire authenticates
// against, the databases a client may connect to), owners, GRANT/REVOKE
// and the privilege checks (privilege*.go), and the answers to the
// pg_catalog queries that clients such as psql send.
//
// server imports server/pgwire, sql/parser, planner, exec and storage;
// nothing imports server but cmd/sluice and tests.
package server
