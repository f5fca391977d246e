-- q6: average selling price by seller (RisingWave's "group top-1" variant:
-- join + ROW_NUMBER top-1 + AVG OVER the last 10 rows).
-- Departure from RisingWave's text, for a deterministic answer: the
-- ROW_NUMBER and the window are ordered to a unique key (RisingWave orders
-- by B.price and Q.date_time alone, and ties are common among low prices).
-- approx: avg
CREATE MATERIALIZED VIEW nexmark_q6 AS
SELECT Q.seller,
       AVG(Q.final) OVER
         (PARTITION BY Q.seller ORDER BY Q.date_time, Q.id ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)
       AS avg
FROM (
    SELECT ROW_NUMBER() OVER (PARTITION BY A.id, A.seller ORDER BY B.price, B.date_time, B.extra) AS rank,
           A.id, A.seller, B.price AS final, B.date_time
    FROM auction AS A, bid AS B
    WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
) AS Q
WHERE Q.rank <= 1;
