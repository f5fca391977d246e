// Package tests owns Sluice's end-to-end tests: everything here talks to a
// real `sluice` process over TCP, the way a user does, and knows nothing of
// the server's insides.
//
//   - harness.go builds ./cmd/sluice once per `go test` run and starts, kills
//     (SIGKILL), restarts and stops (SIGTERM) server processes on free
//     127.0.0.1 ports; it connects with pgx v5 in the extended and the simple
//     protocol, renders results in Postgres text format, and makes sure the
//     machine's PostgreSQL and Redis are running (started if needed, never
//     skipped).
//   - logic_test.go runs the sqllogictest-style files in testdata/logic/*.slt
//     against a fresh server, once per protocol, and against the machine's
//     PostgreSQL 15, which shows that their expectations are PostgreSQL's
//     answers.
//   - crash_test.go kills a server under concurrent writes at random moments
//     and checks durability and view consistency (issue 2, acceptance 8);
//     crash_postgres_test.go runs the same test against a private
//     PostgreSQL to show that the test itself finds nothing on a correct
//     system.
//   - wire_test.go covers the Postgres wire contract: pgx in both modes with
//     every type, psql and its meta-commands, CancelRequest, SSLRequest,
//     garbage on the socket; the protocol-level checks also run against
//     PostgreSQL.
//   - catalog_test.go covers SHOW, DESCRIBE, SHOW CREATE, EXPLAIN, the error
//     count of a view, and the catalog surviving kills and restarts, where
//     the output format is the server's choice.
//   - deps_test.go enforces the import rules of style.md with `go list`.
//
// Environment: SLUICE_BIN uses a prebuilt binary, SLUICE_BUILD_FLAGS adds
// `go build` flags (e.g. -race), SLUICE_TEST_LOG_DIR keeps every server's
// full output, SLUICE_CRASH_KILLS raises the crash test's kill count.
//
// It imports only the standard library and pgx v5 (pgx, pgconn, pgproto3,
// pgtype): importing a Sluice package would make a test depend on internals
// instead of the user-visible contract.
package tests
