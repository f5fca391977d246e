"""SQLAlchemy's session of the client matrix: SQLAlchemy 1.4 (Debian 12's)
over psycopg2 (TestClientSQLAlchemy), and SQLAlchemy 2 over psycopg2 and
psycopg 3 (TestClientSQLAlchemy2; SQLALCHEMY_DRIVER names the driver).

SQLAlchemy's first connect asks the server about itself (version(),
current_schema(), standard_conforming_strings, the isolation level, hstore in
pg_type). Then: Core statements with bound parameters, transactions through
Connection.begin(), every type through typed Table columns, inspect()
reflection of tables, views, columns and the primary key, and an ORM
session, with begin_nested() (a SAVEPOINT) in its own step.
"""

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg
from sqlalchemy.orm import Session, declarative_base

from session import (DDL, ERRORS, INTERVAL_TEXT, JSONB_QUERY, JSONB_ROW, NUMERIC_TEXTS, SLUICE, TYPE_COLUMNS,
                     TYPE_ROWS, Runner, expect, expect_sqlstate)

D = __import__("decimal").Decimal

import os

DRIVER = os.environ.get("SQLALCHEMY_DRIVER", "psycopg2")
SA2 = sa.__version__.startswith("2.")
engine = sa.create_engine("postgresql+%s://" % DRIVER, future=True)  # the PG* environment variables
# ac runs statements outside any transaction: DDL, FLUSH, reads, errors.
ac = engine.connect().execution_options(isolation_level="AUTOCOMMIT")

meta = sa.MetaData()
items = sa.Table("items", meta, sa.Column("id", sa.BigInteger, primary_key=True), sa.Column("name", sa.Text),
                 sa.Column("qty", sa.Integer), sa.Column("price", sa.Numeric(10, 2)))
types_table = sa.Table(
    "types", meta, sa.Column("id", sa.Integer, primary_key=True), sa.Column("b", sa.Boolean),
    sa.Column("i2", sa.SmallInteger), sa.Column("i4", sa.Integer), sa.Column("i8", sa.BigInteger),
    sa.Column("f4", pg.REAL), sa.Column("f8", pg.DOUBLE_PRECISION), sa.Column("n", sa.Numeric),
    sa.Column("t", sa.Text), sa.Column("vc", sa.String(20)), sa.Column("bt", pg.BYTEA), sa.Column("d", sa.Date),
    sa.Column("tm", sa.Time), sa.Column("ts", sa.DateTime), sa.Column("tz", sa.DateTime(timezone=True)),
    sa.Column("iv", pg.INTERVAL), sa.Column("j", pg.JSONB), sa.Column("ta", pg.ARRAY(sa.Text)))


def sync():
    # Sluice: make acknowledged writes visible (see session.py).
    if SLUICE:
        ac.execute(sa.text("FLUSH"))


def q(sql, **params):
    return ac.execute(sa.text(sql), params).fetchall()


def ddl():
    for stmt in DDL:
        ac.execute(sa.text(stmt))


def dml():
    ac.execute(items.insert(), [dict(id=1, name="apple", qty=10, price=D("1.25")),
                                dict(id=2, name="pear", qty=20, price=D("2.50")),
                                dict(id=3, name="fig", qty=30, price=D("3.75"))])
    r = ac.execute(sa.text("UPDATE items SET qty = qty + :d WHERE id = :id"), dict(d=5, id=2))
    expect(r.rowcount, 1, "UPDATE rowcount")
    r = ac.execute(items.delete().where(items.c.id == 3))
    expect(r.rowcount, 1, "DELETE rowcount")
    sync()
    got = ac.execute(sa.select(items).where(items.c.id >= 1).order_by(items.c.id)).fetchall()
    expect([tuple(r) for r in got], [(1, "apple", 10, D("1.25")), (2, "pear", 25, D("2.50"))], "items")


def read_your_writes():
    ac.execute(sa.text("INSERT INTO notes VALUES (:id, :body)"), dict(id=1, body="first"))
    expect([tuple(r) for r in q("SELECT body FROM notes WHERE id = :id", id=1)], [("first",)],
           "the row just inserted, without FLUSH")


def commit():
    with engine.begin() as c:
        c.execute(items.insert(), [dict(id=4, name="plum", qty=40, price=D("4.00")),
                                   dict(id=5, name="lime", qty=50, price=D("5.00"))])
    sync()
    expect([tuple(r) for r in q("SELECT id FROM items ORDER BY id")], [(1,), (2,), (4,), (5,)], "ids after COMMIT")


def view():
    sync()
    expect([tuple(r) for r in q("SELECT n, total_qty FROM items_summary")], [(4, 125)], "items_summary")


def rollback():
    with engine.connect() as c:
        tx = c.begin()
        c.execute(items.insert(), dict(id=6, name="date", qty=60, price=D("6.00")))
        c.execute(items.update().where(items.c.id == 1).values(qty=0))
        tx.rollback()
    sync()
    expect([tuple(r) for r in q("SELECT id, qty FROM items ORDER BY id")], [(1, 10), (2, 25), (4, 40), (5, 50)],
           "items after ROLLBACK")


def types():
    ac.execute(types_table.insert(), [dict(id=i, **row) for i, row in TYPE_ROWS.items()])
    sync()
    got = ac.execute(sa.select(types_table).order_by(types_table.c.id)).fetchall()
    expect([r.id for r in got], sorted(TYPE_ROWS), "ids")
    for r in got:
        for c in TYPE_COLUMNS:
            # By name through _mapping: SQLAlchemy 2's Row.t is the row itself.
            expect(r._mapping[c], TYPE_ROWS[r.id][c], "row %d column %s" % (r.id, c))
    for value, text in NUMERIC_TEXTS:
        got = q("SELECT CAST(:v AS numeric), CAST(CAST(:v AS numeric) AS text)", v=value)[0]
        expect(got[1], text, "numeric %s as text" % value)
        expect(got[0], D(text), "numeric %s" % value)
    expect(q("SELECT CAST(CAST(:v AS interval) AS text)", v=INTERVAL_TEXT)[0][0], INTERVAL_TEXT, "interval with months")


