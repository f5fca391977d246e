-- q13: bounded side-input join (lookup join on a static table; RisingWave's
-- benchmark text with N = 10000, Flink's size).
CREATE TABLE side_input (key BIGINT PRIMARY KEY, value VARCHAR);
INSERT INTO side_input SELECT v, v::varchar FROM generate_series(0, 9999) AS v;
CREATE MATERIALIZED VIEW nexmark_q13 AS
SELECT B.auction, B.bidder, B.price, B.date_time, S.value
FROM bid B JOIN side_input FOR SYSTEM_TIME AS OF PROCTIME() S
  ON mod(B.auction, 10000) = S.key;
