//go:build !linux

package pgwire

import "net"

// peerClosed is not available here: a statement whose client left runs to
// its end (or its statement_timeout).
func peerClosed(net.Conn) (closed, ok bool) { return false, false }
