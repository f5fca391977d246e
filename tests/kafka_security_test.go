package tests

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestKafkaSecurity runs a Kafka source and both Kafka sinks (EXACTLY_ONCE
// through the transactional producer, AT_LEAST_ONCE through the plain
// writer) against brokers that need SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512), SSL and SASL_SSL: the view holds exactly the records
// produced, each sink's topic exactly the view's rows. A wrong password,
// a CA that did not sign the broker's certificate and options that do not
// fit the protocol end in clear errors.
func TestKafkaSecurity(t *testing.T) {
	dir := t.TempDir()
	ca, caPEM := ksecCA(t)
	certFile, keyFile := ksecServerCert(t, dir, ca)
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	otherCA, otherPEM := ksecCA(t)
	_ = otherCA
	otherCAFile := filepath.Join(dir, "other-ca.pem")
	if err := os.WriteFile(otherCAFile, otherPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)

	users := "PLAIN:alice:pw-plain,SCRAM-SHA-256:bob:pw-256,SCRAM-SHA-512:carol:pw-512"
	saslBroker := ksecBroker(t, "--sasl", users)
	sslBroker := ksecBroker(t, "--tls-cert", certFile, "--tls-key", keyFile)
	bothBroker := ksecBroker(t, "--sasl", users, "--tls-cert", certFile, "--tls-key", keyFile)

	s := StartServer(t, Options{CheckpointInterval: 200 * time.Millisecond})
	conn := s.ConnectSimple(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	cases := []struct {
		name   string
		broker *Broker
		with   string // the security options
		kgo    []kgo.Opt
	}{
		{"plain", saslBroker, `properties.security.protocol = 'SASL_PLAINTEXT', properties.sasl.mechanism = 'PLAIN', properties.sasl.username = 'alice', properties.sasl.password = 'pw-plain'`,
			[]kgo.Opt{kgo.SASL(plain.Auth{User: "alice", Pass: "pw-plain"}.AsMechanism())}},
		{"scram256", saslBroker, `properties.security.protocol = 'SASL_PLAINTEXT', properties.sasl.mechanism = 'SCRAM-SHA-256', properties.sasl.username = 'bob', properties.sasl.password = 'pw-256'`,
			[]kgo.Opt{kgo.SASL(scram.Auth{User: "bob", Pass: "pw-256"}.AsSha256Mechanism())}},
		{"ssl", sslBroker, `properties.security.protocol = 'SSL', properties.ssl.ca.location = '` + caFile + `'`,
			[]kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: pool})}},
		{"saslssl", bothBroker, `properties.security.protocol = 'SASL_SSL', properties.sasl.mechanism = 'SCRAM-SHA-512', properties.sasl.username = 'carol', properties.sasl.password = 'pw-512', properties.ssl.ca.location = '` + caFile + `'`,
			[]kgo.Opt{kgo.SASL(scram.Auth{User: "carol", Pass: "pw-512"}.AsSha512Mechanism()), kgo.DialTLSConfig(&tls.Config{RootCAs: pool})}},
	}
	for _, c := range cases {
		in, out, outAL := "in_"+c.name, "out_"+c.name, "outal_"+c.name
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.broker.Addr), kgo.AllowAutoTopicCreation()}, c.kgo...)...)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for i := 1; i <= 5; i++ {
			v := fmt.Sprintf("%s-%d", c.name, i)
			rec := &kgo.Record{Topic: in, Value: []byte(fmt.Sprintf(`{"id":%d,"v":%q}`, i, v))}
			if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
				t.Fatalf("%s: producing: %v", c.name, err)
			}
			want = append(want, fmt.Sprintf("%d %s", i, v))
		}
		bootstrap := `connector = 'kafka', properties.bootstrap.server = '` + c.broker.Addr + `', ` + c.with
		ExecAll(t, conn,
			`CREATE SOURCE src_`+c.name+` (id BIGINT, v TEXT) WITH (`+bootstrap+`, topic = '`+in+`') FORMAT PLAIN ENCODE JSON`,
			`CREATE MATERIALIZED VIEW mv_`+c.name+` AS SELECT id, v FROM src_`+c.name,
			`CREATE SINK sk_`+c.name+` FROM mv_`+c.name+` WITH (`+bootstrap+`, topic = '`+out+`', delivery = 'EXACTLY_ONCE') FORMAT PLAIN ENCODE JSON`,
			`CREATE SINK skal_`+c.name+` FROM mv_`+c.name+` WITH (`+bootstrap+`, topic = '`+outAL+`', delivery = 'AT_LEAST_ONCE') FORMAT PLAIN ENCODE JSON`,
		)
		waitForLines(t, conn, `SELECT id, v FROM mv_`+c.name+` ORDER BY id`, want)
		for _, topic := range []string{out, outAL} {
			got := ksecReadTopic(t, ctx, c.broker.Addr, topic, len(want), c.kgo)
			if strings.Join(got, "; ") != strings.Join(want, "; ") {
				t.Fatalf("%s: topic %s holds %q, want %q", c.name, topic, got, want)
			}
		}
		cl.Close()
	}

	// A wrong password: the job cannot read and says why; nothing is
	// counted as read.
	ExecAll(t, conn, `CREATE SOURCE src_badpw (id BIGINT, v TEXT) WITH (connector = 'kafka', properties.bootstrap.server = '`+saslBroker.Addr+`', topic = 'in_plain',
		properties.security.protocol = 'SASL_PLAINTEXT', properties.sasl.mechanism = 'PLAIN', properties.sasl.username = 'alice', properties.sasl.password = 'wrong') FORMAT PLAIN ENCODE JSON`)
	ksecExpectFailure(t, conn, "src_badpw", `(SASL_PLAINTEXT, PLAIN as "alice")`)
	// A CA that did not sign the broker's certificate.
	ExecAll(t, conn, `CREATE SOURCE src_badca (id BIGINT, v TEXT) WITH (connector = 'kafka', properties.bootstrap.server = '`+sslBroker.Addr+`', topic = 'in_ssl',
		properties.security.protocol = 'SSL', properties.ssl.ca.location = '`+otherCAFile+`') FORMAT PLAIN ENCODE JSON`)
	ksecExpectFailure(t, conn, "src_badca", "certificate")

	for _, bad := range []struct{ with, code string }{
		{`properties.security.protocol = 'SASL_OAUTH'`, "22023"},
		{`properties.security.protocol = 'SASL_PLAINTEXT'`, "22023"},                                                                       // no mechanism
		{`properties.security.protocol = 'SASL_PLAINTEXT', properties.sasl.mechanism = 'GSSAPI', properties.sasl.username = 'x'`, "22023"}, // not supported
		{`properties.sasl.username = 'alice'`, "22023"},                                                                                    // SASL option without SASL
		{`properties.security.protocol = 'SSL', properties.ssl.ca.location = '/nonexistent/ca.pem'`, "22023"},
		{`properties.ssl.ca.location = '` + caFile + `'`, "22023"}, // SSL option without SSL
	} {
		_, err := conn.Exec(ctx, `CREATE SOURCE src_bad (id BIGINT) WITH (connector = 'kafka', properties.bootstrap.server = '`+saslBroker.Addr+`', topic = 'x', `+bad.with+`) FORMAT PLAIN ENCODE JSON`)
		if code := pgCode(err); code != bad.code {
			t.Errorf("%s: %v (code %s), want %s", bad.with, err, code, bad.code)
		}
		_, err = conn.Exec(ctx, `CREATE SINK sk_bad FROM mv_plain WITH (connector = 'kafka', properties.bootstrap.server = '`+saslBroker.Addr+`', topic = 'x', `+bad.with+`) FORMAT PLAIN ENCODE JSON`)
		if code := pgCode(err); code != bad.code {
			t.Errorf("sink %s: %v (code %s), want %s", bad.with, err, code, bad.code)
		}
	}
}

