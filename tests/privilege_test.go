package tests

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Privileges over the wire, against a real sluice process: the superuser
// "sluice" and the ordinary roles alice, bob and carol. Every check gives
// 42501 before GRANT and works after; REVOKE takes it away again; grants
// and owners survive a restart.

// createRole makes role name exist: CREATE ROLE name LOGIN as the
// superuser conn (no password: the test server runs in trust mode).
func createRole(t *testing.T, conn *pgx.Conn, name string) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), "CREATE ROLE "+pgx.Identifier{name}.Sanitize()+" LOGIN"); err != nil {
		t.Fatalf("CREATE ROLE %s: %v", name, err)
	}
}

// connectAs connects to srv as user.
func connectAs(t *testing.T, srv *Server, user string) *pgx.Conn {
	t.Helper()
	return MustConnect(t, "postgres://"+user+"@"+srv.Addr+"/sluice?sslmode=disable&connect_timeout=5")
}

// privErr runs sql and returns its error (nil on success).
func privErr(conn *pgx.Conn, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := QueryText(ctx, conn, sql)
	return err
}

// denied fails unless sql fails with 42501 and message msg.
func denied(t *testing.T, conn *pgx.Conn, sql, msg string) {
	t.Helper()
	err := privErr(conn, sql)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" || pe.Message != msg {
		t.Fatalf("%s: want 42501 %q, got %v", sql, msg, err)
	}
}

