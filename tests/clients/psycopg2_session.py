"""psycopg2's session of the client matrix (run by TestClientPsycopg2).

psycopg2 speaks the simple query protocol and the text format only: it
interpolates parameters client-side. Its transactions are implicit (BEGIN
before the first statement; commit() and rollback()). Also: COPY through
copy_expert and a named (server-side) cursor.
"""

import io
import sys

import psycopg2
import psycopg2.extras

from session import (DDL, ERRORS, INTERVAL_TEXT, JSONB_QUERY, JSONB_ROW, NUMERIC_TEXTS, SLUICE, TYPE_COLUMNS, TYPE_ROWS, Runner,
                     StepFailed, expect, expect_sqlstate)

D = __import__("decimal").Decimal

conn = psycopg2.connect("")  # the PG* environment variables
conn.autocommit = True
psycopg2.extras.register_default_jsonb(conn)


def sync(cur):
    # Sluice: make acknowledged writes visible (see session.py).
    if SLUICE:
        cur.execute("FLUSH")


def recover():
    if not conn.autocommit:
        conn.rollback()
    conn.autocommit = True


def ddl():
    with conn.cursor() as cur:
        for stmt in DDL:
            cur.execute(stmt)


def dml():
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO items (id, name, qty, price) VALUES (%s, %s, %s, %s)",
                        [(1, "apple", 10, D("1.25")), (2, "pear", 20, D("2.50")), (3, "fig", 30, D("3.75"))])
        cur.execute("UPDATE items SET qty = qty + %s WHERE id = %s", (5, 2))
        expect(cur.rowcount, 1, "UPDATE rowcount")
        cur.execute("DELETE FROM items WHERE id = %(id)s", {"id": 3})
        expect(cur.rowcount, 1, "DELETE rowcount")
        sync(cur)
        cur.execute("SELECT id, name, qty, price FROM items WHERE id >= %s ORDER BY id", (1,))
        expect(cur.fetchall(), [(1, "apple", 10, D("1.25")), (2, "pear", 25, D("2.50"))], "items")


def read_your_writes():
    with conn.cursor() as cur:
        cur.execute("INSERT INTO notes VALUES (%s, %s)", (1, "first"))
        cur.execute("SELECT body FROM notes WHERE id = %s", (1,))
        expect(cur.fetchall(), [("first",)], "the row just inserted, without FLUSH")


def commit():
    conn.autocommit = False
    with conn.cursor() as cur:
        cur.execute("INSERT INTO items VALUES (%s, %s, %s, %s)", (4, "plum", 40, D("4.00")))
        cur.execute("INSERT INTO items VALUES (%s, %s, %s, %s)", (5, "lime", 50, D("5.00")))
        conn.commit()
    conn.autocommit = True
    with conn.cursor() as cur:
        sync(cur)
        cur.execute("SELECT id FROM items ORDER BY id")
        expect(cur.fetchall(), [(1,), (2,), (4,), (5,)], "ids after COMMIT")


def view():
    with conn.cursor() as cur:
        sync(cur)
        cur.execute("SELECT n, total_qty FROM items_summary")
        expect(cur.fetchall(), [(4, 125)], "items_summary")


def rollback():
    conn.autocommit = False
    with conn.cursor() as cur:
        cur.execute("INSERT INTO items VALUES (%s, %s, %s, %s)", (6, "date", 60, D("6.00")))
        cur.execute("UPDATE items SET qty = 0 WHERE id = %s", (1,))
        conn.rollback()
    conn.autocommit = True
    with conn.cursor() as cur:
        sync(cur)
        cur.execute("SELECT id, qty FROM items ORDER BY id")
        expect(cur.fetchall(), [(1, 10), (2, 25), (4, 40), (5, 50)], "items after ROLLBACK")


