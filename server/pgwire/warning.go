package pgwire

import (
	"github.com/jackc/pgproto3/v2"
)

// Warner is the capability of the ResultWriters this package passes to
// send a WARNING with its SQLSTATE (find it by type assertion), such as
// GRANT's 01007 "no privileges were granted".
type Warner interface {
	Warning(code, msg string) error
}

func (c *conn) sendWarning(code, msg string) error {
	return c.send(&pgproto3.NoticeResponse{
		Severity:            "WARNING",
		SeverityUnlocalized: "WARNING",
		Code:                code,
		Message:             cstr(msg),
	})
}

// Warning implements Warner.
func (w *simpleWriter) Warning(code, msg string) error { return w.c.sendWarning(code, msg) }

// Warning implements Warner.
func (w *portalWriter) Warning(code, msg string) error { return w.c.sendWarning(code, msg) }
