SELECT P.id, P.name, P.starttime
FROM (
    SELECT id, name, date_bin(INTERVAL '10 seconds', date_time, TIMESTAMP '1970-01-01') AS starttime,
           date_bin(INTERVAL '10 seconds', date_time, TIMESTAMP '1970-01-01') + INTERVAL '10 seconds' AS endtime
    FROM person
    GROUP BY 1, 2, 3, 4
) P
JOIN (
    SELECT seller, date_bin(INTERVAL '10 seconds', date_time, TIMESTAMP '1970-01-01') AS starttime,
           date_bin(INTERVAL '10 seconds', date_time, TIMESTAMP '1970-01-01') + INTERVAL '10 seconds' AS endtime
    FROM auction
    GROUP BY 1, 2, 3
) A ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime;
