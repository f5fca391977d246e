package connector

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// Policy confines what connectors may touch on the machine and the
// network. The server builds one from its flags (--file-root,
// --socket-ports, --connector-allow-hosts) and hands it to every
// connector in SourceConfig.Policy and SinkConfig.Policy, at CREATE
// (Validate) and again when a job opens the connector (Open), so that a
// restart with narrower flags confines the objects created before it.
//
// A nil *Policy confines files and hosts not at all and listening ports to
// DefaultSocketPorts: only connector unit tests run without one; the
// server always sets it.
type Policy struct {
	// FileRoot is the directory file sinks and sources are confined to:
	// absolute, cleaned and with its symlinks resolved (NewPolicy does it).
	FileRoot string
	// SocketPorts is the range listening sources may use.
	SocketPorts PortRange
	// AllowHosts lists the hosts (and ports) outgoing connections may
	// reach; empty allows any.
	AllowHosts []HostRule
	// Secret returns the value of the secret called name (nil: no
	// secrets). Options referencing secrets are resolved by ResolveOptions
	// before they reach a connector's Open.
	Secret func(name string) (string, error)
}

// PortRange is an inclusive range of TCP ports.
type PortRange struct{ Min, Max int }

// DefaultSocketPorts is the port range listening sources get without
// --socket-ports: unprivileged, and clear of the usual database ports.
var DefaultSocketPorts = PortRange{Min: 10000, Max: 65535}

// minSocketPort is the lowest port a listening source may ever use: the
// ports below it are privileged.
const minSocketPort = 1024

// HostRule is one entry of --connector-allow-hosts: a host name or
// address, and a port (0: any port).
type HostRule struct {
	Host string
	Port int
}

// NewPolicy makes root (created if missing, mode 0750) the file root and
// returns a policy with the given port range and host list.
func NewPolicy(root string, ports PortRange, hosts []HostRule) (*Policy, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o750); err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	return &Policy{FileRoot: real, SocketPorts: ports, AllowHosts: hosts}, nil
}

// ParsePortRange reads "lo-hi" or a single port; ports below 1024 are
// refused.
func ParsePortRange(s string) (PortRange, error) {
	lo, hi, found := strings.Cut(strings.TrimSpace(s), "-")
	if !found {
		hi = lo
	}
	a, err1 := strconv.Atoi(strings.TrimSpace(lo))
	b, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if err1 != nil || err2 != nil || a > b || b > 65535 {
		return PortRange{}, errors.New("want a port range such as 10000-65535")
	}
	if a < minSocketPort {
		return PortRange{}, errors.New("ports below 1024 are privileged and never allowed")
	}
	return PortRange{Min: a, Max: b}, nil
}

// ParseAllowHosts reads "h1,h2:port,[::1]:5432".
func ParseAllowHosts(s string) ([]HostRule, error) {
	var out []HostRule
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		h, p := item, 0
		if host, port, err := net.SplitHostPort(item); err == nil {
			n, err := strconv.Atoi(port)
			if err != nil || n < 1 || n > 65535 {
				return nil, errors.New("bad port in " + strconv.Quote(item))
			}
			h, p = host, n
		} else if strings.Count(item, ":") == 1 {
			return nil, errors.New("bad host:port " + strconv.Quote(item))
		}
		out = append(out, HostRule{Host: strings.ToLower(strings.Trim(h, "[]")), Port: p})
	}
	return out, nil
}

// FilePath returns where a file connector's path option points: a
// relative path is taken under the file root; the result is cleaned, and a
// path that leaves the root, lexically ("..", an absolute path elsewhere)
// or through a symlink of an existing part, is refused with 42501.
func (p *Policy) FilePath(conn, option, path string) (string, error) {
	if strings.TrimSpace(path) == "" {
		return "", OptionError(conn, option, "is required")
	}
	if p == nil {
		return filepath.Clean(path), nil
	}
	full := path
	if !filepath.IsAbs(full) {
		full = filepath.Join(p.FileRoot, full)
	}
	full = filepath.Clean(full)
	if !within(p.FileRoot, full) {
		return "", p.outside(conn, option, path)
	}
	// Resolve the symlinks of the longest existing prefix: the rest does
	// not exist yet, so it holds none.
	existing, rest := full, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", pgerror.Wrap(err, pgcode.IOError, "%s option %s: %s", conn, option, path)
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", pgerror.Wrap(err, pgcode.IOError, "%s option %s: %s", conn, option, path)
	}
	if !within(p.FileRoot, filepath.Join(real, rest)) {
		return "", p.outside(conn, option, path).WithDetail("A symbolic link on the way leads out of the file root.")
	}
	return full, nil
}

func (p *Policy) outside(conn, option, path string) *pgerror.Error {
	return pgerror.New(pgcode.InsufficientPrivilege, "%s option %s: path %q is outside the file root", conn, option, path).
		WithHint("File connectors read and write only under --file-root (here %s); give a path relative to it.", p.FileRoot)
}

// within reports whether path is root or below it (both cleaned).
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// CheckListenPort refuses a listening port outside the allowed range (0,
// a port the system picks, is checked once bound).
func (p *Policy) CheckListenPort(conn string, port int) error {
	r := DefaultSocketPorts
	if p != nil {
		r = p.SocketPorts
	}
	if port == 0 {
		return nil
	}
	if port < max(r.Min, minSocketPort) || port > r.Max {
		return pgerror.New(pgcode.InsufficientPrivilege, "%s source may not listen on port %d", conn, port).
			WithHint("Listening sources may use ports %d-%d (--socket-ports); ports below 1024 never.", r.Min, r.Max)
	}
	return nil
}

// CheckHost refuses an outgoing connection to host:port that
// --connector-allow-hosts does not list.
func (p *Policy) CheckHost(conn, host string, port int) error {
	if p == nil || len(p.AllowHosts) == 0 {
		return nil
	}
	h := strings.ToLower(strings.Trim(host, "[]"))
	for _, r := range p.AllowHosts {
		if r.Host == h && (r.Port == 0 || r.Port == port) {
			return nil
		}
	}
	return pgerror.New(pgcode.InsufficientPrivilege, "%s connector may not connect to %s", conn, net.JoinHostPort(h, strconv.Itoa(port))).
		WithHint("Outgoing connections may reach only the hosts of --connector-allow-hosts.")
}

// CheckAddr is CheckHost for "host:port" (defPort when the port is
// missing).
func (p *Policy) CheckAddr(conn, addr string, defPort int) error {
	if p == nil || len(p.AllowHosts) == 0 {
		return nil
	}
	host, port := addr, defPort
	if h, ps, err := net.SplitHostPort(addr); err == nil {
		n, err := strconv.Atoi(ps)
		if err != nil {
			return pgerror.New(pgcode.InvalidParameterValue, "%s connector: bad address %q", conn, addr)
		}
		host, port = h, n
	}
	return p.CheckHost(conn, host, port)
}
