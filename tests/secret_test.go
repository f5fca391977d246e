package tests

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestSecretsAndRedaction: CREATE SECRET values are sealed outside the
// catalog's plain text, survive a restart and still feed a postgres sink;
// SHOW SECRETS lists names only; a secret in use cannot be dropped
// (2BP01). Passwords inside connector options (a URL's userinfo, a
// password option, a secret's value) appear in none of SHOW CREATE, SHOW
// SINKS, SHOW SOURCES, any system relation, errors (also of a failing
// connection) or the server's log.
func TestSecretsAndRedaction(t *testing.T) {
	pgURL := FreshPostgresDB(t, "sluice_secret_test")
	withPw := func(url, pw string) string {
		return strings.Replace(url, "postgres://postgres@", "postgres://postgres:"+pw+"@", 1)
	}
	// The machine's PostgreSQL trusts loopback connections, so any
	// password logs in: the sinks work while carrying one.
	const (
		secretPw   = "S3cretValueFromSecret"
		urlSecret  = "UrlS3cretInsideSecret"
		inlineURL  = "InlineUrlPassw0rd"
		optionPw   = "OptionPassw0rd"
		badURLPw   = "BadUrlPassw0rd"
		failPw     = "FailingConnPassw0rd"
		alteredPw  = "AlteredS3cretValue"
		sourcePass = "SourceTokenValue99"
	)
	passwords := []string{secretPw, urlSecret, inlineURL, optionPw, badURLPw, failPw, alteredPw, sourcePass}

	srv := StartServer(t, Options{CheckpointInterval: 200 * time.Millisecond})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE TABLE t (id INT PRIMARY KEY, v TEXT)`,
		`CREATE SECRET pg_pw AS '`+secretPw+`'`,
		`CREATE SECRET pg_url WITH (backend = 'meta') AS '`+withPw(pgURL, urlSecret)+`'`,
		`CREATE SINK s_secret_url FROM t WITH (connector = 'postgres', url = SECRET pg_url, table = 'via_secret', primary_key = 'id')`,
		`CREATE SINK s_secret_pw FROM t WITH (connector = 'postgres', url = '`+pgURL+`', password = SECRET pg_pw, table = 'via_pw', primary_key = 'id')`,
		`CREATE SINK s_inline FROM t WITH (connector = 'postgres', url = '`+withPw(pgURL, inlineURL)+`', password = '`+optionPw+`', table = 'inline', primary_key = 'id')`,
		`CREATE SINK s_fail FROM t WITH (connector = 'postgres', url = 'postgres://postgres:`+failPw+`@127.0.0.1:1/x?connect_timeout=1', table = 'f', primary_key = 'id')`,
		`CREATE SOURCE gen (id BIGINT) WITH (connector = 'datagen', fields.id.kind = 'sequence', datagen.rows.per.second = '1')`,
		`INSERT INTO t VALUES (1, 'a')`, `FLUSH`,
	)
	wantCode(t, conn, `CREATE SECRET pg_pw AS 'x'`, "42710", "already exists")
	ExecAll(t, conn, `BEGIN`)
	wantCode(t, conn, `CREATE SECRET in_block AS 'x'`, "25001")
	ExecAll(t, conn, `ROLLBACK`)
	wantCode(t, conn, `CREATE SECRET other WITH (backend = 'vault') AS 'x'`, "22023")
	wantCode(t, conn, `CREATE SINK s_nosecret FROM t WITH (connector = 'postgres', url = SECRET nosuch, table = 'x')`, "42704", "nosuch")
	wantCode(t, conn, `DROP SECRET pg_url`, "2BP01", "s_secret_url")
	wantCode(t, conn, `DROP SECRET nosuch`, "42704")
	ExecAll(t, conn, `DROP SECRET IF EXISTS nosuch`)
	// Errors carrying option values.
	var errs []string
	for _, stmt := range []string{
		`CREATE SINK s_bad FROM t WITH (connector = 'postgres', url = 'postgres://postgres:` + badURLPw + `@127.0.0.1:notaport/x', table = 'x')`,
		`CREATE SINK s_bad FROM t WITH (connector = 'postgres', url = 'mysql://root:` + badURLPw + `@h/x', table = 'x')`,
		`CREATE SINK s_bad FROM t WITH (connector = 'postgres', url = '` + pgURL + `', password = '` + badURLPw + `', table = 'x', bogus = '` + badURLPw + `')`,
		`CREATE SOURCE s_bad2 (id INT) WITH (connector = 'kafka', topic = 'x', properties.bootstrap.server = 'h:1', properties.sasl.password = '` + sourcePass + `')`,
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := QueryText(ctx, conn, stmt)
		cancel()
		if err == nil {
			t.Fatalf("%s: succeeded", stmt)
		}
		errs = append(errs, errorText(err))
	}
	for _, want := range []string{"via_secret", "via_pw", "inline"} {
		waitRows(t, pgURL, want, 1)
	}
	// The failing sink's connection error reaches SHOW SINKS.
	waitFor(t, 30*time.Second, func() bool {
		for _, l := range queryLines(t, conn, `SHOW SINKS`) {
			if strings.HasPrefix(l, "s_fail ") && strings.Contains(l, "127.0.0.1") {
				return true
			}
		}
		return false
	}, "the failing sink's error in SHOW SINKS")
	if got := queryLines(t, conn, `SHOW SECRETS`); strings.Join(got, "|") != "pg_pw|pg_url" {
		t.Errorf("SHOW SECRETS: %q, want [pg_pw pg_url]", got)
	}
	ExecAll(t, conn, `ALTER SECRET pg_pw AS '`+alteredPw+`'`)

	checkNoPassword(t, srv, conn, passwords, errs)
	show := strings.Join(queryLines(t, conn, `SHOW CREATE SINK s_inline`), "\n")
	if !strings.Contains(show, "postgres:********@") || !strings.Contains(show, "password = '********'") {
		t.Errorf("SHOW CREATE SINK s_inline does not show the masks: %s", show)
	}
	show = strings.Join(queryLines(t, conn, `SHOW CREATE SINK s_secret_pw`), "\n")
	if !strings.Contains(show, "password = SECRET pg_pw") {
		t.Errorf("SHOW CREATE SINK s_secret_pw does not show the reference: %s", show)
	}

	// The key is outside the catalog, private; no secret value is stored
	// in plain text anywhere in the data directory.
	if st, err := os.Stat(filepath.Join(srv.DataDir, "secret.key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("secret.key: %v, mode %v, want 0600", err, st)
	}
	conn.Close(context.Background())
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{secretPw, urlSecret, alteredPw} {
		if f := grepDir(t, srv.DataDir, v); f != "" {
			t.Errorf("secret value %q stored in plain text in %s", v, f)
		}
	}

	// After a restart the secrets still feed the sinks.
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	conn = srv.Connect(t)
	ExecAll(t, conn, `INSERT INTO t VALUES (2, 'b')`, `FLUSH`)
	for _, want := range []string{"via_secret", "via_pw"} {
		waitRows(t, pgURL, want, 2)
	}
	if got := queryLines(t, conn, `SHOW SECRETS`); strings.Join(got, "|") != "pg_pw|pg_url" {
		t.Errorf("SHOW SECRETS after restart: %q", got)
	}
	ExecAll(t, conn, `DROP SINK s_secret_url`, `DROP SECRET pg_url`)
	checkNoPassword(t, srv, conn, passwords, nil)
}

// waitRows waits until table holds n rows in the PostgreSQL database.
func waitRows(t *testing.T, url, table string, n int) {
	t.Helper()
	pg := MustConnect(t, url)
	defer pg.Close(context.Background())
	waitFor(t, 30*time.Second, func() bool {
		var got int
		return pg.QueryRow(context.Background(), `SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()).Scan(&got) == nil && got == n
	}, fmt.Sprintf("%d rows in %s", n, table))
}

