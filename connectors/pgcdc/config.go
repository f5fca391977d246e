package pgcdc

// Options, the factory and the checks made before reading: the
// connection settings, wal_level, the table's key and the column types.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Factory is the postgres-cdc source connector.
type Factory struct{}

func init() { connector.RegisterSource(Name, Factory{}) }

// Name is the connector's name in WITH (connector = …).
const Name = "postgres-cdc"

var knownOptions = map[string]bool{
	"connector": true, "hostname": true, "port": true, "username": true, "password": true,
	"database.name": true, "schema.name": true, "table.name": true, "slot.name": true,
	"publication.name": true, "publication.create.enable": true, "format": true, "encode": true,
}

// config is a parsed source configuration.
type config struct {
	name        string
	host        string
	port        int
	user        string
	password    string
	database    string
	schema      string
	table       string
	slot        string
	publication string
	createPub   bool
	cols        []types.Column
	key         []int
}

func optionError(key, format string, args ...any) *pgerror.Error {
	return pgerror.New(pgcode.InvalidParameterValue, "%s option %s: %s", Name, key, fmt.Sprintf(format, args...))
}

// validName reports whether s may name a slot or a publication: what
// PostgreSQL allows for slot names (lower-case letters, digits, '_').
func validName(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// parse checks a source configuration without connecting anywhere.
func parse(cfg connector.SourceConfig) (*config, error) {
	if len(cfg.Columns) == 0 {
		return nil, pgerror.New(pgcode.InvalidObjectDefinition, "a postgres-cdc source needs declared columns").
			WithHint("declare the columns to capture, with the table's PRIMARY KEY")
	}
	if len(cfg.Key) == 0 {
		return nil, pgerror.New(pgcode.InvalidObjectDefinition, "a postgres-cdc source needs a PRIMARY KEY").
			WithHint("declare the upstream table's primary key columns as PRIMARY KEY: changes are keyed by it")
	}
	for k := range cfg.Options {
		if !knownOptions[k] {
			return nil, optionError(k, "unknown option").
				WithHint("postgres-cdc options are hostname, port, username, password, database.name, schema.name, table.name, slot.name, publication.name and publication.create.enable")
		}
	}
	get := func(k string) string { return strings.TrimSpace(cfg.Options[k]) }
	if f := get("format"); f != "" && !strings.EqualFold(f, "UPSERT") {
		return nil, pgerror.New(pgcode.FeatureNotSupported, "postgres-cdc source does not take FORMAT %s", f).
			WithHint("leave FORMAT out: the source emits keyed changes")
	}
	if e := get("encode"); e != "" && !strings.EqualFold(e, "JSON") {
		return nil, pgerror.New(pgcode.FeatureNotSupported, "postgres-cdc source does not take ENCODE %s", e).
			WithHint("leave ENCODE out: rows come from PostgreSQL's own types")
	}
	c := &config{name: cfg.Name, cols: cfg.Columns, key: cfg.Key, port: 5432, schema: "public", createPub: true}
	for _, req := range []struct {
		k   string
		dst *string
	}{{"hostname", &c.host}, {"username", &c.user}, {"database.name", &c.database}, {"table.name", &c.table}} {
		if *req.dst = get(req.k); *req.dst == "" {
			return nil, optionError(req.k, "is required")
		}
	}
	c.password = cfg.Options["password"]
	if v := get("port"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 65535 {
			return nil, optionError("port", "%q is not a port", v)
		}
		c.port = n
	}
	if v := get("schema.name"); v != "" {
		c.schema = v
	}
	if s, t, ok := strings.Cut(c.table, "."); ok && get("schema.name") == "" {
		c.schema, c.table = s, t // table.name = 'schema.table' (RisingWave accepts it)
	}
	base := strings.ToLower(cfg.Name)
	c.slot = get("slot.name")
	if c.slot == "" {
		c.slot = "sluice_" + sanitize(base)
	}
	if !validName(c.slot) {
		return nil, optionError("slot.name", "%q is not a valid replication slot name", c.slot).
			WithHint("use lower-case letters, digits and underscores, at most 63")
	}
	c.publication = get("publication.name")
	if c.publication == "" {
		c.publication = "sluice_" + sanitize(base) + "_pub"
	}
	if !validName(c.publication) {
		return nil, optionError("publication.name", "%q is not a valid publication name", c.publication).
			WithHint("use lower-case letters, digits and underscores, at most 63")
	}
	switch v := strings.ToLower(get("publication.create.enable")); v {
	case "", "true":
	case "false":
		c.createPub = false
	default:
		return nil, optionError("publication.create.enable", "%q is not 'true' or 'false'", v)
	}
	if err := cfg.Policy.CheckHost(Name, c.host, c.port); err != nil {
		return nil, err
	}
	for _, col := range c.cols {
		if _, ok := allowed[col.Type.Fam]; !ok {
			return nil, pgerror.New(pgcode.FeatureNotSupported, "postgres-cdc source cannot read column %s of type %s", col.Name, col.Type)
		}
	}
	return c, nil
}

// sanitize maps a source name to the characters slot names allow.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) > 48 {
		b = b[:48]
	}
	return string(b)
}

