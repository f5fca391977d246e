package pgwire

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestSCRAMVerifierMatchesPostgres recomputes a verifier PostgreSQL 15
// stored for the password "pencil" (CREATE ROLE ... PASSWORD 'pencil' with
// password_encryption = scram-sha-256) from its salt and iteration count.
func TestSCRAMVerifierMatchesPostgres(t *testing.T) {
	const pg = "SCRAM-SHA-256$4096:1eSNmO4Z9SvEtTmbxzQRCQ==$oQvKaQoQ3Jz0I+O1gMLlwtQCpkPY0km1PfOva75qS3s=:FFtBBvzvPzDgZ8yyM/r9jth83ooWXby7YWs2dIPpoCg="
	sec, ok := parseSCRAMVerifier(pg)
	if !ok || sec.iter != 4096 {
		t.Fatalf("parse: %+v %v", sec, ok)
	}
	salt, _ := base64.StdEncoding.DecodeString("1eSNmO4Z9SvEtTmbxzQRCQ==")
	if got := scramVerifierSalt("pencil", salt, 4096); got != pg {
		t.Fatalf("got  %s\nwant %s", got, pg)
	}
	if !IsPasswordVerifier(pg) || !IsPasswordVerifier(MD5Verifier("pencil", "u")) || IsPasswordVerifier("pencil") ||
		IsPasswordVerifier("md5notahexdigestnotahexdigestxxxxx") {
		t.Fatal("IsPasswordVerifier")
	}
	// md5 as PostgreSQL 15 stored it for role alice_sluice_probe.
	if got := MD5Verifier("pencil", "alice_sluice_probe"); got != "md5096812aed02b643d737e294665b0dc18" {
		t.Fatalf("md5: %s", got)
	}
}

// fakeAuth is an Authenticator over a fixed set of roles.
type fakeAuth map[string]RoleAuth

func (f fakeAuth) LookupRole(name string) (RoleAuth, bool) { r, ok := f[name]; return r, ok }
func (f fakeAuth) TrustMode() bool                         { return false }

// TestAuthExchanges runs SCRAM-SHA-256 and md5 with pgx against an
// in-process server: right and wrong passwords, unknown users, roles
// without a password or without LOGIN, md5 off and on.
func TestAuthExchanges(t *testing.T) {
	roles := fakeAuth{
		"tester":  {Verifier: SCRAMVerifier("pw"), CanLogin: true},
		"old":     {Verifier: MD5Verifier("pw", "old"), CanLogin: true},
		"nopw":    {CanLogin: true},
		"nologin": {Verifier: SCRAMVerifier("pw")},
	}
	for _, md5on := range []bool{false, true} {
		ts := startServer(t, Options{Auth: roles, AuthMD5: md5on}, false)
		try := func(user, pw string) string {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := pgx.Connect(ctx, fmt.Sprintf("postgres://%s:%s@%s/db?sslmode=disable", user, pw, ts.addr))
			if err != nil {
				var pe *pgconn.PgError
				if errors.As(err, &pe) {
					return pe.Code + " " + pe.Message
				}
				return err.Error()
			}
			c.Close(ctx)
			return "ok"
		}
		oldWant := `28P01 password authentication failed for user "old"` // SCRAM cannot use an md5 hash
		if md5on {
			oldWant = "ok"
		}
		for _, tc := range []struct{ user, pw, want string }{
			{"tester", "pw", "ok"},
			{"tester", "pW", `28P01 password authentication failed for user "tester"`},
			{"ghost", "pw", `28P01 password authentication failed for user "ghost"`},
			{"nopw", "", `28P01 password authentication failed for user "nopw"`},
			{"nologin", "pw", `28000 role "nologin" is not permitted to log in`},
			{"old", "pw", oldWant},
		} {
			if got := try(tc.user, tc.pw); got != tc.want {
				t.Errorf("md5 %v, %s/%s: got %q, want %q", md5on, tc.user, tc.pw, got, tc.want)
			}
		}
	}
}

// trustAuth is fakeAuth in trust mode (no password configured).
type trustAuth struct{ fakeAuth }

func (trustAuth) TrustMode() bool { return true }

// remoteListener makes its connections look as if they came from addr.
type remoteListener struct {
	net.Listener
	addr net.Addr
}

func (l remoteListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return remoteConn{c, l.addr}, nil
}

type remoteConn struct {
	net.Conn
	addr net.Addr
}

func (c remoteConn) RemoteAddr() net.Addr { return c.addr }

// TestTrustModeLocalOnly: without passwords, a known role from loopback
// gets in without a password, an unknown one gets 28000, and a client
// from another host is refused even as a known role.
func TestTrustModeLocalOnly(t *testing.T) {
	auth := trustAuth{fakeAuth{"tester": {CanLogin: true, Superuser: true}}}
	connect := func(ln net.Listener, user string) string {
		srv := NewServer(newFakeHandler(), Options{Auth: auth, Logf: t.Logf})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx, ln) }()
		defer func() { cancel(); <-done }()
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		c, err := pgx.Connect(cctx, fmt.Sprintf("postgres://%s@%s/db?sslmode=disable", user, ln.Addr()))
		if err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) {
				return pe.Code + " " + pe.Message
			}
			return err.Error()
		}
		c.Close(cctx)
		return "ok"
	}
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	if got := connect(listen(), "tester"); got != "ok" {
		t.Errorf("loopback: %s", got)
	}
	if got := connect(listen(), "ghost"); got != `28000 role "ghost" does not exist` {
		t.Errorf("unknown role: %s", got)
	}
	remote := remoteListener{listen(), &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 5555}}
	if got := connect(remote, "tester"); got != "28000 no password is configured: only loopback and Unix-socket connections are accepted" {
		t.Errorf("remote: %s", got)
	}
}
