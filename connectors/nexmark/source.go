package nexmark

import (
	"context"
	"encoding/binary"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Factory is the nexmark source connector.
type Factory struct{}

func init() { connector.RegisterSource("nexmark", Factory{}) }

// settings are a source's parsed options.
type settings struct {
	kind       Kind
	gen        Config
	eventNum   int64 // events of the whole stream; -1 = unbounded
	splitNum   int64
	splitIndex int64 // -1 = all splits
	gapNs      int64 // per split; 0 = unthrottled
	chunk      int64
}

// Defaults of the source's own options.
const (
	defaultGapNs = 100000 // RisingWave's: 10,000 events/s per split
	defaultChunk = 1024
	maxInt       = 1 << 40 // bound of the generator settings (no overflow anywhere)
	maxBaseTime  = 253402300799999
)

type intOption struct {
	min, max int64
	field    func(*settings) *int64
}

var intOptions = map[string]intOption{
	"nexmark.event.num":               {-1, 1 << 53, func(s *settings) *int64 { return &s.eventNum }},
	"nexmark.split.num":               {1, 1 << 16, func(s *settings) *int64 { return &s.splitNum }},
	"nexmark.split.index":             {0, 1<<16 - 1, func(s *settings) *int64 { return &s.splitIndex }},
	"nexmark.min.event.gap.in.ns":     {0, maxInt, func(s *settings) *int64 { return &s.gapNs }},
	"nexmark.max.chunk.size":          {1, 1 << 20, func(s *settings) *int64 { return &s.chunk }},
	"nexmark.base.time":               {0, maxBaseTime, func(s *settings) *int64 { return &s.gen.BaseTime }},
	"nexmark.first.event.rate":        {1, maxInt, func(s *settings) *int64 { return &s.gen.EventRate }},
	"nexmark.events.per.sec":          {1, maxInt, func(s *settings) *int64 { return &s.gen.EventRate }},
	"nexmark.first.event.id":          {0, maxInt, func(s *settings) *int64 { return &s.gen.FirstEventID }},
	"nexmark.first.event.number":      {0, maxInt, func(s *settings) *int64 { return &s.gen.FirstEventNumber }},
	"nexmark.out.of.order.group.size": {1, maxInt, func(s *settings) *int64 { return &s.gen.OutOfOrderGroupSize }},
	"nexmark.person.proportion":       {1, 1 << 18, func(s *settings) *int64 { return &s.gen.PersonProportion }},
	"nexmark.auction.proportion":      {1, 1 << 18, func(s *settings) *int64 { return &s.gen.AuctionProportion }},
	"nexmark.bid.proportion":          {0, 1 << 18, func(s *settings) *int64 { return &s.gen.BidProportion }},
	"nexmark.active.people":           {1, maxInt, func(s *settings) *int64 { return &s.gen.ActivePeople }},
	"nexmark.in.flight.auctions":      {0, maxInt, func(s *settings) *int64 { return &s.gen.InFlightAuctions }},
	"nexmark.hot.seller.ratio":        {1, maxInt, func(s *settings) *int64 { return &s.gen.HotSellerRatio }},
	"nexmark.hot.auction.ratio":       {1, maxInt, func(s *settings) *int64 { return &s.gen.HotAuctionRatio }},
	"nexmark.hot.bidder.ratio":        {1, maxInt, func(s *settings) *int64 { return &s.gen.HotBidderRatio }},
	"nexmark.hot.channel.ratio":       {1, maxInt, func(s *settings) *int64 { return &s.gen.HotChannelRatio }},
	"nexmark.hot.seller.ratio.2":      {1, maxInt, func(s *settings) *int64 { return &s.gen.HotSellerRatio2 }},
	"nexmark.hot.auction.ratio.2":     {1, maxInt, func(s *settings) *int64 { return &s.gen.HotAuctionRatio2 }},
	"nexmark.hot.bidder.ratio.2":      {1, maxInt, func(s *settings) *int64 { return &s.gen.HotBidderRatio2 }},
	"nexmark.avg.person.byte.size":    {0, maxExtra, func(s *settings) *int64 { return &s.gen.AvgPersonByteSize }},
	"nexmark.avg.auction.byte.size":   {0, maxExtra, func(s *settings) *int64 { return &s.gen.AvgAuctionByteSize }},
	"nexmark.avg.bid.byte.size":       {0, maxExtra, func(s *settings) *int64 { return &s.gen.AvgBidByteSize }},
	"nexmark.num.categories":          {1, maxInt, func(s *settings) *int64 { return &s.gen.NumCategories }},
	"nexmark.first.category.id":       {0, maxInt, func(s *settings) *int64 { return &s.gen.FirstCategoryID }},
	"nexmark.first.person.id":         {0, maxInt, func(s *settings) *int64 { return &s.gen.FirstPersonID }},
	"nexmark.first.auction.id":        {0, maxInt, func(s *settings) *int64 { return &s.gen.FirstAuctionID }},
	"nexmark.person.id.lead":          {0, maxInt, func(s *settings) *int64 { return &s.gen.PersonIDLead }},
	"nexmark.auction.id.lead":         {0, maxInt, func(s *settings) *int64 { return &s.gen.AuctionIDLead }},
}

// unsupported are RisingWave options Sluice knows but does not implement.
var unsupported = map[string]string{
	"nexmark.next.event.rate":   "only a constant event rate is supported (set nexmark.first.event.rate)",
	"nexmark.rate.shape":        "only a constant event rate is supported",
	"nexmark.rate.period":       "only a constant event rate is supported",
	"nexmark.sine.approx.steps": "only a constant event rate is supported",
	"nexmark.us.per.unit":       "the rate unit is fixed at one second",
	"nexmark.threads":           "generation runs in the source's own reader",
	"nexmark.us.states":         "the vocabularies are fixed",
	"nexmark.us.cities":         "the vocabularies are fixed",
	"nexmark.first.names":       "the vocabularies are fixed",
	"nexmark.last.names":        "the vocabularies are fixed",
}

func parse(cfg connector.SourceConfig) (*settings, []outCol, error) {
	s := &settings{gen: DefaultConfig(), eventNum: -1, splitNum: 1, splitIndex: -1, gapNs: defaultGapNs, chunk: defaultChunk}
	tt, ok := cfg.Options["nexmark.table.type"]
	if !ok {
		return nil, nil, pgerror.New(pgcode.InvalidParameterValue, "a nexmark source needs nexmark.table.type").
			WithHint("one source per table: nexmark.table.type = 'person', 'auction' or 'bid'")
	}
	switch strings.ToLower(strings.TrimSpace(tt)) {
	case "person":
		s.kind = KindPerson
	case "auction":
		s.kind = KindAuction
	case "bid":
		s.kind = KindBid
	default:
		return nil, nil, connector.OptionError("nexmark", "nexmark.table.type", "%q is not 'person', 'auction' or 'bid'", tt)
	}
	keys := make([]string, 0, len(cfg.Options))
	for k := range cfg.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first bad option reported is the same every time
	var rate string
	for _, k := range keys {
		v := cfg.Options[k]
		if o, ok := intOptions[k]; ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n < o.min || n > o.max {
				return nil, nil, connector.OptionError("nexmark", k, "%q is not an integer in [%d, %d]", v, o.min, o.max)
			}
			if k == "nexmark.first.event.rate" || k == "nexmark.events.per.sec" {
				if rate != "" && *o.field(s) != n {
					return nil, nil, connector.OptionError("nexmark", k, "%q contradicts %s", v, rate)
				}
				rate = k
			}
			*o.field(s) = n
			continue
		}
		switch k {
		case "connector", "nexmark.table.type", "encode":
			continue
		case "format":
			if f := strings.ToLower(v); f == "upsert" || f == "debezium" {
				return nil, nil, connector.OptionError("nexmark", k, "a nexmark source is append-only, FORMAT %s does not apply", v)
			}
			continue
		case "nexmark.use.real.time":
			if b, err := strconv.ParseBool(strings.TrimSpace(v)); err != nil || b {
				return nil, nil, connector.OptionError("nexmark", k, "only 'false' is supported: event time is a function of the event index")
			}
			continue
		}
		if why, ok := unsupported[k]; ok {
			return nil, nil, connector.OptionError("nexmark", k, "not supported: %s", why)
		}
		return nil, nil, connector.OptionError("nexmark", k, "unknown option")
	}
	if s.eventNum == 0 {
		s.eventNum = -1
	}
	if s.splitIndex >= s.splitNum {
		return nil, nil, connector.OptionError("nexmark", "nexmark.split.index", "%d is not below nexmark.split.num (%d)", s.splitIndex, s.splitNum)
	}
	if err := s.gen.check(); err != nil {
		return nil, nil, connector.OptionError("nexmark", "settings", "%v", err)
	}
	cols, err := resolve(s.kind, cfg.Columns)
	if err != nil {
		return nil, nil, err
	}
	return s, cols, nil
}

