package nexmark

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"sync"

	"sluice/sql/types"
)

// Kind is the kind of a Nexmark event (RisingWave's event_type).
type Kind uint8

// The three event kinds, numbered as RisingWave's event_type column.
const (
	KindPerson Kind = iota
	KindAuction
	KindBid
)

func (k Kind) String() string {
	switch k {
	case KindPerson:
		return "person"
	case KindAuction:
		return "auction"
	case KindBid:
		return "bid"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// DefaultBaseTime is the event time of event number 0 unless
// nexmark.base.time says otherwise: 2015-07-15 00:00:00 UTC in ms, as
// RisingWave fixes it, so that day/hour-based queries are reproducible.
const DefaultBaseTime = 1436918400000

// Config holds the generator settings. Every field is a nexmark.* option
// (named in the comment); DefaultConfig gives the README's defaults.
type Config struct {
	BaseTime            int64 // base.time: ms since the epoch of event number 0
	EventRate           int64 // first.event.rate (alias events.per.sec): event-time events per second
	FirstEventID        int64 // first.event.id
	FirstEventNumber    int64 // first.event.number
	OutOfOrderGroupSize int64 // out.of.order.group.size (1 = in order)
	PersonProportion    int64 // person.proportion
	AuctionProportion   int64 // auction.proportion
	BidProportion       int64 // bid.proportion
	ActivePeople        int64 // active.people
	InFlightAuctions    int64 // in.flight.auctions
	HotSellerRatio      int64 // hot.seller.ratio
	HotAuctionRatio     int64 // hot.auction.ratio
	HotBidderRatio      int64 // hot.bidder.ratio
	HotChannelRatio     int64 // hot.channel.ratio
	HotSellerRatio2     int64 // hot.seller.ratio.2 (HOT_SELLER_RATIO of the batch generator)
	HotAuctionRatio2    int64 // hot.auction.ratio.2
	HotBidderRatio2     int64 // hot.bidder.ratio.2
	AvgPersonByteSize   int64 // avg.person.byte.size
	AvgAuctionByteSize  int64 // avg.auction.byte.size
	AvgBidByteSize      int64 // avg.bid.byte.size
	NumCategories       int64 // num.categories
	FirstCategoryID     int64 // first.category.id
	FirstPersonID       int64 // first.person.id
	FirstAuctionID      int64 // first.auction.id
	PersonIDLead        int64 // person.id.lead
	AuctionIDLead       int64 // auction.id.lead
}

// DefaultConfig returns the defaults shared by the Java and Rust generators
// (README §2), with the base time fixed at DefaultBaseTime.
func DefaultConfig() Config {
	return Config{
		BaseTime: DefaultBaseTime, EventRate: 10000, OutOfOrderGroupSize: 1,
		PersonProportion: 1, AuctionProportion: 3, BidProportion: 46,
		ActivePeople: 1000, InFlightAuctions: 100,
		HotSellerRatio: 4, HotAuctionRatio: 2, HotBidderRatio: 4, HotChannelRatio: 2,
		HotSellerRatio2: 100, HotAuctionRatio2: 100, HotBidderRatio2: 100,
		AvgPersonByteSize: 200, AvgAuctionByteSize: 500, AvgBidByteSize: 100,
		NumCategories: 5, FirstCategoryID: 10, FirstPersonID: 1000, FirstAuctionID: 1000,
		PersonIDLead: 10, AuctionIDLead: 10,
	}
}

// maxExtra bounds the avg.*.byte.size settings: extra strings are slices of
// a 1 MiB pool, and the longest extra is 1.2 × the average.
const maxExtra = 1 << 19

func (c *Config) check() error {
	pos := []struct {
		name string
		v    int64
	}{{"EventRate", c.EventRate}, {"OutOfOrderGroupSize", c.OutOfOrderGroupSize},
		{"PersonProportion", c.PersonProportion}, {"AuctionProportion", c.AuctionProportion},
		{"ActivePeople", c.ActivePeople}, {"HotSellerRatio", c.HotSellerRatio},
		{"HotAuctionRatio", c.HotAuctionRatio}, {"HotBidderRatio", c.HotBidderRatio},
		{"HotChannelRatio", c.HotChannelRatio}, {"HotSellerRatio2", c.HotSellerRatio2},
		{"HotAuctionRatio2", c.HotAuctionRatio2}, {"HotBidderRatio2", c.HotBidderRatio2},
		{"NumCategories", c.NumCategories}}
	for _, p := range pos {
		if p.v < 1 {
			return fmt.Errorf("nexmark: %s must be at least 1, got %d", p.name, p.v)
		}
	}
	nonneg := []struct {
		name string
		v    int64
	}{{"BaseTime", c.BaseTime}, {"FirstEventID", c.FirstEventID}, {"FirstEventNumber", c.FirstEventNumber},
		{"BidProportion", c.BidProportion}, {"InFlightAuctions", c.InFlightAuctions},
		{"FirstCategoryID", c.FirstCategoryID}, {"FirstPersonID", c.FirstPersonID},
		{"FirstAuctionID", c.FirstAuctionID}, {"PersonIDLead", c.PersonIDLead}, {"AuctionIDLead", c.AuctionIDLead},
		{"AvgPersonByteSize", c.AvgPersonByteSize}, {"AvgAuctionByteSize", c.AvgAuctionByteSize},
		{"AvgBidByteSize", c.AvgBidByteSize}}
	for _, p := range nonneg {
		if p.v < 0 {
			return fmt.Errorf("nexmark: %s must not be negative, got %d", p.name, p.v)
		}
	}
	if c.AvgPersonByteSize > maxExtra || c.AvgAuctionByteSize > maxExtra || c.AvgBidByteSize > maxExtra {
		return fmt.Errorf("nexmark: average event sizes are limited to %d bytes", maxExtra)
	}
	if c.PersonProportion+c.AuctionProportion+c.BidProportion > 1<<20 {
		return errors.New("nexmark: the proportions add up to more than 2^20")
	}
	return nil
}

// Person is a person event; DateTime is in microseconds since the epoch.
type Person struct {
	ID           int64
	Name         string
	EmailAddress string
	CreditCard   string
	City         string
	State        string
	DateTime     int64
	Extra        string
}

// Auction is an auction event; DateTime and Expires are in microseconds.
type Auction struct {
	ID          int64
	ItemName    string
	Description string
	InitialBid  int64
	Reserve     int64
	DateTime    int64
	Expires     int64
	Seller      int64
	Category    int64
	Extra       string
}

// Bid is a bid event; DateTime is in microseconds.
type Bid struct {
	Auction  int64
	Bidder   int64
	Price    int64
	Channel  string
	URL      string
	DateTime int64
	Extra    string
}

// Columns returns the schema of the table of kind k (RisingWave's DDL).
func Columns(k Kind) []types.Column {
	var src []column
	switch k {
	case KindPerson:
		src = personCols
	case KindAuction:
		src = auctionCols
	default:
		src = bidCols
	}
	out := make([]types.Column, len(src))
	for i, c := range src {
		out[i] = types.Column{Name: c.name, Type: c.t}
	}
	return out
}

type column struct {
	name string
	t    types.T
}

var (
	personCols = []column{{"id", types.TInt8}, {"name", types.TVarchar}, {"email_address", types.TVarchar},
		{"credit_card", types.TVarchar}, {"city", types.TVarchar}, {"state", types.TVarchar},
		{"date_time", types.TTimestamp}, {"extra", types.TVarchar}}
	auctionCols = []column{{"id", types.TInt8}, {"item_name", types.TVarchar}, {"description", types.TVarchar},
		{"initial_bid", types.TInt8}, {"reserve", types.TInt8}, {"date_time", types.TTimestamp},
		{"expires", types.TTimestamp}, {"seller", types.TInt8}, {"category", types.TInt8}, {"extra", types.TVarchar}}
	bidCols = []column{{"auction", types.TInt8}, {"bidder", types.TInt8}, {"price", types.TInt8},
		{"channel", types.TVarchar}, {"url", types.TVarchar}, {"date_time", types.TTimestamp}, {"extra", types.TVarchar}}
)

// Row returns p as a row of the person table.
func (p *Person) Row() types.Row {
	return types.Row{types.NewInt(p.ID), types.NewString(p.Name), types.NewString(p.EmailAddress),
		types.NewString(p.CreditCard), types.NewString(p.City), types.NewString(p.State),
		types.NewTimestamp(p.DateTime), types.NewString(p.Extra)}
}

// Row returns a as a row of the auction table.
func (a *Auction) Row() types.Row {
	return types.Row{types.NewInt(a.ID), types.NewString(a.ItemName), types.NewString(a.Description),
		types.NewInt(a.InitialBid), types.NewInt(a.Reserve), types.NewTimestamp(a.DateTime),
		types.NewTimestamp(a.Expires), types.NewInt(a.Seller), types.NewInt(a.Category), types.NewString(a.Extra)}
}

// Row returns b as a row of the bid table.
func (b *Bid) Row() types.Row {
	return types.Row{types.NewInt(b.Auction), types.NewInt(b.Bidder), types.NewInt(b.Price),
		types.NewString(b.Channel), types.NewString(b.URL), types.NewTimestamp(b.DateTime), types.NewString(b.Extra)}
}

// Generator maps a stream index to its event: a pure function of the index
// and the Config. It holds no mutable state and is safe for concurrent use.
// Index i is the i-th event of the whole stream (all kinds); its event
// number is FirstEventNumber+i (shuffled within out-of-order groups) and
// its event id FirstEventID plus that number.
type Generator struct {
	cfg   Config
	denom int64 // person+auction+bid proportions
	// auctionEnd is the first residue (event id mod denom) of a bid.
	auctionEnd int64
	// horizonEvents is how many events ahead an auction's horizon looks
	// (in-flight auctions' worth of events).
	horizonEvents int64
	t             *tables
}

// NewGenerator returns a generator for cfg.
func NewGenerator(cfg Config) (*Generator, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	g := &Generator{cfg: cfg, t: loadTables()}
	g.denom = cfg.PersonProportion + cfg.AuctionProportion + cfg.BidProportion
	g.auctionEnd = cfg.PersonProportion + cfg.AuctionProportion
	g.horizonEvents = cfg.InFlightAuctions * g.denom / cfg.AuctionProportion
	return g, nil
}

// Config returns the generator's settings.
func (g *Generator) Config() Config { return g.cfg }

// number returns the event number of stream index i.
func (g *Generator) number(i int64) int64 {
	n := g.cfg.FirstEventNumber + i
	if gs := g.cfg.OutOfOrderGroupSize; gs > 1 {
		n = n/gs*gs + (n%gs)*953%gs
	}
	return n
}

// Kind returns the kind of the event at stream index i without building it.
func (g *Generator) Kind(i int64) Kind {
	return g.kindAt(g.pos(g.cfg.FirstEventID + g.number(i)))
}

func (g *Generator) kindAt(p pos) Kind {
	switch r := p.o; {
	case r < g.cfg.PersonProportion:
		return KindPerson
	case r < g.auctionEnd:
		return KindAuction
	}
	return KindBid
}

// nextOfKind returns the first stream index ≥ i whose event is of kind k,
// when event ids advance one per index (in-order stream); ok is false when
// ids are shuffled and the caller must test index by index.
func (g *Generator) nextOfKind(i int64, k Kind) (next int64, ok bool) {
	if g.cfg.OutOfOrderGroupSize > 1 {
		return 0, false
	}
	lo, hi := int64(0), g.cfg.PersonProportion
	switch k {
	case KindAuction:
		lo, hi = g.cfg.PersonProportion, g.auctionEnd
	case KindBid:
		lo, hi = g.auctionEnd, g.denom
	}
	if lo == hi {
		return math.MaxInt64, true // no event of this kind ever
	}
	r := (g.cfg.FirstEventID + g.cfg.FirstEventNumber + i) % g.denom
	if r >= lo && r < hi {
		return i, true
	}
	return i + (lo-r+g.denom)%g.denom, true
}

// timeMs is the event time in ms of event number n: integer arithmetic,
// floored to the ms as the Java generator does.
func (g *Generator) timeMs(n int64) int64 {
	rate := uint64(g.cfg.EventRate)
	hi, lo := bits.Mul64(uint64(n), 1000)
	var q uint64
	switch {
	case hi == 0:
		q = lo / rate
	case hi < rate:
		q, _ = bits.Div64(hi, lo, rate)
	default:
		return maxMs
	}
	if q > uint64(maxMs-g.cfg.BaseTime) {
		return maxMs // saturate: event times beyond the timestamp range
	}
	return g.cfg.BaseTime + int64(q)
}

// maxMs is the largest event time whose microseconds fit an int64.
const maxMs = math.MaxInt64 / 1000

// Timestamp returns the event time of stream index i in microseconds.
func (g *Generator) Timestamp(i int64) int64 { return g.timeMs(g.number(i)) * 1000 }

// pos is where an event id falls in the proportions: epoch id/denom and
// offset id%denom (computed once per event: divisions dominate the cost).
type pos struct{ id, e, o int64 }

func (g *Generator) pos(id int64) pos { return pos{id, id / g.denom, id % g.denom} }

func (g *Generator) lastPersonID(id int64) int64 { return g.lastPerson(g.pos(id)) }

func (g *Generator) lastAuctionID(id int64) int64 { return g.lastAuction(g.pos(id)) }

func (g *Generator) lastPerson(p pos) int64 {
	return p.e*g.cfg.PersonProportion + min(p.o, g.cfg.PersonProportion-1)
}

func (g *Generator) lastAuction(p pos) int64 {
	e, o := p.e, p.o
	switch {
	case o < g.cfg.PersonProportion:
		e--
		o = g.cfg.AuctionProportion - 1
	case o >= g.auctionEnd:
		o = g.cfg.AuctionProportion - 1
	default:
		o -= g.cfg.PersonProportion
	}
	return e*g.cfg.AuctionProportion + o
}

// nextPersonID may point up to PersonIDLead persons into the future.
func (g *Generator) nextPersonID(lastPerson int64, r *rng) int64 {
	np := lastPerson + 1
	a := min(np, g.cfg.ActivePeople)
	return np - a + r.intn(a+g.cfg.PersonIDLead)
}

func (g *Generator) nextAuctionID(lastAuction int64, r *rng) int64 {
	mx := lastAuction
	mn := max(mx-g.cfg.InFlightAuctions, 0)
	return mn + r.intn(mx-mn+1+g.cfg.AuctionIDLead)
}

// extra returns the padding string that brings an event of size cur to avg
// on average: d = avg-cur, length d - round(d/5) + rand(2·round(d/5)).
func (g *Generator) extra(r *rng, cur, avg int64) string {
	if cur > avg {
		return ""
	}
	d := avg - cur
	delta := (d + 2) / 5
	n := d - delta
	if delta > 0 {
		n += r.intn(2 * delta)
	}
	return g.t.letters(r, n)
}

// Person fills p with the event at stream index i (whatever its kind: use
// Kind to find person indexes). It allocates one string (email address and
// credit card share it).
func (g *Generator) Person(i int64, p *Person) {
	n := g.number(i)
	g.person(n, g.pos(g.cfg.FirstEventID+n), p)
}

func (g *Generator) person(n int64, ps pos, p *Person) {
	r := newRng(ps.id)
	t := g.t
	p.ID = g.lastPerson(ps) + g.cfg.FirstPersonID
	p.Name = t.names[r.intn(int64(len(t.names)))]
	// email = 7 letters @ 5 letters .com (17 bytes); credit card = four
	// %04d groups (19 bytes): one allocation for both.
	var buf [17 + 19]byte
	x := r.next()
	for j := 0; j < 12; j++ {
		c := byte('a' + x%26)
		x /= 26
		if j < 7 {
			buf[j] = c
		} else {
			buf[j+1] = c
		}
	}
	buf[7] = '@'
	copy(buf[13:17], ".com")
	x = r.next()
	for grp := 0; grp < 4; grp++ {
		v := x % 10000
		x /= 10000
		o := 17 + grp*5
		buf[o], buf[o+1], buf[o+2], buf[o+3] = byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10)
		if grp < 3 {
			buf[o+4] = ' '
		}
	}
	s := string(buf[:])
	p.EmailAddress, p.CreditCard = s[:17], s[17:]
	p.City = cities[r.intn(int64(len(cities)))]
	p.State = states[r.intn(int64(len(states)))]
	p.DateTime = g.timeMs(n) * 1000
	cur := int64(8 + len(p.Name) + len(p.EmailAddress) + len(p.CreditCard) + len(p.City) + len(p.State))
	p.Extra = g.extra(&r, cur, g.cfg.AvgPersonByteSize)
}

// Auction fills a with the event at stream index i. It allocates nothing.
func (g *Generator) Auction(i int64, a *Auction) {
	n := g.number(i)
	g.auction(n, g.pos(g.cfg.FirstEventID+n), a)
}

func (g *Generator) auction(n int64, ps pos, a *Auction) {
	r := newRng(ps.id)
	t := g.t
	ts := g.timeMs(n)
	a.ID = g.lastAuction(ps) + g.cfg.FirstAuctionID
	a.ItemName = t.letters(&r, 20)
	a.Description = t.letters(&r, 100)
	a.InitialBid = t.price(&r)
	a.Reserve = a.InitialBid + t.price(&r)
	a.DateTime = ts * 1000
	horizon := g.timeMs(n+g.horizonEvents) - ts
	a.Expires = (ts + 1 + r.intn(max(2*horizon, 1))) * 1000
	lp := g.lastPerson(ps)
	if r.intn(g.cfg.HotSellerRatio) > 0 {
		a.Seller = lp / g.cfg.HotSellerRatio2 * g.cfg.HotSellerRatio2
	} else {
		a.Seller = g.nextPersonID(lp, &r)
	}
	a.Seller += g.cfg.FirstPersonID
	a.Category = g.cfg.FirstCategoryID + r.intn(g.cfg.NumCategories)
	cur := int64(8 + len(a.ItemName) + len(a.Description) + 40)
	a.Extra = g.extra(&r, cur, g.cfg.AvgAuctionByteSize)
}

// Bid fills b with the event at stream index i. It allocates nothing.
func (g *Generator) Bid(i int64, b *Bid) {
	n := g.number(i)
	g.bid(n, g.pos(g.cfg.FirstEventID+n), b)
}

func (g *Generator) bid(n int64, ps pos, b *Bid) {
	r := newRng(ps.id)
	t := g.t
	if r.intn(g.cfg.HotAuctionRatio) > 0 {
		b.Auction = g.lastAuction(ps) / g.cfg.HotAuctionRatio2 * g.cfg.HotAuctionRatio2
	} else {
		b.Auction = g.nextAuctionID(g.lastAuction(ps), &r)
	}
	b.Auction += g.cfg.FirstAuctionID
	lp := g.lastPerson(ps)
	if r.intn(g.cfg.HotBidderRatio) > 0 {
		b.Bidder = lp/g.cfg.HotBidderRatio2*g.cfg.HotBidderRatio2 + 1
	} else {
		b.Bidder = g.nextPersonID(lp, &r)
	}
	b.Bidder += g.cfg.FirstPersonID
	b.Price = t.price(&r)
	var c *channel
	if r.intn(g.cfg.HotChannelRatio) > 0 {
		c = &t.hot[r.intn(int64(len(t.hot)))]
	} else {
		c = &t.channels[r.intn(int64(len(t.channels)))]
	}
	b.Channel, b.URL = c.name, c.url
	b.DateTime = g.timeMs(n) * 1000
	b.Extra = g.extra(&r, 32, g.cfg.AvgBidByteSize)
}

// rng is a SplitMix64 stream seeded per event from its id, so any event
// can be regenerated alone.
type rng struct{ s uint64 }

func newRng(id int64) rng { return rng{s: mix(uint64(id) ^ 0x6e65786d61726b00)} }

func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix(r.s)
}

