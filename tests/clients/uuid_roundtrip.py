"""uuid through psycopg 3 and psycopg2 (tests/uuid_test.go): values come
back as uuid.UUID, parameters go in as uuid.UUID (text and binary), binary
COPY in and out. Prints one line per check; the Go test compares the output
from Sluice with the output from PostgreSQL."""
import sys
import uuid

import psycopg
import psycopg2
import psycopg2.extras

dsn, table = sys.argv[1], sys.argv[2]
U = [uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), uuid.UUID("00000000-0000-0000-0000-000000000001"),
     uuid.UUID("ffffffff-0000-0000-0000-000000000000")]

with psycopg.connect(dsn, autocommit=True) as c:
    c.execute(f"CREATE TABLE {table} (id uuid PRIMARY KEY, n int)")
    c.execute(f"INSERT INTO {table} VALUES (%s, 1)", (U[0],))
    c.execute(f"INSERT INTO {table} VALUES (%b, 2)", (U[1],))  # binary parameter
    with c.cursor().copy(f"COPY {table} (id, n) FROM STDIN (FORMAT BINARY)") as cp:
        cp.set_types(["uuid", "int4"])
        cp.write_row((U[2], 3))
    for binary in (False, True):
        rows = c.cursor(binary=binary).execute(f"SELECT id, n FROM {table} ORDER BY id").fetchall()
        print("psycopg3 binary=%s" % binary, [(type(r[0]).__name__, str(r[0]), r[1]) for r in rows])
    out = []
    with c.cursor().copy(f"COPY (SELECT id FROM {table} ORDER BY id) TO STDOUT (FORMAT BINARY)") as cp:
        cp.set_types(["uuid"])
        for row in cp.rows():
            out.append(str(row[0]))
    print("psycopg3 copy out binary", out)
    r = c.execute(f"SELECT n FROM {table} WHERE id = %b", (U[2],)).fetchone()
    print("psycopg3 where binary", r)
    info = psycopg.types.TypeInfo.fetch(c, "uuid")
    print("psycopg3 typeinfo", info.oid, info.array_oid)

c2 = psycopg2.connect(dsn)
c2.autocommit = True
psycopg2.extras.register_uuid()
cur = c2.cursor()
cur.execute(f"SELECT id FROM {table} WHERE id = %s", (U[0],))
r = cur.fetchone()
print("psycopg2", type(r[0]).__name__, r[0])
cur.execute(f"SELECT id::text FROM {table} WHERE n = 3")
print("psycopg2 text", cur.fetchone()[0])
c2.close()

# SQLAlchemy (1.4, psycopg2 dialect) reflects the column as UUID.
import sqlalchemy as sa

engine = sa.create_engine("postgresql+psycopg2://", creator=lambda: psycopg2.connect(dsn))
print("sqlalchemy", [(c["name"], repr(c["type"])) for c in sa.inspect(engine).get_columns(table)])
tbl = sa.Table(table, sa.MetaData(), sa.Column("id", sa.dialects.postgresql.UUID(as_uuid=True)), sa.Column("n", sa.Integer))
with engine.connect() as c:
    print("sqlalchemy rows", [(type(r[0]).__name__, str(r[0]), r[1]) for r in c.execute(sa.select(tbl).order_by(tbl.c.id))])
engine.dispose()