// outCol is an output column: the field of the event it holds and whether
// it is an INTEGER column (range-checked) rather than BIGINT.
type outCol struct {
	field int
	int4  bool
}

func schema(k Kind) []column {
	switch k {
	case KindPerson:
		return personCols
	case KindAuction:
		return auctionCols
	}
	return bidCols
}

// resolve maps declared columns onto the table's fields (see the package
// comment for what is accepted).
func resolve(k Kind, declared []types.Column) ([]outCol, error) {
	sc := schema(k)
	if len(declared) == 0 {
		out := make([]outCol, len(sc))
		for i := range out {
			out[i].field = i
		}
		return out, nil
	}
	var names []string
	for _, c := range sc {
		names = append(names, c.name)
	}
	out := make([]outCol, len(declared))
	seen := make([]bool, len(sc))
	for i, d := range declared {
		f := -1
		for j, c := range sc {
			if c.name == d.Name {
				f = j
			}
		}
		if f < 0 {
			return nil, pgerror.New(pgcode.UndefinedColumn, "nexmark table %s has no column %q", k, d.Name).
				WithHint("its columns are %s", strings.Join(names, ", "))
		}
		if seen[f] {
			return nil, pgerror.New(pgcode.DuplicateColumn, "column %q is declared twice", d.Name)
		}
		seen[f] = true
		want := sc[f].t
		ok := false
		switch want.Fam {
		case types.Int8:
			ok = d.Type.Fam == types.Int8 || d.Type.Fam == types.Int4
			out[i].int4 = d.Type.Fam == types.Int4
		case types.Varchar:
			ok = (d.Type.Fam == types.Varchar || d.Type.Fam == types.Text) && d.Type.Prec == 0
		case types.Timestamp:
			ok = d.Type.Fam == types.Timestamp
		}
		if !ok {
			return nil, pgerror.New(pgcode.DatatypeMismatch, "nexmark column %s.%s is %s, not %s", k, d.Name, want, d.Type).
				WithHint("BIGINT columns may be declared BIGINT or INTEGER, VARCHAR ones VARCHAR or TEXT (no length), TIMESTAMP ones TIMESTAMP")
		}
		out[i].field = f
	}
	return out, nil
}

