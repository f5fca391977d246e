"""psycopg 3's session of the client matrix (run by TestClientPsycopg3).

psycopg 3 binds parameters server-side (the extended protocol: Parse, Bind
with typed parameters, Execute) and reads text or, asked to, binary results.
Also: binary parameters and results (%b, binary=True), pipeline mode, COPY
(text in, binary out) and TypeInfo.fetch.
"""

import struct

import psycopg
from psycopg.types import TypeInfo
from psycopg.types.json import Jsonb

from session import (DDL, ERRORS, INTERVAL_TEXT, JSONB_QUERY, JSONB_ROW, NUMERIC_TEXTS, SLUICE, TYPE_COLUMNS,
                     TYPE_ROWS, Runner, expect, expect_sqlstate)

D = __import__("decimal").Decimal

conn = psycopg.connect("", autocommit=True)  # the PG* environment variables


def sync():
    # Sluice: make acknowledged writes visible (see session.py).
    if SLUICE:
        conn.execute("FLUSH")


def recover():
    if not conn.autocommit:
        conn.rollback()
        conn.autocommit = True


def ddl():
    for stmt in DDL:
        conn.execute(stmt)


def dml():
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO items (id, name, qty, price) VALUES (%s, %s, %s, %s)",
                        [(1, "apple", 10, D("1.25")), (2, "pear", 20, D("2.50")), (3, "fig", 30, D("3.75"))])
        cur.execute("UPDATE items SET qty = qty + %s WHERE id = %s", (5, 2))
        expect(cur.rowcount, 1, "UPDATE rowcount")
        cur.execute("DELETE FROM items WHERE id = %(id)s", {"id": 3})
        expect(cur.rowcount, 1, "DELETE rowcount")
        sync()
        cur.execute("SELECT id, name, qty, price FROM items WHERE id >= %s ORDER BY id", (1,))
        expect(cur.fetchall(), [(1, "apple", 10, D("1.25")), (2, "pear", 25, D("2.50"))], "items")


def read_your_writes():
    conn.execute("INSERT INTO notes VALUES (%s, %s)", (1, "first"))
    rows = conn.execute("SELECT body FROM notes WHERE id = %s", (1,)).fetchall()
    expect(rows, [("first",)], "the row just inserted, without FLUSH")


def commit():
    with conn.transaction():
        conn.execute("INSERT INTO items VALUES (%s, %s, %s, %s)", (4, "plum", 40, D("4.00")))
        conn.execute("INSERT INTO items VALUES (%s, %s, %s, %s)", (5, "lime", 50, D("5.00")))
    sync()
    expect(conn.execute("SELECT id FROM items ORDER BY id").fetchall(), [(1,), (2,), (4,), (5,)], "ids after COMMIT")


def view():
    sync()
    expect(conn.execute("SELECT n, total_qty FROM items_summary").fetchall(), [(4, 125)], "items_summary")


def rollback():
    conn.autocommit = False
    conn.execute("INSERT INTO items VALUES (%s, %s, %s, %s)", (6, "date", 60, D("6.00")))
    conn.execute("UPDATE items SET qty = 0 WHERE id = %s", (1,))
    conn.rollback()
    conn.autocommit = True
    sync()
    expect(conn.execute("SELECT id, qty FROM items ORDER BY id").fetchall(),
           [(1, 10), (2, 25), (4, 40), (5, 50)], "items after ROLLBACK")


def insert_types(offset, mark):
    cols = ", ".join(TYPE_COLUMNS)
    marks = ", ".join([mark] * (len(TYPE_COLUMNS) + 1))
    for id_, row in TYPE_ROWS.items():
        vals = [row[c] for c in TYPE_COLUMNS]
        if row["j"] is not None:
            vals[TYPE_COLUMNS.index("j")] = Jsonb(row["j"])
        conn.execute("INSERT INTO types (id, %s) VALUES (%s)" % (cols, marks), [id_ + offset] + vals)


def check_types(offset, binary):
    cols = ", ".join(TYPE_COLUMNS)
    got = conn.cursor(binary=binary).execute(
        "SELECT id, %s FROM types WHERE id BETWEEN %%s AND %%s ORDER BY id" % cols, (offset + 1, offset + 9)).fetchall()
    expect([r[0] for r in got], [i + offset for i in sorted(TYPE_ROWS)], "ids")
    for r in got:
        want = TYPE_ROWS[r[0] - offset]
        for c, v in zip(TYPE_COLUMNS, r[1:]):
            w = want[c]
            if binary and c == "f4" and w is not None:
                w = struct.unpack("f", struct.pack("f", w))[0]  # the float4 itself, widened
            expect(v, w, "row %d column %s" % (r[0], c))


