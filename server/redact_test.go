package server

import (
	"testing"

	"sluice/exec/connector"
	"sluice/sql/parser"
)

// The parser writes secret references the connector layer reads.
func TestSecretRefAgrees(t *testing.T) {
	if parser.SecretRef("x") != connector.SecretRef("x") {
		t.Fatalf("parser.SecretRef %q != connector.SecretRef %q", parser.SecretRef("x"), connector.SecretRef("x"))
	}
	st, err := parser.ParseOne(`CREATE SINK s FROM t WITH (connector = 'postgres', password = SECRET pw, url = 'u')`)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := st.(*parser.CreateSink).With.Get("password")
	if name, ok := connector.SecretRefName(v); !ok || name != "pw" {
		t.Fatalf("password option %q is not a reference to pw", v)
	}
	st, err = parser.ParseOne(`CREATE SINK s FROM t WITH (connector = 'postgres', password = secret.pw2, url = 'u')`)
	if err != nil {
		t.Fatal(err)
	}
	v, _ = st.(*parser.CreateSink).With.Get("password")
	if name, ok := connector.SecretRefName(v); !ok || name != "pw2" {
		t.Fatalf("password = secret.pw2: %q is not a reference to pw2", v)
	}
}

func TestRedactSQL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`CREATE SINK s FROM t WITH (connector = 'postgres', url = 'postgres://u:p4ss''w@h:5432/db', password = 'hunter22', table = 'x')`,
			`CREATE SINK s FROM t WITH (connector = 'postgres', url = 'postgres://u:********@h:5432/db', password = '********', table = 'x')`},
		{`CREATE SOURCE k (a INT) WITH (connector = 'kafka', properties.sasl.password = 'pw', aws.credentials.secret_access_key = 'k', topic = 'password')`,
			`CREATE SOURCE k (a INT) WITH (connector = 'kafka', properties.sasl.password = '********', aws.credentials.secret_access_key = '********', topic = 'password')`},
		{`CREATE SINK s FROM t WITH (connector = 'postgres', password = SECRET pw, url = 'postgres://u@h/db')`,
			`CREATE SINK s FROM t WITH (connector = 'postgres', password = SECRET pw, url = 'postgres://u@h/db')`},
		{`CREATE SECRET s AS 'plain'`, `CREATE SECRET "s" AS '********'`},
	} {
		if got := redactSQL(c.in); got != c.want {
			t.Errorf("redactSQL(%s)\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

func TestRedactText(t *testing.T) {
	secrets := []string{"longsecret", "abc"}
	if got := redactWith("dial postgres://u:longsecret@h failed; abc", secrets); got != "dial postgres://u:********@h failed; abc" {
		t.Errorf("redactWith: %q", got)
	}
	for _, c := range []struct {
		in, pw string
		ok     bool
	}{
		{"postgres://u:pw@h/db", "pw", true},
		{"redis://:pw@h:6379/0", "pw", true},
		{"postgres://u@h/db?x=a:b@c", "", false},
		{"kafka:9092", "", false},
	} {
		pw, ok := urlPassword(c.in)
		if pw != c.pw || ok != c.ok {
			t.Errorf("urlPassword(%q) = %q, %v", c.in, pw, ok)
		}
	}
	for k, want := range map[string]bool{"password": true, "properties.sasl.password": true, "s3.secret": true, "token": true,
		"primary_key": false, "url": false, "topic": false, "key.encode": false} {
		if sensitiveKey(k) != want {
			t.Errorf("sensitiveKey(%q) = %v", k, !want)
		}
	}
}
