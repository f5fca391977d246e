-- check: SELECT auction, bidder, price, channel, url, date_time, extra FROM ref
-- check: SELECT auction, price, rank_number FROM ref
SELECT * FROM (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number
    FROM bid
) AS t
WHERE rank_number <= 10;
