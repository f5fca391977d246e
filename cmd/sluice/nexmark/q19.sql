-- q19: top-10 bids per auction (Top-N per group). Bids of equal price may be
-- numbered either way, so the check compares two deterministic projections:
-- the rows without their number, and (auction, price, number).
-- check: SELECT auction, bidder, price, channel, url, date_time, extra FROM nexmark_q19
-- check: SELECT auction, price, rank_number FROM nexmark_q19
CREATE MATERIALIZED VIEW nexmark_q19 AS
SELECT * FROM (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number
    FROM bid
)
WHERE rank_number <= 10;
