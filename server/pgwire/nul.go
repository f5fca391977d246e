package pgwire

import (
	"bytes"
	"encoding/binary"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// errEmbeddedNUL is PostgreSQL's answer to a Query or Parse whose query
// string holds a NUL byte: it reads the string up to the NUL, finds bytes
// left over and reports an ERROR, not a FATAL: the message itself was
// framed correctly, so the session goes on (after the next Sync in the
// extended protocol). Every other malformed message ends the connection.
var errEmbeddedNUL = pgerror.New(pgcode.ProtocolViolation, "invalid message format").
	WithDetail("The query string contains a NUL byte.")

// queryHasNUL reports whether a Query body holds a NUL before its
// terminator.
func queryHasNUL(body []byte) bool {
	i := bytes.IndexByte(body, 0)
	return i >= 0 && i < len(body)-1 && body[len(body)-1] == 0
}

// parseHasNUL reports whether a Parse body is well framed but for NUL
// bytes inside its query string: name NUL, query (with NULs) NUL, int16
// n, then n int32 parameter type OIDs.
func parseHasNUL(body []byte) bool {
	i := bytes.IndexByte(body, 0)
	if i < 0 {
		return false
	}
	q := body[i+1:]
	first := bytes.IndexByte(q, 0)
	if first < 0 {
		return false
	}
	for p := first + 1; p < len(q); p++ {
		if q[p] != 0 {
			continue
		}
		if tail := q[p+1:]; len(tail) >= 2 && len(tail) == 2+4*int(binary.BigEndian.Uint16(tail)) {
			return true
		}
	}
	return false
}