// Validate implements connector.SourceFactory.
func (Factory) Validate(cfg connector.SourceConfig) ([]types.Column, error) {
	s, _, err := parse(cfg)
	if err != nil {
		return nil, err
	}
	if len(cfg.Columns) > 0 {
		return cfg.Columns, nil
	}
	return Columns(s.kind), nil
}

// Open implements connector.SourceFactory.
func (Factory) Open(_ context.Context, cfg connector.SourceConfig) (connector.Source, error) {
	s, cols, err := parse(cfg)
	if err != nil {
		return nil, err
	}
	g, err := NewGenerator(s.gen)
	if err != nil {
		return nil, connector.OptionError("nexmark", "settings", "%v", err)
	}
	return newReader(g, s, cols, time.Now), nil
}

// scanBudget bounds the stream indexes one Read looks at, so a Read
// returns quickly even when the split holds few (or no) events of its
// table.
const scanBudget = 1 << 16

type reader struct {
	g    *Generator
	s    *settings
	cols []outCol
	// stride is the step between the indexes read: split.num for one
	// split, 1 when all splits are read; splits is how many are read.
	stride, splits int64
	next           int64 // the next stream index to consider
	end            int64 // exclusive bound of the stream; math.MaxInt64 = unbounded

	now     func() time.Time
	started time.Time
	base    int64          // next at started
	alloc   types.RowAlloc // the rows' values

	p Person
	a Auction
	b Bid
}

