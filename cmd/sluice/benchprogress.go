package main

// The live progress line of `sluice bench nexmark`: events read so far,
// the rate over the last interval and an estimate of the time left. On a
// terminal it rewrites one line; with --progress=on to a file or a pipe it
// writes a line per interval.

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// nexmarkShare is the part of a Nexmark stream's events (per 50) that
// each table type reads, at the default proportions 1:3:46.
var nexmarkShare = map[string]int64{"person": 1, "auction": 3, "bid": 46}

// progressMode parses --progress: auto (a terminal only), on or off.
func progressMode(v string, w *os.File) (on, tty bool, err error) {
	tty = isTerminal(w)
	switch v {
	case "auto", "":
		return tty, tty, nil
	case "on", "true", "1":
		return true, tty, nil
	case "off", "false", "0":
		return false, tty, nil
	}
	return false, false, fmt.Errorf("--progress %q: want auto, on or off", v)
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progress prints t's progress to w every interval until stop is closed,
// then a last line at 100% of what was read. events is the stream's
// length.
type progress struct {
	w        io.Writer
	tty      bool
	query    string
	events   int64
	t        *eofTracker
	interval time.Duration
}

func (p *progress) run(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	start := time.Now()
	tick := time.NewTicker(p.interval)
	defer tick.Stop()
	last, lastAt := int64(0), start
	for {
		select {
		case <-stop:
			p.line(p.eventsRead(), time.Since(start), float64(p.eventsRead())/time.Since(start).Seconds(), true)
			return
		case now := <-tick.C:
			ev := p.eventsRead()
			rate := float64(ev-last) / now.Sub(lastAt).Seconds()
			last, lastAt = ev, now
			p.line(ev, now.Sub(start), rate, false)
		}
	}
}

// eventsRead estimates the stream events behind the rows the readers
// have read: each reader's rows over its share of the stream.
func (p *progress) eventsRead() int64 {
	rows, expect := p.t.rows.Load(), p.t.expected.Load()
	if expect <= 0 {
		return 0
	}
	return min(p.events, int64(float64(rows)/float64(expect)*float64(p.events)))
}

func (p *progress) line(ev int64, elapsed time.Duration, rate float64, final bool) {
	pct := 100 * float64(ev) / float64(p.events)
	eta := "—"
	if rate > 0 && ev < p.events {
		eta = (time.Duration(float64(p.events-ev)/rate*float64(time.Second)) / time.Second * time.Second).String()
	} else if ev >= p.events {
		eta = "0s"
	}
	s := fmt.Sprintf("%s: %s/%s events (%.1f%%), %s events/s, elapsed %s, ETA %s",
		p.query, human(ev), human(p.events), pct, human(int64(rate)), elapsed.Truncate(time.Second), eta)
	switch {
	case p.tty && final:
		fmt.Fprintf(p.w, "\r%s\x1b[K\n", s)
	case p.tty:
		fmt.Fprintf(p.w, "\r%s\x1b[K", s)
	default:
		fmt.Fprintln(p.w, s)
	}
}

// human writes n with a K or M suffix.
func human(n int64) string {
	switch {
	case n >= 1_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 2, 64) + "M"
	case n >= 10_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + "K"
	}
	return strconv.FormatInt(n, 10)
}
