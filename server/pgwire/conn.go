package pgwire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgproto3/v2"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file holds everything that touches pgproto3: the framing of client
// messages, the startup handshake, the dispatch of simple- and
// extended-protocol messages, and the encoding of server messages.

// Startup packet codes (the first int32 of a startup packet body).
const (
	cancelRequestCode = 80877102
	sslRequestCode    = 80877103
	gssEncRequestCode = 80877104

	maxStartupPacket = 10000 // MAX_STARTUP_PACKET_LENGTH in Postgres
	smallMessage     = 10000 // PQ_SMALL_MESSAGE_LIMIT: bound for messages that are never big

	readBufferSize  = 16 << 10
	writeBufferSize = 16 << 10
	maxKeptBuffer   = 1 << 20 // larger scratch buffers are dropped after use
)

// conn is one client connection. All of its fields except mu/cancelStmt
// are used only by the connection's goroutine.
type conn struct {
	srv *Server
	nc  net.Conn        // raw, or the TLS connection over it
	raw net.Conn        // the accepted connection (Serve's shutdown uses it)
	ctx context.Context // done when the server shuts down
	br  *bufio.Reader
	bw  *bufio.Writer

	rbuf []byte // reused body buffer for client messages
	wbuf []byte // reused scratch buffer for server messages
	werr error  // first write error: the connection is dead

	pid, secret uint32 // backend key, set by Server.register
	slot        bool   // holds a session slot (limits.go)

	mu         sync.Mutex
	cancelStmt context.CancelCauseFunc // cancels the running statement; nil between statements
	idle       bool                    // ReadyForQuery sent, no message read since (limits.go)

	sess           Session
	txs            interface{ TxStatus() byte } // sess, if it reports transaction status
	zoned          Zoned                        // sess, if it has a TimeZone
	stmts          map[string]*statement
	portals        map[string]*portal
	ignoreTillSync bool // an extended-protocol message failed: skip to Sync
	lostSync       bool // a COPY FROM STDIN read a foreign message: end after its error
}

func newConn(s *Server, nc net.Conn, ctx context.Context) *conn {
	return &conn{
		srv:     s,
		nc:      nc,
		raw:     nc,
		ctx:     ctx,
		br:      bufio.NewReaderSize(nc, readBufferSize),
		bw:      bufio.NewWriterSize(nc, writeBufferSize),
		stmts:   make(map[string]*statement),
		portals: make(map[string]*portal),
	}
}

// fatalf returns an error that is reported with severity FATAL and ends the
// connection.
func fatalf(code pgcode.Code, format string, args ...any) *pgerror.Error {
	e := pgerror.New(code, format, args...)
	e.Severity = "FATAL"
	return e
}

func isFatal(err error) bool {
	var e *pgerror.Error
	return errors.As(err, &e) && (e.Severity == "FATAL" || e.Severity == "PANIC")
}

var errInvalidMessage = fatalf(pgcode.ProtocolViolation, "invalid message format")

// serve runs the connection to its end. It never panics: a panic in the
// protocol code or the Session is logged and ends this connection only.
func (c *conn) serve() {
	defer c.finish()
	defer func() {
		if r := recover(); r != nil {
			c.srv.opts.Logf("pgwire: panic serving %s: %v\n%s", remoteAddr(c.nc), r, debug.Stack())
			c.trySendFatal(fatalf(pgcode.Internal, "internal error"))
		}
	}()
	if !c.srv.enterConn() { // limits.go
		c.trySendFatal(fatalf(pgcode.TooManyConnections, "sorry, too many clients already"))
		return
	}
	defer c.srv.leaveConn()
	if !c.startup() {
		return
	}
	c.loop()
}

// finish releases everything the connection holds.
func (c *conn) finish() {
	c.nc.Close()
	c.srv.unregister(c)
	if c.slot {
		c.srv.releaseSlot()
	}
	c.dropPortals()
	if c.sess != nil {
		defer func() {
			if r := recover(); r != nil {
				c.srv.opts.Logf("pgwire: panic closing session of %s: %v\n%s", remoteAddr(c.nc), r, debug.Stack())
			}
		}()
		c.sess.Close()
	}
}

