-- Processing time is not reproducible: the reference is the check of q12.sql.
SELECT bidder, count(*) AS bid_count, 0 AS bad_windows FROM bid GROUP BY bidder;