def jsonb():
    expect(tuple(q(JSONB_QUERY.replace(":", "\\:"))[0]), JSONB_ROW, "jsonb")


def errors():
    for sql, code in ERRORS:
        expect_sqlstate(lambda: ac.execute(sa.text(sql)), code, sql)
    expect([tuple(r) for r in q("SELECT 1")], [(1,)], "the session after errors")


def failed_tx():
    with engine.connect() as c:
        tx = c.begin()
        expect_sqlstate(lambda: c.execute(sa.text("SELECT * FROM no_such_table")), "42P01", "error in a block")
        expect_sqlstate(lambda: c.execute(sa.text("SELECT 1")), "25P02", "statement after the error")
        tx.rollback()
        expect([tuple(r) for r in c.execute(sa.text("SELECT 1"))], [(1,)], "after ROLLBACK")


def reflection():
    insp = sa.inspect(engine)
    expect(sorted(insp.get_table_names()), ["items", "notes", "types"], "get_table_names")
    if SA2 and SLUICE:
        # SQLAlchemy 2 lists materialized views apart; Sluice's is one.
        expect(insp.get_view_names(), [], "get_view_names")
        expect(insp.get_materialized_view_names(), ["items_summary"], "get_materialized_view_names")
    else:
        expect(insp.get_view_names(), ["items_summary"], "get_view_names")
    cols = [(c["name"], str(c["type"]), c["nullable"], c["default"]) for c in insp.get_columns("items")]
    expect(cols, [("id", "BIGINT", False, None), ("name", "TEXT", False, None), ("qty", "INTEGER", True, None),
                  ("price", "NUMERIC(10, 2)", True, None)], "get_columns(items)")
    pk = insp.get_pk_constraint("items")
    expect((pk["constrained_columns"], pk["name"]), (["id"], "items_pkey"), "get_pk_constraint(items)")
    expect(insp.get_foreign_keys("items"), [], "get_foreign_keys(items)")
    expect(insp.get_indexes("items"), [], "get_indexes(items)")
    got = [(c["name"], c["type"].compile(dialect=engine.dialect)) for c in insp.get_columns("types")]
    expect(got, [("id", "INTEGER"), ("b", "BOOLEAN"), ("i2", "SMALLINT"), ("i4", "INTEGER"), ("i8", "BIGINT"),
                 ("f4", "REAL"), ("f8", "DOUBLE PRECISION"), ("n", "NUMERIC"), ("t", "TEXT"),
                 ("vc", "VARCHAR(20)"), ("bt", "BYTEA"), ("d", "DATE"), ("tm", "TIME WITHOUT TIME ZONE"),
                 ("ts", "TIMESTAMP WITHOUT TIME ZONE"), ("tz", "TIMESTAMP WITH TIME ZONE"), ("iv", "INTERVAL"),
                 ("j", "JSONB"), ("ta", "TEXT[]")], "get_columns(types)")
    # A Table loaded by reflection reads the rows.
    reflected = sa.Table("items", sa.MetaData(), autoload_with=engine)
    got = ac.execute(sa.select(reflected.c.name).where(reflected.c.id == 2)).fetchall()
    expect([tuple(r) for r in got], [("pear",)], "SELECT through a reflected Table")


Base = declarative_base()


class Note(Base):
    __tablename__ = "notes"
    id = sa.Column(sa.Integer, primary_key=True)
    body = sa.Column(sa.Text)


def orm():
    with Session(engine, future=True) as s:
        s.add_all([Note(id=20, body="orm one"), Note(id=21, body="orm two")])
        s.commit()
    sync()
    with Session(engine, future=True) as s:
        got = [(n.id, n.body) for n in s.query(Note).filter(Note.id >= 20).order_by(Note.id)]
        expect(got, [(20, "orm one"), (21, "orm two")], "ORM query")
        s.get(Note, 21).body = "orm changed"
        s.delete(s.get(Note, 20))
        s.commit()
    sync()
    with Session(engine, future=True) as s:
        got = [(n.id, n.body) for n in s.query(Note).filter(Note.id >= 20).order_by(Note.id)]
        expect(got, [(21, "orm changed")], "ORM query after update and delete")


def orm_savepoint():
    with Session(engine, future=True) as s:
        s.add(Note(id=30, body="outer"))
        nested = s.begin_nested()  # SAVEPOINT
        s.add(Note(id=31, body="rolled back"))
        nested.rollback()  # ROLLBACK TO SAVEPOINT
        with s.begin_nested():  # SAVEPOINT ... RELEASE SAVEPOINT
            s.add(Note(id=32, body="released"))
        s.commit()
    sync()
    with Session(engine, future=True) as s:
        got = [(n.id, n.body) for n in s.query(Note).filter(Note.id >= 30).order_by(Note.id)]
        expect(got, [(30, "outer"), (32, "released")], "rows after begin_nested()")


def recover():
    pass  # every step that opens a transaction closes it with its with-block


runner = Runner(recover=recover)
for name, fn in [("ddl", ddl), ("dml", dml), ("read_your_writes", read_your_writes), ("commit", commit),
                 ("view", view), ("rollback", rollback), ("types", types), ("jsonb", jsonb), ("errors", errors),
                 ("failed_tx", failed_tx), ("reflection", reflection), ("orm", orm),
                 ("orm_savepoint", orm_savepoint)]:
    runner.step(name, fn)
ac.close()
engine.dispose()
