package pgwire

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/jackc/pgproto3/v2"

	"sluice/sql/pgcode"
)

// This file owns client authentication: SCRAM-SHA-256 over SASL (RFC 5802
// and 7677, as PostgreSQL's auth-scram.c), md5 when enabled, and trust
// for local connections when no password is configured. Cleartext
// passwords are never asked for.

// Authenticator is what the server asks about roles. The Engine
// implements it; a nil Options.Auth lets every user in (unit tests).
//
// An Authenticator may also implement interface{ MockKey() []byte }: 32
// secret bytes, the same at every start, that key the fake SCRAM salts of
// unknown users, so that a client cannot tell them from real ones by
// watching salts across restarts (PostgreSQL's mock authentication
// nonce). Without it the key is random per Server.
type Authenticator interface {
	// LookupRole returns the login facts of role name; ok is false when no
	// such role exists.
	LookupRole(name string) (r RoleAuth, ok bool)
	// TrustMode reports whether no password is configured at all: then
	// connections are not asked for one, and only local ones (loopback
	// TCP, Unix socket) are accepted.
	TrustMode() bool
}

// RoleAuth is what authentication needs to know of a role.
type RoleAuth struct {
	// Verifier is the stored password: "SCRAM-SHA-256$<iter>:<salt>$<StoredKey>:<ServerKey>",
	// "md5<hex>", or "" for none.
	Verifier  string
	CanLogin  bool
	Superuser bool
}

// maxAuthMessage bounds the length of a password/SASL message
// (PG_MAX_AUTH_TOKEN_LENGTH).
const maxAuthMessage = 65535

// authenticate runs the authentication exchange for user after the
// startup packet; it sends AuthenticationOk on success. On failure it has
// sent the FATAL error and returns false. super reports whether the role
// has the SUPERUSER attribute.
func (c *conn) authenticate(user string) (super, ok bool) {
	a := c.srv.opts.Auth
	if a == nil {
		return true, c.send(&pgproto3.AuthenticationOk{}) == nil
	}
	role, exists := a.LookupRole(user)
	if a.TrustMode() {
		if !c.local() {
			c.trySendFatal(fatalf(pgcode.InvalidAuthorizationSpecification,
				"no password is configured: only loopback and Unix-socket connections are accepted").
				WithHint("Set a password for the superuser (--superuser-password-file or SLUICE_SUPERUSER_PASSWORD) to accept remote connections."))
			return false, false
		}
		if !exists {
			c.trySendFatal(fatalf(pgcode.InvalidAuthorizationSpecification, "role %q does not exist", user))
			return false, false
		}
	} else {
		var err error
		switch {
		case c.srv.opts.AuthMD5 && strings.HasPrefix(role.Verifier, "md5"):
			err = c.md5Exchange(user, role.Verifier)
		default:
			err = c.scramExchange(user, role.Verifier, exists)
		}
		if err != nil {
			if errors.Is(err, errAuthFailed) {
				c.srv.opts.Logf("pgwire: password authentication failed for user %q from %s", user, remoteAddr(c.nc))
				c.trySendFatal(fatalf(pgcode.InvalidPassword, "password authentication failed for user %q", user))
			} else if isFatal(err) {
				c.trySendFatal(err)
			}
			return false, false
		}
	}
	if !role.CanLogin {
		c.trySendFatal(fatalf(pgcode.InvalidAuthorizationSpecification, "role %q is not permitted to log in", user))
		return false, false
	}
	return role.Superuser, c.send(&pgproto3.AuthenticationOk{}) == nil
}

