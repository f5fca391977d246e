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

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"sluice/connectors/internal/cdc"
	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

func init() { connector.RegisterSource(Name, factory) }

// Name is the connector's name in WITH (connector = …).
const Name = "postgres-cdc"

// spec is what the shared CDC option parsing needs of postgres-cdc.
var spec = &cdc.Spec{
	Connector: Name, Upstream: "PostgreSQL", DefaultPort: 5432,
	Known: []string{"hostname", "port", "username", "password", "database.name", "schema.name", "table.name", "slot.name",
		"publication.name", "publication.create.enable"},
	Allowed: func(f types.Family) bool { _, ok := allowed[f]; return ok },
}

// config is a parsed source configuration.
type config struct {
	*cdc.Options
	schema      string
	slot        string
	publication string
	createPub   bool
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
	o, err := cdc.Parse(cfg, spec)
	if err != nil {
		return nil, err
	}
	c := &config{Options: o, schema: "public"}
	if v := o.Get("schema.name"); v != "" {
		c.schema = v
	}
	if s, t, ok := strings.Cut(c.Table, "."); ok && o.Get("schema.name") == "" {
		c.schema, c.Table = s, t // table.name = 'schema.table' (RisingWave accepts it)
	}
	base := strings.ToLower(cfg.Name)
	c.slot = o.Get("slot.name")
	if c.slot == "" {
		c.slot = "sluice_" + sanitize(base)
	}
	if !validName(c.slot) {
		return nil, spec.OptionError("slot.name", "%q is not a valid replication slot name", c.slot).
			WithHint("use lower-case letters, digits and underscores, at most 63")
	}
	c.publication = o.Get("publication.name")
	if c.publication == "" {
		c.publication = "sluice_" + sanitize(base) + "_pub"
	}
	if !validName(c.publication) {
		return nil, spec.OptionError("publication.name", "%q is not a valid publication name", c.publication).
			WithHint("use lower-case letters, digits and underscores, at most 63")
	}
	if c.createPub, err = spec.ParseBool(o, "publication.create.enable", true); err != nil {
		return nil, err
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

// factory is the postgres-cdc source connector: the shared CDC factory over
// this package's parse, probe (credentials, wal_level, the table, its key
// and column types) and reader.
var factory = &cdc.Factory[*config]{
	Parse:     parse,
	Probe:     func(ctx context.Context, c *config) error { _, err := probe(ctx, c); return err },
	Transient: transient,
	Claim:     claim,
	NewReader: func(c *config) connector.Source { return newReader(c) },
}

// claim takes the reader's replication slot for this process.
func claim(c *config) error {
	if !slots.Claim(c.slotID()) {
		return pgerror.New("55006", "postgres-cdc source %s: replication slot %q is already read by another job", c.Name, c.slot).
			WithHint("a replication slot has one reader: read the source from one materialized view and build other views on that view, or create another source with its own slot.name")
	}
	return nil
}

// slots holds the slots read by this process's open readers: a slot has
// one reader, and a second one would take turns with the first (or drop
// the slot of a first one still taking its snapshot).
var slots cdc.Claims

func (c *config) slotID() string {
	return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) + "/" + c.Database + "/" + c.slot
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
		quoteDSN(c.Host), c.Port, quoteDSN(c.User), quoteDSN(c.Password), quoteDSN(c.Database), quoteDSN("sluice_"+c.slot))
	if replication {
		s += " replication=database"
	}
	return s
}

func (c *config) connect(ctx context.Context) (*pgx.Conn, error) {
	cc, err := pgx.ParseConfig(c.dsn(false))
	if err != nil {
		return nil, spec.OptionError("hostname", "%v", err)
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
		return nil, spec.OptionError("hostname", "%v", err)
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
	where := fmt.Sprintf("postgres-cdc source %s (%s)", c.Name, net.JoinHostPort(c.Host, strconv.Itoa(c.Port)))
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
		return nil, pgerror.New(pgcode.ObjectNotInPrerequisiteState, "postgres-cdc source %s: the upstream's wal_level is %s, not logical", c.Name, walLevel).
			WithHint("set wal_level = logical upstream (ALTER SYSTEM SET wal_level = logical) and restart PostgreSQL")
	}
	var oid uint32
	var ident string
	err = conn.QueryRow(ctx, `SELECT c.oid, c.relreplident::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')`, c.schema, c.Table).Scan(&oid, &ident)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, pgerror.New(pgcode.UndefinedTable, "postgres-cdc source %s: upstream table %s.%s does not exist", c.Name, c.schema, c.Table).
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
		return nil, pgerror.New(pgcode.ObjectNotInPrerequisiteState, "postgres-cdc source %s: upstream table %s.%s has no primary key and no replica identity", c.Name, c.schema, c.Table).
			WithHint("add a primary key upstream, or ALTER TABLE %s.%s REPLICA IDENTITY FULL: updates and deletes are keyed by it", c.schema, c.Table)
	}
	for _, col := range c.Cols {
		ty, ok := t.columns[col.Name]
		if !ok {
			return nil, pgerror.New(pgcode.UndefinedColumn, "postgres-cdc source %s: column %s does not exist in upstream table %s.%s", c.Name, col.Name, c.schema, c.Table)
		}
		if !compatible(col.Type, ty) {
			return nil, pgerror.New(pgcode.DatatypeMismatch, "postgres-cdc source %s: column %s is %s upstream, which does not map to %s", c.Name, col.Name, ty, col.Type).
				WithHint("declare it as %s (or TEXT, which takes any type's text)", suggest(ty))
		}
	}
	if len(pk) > 0 {
		declared := c.KeyNames()
		if !cdc.SameSet(declared, pk) {
			return nil, pgerror.New(pgcode.InvalidObjectDefinition, "postgres-cdc source %s: the declared PRIMARY KEY (%s) is not the upstream key (%s)",
				c.Name, strings.Join(declared, ", "), strings.Join(pk, ", ")).
				WithHint("declare PRIMARY KEY (%s)", strings.Join(pk, ", "))
		}
	}
	return t, nil
}

// connectionFailure is SQLSTATE 08006 (connection_failure).
const connectionFailure pgcode.Code = "08006"