// intn returns a uniform value in [0, n) for n ≥ 1 (multiply-shift; the
// bias is below n/2^64).
func (r *rng) intn(n int64) int64 {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int64(hi)
}

// The fixed vocabularies, lower-case as nexmark-rs (RisingWave's q3 filters
// on 'or', 'id', 'ca').
var (
	firstNames = []string{"peter", "paul", "luke", "john", "saul", "vicky", "kate", "julie", "sarah", "deiter", "walter"}
	lastNames  = []string{"shultz", "abrams", "spencer", "white", "bartels", "walton", "smith", "jones", "noris"}
	cities     = []string{"phoenix", "los angeles", "san francisco", "boise", "portland", "bend", "redmond", "seattle", "kent", "cheyenne"}
	states     = []string{"az", "ca", "id", "or", "wa", "wy"}
	hotNames   = []string{"Google", "Facebook", "Baidu", "Apple"}
)

const (
	poolSize    = 1 << 20
	numChannels = 10000
	priceBits   = 12 // the price draw has 2·priceBits = 24 bits, as an f32 draw
)

type channel struct{ name, url string }

// tables are built once, deterministically, the first time a generator is
// made; events share their strings (no per-event allocation).
type tables struct {
	pool     string // poolSize random lower-case letters
	names    []string
	channels [numChannels]channel
	hot      [4]channel
	// price(u) = round(100·10^(6u)) for a 24-bit u = hi<<12|lo is
	// round(priceHi[hi]·priceLo[lo]).
	priceHi, priceLo [1 << priceBits]float64
}