func remoteAddr(nc net.Conn) string {
	if a := nc.RemoteAddr(); a != nil {
		return a.String()
	}
	return ""
}

// ---- reading ----

// readStartupPacket reads one length-prefixed startup packet and returns
// its code and the rest of its body.
func (c *conn) readStartupPacket() (code uint32, body []byte, err error) {
	if c.br.Buffered() < 8 {
		if err := c.flush(); err != nil {
			return 0, nil, err
		}
	}
	var hdr [4]byte
	if _, err := io.ReadFull(c.br, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < 8 || n > maxStartupPacket {
		return 0, nil, fmt.Errorf("invalid length of startup packet: %d", n)
	}
	b := make([]byte, n-4)
	if _, err := io.ReadFull(c.br, b); err != nil {
		return 0, nil, err
	}
	return binary.BigEndian.Uint32(b), b[4:], nil
}

// knownMessage reports whether typ is a frontend message type valid after
// startup, and the largest length it may declare.
func (c *conn) knownMessage(typ byte) (ok bool, limit int) {
	switch typ {
	case 'Q', 'P', 'B', 'F', 'd': // may be large
		return true, c.srv.opts.MaxMessageSize
	case 'E', 'D', 'C', 'S', 'H', 'X', 'c', 'f':
		return true, min(smallMessage, c.srv.opts.MaxMessageSize)
	}
	return false, 0
}

// readMessage reads one typed client message. The body is valid until the
// next call. Protocol violations are returned as FATAL *pgerror.Errors;
// anything else is an I/O error.
func (c *conn) readMessage() (typ byte, body []byte, err error) {
	if c.br.Buffered() < 5 {
		// About to block: send what the client is owed first.
		if err := c.flush(); err != nil {
			return 0, nil, err
		}
	}
	hdr, err := c.br.Peek(5)
	if err != nil {
		return 0, nil, err
	}
	typ = hdr[0]
	n := int64(binary.BigEndian.Uint32(hdr[1:]))
	ok, limit := c.knownMessage(typ)
	if !ok {
		return 0, nil, fatalf(pgcode.ProtocolViolation, "invalid frontend message type %d", typ)
	}
	if n < 4 {
		return 0, nil, fatalf(pgcode.ProtocolViolation, "invalid message length")
	}
	if n > int64(limit) {
		return 0, nil, fatalf(pgcode.ProtocolViolation, "message too large")
	}
	c.br.Discard(5)
	body, err = c.readBody(int(n - 4))
	return typ, body, err
}

// readBody reads n bytes. A large body is allocated as its bytes arrive, so
// a client that lies about a length does not make the server allocate it.
func (c *conn) readBody(n int) ([]byte, error) {
	if c.br.Buffered() < n {
		if err := c.flush(); err != nil {
			return nil, err
		}
	}
	if n <= cap(c.rbuf) {
		b := c.rbuf[:n]
		_, err := io.ReadFull(c.br, b)
		return b, err
	}
	b := make([]byte, 0, min(n, 64<<10))
	for len(b) < n {
		if len(b) == cap(b) {
			b = slices.Grow(b, min(n-len(b), len(b)))
		}
		k, err := io.ReadFull(c.br, b[len(b):min(cap(b), n)])
		b = b[:len(b)+k]
		if err != nil {
			return nil, err
		}
	}
	if cap(b) <= maxKeptBuffer {
		c.rbuf = b
	}
	return b, nil
}

// decode decodes a message body, turning a malformed body (including one
// that makes pgproto3 panic) into a FATAL protocol violation.
func decode(m pgproto3.FrontendMessage, body []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errInvalidMessage
		}
	}()
	if m.Decode(body) != nil {
		return errInvalidMessage
	}
	return nil
}