def types():
    insert_types(0, "%s")
    sync()
    check_types(0, binary=False)
    for value, text in NUMERIC_TEXTS:
        got = conn.execute("SELECT %s::numeric, (%s::numeric)::text", (value, value)).fetchone()
        expect(got[1], text, "numeric %s as text" % value)
        expect(got[0], D(text), "numeric %s" % value)
    expect(conn.execute("SELECT %s::interval::text", (INTERVAL_TEXT,)).fetchone()[0], INTERVAL_TEXT,
           "interval with months")
    expect(conn.execute("SELECT tz::text, iv::text FROM types WHERE id = 1").fetchone(),
           ("2024-03-05 08:20:30.123456+00", "3 days 04:05:06.789"), "text forms")


def binary():
    # The same rows, with binary parameters (%b) and binary results.
    insert_types(10, "%b")
    sync()
    check_types(10, binary=True)
    check_types(0, binary=True)


def jsonb():
    expect(conn.execute(JSONB_QUERY).fetchone(), JSONB_ROW, "jsonb")


def errors():
    for sql, code in ERRORS:
        expect_sqlstate(lambda: conn.execute(sql), code, sql)
    expect(conn.execute("SELECT 1").fetchall(), [(1,)], "the session after errors")


def failed_tx():
    conn.autocommit = False
    expect_sqlstate(lambda: conn.execute("SELECT * FROM no_such_table"), "42P01", "error in a block")
    expect(conn.info.transaction_status, psycopg.pq.TransactionStatus.INERROR, "transaction status")
    expect_sqlstate(lambda: conn.execute("SELECT 1"), "25P02", "statement after the error")
    conn.rollback()
    expect(conn.execute("SELECT 1").fetchall(), [(1,)], "after ROLLBACK")
    conn.rollback()
    conn.autocommit = True


def pipeline():
    with conn.pipeline() as p:
        conn.execute("INSERT INTO notes VALUES (%s, %s)", (10, "p1"))
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO notes VALUES (%s, %s)", [(11, "p2"), (12, "p3")])
        first = conn.execute("SELECT count(*) FROM notes WHERE id = %s", (-1,))
        p.sync()
        expect(first.fetchall(), [(0,)], "a SELECT inside the pipeline")
    sync()
    with conn.pipeline():
        cur = conn.execute("SELECT id, body FROM notes WHERE id >= %s ORDER BY id", (10,))
        cur2 = conn.execute("SELECT %s::int + 1", (41,))
    expect(cur.fetchall(), [(10, "p1"), (11, "p2"), (12, "p3")], "rows written in a pipeline")
    expect(cur2.fetchall(), [(42,)], "second result of a pipeline")
    # An error in a pipeline fails that batch; the connection stays usable.
    def bad():
        with conn.pipeline():
            conn.execute("INSERT INTO notes VALUES (%s, %s)", (13, "lost"))
            conn.execute("SELECT * FROM no_such_table")
    expect_sqlstate(bad, "42P01", "an error in a pipeline")
    expect(conn.execute("SELECT 1").fetchall(), [(1,)], "the session after a failed pipeline")


def copy():
    with conn.cursor() as cur:
        with cur.copy("COPY items (id, name, qty, price) FROM STDIN") as cp:
            cp.write_row((100, "tab\there, \\ and ☃", 7, D("7.70")))
            cp.write_row((101, "", 8, None))
        expect(cur.rowcount, 2, "COPY FROM rowcount")
        sync()
        with cur.copy("COPY (SELECT id, name, qty, price FROM items WHERE id >= 100 ORDER BY id) TO STDOUT (FORMAT BINARY)") as cp:
            cp.set_types(["int8", "text", "int4", "numeric"])
            rows = list(cp.rows())
        expect(rows, [(100, "tab\there, \\ and ☃", 7, D("7.70")), (101, "", 8, None)], "COPY TO (binary) rows")


def typeinfo():
    info = TypeInfo.fetch(conn, "jsonb")
    if info is None:
        raise AssertionError("TypeInfo.fetch(jsonb) found nothing")
    expect((info.name, info.oid, info.array_oid), ("jsonb", 3802, 3807), "TypeInfo jsonb")
    info = TypeInfo.fetch(conn, "text")
    expect((info.name, info.oid, info.array_oid), ("text", 25, 1009), "TypeInfo text")


runner = Runner(recover=recover)
for name, fn in [("ddl", ddl), ("dml", dml), ("read_your_writes", read_your_writes), ("commit", commit),
                 ("view", view), ("rollback", rollback), ("types", types), ("jsonb", jsonb), ("errors", errors),
                 ("failed_tx", failed_tx), ("binary", binary), ("pipeline", pipeline), ("copy", copy),
                 ("typeinfo", typeinfo)]:
    runner.step(name, fn)
conn.close()