func newReader(g *Generator, s *settings, cols []outCol, now func() time.Time) *reader {
	r := &reader{g: g, s: s, cols: cols, stride: 1, splits: s.splitNum, end: math.MaxInt64, now: now}
	if s.splitIndex >= 0 {
		r.stride, r.splits, r.next = s.splitNum, 1, s.splitIndex
	}
	if s.eventNum >= 0 {
		r.end = s.eventNum
	}
	r.started, r.base = now(), r.next
	return r
}

// Read implements connector.Source.
func (r *reader) Read(_ context.Context, b *types.Batch, max int) (int, error) {
	if r.next >= r.end {
		return 0, io.EOF
	}
	max = min(max, int(r.s.chunk))
	limit := r.end
	if r.s.gapNs > 0 {
		// Each split may emit one event per gap: the reader may have
		// looked at base + elapsed·splits/gap events (plus the first).
		el := float64(r.now().Sub(r.started).Nanoseconds())
		seen := el*float64(r.splits)/float64(r.s.gapNs) + 1
		if seen < float64(math.MaxInt64/(2*r.stride)) {
			limit = min(limit, r.base+int64(seen)*r.stride)
		}
	}
	n := 0
	for scanned := 0; n < max && r.next < limit && scanned < scanBudget; scanned++ {
		i := r.next
		num := r.g.number(i)
		ps := r.g.pos(r.g.cfg.FirstEventID + num)
		if r.g.kindAt(ps) != r.s.kind {
			if r.stride == 1 {
				if j, ok := r.g.nextOfKind(i, r.s.kind); ok {
					r.next = j
					continue
				}
			}
			r.next += r.stride
			continue
		}
		row, err := r.row(num, ps)
		if err != nil {
			return n, err
		}
		b.Add(row, 1)
		n++
		r.next += r.stride
	}
	return n, nil
}

// Meter implements connector.Metered: the lag is the stream indexes due
// by now (at the event rate, within nexmark.event.num) not yet looked at,
// in events of the whole stream (all kinds).
func (r *reader) Meter() connector.SourceMeter {
	due := r.end
	if r.s.gapNs > 0 {
		el := float64(r.now().Sub(r.started).Nanoseconds())
		seen := el*float64(r.splits)/float64(r.s.gapNs) + 1
		if seen < float64(math.MaxInt64/(2*r.stride)) {
			due = min(due, r.base+int64(seen)*r.stride)
		}
	}
	if due == math.MaxInt64 {
		return connector.SourceMeter{Bytes: -1}
	}
	return connector.SourceMeter{Bytes: -1, Lag: []connector.PartitionLag{{Behind: max(0, (due-r.next)/r.stride)}}}
}

// row builds the output row of event number n.
func (r *reader) row(n int64, ps pos) (types.Row, error) {
	row := r.alloc.Row(len(r.cols))
	if err := r.fill(row, n, ps); err != nil {
		return nil, err
	}
	return row, nil
}

