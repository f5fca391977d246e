CREATE TABLE side_input (key BIGINT PRIMARY KEY, value VARCHAR);
INSERT INTO side_input SELECT v, v::varchar FROM generate_series(0, 9999) AS v;
SELECT B.auction, B.bidder, B.price, B.date_time, S.value
FROM bid B JOIN side_input S ON mod(B.auction, 10000) = S.key;
