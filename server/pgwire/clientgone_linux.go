package pgwire

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// peerClosed reports whether the client has closed its end of nc (poll
// with POLLRDHUP, as PostgreSQL's client_connection_check_interval does),
// without reading from it. ok is false when nc offers no descriptor.
func peerClosed(nc net.Conn) (closed, ok bool) {
	sc, isSys := nc.(syscall.Conn)
	if !isSys {
		return false, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false, false
	}
	err = rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		n, perr := unix.Poll(fds, 0)
		closed = perr == nil && n > 0 && fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0
	})
	return closed, err == nil
}