def types():
    cols = ", ".join(TYPE_COLUMNS)
    marks = ", ".join(["%s"] * (len(TYPE_COLUMNS) + 1))
    with conn.cursor() as cur:
        for id_, row in TYPE_ROWS.items():
            vals = [row[c] for c in TYPE_COLUMNS]
            vals[TYPE_COLUMNS.index("j")] = psycopg2.extras.Json(row["j"]) if row["j"] is not None else None
            cur.execute("INSERT INTO types (id, %s) VALUES (%s)" % (cols, marks), [id_] + vals)
        sync(cur)
        cur.execute("SELECT id, %s FROM types ORDER BY id" % cols)
        got = cur.fetchall()
        expect([r[0] for r in got], sorted(TYPE_ROWS), "ids")
        for r in got:
            want = TYPE_ROWS[r[0]]
            for c, v in zip(TYPE_COLUMNS, r[1:]):
                if c == "bt" and v is not None:
                    v = bytes(v)  # psycopg2 returns memoryview
                expect(v, want[c], "row %d column %s" % (r[0], c))
        # Parameters in, values out, without a table.
        for value, text in NUMERIC_TEXTS:
            cur.execute("SELECT %s::numeric, (%s::numeric)::text", (value, value))
            got = cur.fetchone()
            expect(got[1], text, "numeric %s as text" % value)
            expect(got[0], D(text), "numeric %s" % value)
        cur.execute("SELECT %s::interval::text", (INTERVAL_TEXT,))
        expect(cur.fetchone()[0], INTERVAL_TEXT, "interval with months")
        cur.execute("SELECT tz::text, iv::text FROM types WHERE id = 1")
        expect(cur.fetchone(), ("2024-03-05 08:20:30.123456+00", "3 days 04:05:06.789"), "text forms")


def jsonb():
    with conn.cursor() as cur:
        cur.execute(JSONB_QUERY)
        expect(cur.fetchone(), JSONB_ROW, "jsonb")


def errors():
    with conn.cursor() as cur:
        for sql, code in ERRORS:
            expect_sqlstate(lambda: cur.execute(sql), code, sql)
        cur.execute("SELECT 1")
        expect(cur.fetchall(), [(1,)], "the session after errors")


def failed_tx():
    conn.autocommit = False
    with conn.cursor() as cur:
        expect_sqlstate(lambda: cur.execute("SELECT * FROM no_such_table"), "42P01", "error in a block")
        expect(conn.get_transaction_status(), psycopg2.extensions.TRANSACTION_STATUS_INERROR, "transaction status")
        expect_sqlstate(lambda: cur.execute("SELECT 1"), "25P02", "statement after the error")
        conn.rollback()
        cur.execute("SELECT 1")
        expect(cur.fetchall(), [(1,)], "after ROLLBACK")
        conn.rollback()
    conn.autocommit = True


def copy():
    with conn.cursor() as cur:
        cur.copy_expert("COPY items (id, name, qty, price) FROM STDIN WITH (FORMAT csv)",
                        io.StringIO('100,"comma, quoted",7,7.70\n101,"",8,\n'))
        expect(cur.rowcount, 2, "COPY FROM rowcount")
        sync(cur)
        out = io.StringIO()
        cur.copy_expert("COPY (SELECT id, name, qty, price FROM items WHERE id >= 100 ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)", out)
        expect(out.getvalue(), 'id,name,qty,price\n100,"comma, quoted",7,7.70\n101,"",8,\n', "COPY TO output")


def named_cursor():
    conn.autocommit = False
    cur = conn.cursor("items_cursor")
    cur.itersize = 2
    cur.execute("SELECT id FROM items WHERE id <= %s ORDER BY id", (5,))
    expect(cur.fetchmany(3), [(1,), (2,), (4,)], "first FETCH")
    expect(cur.fetchall(), [(5,)], "rest")
    cur.close()
    conn.commit()
    conn.autocommit = True


runner = Runner(recover=recover)
for name, fn in [("ddl", ddl), ("dml", dml), ("read_your_writes", read_your_writes), ("commit", commit),
                 ("view", view), ("rollback", rollback), ("types", types), ("jsonb", jsonb), ("errors", errors),
                 ("failed_tx", failed_tx), ("copy", copy), ("named_cursor", named_cursor)]:
    runner.step(name, fn)
conn.close()
