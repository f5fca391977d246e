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
//   - exactly_once_test.go is the exactly-once crash battery (issue 3):
//     a Kafka-protocol broker (cmd/testbroker, kfake with a data
//     directory), the machine's PostgreSQL and Redis, and a sluice process
//     SIGKILLed at random moments and at named points of the commit path
//     (SLUICE_CRASHPOINT) while records stream through; every pipeline
//     prints `records=… kills=… lost=0 duplicated=0 wrong=0`.
//     outage_test.go stops PostgreSQL, Redis and Kafka under running sinks
//     and checks pending epochs, recovery and exact output;
//     broker_test.go runs the helper processes.
//   - nexmark_test.go runs Nexmark q0–q22 as views and as blackhole sinks
//     over a fixed generated stream and compares each with the same query
//     computed by PostgreSQL over the same rows (issue 4).
//   - clients_test.go is the client matrix (issue 14, acceptance 7): one
//     scripted session per client (psycopg2, psycopg 3, SQLAlchemy 1.4,
//     pgjdbc, node-postgres, lib/pq, pgx, psql, pgcli; the scripts are in
//     clients/) against a real server, each step passing or on the
//     client's pending list (a pending step must fail), and every session
//     against PostgreSQL with nothing pending (TestClientMatrixPostgres).
//   - deps_test.go enforces the import rules of style.md with `go list`.
//
// Environment: SLUICE_BIN uses a prebuilt binary, SLUICE_BUILD_FLAGS adds
// `go build` flags (e.g. -race), SLUICE_TEST_LOG_DIR keeps every server's
// full output, SLUICE_CRASH_KILLS raises the crash test's kill count,
// SLUICE_EO_KILLS the exactly-once battery's, SLUICE_CLIENT_CACHE where the
// client tests keep node-postgres and the compiled pgjdbc program
// (default ~/.cache/sluice-clients).
//
// It imports only the standard library and client libraries a user would
// use (pgx v5, lib/pq, franz-go's kgo/kmsg, go-redis): importing a Sluice package
// would make a test depend on internals instead of the user-visible
// contract.
package tests
