// Package chunkq holds what the sources that fetch in the background
// (kafka, socket) share on their Read side: taking the next fetched chunk
// without blocking Read for longer than a short wait (so that barriers are
// never held up), and the buffer of bad records passed by for
// connector.DeadLetterSource.
package chunkq

import (
	"context"
	"time"

	"sluice/exec/connector"
)

// Wait is how long Read waits for a chunk when none is ready.
const Wait = 5 * time.Millisecond

// Taker takes chunks from a fetcher's channel.
type Taker[T any] struct {
	timer *time.Timer
}

// Next returns the next chunk of c: at once if one is ready; otherwise,
// when mayWait, after waiting up to Wait for one. ok is false if none came.
func (t *Taker[T]) Next(ctx context.Context, c <-chan T, mayWait bool) (v T, ok bool, err error) {
	select {
	case v = <-c:
		return v, true, nil
	default:
	}
	if !mayWait {
		return v, false, nil
	}
	if t.timer == nil {
		t.timer = time.NewTimer(Wait)
	} else {
		t.timer.Reset(Wait)
	}
	select {
	case v = <-c:
		t.timer.Stop()
		return v, true, nil
	case <-t.timer.C:
		return v, false, nil
	case <-ctx.Done():
		t.timer.Stop()
		return v, false, ctx.Err()
	}
}

// DeadLetters buffers the bad records a source passed by until the
// engine takes them.
type DeadLetters struct {
	buf []connector.DeadLetter
}

// Add keeps one bad record.
func (d *DeadLetters) Add(l connector.DeadLetter) { d.buf = append(d.buf, l) }

// Take appends the kept records to buf and forgets them
// (connector.DeadLetterSource).
func (d *DeadLetters) Take(buf []connector.DeadLetter) []connector.DeadLetter {
	buf = append(buf, d.buf...)
	clear(d.buf)
	d.buf = d.buf[:0]
	return buf
}