// ksecExpectFailure creates a view over src and waits until SHOW SOURCES
// shows the source's failure to reach the broker, naming what; the view
// stays empty (nothing is read, the job keeps retrying).
func ksecExpectFailure(t *testing.T, conn *pgx.Conn, src, what string) {
	t.Helper()
	ExecAll(t, conn, `CREATE MATERIALIZED VIEW mv_`+src+` AS SELECT count(*) AS n FROM `+src)
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := QueryText(context.Background(), conn, "SHOW SOURCES")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range res.Lines() {
			if strings.HasPrefix(l, src+" ") && strings.Contains(l, "cannot reach the kafka cluster") && strings.Contains(l, what) {
				waitForLines(t, conn, `SELECT n FROM mv_`+src, []string{"0"})
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("SHOW SOURCES does not report %s's failure (%s): %q", src, what, res.Lines())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ksecBroker starts a testbroker with extra flags.
func ksecBroker(t *testing.T, extra ...string) *Broker {
	t.Helper()
	bin := Tool(t, "./cmd/testbroker")
	b := &Broker{Addr: FreeAddr(t), DataDir: filepath.Join(t.TempDir(), "kafka")}
	argv := append([]string{bin, "--listen", b.Addr, "--data-dir", b.DataDir, "--partitions", "1"}, extra...)
	b.Proc = NewProc(t, "testbroker "+b.Addr, argv, nil)
	b.marker = "listening on "
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	return b
}

// ksecReadTopic reads n records of topic with a read_committed consumer and
// returns them as "id v" lines sorted by id.
func ksecReadTopic(t *testing.T, ctx context.Context, addr, topic string, n int, auth []kgo.Opt) []string {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, auth...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	deadline := time.Now().Add(60 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			var v struct {
				ID int64
				V  string
			}
			if err := json.Unmarshal(r.Value, &v); err != nil {
				got = append(got, "bad "+string(r.Value))
				return
			}
			got = append(got, fmt.Sprintf("%d %s", v.ID, v.V))
		})
	}
	// Nothing more than n (a duplicate would show here).
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, "extra "+string(r.Value)) })
	cancel()
	slices.Sort(got)
	return got
}

// ksecCA makes a self-signed CA.
func ksecCA(t *testing.T) (*tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sluice test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// ksecServerCert makes a certificate for 127.0.0.1 signed by ca and writes
// it and its key as PEM files in dir.
func ksecServerCert(t *testing.T, dir string, ca *tls.Certificate) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Leaf, &key.PublicKey, ca.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
