// Command nexmarkfloor is the floor that `sluice bench nexmark` is compared
// with: it generates the same bounded stream with the exported Nexmark
// generator and computes a query's result in plain Go, on one goroutine,
// without the engine (no rows of Datums, no channels, no state store, no
// checkpoints). What the engine spends above this is its own overhead.
//
//	go run ./bench/nexmarkfloor --query q1 --events 10000000
//
// prints the line `sluice bench nexmark` prints:
//
//	query=q1 events=10000000 seconds=… events_per_sec=… cpu_seconds_per_million=… peak_rss_mib=…
//
// and the number of result rows (and a checksum of them) on stderr.
// Queries: q0 (projection: the rows are built and dropped), q1 (price ×
// 0.908 as an exact scaled integer), q2 (RisingWave's auction IN (…)
// predicate, the one the engine runs), q5 (HOP 2 s/10 s count per auction,
// the auctions with the most bids per window) and q7 (TUMBLE 10 s MAX
// price, the bids at that price in [window_end - 10 s, window_end]). The
// windowed queries emit a window once event time has passed it (the
// stream is in order), so their state is a few windows.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"sluice/connectors/nexmark"
)

func main() {
	query := flag.String("query", "", "q0, q1, q2, q5 or q7")
	events := flag.Int64("events", 10_000_000, "events of the stream, all kinds (nexmark.event.num)")
	rate := flag.Int64("event-rate", 0, "event-time rate, events/s (nexmark.first.event.rate; 0: the generator's 10,000)")
	flag.Parse()
	cfg := nexmark.DefaultConfig()
	if *rate > 0 {
		cfg.EventRate = *rate
	}
	g, err := nexmark.NewGenerator(cfg)
	if err != nil {
		fatal(err)
	}
	run, ok := queries[*query]
	if !ok {
		fatal(fmt.Errorf("--query %q: the floor has q0, q1, q2, q5 and q7", *query))
	}
	if *events <= 0 {
		fatal(fmt.Errorf("--events must be positive"))
	}
	cpu0 := cpuSeconds()
	start := time.Now()
	out := run(g, *events)
	sec := time.Since(start).Seconds()
	cpu := cpuSeconds() - cpu0
	fmt.Printf("query=%s events=%d seconds=%.3f events_per_sec=%.0f cpu_seconds_per_million=%.3f peak_rss_mib=%.1f\n",
		*query, *events, sec, float64(*events)/sec, cpu/(float64(*events)/1e6), peakRSSMiB())
	fmt.Fprintf(os.Stderr, "rows=%d checksum=%016x\n", out.rows, out.sum)
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "nexmarkfloor: %v\n", err)
	os.Exit(1)
}

// result counts the rows a query produced and folds them into a checksum,
// so that the work cannot be optimised away.
type result struct {
	rows int64
	sum  uint64
}

func (r *result) add(vals ...int64) {
	r.rows++
	for _, v := range vals {
		r.sum = (r.sum^uint64(v))*0x100000001b3 + 0x9e3779b97f4a7c15
	}
}

var queries = map[string]func(g *nexmark.Generator, n int64) result{
	"q0": q0, "q1": q1, "q2": q2, "q5": q5, "q7": q7,
}

// bids calls f with each bid among stream indexes 0 … n-1, in order.
func bids(g *nexmark.Generator, n int64, f func(b *nexmark.Bid)) {
	var b nexmark.Bid
	for i := int64(0); i < n; i++ {
		if g.Kind(i) != nexmark.KindBid {
			continue
		}
		g.Bid(i, &b)
		f(&b)
	}
}

// row0 is a row of q0 (and q1, whose price is scaled by 1000).
type row0 struct{ auction, bidder, price, dateTime int64 }

// batchRows is how many rows the floor builds before dropping them, as an
// engine batch would hold.
const batchRows = 1024

// q0: SELECT auction, bidder, price, date_time FROM bid.
func q0(g *nexmark.Generator, n int64) result {
	var out result
	batch := make([]row0, 0, batchRows)
	flush := func() {
		for i := range batch {
			out.add(batch[i].price)
		}
		batch = batch[:0]
	}
	bids(g, n, func(b *nexmark.Bid) {
		batch = append(batch, row0{b.Auction, b.Bidder, b.Price, b.DateTime})
		if len(batch) == batchRows {
			flush()
		}
	})
	flush()
	return out
}

