// Package nexmark is the built-in 'nexmark' source connector and the
// Nexmark event generator behind it (/work/shared/nexmark/README.md, §2).
// It owns the mapping from a stream index to a person, auction or bid
// event, the nexmark.* options, and the source reader (throttling, splits,
// positions). It imports only exec/connector and the sql leaf packages.
//
// # One stream, three tables
//
// A Nexmark stream interleaves persons, auctions and bids (1:3:46 by
// default). A source shows one kind (nexmark.table.type); the person,
// auction and bid sources of the same settings are three filtered views of
// the same stream, so a bid's auction and bidder ids refer to auctions and
// persons of that stream. Stream index i (0, 1, 2, …) has event number
// first.event.number+i (shuffled inside out-of-order groups) and event id
// first.event.id plus that number; the kind and ids follow from the id, the
// event time from the number, and the random fields from a SplitMix64
// stream seeded with the id. So every event is a pure function of (index,
// settings): Position is the next index, Seek restores it, and the same
// rows follow. The exported Generator (NewGenerator, Kind, Person, Auction,
// Bid, Timestamp) gives Go programs the same events without the engine.
//
// # Columns
//
//	person:  id BIGINT, name VARCHAR, email_address VARCHAR, credit_card VARCHAR,
//	         city VARCHAR, state VARCHAR, date_time TIMESTAMP, extra VARCHAR
//	auction: id BIGINT, item_name VARCHAR, description VARCHAR, initial_bid BIGINT,
//	         reserve BIGINT, date_time TIMESTAMP, expires TIMESTAMP, seller BIGINT,
//	         category BIGINT, extra VARCHAR
//	bid:     auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
//	         date_time TIMESTAMP, extra VARCHAR
//
// Without declared columns the source has its table's columns above.
// Declared columns may be any subset of them, in any order, each named at
// most once; the source emits exactly the declared columns. A BIGINT column
// may be declared BIGINT or INTEGER (an INTEGER value out of range fails the
// read with 22003), a VARCHAR one VARCHAR or TEXT without a length, a
// TIMESTAMP one TIMESTAMP. Timestamps are whole milliseconds.
//
// # Options
//
// Source options:
//
//	nexmark.table.type           person | auction | bid (required, any case)
//	nexmark.event.num            events of the whole stream, all kinds (absent, 0 or -1:
//	                             unbounded); a bounded source ends with io.EOF after the
//	                             rows of its kind among indexes 0 … event.num-1
//	nexmark.split.num            strided splits (default 1): split i holds the indexes
//	                             i, i+n, i+2n, …
//	nexmark.split.index          read only that split (0 … split.num-1); absent: one
//	                             reader reads all splits, i.e. every index in order
//	nexmark.min.event.gap.in.ns  wall-clock gap per split between stream events (default
//	                             100000: 10,000 events/s per split; 0 = unthrottled).
//	                             Throttling counts stream events of all kinds, so the
//	                             three tables keep pace; a reader of all splits runs
//	                             split.num times faster. Read never sleeps.
//	nexmark.max.chunk.size       rows per Read at most (default 1024)
//	nexmark.use.real.time        only 'false' (event time is a function of the index)
//
// Generator settings (README defaults):
//
//	nexmark.base.time                 event time of event number 0, ms since the epoch
//	                                  (default 1436918400000 = 2015-07-15 00:00:00 UTC)
//	nexmark.first.event.rate          event-time rate, events/s (default 10000); alias
//	  (nexmark.events.per.sec)        event time of number n = base.time + ⌊n·1000/rate⌋ ms
//	nexmark.first.event.id            added to the event number to make the id (0)
//	nexmark.first.event.number        event number of index 0 (0)
//	nexmark.out.of.order.group.size   1 (in order); g > 1 shuffles each group of g
//	nexmark.person.proportion, nexmark.auction.proportion, nexmark.bid.proportion  1, 3, 46
//	nexmark.active.people             1000
//	nexmark.in.flight.auctions        100
//	nexmark.hot.seller.ratio, nexmark.hot.auction.ratio, nexmark.hot.bidder.ratio,
//	nexmark.hot.channel.ratio         4, 2, 4, 2 (a hot pick with p 1-1/ratio)
//	nexmark.hot.seller.ratio.2, nexmark.hot.auction.ratio.2, nexmark.hot.bidder.ratio.2
//	                                  100 each (hot ids are multiples of these)
//	nexmark.avg.person.byte.size, nexmark.avg.auction.byte.size, nexmark.avg.bid.byte.size
//	                                  200, 500, 100 (sizes the extra column)
//	nexmark.num.categories, nexmark.first.category.id   5, 10
//	nexmark.first.person.id, nexmark.first.auction.id   1000, 1000
//	nexmark.person.id.lead, nexmark.auction.id.lead     10, 10
//
// RisingWave's rate-shape options (next.event.rate, rate.shape, rate.period,
// sine.approx.steps, us.per.unit), threads and the vocabulary lists are
// rejected as unsupported; any other unknown option is rejected too (22023).
// FORMAT/ENCODE are ignored, except that UPSERT and DEBEZIUM are rejected.
//
// # Choices where the references differ
//
// Strings follow nexmark-rs (RisingWave): lower-case names, cities and
// states; email is 7+5 letters; item_name and description are exactly 20
// and 100 letters. Random letters (item_name, description, extra) are
// slices of a fixed 1 MiB pool at a random offset, as Java does for extra,
// so auctions and bids allocate nothing beyond their row. URLs use Java's
// str(5) with '_' (directories of 3–4 characters); each of the 10,000
// channels has one URL, 90% of them with &channel_id=|reverse(k)|. Ids and
// hot picks follow the README (the seller's hot id uses the event id, not
// nexmark-rs's auction id; no Flink bidder offset). Prices use a 24-bit
// uniform draw. The random streams are Sluice's own, so values are not
// those of any other implementation, only their distributions.
package nexmark
