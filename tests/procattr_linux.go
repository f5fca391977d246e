package tests

import "syscall"

// sysProcAttr puts a server in its own process group, so that a kill reaches
// every process it started, and makes the kernel kill it if the test binary
// dies first, so that an interrupted `go test` leaves no servers behind.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
}
