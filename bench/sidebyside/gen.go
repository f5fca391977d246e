package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"time"

	"sluice/connectors/nexmark"
)

// The input: Nexmark bids (the repository's generator, its default
// configuration: 10,000 events/s of event time, in order) as JSON lines
//
//	{"auction":1000,"bidder":1001,"price":3128,"channel":"Google","url":"https://…","date_time":"2015-07-15T00:00:00.001Z","extra":"…"}
//
// date_time in RFC 3339 (UTC, milliseconds). The reference results are
// computed from the generator's values while the file is written, so they
// depend on neither the floor's decoder nor Sluice's.

// w1MinPrice is W1's filter: price > w1MinPrice.
const w1MinPrice = 10000

// w2Window is W2's tumbling window and w2Delay its watermark delay
// (WATERMARK FOR date_time AS date_time - INTERVAL '1' SECOND).
const (
	w2Window = int64(10 * time.Second / time.Microsecond)
	w2Delay  = int64(time.Second / time.Microsecond)
)

// tsLayout is how date_time is written: RFC 3339, UTC, milliseconds.
const tsLayout = "2006-01-02T15:04:05.000Z07:00"

// w2Key is a W2 group: the auction and its window's start (µs).
type w2Key struct{ auction, start int64 }

// w2Agg is a W2 result: count(*) and max(price).
type w2Agg struct{ n, max int64 }

// results are a workload's output, summarized so that two runs compare
// exactly: W1 by its row count and an order-independent checksum, W2 by
// every window's aggregate.
type results struct {
	rows     int64
	checksum uint64
	windows  map[w2Key]w2Agg
}

// reference holds what every system must output.
type reference struct {
	bids int64
	w1   results
	w2   results // every window (a bounded scan closes them all)
	// w2Closed holds the windows the watermark closes while the stream
	// runs: an unbounded source (the file source) leaves the others open.
	w2Closed results
}

// w1Sum is one W1 row's share of the checksum.
func w1Sum(auction, bidder, price, micros int64) uint64 {
	h := mix(uint64(auction))
	h = mix(h ^ uint64(bidder))
	h = mix(h ^ uint64(price))
	return mix(h ^ uint64(micros))
}

func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// generate writes n bids to path and returns the reference results.
func generate(path string, n int64) (*reference, error) {
	g, err := nexmark.NewGenerator(nexmark.DefaultConfig())
	if err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	ref := &reference{w2: results{windows: map[w2Key]w2Agg{}}}
	var b nexmark.Bid
	var line []byte
	maxTs := int64(-1 << 62)
	for i := int64(0); ref.bids < n; i++ {
		if g.Kind(i) != nexmark.KindBid {
			continue
		}
		g.Bid(i, &b)
		ref.bids++
		line = appendBid(line[:0], &b)
		if _, err := w.Write(line); err != nil {
			return nil, err
		}
		if b.DateTime < maxTs-w2Delay {
			return nil, fmt.Errorf("bid %d is late (the generator's stream should be in order)", ref.bids)
		}
		maxTs = max(maxTs, b.DateTime)
		if b.Price > w1MinPrice {
			ref.w1.rows++
			ref.w1.checksum += w1Sum(b.Auction, b.Bidder, b.Price, b.DateTime)
		}
		k := w2Key{b.Auction, floorDiv(b.DateTime, w2Window) * w2Window}
		a := ref.w2.windows[k]
		a.n++
		a.max = max(a.max, b.Price)
		ref.w2.windows[k] = a
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	ref.w2.seal()
	ref.w2Closed = results{windows: map[w2Key]w2Agg{}}
	for k, a := range ref.w2.windows {
		if k.start+w2Window <= maxTs-w2Delay {
			ref.w2Closed.windows[k] = a
		}
	}
	ref.w2Closed.seal()
	return ref, nil
}

// seal sets a W2 result's row count and checksum from its windows.
func (r *results) seal() {
	r.rows, r.checksum = int64(len(r.windows)), 0
	for k, a := range r.windows {
		r.checksum += w1Sum(k.auction, k.start, a.n, a.max)
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// appendBid appends b as one JSON line.
func appendBid(dst []byte, b *nexmark.Bid) []byte {
	dst = append(dst, `{"auction":`...)
	dst = strconv.AppendInt(dst, b.Auction, 10)
	dst = append(dst, `,"bidder":`...)
	dst = strconv.AppendInt(dst, b.Bidder, 10)
	dst = append(dst, `,"price":`...)
	dst = strconv.AppendInt(dst, b.Price, 10)
	dst = append(dst, `,"channel":`...)
	dst = appendJSONString(dst, b.Channel)
	dst = append(dst, `,"url":`...)
	dst = appendJSONString(dst, b.URL)
	dst = append(dst, `,"date_time":"`...)
	dst = time.UnixMicro(b.DateTime).UTC().AppendFormat(dst, tsLayout)
	dst = append(dst, `","extra":`...)
	dst = appendJSONString(dst, b.Extra)
	return append(dst, "}\n"...)
}

// appendJSONString appends s as a JSON string (RFC 8259 escapes only).
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