// allowed fails unless sql succeeds.
func allowed(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	if err := privErr(conn, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// rowsOf returns the rows of sql, one line each.
func rowsOf(t *testing.T, conn *pgx.Conn, sql string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := QueryText(ctx, conn, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return strings.Join(res.Lines(), "\n")
}

func wantRows(t *testing.T, conn *pgx.Conn, sql, want string) {
	t.Helper()
	if got := rowsOf(t, conn, sql); got != want {
		t.Fatalf("%s:\ngot  %q\nwant %q", sql, got, want)
	}
}

func TestPrivileges(t *testing.T) {
	srv := StartServer(t, Options{})
	su := srv.Connect(t)
	for _, r := range []string{"alice", "bob", "carol"} {
		createRole(t, su, r)
	}
	ExecAll(t, su,
		`CREATE TABLE t (id INT PRIMARY KEY, v TEXT)`,
		`INSERT INTO t VALUES (1, 'a'), (2, 'b')`,
		`CREATE TABLE u (id INT PRIMARY KEY)`,
		`INSERT INTO u VALUES (1)`,
	)
	alice := connectAs(t, srv, "alice")
	bob := connectAs(t, srv, "bob")
	ctx := context.Background()

	t.Run("select", func(t *testing.T) {
		denied(t, alice, `SELECT * FROM t`, "permission denied for table t")
		denied(t, alice, `SELECT (SELECT count(*) FROM t)`, "permission denied for table t")
		denied(t, alice, `SELECT 1 WHERE EXISTS (SELECT 1 FROM t)`, "permission denied for table t")
		denied(t, alice, `WITH x AS (SELECT * FROM t) SELECT count(*) FROM x`, "permission denied for table t")
		allowed(t, su, `GRANT SELECT ON t TO alice`)
		wantRows(t, alice, `SELECT id, v FROM t ORDER BY id`, "1 a\n2 b")
		allowed(t, su, `REVOKE SELECT ON t FROM alice`)
		denied(t, alice, `SELECT * FROM t`, "permission denied for table t")
		// A cursor reads like SELECT.
		tx, err := alice.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tx.Exec(ctx, `DECLARE c CURSOR FOR SELECT * FROM t`)
		if PgCode(err) != "42501" {
			t.Fatalf("DECLARE CURSOR without SELECT: want 42501, got %v", err)
		}
		_ = tx.Rollback(ctx)
	})

	t.Run("dml", func(t *testing.T) {
		denied(t, alice, `INSERT INTO t VALUES (3, 'c')`, "permission denied for table t")
		allowed(t, su, `GRANT INSERT ON t TO alice`)
		allowed(t, alice, `INSERT INTO t VALUES (3, 'c')`)
		// INSERT ... SELECT needs SELECT on what it reads; RETURNING needs SELECT on the target.
		denied(t, alice, `INSERT INTO t SELECT id + 10, 'x' FROM u`, "permission denied for table u")
		denied(t, alice, `INSERT INTO t VALUES (4, 'd') RETURNING id`, "permission denied for table t")
		allowed(t, su, `GRANT SELECT ON u TO alice`)
		allowed(t, alice, `INSERT INTO t SELECT id + 10, 'x' FROM u`)

		denied(t, alice, `UPDATE t SET v = 'z'`, "permission denied for table t")
		allowed(t, su, `GRANT UPDATE, DELETE ON t TO alice`)
		allowed(t, alice, `UPDATE t SET v = 'z'`)
		allowed(t, alice, `DELETE FROM t`)
		// With WHERE, UPDATE and DELETE read the rows: SELECT too, as in PostgreSQL.
		denied(t, alice, `UPDATE t SET v = 'y' WHERE id = 1`, "permission denied for table t")
		denied(t, alice, `DELETE FROM t WHERE id = 1`, "permission denied for table t")
		allowed(t, su, `GRANT SELECT ON t TO alice`)
		allowed(t, alice, `UPDATE t SET v = 'y' WHERE id = 1`)
		allowed(t, alice, `DELETE FROM t WHERE id = 1`)

		denied(t, alice, `TRUNCATE t`, "permission denied for table t")
		allowed(t, su, `GRANT TRUNCATE ON t TO alice`)
		allowed(t, alice, `TRUNCATE t`)
		allowed(t, su, `REVOKE ALL ON t FROM alice`)
		denied(t, alice, `INSERT INTO t VALUES (5, 'e')`, "permission denied for table t")
		denied(t, alice, `TRUNCATE t`, "permission denied for table t")
		allowed(t, su, `INSERT INTO t VALUES (1, 'a'), (2, 'b')`)
	})

	t.Run("copy", func(t *testing.T) {
		copyIn := func() error {
			_, err := alice.CopyFrom(ctx, pgx.Identifier{"t"}, []string{"id", "v"}, pgx.CopyFromRows([][]any{{int32(7), "g"}}))
			return err
		}
		copyOut := func() (string, error) {
			var b strings.Builder
			_, err := alice.PgConn().CopyTo(ctx, &b, `COPY t TO STDOUT`)
			return b.String(), err
		}
		if err := copyIn(); PgCode(err) != "42501" {
			t.Fatalf("COPY FROM without INSERT: want 42501, got %v", err)
		}
		if _, err := copyOut(); PgCode(err) != "42501" {
			t.Fatalf("COPY TO without SELECT: want 42501, got %v", err)
		}
		allowed(t, su, `GRANT INSERT, SELECT ON t TO alice`)
		if err := copyIn(); err != nil {
			t.Fatal(err)
		}
		out, err := copyOut()
		if err != nil || !strings.Contains(out, "7\tg\n") {
			t.Fatalf("COPY TO: %q, %v", out, err)
		}
		allowed(t, su, `REVOKE INSERT, SELECT ON t FROM alice`)
		if err := copyIn(); PgCode(err) != "42501" {
			t.Fatalf("COPY FROM after REVOKE: want 42501, got %v", err)
		}
	})

	t.Run("create in schema", func(t *testing.T) {
		// As PostgreSQL 15: schema public grants CREATE only to its owner.
		denied(t, alice, `CREATE TABLE a (id INT PRIMARY KEY, s TEXT)`, "permission denied for schema public")
		denied(t, alice, `CREATE SCHEMA mine`, "permission denied for database sluice")
		wantRows(t, su, `SELECT nspacl FROM pg_namespace WHERE nspname = 'public'`, "{sluice=UC/sluice,=U/sluice}")
		allowed(t, su, `GRANT CREATE ON SCHEMA public TO alice, bob`)
		allowed(t, alice, `CREATE TABLE a (id INT PRIMARY KEY, s TEXT)`)
		allowed(t, alice, `INSERT INTO a VALUES (1, 'x'), (2, 'y')`)
		wantRows(t, su, `SELECT relname, pg_get_userbyid(relowner), relacl FROM pg_class WHERE relname = 'a'`, "a alice NULL")
		// A schema of its own: USAGE to look inside, CREATE to add to it.
		allowed(t, su, `CREATE SCHEMA s`)
		allowed(t, su, `CREATE TABLE s.st (id INT PRIMARY KEY)`)
		allowed(t, su, `GRANT SELECT ON s.st TO alice`)
		denied(t, alice, `SELECT * FROM s.st`, "permission denied for schema s")
		denied(t, alice, `CREATE TABLE s.x (id INT)`, "permission denied for schema s")
		allowed(t, su, `GRANT USAGE ON SCHEMA s TO alice`)
		allowed(t, alice, `SELECT * FROM s.st`)
		wantRows(t, su, `SELECT has_schema_privilege('alice', 's', 'USAGE'), has_schema_privilege('alice', 's', 'CREATE')`, "t f")
	})

	t.Run("sequences", func(t *testing.T) {
		allowed(t, su, `CREATE SEQUENCE sq`)
		denied(t, alice, `SELECT nextval('sq')`, "permission denied for sequence sq")
		allowed(t, su, `GRANT USAGE ON SEQUENCE sq TO alice`)
		wantRows(t, alice, `SELECT nextval('sq')`, "1")
		denied(t, alice, `SELECT setval('sq', 10)`, "permission denied for sequence sq")
		allowed(t, su, `REVOKE USAGE ON SEQUENCE sq FROM alice`)
		denied(t, alice, `SELECT nextval('sq')`, "permission denied for sequence sq")
		if err := privErr(su, `GRANT SELECT ON SEQUENCE t TO alice`); PgCode(err) != "42809" {
			t.Fatalf("ON SEQUENCE of a table: want 42809, got %v", err)
		}
		// A serial column's sequence follows INSERT on its table.
		allowed(t, su, `CREATE TABLE ser (id SERIAL PRIMARY KEY, v TEXT)`)
		allowed(t, su, `GRANT INSERT, SELECT ON ser TO alice`)
		allowed(t, alice, `INSERT INTO ser (v) VALUES ('x')`)
		wantRows(t, alice, `SELECT id, v FROM ser`, "1 x")
	})

	t.Run("owner", func(t *testing.T) {
		denied(t, bob, `DROP TABLE a`, "must be owner of table a")
		denied(t, bob, `ALTER TABLE a ADD COLUMN z INT`, "must be owner of table a")
		denied(t, bob, `ALTER TABLE a RENAME TO b`, "must be owner of table a")
		denied(t, bob, `CREATE INDEX a_s ON a (s)`, "must be owner of table a")
		denied(t, bob, `DROP TABLE t`, "must be owner of table t")
		denied(t, alice, `DROP SCHEMA s`, "must be owner of schema s")
		allowed(t, alice, `CREATE INDEX a_s ON a (s)`)
		denied(t, bob, `DROP INDEX a_s`, "must be owner of index a_s")
		allowed(t, alice, `CREATE VIEW av AS SELECT id FROM a`)
		denied(t, bob, `DROP VIEW av`, "must be owner of view av")
	})

	t.Run("owner to", func(t *testing.T) {
		allowed(t, alice, `CREATE TABLE gift (id SERIAL PRIMARY KEY)`)
		allowed(t, alice, `GRANT SELECT ON gift TO carol`)
		denied(t, bob, `ALTER TABLE gift OWNER TO bob`, "must be owner of table gift")
		denied(t, alice, `ALTER TABLE gift OWNER TO bob`, `must be member of role "bob"`)
		allowed(t, su, `ALTER TABLE gift OWNER TO bob`)
		wantRows(t, su, `SELECT relname, pg_get_userbyid(relowner), relacl FROM pg_class WHERE relname LIKE 'gift%' ORDER BY relname`,
			"gift bob {bob=arwdDxt/bob,carol=r/bob}\ngift_id_seq bob NULL\ngift_pkey bob NULL")
		denied(t, alice, `INSERT INTO gift DEFAULT VALUES`, "permission denied for table gift")
		allowed(t, bob, `INSERT INTO gift DEFAULT VALUES`)
		allowed(t, bob, `DROP TABLE gift`)
	})

	t.Run("view with the owner's rights", func(t *testing.T) {
		// alice's view over alice's table: bob reads it with SELECT on the view alone.
		denied(t, bob, `SELECT * FROM av`, "permission denied for view av")
		allowed(t, alice, `GRANT SELECT ON av TO bob`)
		wantRows(t, bob, `SELECT id FROM av ORDER BY id`, "1\n2")
		denied(t, bob, `SELECT * FROM a`, "permission denied for table a")
		// A view over a table its owner may not read gives nothing away.
		allowed(t, bob, `CREATE VIEW bv AS SELECT * FROM t`)
		allowed(t, bob, `GRANT SELECT ON bv TO alice`)
		denied(t, alice, `SELECT * FROM bv`, "permission denied for table t")
		// A materialized view's owner needs SELECT on what it reads.
		denied(t, bob, `CREATE MATERIALIZED VIEW bmv AS SELECT count(*) FROM t`, "permission denied for table t")
		allowed(t, su, `GRANT SELECT ON t TO bob`)
		allowed(t, bob, `CREATE MATERIALIZED VIEW bmv AS SELECT count(*) AS n FROM t`)
		denied(t, alice, `SELECT * FROM bmv`, "permission denied for materialized view bmv")
	})

	t.Run("public", func(t *testing.T) {
		carol := connectAs(t, srv, "carol")
		denied(t, carol, `SELECT * FROM u`, "permission denied for table u")
		allowed(t, su, `GRANT SELECT ON u TO PUBLIC`)
		wantRows(t, carol, `SELECT id FROM u`, "1")
		wantRows(t, su, `SELECT relacl FROM pg_class WHERE relname = 'u'`, "{sluice=arwdDxt/sluice,alice=r/sluice,=r/sluice}")
		allowed(t, su, `REVOKE SELECT ON u FROM PUBLIC`)
		denied(t, carol, `SELECT * FROM u`, "permission denied for table u")
		if err := privErr(su, `GRANT SELECT ON u TO PUBLIC WITH GRANT OPTION`); PgCode(err) != "0LP01" {
			t.Fatalf("grant option to PUBLIC: want 0LP01, got %v", err)
		}
	})

	t.Run("grant option", func(t *testing.T) {
		carol := connectAs(t, srv, "carol")
		// bob holds SELECT on t without the grant option: a warning, nothing granted.
		var notices []string
		cfg, err := pgx.ParseConfig("postgres://bob@" + srv.Addr + "/sluice?sslmode=disable")
		if err != nil {
			t.Fatal(err)
		}
		cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n.Code+" "+n.Message) }
		bobN, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer bobN.Close(ctx)
		allowed(t, bobN, `GRANT SELECT ON t TO carol`)
		if len(notices) != 1 || notices[0] != `01007 no privileges were granted for "t"` {
			t.Fatalf("notices: %q", notices)
		}
		denied(t, carol, `SELECT * FROM t`, "permission denied for table t")
		// carol holds nothing on t: granting is refused.
		denied(t, carol, `GRANT SELECT ON t TO bob`, "permission denied for table t")
		// With the grant option bob passes it on; revoking it from bob needs CASCADE.
		allowed(t, su, `GRANT SELECT ON t TO bob WITH GRANT OPTION`)
		allowed(t, bob, `GRANT SELECT ON t TO carol`)
		wantRows(t, carol, `SELECT count(*) FROM t`, "3")
		wantRows(t, su, `SELECT relacl FROM pg_class WHERE relname = 't'`, "{sluice=arwdDxt/sluice,bob=r*/sluice,carol=r/bob}")
		if err := privErr(su, `REVOKE SELECT ON t FROM bob`); PgCode(err) != "2BP01" {
			t.Fatalf("REVOKE with dependent grants: want 2BP01, got %v", err)
		}
		allowed(t, su, `REVOKE GRANT OPTION FOR SELECT ON t FROM bob CASCADE`)
		wantRows(t, su, `SELECT relacl FROM pg_class WHERE relname = 't'`, "{sluice=arwdDxt/sluice,bob=r/sluice}")
		denied(t, carol, `SELECT * FROM t`, "permission denied for table t")
		wantRows(t, bob, `SELECT count(*) FROM t`, "3")
	})

	t.Run("transaction", func(t *testing.T) {
		// GRANT in a block takes effect at COMMIT, and not at all after ROLLBACK.
		tx, err := su.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `GRANT SELECT ON u TO carol`); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		carol := connectAs(t, srv, "carol")
		denied(t, carol, `SELECT * FROM u`, "permission denied for table u")
		tx, err = su.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `GRANT SELECT ON u TO carol`); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		wantRows(t, carol, `SELECT id FROM u`, "1")
		allowed(t, su, `REVOKE SELECT ON u FROM carol`)
		// A migration creates a table and grants on it in one block.
		tx, err = su.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, sql := range []string{`CREATE TABLE mig (id INT PRIMARY KEY)`, `GRANT SELECT ON mig TO carol`} {
			if _, err := tx.Exec(ctx, sql); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		wantRows(t, carol, `SELECT count(*) FROM mig`, "0")
	})

	t.Run("system views", func(t *testing.T) {
		wantRows(t, su, `SELECT grantor, grantee, privilege_type, is_grantable FROM information_schema.table_privileges
			WHERE table_name = 'av' ORDER BY grantee, privilege_type`,
			"alice alice DELETE YES\nalice alice INSERT YES\nalice alice REFERENCES YES\nalice alice SELECT YES\n"+
				"alice alice TRIGGER YES\nalice alice TRUNCATE YES\nalice alice UPDATE YES\nalice bob SELECT NO")
		wantRows(t, bob, `SELECT has_table_privilege('t', 'SELECT'), has_table_privilege('t', 'INSERT'),
			has_table_privilege('alice', 'a', 'INSERT'), has_table_privilege('bob', 'av', 'select')`, "t f t t")
		if err := privErr(su, `SELECT has_table_privilege('t', 'FLY')`); PgCode(err) != "22023" {
			t.Fatalf("unknown privilege: want 22023, got %v", err)
		}
	})

	t.Run("connectors need a superuser", func(t *testing.T) {
		denied(t, alice, `CREATE SOURCE k (a INT) WITH (connector = 'kafka', topic = 'x', properties.bootstrap.server = '127.0.0.1:1') FORMAT PLAIN ENCODE JSON`,
			"must be superuser to create a kafka source")
		denied(t, alice, `CREATE SINK f FROM a WITH (connector = 'file', path = '/tmp/x')`, "must be superuser to create a file sink")
		denied(t, alice, `CREATE SOURCE so (a INT) WITH (connector = 'socket', port = '9999')`, "must be superuser to create a socket source")
		denied(t, alice, `CREATE SECRET alice_pw AS 'x'`, "must be superuser to create secrets")
		allowed(t, su, `CREATE SECRET su_pw AS 'x'`)
		denied(t, alice, `ALTER SECRET su_pw AS 'y'`, "must be superuser to alter secrets")
		denied(t, alice, `DROP SECRET su_pw`, "must be superuser to drop secrets")
		allowed(t, su, `DROP SECRET su_pw`)
		allowed(t, alice, `CREATE SOURCE g (id BIGINT) WITH (connector = 'datagen', fields.id.kind = 'sequence', datagen.rows.per.second = '1')`)
		allowed(t, alice, `CREATE SINK bh FROM a WITH (connector = 'blackhole')`)
		denied(t, bob, `DROP SINK bh`, "must be owner of sink bh")
		// A sink and a materialized view read with their owner's rights.
		denied(t, alice, `CREATE SINK bt FROM t WITH (connector = 'blackhole')`, "permission denied for table t")
		allowed(t, su, `CREATE SOURCE gs (id BIGINT) WITH (connector = 'datagen', fields.id.kind = 'sequence', datagen.rows.per.second = '1')`)
		denied(t, alice, `CREATE MATERIALIZED VIEW gsv AS SELECT count(*) AS n FROM gs`, "permission denied for source gs")
		allowed(t, su, `GRANT SELECT ON gs TO alice`)
		allowed(t, alice, `CREATE MATERIALIZED VIEW gsv AS SELECT count(*) AS n FROM gs`)
		denied(t, bob, `DROP SOURCE g`, "must be owner of source g")
	})

	t.Run("connection errors to the owner only", func(t *testing.T) {
		// A sink whose PostgreSQL is unreachable: its owner (and any
		// superuser) sees why in SHOW SINKS; another role sees NULL.
		allowed(t, su, `CREATE SINK down FROM u WITH (connector = 'postgres', url = 'postgres://nobody@127.0.0.1:1/x', table = 'x', primary_key = 'id')`)
		lastErr := func(conn *pgx.Conn) *string {
			var e *string
			rows, err := conn.Query(ctx, `SHOW SINKS`, pgx.QueryExecModeSimpleProtocol)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				vals, err := rows.Values()
				if err != nil {
					t.Fatal(err)
				}
				if vals[0] == "down" {
					if v, ok := vals[len(vals)-1].(string); ok {
						e = &v
					}
				}
			}
			return e
		}
		deadline := time.Now().Add(30 * time.Second)
		for e := lastErr(su); e == nil || *e == ""; e = lastErr(su) {
			if time.Now().After(deadline) {
				t.Fatal("the unreachable sink reported no error to its owner in 30 s")
			}
			time.Sleep(200 * time.Millisecond)
		}
		if e := lastErr(alice); e != nil {
			t.Fatalf("alice (not the owner) sees the sink's error: %q", *e)
		}
		allowed(t, su, `DROP SINK down`)
	})

	t.Run("unsupported forms", func(t *testing.T) {
		for _, sql := range []string{
			`GRANT SELECT (id) ON t TO alice`,
			`GRANT EXECUTE ON FUNCTION f() TO alice`,
			`GRANT CONNECT ON DATABASE sluice TO alice`,
			`GRANT SELECT ON t TO alice GRANTED BY sluice`,
			`GRANT alice TO bob`,
			`GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO alice`,
		} {
			if err := privErr(su, sql); PgCode(err) != "0A000" {
				t.Errorf("%s: want 0A000, got %v", sql, err)
			}
		}
		if err := privErr(su, `GRANT USAGE ON t TO alice`); PgCode(err) != "0LP01" {
			t.Errorf("USAGE on a table: want 0LP01, got %v", err)
		}
		if err := privErr(su, `GRANT SELECT ON nosuch TO alice`); PgCode(err) != "42P01" {
			t.Errorf("unknown table: want 42P01, got %v", err)
		}
	})

	t.Run("psycopg", func(t *testing.T) {
		// Python's drivers see PostgreSQL's error class and SQLSTATE.
		script := `
import sys, psycopg2, psycopg
for mod in (psycopg2, psycopg):
    conn = mod.connect(sys.argv[1])
    conn.autocommit = True
    try:
        cur = conn.cursor()
        cur.execute("SELECT count(*) FROM u")
        print(mod.__name__, "ok", cur.fetchone()[0])
    except mod.Error as e:
        code = e.pgcode if mod is psycopg2 else e.sqlstate
        print(mod.__name__, type(e).__name__, code, str(e).splitlines()[0])
    conn.close()
`
		run := func() string {
			dsn := "host=" + srv.Host() + " port=" + srv.Port() + " user=dave dbname=sluice sslmode=disable"
			out, err := exec.Command(debianPython, "-c", script, dsn).CombinedOutput()
			if err != nil {
				t.Fatalf("python: %v\n%s", err, out)
			}
			return string(out)
		}
		createRole(t, su, "dave")
		want := "psycopg2 InsufficientPrivilege 42501 permission denied for table u\n" +
			"psycopg InsufficientPrivilege 42501 permission denied for table u\n"
		if got := run(); got != want {
			t.Fatalf("before GRANT:\ngot  %q\nwant %q", got, want)
		}
		allowed(t, su, `GRANT SELECT ON u TO dave`)
		if got, want := run(), "psycopg2 ok 1\npsycopg ok 1\n"; got != want {
			t.Fatalf("after GRANT:\ngot  %q\nwant %q", got, want)
		}
	})

	t.Run("psql dp", func(t *testing.T) {
		psql, err := exec.LookPath("psql")
		if err != nil {
			t.Skip("psql is not installed")
		}
		out, err := exec.Command(psql, "-X", "-At", "-h", srv.Host(), "-p", srv.Port(), "-U", "sluice", "-d", "sluice", "-c", `\dp av`).CombinedOutput()
		if err != nil {
			t.Fatalf("psql: %v\n%s", err, out)
		}
		if want := "public|av|view|alice=arwdDxt/alice\nbob=r/alice||\n"; string(out) != want {
			t.Fatalf(`\dp av: got %q, want %q`, out, want)
		}
	})

	// An owner may revoke its own privileges (and grant them back).
	allowed(t, alice, `CREATE TABLE own (id INT PRIMARY KEY)`)
	allowed(t, alice, `REVOKE ALL ON own FROM alice`)
	denied(t, alice, `SELECT * FROM own`, "permission denied for table own")

	// Owners and grants are catalog state: they survive a restart.
	for _, c := range []*pgx.Conn{su, alice, bob} {
		c.Close(ctx)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	su, alice, bob = srv.Connect(t), connectAs(t, srv, "alice"), connectAs(t, srv, "bob")
	wantRows(t, su, `SELECT relname, pg_get_userbyid(relowner), relacl FROM pg_class WHERE relname IN ('av', 't') ORDER BY relname`,
		"av alice {alice=arwdDxt/alice,bob=r/alice}\nt sluice {sluice=arwdDxt/sluice,bob=r/sluice}")
	wantRows(t, bob, `SELECT id FROM av ORDER BY id`, "1\n2")
	denied(t, alice, `SELECT * FROM t`, "permission denied for table t")
	denied(t, bob, `DROP TABLE a`, "must be owner of table a")
	allowed(t, alice, `DROP TABLE a CASCADE`)
	wantRows(t, su, `SELECT relacl FROM pg_class WHERE relname = 'own'`, "{}")
	denied(t, alice, `SELECT * FROM own`, "permission denied for table own")
	allowed(t, alice, `GRANT SELECT ON own TO alice`)
	allowed(t, alice, `SELECT * FROM own`)
}

// BenchmarkPrivilegeCheck measures a point SELECT through a view as the
// superuser (no checks) and as alice (SELECT on the view, the view
// owner's SELECT on the table): the cost of the checks per statement.
//
//	go test ./tests/ -run '^$' -bench BenchmarkPrivilegeCheck -benchtime 3000x
func BenchmarkPrivilegeCheck(b *testing.B) {
	srv := StartServer(b, Options{})
	su := srv.Connect(b)
	ExecAll(b, su,
		`CREATE TABLE bt (id INT PRIMARY KEY, v TEXT)`,
		`INSERT INTO bt VALUES (1, 'a')`,
		`CREATE VIEW bv AS SELECT id, v FROM bt`,
		`GRANT SELECT ON bv TO alice`,
	)
	alice := MustConnect(b, "postgres://alice@"+srv.Addr+"/sluice?sslmode=disable")
	for _, c := range []struct {
		name string
		conn *pgx.Conn
	}{{"superuser", su}, {"alice", alice}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			for i := 0; i < b.N; i++ {
				var v string
				if err := c.conn.QueryRow(ctx, `SELECT v FROM bv WHERE id = 1`).Scan(&v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
