package main

// `sluice bench nexmark` runs one Nexmark query over a bounded, unthrottled
// stream in an in-process engine and prints one line of figures:
//
//	query=q5 events=10000000 seconds=… events_per_sec=… cpu_seconds_per_million=… peak_rss_mib=…
//
// The query is created as CREATE SINK … AS <select> WITH (connector =
// 'blackhole', delivery = 'EXACTLY_ONCE'), RisingWave's benchmark form.
// The clock runs from CREATE SINK until every source reader of the sink has
// reached the end of its stream and the checkpoint after that has
// committed (FLUSH). events counts stream events of all kinds (nexmark.event.num),
// as RisingWave and Flink report them.
//
// The engine has no way to tell a client that a bounded source is
// exhausted, so the command wraps the registered 'nexmark' source
// connector (in this process only) and counts its readers' io.EOFs.
//
// The query texts are those of tests/testdata/nexmark (TestNexmark checks
// them against --print-sql).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"sluice/exec/connector"
	"sluice/server"
	"sluice/server/pgwire"
	"sluice/sql/types"
)

// nexmarkQuery is one query of the benchmark: statements that prepare it
// (a function, a table) and the SELECT the sink is made of.
type nexmarkQuery struct {
	setup  []string
	query  string
	reason string // why it cannot run as a benchmark, if it cannot
}

