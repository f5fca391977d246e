-- Session ids from LAG: a bid starts a session when it comes more than 10 s
-- after the bidder's previous bid.
WITH marked AS (
    SELECT bidder, date_time,
           CASE WHEN date_time - lag(date_time) OVER (PARTITION BY bidder ORDER BY date_time)
                     <= INTERVAL '10 seconds' THEN 0 ELSE 1 END AS starts
    FROM bid
),
numbered AS (
    SELECT bidder, date_time,
           sum(starts) OVER (PARTITION BY bidder ORDER BY date_time ROWS UNBOUNDED PRECEDING) AS session
    FROM marked
)
SELECT bidder, count(*) AS bid_count, min(date_time) AS starttime,
       max(date_time) + INTERVAL '10 seconds' AS endtime
FROM numbered
GROUP BY bidder, session;
