package postgres

import (
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Factory is the postgres sink connector.
type Factory struct{}

func init() { connector.RegisterSink("postgres", Factory{}) }

const (
	// defaultConnectTimeout bounds a connection attempt when the URL sets
	// no connect_timeout.
	defaultConnectTimeout = 5 * time.Second
	// defaultWriteTimeout bounds one Write (connecting included) and is
	// the server-side statement_timeout, so a hung server or a lock held
	// by a dead session turns into an error the runtime retries.
	defaultWriteTimeout = 60 * time.Second
	// progressTableName is the default name of the progress table.
	progressTableName = "sluice_sink_progress"
)

// appendWhy is the weakest-link explanation of write_mode = 'append'.
const appendWhy = "postgres append writes have no progress row: a crash between the write and its confirmation repeats them; use write_mode = 'transactional'"

// knownOptions are the WITH options a postgres sink takes.
var knownOptions = map[string]bool{
	"connector": true, "url": true, "table": true, "primary_key": true, "write_mode": true,
	"delivery": true, "auto.create": true, "progress.table": true, "write.timeout": true,
	"user": true, "password": true,
}

// config is a parsed and checked sink configuration.
type config struct {
	name       string
	id         int64
	cols       []types.Column
	key        []int // positions of the key columns; nil = unkeyed
	mode       string
	url        string
	connCfg    *pgx.ConnConfig
	table      pgx.Identifier
	progress   pgx.Identifier // only for transactional
	autoCreate bool
	timeout    time.Duration
}

func optErr(key, format string, args ...any) *pgerror.Error {
	return pgerror.New(pgcode.InvalidParameterValue, "postgres option %s: %s", key, fmt.Sprintf(format, args...))
}

// parseConfig checks cfg without connecting anywhere.
func parseConfig(cfg connector.SinkConfig) (*config, error) {
	c := &config{
		name:       cfg.Name,
		id:         int64(cfg.ID),
		cols:       cfg.Columns,
		key:        cfg.Key,
		autoCreate: true,
		timeout:    defaultWriteTimeout,
	}
	if len(cfg.Columns) == 0 {
		return nil, pgerror.New(pgcode.InvalidObjectDefinition, "a postgres sink needs at least one column")
	}
	for _, k := range cfg.Key {
		if k < 0 || k >= len(cfg.Columns) {
			return nil, pgerror.New(pgcode.Internal, "postgres sink: key position %d out of range", k)
		}
	}
	for k := range cfg.Options {
		if !knownOptions[k] {
			return nil, optErr(k, "unknown option").
				WithHint("the postgres sink takes url, user, password, table, primary_key, write_mode, delivery, auto.create, progress.table and write.timeout")
		}
	}
	if cfg.Format != "" || cfg.Encode != "" {
		return nil, pgerror.New(pgcode.FeatureNotSupported, "the postgres sink writes table rows and takes no FORMAT … ENCODE …")
	}
	if v, ok := cfg.Options["delivery"]; ok {
		if _, err := connector.ParseGuarantee(v); err != nil {
			return nil, err
		}
	}

	c.url = strings.TrimSpace(cfg.Options["url"])
	if c.url == "" {
		return nil, optErr("url", "is required (a postgres:// URL)")
	}
	if !strings.HasPrefix(c.url, "postgres://") && !strings.HasPrefix(c.url, "postgresql://") {
		return nil, optErr("url", "%q is not a postgres:// URL", redact(c.url))
	}
	connCfg, err := pgx.ParseConfig(c.url)
	if err != nil {
		return nil, optErr("url", "%v", err)
	}
	c.connCfg = connCfg
	// user and password override the URL's (RisingWave's postgres sink
	// takes them as options; password = SECRET name keeps it out of sight).
	if v, ok := cfg.Options["user"]; ok {
		connCfg.User = v
	}
	if v, ok := cfg.Options["password"]; ok {
		connCfg.Password = v
	}
	if err := cfg.Policy.CheckHost("postgres", connCfg.Host, int(connCfg.Port)); err != nil {
		return nil, err
	}
	for _, fb := range connCfg.Fallbacks {
		if err := cfg.Policy.CheckHost("postgres", fb.Host, int(fb.Port)); err != nil {
			return nil, err
		}
	}

	tableOpt := strings.TrimSpace(cfg.Options["table"])
	if tableOpt == "" {
		return nil, optErr("table", "is required")
	}
	if c.table, err = parseQualifiedName(tableOpt); err != nil {
		return nil, optErr("table", "%v", err)
	}

	if v, ok := cfg.Options["auto.create"]; ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			c.autoCreate = true
		case "false":
			c.autoCreate = false
		default:
			return nil, optErr("auto.create", "%q is not 'true' or 'false'", v)
		}
	}
	if v, ok := cfg.Options["write.timeout"]; ok {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return nil, optErr("write.timeout", "%q is not a positive duration such as '30s'", v)
		}
		c.timeout = d
	}

	c.mode = strings.ToLower(strings.TrimSpace(cfg.WriteMode))
	if c.mode == "" {
		c.mode = connector.ModeTransactional
	}
	switch c.mode {
	case connector.ModeAppend:
		if !cfg.AppendOnly {
			return nil, pgerror.New(pgcode.FeatureNotSupported,
				"postgres sink %s: write_mode 'append' cannot write an input whose rows are updated or deleted", cfg.Name).
				WithHint("use write_mode = 'upsert' or 'transactional' with primary_key")
		}
	case connector.ModeUpsert:
		if len(cfg.Key) == 0 {
			return nil, pgerror.New(pgcode.InvalidParameterValue,
				"postgres sink %s: write_mode 'upsert' needs primary_key", cfg.Name).
				WithHint("add primary_key = 'col[, col…]' naming the columns that identify a row")
		}
	case connector.ModeTransactional:
		if !cfg.AppendOnly && len(cfg.Key) == 0 {
			return nil, pgerror.New(pgcode.InvalidParameterValue,
				"postgres sink %s: write_mode 'transactional' over an input whose rows are updated or deleted needs primary_key", cfg.Name).
				WithHint("add primary_key = 'col[, col…]' naming the columns that identify a row")
		}
	default:
		return nil, pgerror.New(pgcode.InvalidParameterValue, "postgres sink: invalid write_mode %q", cfg.WriteMode).
			WithHint("write_mode is 'append', 'upsert' or 'transactional'")
	}
	if c.mode == connector.ModeTransactional {
		if v := strings.TrimSpace(cfg.Options["progress.table"]); v != "" {
			if c.progress, err = parseQualifiedName(v); err != nil {
				return nil, optErr("progress.table", "%v", err)
			}
		} else if len(c.table) == 2 {
			c.progress = pgx.Identifier{c.table[0], progressTableName}
		} else {
			c.progress = pgx.Identifier{progressTableName}
		}
	}
	return c, nil
}