// checkText rejects client strings that are not valid UTF-8 (the only
// client_encoding the server speaks) or hold NUL bytes.
func checkText(s string) error {
	if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
		return pgerror.New(pgcode.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\"")
	}
	return nil
}

// ---- writing ----

func (c *conn) write(b []byte) error {
	if c.werr != nil {
		return c.werr
	}
	if _, err := c.bw.Write(b); err != nil {
		c.werr = err
	}
	return c.werr
}

func (c *conn) flush() error {
	if c.werr != nil {
		return c.werr
	}
	if err := c.bw.Flush(); err != nil {
		c.werr = err
	}
	return c.werr
}

// keepScratch keeps b as the write scratch buffer unless it grew too big.
func (c *conn) keepScratch(b []byte) {
	if cap(b) <= maxKeptBuffer {
		c.wbuf = b[:0]
	} else {
		c.wbuf = nil
	}
}

func (c *conn) send(m pgproto3.BackendMessage) error {
	if c.werr != nil {
		return c.werr
	}
	b, err := m.Encode(c.wbuf[:0])
	if err != nil {
		return pgerror.Wrap(err, pgcode.ProgramLimitExceeded, "cannot encode %T", m)
	}
	err = c.write(b)
	c.keepScratch(b)
	return err
}

// cstr makes s safe for a NUL-terminated protocol string.
func cstr(s string) string {
	if strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(s, "\x00", "")
}

func (c *conn) sendError(err error, severity string) error {
	e := pgerror.Flatten(err)
	sev := e.Severity
	if severity != "" {
		sev = severity
	}
	if sev == "" {
		sev = "ERROR"
	}
	code := e.Code
	if code == "" {
		code = pgcode.Internal
	}
	m := &pgproto3.ErrorResponse{
		Severity:            sev,
		SeverityUnlocalized: sev,
		Code:                cstr(string(code)),
		Message:             cstr(e.Message),
		Detail:              cstr(e.Detail),
		Hint:                cstr(e.Hint),
		Where:               cstr(e.Where),
	}
	if e.Position > 0 {
		m.Position = int32(min(e.Position, math.MaxInt32))
	}
	return c.send(m)
}

// trySendFatal sends err with severity FATAL and flushes, best effort:
// the connection is about to close.
func (c *conn) trySendFatal(err error) {
	defer func() { recover() }() // the connection is going away regardless
	if c.werr != nil {
		return
	}
	c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	c.sendError(err, "FATAL")
	c.flush()
}

func (c *conn) sendNotice(msg string) error {
	return c.send(&pgproto3.NoticeResponse{
		Severity:            "NOTICE",
		SeverityUnlocalized: "NOTICE",
		Code:                string(pgcode.SuccessfulCompletion),
		Message:             cstr(msg),
	})
}

func (c *conn) sendComplete(tag string) error {
	return c.send(&pgproto3.CommandComplete{CommandTag: []byte(cstr(tag))})
}

func (c *conn) sendEmptyQuery() error { return c.send(&pgproto3.EmptyQueryResponse{}) }

func (c *conn) sendPortalSuspended() error { return c.send(&pgproto3.PortalSuspended{}) }

func (c *conn) sendParameterStatus(name, value string) error {
	return c.send(&pgproto3.ParameterStatus{Name: cstr(name), Value: cstr(value)})
}

// sendChangedParameters reports the Session's changed settings.
func (c *conn) sendChangedParameters() error {
	ch := c.sess.ChangedParameters()
	for _, k := range slices.Sorted(maps.Keys(ch)) {
		if err := c.sendParameterStatus(k, ch[k]); err != nil {
			return err
		}
	}
	return nil
}

