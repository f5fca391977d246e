-- q10: log to file system (projection + date formatting).
CREATE MATERIALIZED VIEW nexmark_q10 AS
SELECT auction, bidder, price, date_time,
       TO_CHAR(date_time, 'YYYY-MM-DD') AS date,
       TO_CHAR(date_time, 'HH:MI') AS time
FROM bid;
