-- q18: last bid per (bidder, auction) (dedup: ROW_NUMBER … DESC = 1; the MV
-- form orders by extra too, for determinism).
CREATE MATERIALIZED VIEW nexmark_q18 AS
SELECT auction, bidder, price, channel, url, date_time, extra
FROM (
    SELECT *,
           ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY date_time DESC, extra)
             AS rank_number
    FROM bid
)
WHERE rank_number <= 1;
