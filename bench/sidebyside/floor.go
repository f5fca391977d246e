package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// The hand-written floor: one goroutine reads the JSON lines, decodes the
// four fields the workloads use with a scanner written for flat objects
// (encoding/json for a line with escapes in them), applies W1 or W2 and
// writes the result rows as JSON lines, the shape of Sluice's file sink.
// No rows of datums, no channels, no state store, no checkpoints: what an
// engine spends above this is its own overhead.

// floorBid is what the workloads read of a bid.
type floorBid struct {
	auction, bidder, price int64
	micros                 int64
	dateTime               []byte // the text of date_time (aliases the line)
}

var errFloorSyntax = errors.New("not a flat JSON object")

// decodeBid decodes one line. Fields may come in any order; unknown ones
// are skipped; a string with escapes sends the line to encoding/json.
func decodeBid(line []byte, b *floorBid) error {
	*b = floorBid{micros: -1}
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return errFloorSyntax
	}
	i = skipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		return fmt.Errorf("bid without date_time")
	}
	for {
		if i >= len(line) || line[i] != '"' {
			return errFloorSyntax
		}
		end := bytes.IndexByte(line[i+1:], '"')
		if end < 0 {
			return errFloorSyntax
		}
		key := line[i+1 : i+1+end]
		if bytes.IndexByte(key, '\\') >= 0 {
			return decodeBidSlow(line, b)
		}
		i = skipSpace(line, i+2+end)
		if i >= len(line) || line[i] != ':' {
			return errFloorSyntax
		}
		i = skipSpace(line, i+1)
		if i >= len(line) {
			return errFloorSyntax
		}
		var val []byte
		if line[i] == '"' {
			end := bytes.IndexByte(line[i+1:], '"')
			if end < 0 {
				return errFloorSyntax
			}
			val = line[i+1 : i+1+end]
			if bytes.IndexByte(val, '\\') >= 0 {
				return decodeBidSlow(line, b)
			}
			i += 2 + end
		} else {
			j := i
			for j < len(line) && line[j] != ',' && line[j] != '}' && line[j] != ' ' {
				j++
			}
			val, i = line[i:j], j
		}
		var err error
		switch string(key) {
		case "auction":
			b.auction, err = atoi(val)
		case "bidder":
			b.bidder, err = atoi(val)
		case "price":
			b.price, err = atoi(val)
		case "date_time":
			b.dateTime = val
			b.micros, err = parseTimestamp(val)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		i = skipSpace(line, i)
		if i < len(line) && line[i] == ',' {
			i = skipSpace(line, i+1)
			continue
		}
		if i < len(line) && line[i] == '}' {
			break
		}
		return errFloorSyntax
	}
	if b.dateTime == nil {
		return fmt.Errorf("bid without date_time")
	}
	return nil
}

func skipSpace(s []byte, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n') {
		i++
	}
	return i
}

func atoi(s []byte) (int64, error) {
	var n int64
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 18 {
		v, err := strconv.ParseInt(string(s), 10, 64)
		if neg {
			v = -v
		}
		return v, err
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not an integer", s)
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, nil
}

// parseTimestamp reads RFC 3339 in microseconds since the epoch: the
// shape the generator writes (YYYY-MM-DDTHH:MM:SS.fffZ) directly, any
// other through time.Parse.
func parseTimestamp(s []byte) (int64, error) {
	if len(s) == 24 && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' && s[16] == ':' && s[19] == '.' && s[23] == 'Z' {
		var d [13]int
		k := 0
		ok := true
		for _, p := range [...]int{0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17} {
			c := s[p]
			if c < '0' || c > '9' {
				ok = false
				break
			}
			d[k] = int(c - '0')
			k++
		}
		ms := 0
		for _, c := range s[20:23] {
			if c < '0' || c > '9' {
				ok = false
			}
			ms = ms*10 + int(c-'0')
		}
		if ok {
			year := d[0]*1000 + d[1]*100 + d[2]*10 + d[3]
			month, day := d[4]*10+d[5], d[6]*10+d[7]
			hh, mm := d[8]*10+d[9], d[10]*10+d[11]
			ss := d[12]*10 + int(s[18]-'0')
			if s[18] >= '0' && s[18] <= '9' && month >= 1 && month <= 12 && day >= 1 && day <= 31 && hh < 24 && mm < 60 && ss < 60 {
				return daysFromCivil(year, month, day)*86_400_000_000 + int64(hh*3600+mm*60+ss)*1_000_000 + int64(ms)*1000, nil
			}
		}
	}
	t, err := time.Parse(time.RFC3339Nano, string(s))
	if err != nil {
		return 0, err
	}
	return t.UnixMicro(), nil
}