// checkNoPassword greps every place a password could show for each of
// passwords: SHOW output, every system relation, errs, the server's log.
func checkNoPassword(t *testing.T, srv *Server, conn *pgx.Conn, passwords, errs []string) {
	t.Helper()
	places := map[string]string{}
	for _, q := range []string{`SHOW SINKS`, `SHOW SOURCES`, `SHOW TABLES`, `SHOW SECRETS`, `SHOW MATERIALIZED VIEWS`,
		`SHOW CREATE SINK s_inline`, `SHOW CREATE SINK s_secret_pw`, `SHOW CREATE SINK s_fail`, `SHOW CREATE SOURCE gen`, `SHOW CREATE TABLE t`} {
		if strings.Contains(q, "s_secret_url") {
			continue
		}
		places[q] = strings.Join(queryLines(t, conn, q), "\n")
	}
	rels := queryLines(t, conn, `SELECT n.nspname || '.' || c.relname FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname IN ('pg_catalog', 'information_schema') AND c.relkind IN ('r', 'v')`)
	if len(rels) < 20 {
		t.Fatalf("only %d system relations: %v", len(rels), rels)
	}
	read := 0
	for _, rel := range rels {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := QueryText(ctx, conn, `SELECT * FROM `+rel)
		cancel()
		if err != nil {
			places["error of "+rel] = errorText(err)
			continue
		}
		read++
		places[rel] = strings.Join(res.Lines(), "\n")
	}
	if read < len(rels)*3/4 {
		t.Errorf("read only %d of %d system relations", read, len(rels))
	}
	for i, e := range errs {
		places[fmt.Sprintf("error %d", i)] = e
	}
	places["server log"] = srv.Logs()
	for _, pw := range passwords {
		for where, text := range places {
			if strings.Contains(text, pw) {
				t.Errorf("password %q shown in %s:\n%s", pw, where, text)
			}
		}
	}
}

// grepDir returns a file under dir holding s, or "".
func grepDir(t *testing.T, dir, s string) string {
	t.Helper()
	found := ""
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || found != "" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(b), s) {
			found = path
		}
		return nil
	})
	return found
}