// sendRowDescription describes cols; fmts holds one format code per
// column (missing = text).
func (c *conn) sendRowDescription(cols []types.Column, fmts []int16) error {
	fields := make([]pgproto3.FieldDescription, len(cols))
	for i, col := range cols {
		fields[i] = pgproto3.FieldDescription{
			Name:                 []byte(cstr(col.Name)),
			TableOID:             col.TableOID,
			TableAttributeNumber: uint16(col.AttNum),
			DataTypeOID:          col.Type.OID(),
			DataTypeSize:         col.Type.Size(),
			TypeModifier:         col.Type.Modifier(),
			Format:               formatAt(fmts, i),
		}
	}
	return c.send(&pgproto3.RowDescription{Fields: fields})
}

func formatAt(fmts []int16, i int) int16 {
	if i < len(fmts) {
		return fmts[i]
	}
	return pgproto3.TextFormat
}

// writeDataRow encodes r as a DataRow, column i in format fmts[i] (missing
// = text) as type cols[i].Type. A value that cannot be encoded fails the
// whole row, and nothing is written.
func (c *conn) writeDataRow(r types.Row, cols []types.Column, fmts []int16) error {
	if c.werr != nil {
		return c.werr
	}
	if len(r) > math.MaxUint16 {
		return pgerror.New(pgcode.ProgramLimitExceeded, "too many columns in row: %d", len(r))
	}
	b := append(c.wbuf[:0], 'D', 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(len(r)))
	loc := c.zone()
	for i, d := range r {
		if d.IsNull() {
			b = binary.BigEndian.AppendUint32(b, math.MaxUint32) // -1
			continue
		}
		t := types.TUnknown
		if i < len(cols) {
			t = cols[i].Type
		}
		at := len(b)
		b = append(b, 0, 0, 0, 0)
		if formatAt(fmts, i) == pgproto3.BinaryFormat {
			var err error
			if b, err = encodeBinary(b, d, t); err != nil {
				return err
			}
		} else {
			b = appendText(b, d, t, loc)
		}
		if len(b)-at-4 > math.MaxInt32 {
			return pgerror.New(pgcode.ProgramLimitExceeded, "value too large to send")
		}
		binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	}
	if len(b)-1 > math.MaxInt32 {
		return pgerror.New(pgcode.ProgramLimitExceeded, "row too large to send")
	}
	binary.BigEndian.PutUint32(b[1:], uint32(len(b)-1))
	err := c.write(b)
	c.keepScratch(b)
	return err
}

// readyForQuery ends a query cycle: it reports the transaction status,
// drops the portals of a finished transaction, and flushes.
func (c *conn) readyForQuery() error {
	status := byte('I')
	if c.txs != nil {
		if s := c.txs.TxStatus(); s == 'T' || s == 'E' {
			status = s
		} else {
			c.dropPortals() // the implicit transaction ended: its portals go
		}
	}
	if err := c.send(&pgproto3.ReadyForQuery{TxStatus: status}); err != nil {
		return err
	}
	c.idle = true
	return c.flush()
}

// ---- startup ----