// local reports whether the client is on this machine: a Unix socket or a
// loopback TCP address.
func (c *conn) local() bool {
	switch a := c.raw.RemoteAddr().(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	_, isUnix := c.raw.LocalAddr().(*net.UnixAddr)
	return isUnix
}

// errAuthFailed is a wrong password, an unknown user or a role without a
// password: the client learns only "password authentication failed".
var errAuthFailed = errors.New("authentication failed")

// readAuthMessage reads one PasswordMessage/SASL message ('p').
func (c *conn) readAuthMessage() ([]byte, error) {
	if err := c.flush(); err != nil {
		return nil, err
	}
	var hdr [5]byte
	if _, err := io.ReadFull(c.br, hdr[:]); err != nil {
		return nil, err
	}
	if hdr[0] != 'p' {
		return nil, fatalf(pgcode.ProtocolViolation, "expected password response, got message type %d", hdr[0])
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n < 4 || n > maxAuthMessage {
		return nil, fatalf(pgcode.ProtocolViolation, "invalid password packet size")
	}
	b := make([]byte, n-4)
	_, err := io.ReadFull(c.br, b)
	return b, err
}

// md5Exchange runs AuthenticationMD5Password against an md5 verifier.
func (c *conn) md5Exchange(user, verifier string) error {
	var salt [4]byte
	rand.Read(salt[:])
	if err := c.send(&pgproto3.AuthenticationMD5Password{Salt: salt}); err != nil {
		return err
	}
	b, err := c.readAuthMessage()
	if err != nil {
		return err
	}
	if len(b) == 0 || b[len(b)-1] != 0 {
		return fatalf(pgcode.ProtocolViolation, "invalid password packet")
	}
	got := string(b[:len(b)-1])
	sum := md5.Sum(append([]byte(verifier[3:]), salt[:]...))
	want := "md5" + hex.EncodeToString(sum[:])
	if subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return errAuthFailed
	}
	return nil
}

// ---- SCRAM-SHA-256 ----

const scramMechanism = "SCRAM-SHA-256"

// scramSecret is a parsed SCRAM-SHA-256 verifier.
type scramSecret struct {
	iter                 int
	salt                 []byte
	storedKey, serverKey []byte
}

// parseSCRAMVerifier parses "SCRAM-SHA-256$<iter>:<salt>$<StoredKey>:<ServerKey>".
func parseSCRAMVerifier(v string) (scramSecret, bool) {
	rest, ok := strings.CutPrefix(v, scramMechanism+"$")
	if !ok {
		return scramSecret{}, false
	}
	a, b, ok := strings.Cut(rest, "$")
	if !ok {
		return scramSecret{}, false
	}
	it, salt64, ok1 := strings.Cut(a, ":")
	st64, sv64, ok2 := strings.Cut(b, ":")
	if !ok1 || !ok2 {
		return scramSecret{}, false
	}
	iter, err := strconv.Atoi(it)
	salt, err1 := base64.StdEncoding.DecodeString(salt64)
	st, err2 := base64.StdEncoding.DecodeString(st64)
	sv, err3 := base64.StdEncoding.DecodeString(sv64)
	if err != nil || err1 != nil || err2 != nil || err3 != nil || iter <= 0 || len(st) != sha256.Size || len(sv) != sha256.Size {
		return scramSecret{}, false
	}
	return scramSecret{iter: iter, salt: salt, storedKey: st, serverKey: sv}, true
}

// IsPasswordVerifier reports whether s is a stored password in one of the
// formats PostgreSQL stores as is: a SCRAM-SHA-256 verifier or md5 hash.
func IsPasswordVerifier(s string) bool {
	if _, ok := parseSCRAMVerifier(s); ok {
		return true
	}
	if len(s) == 35 && strings.HasPrefix(s, "md5") {
		_, err := hex.DecodeString(s[3:])
		return err == nil
	}
	return false
}

// SCRAMVerifier returns the SCRAM-SHA-256 verifier of password with a
// fresh random salt and PostgreSQL's default 4096 iterations.
func SCRAMVerifier(password string) string {
	salt := make([]byte, 16)
	rand.Read(salt)
	return scramVerifierSalt(password, salt, 4096)
}

func scramVerifierSalt(password string, salt []byte, iter int) string {
	salted, _ := pbkdf2.Key(sha256.New, password, salt, iter, sha256.Size)
	ck := hmacSHA256(salted, "Client Key")
	stored := sha256.Sum256(ck)
	sk := hmacSHA256(salted, "Server Key")
	enc := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("%s$%d:%s$%s:%s", scramMechanism, iter, enc(salt), enc(stored[:]), enc(sk))
}

// MD5Verifier returns PostgreSQL's md5 password hash: "md5" + md5(password + user).
func MD5Verifier(password, user string) string {
	sum := md5.Sum([]byte(password + user))
	return "md5" + hex.EncodeToString(sum[:])
}

func hmacSHA256(key []byte, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

// mockSecret is the verifier used for a user without one (unknown, no
// password, or an md5 hash that SCRAM cannot use): the exchange runs to
// its end and fails, so the client cannot tell these cases apart (as
// PostgreSQL's scram_mock_salt).
func (s *Server) mockSecret(user string) scramSecret {
	salt := hmacSHA256(s.mockKey[:], user)[:16]
	return scramSecret{iter: 4096, salt: salt, storedKey: make([]byte, sha256.Size), serverKey: make([]byte, sha256.Size)}
}

// scramExchange runs SCRAM-SHA-256, and over TLS also offers
// SCRAM-SHA-256-PLUS with tls-server-end-point channel binding (as
// PostgreSQL), which ties the login to this TLS session.
func (c *conn) scramExchange(user, verifier string, exists bool) error {
	sec, valid := parseSCRAMVerifier(verifier)
	if !exists || !valid {
		sec = c.srv.mockSecret(user)
	}
	cbData := c.tlsServerEndPoint()
	mechs := []string{scramMechanism}
	if cbData != nil {
		mechs = []string{scramMechanism + "-PLUS", scramMechanism}
	}
	if err := c.send(&pgproto3.AuthenticationSASL{AuthMechanisms: mechs}); err != nil {
		return err
	}
	b, err := c.readAuthMessage()
	if err != nil {
		return err
	}
	// SASLInitialResponse: mechanism\0, int32 length, data.
	i := strings.IndexByte(string(b), 0)
	if i < 0 || len(b) < i+5 {
		return fatalf(pgcode.ProtocolViolation, "malformed SASL message")
	}
	mech := string(b[:i])
	plus := cbData != nil && mech == scramMechanism+"-PLUS"
	if mech != scramMechanism && !plus {
		return fatalf(pgcode.ProtocolViolation, "client selected an invalid SASL authentication mechanism")
	}
	n := int32(binary.BigEndian.Uint32(b[i+1:]))
	data := b[i+5:]
	if n < 0 || int(n) != len(data) {
		return fatalf(pgcode.ProtocolViolation, "malformed SASL message")
	}
	clientFirst := string(data)
	// gs2-header: cbind-flag "," [authzid] ","
	j := strings.IndexByte(clientFirst, ',')
	if j < 0 {
		return fatalf(pgcode.ProtocolViolation, "malformed SCRAM message")
	}
	k := strings.IndexByte(clientFirst[j+1:], ',')
	if k < 0 {
		return fatalf(pgcode.ProtocolViolation, "malformed SCRAM message")
	}
	if k > 0 { // authzid a=...
		return fatalf(pgcode.FeatureNotSupported, "client uses authorization identity, but it is not supported")
	}
	flag := clientFirst[:j]
	switch {
	case plus:
		if flag != "p=tls-server-end-point" {
			return fatalf(pgcode.ProtocolViolation, "unsupported SCRAM channel-binding type %q", strings.TrimPrefix(flag, "p="))
		}
	case flag == "n":
		cbData = nil
	case flag == "y":
		if cbData != nil {
			return fatalf(pgcode.ProtocolViolation, "SCRAM channel binding negotiation error").
				WithDetail("The client supports SCRAM channel binding but thinks the server does not.  However, this server does support channel binding.")
		}
	case strings.HasPrefix(flag, "p="):
		return fatalf(pgcode.ProtocolViolation, "malformed SCRAM message").
			WithDetail("The client selected SCRAM-SHA-256 without channel binding, but the SCRAM message includes channel binding data.")
	default:
		return fatalf(pgcode.ProtocolViolation, "malformed SCRAM message")
	}
	if !plus {
		cbData = nil
	}
	gs2 := clientFirst[:j+k+2]
	bare := clientFirst[j+k+2:]
	var cnonce string
	for _, attr := range strings.Split(bare, ",") {
		if v, ok := strings.CutPrefix(attr, "r="); ok {
			cnonce = v
		}
	}
	if !strings.HasPrefix(bare, "n=") || cnonce == "" {
		return fatalf(pgcode.ProtocolViolation, "malformed SCRAM message")
	}
	var rnd [18]byte
	rand.Read(rnd[:])
	nonce := cnonce + base64.StdEncoding.EncodeToString(rnd[:])
	serverFirst := fmt.Sprintf("r=%s,s=%s,i=%d", nonce, base64.StdEncoding.EncodeToString(sec.salt), sec.iter)
	if err := c.send(&pgproto3.AuthenticationSASLContinue{Data: []byte(serverFirst)}); err != nil {
		return err
	}
	b, err = c.readAuthMessage()
	if err != nil {
		return err
	}
	clientFinal := string(b)
	p := strings.LastIndex(clientFinal, ",p=")
	if p < 0 {
		return fatalf(pgcode.ProtocolViolation, "malformed SCRAM message")
	}
	withoutProof := clientFinal[:p]
	proof, err := base64.StdEncoding.DecodeString(clientFinal[p+3:])
	if err != nil || len(proof) != sha256.Size {
		return fatalf(pgcode.ProtocolViolation, "malformed SCRAM message")
	}
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || attrs[0] != "c="+base64.StdEncoding.EncodeToString(append([]byte(gs2), cbData...)) {
		return fatalf(pgcode.ProtocolViolation, "SCRAM channel binding check failed")
	}
	if attrs[1] != "r="+nonce {
		return fatalf(pgcode.ProtocolViolation, "SCRAM nonce mismatch")
	}
	authMsg := bare + "," + serverFirst + "," + withoutProof
	sig := hmacSHA256(sec.storedKey, authMsg)
	clientKey := make([]byte, sha256.Size)
	for j := range clientKey {
		clientKey[j] = proof[j] ^ sig[j]
	}
	h := sha256.Sum256(clientKey)
	if !exists || !valid || subtle.ConstantTimeCompare(h[:], sec.storedKey) != 1 {
		return errAuthFailed
	}
	final := "v=" + base64.StdEncoding.EncodeToString(hmacSHA256(sec.serverKey, authMsg))
	return c.send(&pgproto3.AuthenticationSASLFinal{Data: []byte(final)})
}
