-- HOP(bid, date_time, 2 s, 10 s) written out: a bid at t is in the five
-- windows whose start is a multiple of 2 s in (t - 10 s, t].
WITH hop AS (
    SELECT b.auction, w.window_start
    FROM bid b
    CROSS JOIN LATERAL generate_series(
        date_bin(INTERVAL '2 seconds', b.date_time, TIMESTAMP '1970-01-01') - INTERVAL '8 seconds',
        date_bin(INTERVAL '2 seconds', b.date_time, TIMESTAMP '1970-01-01'),
        INTERVAL '2 seconds') AS w(window_start)
),
AuctionBids AS (
    SELECT auction, count(*) AS num, window_start AS starttime FROM hop GROUP BY window_start, auction
),
MaxBids AS (
    SELECT max(num) AS maxn, starttime AS starttime_c FROM AuctionBids GROUP BY starttime
)
SELECT AuctionBids.auction, AuctionBids.num
FROM AuctionBids JOIN MaxBids
  ON AuctionBids.starttime = MaxBids.starttime_c AND AuctionBids.num >= MaxBids.maxn;
