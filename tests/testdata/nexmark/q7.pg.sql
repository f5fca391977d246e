-- TUMBLE 10 s written out: window_end = date_bin(10 s) + 10 s.
SELECT B.auction, B.price, B.bidder, B.date_time
FROM bid B
JOIN (
    SELECT MAX(price) AS maxprice,
           date_bin(INTERVAL '10 seconds', date_time, TIMESTAMP '1970-01-01') + INTERVAL '10 seconds' AS date_time
    FROM bid
    GROUP BY 2
) B1 ON B.price = B1.maxprice
WHERE B.date_time BETWEEN B1.date_time - INTERVAL '10 seconds' AND B1.date_time;
