package tests

// Authentication, roles, TLS and connection limits (issue 15 items 1, 2
// and 7), against a real sluice process with real clients: pgx, psql,
// psycopg 3 and psycopg2 (Debian's /usr/bin/python3) and pgjdbc.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/md5"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

const authSuperPassword = "s3cret-super"

// startAuthServer starts sluice with a bootstrap superuser password (given
// through the environment) and extra flags.
func startAuthServer(t *testing.T, sslmode string, extra ...string) *Server {
	t.Helper()
	return StartServer(t, Options{
		Env:       []string{"SLUICE_SUPERUSER_PASSWORD=" + authSuperPassword},
		Password:  authSuperPassword,
		SSLMode:   sslmode,
		ExtraArgs: append([]string{"--unix-socket-dir", ""}, extra...),
	})
}

// pgURL is a connection URL for user/password on s.
func pgURL(s *Server, user, password, db, params string) string {
	u := url.UserPassword(user, password)
	return "postgres://" + u.String() + "@" + s.Addr + "/" + db + "?connect_timeout=10&" + params
}

// pgxTry connects, returns current_user or the connection error.
func pgxTry(t *testing.T, connStr string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, connStr)
	if err != nil {
		return "", err
	}
	defer c.Close(ctx)
	var u string
	err = c.QueryRow(ctx, "SELECT current_user").Scan(&u)
	return u, err
}

func wantState(t *testing.T, what string, err error, code, msg string) {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		t.Fatalf("%s: got %v, want SQLSTATE %s", what, err, code)
	}
	if pe.Code != code || (msg != "" && pe.Message != msg) {
		t.Fatalf("%s: got %s %q, want %s %q", what, pe.Code, pe.Message, code, msg)
	}
}