var (
	tablesOnce sync.Once
	theTables  *tables
)

func loadTables() *tables {
	tablesOnce.Do(func() { theTables = buildTables() })
	return theTables
}

func buildTables() *tables {
	t := &tables{}
	r := rng{s: 0x706f6f6c} // fixed seed: the pool is the same in every process
	b := make([]byte, poolSize)
	for i := 0; i < poolSize; {
		x := r.next()
		for j := 0; j < 12 && i < poolSize; j++ {
			b[i] = byte('a' + x%26)
			x /= 26
			i++
		}
	}
	t.pool = string(b)
	for _, f := range firstNames {
		for _, l := range lastNames {
			t.names = append(t.names, f+" "+l)
		}
	}
	for k := range t.channels {
		cr := newRng(int64(k))
		url := baseURL(&cr)
		if cr.intn(10) > 0 {
			rev := int64(int32(bits.Reverse32(uint32(k))))
			if rev < 0 {
				rev = -rev
			}
			url += "&channel_id=" + strconv.FormatInt(rev, 10)
		}
		t.channels[k] = channel{name: "channel-" + strconv.Itoa(k), url: url}
	}
	for k, name := range hotNames {
		cr := newRng(-1 - int64(k))
		t.hot[k] = channel{name: name, url: baseURL(&cr)}
	}
	for i := range t.priceHi {
		t.priceHi[i] = 100 * math.Pow(10, 6*float64(i)/(1<<priceBits))
		t.priceLo[i] = math.Pow(10, 6*float64(i)/(1<<(2*priceBits)))
	}
	return t
}

