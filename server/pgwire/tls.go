package pgwire

import (
	"bufio"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"hash"
	"net"

	"sluice/sql/pgcode"
)

// This file owns transport encryption: SSLRequest answered 'S' followed by
// a TLS handshake, PostgreSQL 17's direct TLS (the client starts with a
// ClientHello and ALPN "postgresql"), and Options.TLSRequired.

// tlsRecordHandshake is the first byte of a TLS ClientHello record.
const tlsRecordHandshake = 0x16

// alpnPostgres is the ALPN protocol PostgreSQL 17 clients offer.
const alpnPostgres = "postgresql"

// canTLS reports whether the connection may be upgraded: TLS is
// configured and the client is on TCP (as PostgreSQL, Unix sockets are
// not encrypted).
func (c *conn) canTLS() bool {
	if c.srv.opts.TLS == nil || c.nc != c.raw {
		return false
	}
	_, unix := c.raw.LocalAddr().(*net.UnixAddr)
	return !unix
}

// startTLS answers an SSLRequest with 'S' and runs the handshake.
func (c *conn) startTLS() bool {
	if c.write([]byte{'S'}) != nil || c.flush() != nil {
		return false
	}
	if c.br.Buffered() > 0 {
		// Bytes sent before the handshake could have been injected by a
		// man in the middle (CVE-2021-23222).
		c.trySendFatal(fatalf(pgcode.ProtocolViolation, "received unencrypted data after SSL request"))
		return false
	}
	return c.handshake(false)
}

// directTLS starts TLS when the client's first byte is a TLS handshake
// record; it returns false when the connection must end.
func (c *conn) directTLS() bool {
	if !c.canTLS() {
		return true
	}
	b, err := c.br.Peek(1)
	if err != nil {
		return false
	}
	if b[0] != tlsRecordHandshake {
		return true
	}
	return c.handshake(true)
}

// handshake runs the server side of the TLS handshake over c.raw (reading
// through the buffered reader, which may hold the ClientHello) and swaps
// the connection's reader and writer to the TLS connection.
func (c *conn) handshake(direct bool) bool {
	cfg := c.srv.opts.TLS.Clone()
	cfg.NextProtos = []string{alpnPostgres}
	tc := tls.Server(&bufferedConn{Conn: c.raw, r: c.br}, cfg)
	if err := tc.HandshakeContext(c.ctx); err != nil {
		c.srv.opts.Logf("pgwire: TLS handshake with %s: %v", remoteAddr(c.raw), err)
		return false
	}
	if direct && tc.ConnectionState().NegotiatedProtocol != alpnPostgres {
		// PostgreSQL refuses direct TLS without ALPN: a client that did not
		// ask for it may be speaking another protocol.
		return false
	}
	c.nc = tc
	c.br = bufio.NewReaderSize(tc, readBufferSize)
	c.bw = bufio.NewWriterSize(tc, writeBufferSize)
	return true
}

// bufferedConn reads through r (which wraps Conn).
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// checkTLSRequired refuses a plaintext TCP client when Options.TLSRequired
// is set (a Unix-socket client is local and is let through).
func (c *conn) checkTLSRequired(user, db string) bool {
	if !c.srv.opts.TLSRequired || c.nc != c.raw {
		return true
	}
	if _, unix := c.raw.LocalAddr().(*net.UnixAddr); unix {
		return true
	}
	host := remoteAddr(c.raw)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	c.trySendFatal(fatalf(pgcode.InvalidAuthorizationSpecification,
		"no pg_hba.conf entry for host %q, user %q, database %q, no encryption", host, user, db).
		WithHint("The server requires TLS (--tls-required): connect with sslmode=require or stronger."))
	return false
}

// tlsServerEndPoint returns the tls-server-end-point channel binding
// data (RFC 5929): the hash of the server's certificate, with the hash of
// its signature algorithm (SHA-256 for MD5 and SHA-1); nil when the
// connection is not on TLS.
func (c *conn) tlsServerEndPoint() []byte {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return nil
	}
	certs := c.srv.opts.TLS.Certificates
	if len(certs) == 0 || len(certs[0].Certificate) == 0 || tc.ConnectionState().Version == 0 {
		return nil
	}
	der := certs[0].Certificate[0]
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil
	}
	var h hash.Hash
	switch cert.SignatureAlgorithm {
	case x509.SHA384WithRSA, x509.ECDSAWithSHA384, x509.SHA384WithRSAPSS:
		h = sha512.New384()
	case x509.SHA512WithRSA, x509.ECDSAWithSHA512, x509.SHA512WithRSAPSS:
		h = sha512.New()
	case x509.PureEd25519:
		return nil // no hash: channel binding is not defined (as PostgreSQL)
	default:
		h = sha256.New()
	}
	h.Write(der)
	return h.Sum(nil)
}
