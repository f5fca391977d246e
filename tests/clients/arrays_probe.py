"""psycopg 3 round trip of int[] and text[] in text and binary (arrays_client_test.go).

Usage: arrays_probe.py DSN TABLE. Prints one line per check.
"""
import sys

import psycopg

dsn, table = sys.argv[1], sys.argv[2]
with psycopg.connect(dsn, autocommit=True) as conn:
    cur = conn.cursor()
    # %s: text parameters; %b: binary parameters (int4[] / text[] array_send).
    cur.execute(f"INSERT INTO {table} (id, a, b) VALUES (%s, %s, %s)", (10, [1, None, 3], ["a b", 'q"', None]))
    cur.execute(f"INSERT INTO {table} (id, a, b) VALUES (%b, %b, %b)", (11, [4, 5], ["x", ""]))
    for binary in (False, True):
        c = conn.cursor(binary=binary)
        c.execute(f"SELECT id, a, b FROM {table} WHERE id >= 10 ORDER BY id")
        oids = [d.type_code for d in c.description]
        print("binary" if binary else "text", oids, c.fetchall())
