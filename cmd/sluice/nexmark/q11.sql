-- q11: user sessions (SESSION window, 10 s gap; Flink only, no RisingWave text).
-- Flink: GROUP BY B.bidder, SESSION(B.dateTime, INTERVAL '10' SECOND) with
-- SESSION_START/SESSION_END. Sluice's SESSION(relation, time, gap,
-- partition columns) adds window_start and window_end per bidder session;
-- window_end is the session's last bid time + 10 s. The reference follows
-- Flink: windows [t, t + gap) that touch merge, so bids exactly 10 s apart
-- are in one session.
CREATE MATERIALIZED VIEW nexmark_q11 AS
SELECT bidder, count(*) AS bid_count, window_start AS starttime, window_end AS endtime
FROM SESSION(bid, date_time, INTERVAL '10' SECOND, bidder)
GROUP BY bidder, window_start, window_end;
