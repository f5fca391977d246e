"""psycopg2 named (server-side) cursors against Sluice: DECLARE ... CURSOR
WITHOUT HOLD / WITH HOLD, FETCH FORWARD n through fetchone, fetchmany,
fetchall and iteration with itersize, scroll() (MOVE), and the errors.
Prints one line per check; the Go test compares them with what it expects."""
import sys

import psycopg2

dsn = sys.argv[1]
conn = psycopg2.connect(dsn)

cur = conn.cursor("big_scan")
cur.itersize = 1000
cur.execute("SELECT id, v FROM nc ORDER BY id")
print("first", cur.fetchone())
print("many", cur.fetchmany(3))
n = 4
total = 10
for row in cur:  # FETCH FORWARD 1000 at a time
    n += 1
    total += row[0] if row[0] == n else -10**9
print("iterated", n, total == n * (n + 1) // 2)
print("description", [d.name for d in cur.description])
cur.close()
conn.commit()

cur = conn.cursor("scroller", scrollable=True)
cur.execute("SELECT id FROM nc WHERE id <= %s", (20,))
print("fetchmany", [r[0] for r in cur.fetchmany(5)])
cur.scroll(-3)
print("after scroll -3", cur.fetchone()[0])
cur.scroll(10, mode="absolute")
print("after absolute 10", cur.fetchone()[0])
print("rest", len(cur.fetchall()))
cur.close()
conn.rollback()

cur = conn.cursor("forward_only", scrollable=False)
cur.execute("SELECT id FROM nc")
cur.fetchmany(2)
try:
    cur.scroll(-1)
    print("scrolled back")
except psycopg2.Error as e:
    print("no scroll", e.pgcode)
conn.rollback()

cur = conn.cursor("held", withhold=True)
cur.execute("SELECT id FROM nc WHERE id > 1995 ORDER BY id")
conn.commit()
print("held after commit", [r[0] for r in cur.fetchall()])
cur.close()

conn.autocommit = True
cur = conn.cursor()
try:
    cur.execute("DECLARE auto CURSOR FOR SELECT 1")
    print("declared outside a transaction")
except psycopg2.Error as e:
    print("autocommit", e.pgcode, e.diag.message_primary)
cur.execute("DECLARE auto CURSOR WITH HOLD FOR SELECT 1")
cur.execute("FETCH ALL FROM auto")
print("hold in autocommit", cur.fetchall(), cur.statusmessage)
cur.execute("CLOSE auto")
print(cur.statusmessage)
conn.close()
