package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	kafkasasl "github.com/segmentio/kafka-go/sasl"
	kafkaplain "github.com/segmentio/kafka-go/sasl/plain"
	kafkascram "github.com/segmentio/kafka-go/sasl/scram"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// Security: how the source and both sinks reach a cluster that needs TLS
// or SASL, in the librdkafka option names RisingWave takes:
//
//	properties.security.protocol  PLAINTEXT (default) | SSL | SASL_PLAINTEXT | SASL_SSL
//	properties.sasl.mechanism     PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512
//	properties.sasl.username, properties.sasl.password
//	properties.ssl.ca.location           PEM file of the CAs to trust (default: the system's)
//	properties.ssl.certificate.location  PEM client certificate (mutual TLS),
//	properties.ssl.key.location          with its PEM key
//	properties.ssl.endpoint.identification.algorithm  https (default: the broker's
//	                                     name is verified) | none
//
// TLS is done by the dialer (policyDialer), so every connection of every
// client is wrapped, those to brokers the metadata names included; SASL
// by each client library (kafka-go for the source and the writer, kgo for
// the transactional sink).

// securityOptions are the option keys of security, known to the source
// and the sinks.
var securityOptions = []string{
	"properties.security.protocol",
	"properties.sasl.mechanism",
	"properties.sasl.username",
	"properties.sasl.password",
	"properties.ssl.ca.location",
	"properties.ssl.certificate.location",
	"properties.ssl.key.location",
	"properties.ssl.endpoint.identification.algorithm",
}

func init() {
	for _, k := range securityOptions {
		srcKnownOptions[k] = true
		sinkKnownOptions[k] = true
	}
}

// security is a parsed security configuration; the zero value is
// PLAINTEXT.
type security struct {
	tls       *tls.Config // nil: plaintext
	mechanism string      // "": no SASL
	user      string
	pass      string
}

// parseSecurity checks the security options and reads the files they
// name (a missing or malformed file is an error at CREATE).
func parseSecurity(opts map[string]string) (*security, error) {
	get := func(k string) string { return strings.TrimSpace(opts[k]) }
	s := &security{}
	var useTLS, useSASL bool
	switch p := strings.ToUpper(get("properties.security.protocol")); p {
	case "", "PLAINTEXT":
	case "SSL":
		useTLS = true
	case "SASL_PLAINTEXT":
		useSASL = true
	case "SASL_SSL":
		useTLS, useSASL = true, true
	default:
		return nil, connector.OptionError("kafka", "properties.security.protocol", "%q is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", p)
	}
	if useSASL {
		switch m := strings.ToUpper(get("properties.sasl.mechanism")); m {
		case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
			s.mechanism = m
		case "":
			return nil, connector.OptionError("kafka", "properties.sasl.mechanism", "is required with properties.security.protocol = SASL_PLAINTEXT or SASL_SSL (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)")
		default:
			return nil, connector.OptionError("kafka", "properties.sasl.mechanism", "%q is not supported (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; GSSAPI and OAUTHBEARER are not)", m)
		}
		s.user, s.pass = opts["properties.sasl.username"], opts["properties.sasl.password"]
		if s.user == "" {
			return nil, connector.OptionError("kafka", "properties.sasl.username", "is required with SASL")
		}
	} else {
		for _, k := range []string{"properties.sasl.mechanism", "properties.sasl.username", "properties.sasl.password"} {
			if get(k) != "" {
				return nil, connector.OptionError("kafka", k, "needs properties.security.protocol = SASL_PLAINTEXT or SASL_SSL")
			}
		}
	}
	sslKeys := []string{"properties.ssl.ca.location", "properties.ssl.certificate.location", "properties.ssl.key.location", "properties.ssl.endpoint.identification.algorithm"}
	if !useTLS {
		for _, k := range sslKeys {
			if get(k) != "" {
				return nil, connector.OptionError("kafka", k, "needs properties.security.protocol = SSL or SASL_SSL")
			}
		}
		return s, nil
	}
	s.tls = &tls.Config{MinVersion: tls.VersionTLS12}
	if f := get("properties.ssl.ca.location"); f != "" {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, connector.OptionError("kafka", "properties.ssl.ca.location", "%v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, connector.OptionError("kafka", "properties.ssl.ca.location", "%s holds no PEM certificate", f)
		}
		s.tls.RootCAs = pool
	}
	cert, key := get("properties.ssl.certificate.location"), get("properties.ssl.key.location")
	if (cert == "") != (key == "") {
		return nil, connector.OptionError("kafka", "properties.ssl.certificate.location", "and properties.ssl.key.location go together")
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, connector.OptionError("kafka", "properties.ssl.certificate.location", "%v", err)
		}
		s.tls.Certificates = []tls.Certificate{pair}
	}
	switch v := strings.ToLower(get("properties.ssl.endpoint.identification.algorithm")); v {
	case "", "https":
	case "none":
		// The chain is still verified (verifyChain); only the name is not.
		s.tls.InsecureSkipVerify = true
		s.tls.VerifyConnection = verifyChain(s.tls)
	default:
		return nil, connector.OptionError("kafka", "properties.ssl.endpoint.identification.algorithm", "%q is not 'https' or 'none'", v)
	}
	return s, nil
}

