package cdc

// The WITH options every CDC source takes.

import (
	"fmt"
	"strconv"
	"strings"

	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Spec is what a connector tells Parse about itself.
type Spec struct {
	Connector   string   // its name in WITH (connector = …): "postgres-cdc"
	Upstream    string   // the upstream's name in hints: "PostgreSQL"
	DefaultPort int      // the port when the option is absent
	Known       []string // every option it takes, in the order the hint lists them
	// Allowed reports whether a declared column may have the family.
	Allowed func(types.Family) bool
	// TypeHint is the hint of a column type Allowed refuses ("" for none).
	TypeHint string
}

// Options is a parsed CDC source configuration: what every CDC source
// has. Get reads the connector's own options.
type Options struct {
	Name     string
	Host     string
	Port     int
	User     string
	Password string
	Database string
	Table    string
	Cols     []types.Column
	Key      []int
	raw      map[string]string
}

// Get returns option k, trimmed ("" when absent).
func (o *Options) Get(k string) string { return strings.TrimSpace(o.raw[k]) }

// OptionError is a 22023 error about option key.
func (s *Spec) OptionError(key, format string, args ...any) *pgerror.Error {
	return pgerror.New(pgcode.InvalidParameterValue, "%s option %s: %s", s.Connector, key, fmt.Sprintf(format, args...))
}

// Parse checks the options every CDC source shares without connecting
// anywhere: the declared columns and key, unknown options, FORMAT and
// ENCODE, the required options, the port, the host policy and the
// declared column types.
func Parse(cfg connector.SourceConfig, s *Spec) (*Options, error) {
	if len(cfg.Columns) == 0 {
		return nil, pgerror.New(pgcode.InvalidObjectDefinition, "a %s source needs declared columns", s.Connector).
			WithHint("declare the columns to capture, with the table's PRIMARY KEY")
	}
	if len(cfg.Key) == 0 {
		return nil, pgerror.New(pgcode.InvalidObjectDefinition, "a %s source needs a PRIMARY KEY", s.Connector).
			WithHint("declare the upstream table's primary key columns as PRIMARY KEY: changes are keyed by it")
	}
	for k := range cfg.Options {
		if !s.known(k) {
			return nil, s.OptionError(k, "unknown option").
				WithHint("%s options are %s and %s", s.Connector, strings.Join(s.Known[:len(s.Known)-1], ", "), s.Known[len(s.Known)-1])
		}
	}
	o := &Options{Name: cfg.Name, Cols: cfg.Columns, Key: cfg.Key, Port: s.DefaultPort, raw: cfg.Options}
	if f := o.Get("format"); f != "" && !strings.EqualFold(f, "UPSERT") {
		return nil, pgerror.New(pgcode.FeatureNotSupported, "%s source does not take FORMAT %s", s.Connector, f).
			WithHint("leave FORMAT out: the source emits keyed changes")
	}
	if e := o.Get("encode"); e != "" && !strings.EqualFold(e, "JSON") {
		return nil, pgerror.New(pgcode.FeatureNotSupported, "%s source does not take ENCODE %s", s.Connector, e).
			WithHint("leave ENCODE out: rows come from %s's own types", s.Upstream)
	}
	for _, req := range []struct {
		k   string
		dst *string
	}{{"hostname", &o.Host}, {"username", &o.User}, {"database.name", &o.Database}, {"table.name", &o.Table}} {
		if *req.dst = o.Get(req.k); *req.dst == "" {
			return nil, s.OptionError(req.k, "is required")
		}
	}
	o.Password = cfg.Options["password"]
	if v := o.Get("port"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 65535 {
			return nil, s.OptionError("port", "%q is not a port", v)
		}
		o.Port = n
	}
	if err := cfg.Policy.CheckHost(s.Connector, o.Host, o.Port); err != nil {
		return nil, err
	}
	for _, col := range o.Cols {
		if !s.Allowed(col.Type.Fam) {
			e := pgerror.New(pgcode.FeatureNotSupported, "%s source cannot read column %s of type %s", s.Connector, col.Name, col.Type)
			if s.TypeHint != "" {
				e = e.WithHint("%s", s.TypeHint)
			}
			return nil, e
		}
	}
	return o, nil
}

func (s *Spec) known(k string) bool {
	if k == "connector" || k == "format" || k == "encode" {
		return true
	}
	for _, n := range s.Known {
		if n == k {
			return true
		}
	}
	return false
}

// ParseBool reads a 'true'/'false' option ("" gives def).
func (s *Spec) ParseBool(o *Options, key string, def bool) (bool, error) {
	switch v := strings.ToLower(o.Get(key)); v {
	case "":
		return def, nil
	case "true":
		return true, nil
	case "false":
		return false, nil
	default:
		return false, s.OptionError(key, "%q is not 'true' or 'false'", v)
	}
}

// KeyNames returns the names of the declared key columns.
func (o *Options) KeyNames() []string {
	names := make([]string, len(o.Key))
	for i, k := range o.Key {
		names[i] = o.Cols[k].Name
	}
	return names
}

// SameKey reports whether rows a and b have equal key columns.
func (o *Options) SameKey(a, b types.Row) bool {
	for _, k := range o.Key {
		if types.Compare(a[k], b[k]) != 0 {
			return false
		}
	}
	return true
}

// SameSet reports whether a and b hold the same strings.
func SameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]bool{}
	for _, s := range a {
		m[s] = true
	}
	for _, s := range b {
		if !m[s] {
			return false
		}
	}
	return true
}
