-- q12: processing-time windows (TUMBLE 10 s over PROCTIME(); Flink's form:
-- a view adds p_time). Processing time is not reproducible, so the check
-- compares what is: each bidder's bids add up to its bid count, and every
-- window is 10 s long.
-- check: SELECT bidder, sum(bid_count) AS bid_count, count(*) FILTER (WHERE window_end - window_start <> INTERVAL '10' SECOND) AS bad_windows FROM nexmark_q12 GROUP BY bidder
CREATE VIEW nexmark_q12_bid AS SELECT *, PROCTIME() AS p_time FROM bid;
CREATE MATERIALIZED VIEW nexmark_q12 AS
SELECT bidder, count(*) AS bid_count, window_start, window_end
FROM TUMBLE(nexmark_q12_bid, p_time, INTERVAL '10' SECOND)
GROUP BY bidder, window_start, window_end;
