package pgwire

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// This file holds the connection's limits: statement_timeout and the two
// idle timeouts (asked of the Session through Timeouts), how a cancelled
// statement's error names its cause, and the caps on prepared statements
// and portals a client may hold.

// Timeouts is an optional capability of a Session: the session's
// statement_timeout, idle_in_transaction_session_timeout and
// idle_session_timeout (0: none), read before each statement and each
// wait for the client.
type Timeouts interface {
	Timeouts() (statement, idleInTx, idleSession time.Duration)
}

// Caps on what one connection may hold: a client that Parses or Binds
// forever gets 53400 instead of exhausting the server's memory.
const (
	MaxPreparedStatements = 10000
	MaxPortals            = 10000
)

var (
	errUserCancel       = pgerror.New(pgcode.QueryCanceled, "canceling statement due to user request")
	errStatementTimeout = pgerror.New(pgcode.QueryCanceled, "canceling statement due to statement timeout")
	errIdleInTx         = fatalf(pgcode.IdleInTransactionSessionTimeout, "terminating connection due to idle-in-transaction timeout")
	errIdleSession      = fatalf(pgcode.IdleSessionTimeout, "terminating connection due to idle-session timeout")
)

// timeouts returns the session's timeouts, zero when it has none.
func (c *conn) timeouts() (statement, idleInTx, idleSession time.Duration) {
	if t, ok := c.sess.(Timeouts); ok {
		return t.Timeouts()
	}
	return 0, 0, 0
}

// statementContext returns the context one statement runs under: it is
// cancelled by a CancelRequest (cause errUserCancel), by
// statement_timeout (cause errStatementTimeout), or by the server's
// shutdown. stop releases it.
//
// While the statement runs, a watcher polls the socket every
// clientCheckInterval: a client that went away (closed its connection)
// cancels the statement, so that its work does not go on burning CPU.
func (c *conn) statementContext() (ctx context.Context, cancel context.CancelCauseFunc, stop func()) {
	ctx, cancel = context.WithCancelCause(c.ctx)
	var t *time.Timer
	if d, _, _ := c.timeouts(); d > 0 {
		t = time.AfterFunc(d, func() { cancel(errStatementTimeout) })
	}
	// The watcher is a timer that re-arms itself: a statement shorter
	// than one interval costs no goroutine.
	var mu sync.Mutex
	stopped := false
	var check *time.Timer
	mu.Lock() // check is read by its own callback
	defer mu.Unlock()
	check = time.AfterFunc(clientCheckInterval, func() {
		closed, ok := peerClosed(c.nc)
		if closed {
			cancel(errClientGone)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if ok && !stopped && ctx.Err() == nil {
			check.Reset(clientCheckInterval)
		}
	})
	stop = func() {
		if t != nil {
			t.Stop()
		}
		mu.Lock()
		stopped = true
		check.Stop()
		mu.Unlock()
		cancel(nil)
	}
	return ctx, cancel, stop
}

// clientCheckInterval is how often a running statement checks that its
// client is still connected.
const clientCheckInterval = 100 * time.Millisecond

// errClientGone cancels the statement of a client that closed its
// connection (nobody reads the error).
var errClientGone = pgerror.New(pgcode.QueryCanceled, "canceling statement: the client closed the connection")

// cancelCause turns the error of a statement stopped by its context into
// PostgreSQL's error for the cause (a CancelRequest or statement_timeout).
// Other errors pass unchanged.
func cancelCause(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	if pgerror.GetCode(err) != pgcode.QueryCanceled && !errors.Is(err, context.Canceled) {
		return err
	}
	if cause := context.Cause(ctx); cause == errStatementTimeout || cause == errClientGone {
		return cause
	}
	return errUserCancel
}

// awaitClient arms the idle timeout that applies while the connection
// waits for the client's next message after ReadyForQuery: the
// idle-in-transaction one inside a transaction block, else the
// idle-session one. It reports the error that ends the connection if the
// wait times out (nil: no timeout armed).
func (c *conn) awaitClient() error {
	if !c.idle || c.br.Buffered() > 0 {
		return nil
	}
	_, inTx, session := c.timeouts()
	d, fatal := session, errIdleSession
	if c.txs != nil {
		if s := c.txs.TxStatus(); s == 'T' || s == 'E' {
			d, fatal = inTx, errIdleInTx
		}
	}
	if d <= 0 {
		return nil
	}
	c.nc.SetReadDeadline(time.Now().Add(d))
	if c.ctx.Err() != nil { // shutdown may have set its own deadline first
		c.nc.SetReadDeadline(time.Now())
		return nil
	}
	return fatal
}

// idleExpired reports whether err is the read timeout armed by awaitClient
// (and not the server's shutdown, which also uses a deadline).
func (c *conn) idleExpired(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded) && c.ctx.Err() == nil
}

func errTooManyStatements() error {
	return pgerror.New(pgcode.ConfigurationLimitExceeded, "too many prepared statements: a connection may hold at most %d", MaxPreparedStatements).
		WithHint("Close (DEALLOCATE) prepared statements you no longer need.")
}

func errTooManyPortals() error {
	return pgerror.New(pgcode.ConfigurationLimitExceeded, "too many portals: a connection may hold at most %d", MaxPortals).
		WithHint("Close portals you no longer need, or end the transaction.")
}