// baseURL is https://www.nexmark.com/<d>/<d>/<d>/item.htm?query=1 with
// each directory 3–4 characters, '_' with p 1/13 else a–z (Java's str(5)
// with '_' as the special character).
func baseURL(r *rng) string {
	b := []byte("https://www.nexmark.com/")
	for d := 0; d < 3; d++ {
		n := 3 + r.intn(5-3)
		for j := int64(0); j < n; j++ {
			if r.intn(13) == 0 {
				b = append(b, '_')
			} else {
				b = append(b, byte('a'+r.intn(26)))
			}
		}
		b = append(b, '/')
	}
	return string(append(b, "item.htm?query=1"...))
}

// letters returns n random lower-case letters: a slice of the pool at a
// random offset (the Java generator's trick for extra), so no allocation.
func (t *tables) letters(r *rng, n int64) string {
	off := r.intn(poolSize - n + 1)
	return t.pool[off : off+n]
}

// price is log-uniform in [100, 10^8) cents: round(10^(6u)·100).
func (t *tables) price(r *rng) int64 {
	u := r.next() >> (64 - 2*priceBits)
	// The product is ≥ 100: adding ½ and truncating rounds (half up).
	return int64(t.priceHi[u>>priceBits]*t.priceLo[u&(1<<priceBits-1)] + 0.5)
}
