package nats

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	natsgo "github.com/nats-io/nats.go"

	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// connectTimeout bounds a connection attempt at Open: a server that is
// down is a clear error, not a hang.
const connectTimeout = 3 * time.Second

// conn is what a source and a sink share: where the server is and how to
// log in.
type conn struct {
	server   string
	user     string
	password string
	token    string
}

var connOptions = map[string]bool{"connector": true, "server": true, "user": true, "password": true, "token": true}

func optErr(key, format string, args ...any) error {
	return connector.OptionError("nats", key, format, args...)
}

func parseConn(opts map[string]string, policy *connector.Policy) (conn, error) {
	get := func(k string) string { return strings.TrimSpace(opts[k]) }
	c := conn{server: get("server"), user: get("user"), password: opts["password"], token: opts["token"]}
	if c.server == "" {
		return c, optErr("server", "is required (nats://host:port)")
	}
	for _, s := range strings.Split(c.server, ",") {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil || u.Host == "" || (u.Scheme != "nats" && u.Scheme != "tls") {
			return c, optErr("server", "%q is not a nats://host:port URL", s)
		}
		port := 4222
		if p := u.Port(); p != "" {
			port, _ = strconv.Atoi(p)
		}
		if err := policy.CheckHost("nats", u.Hostname(), port); err != nil {
			return c, err
		}
	}
	if c.token != "" && (c.user != "" || c.password != "") {
		return c, optErr("token", "give either token or user and password")
	}
	return c, nil
}

// connect dials the server. The client reconnects by itself for ever
// after a connection is lost; the first attempt must succeed.
func (c conn) connect(name string) (*natsgo.Conn, error) {
	opts := []natsgo.Option{
		natsgo.Name("sluice " + name),
		natsgo.Timeout(connectTimeout),
		natsgo.MaxReconnects(-1),
		natsgo.ReconnectWait(250 * time.Millisecond),
	}
	if c.user != "" || c.password != "" {
		opts = append(opts, natsgo.UserInfo(c.user, c.password))
	}
	if c.token != "" {
		opts = append(opts, natsgo.Token(c.token))
	}
	nc, err := natsgo.Connect(c.server, opts...)
	if err != nil {
		if errors.Is(err, natsgo.ErrAuthorization) || strings.Contains(strings.ToLower(err.Error()), "authorization") {
			return nil, pgerror.Wrap(err, pgcode.InvalidPassword, "nats %s: the server %s refused the credentials", name, c.server).
				WithHint("check the user and password (or token) options")
		}
		return nil, pgerror.Wrap(err, pgcode.SQLClientUnableToEstablishSQLConnection, "nats %s: cannot connect to %s", name, c.server).
			WithHint("is nats-server running with JetStream (-js)?")
	}
	return nc, nil
}
