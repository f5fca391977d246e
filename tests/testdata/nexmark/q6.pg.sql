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
