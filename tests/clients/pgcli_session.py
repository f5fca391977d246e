"""pgcli's session of the client matrix (run by TestClientPgcli).

pgcli (over psycopg 3) fills its completer in the background with one
"refresher" per kind of object; a refresher whose catalog query fails leaves
the completer empty and logs an error the user never sees. This session
connects the way pgcli does (PGExecute), creates a table and a view, runs
every refresher synchronously (a step each: each must succeed), checks that
the completer then offers the table, its columns and the view, and runs a few
of pgcli's special commands (pgspecial's \\d, \\dt, \\dv, \\df).
"""

import os

from pgcli.completion_refresher import CompletionRefresher
from pgcli.pgcompleter import PGCompleter
from pgcli.pgexecute import PGExecute
from pgspecial.main import PGSpecial
from prompt_toolkit.document import Document

from session import SLUICE, Runner, expect

special = PGSpecial()
executor = PGExecute(database=os.environ["PGDATABASE"], user=os.environ["PGUSER"], password=None,
                     host=os.environ["PGHOST"], port=os.environ["PGPORT"])
completer = PGCompleter(smart_completion=True, pgspecial=special, settings={})


def run(sql):
    """Runs sql as pgcli does, raising on an error; returns its results."""
    return [r for r in executor.run(sql, pgspecial=special)]


def ddl():
    run("CREATE TABLE items (id bigint PRIMARY KEY, name text NOT NULL, qty int)")
    # Sluice's views are materialized (streaming); PostgreSQL's plain.
    run("CREATE %s items_summary AS SELECT count(*) AS n, sum(qty) AS total_qty FROM items"
        % ("MATERIALIZED VIEW" if SLUICE else "VIEW"))


def refresher_step(fn):
    return lambda: fn(completer, executor)


def completions():
    def offered(text, pos):
        return sorted(c.text for c in completer.get_completions(Document(text=text, cursor_position=pos), None))
    got = offered("SELECT * FROM ite", 17)
    if "items" not in got or "items_summary" not in got:
        raise AssertionError("completions for 'SELECT * FROM ite': %r" % got)
    got = offered("SELECT  FROM items", 7)
    for col in ("id", "name", "qty"):
        if col not in got:
            raise AssertionError("column %s not offered after SELECT ... FROM items: %r" % (col, got[:20]))


def describe():
    title, rows, headers, status, *_ = run("\\d items")[0]
    expect([tuple(r[:2]) for r in rows], [("id", "bigint"), ("name", "text"), ("qty", "integer")], "\\d items columns")
    (_, rows, _, _, *_), = run("\\dt")
    expect([r[1] for r in rows], ["items"], "\\dt names")
    (_, rows, _, _, *_), = run("\\dm" if SLUICE else "\\dv")
    expect([r[1] for r in rows], ["items_summary"], "\\dm/\\dv names")


def functions_list():
    (_, rows, _, _, *_), = run("\\df")
    expect(list(rows or []), [], "\\df in a database without functions")


runner = Runner()
runner.step("connect", lambda: executor.run("SELECT 1"))
runner.step("ddl", ddl)
for name, fn in CompletionRefresher.refreshers.items():
    if name == "casing":
        continue  # reads a local file, no query
    runner.step("refresh_" + name, refresher_step(fn))
runner.step("completions", completions)
runner.step("describe", describe)
runner.step("df", functions_list)