// startup runs the startup handshake; it reports whether the connection
// is ready for queries.
func (c *conn) startup() bool {
	c.nc.SetReadDeadline(time.Now().Add(c.srv.opts.AuthTimeout))
	if c.ctx.Err() != nil {
		return false
	}
	if !c.directTLS() {
		return false
	}
	var (
		minor  uint32
		params map[string]string
		unrec  []string
	)
	for i := 0; ; i++ {
		code, body, err := c.readStartupPacket()
		if err != nil {
			return false
		}
		switch {
		case code == sslRequestCode || code == gssEncRequestCode:
			if i >= 2 || len(body) != 0 {
				return false
			}
			if code == sslRequestCode && c.canTLS() {
				if !c.startTLS() {
					return false
				}
				continue
			}
			// Encryption is not supported: the client continues in the clear.
			if c.write([]byte{'N'}) != nil || c.flush() != nil {
				return false
			}
			continue
		case code == cancelRequestCode:
			if len(body) == 8 {
				c.srv.cancel(binary.BigEndian.Uint32(body), binary.BigEndian.Uint32(body[4:]))
			}
			return false
		case code>>16 == 3:
			minor = code & 0xffff
			params, unrec, err = parseStartupParams(body)
			if err != nil {
				c.trySendFatal(err)
				return false
			}
		default:
			c.trySendFatal(fatalf(pgcode.FeatureNotSupported,
				"unsupported frontend protocol %d.%d: server supports 3.0 to 3.0", code>>16, code&0xffff))
			return false
		}
		break
	}

	user := params["user"]
	if user == "" {
		c.trySendFatal(fatalf("28000", "no PostgreSQL user name specified in startup packet"))
		return false
	}
	db := params["database"]
	if db == "" {
		db = user
	}
	if minor > 0 || len(unrec) > 0 {
		// NegotiateProtocolVersion: we speak 3.0 and none of the _pq_ options.
		b := []byte{'v', 0, 0, 0, 0}
		b = binary.BigEndian.AppendUint32(b, 0) // newest minor version supported
		b = binary.BigEndian.AppendUint32(b, uint32(len(unrec)))
		for _, o := range unrec {
			b = append(b, o...)
			b = append(b, 0)
		}
		binary.BigEndian.PutUint32(b[1:], uint32(len(b)-1))
		if c.write(b) != nil {
			return false
		}
	}
	if !c.checkTLSRequired(user, db) {
		return false
	}
	super, ok := c.authenticate(user)
	if !ok {
		return false
	}
	c.nc.SetReadDeadline(time.Time{})
	if c.ctx.Err() != nil { // Serve may have woken us before the deadline was cleared
		return false
	}
	if err := c.srv.acquireSlot(super); err != nil {
		c.trySendFatal(err)
		return false
	}
	c.slot = true

	sess, err := c.srv.h.Connect(c.ctx, StartupInfo{
		User:            user,
		Database:        db,
		ApplicationName: params["application_name"],
		Params:          params,
		RemoteAddr:      remoteAddr(c.nc),
	})
	if err != nil {
		c.trySendFatal(err)
		return false
	}
	if sess == nil {
		c.trySendFatal(fatalf(pgcode.Internal, "no session"))
		return false
	}
	c.sess = sess
	c.txs, _ = sess.(interface{ TxStatus() byte })
	c.zoned, _ = sess.(Zoned)
	c.srv.register(c)

	reported := map[string]string{
		"server_version":              "15.0",
		"server_encoding":             "UTF8",
		"client_encoding":             "UTF8",
		"DateStyle":                   "ISO, MDY",
		"integer_datetimes":           "on",
		"standard_conforming_strings": "on",
		"TimeZone":                    "UTC",
		"IntervalStyle":               "postgres",
		"is_superuser":                onOff(super),
		"session_authorization":       user,
		"application_name":            params["application_name"],
	}
	maps.Copy(reported, sess.ChangedParameters())
	for _, k := range slices.Sorted(maps.Keys(reported)) {
		if c.sendParameterStatus(k, reported[k]) != nil {
			return false
		}
	}
	if c.send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: c.secret}) != nil {
		return false
	}
	return c.readyForQuery() == nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// parseStartupParams parses the name/value pairs of a StartupMessage. It
// returns the protocol options (_pq_.*), which the server does not know,
// separately.
func parseStartupParams(b []byte) (params map[string]string, unrec []string, err error) {
	params = make(map[string]string)
	for {
		i := slices.Index(b, 0)
		if i < 0 {
			return nil, nil, fatalf(pgcode.ProtocolViolation, "invalid startup packet layout: expected terminator as last byte")
		}
		if i == 0 {
			if len(b) != 1 {
				return nil, nil, fatalf(pgcode.ProtocolViolation, "invalid startup packet layout: expected terminator as last byte")
			}
			return params, unrec, nil
		}
		name := string(b[:i])
		b = b[i+1:]
		j := slices.Index(b, 0)
		if j < 0 {
			return nil, nil, fatalf(pgcode.ProtocolViolation, "invalid startup packet layout: expected terminator as last byte")
		}
		value := string(b[:j])
		b = b[j+1:]
		if checkText(name) != nil || checkText(value) != nil {
			return nil, nil, fatalf(pgcode.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\" in startup packet")
		}
		if strings.HasPrefix(name, "_pq_.") {
			unrec = append(unrec, name)
			continue
		}
		params[name] = value
	}
}