// fill sets row (of len(r.cols)) to the output columns of event number n.
func (r *reader) fill(row types.Row, n int64, ps pos) error {
	switch r.s.kind {
	case KindPerson:
		e := &r.p
		r.g.person(n, ps, e)
		for j, c := range r.cols {
			switch c.field {
			case 0:
				row[j] = types.NewInt(e.ID)
			case 1:
				row[j] = types.NewString(e.Name)
			case 2:
				row[j] = types.NewString(e.EmailAddress)
			case 3:
				row[j] = types.NewString(e.CreditCard)
			case 4:
				row[j] = types.NewString(e.City)
			case 5:
				row[j] = types.NewString(e.State)
			case 6:
				row[j] = types.NewTimestamp(e.DateTime)
			case 7:
				row[j] = types.NewString(e.Extra)
			}
		}
	case KindAuction:
		e := &r.a
		r.g.auction(n, ps, e)
		for j, c := range r.cols {
			switch c.field {
			case 0:
				row[j] = types.NewInt(e.ID)
			case 1:
				row[j] = types.NewString(e.ItemName)
			case 2:
				row[j] = types.NewString(e.Description)
			case 3:
				row[j] = types.NewInt(e.InitialBid)
			case 4:
				row[j] = types.NewInt(e.Reserve)
			case 5:
				row[j] = types.NewTimestamp(e.DateTime)
			case 6:
				row[j] = types.NewTimestamp(e.Expires)
			case 7:
				row[j] = types.NewInt(e.Seller)
			case 8:
				row[j] = types.NewInt(e.Category)
			case 9:
				row[j] = types.NewString(e.Extra)
			}
		}
	default:
		e := &r.b
		r.g.bid(n, ps, e)
		for j, c := range r.cols {
			switch c.field {
			case 0:
				row[j] = types.NewInt(e.Auction)
			case 1:
				row[j] = types.NewInt(e.Bidder)
			case 2:
				row[j] = types.NewInt(e.Price)
			case 3:
				row[j] = types.NewString(e.Channel)
			case 4:
				row[j] = types.NewString(e.URL)
			case 5:
				row[j] = types.NewTimestamp(e.DateTime)
			case 6:
				row[j] = types.NewString(e.Extra)
			}
		}
	}
	for j, c := range r.cols {
		if c.int4 && row[j].I != int64(int32(row[j].I)) {
			return pgerror.New(pgcode.NumericValueOutOfRange, "nexmark %s.%s value %d is out of range for type integer",
				r.s.kind, schema(r.s.kind)[c.field].name, row[j].I).WithHint("declare the column BIGINT")
		}
	}
	return nil
}

// Position layout: 'N', version 1, split.num, split.index+1 (0 = all
// splits), next index (uint64 each, big-endian).
const posLen = 2 + 3*8

// Position implements connector.Seekable: the next stream index of the
// split(s) read.
func (r *reader) Position() []byte {
	b := make([]byte, 2, posLen)
	b[0], b[1] = 'N', 1
	b = binary.BigEndian.AppendUint64(b, uint64(r.s.splitNum))
	b = binary.BigEndian.AppendUint64(b, uint64(r.s.splitIndex+1))
	return binary.BigEndian.AppendUint64(b, uint64(r.next))
}

// Seek implements connector.Seekable. It also restarts the throttle clock.
func (r *reader) Seek(pos []byte) error {
	if len(pos) != posLen || pos[0] != 'N' || pos[1] != 1 {
		return pgerror.New(pgcode.DataCorrupted, "bad nexmark position")
	}
	num := int64(binary.BigEndian.Uint64(pos[2:]))
	idx := int64(binary.BigEndian.Uint64(pos[10:])) - 1
	next := int64(binary.BigEndian.Uint64(pos[18:]))
	if num != r.s.splitNum || idx != r.s.splitIndex {
		return pgerror.New(pgcode.DataCorrupted, "nexmark position is for split %d of %d, the source reads split %d of %d",
			idx, num, r.s.splitIndex, r.s.splitNum)
	}
	if next < 0 || (idx >= 0 && next%num != idx) {
		return pgerror.New(pgcode.DataCorrupted, "bad nexmark position: index %d", next)
	}
	r.next = next
	r.started, r.base = r.now(), next
	return nil
}

// Close implements connector.Source.
func (r *reader) Close() error { return nil }