// verifyChain verifies the peer's certificate chain against c's roots
// without checking the name (endpoint identification 'none').
func verifyChain(c *tls.Config) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return pgerror.New(pgcode.ConnectionException, "kafka broker sent no TLS certificate")
		}
		inter := x509.NewCertPool()
		for _, ic := range cs.PeerCertificates[1:] {
			inter.AddCert(ic)
		}
		_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: c.RootCAs, Intermediates: inter})
		return err
	}
}

// wrap runs the TLS handshake over conn when TLS is on.
func (s *security) wrap(ctx context.Context, conn net.Conn, addr string) (net.Conn, error) {
	if s == nil || s.tls == nil {
		return conn, nil
	}
	cfg := s.tls.Clone()
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}

// describe names the protocol for an error message ("" for PLAINTEXT):
// a broker that refuses SASL credentials may just close the connection.
func (s *security) describe() string {
	switch {
	case s == nil || (s.tls == nil && s.mechanism == ""):
		return ""
	case s.mechanism == "":
		return " (SSL)"
	case s.tls == nil:
		return fmt.Sprintf(" (SASL_PLAINTEXT, %s as %q)", s.mechanism, s.user)
	}
	return fmt.Sprintf(" (SASL_SSL, %s as %q)", s.mechanism, s.user)
}

// kafkaGo returns the SASL mechanism for kafka-go's Transport (nil: none).
func (s *security) kafkaGo() (kafkasasl.Mechanism, error) {
	if s == nil {
		return nil, nil
	}
	switch s.mechanism {
	case "PLAIN":
		return kafkaplain.Mechanism{Username: s.user, Password: s.pass}, nil
	case "SCRAM-SHA-256":
		return kafkascram.Mechanism(kafkascram.SHA256, s.user, s.pass)
	case "SCRAM-SHA-512":
		return kafkascram.Mechanism(kafkascram.SHA512, s.user, s.pass)
	}
	return nil, nil
}

// kgoOpts returns kgo's options for the SASL mechanism (none without).
func (s *security) kgoOpts() []kgo.Opt {
	if s == nil {
		return nil
	}
	switch s.mechanism {
	case "PLAIN":
		return []kgo.Opt{kgo.SASL(plain.Auth{User: s.user, Pass: s.pass}.AsMechanism())}
	case "SCRAM-SHA-256":
		return []kgo.Opt{kgo.SASL(scram.Auth{User: s.user, Pass: s.pass}.AsSha256Mechanism())}
	case "SCRAM-SHA-512":
		return []kgo.Opt{kgo.SASL(scram.Auth{User: s.user, Pass: s.pass}.AsSha512Mechanism())}
	}
	return nil
}

// policyDialer dials only the broker addresses the policy allows (the
// bootstrap servers are checked at CREATE, the brokers the cluster's
// metadata names here), with TLS when sec has it.
func policyDialer(p *connector.Policy, sec *security, timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if err := p.CheckAddr("kafka", addr, 9092); err != nil {
			return nil, err
		}
		d := net.Dialer{Timeout: timeout}
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if sec != nil && sec.tls != nil {
			hctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			return sec.wrap(hctx, conn, addr)
		}
		return conn, nil
	}
}
