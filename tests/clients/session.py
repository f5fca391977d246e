"""What the Python client sessions share: the step runner and its report.

Each session is a list of named steps. A step is a function; it passes when it
returns and fails when it raises. The runner prints one JSON line per step on
stdout ({"step": ..., "ok": ..., "error": ...}) for the Go test
(tests/clients_test.go), which knows which steps are pending on Sluice.

The scenario is the same in every client (see commonSteps in clients_test.go)
and so are the values it writes and expects back, defined here once for the
Python clients.

CLIENT_TARGET is "sluice" or "postgres". Where Sluice differs on purpose, the
scripts branch on it: a view is CREATE MATERIALIZED VIEW on Sluice (a
streaming, incrementally maintained view) and CREATE VIEW on PostgreSQL; and
on Sluice, FLUSH makes acknowledged writes visible before a step reads them
(the read_your_writes step checks the same without FLUSH).
"""

import datetime
import decimal
import json
import os
import sys
import traceback

TARGET = os.environ.get("CLIENT_TARGET", "postgres")
SLUICE = TARGET == "sluice"

# The view: materialized (streaming) on Sluice, a plain view on PostgreSQL.
VIEW_KEYWORD = "MATERIALIZED VIEW" if SLUICE else "VIEW"

DDL = [
    "CREATE TABLE items (id bigint PRIMARY KEY, name text NOT NULL, qty int, price numeric(10,2))",
    "CREATE TABLE notes (id int PRIMARY KEY, body text)",
    "CREATE TABLE types (id int PRIMARY KEY, b boolean, i2 smallint, i4 integer, i8 bigint,"
    " f4 real, f8 double precision, n numeric, t text, vc varchar(20), bt bytea, d date,"
    " tm time, ts timestamp, tz timestamptz, iv interval, j jsonb, ta text[])",
    "CREATE " + VIEW_KEYWORD + " items_summary AS SELECT count(*) AS n, sum(qty) AS total_qty FROM items",
]

TYPE_COLUMNS = ["b", "i2", "i4", "i8", "f4", "f8", "n", "t", "vc", "bt", "d", "tm", "ts", "tz", "iv", "j", "ta"]

D = decimal.Decimal
UTC = datetime.timezone.utc
PLUS2 = datetime.timezone(datetime.timedelta(hours=2))

# The rows of the types table, by id, as Python values. Row 3 is all NULL.
TYPE_ROWS = {
    1: dict(b=True, i2=-32768, i4=-2147483648, i8=-9223372036854775808, f4=1.5, f8=-2.25e10,
            n=D("-123.4500"), t="héllo wörld ☃ 𝄞 \t'q' \"dq\" \\ back", vc="varchar",
            bt=bytes(range(256)), d=datetime.date(2024, 2, 29), tm=datetime.time(13, 14, 15, 123456),
            ts=datetime.datetime(2024, 3, 5, 10, 20, 30, 123456),
            tz=datetime.datetime(2024, 3, 5, 10, 20, 30, 123456, tzinfo=PLUS2),
            iv=datetime.timedelta(days=3, hours=4, minutes=5, seconds=6, microseconds=789000),
            j={"a": 1, "b": [True, None, "x"], "c": {"d": "é"}}, ta=["a", "b c", None, 'é"\\']),
    2: dict(b=False, i2=32767, i4=2147483647, i8=9223372036854775807, f4=0.1, f8=1e300,
            n=D("12345678901234567890123456789.123456789012345678"), t="", vc="",
            bt=b"", d=datetime.date(1999, 12, 31), tm=datetime.time(0, 0, 0),
            ts=datetime.datetime(1970, 1, 1, 0, 0, 0),
            tz=datetime.datetime(2000, 1, 1, 0, 0, 0, tzinfo=UTC),
            iv=datetime.timedelta(seconds=-1), j=[1, "two", {"three": 3.5}], ta=[]),
    3: {c: None for c in TYPE_COLUMNS},
}

# Numerics whose text form changes in the round trip, as PostgreSQL prints
# them: (parameter, text PostgreSQL returns).
NUMERIC_TEXTS = [(D("1E+20"), "100000000000000000000"), (D("-0.000001"), "-0.000001"),
                 (D("0.00"), "0.00"), (D("-1.5E-10"), "-0.00000000015")]

# An interval with months, which Python's timedelta cannot hold: it goes in
# as text and its text form comes back.
INTERVAL_TEXT = "1 year 2 mons 3 days 04:05:06.789"

# The jsonb step: the text form PostgreSQL prints for row 1's j (normalized:
# keys ordered, ", " and ": " separators, non-ASCII as is, whatever the
# client sent), and operators over it.
JSONB_QUERY = "SELECT j::text, j->'c'->>'d', j @> '{\"a\": 1}', jsonb_typeof(j->'b') FROM types WHERE id = 1"
JSONB_ROW = ('{"a": 1, "b": [true, null, "x"], "c": {"d": "é"}}', "é", True, "array")

# The errors the errors step provokes: (SQL, SQLSTATE).
ERRORS = [
    ("SELECT * FROM no_such_table", "42P01"),
    ("SELECT no_such_column FROM items", "42703"),
    ("INSERT INTO items (id, name) VALUES (1, 'again')", "23505"),
    ("SELEC 1", "42601"),
    ("SELECT qty / 0 FROM items WHERE id = 1", "22012"),
]


class StepFailed(Exception):
    """A check inside a step did not hold."""


def expect(got, want, what):
    """Fails the step unless got == want (and has want's type, so that 1 is not True)."""
    if got != want or type(got) is not type(want):
        raise StepFailed("%s: got %r (%s), want %r (%s)" % (what, got, type(got).__name__, want, type(want).__name__))


def sqlstate_of(e):
    """The SQLSTATE of a driver error, whichever driver raised it."""
    for obj in (e, getattr(e, "orig", None), getattr(e, "__cause__", None)):
        if obj is None:
            continue
        for attr in ("sqlstate", "pgcode"):
            code = getattr(obj, attr, None)
            if isinstance(code, str) and code:
                return code
    return None


def describe(e):
    code = sqlstate_of(e)
    text = " ".join(str(e).split())
    if len(text) > 400:
        text = text[:400] + "…"
    prefix = "ERROR %s: " % code if code else type(e).__name__ + ": "
    return prefix + text


def expect_sqlstate(fn, code, what):
    """Runs fn and fails the step unless it raises an error with SQLSTATE code."""
    try:
        fn()
    except StepFailed:
        raise
    except Exception as e:  # the driver's error
        got = sqlstate_of(e)
        if got != code:
            raise StepFailed("%s: got %s, want SQLSTATE %s" % (what, describe(e), code))
        return
    raise StepFailed("%s: no error, want SQLSTATE %s" % (what, code))


class Runner:
    """Runs steps and reports each as a JSON line."""

    def __init__(self, recover=None):
        # recover is called after a failed step to put the session back in a
        # usable state (a rollback), so that one step's failure does not
        # cascade into the next.
        self.recover = recover

    def step(self, name, fn):
        try:
            fn()
            report(name, None)
        except Exception as e:
            if os.environ.get("CLIENT_DEBUG"):
                traceback.print_exc(file=sys.stderr)
            report(name, describe(e))
            if self.recover is not None:
                try:
                    self.recover()
                except Exception as e2:
                    print("recovering after %s: %s" % (name, describe(e2)), file=sys.stderr)


def report(name, error):
    print(json.dumps({"step": name, "ok": error is None, "error": error or ""}, ensure_ascii=False), flush=True)