// nexmarkQueries are the texts of tests/testdata/nexmark/qN.sql.
var nexmarkQueries = map[string]nexmarkQuery{
	"q0": {query: `SELECT auction, bidder, price, date_time FROM bid`},
	"q1": {query: `SELECT auction, bidder, 0.908 * price AS price, date_time
FROM bid`},
	"q2": {query: `SELECT auction, price FROM bid
WHERE auction = 1007 OR auction = 1020 OR auction = 2001 OR auction = 2019 OR auction = 2087`},
	"q3": {query: `SELECT P.name, P.city, P.state, A.id
FROM auction AS A INNER JOIN person AS P ON A.seller = P.id
WHERE A.category = 10 AND (P.state = 'or' OR P.state = 'id' OR P.state = 'ca')`},
	"q4": {query: `SELECT Q.category, AVG(Q.final) AS avg
FROM (
    SELECT MAX(B.price) AS final, A.category
    FROM auction A, bid B
    WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
    GROUP BY A.id, A.category
) Q
GROUP BY Q.category`},
	"q5": {query: `SELECT AuctionBids.auction, AuctionBids.num
FROM (
    SELECT bid.auction, count(*) AS num, window_start AS starttime
    FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND)
    GROUP BY window_start, bid.auction
) AS AuctionBids
JOIN (
    SELECT max(CountBids.num) AS maxn, CountBids.starttime_c
    FROM (
        SELECT count(*) AS num, window_start AS starttime_c
        FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND)
        GROUP BY bid.auction, window_start
    ) AS CountBids
    GROUP BY CountBids.starttime_c
) AS MaxBids
ON AuctionBids.starttime = MaxBids.starttime_c AND AuctionBids.num >= MaxBids.maxn`},
	"q6": {query: `SELECT Q.seller,
       AVG(Q.final) OVER
         (PARTITION BY Q.seller ORDER BY Q.date_time, Q.id ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)
       AS avg
FROM (
    SELECT ROW_NUMBER() OVER (PARTITION BY A.id, A.seller ORDER BY B.price, B.date_time, B.extra) AS rank,
           A.id, A.seller, B.price AS final, B.date_time
    FROM auction AS A, bid AS B
    WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
) AS Q
WHERE Q.rank <= 1`},
	"q7": {query: `SELECT B.auction, B.price, B.bidder, B.date_time
FROM bid B
JOIN (
    SELECT MAX(price) AS maxprice, window_end AS date_time
    FROM TUMBLE(bid, date_time, INTERVAL '10' SECOND)
    GROUP BY window_end
) B1 ON B.price = B1.maxprice
WHERE B.date_time BETWEEN B1.date_time - INTERVAL '10' SECOND AND B1.date_time`},
	"q8": {query: `SELECT P.id, P.name, P.starttime
FROM (
    SELECT id, name, window_start AS starttime, window_end AS endtime
    FROM TUMBLE(person, date_time, INTERVAL '10' SECOND)
    GROUP BY id, name, window_start, window_end
) P
JOIN (
    SELECT seller, window_start AS starttime, window_end AS endtime
    FROM TUMBLE(auction, date_time, INTERVAL '10' SECOND)
    GROUP BY seller, window_start, window_end
) A ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime`},
	"q9": {query: `SELECT id, item_name, description, initial_bid, reserve, date_time, expires, seller, category,
       auction, bidder, price, bid_date_time
FROM (
    SELECT A.*, B.auction, B.bidder, B.price, B.date_time AS bid_date_time,
           ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.date_time ASC) AS rownum
    FROM auction A, bid B
    WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
) tmp
WHERE rownum <= 1`},
	"q10": {query: `SELECT auction, bidder, price, date_time,
       TO_CHAR(date_time, 'YYYY-MM-DD') AS date,
       TO_CHAR(date_time, 'HH:MI') AS time
FROM bid`},
	"q11": {query: `SELECT bidder, count(*) AS bid_count, window_start AS starttime, window_end AS endtime
FROM SESSION(bid, date_time, INTERVAL '10' SECOND, bidder)
GROUP BY bidder, window_start, window_end`},
	"q12": {setup: []string{`CREATE VIEW nexmark_q12_bid AS SELECT *, PROCTIME() AS p_time FROM bid`},
		query: `SELECT bidder, count(*) AS bid_count, window_start, window_end
FROM TUMBLE(nexmark_q12_bid, p_time, INTERVAL '10' SECOND)
GROUP BY bidder, window_start, window_end`},
	"q13": {setup: []string{`CREATE TABLE side_input (key BIGINT PRIMARY KEY, value VARCHAR)`,
		`INSERT INTO side_input SELECT v, v::varchar FROM generate_series(0, 9999) AS v`},
		query: `SELECT B.auction, B.bidder, B.price, B.date_time, S.value
FROM bid B JOIN side_input FOR SYSTEM_TIME AS OF PROCTIME() S
  ON mod(B.auction, 10000) = S.key`},
	"q14": {setup: []string{`CREATE FUNCTION count_char(s varchar, c varchar) RETURNS int LANGUAGE SQL AS
  $$SELECT LENGTH(s) - LENGTH(REPLACE(s, c, ''))$$`},
		query: `SELECT auction, bidder, 0.908 * price AS price,
       CASE
         WHEN extract(hour from date_time) >= 8 AND extract(hour from date_time) <= 18
           THEN 'dayTime'
         WHEN extract(hour from date_time) <= 6 OR extract(hour from date_time) >= 20
           THEN 'nightTime'
         ELSE 'otherTime'
       END AS bidTimeType,
       date_time,
       count_char(extra, 'c') AS c_counts
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000`},
	"q15": {query: `SELECT to_char(date_time, 'YYYY-MM-DD') AS "day",
       count(*) AS total_bids,
       count(*) filter (where price < 10000) AS rank1_bids,
       count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
       count(*) filter (where price >= 1000000) AS rank3_bids,
       count(distinct bidder) AS total_bidders,
       count(distinct bidder) filter (where price < 10000) AS rank1_bidders,
       count(distinct bidder) filter (where price >= 10000 and price < 1000000) AS rank2_bidders,
       count(distinct bidder) filter (where price >= 1000000) AS rank3_bidders,
       count(distinct auction) AS total_auctions,
       count(distinct auction) filter (where price < 10000) AS rank1_auctions,
       count(distinct auction) filter (where price >= 10000 and price < 1000000) AS rank2_auctions,
       count(distinct auction) filter (where price >= 1000000) AS rank3_auctions
FROM bid
GROUP BY to_char(date_time, 'YYYY-MM-DD')`},
	"q16": {query: `SELECT channel,
       to_char(date_time, 'YYYY-MM-DD') AS "day",
       max(to_char(date_time, 'HH:mm')) AS "minute",
       count(*) AS total_bids,
       count(*) filter (where price < 10000) AS rank1_bids,
       count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
       count(*) filter (where price >= 1000000) AS rank3_bids,
       count(distinct bidder) AS total_bidders,
       count(distinct bidder) filter (where price < 10000) AS rank1_bidders,
       count(distinct bidder) filter (where price >= 10000 and price < 1000000) AS rank2_bidders,
       count(distinct bidder) filter (where price >= 1000000) AS rank3_bidders,
       count(distinct auction) AS total_auctions,
       count(distinct auction) filter (where price < 10000) AS rank1_auctions,
       count(distinct auction) filter (where price >= 10000 and price < 1000000) AS rank2_auctions,
       count(distinct auction) filter (where price >= 1000000) AS rank3_auctions
FROM bid
GROUP BY channel, to_char(date_time, 'YYYY-MM-DD')`},
	"q17": {query: `SELECT auction,
       to_char(date_time, 'YYYY-MM-DD') AS day,
       count(*) AS total_bids,
       count(*) filter (where price < 10000) AS rank1_bids,
       count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
       count(*) filter (where price >= 1000000) AS rank3_bids,
       min(price) AS min_price,
       max(price) AS max_price,
       avg(price) AS avg_price,
       sum(price) AS sum_price
FROM bid
GROUP BY auction, to_char(date_time, 'YYYY-MM-DD')`},
	"q18": {query: `SELECT auction, bidder, price, channel, url, date_time, extra
FROM (
    SELECT *,
           ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY date_time DESC, extra)
             AS rank_number
    FROM bid
)
WHERE rank_number <= 1`},
	"q19": {query: `SELECT * FROM (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number
    FROM bid
)
WHERE rank_number <= 10`},
	"q20": {query: `SELECT auction, bidder, price, channel, url, B.date_time AS bid_date_time, B.extra AS bid_extra,
       item_name, description, initial_bid, reserve, A.date_time AS auction_date_time,
       expires, seller, category, A.extra AS auction_extra
FROM bid AS B INNER JOIN auction AS A ON B.auction = A.id
WHERE A.category = 10`},
	"q21": {query: `SELECT auction, bidder, price, channel,
       CASE
         WHEN LOWER(channel) = 'apple' THEN '0'
         WHEN LOWER(channel) = 'google' THEN '1'
         WHEN LOWER(channel) = 'facebook' THEN '2'
         WHEN LOWER(channel) = 'baidu' THEN '3'
         ELSE (regexp_match(url, '(&|^)channel_id=([^&]*)'))[2]
       END AS channel_id
FROM bid
WHERE (regexp_match(url, '(&|^)channel_id=([^&]*)'))[2] IS NOT NULL
   OR LOWER(channel) IN ('apple', 'google', 'facebook', 'baidu')`},
	"q22": {query: `SELECT auction, bidder, price, channel,
       split_part(url, '/', 4) AS dir1,
       split_part(url, '/', 5) AS dir2,
       split_part(url, '/', 6) AS dir3
FROM bid`},
}

