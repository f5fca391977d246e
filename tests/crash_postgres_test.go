package tests

import (
	"net"
	"testing"
)

// TestCrashRecoveryPostgres checks the crash test itself: run against a
// private PostgreSQL 15 instance, which is durable and keeps its views
// consistent, it must find no mismatch. A mismatch here is a bug in the
// test (its model, its reconciliation of unknown writes), not in Sluice.
//
// PostgreSQL refuses to run as root, so the instance runs as the postgres
// user, in a temporary directory, on a free port (startPrivatePostgres).
func TestCrashRecoveryPostgres(t *testing.T) {
	srv := startPrivatePostgres(t)
	sys := crashSystem{
		name: "postgres",
		schema: append(append([]string{}, crashTables...),
			`CREATE VIEW `+crashPerOwner, `CREATE VIEW `+crashEvSum, `CREATE VIEW `+crashJoined),
	}
	runCrashTest(t, srv, sys, crashMinKills)
}

func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}
