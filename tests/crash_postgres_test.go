package tests

import (
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// TestCrashRecoveryPostgres checks the crash test itself: run against a
// private PostgreSQL 15 instance, which is durable and keeps its views
// consistent, it must find no mismatch. A mismatch here is a bug in the
// test (its model, its reconciliation of unknown writes), not in Sluice.
//
// PostgreSQL refuses to run as root, so the instance runs as the postgres
// user, in a temporary directory, on a free port.
func TestCrashRecoveryPostgres(t *testing.T) {
	const bin = "/usr/lib/postgresql/15/bin"
	pgUser, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("the machine's postgres user: %v", err)
	}
	uid, _ := strconv.Atoi(pgUser.Uid)
	gid, _ := strconv.Atoi(pgUser.Gid)
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}

	dir, err := os.MkdirTemp("", "sluice-crash-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}

	addr := FreeAddr(t)
	srv := NewServer(t, Options{
		Command: []string{filepath.Join(bin, "postgres"), "-D", data, "-p", portOf(addr),
			"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + dir,
			"-c", "fsync=on", "-c", "max_connections=40", "-c", "shared_buffers=16MB"},
		Addr: addr, DataDir: data, Credential: cred, User: "postgres", Database: "postgres",
	})
	if err := srv.Start(); err != nil {
		t.Fatalf("starting PostgreSQL: %v", err)
	}
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
