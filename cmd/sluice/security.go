package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sluice/server"
	"sluice/server/pgwire"
)

// This file owns the command line of authentication, TLS, the Unix
// socket and connection limits, and how they become server and pgwire
// options.

// securityFlags are the flags of this file.
type securityFlags struct {
	superuser, passwordFile   string
	authMD5                   bool
	tlsCert, tlsKey           string
	tlsGenerate, tlsRequired  bool
	unixSocketDir             string
	maxConns, reservedConns   int
	authTimeout               time.Duration
	superuserPasswordFromEnv  string
	superuserPasswordResolved string
}

func registerSecurityFlags() *securityFlags {
	f := &securityFlags{}
	flag.StringVar(&f.superuser, "superuser", "sluice", "name of the bootstrap superuser role")
	flag.StringVar(&f.passwordFile, "superuser-password-file", "", "file holding the bootstrap superuser's password (or set SLUICE_SUPERUSER_PASSWORD); without any password Sluice accepts only local connections")
	flag.BoolVar(&f.authMD5, "auth-md5", false, "allow md5 password authentication for roles whose password is stored as md5")
	flag.StringVar(&f.tlsCert, "tls-cert", "", "TLS certificate file (PEM)")
	flag.StringVar(&f.tlsKey, "tls-key", "", "TLS private key file (PEM)")
	flag.BoolVar(&f.tlsGenerate, "tls-generate", false, "use server.crt/server.key in the data directory, generating a self-signed pair when missing")
	flag.BoolVar(&f.tlsRequired, "tls-required", false, "refuse TCP connections that do not use TLS")
	flag.StringVar(&f.unixSocketDir, "unix-socket-dir", "/tmp", "directory of the Unix socket .s.PGSQL.<port> (empty: none)")
	flag.IntVar(&f.maxConns, "max-connections", 100, "maximum number of concurrent sessions")
	flag.IntVar(&f.reservedConns, "superuser-reserved-connections", 3, "sessions of max-connections kept for superusers")
	flag.DurationVar(&f.authTimeout, "authentication-timeout", time.Minute, "time a client has to send its startup packet and authenticate")
	return f
}

// password returns the bootstrap superuser's password from the file or
// the environment ("" for none).
func (f *securityFlags) password() (string, error) {
	if f.passwordFile != "" {
		b, err := os.ReadFile(f.passwordFile)
		if err != nil {
			return "", fmt.Errorf("--superuser-password-file: %w", err)
		}
		pw := strings.TrimRight(string(b), "\r\n")
		if pw == "" {
			return "", fmt.Errorf("--superuser-password-file %s is empty", f.passwordFile)
		}
		return pw, nil
	}
	return os.Getenv("SLUICE_SUPERUSER_PASSWORD"), nil
}

// authConfig returns the engine's role configuration.
func (f *securityFlags) authConfig(password string) server.AuthConfig {
	return server.AuthConfig{
		Superuser: f.superuser, SuperuserPassword: password,
		MaxConnections: f.maxConns, ReservedConnections: f.reservedConns,
		AuthTimeout: pgDuration(f.authTimeout),
		TLS:         f.tlsGenerate || f.tlsCert != "",
	}
}

// pgDuration prints d as PostgreSQL shows a time setting ("1min", "30s").
func pgDuration(d time.Duration) string {
	switch {
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "min"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
}

// check validates the flags against each other.
func (f *securityFlags) check() error {
	if f.maxConns < 1 {
		return errors.New("--max-connections must be at least 1")
	}
	if f.reservedConns < 0 || f.reservedConns >= f.maxConns {
		return fmt.Errorf("--superuser-reserved-connections (%d) must be less than --max-connections (%d)", f.reservedConns, f.maxConns)
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	if f.tlsGenerate && f.tlsCert != "" {
		return errors.New("--tls-generate and --tls-cert exclude each other")
	}
	if f.tlsRequired && !f.tlsGenerate && f.tlsCert == "" {
		return errors.New("--tls-required needs --tls-cert/--tls-key or --tls-generate")
	}
	if f.authTimeout < time.Second || f.authTimeout > 600*time.Second {
		return errors.New("--authentication-timeout must be between 1s and 600s (as PostgreSQL)")
	}
	return nil
}

// tlsConfig loads (or generates) the server's certificate; nil without TLS.
func (f *securityFlags) tlsConfig(dataDir string) (*tls.Config, error) {
	cert, key := f.tlsCert, f.tlsKey
	if f.tlsGenerate {
		cert, key = filepath.Join(dataDir, "server.crt"), filepath.Join(dataDir, "server.key")
		if err := generateCert(cert, key); err != nil {
			return nil, err
		}
	}
	if cert == "" {
		return nil, nil
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("loading TLS certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// generateCert writes a self-signed certificate for localhost and the
// loopback addresses, with its key (0600), unless both files exist.
func generateCert(certFile, keyFile string) error {
	_, e1 := os.Stat(certFile)
	_, e2 := os.Stat(keyFile)
	if e1 == nil && e2 == nil {
		return nil
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	host, _ := os.Hostname()
	names := []string{"localhost"}
	if host != "" && host != "localhost" {
		names = append(names, host)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "localhost", Organization: []string{"Sluice (self-signed)"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     names,
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		return err
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
}

// checkListen refuses a non-loopback listen address when no password is
// configured (trust mode).
func checkListen(addr string, trust bool, superuser string) error {
	if !trust {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if isLoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("refusing to listen on %s: no password is configured, so Sluice accepts only local connections "+
		"(set the superuser %q's password with --superuser-password-file FILE or SLUICE_SUPERUSER_PASSWORD, "+
		"or listen on 127.0.0.1)", addr, superuser)
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	if host == "" {
		return false
	}
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return false
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return false
		}
	}
	return true
}

// listenUnix listens on DIR/.s.PGSQL.<port> (PostgreSQL's name, so that
// `psql -h DIR -p PORT` finds it); nil when dir is empty.
func listenUnix(dir string, tcp net.Addr) (net.Listener, error) {
	if dir == "" {
		return nil, nil
	}
	ta, ok := tcp.(*net.TCPAddr)
	if !ok {
		return nil, nil
	}
	path := filepath.Join(dir, ".s.PGSQL."+strconv.Itoa(ta.Port))
	// A socket file left by a killed server would make Listen fail: remove
	// it when nothing answers on it.
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("unix socket %s is in use by another server", path)
	}
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("unix socket: %w", err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	return ln, nil
}

// pgwireOptions returns the wire options of the flags.
func (f *securityFlags) pgwireOptions(eng *server.Engine, tlsCfg *tls.Config, logf func(string, ...any)) pgwire.Options {
	return pgwire.Options{
		Logf: logf, Auth: eng, AuthMD5: f.authMD5, TLS: tlsCfg, TLSRequired: f.tlsRequired,
		MaxConnections: f.maxConns, ReservedConnections: f.reservedConns, AuthTimeout: f.authTimeout,
	}
}