// Validate implements connector.SourceFactory: the options, then a probe
// of the upstream (credentials, wal_level, the table, its key and column
// types). An upstream that cannot be reached is not an error here: the
// source retries once it runs.
func (Factory) Validate(cfg connector.SourceConfig) ([]types.Column, error) {
	c, err := parse(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := probe(ctx, c); err != nil && !transient(err) {
		return nil, err
	}
	return cfg.Columns, nil
}

// Open implements connector.SourceFactory. It probes the upstream like
// Validate; the reading starts with the first Read.
func (Factory) Open(ctx context.Context, cfg connector.SourceConfig) (connector.Source, error) {
	c, err := parse(cfg)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := probe(pctx, c); err != nil && !transient(err) {
		return nil, err
	}
	if !claimSlot(c.slotID()) {
		return nil, pgerror.New("55006", "postgres-cdc source %s: replication slot %q is already read by another job", c.name, c.slot).
			WithHint("a replication slot has one reader: read the source from one materialized view and build other views on that view, or create another source with its own slot.name")
	}
	return newReader(c), nil
}

// slots holds the slots read by this process's open readers: a slot has
// one reader, and a second one would take turns with the first (or drop
// the slot of a first one still taking its snapshot).
var slots struct {
	sync.Mutex
	held map[string]bool
}

func (c *config) slotID() string {
	return net.JoinHostPort(c.host, strconv.Itoa(c.port)) + "/" + c.database + "/" + c.slot
}

func claimSlot(id string) bool {
	slots.Lock()
	defer slots.Unlock()
	if slots.held[id] {
		return false
	}
	if slots.held == nil {
		slots.held = map[string]bool{}
	}
	slots.held[id] = true
	return true
}

func releaseSlot(id string) {
	slots.Lock()
	defer slots.Unlock()
	delete(slots.held, id)
}

// quoteDSN quotes a keyword/value connection-string value.
func quoteDSN(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// dsn returns the connection string of c (replication: a walsender
// connection for logical replication). Every connection speaks UTC and
// ISO so that the text of dates and intervals parses one way.
func (c *config) dsn(replication bool) string {
	s := fmt.Sprintf("host=%s port=%d user=%s password=%s dbname=%s sslmode=disable connect_timeout=5 "+
		"timezone=UTC datestyle=ISO intervalstyle=postgres extra_float_digits=3 bytea_output=hex application_name=%s",
		quoteDSN(c.host), c.port, quoteDSN(c.user), quoteDSN(c.password), quoteDSN(c.database), quoteDSN("sluice_"+c.slot))
	if replication {
		s += " replication=database"
	}
	return s
}

func (c *config) connect(ctx context.Context) (*pgx.Conn, error) {
	cc, err := pgx.ParseConfig(c.dsn(false))
	if err != nil {
		return nil, optionError("hostname", "%v", err)
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, c.upstreamError(err)
	}
	return conn, nil
}

func (c *config) connectReplication(ctx context.Context) (*pgconn.PgConn, error) {
	pc, err := pgconn.ParseConfig(c.dsn(true))
	if err != nil {
		return nil, optionError("hostname", "%v", err)
	}
	conn, err := pgconn.ConnectConfig(ctx, pc)
	if err != nil {
		return nil, c.upstreamError(err)
	}
	return conn, nil
}

// upstreamError gives err (from the upstream) a SQLSTATE and a hint: the
// upstream's own code for what it refused, 08006 for a lost connection.
func (c *config) upstreamError(err error) error {
	var pe *pgerror.Error
	if errors.As(err, &pe) {
		return err
	}
	where := fmt.Sprintf("postgres-cdc source %s (%s)", c.name, net.JoinHostPort(c.host, strconv.Itoa(c.port)))
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		e := pgerror.New(pgcode.Code(pg.Code), "%s: upstream: %s", where, pg.Message)
		switch pg.Code {
		case "28P01", "28000":
			e = e.WithHint("check the source's username and password (and pg_hba.conf upstream)")
		case "3D000":
			e = e.WithHint("check database.name")
		case "55006":
			e = e.WithHint("another reader holds the replication slot %s: read a postgres-cdc source from one materialized view only, or give each source its own slot.name", c.slot)
		}
		return e
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return pgerror.New(connectionFailure, "%s: %v", where, err).
		WithHint("the source retries until the upstream answers")
}

// transient reports whether retrying may cure err: a lost or refused
// connection, an upstream shutting down or starting, a slot still held by
// a reader that is going away.
func transient(err error) bool {
	var pe *pgerror.Error
	if errors.As(err, &pe) {
		code := string(pe.Code)
		return strings.HasPrefix(code, "08") || code == "57P01" || code == "57P02" || code == "57P03" || code == "55006" || code == "53300"
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return strings.HasPrefix(pg.Code, "08") || pg.Code == "57P01" || pg.Code == "57P02" || pg.Code == "57P03" || pg.Code == "55006" || pg.Code == "53300"
	}
	return !errors.Is(err, context.Canceled)
}

// upstreamTable is what probe learns of the upstream table.
type upstreamTable struct {
	oid     uint32
	columns map[string]string // name → type name (pg_type.typname; arrays start with '_')
}

// probe connects and checks what retrying cannot cure: wal_level, that
// the table exists with a primary key (or replica identity FULL) that is
// the declared one, and the declared columns and their types.
func probe(ctx context.Context, c *config) (*upstreamTable, error) {
	conn, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var walLevel string
	if err := conn.QueryRow(ctx, "SHOW wal_level").Scan(&walLevel); err != nil {
		return nil, c.upstreamError(err)
	}
	if walLevel != "logical" {
		return nil, pgerror.New(pgcode.ObjectNotInPrerequisiteState, "postgres-cdc source %s: the upstream's wal_level is %s, not logical", c.name, walLevel).
			WithHint("set wal_level = logical upstream (ALTER SYSTEM SET wal_level = logical) and restart PostgreSQL")
	}
	var oid uint32
	var ident string
	err = conn.QueryRow(ctx, `SELECT c.oid, c.relreplident::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')`, c.schema, c.table).Scan(&oid, &ident)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, pgerror.New(pgcode.UndefinedTable, "postgres-cdc source %s: upstream table %s.%s does not exist", c.name, c.schema, c.table).
			WithHint("check schema.name and table.name")
	}
	if err != nil {
		return nil, c.upstreamError(err)
	}
	t := &upstreamTable{oid: oid, columns: map[string]string{}}
	rows, err := conn.Query(ctx, `SELECT a.attname, t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
		WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped`, oid)
	if err != nil {
		return nil, c.upstreamError(err)
	}
	for rows.Next() {
		var n, ty string
		if err := rows.Scan(&n, &ty); err != nil {
			return nil, c.upstreamError(err)
		}
		t.columns[n] = ty
	}
	if err := rows.Err(); err != nil {
		return nil, c.upstreamError(err)
	}
	var pk []string
	if err := conn.QueryRow(ctx, `SELECT coalesce(array_agg(a.attname::text ORDER BY a.attname), '{}') FROM pg_index i
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
		WHERE i.indrelid = $1 AND (i.indisprimary OR i.indisreplident)
		AND i.indexrelid = (SELECT indexrelid FROM pg_index WHERE indrelid = $1 AND (indisreplident OR indisprimary) ORDER BY indisreplident DESC LIMIT 1)`,
		oid).Scan(&pk); err != nil {
		return nil, c.upstreamError(err)
	}
	if len(pk) == 0 && ident != "f" || ident == "n" {
		return nil, pgerror.New(pgcode.ObjectNotInPrerequisiteState, "postgres-cdc source %s: upstream table %s.%s has no primary key and no replica identity", c.name, c.schema, c.table).
			WithHint("add a primary key upstream, or ALTER TABLE %s.%s REPLICA IDENTITY FULL: updates and deletes are keyed by it", c.schema, c.table)
	}
	for _, col := range c.cols {
		ty, ok := t.columns[col.Name]
		if !ok {
			return nil, pgerror.New(pgcode.UndefinedColumn, "postgres-cdc source %s: column %s does not exist in upstream table %s.%s", c.name, col.Name, c.schema, c.table)
		}
		if !compatible(col.Type, ty) {
			return nil, pgerror.New(pgcode.DatatypeMismatch, "postgres-cdc source %s: column %s is %s upstream, which does not map to %s", c.name, col.Name, ty, col.Type).
				WithHint("declare it as %s (or TEXT, which takes any type's text)", suggest(ty))
		}
	}
	if len(pk) > 0 {
		var declared []string
		for _, k := range c.key {
			declared = append(declared, c.cols[k].Name)
		}
		if !sameSet(declared, pk) {
			return nil, pgerror.New(pgcode.InvalidObjectDefinition, "postgres-cdc source %s: the declared PRIMARY KEY (%s) is not the upstream key (%s)",
				c.name, strings.Join(declared, ", "), strings.Join(pk, ", ")).
				WithHint("declare PRIMARY KEY (%s)", strings.Join(pk, ", "))
		}
	}
	return t, nil
}

func sameSet(a, b []string) bool {
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

// connectionFailure is SQLSTATE 08006 (connection_failure).
const connectionFailure pgcode.Code = "08006"

// KeyedChanges implements connector.ChangeSource.
func (Factory) KeyedChanges() {}