// ---- the message loop ----

// loop serves messages until the client leaves, the server shuts down or
// the connection fails.
func (c *conn) loop() {
	for c.werr == nil {
		idleErr := c.awaitClient()
		typ, body, err := c.readMessage()
		if idleErr != nil {
			c.nc.SetReadDeadline(time.Time{})
		}
		c.idle = false
		if err != nil {
			switch {
			case idleErr != nil && c.idleExpired(err):
				c.trySendFatal(idleErr)
			case isFatal(err):
				c.trySendFatal(err)
			case c.ctx.Err() != nil:
				c.trySendFatal(errShutdown)
			}
			return
		}
		if c.ignoreTillSync && typ != 'S' && typ != 'X' {
			continue
		}
		extended := false
		switch typ {
		case 'Q':
			err = c.handleQuery(body)
		case 'P':
			extended, err = true, c.handleParse(body)
		case 'B':
			extended, err = true, c.handleBind(body)
		case 'D':
			extended, err = true, c.handleDescribe(body)
		case 'E':
			extended, err = true, c.handleExecute(body)
		case 'C':
			extended, err = true, c.handleClose(body)
		case 'S':
			if err = decode(&pgproto3.Sync{}, body); err == nil {
				c.ignoreTillSync = false
				err = c.readyForQuery()
			}
		case 'H':
			if err = decode(&pgproto3.Flush{}, body); err == nil {
				err = c.flush()
			}
		case 'X':
			if decode(&pgproto3.Terminate{}, body) == nil {
				c.flush()
			}
			return
		case 'F':
			if err = c.sendError(pgerror.Unsupported("function call protocol is not supported"), ""); err == nil {
				err = c.readyForQuery()
			}
		case 'd', 'c', 'f':
			// CopyData/CopyDone/CopyFail outside COPY are ignored, as in Postgres.
		}
		if err == nil {
			continue
		}
		switch {
		case c.werr != nil:
			return
		case isFatal(err):
			c.trySendFatal(err)
			return
		}
		c.sendError(err, "")
		c.abortTx()
		if c.lostSync {
			c.trySendFatal(errLostSync)
			return
		}
		if extended {
			c.ignoreTillSync = true
		}
	}
}

var errShutdown = fatalf(pgcode.AdminShutdown, "terminating connection due to administrator command")

// run runs one Session call as a cancellable statement.
func (c *conn) run(f func(ctx context.Context) error) error {
	ctx, cancel, stop := c.statementContext()
	c.mu.Lock()
	c.cancelStmt = cancel
	c.mu.Unlock()
	err := f(ctx)
	c.mu.Lock()
	c.cancelStmt = nil
	c.mu.Unlock()
	err = cancelCause(ctx, err)
	stop()
	if err != nil && c.ctx.Err() != nil {
		return errShutdown
	}
	return err
}

// cancelStatement cancels the running statement, if any (CancelRequest).
func (c *conn) cancelStatement() {
	c.mu.Lock()
	if c.cancelStmt != nil {
		c.cancelStmt(errUserCancel)
	}
	c.mu.Unlock()
}

// abortTx tells a Session that implements interface{ AbortTx() } that a
// message failed (Parse, Bind, Describe or Execute): inside a transaction
// block that puts the block in the failed state, as in PostgreSQL.
func (c *conn) abortTx() {
	if a, ok := c.sess.(interface{ AbortTx() }); ok {
		a.AbortTx()
	}
}

// isEmptyQuery reports whether q holds no statement.
func isEmptyQuery(q string) bool {
	return strings.Trim(q, " \t\n\r\f\v;") == ""
}