// q1: SELECT auction, bidder, 0.908 * price AS price, date_time FROM bid.
// 0.908 × price is exact as price × 908 with three decimal places.
func q1(g *nexmark.Generator, n int64) result {
	var out result
	batch := make([]row0, 0, batchRows)
	flush := func() {
		for i := range batch {
			out.add(batch[i].price)
		}
		batch = batch[:0]
	}
	bids(g, n, func(b *nexmark.Bid) {
		batch = append(batch, row0{b.Auction, b.Bidder, b.Price * 908, b.DateTime})
		if len(batch) == batchRows {
			flush()
		}
	})
	flush()
	return out
}

// q2: SELECT auction, price FROM bid WHERE auction = 1007 OR auction = 1020
// OR auction = 2001 OR auction = 2019 OR auction = 2087.
func q2(g *nexmark.Generator, n int64) result {
	var out result
	bids(g, n, func(b *nexmark.Bid) {
		switch b.Auction {
		case 1007, 1020, 2001, 2019, 2087:
			out.add(b.Auction, b.Price)
		}
	})
	return out
}

const (
	second = int64(time.Second / time.Microsecond) // timestamps are µs
	slide  = 2 * second
	size   = 10 * second
)

// floorDiv is ⌊a/b⌋ for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// q5: per HOP(2 s, 10 s) window, the auctions whose bid count is the
// window's largest (RisingWave's q5: count per (window, auction), MAX per
// window, joined on num >= maxn).
func q5(g *nexmark.Generator, n int64) result {
	var out result
	// windows holds the counts of the open windows by start; a bid at t
	// is in the size/slide windows starting in (t - size, t].
	windows := map[int64]map[int64]int64{}
	var starts []int64 // open window starts, ascending
	emit := func(start int64) {
		counts := windows[start]
		var mx int64
		for _, c := range counts {
			mx = max(mx, c)
		}
		for a, c := range counts {
			if c >= mx {
				out.add(a, c)
			}
		}
		delete(windows, start)
	}
	bids(g, n, func(b *nexmark.Bid) {
		last := floorDiv(b.DateTime, slide) * slide
		// Windows that end at or before this bid are complete: the
		// stream is in event-time order.
		for len(starts) > 0 && starts[0]+size <= b.DateTime {
			emit(starts[0])
			starts = starts[1:]
		}
		for s := last - size + slide; s <= last; s += slide {
			m := windows[s]
			if m == nil {
				m = map[int64]int64{}
				windows[s] = m
				starts = append(starts, s)
			}
			m[b.Auction]++
		}
	})
	for _, s := range starts {
		emit(s)
	}
	return out
}

// q7: per TUMBLE(10 s) window, MAX(price); the bids with that price whose
// time is in [window_end - 10 s, window_end] (RisingWave's BETWEEN: a bid
// exactly at window_end, the first instant of the next window, matches
// too).
func q7(g *nexmark.Generator, n int64) result {
	var out result
	type bid struct{ auction, price, bidder, dateTime int64 }
	cur := int64(-1 << 62) // start of the current window
	var curMax int64 = -1
	var best []bid // the current window's bids at curMax
	prevEnd, prevMax := int64(-1<<62), int64(-1)
	emitBid := func(b bid) { out.add(b.auction, b.price, b.bidder, b.dateTime) }
	bids(g, n, func(b *nexmark.Bid) {
		w := floorDiv(b.DateTime, size) * size
		if w != cur {
			for _, x := range best {
				emitBid(x)
			}
			prevEnd, prevMax = cur+size, curMax
			cur, curMax, best = w, -1, best[:0]
		}
		x := bid{b.Auction, b.Price, b.Bidder, b.DateTime}
		if b.DateTime == prevEnd && b.Price == prevMax {
			emitBid(x) // joins the previous window at its end
		}
		switch {
		case b.Price > curMax:
			curMax, best = b.Price, append(best[:0], x)
		case b.Price == curMax:
			best = append(best, x)
		}
	})
	for _, x := range best {
		emitBid(x)
	}
	return out
}

// cpuSeconds is the CPU time (user + system) the process has used.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// peakRSSMiB is the process's peak resident set (VmHWM).
func peakRSSMiB() float64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
				if kb, err := strconv.ParseFloat(f[1], 64); err == nil {
					return kb / 1024
				}
			}
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024
}