// daysFromCivil is the days from 1970-01-01 to y-m-d (proleptic
// Gregorian; Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// decodeBidSlow decodes a line with escapes through encoding/json.
func decodeBidSlow(line []byte, b *floorBid) error {
	var v struct {
		Auction  int64  `json:"auction"`
		Bidder   int64  `json:"bidder"`
		Price    int64  `json:"price"`
		DateTime string `json:"date_time"`
	}
	if err := json.Unmarshal(line, &v); err != nil {
		return err
	}
	micros, err := parseTimestamp([]byte(v.DateTime))
	if err != nil {
		return err
	}
	*b = floorBid{auction: v.Auction, bidder: v.Bidder, price: v.Price, micros: micros, dateTime: []byte(v.DateTime)}
	return nil
}

// floorW1 writes the rows of W1: auction, bidder, price, date_time of the
// bids with price > 10000.
func floorW1(in io.Reader, out *bufio.Writer) (int64, error) {
	var line []byte
	return scanBids(in, func(b *floorBid) error {
		if b.price <= w1MinPrice {
			return nil
		}
		line = append(line[:0], `{"auction":`...)
		line = strconv.AppendInt(line, b.auction, 10)
		line = append(line, `,"bidder":`...)
		line = strconv.AppendInt(line, b.bidder, 10)
		line = append(line, `,"price":`...)
		line = strconv.AppendInt(line, b.price, 10)
		line = append(line, `,"date_time":"`...)
		line = append(line, b.dateTime...)
		line = append(line, "\"}\n"...)
		_, err := out.Write(line)
		return err
	})
}

// floorW2 writes the rows of W2: per auction and 10 s tumbling window,
// count(*) and max(price), each window once the watermark (the largest
// date_time less 1 s) has passed its end; the rest at the end of the
// input. Rows behind the watermark are dropped, as Sluice drops them.
func floorW2(in io.Reader, out *bufio.Writer) (int64, error) {
	open := map[int64]map[int64]*w2Agg{} // window start → auction → aggregate
	wm := int64(-1 << 62)
	var line []byte
	emit := func(start int64) error {
		ws := time.UnixMicro(start).UTC()
		for auction, a := range open[start] {
			line = append(line[:0], `{"auction":`...)
			line = strconv.AppendInt(line, auction, 10)
			line = append(line, `,"window_start":"`...)
			line = ws.AppendFormat(line, tsLayout)
			line = append(line, `","n":`...)
			line = strconv.AppendInt(line, a.n, 10)
			line = append(line, `,"max_price":`...)
			line = strconv.AppendInt(line, a.max, 10)
			line = append(line, "}\n"...)
			if _, err := out.Write(line); err != nil {
				return err
			}
		}
		delete(open, start)
		return nil
	}
	n, err := scanBids(in, func(b *floorBid) error {
		if b.micros < wm {
			return nil
		}
		start := floorDiv(b.micros, w2Window) * w2Window
		w := open[start]
		if w == nil {
			w = map[int64]*w2Agg{}
			open[start] = w
		}
		a := w[b.auction]
		if a == nil {
			a = &w2Agg{}
			w[b.auction] = a
		}
		a.n++
		a.max = max(a.max, b.price)
		if b.micros-w2Delay > wm {
			wm = b.micros - w2Delay
			for s := range open {
				if s+w2Window <= wm {
					if err := emit(s); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	for s := range open {
		if err := emit(s); err != nil {
			return n, err
		}
	}
	return n, nil
}

// scanBids decodes every line of in and calls f; it returns the bids read.
func scanBids(in io.Reader, f func(b *floorBid) error) (int64, error) {
	r := bufio.NewReaderSize(in, 1<<20)
	var b floorBid
	var n int64
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return n, fmt.Errorf("line %d is longer than 1 MiB", n+1)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if derr := decodeBid(line, &b); derr != nil {
				return n, fmt.Errorf("line %d: %w", n+1, derr)
			}
			n++
			if ferr := f(&b); ferr != nil {
				return n, ferr
			}
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// floorMain is the floor process (the bench starts itself with the
// argument "floor"): it runs one workload over the input, writes the
// result to the output file and prints its figures as one JSON line.
func floorMain(args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("usage: floor w1|w2 INPUT OUTPUT")
	}
	run := map[string]func(io.Reader, *bufio.Writer) (int64, error){"w1": floorW1, "w2": floorW2}[args[0]]
	if run == nil {
		return fmt.Errorf("floor: unknown workload %q", args[0])
	}
	cpu0 := selfCPU()
	start := time.Now()
	in, err := os.Open(args[1])
	if err != nil {
		return err
	}
	defer in.Close()
	f, err := os.Create(args[2])
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	n, err := run(in, w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		return err
	}
	m := measured{Events: n, Seconds: time.Since(start).Seconds(), CPUSeconds: selfCPU() - cpu0, PeakRSSKiB: hwmKiB("self")}
	return json.NewEncoder(os.Stdout).Encode(m)
}
