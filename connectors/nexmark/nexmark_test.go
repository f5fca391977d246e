// Tests of the nexmark generator and source: the 1:3:46 kind mix and which
// index is which kind; person/auction ids and the hot seller/auction/bidder
// /channel shares; the log-uniform price; string sizes and shapes; exact
// event times from the base time; determinism (two generators agree, Seek
// resumes identically); bounded streams end with exact per-kind counts;
// strided splits partition the index space; option and column validation;
// wall-clock throttling on a fake clock; Read stays short for a rare kind.
package nexmark

import (
	"context"
	"errors"
	"io"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

func newGen(t testing.TB, mod func(*Config)) *Generator {
	t.Helper()
	c := DefaultConfig()
	if mod != nil {
		mod(&c)
	}
	g, err := NewGenerator(c)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// fakeClock is a settable clock for throttling tests.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// openReader opens a reader with opts (gap 0 unless given) on clock c.
func openReader(t *testing.T, opts map[string]string, cols []types.Column, c *fakeClock) *reader {
	t.Helper()
	o := map[string]string{"connector": "nexmark", "nexmark.min.event.gap.in.ns": "0"}
	for k, v := range opts {
		o[k] = v
	}
	s, oc, err := parse(connector.SourceConfig{Name: "s", Columns: cols, Options: o})
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGenerator(s.gen)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now
	if c != nil {
		now = c.now
	}
	return newReader(g, s, oc, now)
}

// readAll reads until EOF, in reads of at most max rows.
func readAll(t *testing.T, r connector.Source, max int) []types.Row {
	t.Helper()
	var rows []types.Row
	for calls := 0; ; calls++ {
		if calls > 1e6 {
			t.Fatal("no EOF")
		}
		b := types.NewBatch(max)
		n, err := r.Read(context.Background(), b, max)
		if n != b.Len() || n > max {
			t.Fatalf("Read returned %d, added %d (max %d)", n, b.Len(), max)
		}
		rows = append(rows, b.Rows...)
		if errors.Is(err, io.EOF) {
			return rows
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func readN(t *testing.T, r connector.Source, n, max int) []types.Row {
	t.Helper()
	var rows []types.Row
	for calls := 0; len(rows) < n; calls++ {
		if calls > 1e5 {
			t.Fatalf("only %d of %d rows", len(rows), n)
		}
		b := types.NewBatch(max)
		if _, err := r.Read(context.Background(), b, min(max, n-len(rows))); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, b.Rows...)
	}
	return rows
}

func equalRows(a, b []types.Row) bool {
	return reflect.DeepEqual(a, b)
}

func TestKindMix(t *testing.T) {
	g := newGen(t, nil)
	var counts [3]int
	for i := int64(0); i < 50*200; i++ {
		k := g.Kind(i)
		counts[k]++
		want := KindBid
		switch r := i % 50; {
		case r == 0:
			want = KindPerson
		case r < 4:
			want = KindAuction
		}
		if k != want {
			t.Fatalf("index %d is %s, want %s", i, k, want)
		}
	}
	if counts != [3]int{200, 600, 9200} {
		t.Fatalf("counts %v, want 1:3:46 per 50", counts)
	}
	// nextOfKind agrees with Kind.
	for i := int64(0); i < 200; i++ {
		for k := KindPerson; k <= KindBid; k++ {
			j, ok := g.nextOfKind(i, k)
			if !ok {
				t.Fatal("in-order stream cannot jump")
			}
			w := i
			for g.Kind(w) != k {
				w++
			}
			if j != w {
				t.Fatalf("nextOfKind(%d, %s) = %d, want %d", i, k, j, w)
			}
		}
	}
}

func TestIDs(t *testing.T) {
	g := newGen(t, nil)
	var p Person
	var a Auction
	for e := int64(0); e < 1000; e++ {
		g.Person(50*e, &p)
		if p.ID != 1000+e {
			t.Fatalf("person at index %d has id %d, want %d", 50*e, p.ID, 1000+e)
		}
		for j := int64(0); j < 3; j++ {
			g.Auction(50*e+1+j, &a)
			if a.ID != 1000+3*e+j {
				t.Fatalf("auction at index %d has id %d, want %d", 50*e+1+j, a.ID, 1000+3*e+j)
			}
		}
	}

	// Hot shares: a bid's auction is the hot one (lastAuction/100·100) with
	// p 1/2, its bidder the hot one with p 3/4, an auction's seller with
	// p 3/4, a channel hot with p 1/2 (plus the odd chance that a cold pick
	// hits the hot id). Cold picks stay within their windows.
	const n = 200000
	var b Bid
	var hotAuction, hotBidder, hotSeller, hotChannel, bids, auctions int
	for i := int64(0); i < n; i++ {
		id := i
		switch g.Kind(i) {
		case KindBid:
			bids++
			g.Bid(i, &b)
			la, lp := g.lastAuctionID(id), g.lastPersonID(id)
			if b.Auction-1000 == la/100*100 {
				hotAuction++
			} else if lo := max(la-100, 0); b.Auction-1000 < lo || b.Auction-1000 > la+10 {
				t.Fatalf("bid %d: auction %d outside [%d, %d]", i, b.Auction, lo+1000, la+1010)
			}
			if b.Bidder-1000 == lp/100*100+1 {
				hotBidder++
			} else if np := lp + 1; b.Bidder-1000 < np-min(np, 1000) || b.Bidder-1000 >= np+10 {
				t.Fatalf("bid %d: bidder %d outside the active window", i, b.Bidder)
			}
			if slices.Contains(hotNames, b.Channel) {
				hotChannel++
			}
		case KindAuction:
			auctions++
			g.Auction(i, &a)
			if a.Seller-1000 == g.lastPersonID(id)/100*100 {
				hotSeller++
			}
			if a.Category < 10 || a.Category >= 15 {
				t.Fatalf("category %d", a.Category)
			}
		}
	}
	share := func(name string, got, of int, want float64) {
		if f := float64(got) / float64(of); math.Abs(f-want) > 0.015 {
			t.Errorf("%s share %.4f, want about %.3f", name, f, want)
		}
	}
	share("hot auction", hotAuction, bids, 0.5)
	share("hot bidder", hotBidder, bids, 0.75)
	share("hot seller", hotSeller, auctions, 0.75)
	share("hot channel", hotChannel, bids, 0.5)
}

func TestPrice(t *testing.T) {
	g := newGen(t, nil)
	var b Bid
	var a Auction
	var decades [6]int
	const n = 120000
	for i := int64(0); i < n; i++ {
		g.Bid(i, &b)
		if b.Price < 100 || b.Price > 100000000 {
			t.Fatalf("price %d outside [100, 1e8]", b.Price)
		}
		d := int(math.Log10(float64(b.Price) / 100))
		decades[min(d, 5)]++
	}
	for d, c := range decades { // log-uniform: each decade holds 1/6
		if f := float64(c) / n; math.Abs(f-1.0/6) > 0.01 {
			t.Errorf("decade %d holds %.4f of prices, want 1/6", d, f)
		}
	}
	for i := int64(1); i < 5000; i += 50 {
		g.Auction(i, &a)
		if a.Reserve <= a.InitialBid || a.InitialBid < 100 {
			t.Fatalf("auction %d: initial %d reserve %d", i, a.InitialBid, a.Reserve)
		}
	}
}

var (
	emailRE = regexp.MustCompile(`^[a-z]{7}@[a-z]{5}\.com$`)
	ccRE    = regexp.MustCompile(`^[0-9]{4} [0-9]{4} [0-9]{4} [0-9]{4}$`)
	lowerRE = regexp.MustCompile(`^[a-z]*$`)
	urlRE   = regexp.MustCompile(`^https://www\.nexmark\.com/[a-z_]{3,4}/[a-z_]{3,4}/[a-z_]{3,4}/item\.htm\?query=1(&channel_id=[0-9]+)?$`)
	chanRE  = regexp.MustCompile(`^channel-([0-9]{1,4})$`)
	idRE    = regexp.MustCompile(`&channel_id=([0-9]+)$`)
)

func TestStrings(t *testing.T) {
	g := newGen(t, nil)
	var p Person
	var a Auction
	var b Bid
	var names []string
	for _, f := range firstNames {
		for _, l := range lastNames {
			names = append(names, f+" "+l)
		}
	}
	for e := int64(0); e < 2000; e++ {
		g.Person(50*e, &p)
		if !slices.Contains(names, p.Name) || !slices.Contains(cities, p.City) || !slices.Contains(states, p.State) {
			t.Fatalf("person %+v: name/city/state not from the vocabularies", p)
		}
		if !emailRE.MatchString(p.EmailAddress) || !ccRE.MatchString(p.CreditCard) {
			t.Fatalf("email %q credit card %q", p.EmailAddress, p.CreditCard)
		}
		d := 200 - (8 + len(p.Name) + 17 + 19 + len(p.City) + len(p.State))
		delta := (d + 2) / 5
		if len(p.Extra) < d-delta || len(p.Extra) >= d+delta || !lowerRE.MatchString(p.Extra) {
			t.Fatalf("person extra of %d bytes, want [%d, %d)", len(p.Extra), d-delta, d+delta)
		}
		g.Auction(50*e+2, &a)
		if len(a.ItemName) != 20 || len(a.Description) != 100 || len(a.Extra) < 266 || len(a.Extra) > 397 ||
			!lowerRE.MatchString(a.ItemName+a.Description+a.Extra) {
			t.Fatalf("auction strings of %d/%d/%d bytes", len(a.ItemName), len(a.Description), len(a.Extra))
		}
		for j := int64(4); j < 50; j++ {
			g.Bid(50*e+j, &b)
			if len(b.Extra) < 54 || len(b.Extra) > 81 || !lowerRE.MatchString(b.Extra) {
				t.Fatalf("bid extra of %d bytes, want 54–81", len(b.Extra))
			}
			if !urlRE.MatchString(b.URL) {
				t.Fatalf("url %q", b.URL)
			}
			if m := chanRE.FindStringSubmatch(b.Channel); m != nil {
				k, _ := strconv.Atoi(m[1])
				if c := t0(g).channels[k]; c.url != b.URL {
					t.Fatalf("channel %s has url %q, want its fixed %q", b.Channel, b.URL, c.url)
				}
			} else if !slices.Contains(hotNames, b.Channel) {
				t.Fatalf("channel %q", b.Channel)
			}
		}
	}
	// 90% of the channels carry &channel_id=|reverse(k)|.
	withID := 0
	for k, c := range t0(g).channels {
		if m := idRE.FindStringSubmatch(c.url); m != nil {
			withID++
			want := math.Abs(float64(int32(reverse32(uint32(k)))))
			if m[1] != strconv.FormatFloat(want, 'f', -1, 64) {
				t.Fatalf("channel %d: id %s, want %v", k, m[1], want)
			}
		}
	}
	if withID < 8800 || withID > 9200 {
		t.Errorf("%d of 10000 channels have a channel_id, want about 9000", withID)
	}
}

func t0(g *Generator) *tables { return g.t }

func reverse32(x uint32) uint32 {
	var r uint32
	for i := 0; i < 32; i++ {
		r = r<<1 | x&1
		x >>= 1
	}
	return r
}

func TestTimestamps(t *testing.T) {
	const base = 1436918400000 * 1000 // µs
	g := newGen(t, nil)
	// 10,000 events/s: index n is at base + ⌊n/10⌋ ms.
	for _, c := range []struct{ i, ms int64 }{{0, 0}, {1, 0}, {9, 0}, {10, 1}, {49, 4}, {50, 5}, {12345, 1234}, {10_000_000, 1_000_000}} {
		if got := g.Timestamp(c.i); got != base+c.ms*1000 {
			t.Errorf("Timestamp(%d) = %d, want base + %d ms", c.i, got, c.ms)
		}
	}
	var p Person
	var a Auction
	var b Bid
	g.Person(0, &p)
	g.Auction(1, &a)
	g.Bid(4, &b)
	if p.DateTime != base || a.DateTime != base || b.DateTime != base {
		t.Errorf("first events at %d %d %d, want %d", p.DateTime, a.DateTime, b.DateTime, base)
	}
	g.Bid(123, &b)
	if b.DateTime != base+12000 {
		t.Errorf("bid 123 at %d, want base+12ms", b.DateTime)
	}
	// Expiry: 1 ms + rand(2·horizon) after the auction, horizon = the time
	// of 1666 events later (166 or 167 ms at 10,000 events/s).
	for i := int64(1); i < 100000; i += 50 {
		g.Auction(i, &a)
		ts := a.DateTime / 1000
		h := (i+1666)/10 - i/10
		if d := a.Expires/1000 - ts; d < 1 || d > 2*h {
			t.Fatalf("auction %d expires %d ms after, want [1, %d]", i, d, 2*h)
		}
	}
	// At 10M events/s the horizon floors to 0: expires = date_time + 1 ms.
	fast := newGen(t, func(c *Config) { c.EventRate = 10_000_000 })
	fast.Auction(20_000_001, &a)
	if a.DateTime != base+2_000_000 || a.Expires != a.DateTime+1000 {
		t.Errorf("fast auction at %d expires %d", a.DateTime, a.Expires)
	}
	// base.time and the rate are honoured with integer arithmetic far out.
	far := newGen(t, func(c *Config) { c.BaseTime = 0; c.EventRate = 3 })
	if got := far.Timestamp(1 << 40); got != (1<<40)*1000/3*1000 {
		t.Errorf("far timestamp %d", got)
	}
	huge := newGen(t, func(c *Config) { c.BaseTime = 0; c.EventRate = 1e9 })
	if got := huge.Timestamp(1 << 60); got != (1<<60)/1000000*1000 { // n·1000 overflows 64 bits
		t.Errorf("huge timestamp %d", got)
	}
}

func TestDeterminism(t *testing.T) {
	g1, g2 := newGen(t, nil), newGen(t, nil)
	var p1, p2 Person
	var a1, a2 Auction
	var b1, b2 Bid
	for _, i := range []int64{0, 1, 7, 50, 51, 999, 123456789} {
		g1.Person(i, &p1)
		g2.Person(i, &p2)
		g1.Auction(i, &a1)
		g2.Auction(i, &a2)
		g1.Bid(i, &b1)
		g2.Bid(i, &b2)
		if p1 != p2 || a1 != a2 || b1 != b2 {
			t.Fatalf("index %d differs between generators", i)
		}
	}
	g1.Bid(5, &b1)
	g1.Bid(6, &b2)
	if b1 == b2 {
		t.Fatal("consecutive bids are identical")
	}

	for _, tt := range []string{"person", "auction", "bid"} {
		for _, split := range []string{"", "1"} {
			opts := map[string]string{"nexmark.table.type": tt, "nexmark.split.num": "3"}
			if split != "" {
				opts["nexmark.split.index"] = split
			}
			full := readN(t, openReader(t, opts, nil, nil), 300, 37)
			for _, k := range []int{0, 1, 99, 150, 299} {
				r := openReader(t, opts, nil, nil)
				readN(t, r, k, 64)
				pos := r.Position()
				r2 := openReader(t, opts, nil, nil)
				if err := r2.Seek(pos); err != nil {
					t.Fatal(err)
				}
				if got := readN(t, r2, 300-k, 64); !equalRows(got, full[k:]) {
					t.Fatalf("%s split %q: rows after Seek to row %d differ", tt, split, k)
				}
			}
		}
	}
}

func TestBounded(t *testing.T) {
	for _, c := range []struct {
		tt   string
		want int
	}{{"person", 20}, {"auction", 60}, {"bid", 920}} {
		r := openReader(t, map[string]string{"nexmark.table.type": c.tt, "nexmark.event.num": "1000"}, nil, nil)
		if rows := readAll(t, r, 64); len(rows) != c.want {
			t.Errorf("%s: %d rows of 1000 events, want %d", c.tt, len(rows), c.want)
		}
		if n, err := r.Read(context.Background(), types.NewBatch(1), 1); n != 0 || !errors.Is(err, io.EOF) {
			t.Errorf("%s: Read after the end = %d, %v", c.tt, n, err)
		}
	}
}

// TestSplits: split i of n yields exactly the events at indexes ≡ i mod n,
// in order; the splits together are the whole stream.
func TestSplits(t *testing.T) {
	t.Run("defaults", func(t *testing.T) { testSplits(t, nil) })
	t.Run("offsets", func(t *testing.T) {
		testSplits(t, map[string]string{"nexmark.first.event.id": "3", "nexmark.first.event.number": "5",
			"nexmark.person.proportion": "2", "nexmark.auction.proportion": "5", "nexmark.bid.proportion": "9"})
	})
	t.Run("out of order", func(t *testing.T) {
		testSplits(t, map[string]string{"nexmark.out.of.order.group.size": "16"})
	})
}

func testSplits(t *testing.T, extra map[string]string) {
	o := map[string]string{"nexmark.table.type": "bid"}
	for k, v := range extra {
		o[k] = v
	}
	g := openReader(t, o, nil, nil).g
	const events, n = 2000, 7
	for _, tt := range []string{"person", "auction", "bid"} {
		kind := map[string]Kind{"person": KindPerson, "auction": KindAuction, "bid": KindBid}[tt]
		rowOf := func(i int64) types.Row {
			var p Person
			var a Auction
			var b Bid
			switch kind {
			case KindPerson:
				g.Person(i, &p)
				return p.Row()
			case KindAuction:
				g.Auction(i, &a)
				return a.Row()
			}
			g.Bid(i, &b)
			return b.Row()
		}
		var all []types.Row
		for i := int64(0); i < events; i++ {
			if g.Kind(i) == kind {
				all = append(all, rowOf(i))
			}
		}
		opts := map[string]string{"nexmark.table.type": tt, "nexmark.event.num": strconv.Itoa(events), "nexmark.split.num": strconv.Itoa(n)}
		for k, v := range extra {
			opts[k] = v
		}
		if got := readAll(t, openReader(t, opts, nil, nil), 100); !equalRows(got, all) {
			t.Fatalf("%s: reading all splits is not the whole stream", tt)
		}
		total := 0
		for s := int64(0); s < n; s++ {
			var want []types.Row
			for i := s; i < events; i += n {
				if g.Kind(i) == kind {
					want = append(want, rowOf(i))
				}
			}
			opts["nexmark.split.index"] = strconv.FormatInt(s, 10)
			if got := readAll(t, openReader(t, opts, nil, nil), 100); !equalRows(got, want) {
				t.Fatalf("%s split %d: got %d rows, want the %d at indexes ≡ %d mod %d", tt, s, len(got), len(want), s, n)
			}
			total += len(want)
		}
		delete(opts, "nexmark.split.index")
		if total != len(all) {
			t.Fatalf("%s: splits hold %d rows, the stream %d", tt, total, len(all))
		}
	}
}

func TestValidate(t *testing.T) {
	f := Factory{}
	cols, err := f.Validate(connector.SourceConfig{Options: map[string]string{"connector": "nexmark", "nexmark.table.type": "Bid"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []types.Column{{Name: "auction", Type: types.TInt8}, {Name: "bidder", Type: types.TInt8}, {Name: "price", Type: types.TInt8},
		{Name: "channel", Type: types.TVarchar}, {Name: "url", Type: types.TVarchar}, {Name: "date_time", Type: types.TTimestamp},
		{Name: "extra", Type: types.TVarchar}}
	if !slices.Equal(cols, want) {
		t.Fatalf("bid columns %v", cols)
	}
	for _, k := range []Kind{KindPerson, KindAuction} {
		cols, err := f.Validate(connector.SourceConfig{Options: map[string]string{"nexmark.table.type": k.String()}})
		if err != nil || len(cols) != map[Kind]int{KindPerson: 8, KindAuction: 10}[k] {
			t.Fatalf("%s: %v %v", k, cols, err)
		}
	}
	sub := []types.Column{{Name: "date_time", Type: types.TTimestamp}, {Name: "auction", Type: types.TInt4}, {Name: "extra", Type: types.TText}}
	if cols, err := f.Validate(connector.SourceConfig{Columns: sub, Options: map[string]string{"nexmark.table.type": "bid"}}); err != nil || !slices.Equal(cols, sub) {
		t.Fatalf("subset: %v %v", cols, err)
	}
	bad := []struct {
		opts map[string]string
		cols []types.Column
		code pgcode.Code
	}{
		{map[string]string{}, nil, pgcode.InvalidParameterValue},
		{map[string]string{"nexmark.table.type": "bids"}, nil, pgcode.InvalidParameterValue},
		{map[string]string{"nexmark.table.type": "bid", "nexmark.no.such": "1"}, nil, pgcode.InvalidParameterValue},
		{map[string]string{"nexmark.table.type": "bid", "other": "1"}, nil, pgcode.InvalidParameterValue},
		{map[string]string{"nexmark.table.type": "bid", "nexmark.event.num": "x"}, nil, pgcode.InvalidParameterValue},
		{map[string]string{"nexmark.table.type": "bid", "nexmark.split.num": "0"}, nil, pgcode.InvalidParameterValue},
		{map[string]string{"nexmark.table.type": "bid", "nexmark.split.num": "2", "nexmark.split.index": "2"}, nil, pgcode.InvalidParameterValue},
		{map[string]string{"nexmark.table.type": "bid", "nexmark.min.event.gap.in.ns": "-1"}, nil, pgcode.InvalidParameterValue},
		{map[string]string{"nexmark.table.type": "bid", "nexmark.hot.auction.ratio": "0"}, nil, pgcode.InvalidParameterValue},
		{map[string]string{"nexmark.table.type": "bid", "nexmark.rate.shape": "sine"}, nil, pgcode.InvalidParameterValue},
		{map[string]string{"nexmark.table.type": "bid", "nexmark.use.real.time": "true"}, nil, pgcode.InvalidParameterValue},
		{map[string]string{"nexmark.table.type": "bid", "nexmark.first.event.rate": "5", "nexmark.events.per.sec": "6"}, nil, pgcode.InvalidParameterValue},
		{map[string]string{"nexmark.table.type": "bid", "format": "upsert"}, nil, pgcode.InvalidParameterValue},
		{map[string]string{"nexmark.table.type": "bid"}, []types.Column{{Name: "id", Type: types.TInt8}}, pgcode.UndefinedColumn},
		{map[string]string{"nexmark.table.type": "bid"}, []types.Column{{Name: "price", Type: types.TText}}, pgcode.DatatypeMismatch},
		{map[string]string{"nexmark.table.type": "bid"}, []types.Column{{Name: "url", Type: types.T{Fam: types.Varchar, Prec: 10}}}, pgcode.DatatypeMismatch},
		{map[string]string{"nexmark.table.type": "bid"}, []types.Column{{Name: "price", Type: types.TInt8}, {Name: "price", Type: types.TInt8}}, pgcode.DuplicateColumn},
	}
	for _, c := range bad {
		_, err := f.Validate(connector.SourceConfig{Columns: c.cols, Options: c.opts})
		var pe *pgerror.Error
		if !errors.As(err, &pe) || pe.Code != c.code {
			t.Errorf("%v %v: got %v, want %s", c.opts, c.cols, err, c.code)
		}
	}
	for _, ok := range []map[string]string{
		{"nexmark.table.type": "bid", "nexmark.event.num": "0", "nexmark.use.real.time": "false", "format": "plain", "encode": "json"},
		{"nexmark.table.type": "person", "nexmark.events.per.sec": "1000000", "nexmark.first.event.rate": "1000000", "nexmark.out.of.order.group.size": "10"},
	} {
		if _, err := f.Validate(connector.SourceConfig{Options: ok}); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	if _, err := connector.LookupSource("nexmark"); err != nil {
		t.Fatal(err)
	}
}

// TestProjection: declared columns come out in declared order, INTEGER
// columns are range-checked.
func TestProjection(t *testing.T) {
	cols := []types.Column{{Name: "price", Type: types.TInt4}, {Name: "auction", Type: types.TInt8}, {Name: "date_time", Type: types.TTimestamp}}
	r := openReader(t, map[string]string{"nexmark.table.type": "bid"}, cols, nil)
	rows := readN(t, r, 10, 10)
	g := newGen(t, nil)
	var b Bid
	g.Bid(4, &b)
	if !reflect.DeepEqual(rows[0], types.Row{types.NewInt(b.Price), types.NewInt(b.Auction), types.NewTimestamp(b.DateTime)}) {
		t.Fatalf("projected row %v", rows[0])
	}
	r = openReader(t, map[string]string{"nexmark.table.type": "bid", "nexmark.first.auction.id": "3000000000"},
		[]types.Column{{Name: "auction", Type: types.TInt4}}, nil)
	_, err := r.Read(context.Background(), types.NewBatch(10), 10)
	var pe *pgerror.Error
	if !errors.As(err, &pe) || pe.Code != pgcode.NumericValueOutOfRange {
		t.Fatalf("int4 overflow: %v", err)
	}
}

func TestThrottle(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	ctx := context.Background()
	// 100 µs per event per split, 2 splits read by one reader: 20 events/ms.
	r := openReader(t, map[string]string{"nexmark.table.type": "bid", "nexmark.min.event.gap.in.ns": "100000", "nexmark.split.num": "2"}, nil, c)
	read := func() int {
		n, err := r.Read(ctx, types.NewBatch(1024), 1024)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := read(); n != 0 || r.next != 4 { // index 0 is a person: skipped to the first bid
		t.Fatalf("at start: %d rows, next %d", n, r.next)
	}
	c.t = c.t.Add(time.Millisecond)
	if n := read(); r.next != 21 || n != 17 { // indexes 1..20: 3 auctions, 17 bids
		t.Fatalf("after 1ms: %d rows, next %d", n, r.next)
	}
	if n := read(); n != 0 {
		t.Fatalf("no time passed but %d rows", n)
	}
	c.t = c.t.Add(time.Hour)
	if n := read(); n != 1024 {
		t.Fatalf("after an hour: %d rows, want a full chunk", n)
	}
	// Seek restarts the clock from the position.
	if err := r.Seek(r.Position()); err != nil {
		t.Fatal(err)
	}
	if n := read(); n > 1 {
		t.Fatalf("after Seek: %d rows", n)
	}
	// Unthrottled: full reads; max.chunk.size caps a Read.
	r = openReader(t, map[string]string{"nexmark.table.type": "bid", "nexmark.max.chunk.size": "100"}, nil, c)
	if n := read(); n != 100 {
		t.Fatalf("chunk: %d rows", n)
	}
}

// TestRareKind: a split without persons never blocks a Read; a bounded one
// still ends.
func TestRareKind(t *testing.T) {
	opts := map[string]string{"nexmark.table.type": "person", "nexmark.split.num": "50", "nexmark.split.index": "7"}
	r := openReader(t, opts, nil, nil)
	start := time.Now()
	for i := 0; i < 10; i++ {
		if n, err := r.Read(context.Background(), types.NewBatch(16), 16); n != 0 || err != nil {
			t.Fatalf("Read = %d, %v", n, err)
		}
	}
	if d := time.Since(start); d > 500*time.Millisecond { // generous under -race
		t.Errorf("10 empty Reads took %v", d)
	}
	opts["nexmark.event.num"] = "10000000"
	if rows := readAll(t, openReader(t, opts, nil, nil), 16); len(rows) != 0 {
		t.Fatalf("%d persons in split 7 of 50", len(rows))
	}
	// Out-of-order groups shuffle indexes but keep the counts.
	r = openReader(t, map[string]string{"nexmark.table.type": "person", "nexmark.event.num": "1000", "nexmark.out.of.order.group.size": "100"}, nil, nil)
	if rows := readAll(t, r, 7); len(rows) != 20 {
		t.Fatalf("%d persons with out-of-order groups", len(rows))
	}
}

func TestAllocs(t *testing.T) {
	g := newGen(t, nil)
	var p Person
	var a Auction
	var b Bid
	i := int64(0)
	if n := testing.AllocsPerRun(1000, func() { g.Bid(i, &b); i++ }); n != 0 {
		t.Errorf("Bid allocates %v times", n)
	}
	if n := testing.AllocsPerRun(1000, func() { g.Auction(i, &a); i++ }); n != 0 {
		t.Errorf("Auction allocates %v times", n)
	}
	if n := testing.AllocsPerRun(1000, func() { g.Person(i, &p); i++ }); n != 1 {
		t.Errorf("Person allocates %v times, want 1", n)
	}
}