func mustExec(t *testing.T, c *pgx.Conn, sqls ...string) {
	t.Helper()
	for _, q := range sqls {
		if _, err := c.Exec(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// psqlTry runs `psql -c 'SELECT current_user'` with a connection string and
// returns its combined output and whether it succeeded.
func psqlTry(t *testing.T, conninfo, password string) (string, bool) {
	t.Helper()
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Fatalf("psql is missing (Debian package postgresql-client): %v", err)
	}
	cmd := exec.Command(psql, "-X", "-A", "-t", "-w", "-c", "SELECT current_user", conninfo)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+password, "PGCONNECT_TIMEOUT=10")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err == nil
}

// pythonProbe runs tests/clients/auth_probe.py (psycopg 3 and psycopg2).
func pythonProbe(t *testing.T, dsn string) string {
	t.Helper()
	if _, err := os.Stat(debianPython); err != nil {
		t.Fatalf("%s is missing: %v", debianPython, err)
	}
	out, err := exec.Command(debianPython, filepath.Join(clientDir(t), "auth_probe.py"), dsn).CombinedOutput()
	if err != nil {
		t.Fatalf("auth_probe.py: %v\n%s", err, out)
	}
	s := string(out)
	if strings.Contains(s, "missing") {
		t.Fatalf("python drivers missing (python3-psycopg, python3-psycopg2): %s", s)
	}
	return s
}

// jdbcProbe runs tests/clients/AuthProbe.java with pgjdbc.
func jdbcProbe(t *testing.T, url, user, password string) string {
	t.Helper()
	javac := mustHave(t, "javac", "default-jdk-headless")
	java := mustHave(t, "java", "default-jdk-headless")
	if _, err := os.Stat(pgjdbcJar); err != nil {
		t.Fatalf("%s is missing (libpostgresql-jdbc-java): %v", pgjdbcJar, err)
	}
	classes := compileJava(t, javac, filepath.Join(clientDir(t), "AuthProbe.java"))
	out, err := exec.Command(java, "-Xshare:auto", "-XX:TieredStopAtLevel=1",
		"-cp", classes+string(os.PathListSeparator)+pgjdbcJar, "AuthProbe", url, user, password).CombinedOutput()
	if err != nil {
		t.Fatalf("AuthProbe: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Fatalf("%s: output %q does not contain %q", what, got, w)
		}
	}
}

// TestAuthSCRAMClients: every client logs in with SCRAM-SHA-256, and a
// wrong password, an unknown user and an unknown database are refused
// with PostgreSQL's errors.
func TestAuthSCRAMClients(t *testing.T) {
	s := startAuthServer(t, "disable")
	c := s.Connect(t)
	mustExec(t, c, `CREATE USER alice WITH PASSWORD 'wonder land'`)
	var verifier string
	if err := c.QueryRow(context.Background(), `SELECT rolpassword FROM pg_authid WHERE rolname = 'alice'`).Scan(&verifier); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(verifier, "SCRAM-SHA-256$4096:") {
		t.Fatalf("stored password %q is not a SCRAM verifier", verifier)
	}
	c.Close(context.Background())

	// pgx
	if u, err := pgxTry(t, pgURL(s, "alice", "wonder land", "sluice", "sslmode=disable")); err != nil || u != "alice" {
		t.Fatalf("pgx alice: %q %v", u, err)
	}
	_, err := pgxTry(t, pgURL(s, "alice", "wrong", "sluice", "sslmode=disable"))
	wantState(t, "pgx wrong password", err, "28P01", `password authentication failed for user "alice"`)
	_, err = pgxTry(t, pgURL(s, "nobody", "x", "sluice", "sslmode=disable"))
	wantState(t, "pgx unknown user", err, "28P01", `password authentication failed for user "nobody"`)
	_, err = pgxTry(t, pgURL(s, "alice", "wonder land", "nodb", "sslmode=disable"))
	wantState(t, "pgx unknown database", err, "3D000", `database "nodb" does not exist`)
	if u, err := pgxTry(t, pgURL(s, "alice", "wonder land", "postgres", "sslmode=disable")); err != nil || u != "alice" {
		t.Fatalf("pgx database postgres: %q %v", u, err)
	}

	// psql
	ci := "host=" + s.Host() + " port=" + s.Port() + " user=alice dbname=sluice sslmode=disable"
	if out, ok := psqlTry(t, ci, "wonder land"); !ok || out != "alice" {
		t.Fatalf("psql alice: %s", out)
	}
	out, ok := psqlTry(t, ci, "wrong")
	if ok {
		t.Fatalf("psql with a wrong password connected: %s", out)
	}
	wantContains(t, "psql wrong password", out, `FATAL:  password authentication failed for user "alice"`)
	out, _ = psqlTry(t, "host="+s.Host()+" port="+s.Port()+" user=alice dbname=nodb sslmode=disable", "wonder land")
	wantContains(t, "psql unknown database", out, `FATAL:  database "nodb" does not exist`)

	// psycopg 3 and psycopg2 (libpq reports no SQLSTATE for a failed
	// connection: the message is what the user sees).
	py := pythonProbe(t, ci+" password='wonder land'")
	wantContains(t, "python", py, "psycopg ok alice plain", "psycopg2 ok alice plain")
	py = pythonProbe(t, ci+" password=wrong")
	wantContains(t, "python wrong password", py, `psycopg err`, `psycopg2 err`, `password authentication failed for user "alice"`)
	if strings.Count(py, `password authentication failed for user "alice"`) != 2 {
		t.Fatalf("python wrong password: %s", py)
	}

	// pgjdbc
	jurl := "jdbc:postgresql://" + s.Addr + "/sluice?sslmode=disable"
	if got := jdbcProbe(t, jurl, "alice", "wonder land"); got != "ok alice" {
		t.Fatalf("pgjdbc alice: %s", got)
	}
	got := jdbcProbe(t, jurl, "alice", "wrong")
	wantContains(t, "pgjdbc wrong password", got, "err 28P01", `password authentication failed for user "alice"`)
	got = jdbcProbe(t, "jdbc:postgresql://"+s.Addr+"/nodb?sslmode=disable", "alice", "wonder land")
	wantContains(t, "pgjdbc unknown database", got, "err 3D000")
}

// TestAuthRoles: CREATE/ALTER/DROP ROLE over the wire, their errors and
// privileges, password changes, md5 when enabled, and a restart that keeps
// roles and passwords.
func TestAuthRoles(t *testing.T) {
	s := startAuthServer(t, "disable", "--auth-md5")
	ctx := context.Background()
	c := s.Connect(t)
	defer func() { c.Close(ctx) }()
	mustExec(t, c,
		`CREATE ROLE mgr WITH LOGIN CREATEROLE PASSWORD 'mgr-pw'`,
		`CREATE USER bob PASSWORD 'bob-pw'`,
		`CREATE ROLE nologin_role PASSWORD 'x'`,
	)
	_, err := c.Exec(ctx, `CREATE ROLE bob`)
	wantState(t, "duplicate", err, "42710", `role "bob" already exists`)
	_, err = c.Exec(ctx, `ALTER ROLE ghost LOGIN`)
	wantState(t, "alter missing", err, "42704", `role "ghost" does not exist`)
	_, err = c.Exec(ctx, `DROP ROLE ghost`)
	wantState(t, "drop missing", err, "42704", `role "ghost" does not exist`)
	mustExec(t, c, `DROP ROLE IF EXISTS ghost`)
	_, err = c.Exec(ctx, `CREATE ROLE pg_mine`)
	wantState(t, "reserved name", err, "42939", `role name "pg_mine" is reserved`)
	_, err = c.Exec(ctx, `DROP ROLE sluice`)
	wantState(t, "drop current user", err, "55006", "current user cannot be dropped")
	_, err = c.Exec(ctx, `CREATE ROLE x CREATEDB`)
	wantState(t, "unsupported option", err, "0A000", "role option CREATEDB is not supported")

	rows, err := c.Query(ctx, `SELECT rolname, rolsuper, rolcreaterole, rolcanlogin, rolpassword FROM pg_roles ORDER BY rolname`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var name, pw string
		var super, cr, login bool
		if err := rows.Scan(&name, &super, &cr, &login, &pw); err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.Join([]string{name, b2s(super), b2s(cr), b2s(login), pw}, "|"))
	}
	want := "bob|f|f|t|********,mgr|f|t|t|********,nologin_role|f|f|f|********,sluice|t|t|t|********"
	if strings.Join(got, ",") != want {
		t.Fatalf("pg_roles:\n got %s\nwant %s", strings.Join(got, ","), want)
	}

	// A role without LOGIN cannot log in; with the right password, it is
	// told so (as PostgreSQL).
	_, err = pgxTry(t, pgURL(s, "nologin_role", "x", "sluice", "sslmode=disable"))
	wantState(t, "nologin", err, "28000", `role "nologin_role" is not permitted to log in`)

	// bob (no CREATEROLE) may not manage roles, but may change his own password.
	bob, err := pgx.Connect(ctx, pgURL(s, "bob", "bob-pw", "sluice", "sslmode=disable"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = bob.Exec(ctx, `CREATE ROLE eve`)
	wantState(t, "bob creates a role", err, "42501", "permission denied to create role")
	_, err = bob.Exec(ctx, `ALTER ROLE bob SUPERUSER`)
	wantState(t, "bob makes himself superuser", err, "42501", "")
	_, err = bob.Exec(ctx, `SELECT rolpassword FROM pg_authid`)
	wantState(t, "bob reads pg_authid", err, "42501", "permission denied for table pg_authid")
	var super string
	if err := bob.QueryRow(ctx, `SHOW is_superuser`).Scan(&super); err != nil || super != "off" {
		t.Fatalf("bob's is_superuser: %q %v", super, err)
	}
	mustExec(t, bob, `ALTER ROLE bob PASSWORD 'bob-pw2'`)
	bob.Close(ctx)

	// mgr (CREATEROLE) manages non-superusers only.
	mgr, err := pgx.Connect(ctx, pgURL(s, "mgr", "mgr-pw", "sluice", "sslmode=disable"))
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, mgr, `CREATE ROLE carol LOGIN PASSWORD 'carol-pw'`, `ALTER ROLE carol RENAME TO carol2`)
	_, err = mgr.Exec(ctx, `CREATE ROLE boss SUPERUSER`)
	wantState(t, "mgr creates a superuser", err, "42501", "permission denied to create role")
	_, err = mgr.Exec(ctx, `ALTER ROLE sluice PASSWORD 'hijack'`)
	wantState(t, "mgr alters the superuser", err, "42501", "permission denied to alter role")
	mgr.Close(ctx)

	// md5: a password stored as md5 (password_encryption, or given hashed)
	// logs in with md5 when --auth-md5 is on.
	mustExec(t, c, `SET password_encryption = 'md5'`, `CREATE USER oldapp PASSWORD 'old-pw'`, `RESET password_encryption`)
	var stored string
	if err := c.QueryRow(ctx, `SELECT rolpassword FROM pg_authid WHERE rolname = 'oldapp'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != "md5"+md5hex("old-pw"+"oldapp") {
		t.Fatalf("md5 password stored as %q", stored)
	}
	if u, err := pgxTry(t, pgURL(s, "oldapp", "old-pw", "sluice", "sslmode=disable")); err != nil || u != "oldapp" {
		t.Fatalf("md5 login: %q %v", u, err)
	}
	// A SCRAM verifier given as the password is stored as is.
	mustExec(t, c, `CREATE USER hashed PASSWORD '`+verifierOf(t, c, "carol2")+`'`)
	if u, err := pgxTry(t, pgURL(s, "hashed", "carol-pw", "sluice", "sslmode=disable")); err != nil || u != "hashed" {
		t.Fatalf("login with a copied verifier: %q %v", u, err)
	}
	mustExec(t, c, `DROP USER hashed, nologin_role`)
	c.Close(ctx)

	// Restart: roles and passwords are kept; the new password of bob works
	// and the old one does not.
	// An unknown user's mock salt is stable (across restarts too), like a
	// real user's, so probing salts does not tell who exists.
	ghostSalt, bobSalt := scramSalt(t, s.Addr, "ghost"), scramSalt(t, s.Addr, "bob")
	if ghostSalt != scramSalt(t, s.Addr, "ghost") || ghostSalt == scramSalt(t, s.Addr, "ghost2") {
		t.Fatal("mock salts are not stable per user")
	}

	// The superuser's password is not given this time: the stored one counts.
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	s.SetEnv()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if u, err := pgxTry(t, pgURL(s, "bob", "bob-pw2", "sluice", "sslmode=disable")); err != nil || u != "bob" {
		t.Fatalf("bob after restart: %q %v", u, err)
	}
	if scramSalt(t, s.Addr, "ghost") != ghostSalt || scramSalt(t, s.Addr, "bob") != bobSalt {
		t.Fatal("salts changed across the restart")
	}
	_, err = pgxTry(t, pgURL(s, "bob", "bob-pw", "sluice", "sslmode=disable"))
	wantState(t, "bob's old password", err, "28P01", "")
	if u, err := pgxTry(t, pgURL(s, "carol2", "carol-pw", "sluice", "sslmode=disable")); err != nil || u != "carol2" {
		t.Fatalf("carol2 after restart: %q %v", u, err)
	}
	_, err = pgxTry(t, pgURL(s, "hashed", "carol-pw", "sluice", "sslmode=disable"))
	wantState(t, "dropped role", err, "28P01", "")
	c = s.Connect(t)
	var n int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_roles`).Scan(&n); err != nil || n != 5 { // sluice, mgr, bob, carol2, oldapp
		t.Fatalf("roles after restart: %d %v", n, err)
	}
}

func b2s(b bool) string {
	if b {
		return "t"
	}
	return "f"
}

func verifierOf(t *testing.T, c *pgx.Conn, role string) string {
	t.Helper()
	var v string
	if err := c.QueryRow(context.Background(), `SELECT rolpassword FROM pg_authid WHERE rolname = $1`, role).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestAuthTrustMode: without any password, Sluice trusts local clients
// (TCP loopback and the Unix socket), refuses unknown roles, and refuses
// to start on a non-loopback address.
func TestAuthTrustMode(t *testing.T) {
	sock := t.TempDir()
	s := StartServer(t, Options{ExtraArgs: []string{"--unix-socket-dir", sock}})
	if u, err := pgxTry(t, s.ConnString()); err != nil || u != "sluice" {
		t.Fatalf("trust over loopback: %q %v", u, err)
	}
	_, err := pgxTry(t, "postgres://stranger@"+s.Addr+"/sluice?sslmode=disable")
	wantState(t, "unknown role", err, "28000", `role "stranger" does not exist`)
	if _, err := os.Stat(filepath.Join(sock, ".s.PGSQL."+s.Port())); err != nil {
		t.Fatalf("unix socket: %v", err)
	}
	if u, err := pgxTry(t, "host="+sock+" port="+s.Port()+" user=sluice dbname=sluice"); err != nil || u != "sluice" {
		t.Fatalf("trust over the unix socket: %q %v", u, err)
	}
	if out, ok := psqlTry(t, "host="+sock+" port="+s.Port()+" user=sluice dbname=sluice", ""); !ok || out != "sluice" {
		t.Fatalf("psql over the unix socket: %s", out)
	}

	_, port, _ := net.SplitHostPort(FreeAddr(t))
	bad := NewServer(t, Options{Addr: "0.0.0.0:" + port, ExtraArgs: []string{"--unix-socket-dir", ""}})
	err = bad.Start()
	if err == nil {
		t.Fatal("sluice started on 0.0.0.0 without a password")
	}
	wantContains(t, "non-loopback listen", err.Error(), "refusing to listen on 0.0.0.0:"+port, "no password is configured",
		"--superuser-password-file", "SLUICE_SUPERUSER_PASSWORD")
}

// testPKI is a CA and a server certificate for 127.0.0.1 and localhost it
// signed, written to files.
type testPKI struct{ caFile, certFile, keyFile string }

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sluice test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	p := testPKI{filepath.Join(dir, "ca.crt"), filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")}
	write := func(f, typ string, b []byte) {
		if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(p.caFile, "CERTIFICATE", caDER)
	write(p.certFile, "CERTIFICATE", der)
	write(p.keyFile, "EC PRIVATE KEY", kb)
	return p
}

// TestTLS: with --tls-required, psql, pgx, psycopg and pgjdbc connect
// with sslmode=require and verify-full (SCRAM over TLS), plaintext is
// refused, and PostgreSQL 17's direct TLS handshake works.
func TestTLS(t *testing.T) {
	pki := newTestPKI(t)
	s := startAuthServer(t, "require", "--tls-cert", pki.certFile, "--tls-key", pki.keyFile, "--tls-required")
	c := s.Connect(t)
	mustExec(t, c, `CREATE USER tess PASSWORD 'tls-pw'`)
	var ssl string
	if err := c.QueryRow(context.Background(), `SHOW ssl`).Scan(&ssl); err != nil || ssl != "on" {
		t.Fatalf("SHOW ssl: %q %v", ssl, err)
	}
	c.Close(context.Background())

	verify := "sslmode=verify-full&sslrootcert=" + url.QueryEscape(pki.caFile)
	for _, params := range []string{"sslmode=require", verify} {
		if u, err := pgxTry(t, pgURL(s, "tess", "tls-pw", "sluice", params)); err != nil || u != "tess" {
			t.Fatalf("pgx %s: %q %v", params, u, err)
		}
	}
	_, err := pgxTry(t, pgURL(s, "tess", "wrong", "sluice", verify))
	wantState(t, "pgx wrong password over TLS", err, "28P01", "")
	_, err = pgxTry(t, pgURL(s, "tess", "tls-pw", "sluice", "sslmode=disable"))
	wantState(t, "pgx plaintext", err, "28000", `no pg_hba.conf entry for host "127.0.0.1", user "tess", database "sluice", no encryption`)

	base := "host=" + s.Host() + " port=" + s.Port() + " user=tess dbname=sluice "
	verifyCI := "sslmode=verify-full sslrootcert=" + pki.caFile
	for _, mode := range []string{"sslmode=require", verifyCI} {
		if out, ok := psqlTry(t, base+mode, "tls-pw"); !ok || out != "tess" {
			t.Fatalf("psql %s: %s", mode, out)
		}
		py := pythonProbe(t, base+mode+" password=tls-pw")
		wantContains(t, "python "+mode, py, "psycopg ok tess ssl", "psycopg2 ok tess ssl")
	}
	// SCRAM-SHA-256-PLUS: libpq binds the login to the TLS session.
	if out, ok := psqlTry(t, base+verifyCI+" channel_binding=require", "tls-pw"); !ok || out != "tess" {
		t.Fatalf("psql channel_binding=require: %s", out)
	}
	if py := pythonProbe(t, base+"sslmode=require channel_binding=require password=tls-pw"); !strings.Contains(py, "psycopg ok tess ssl") {
		t.Fatalf("psycopg channel_binding=require: %s", py)
	}
	out, ok := psqlTry(t, base+"sslmode=disable", "tls-pw")
	if ok {
		t.Fatalf("psql in plaintext connected: %s", out)
	}
	wantContains(t, "psql plaintext", out, "no encryption", "--tls-required")
	// verify-full against the wrong name fails on the client.
	if out, ok := psqlTry(t, "host=127.0.0.2 port="+s.Port()+" user=tess dbname=sluice "+verifyCI, "tls-pw"); ok {
		t.Fatalf("psql verify-full to a name not in the certificate connected: %s", out)
	}

	for _, mode := range []string{"sslmode=require", "sslmode=verify-full&sslrootcert=" + pki.caFile} {
		got := jdbcProbe(t, "jdbc:postgresql://"+s.Addr+"/sluice?"+mode, "tess", "tls-pw")
		if got != "ok tess" {
			t.Fatalf("pgjdbc %s: %s", mode, got)
		}
	}
	got := jdbcProbe(t, "jdbc:postgresql://"+s.Addr+"/sluice?sslmode=disable", "tess", "tls-pw")
	wantContains(t, "pgjdbc plaintext", got, "err 28000")

	// PostgreSQL 17 direct TLS: a ClientHello first, ALPN "postgresql".
	pool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(pki.caFile)
	pool.AppendCertsFromPEM(caPEM)
	tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", s.Addr,
		&tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{"postgresql"}})
	if err != nil {
		t.Fatalf("direct TLS: %v", err)
	}
	defer tc.Close()
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	if p := tc.ConnectionState().NegotiatedProtocol; p != "postgresql" {
		t.Fatalf("direct TLS: ALPN %q", p)
	}
	// StartupMessage; the answer must be an authentication request (SASL).
	var msg []byte
	msg = binary.BigEndian.AppendUint32(msg, 0)
	msg = binary.BigEndian.AppendUint32(msg, 196608)
	msg = append(msg, "user\x00tess\x00database\x00sluice\x00\x00"...)
	binary.BigEndian.PutUint32(msg, uint32(len(msg)))
	if _, err := tc.Write(msg); err != nil {
		t.Fatal(err)
	}
	var hdr [9]byte
	if _, err := ioReadFull(tc, hdr[:]); err != nil {
		t.Fatalf("direct TLS: reading the authentication request: %v", err)
	}
	if hdr[0] != 'R' || binary.BigEndian.Uint32(hdr[5:]) != 10 {
		t.Fatalf("direct TLS: got message %q code %d, want AuthenticationSASL", hdr[0], binary.BigEndian.Uint32(hdr[5:]))
	}
}

// TestTLSGenerate: --tls-generate writes a self-signed pair (0600) into
// the data directory and serves TLS with it.
func TestTLSGenerate(t *testing.T) {
	s := startAuthServer(t, "require", "--tls-generate")
	for _, f := range []string{"server.crt", "server.key"} {
		fi, err := os.Stat(filepath.Join(s.DataDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s has mode %v", f, fi.Mode().Perm())
		}
	}
	if u, err := pgxTry(t, pgURL(s, "sluice", authSuperPassword, "sluice",
		"sslmode=verify-full&sslrootcert="+url.QueryEscape(filepath.Join(s.DataDir, "server.crt")))); err != nil || u != "sluice" {
		t.Fatalf("verify-full against the generated certificate: %q %v", u, err)
	}
}

// TestConnectionLimits: max_connections with reserved superuser slots,
// and the authentication timeout dropping a silent client.
func TestConnectionLimits(t *testing.T) {
	s := startAuthServer(t, "disable", "--max-connections", "5", "--superuser-reserved-connections", "2",
		"--authentication-timeout", "1s")
	ctx := context.Background()
	admin := s.Connect(t) // 1
	mustExec(t, admin, `CREATE USER worker PASSWORD 'w'`)
	var maxc string
	if err := admin.QueryRow(ctx, `SHOW max_connections`).Scan(&maxc); err != nil || maxc != "5" {
		t.Fatalf("SHOW max_connections: %q %v", maxc, err)
	}
	_, err := admin.Exec(ctx, `SET max_connections = 10`)
	wantState(t, "SET max_connections", err, "55P02", `parameter "max_connections" cannot be changed`)
	workerURL := pgURL(s, "worker", "w", "sluice", "sslmode=disable")
	var held []*pgx.Conn
	defer func() {
		for _, c := range held {
			c.Close(ctx)
		}
	}()
	for i := 0; i < 2; i++ { // 2, 3
		c, err := pgx.Connect(ctx, workerURL)
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
		held = append(held, c)
	}
	_, err = pgxTry(t, workerURL)
	wantState(t, "worker in a reserved slot", err, "53300",
		"remaining connection slots are reserved for roles with the SUPERUSER attribute")
	for i := 0; i < 2; i++ { // 4, 5: superusers use the reserved slots
		c, err := pgx.Connect(ctx, s.ConnString())
		if err != nil {
			t.Fatalf("superuser %d: %v", i, err)
		}
		held = append(held, c)
	}
	_, err = pgxTry(t, s.ConnString())
	wantState(t, "superuser beyond the limit", err, "53300", "sorry, too many clients already")
	// Three leave (a worker and both superusers): 2 sessions remain, so a
	// worker fits again once the server has noticed.
	for _, i := range []int{0, 2, 3} {
		held[i].Close(ctx)
	}
	held = held[1:2]
	deadline := time.Now().Add(10 * time.Second)
	for {
		u, err := pgxTry(t, workerURL)
		if err == nil && u == "worker" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker after a slot was freed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A client that connects and says nothing is dropped after
	// --authentication-timeout.
	nc, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	start := time.Now()
	nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	var b [1]byte
	if _, err := nc.Read(b[:]); err == nil {
		t.Fatal("a silent client got data")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("a silent client was not dropped within 20s")
	}
	if d := time.Since(start); d < 500*time.Millisecond || d > 10*time.Second {
		t.Fatalf("silent client dropped after %v, want about 1s", d)
	}
}

// TestConnectionFlood: connections that never finish their startup count
// too: at twice max_connections a new client is refused at once, and
// connects again when they are gone.
func TestConnectionFlood(t *testing.T) {
	s := startAuthServer(t, "disable", "--max-connections", "2", "--superuser-reserved-connections", "0")
	var silent []net.Conn
	defer func() {
		for _, c := range silent {
			c.Close()
		}
	}()
	// Hold 4 connections the server has taken in (a connection refused
	// because the harness's own connection was still closing is replaced).
	deadline := time.Now().Add(10 * time.Second)
	for len(silent) < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("could not hold 4 silent connections")
		}
		nc, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		var b [1]byte
		if _, err := nc.Read(b[:]); err == nil {
			nc.Close() // refused: something else still held a connection
			time.Sleep(50 * time.Millisecond)
			continue
		}
		silent = append(silent, nc)
	}
	_, err := pgxTry(t, s.ConnString())
	wantState(t, "flooded", err, "53300", "sorry, too many clients already")
	for _, c := range silent {
		c.Close()
	}
	silent = nil
	for {
		u, err := pgxTry(t, s.ConnString())
		if err == nil && u == "sluice" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the flood: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFDLimit: at the file-descriptor limit accept fails with EMFILE;
// the server backs off and retries, and once clients leave a new one
// connects.
func TestFDLimit(t *testing.T) {
	prlimit := mustHave(t, "prlimit", "util-linux")
	bin := Binary(t)
	addr, data := FreeAddr(t), filepath.Join(t.TempDir(), "data")
	s := StartServer(t, Options{Addr: addr, DataDir: data, Command: []string{prlimit, "--nofile=128:128", bin,
		"--listen", addr, "--data-dir", data, "--max-connections", "1000", "--unix-socket-dir", ""}})
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	refused := 0
	for i := 0; i < 400 && refused == 0; i++ {
		nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			refused++
			break
		}
		conns = append(conns, nc)
		if !startupOK(nc) {
			refused++
		}
	}
	if refused == 0 {
		t.Fatalf("%d connections and none refused: the descriptor limit was not reached", len(conns))
	}
	t.Logf("descriptor limit reached after %d connections", len(conns))
	if !strings.Contains(s.Logs(), "too many open files") {
		t.Fatalf("the server did not report EMFILE from accept; log:\n%s", s.Logs())
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	deadline := time.Now().Add(15 * time.Second)
	for {
		u, err := pgxTry(t, s.ConnString())
		if err == nil && u == "sluice" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new client after the storm: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if exited, err := s.Exited(); exited {
		t.Fatalf("server exited: %v", err)
	}
}

// startupOK sends a StartupMessage (trust mode) and reports whether
// ReadyForQuery arrives within a second.
func startupOK(nc net.Conn) bool {
	var msg []byte
	msg = binary.BigEndian.AppendUint32(msg, 0)
	msg = binary.BigEndian.AppendUint32(msg, 196608)
	msg = append(msg, "user\x00sluice\x00database\x00sluice\x00\x00"...)
	binary.BigEndian.PutUint32(msg, uint32(len(msg)))
	nc.SetDeadline(time.Now().Add(time.Second))
	defer nc.SetDeadline(time.Time{})
	if _, err := nc.Write(msg); err != nil {
		return false
	}
	for {
		var hdr [5]byte
		if _, err := ioReadFull(nc, hdr[:]); err != nil {
			return false
		}
		body := make([]byte, binary.BigEndian.Uint32(hdr[1:])-4)
		if _, err := ioReadFull(nc, body); err != nil {
			return false
		}
		switch hdr[0] {
		case 'Z':
			return true
		case 'E':
			return false
		}
	}
}

func ioReadFull(c net.Conn, b []byte) (int, error) { return io.ReadFull(c, b) }

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// scramSalt starts a SCRAM exchange as user and returns the salt the
// server announces (for an unknown user, its mock salt).
func scramSalt(t *testing.T, addr, user string) string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber,
		Parameters: map[string]string{"user": user, "database": "sluice"}})
	fe.Send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,,n=,r=clientnonce")})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := fe.Receive()
		if err != nil {
			t.Fatalf("SCRAM as %s: %v", user, err)
		}
		if c, ok := m.(*pgproto3.AuthenticationSASLContinue); ok {
			for _, a := range strings.Split(string(c.Data), ",") {
				if s, ok := strings.CutPrefix(a, "s="); ok {
					return s
				}
			}
			t.Fatalf("server-first-message without a salt: %q", c.Data)
		}
	}
}