// handleQuery runs a simple-protocol Query. Statement errors are reported
// here; it returns only errors that end the connection.
func (c *conn) handleQuery(body []byte) error {
	var m pgproto3.Query
	nul := queryHasNUL(body)
	if !nul {
		if err := decode(&m, body); err != nil {
			return err
		}
	}
	delete(c.stmts, "") // as Postgres: a simple query drops the unnamed statement
	var err error
	switch {
	case nul:
		err = errEmbeddedNUL
	case checkText(m.String) != nil:
		err = checkText(m.String)
	case isEmptyQuery(m.String):
		err = c.sendEmptyQuery()
	default:
		w := &simpleWriter{c: c}
		err = c.run(func(ctx context.Context) error { return c.sess.SimpleQuery(ctx, m.String, w) })
		if perr := c.sendChangedParameters(); err == nil {
			err = perr
		}
		if err == nil && w.completed == 0 {
			err = c.sendEmptyQuery()
		}
	}
	if err != nil {
		if c.werr != nil || isFatal(err) {
			return err
		}
		if err := c.sendError(err, ""); err != nil {
			return err
		}
		if c.lostSync {
			return errLostSync
		}
	}
	return c.readyForQuery()
}

func (c *conn) handleParse(body []byte) error {
	var m pgproto3.Parse
	if err := decode(&m, body); err != nil {
		if parseHasNUL(body) {
			return errEmbeddedNUL
		}
		return err
	}
	if err := checkText(m.Name); err != nil {
		return err
	}
	if err := checkText(m.Query); err != nil {
		return err
	}
	if err := c.parse(m.Name, m.Query, m.ParameterOIDs); err != nil {
		return err
	}
	return c.send(&pgproto3.ParseComplete{})
}

func (c *conn) handleBind(body []byte) error {
	var m pgproto3.Bind
	if err := decode(&m, body); err != nil {
		return err
	}
	if err := checkText(m.DestinationPortal); err != nil {
		return err
	}
	if err := checkText(m.PreparedStatement); err != nil {
		return err
	}
	if err := c.bind(m.DestinationPortal, m.PreparedStatement, m.ParameterFormatCodes, m.Parameters, m.ResultFormatCodes); err != nil {
		return err
	}
	return c.send(&pgproto3.BindComplete{})
}

func (c *conn) handleDescribe(body []byte) error {
	var m pgproto3.Describe
	if err := decode(&m, body); err != nil {
		return err
	}
	switch m.ObjectType {
	case 'S':
		st, err := c.statement(m.Name)
		if err != nil {
			return err
		}
		oids := make([]uint32, len(st.params))
		for i, t := range st.params {
			oids[i] = t.OID()
		}
		if err := c.send(&pgproto3.ParameterDescription{ParameterOIDs: oids}); err != nil {
			return err
		}
		if st.cols == nil {
			return c.send(&pgproto3.NoData{})
		}
		return c.sendRowDescription(st.cols, nil)
	case 'P':
		p, err := c.portal(m.Name)
		if err != nil {
			return err
		}
		if p.stmt.cols == nil {
			return c.send(&pgproto3.NoData{})
		}
		return c.sendRowDescription(p.stmt.cols, p.fmts)
	}
	return fatalf(pgcode.ProtocolViolation, "invalid DESCRIBE message subtype %d", m.ObjectType)
}

func (c *conn) handleExecute(body []byte) error {
	var m pgproto3.Execute
	if err := decode(&m, body); err != nil {
		return err
	}
	p, err := c.portal(m.Portal)
	if err != nil {
		return err
	}
	return c.execute(p, max(int(int32(m.MaxRows)), 0))
}

func (c *conn) handleClose(body []byte) error {
	var m pgproto3.Close
	if err := decode(&m, body); err != nil {
		return err
	}
	switch m.ObjectType {
	case 'S':
		delete(c.stmts, m.Name)
	case 'P':
		c.dropPortal(m.Name)
	default:
		return fatalf(pgcode.ProtocolViolation, "invalid CLOSE message subtype %d", m.ObjectType)
	}
	return c.send(&pgproto3.CloseComplete{})
}
