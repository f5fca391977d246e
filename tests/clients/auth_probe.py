"""Connects with psycopg 3 and psycopg2 (auth_test.go) and prints, per driver,
"<driver> ok <current_user> <ssl>" or "<driver> err <SQLSTATE or None> <message>". Argument: a libpq DSN."""
import sys

dsn = sys.argv[1]
try:
    import psycopg
    try:
        with psycopg.connect(dsn, connect_timeout=10) as c:
            u = c.execute("SELECT current_user").fetchone()[0]
            print("psycopg ok", u, "ssl" if c.pgconn.ssl_in_use else "plain")
    except psycopg.Error as e:
        print("psycopg err", e.sqlstate, " ".join(str(e).split()))
except ImportError:
    print("psycopg missing")
try:
    import psycopg2
    try:
        c = psycopg2.connect(dsn, connect_timeout=10)
        cur = c.cursor()
        cur.execute("SELECT current_user")
        print("psycopg2 ok", cur.fetchone()[0], "ssl" if c.info.ssl_in_use else "plain")
        c.close()
    except psycopg2.Error as e:
        print("psycopg2 err", e.pgcode, " ".join(str(e).split()))
except ImportError:
    print("psycopg2 missing")
