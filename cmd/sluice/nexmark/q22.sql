-- q22: URL directories (split_part).
CREATE MATERIALIZED VIEW nexmark_q22 AS
SELECT auction, bidder, price, channel,
       split_part(url, '/', 4) AS dir1,
       split_part(url, '/', 5) AS dir2,
       split_part(url, '/', 6) AS dir3
FROM bid;