// Validate implements connector.SinkFactory.
func (Factory) Validate(cfg connector.SinkConfig) (connector.SinkPlan, error) {
	c, err := parseConfig(cfg)
	if err != nil {
		return connector.SinkPlan{}, err
	}
	plan := connector.SinkPlan{WriteMode: c.mode, Guarantee: connector.ExactlyOnce}
	if c.mode == connector.ModeAppend {
		plan.Guarantee = connector.AtLeastOnce
		plan.Why = appendWhy
	}
	return plan, nil
}

// parseQualifiedName reads [schema.]name the way PostgreSQL reads an
// identifier: unquoted parts fold to lower case, "quoted" parts are exact
// ("" is a quote inside them).
func parseQualifiedName(s string) (pgx.Identifier, error) {
	var parts pgx.Identifier
	i := 0
	for {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		var part strings.Builder
		if i < len(s) && s[i] == '"' {
			i++
			closed := false
			for i < len(s) {
				if s[i] == '"' {
					if i+1 < len(s) && s[i+1] == '"' {
						part.WriteByte('"')
						i += 2
						continue
					}
					i++
					closed = true
					break
				}
				part.WriteByte(s[i])
				i++
			}
			if !closed {
				return nil, pgerror.New(pgcode.InvalidName, "unterminated quoted identifier in %q", s)
			}
		} else {
			start := i
			for i < len(s) && s[i] != '.' && s[i] != ' ' && s[i] != '"' {
				i++
			}
			part.WriteString(lowerASCII(s[start:i]))
		}
		if part.Len() == 0 {
			return nil, pgerror.New(pgcode.InvalidName, "invalid table name %q", s)
		}
		parts = append(parts, part.String())
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i == len(s) {
			break
		}
		if s[i] != '.' {
			return nil, pgerror.New(pgcode.InvalidName, "invalid table name %q", s)
		}
		i++
	}
	if len(parts) > 2 {
		return nil, pgerror.New(pgcode.InvalidName, "table name %q has more than schema.table", s)
	}
	return parts, nil
}

// lowerASCII folds A-Z as PostgreSQL folds unquoted identifiers.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// redact hides the password of a URL in messages.
func redact(url string) string {
	at := strings.LastIndexByte(url, '@')
	scheme := strings.Index(url, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return url
	}
	userinfo := url[scheme+3 : at]
	if user, _, ok := strings.Cut(userinfo, ":"); ok {
		return url[:scheme+3] + user + ":xxxxx" + url[at:]
	}
	return url
}