// nexmarkColumns are the three sources' column lists, with RisingWave's
// watermark.
var nexmarkColumns = map[string]string{
	"person": `id BIGINT, name VARCHAR, email_address VARCHAR, credit_card VARCHAR, city VARCHAR,
  state VARCHAR, date_time TIMESTAMP, extra VARCHAR`,
	"auction": `id BIGINT, item_name VARCHAR, description VARCHAR, initial_bid BIGINT, reserve BIGINT,
  date_time TIMESTAMP, expires TIMESTAMP, seller BIGINT, category BIGINT, extra VARCHAR`,
	"bid": `auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
  date_time TIMESTAMP, extra VARCHAR`,
}

// runBench runs `sluice bench ARGS`.
func runBench(args []string) error {
	if len(args) == 0 || args[0] != "nexmark" {
		return errors.New("usage: sluice bench nexmark --query qN [--events N] [--splits N] [--checkpoint-interval 1s] [--cpuprofile FILE] [--memprofile FILE]")
	}
	fs := flag.NewFlagSet("sluice bench nexmark", flag.ContinueOnError)
	query := fs.String("query", "", "Nexmark query to run: q0 … q22")
	events := fs.Int64("events", 10_000_000, "events of the stream, all kinds (nexmark.event.num)")
	splits := fs.Int("splits", 1, "nexmark.split.num of each source")
	rate := fs.Int64("event-rate", 0, "event-time rate, events/s (nexmark.first.event.rate; 0: the generator's 10,000)")
	interval := fs.Duration("checkpoint-interval", time.Second, "time between checkpoints")
	dataDir := fs.String("data-dir", "", "directory of the embedded store (default: a temporary one, removed)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to FILE")
	memProfile := fs.String("memprofile", "", "write a heap profile at the end of the run to FILE")
	printSQL := fs.Bool("print-sql", false, "print the statements of the query and exit")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	q, ok := nexmarkQueries[*query]
	if !ok {
		var names []string
		for n := range nexmarkQueries {
			names = append(names, n)
		}
		sort.Slice(names, func(i, j int) bool { return qnum(names[i]) < qnum(names[j]) })
		return fmt.Errorf("--query %q: not one of %s", *query, strings.Join(names, ", "))
	}
	if *printSQL {
		for _, s := range q.setup {
			fmt.Printf("%s;\n", s)
		}
		fmt.Printf("%s;\n", q.query)
		return nil
	}
	if *events <= 0 {
		return errors.New("--events must be positive: the benchmark needs a bounded stream")
	}
	if *splits < 1 {
		return errors.New("--splits must be at least 1")
	}
	dir := *dataDir
	if dir == "" {
		d, err := os.MkdirTemp("", "sluice-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	tracker, err := trackNexmarkEOF()
	if err != nil {
		return err
	}
	eng, err := server.Open(server.Config{DataDir: dir, CheckpointInterval: *interval})
	if err != nil {
		return err
	}
	defer eng.Close()
	ctx := context.Background()
	sess, err := eng.Connect(ctx, pgwire.StartupInfo{User: "sluice", Database: "sluice"})
	if err != nil {
		return err
	}
	defer sess.Close()
	run := func(sql string) (*benchResult, error) {
		w := &benchResult{}
		if err := sess.SimpleQuery(ctx, sql, w); err != nil {
			return nil, fmt.Errorf("%s: %w", firstLine(sql), err)
		}
		return w, nil
	}
	opts := fmt.Sprintf("connector = 'nexmark', nexmark.event.num = '%d', nexmark.split.num = '%d', nexmark.min.event.gap.in.ns = '0'",
		*events, *splits)
	if *rate > 0 {
		opts += fmt.Sprintf(", nexmark.first.event.rate = '%d'", *rate)
	}
	for _, table := range []string{"person", "auction", "bid"} {
		ddl := fmt.Sprintf("CREATE SOURCE %s (%s,\n  WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND)\nWITH (%s, nexmark.table.type = '%s')",
			table, nexmarkColumns[table], opts, table)
		if _, err := run(ddl); err != nil {
			return err
		}
	}
	for _, s := range q.setup {
		if _, err := run(s); err != nil {
			return err
		}
	}
	if len(q.setup) > 0 {
		if _, err := run("FLUSH"); err != nil {
			return err
		}
	}

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	cpu0 := cpuSeconds()
	start := time.Now()
	sink := "CREATE SINK nexmark_" + *query + " AS\n" + q.query + "\nWITH (connector = 'blackhole', delivery = 'EXACTLY_ONCE')"
	if _, err := run(sink); err != nil {
		return err
	}
	// The sink's readers were opened by CREATE SINK: wait until each has
	// read its last row, then for the checkpoint after that.
	if err := tracker.wait(ctx, "nexmark_"+*query, run); err != nil {
		return err
	}
	if _, err := run("FLUSH"); err != nil {
		return err
	}
	elapsed := time.Since(start)
	cpu := cpuSeconds() - cpu0
	if *cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if err := sinkError(run, "nexmark_"+*query); err != nil {
		return err
	}
	if *memProfile != "" {
		f, err := os.Create(*memProfile)
		if err != nil {
			return err
		}
		runtime.GC()
		err = pprof.WriteHeapProfile(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	sec := elapsed.Seconds()
	fmt.Printf("query=%s events=%d seconds=%.3f events_per_sec=%.0f cpu_seconds_per_million=%.3f peak_rss_mib=%.1f\n",
		*query, *events, sec, float64(*events)/sec, cpu/(float64(*events)/1e6), peakRSSMiB())
	return nil
}

// qnum orders query names numerically.
func qnum(name string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(name, "q"))
	return n
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// sinkError returns the sink's last error from SHOW SINKS, if it has one.
func sinkError(run func(string) (*benchResult, error), name string) error {
	res, err := run("SHOW SINKS")
	if err != nil {
		return err
	}
	col := -1
	for i, c := range res.cols {
		if c.Name == "Last Error" {
			col = i
		}
	}
	for _, r := range res.rows {
		if col >= 0 && r[0].S == name && r[col].S != "" {
			return fmt.Errorf("sink %s failed: %s", name, r[col].S)
		}
	}
	return nil
}

// benchResult is a pgwire.ResultWriter that keeps the rows.
type benchResult struct {
	cols []types.Column
	rows []types.Row
}

func (b *benchResult) Columns(c []types.Column) error { b.cols = c; return nil }
func (b *benchResult) Row(r types.Row) error          { b.rows = append(b.rows, r.Copy()); return nil }
func (b *benchResult) Complete(string) error          { return nil }
func (b *benchResult) Notice(string) error            { return nil }

// eofTracker wraps the 'nexmark' source connector to count the readers
// opened and those that have reached io.EOF.
type eofTracker struct {
	connector.SourceFactory
	opened atomic.Int64
	ended  atomic.Int64
	eof    chan struct{} // one token per reader that reached io.EOF
}

func trackNexmarkEOF() (*eofTracker, error) {
	f, err := connector.LookupSource("nexmark")
	if err != nil {
		return nil, err
	}
	t := &eofTracker{SourceFactory: f, eof: make(chan struct{}, 1024)}
	connector.RegisterSource("nexmark", t)
	return t, nil
}

// Open implements connector.SourceFactory.
func (t *eofTracker) Open(ctx context.Context, cfg connector.SourceConfig) (connector.Source, error) {
	src, err := t.SourceFactory.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	t.opened.Add(1)
	s := &eofSource{Source: src, t: t}
	s.seek, _ = src.(connector.Seekable)
	return s, nil
}

// wait returns once every reader opened so far has reached io.EOF, or with
// the sink's error if it fails first.
func (t *eofTracker) wait(ctx context.Context, sink string, run func(string) (*benchResult, error)) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for t.ended.Load() < t.opened.Load() {
		select {
		case <-t.eof:
		case <-tick.C:
			if err := sinkError(run, sink); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// eofSource is a nexmark reader that reports its io.EOF. It is Seekable as
// the reader it wraps is, so the sink stays exactly once.
type eofSource struct {
	connector.Source
	seek connector.Seekable
	t    *eofTracker
	done bool
}

// Read implements connector.Source.
func (s *eofSource) Read(ctx context.Context, b *types.Batch, max int) (int, error) {
	n, err := s.Source.Read(ctx, b, max)
	if errors.Is(err, io.EOF) && !s.done {
		s.done = true
		s.t.ended.Add(1)
		select {
		case s.t.eof <- struct{}{}:
		default: // wait also rechecks the counters
		}
	}
	return n, err
}

// Position implements connector.Seekable.
func (s *eofSource) Position() []byte {
	if s.seek == nil {
		return nil
	}
	return s.seek.Position()
}

// Seek implements connector.Seekable.
func (s *eofSource) Seek(pos []byte) error {
	if s.seek == nil {
		return errors.New("nexmark reader is not seekable")
	}
	return s.seek.Seek(pos)
}

// cpuSeconds is the CPU time (user + system) the process has used.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// peakRSSMiB is the process's peak resident set (VmHWM; ru_maxrss is KiB on Linux).
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
