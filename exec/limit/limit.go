// Package limit owns what bounds one statement while it runs: the checks
// for cancellation that every long loop makes (a CancelRequest, a
// statement_timeout, a closed portal), and the statement's memory budget
// (statement_mem), which ends a runaway statement with 53200 instead of
// growing the process. It imports only sql/pgcode, sql/pgerror and
// sql/types, so that exec/eval, exec/ops and exec/job can all use it.
//
// A nil *Guard is valid and limits nothing: code outside a statement
// (views, tests) passes none.
package limit

import (
	"context"
	"fmt"
	"sync/atomic"
	"unsafe"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Setting is the name of the memory budget's session setting.
const Setting = "statement_mem"

// CheckEvery is how many iterations a tight loop runs between two calls
// of Err (an Err call costs a channel poll).
const CheckEvery = 1024

// Guard is one statement's limits. Its methods may be called from any
// goroutine.
type Guard struct {
	done <-chan struct{}
	acct *account
}

// account is the memory a statement holds, shared by the guards of its
// subqueries.
type account struct {
	used  atomic.Int64
	limit int64 // bytes; <= 0: no budget
}

// New returns a guard cancelled with ctx, with a memory budget of limit
// bytes (<= 0: none).
func New(ctx context.Context, limit int64) *Guard {
	return &Guard{done: ctx.Done(), acct: &account{limit: limit}}
}

// With returns a guard cancelled with ctx that shares g's memory budget (a
// subquery's run, or a rerun of the same statement). A nil g gives a guard
// without a budget.
func (g *Guard) With(ctx context.Context) *Guard {
	if g == nil {
		return New(ctx, 0)
	}
	return &Guard{done: ctx.Done(), acct: g.acct}
}

// ErrCanceled is the error a cancelled statement stops with; the server
// rewrites its message when the cause was statement_timeout.
var ErrCanceled = pgerror.New(pgcode.QueryCanceled, "canceling statement due to user request")

// Err returns ErrCanceled once the statement is cancelled, nil before.
func (g *Guard) Err() error {
	if g == nil || g.done == nil {
		return nil
	}
	select {
	case <-g.done:
		return ErrCanceled
	default:
		return nil
	}
}

// Grow accounts n more bytes to the statement; past the budget it returns
// 53200 and accounts nothing.
func (g *Guard) Grow(n int64) error {
	if g == nil || g.acct.limit <= 0 || n <= 0 {
		return nil
	}
	if used := g.acct.used.Add(n); used > g.acct.limit {
		g.acct.used.Add(-n)
		return OutOfMemory(n, g.acct.limit)
	}
	return nil
}

// Shrink gives back n bytes accounted by Grow.
func (g *Guard) Shrink(n int64) {
	if g == nil || g.acct.limit <= 0 || n <= 0 {
		return
	}
	g.acct.used.Add(-n)
}

// Fits reports 53200 if n bytes more would pass the budget, without
// accounting them (a value built once and handed on: repeat, lpad).
func (g *Guard) Fits(n int64) error {
	if g == nil || g.acct.limit <= 0 || n <= 0 {
		return nil
	}
	if g.acct.used.Load()+n > g.acct.limit {
		return OutOfMemory(n, g.acct.limit)
	}
	return nil
}

// Used returns the bytes accounted now.
func (g *Guard) Used() int64 {
	if g == nil {
		return 0
	}
	return g.acct.used.Load()
}

// OutOfMemory is the 53200 error of a statement past its budget.
func OutOfMemory(request, limit int64) error {
	return pgerror.New(pgcode.OutOfMemory, "out of memory").
		WithDetail("Failed on request of size %d: the statement would hold more than %s = %s.", request, Setting, FormatBytes(limit)).
		WithHint("Raise %s (SET %s = '1GB'), or narrow the query.", Setting, Setting)
}

// FormatBytes renders n as PostgreSQL shows memory settings (kB, MB, GB).
func FormatBytes(n int64) string {
	switch {
	case n <= 0:
		return "0"
	case n%(1<<30) == 0:
		return fmt.Sprintf("%dGB", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dMB", n>>20)
	case n%(1<<10) == 0:
		return fmt.Sprintf("%dkB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// datumBytes is the in-memory size of a types.Datum, without what its
// string or array points to.
const datumBytes = int64(unsafe.Sizeof(types.Datum{}))

// RowBytes estimates the memory a row holds: its datums and the strings
// and arrays they point to.
func RowBytes(r types.Row) int64 {
	n := int64(24) + int64(len(r))*datumBytes
	for i := range r {
		n += datumExtra(&r[i])
	}
	return n
}

func datumExtra(d *types.Datum) int64 {
	n := int64(len(d.S))
	for i := range d.Elems() {
		n += datumBytes + datumExtra(&d.Elems()[i])
	}
	return n
}

// DatumBytes estimates the memory a value holds.
func DatumBytes(d types.Datum) int64 { return datumBytes + datumExtra(&d) }
