package mysqlcdc

// Options, the factory and the checks made before reading: the
// connection settings, the binlog settings, the table's key and the
// column types.

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"sluice/connectors/internal/cdc"
	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

func init() { connector.RegisterSource(Name, factory) }

// Name is the connector's name in WITH (connector = …).
const Name = "mysql-cdc"

// spec is what the shared CDC option parsing needs of mysql-cdc.
var spec = &cdc.Spec{
	Connector: Name, Upstream: "MySQL", DefaultPort: 3306,
	Known:    []string{"hostname", "port", "username", "password", "database.name", "table.name", "server.id", "gtid.enable"},
	Allowed:  func(f types.Family) bool { return allowed[f] },
	TypeHint: "declare it as one of BOOLEAN, SMALLINT, INT, BIGINT, REAL, DOUBLE PRECISION, NUMERIC, TEXT, VARCHAR, BYTEA, DATE, TIME, TIMESTAMP, TIMESTAMPTZ or JSONB",
}

// gtidMode says how positions name a point of the binlog.
type gtidMode uint8

const (
	gtidAuto gtidMode = iota // GTIDs where the upstream is MariaDB, else file and offset
	gtidOn                   // GTIDs (gtid.enable = 'true'): MariaDB only
	gtidOff                  // binlog file and offset (gtid.enable = 'false')
)

// config is a parsed source configuration.
type config struct {
	*cdc.Options
	serverID uint32
	gtid     gtidMode
}

// parse checks a source configuration without connecting anywhere.
func parse(cfg connector.SourceConfig) (*config, error) {
	o, err := cdc.Parse(cfg, spec)
	if err != nil {
		return nil, err
	}
	c := &config{Options: o}
	if d, t, ok := strings.Cut(c.Table, "."); ok && d == c.Database {
		c.Table = t // table.name = 'db.table'
	}
	if v := o.Get("server.id"); v != "" {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n == 0 {
			return nil, spec.OptionError("server.id", "%q is not a server id (1 to 4294967295)", v)
		}
		c.serverID = uint32(n)
	} else {
		// A replica's server id must be unique among the upstream's
		// replicas: derive one from the source's name.
		h := fnv.New32a()
		_, _ = h.Write([]byte(strings.ToLower(cfg.Name) + "/" + c.Database + "/" + c.Table))
		c.serverID = 5400 + h.Sum32()%1000000
	}
	if o.Get("gtid.enable") != "" {
		on, err := spec.ParseBool(o, "gtid.enable", true)
		if err != nil {
			return nil, err
		}
		c.gtid = gtidOff
		if on {
			c.gtid = gtidOn
		}
	}
	return c, nil
}

// factory is the mysql-cdc source connector: the shared CDC factory over
// this package's parse, probe (credentials, binlog settings, the table, its key
// and column types) and reader.
var factory = &cdc.Factory[*config]{
	Parse:     parse,
	Probe:     func(ctx context.Context, c *config) error { _, err := probe(ctx, c); return err },
	Transient: transient,
	Claim:     claim,
	NewReader: func(c *config) connector.Source { return newReader(c) },
}

// claim takes the reader's server id on its upstream for this process.
func claim(c *config) error {
	if !replicas.Claim(c.replicaID()) {
		return pgerror.New("55006", "mysql-cdc source %s: server.id %d on %s is already used by another job", c.Name, c.serverID, c.addr()).
			WithHint("a replica connection has one reader: read the source from one materialized view and build other views on that view, or create another source with its own server.id")
	}
	return nil
}

// replicas holds the (upstream, server id) pairs read by this process's
// open readers: the upstream drops an older replica connection when a
// second one registers with the same server id, so two would take turns.
var replicas cdc.Claims

func (c *config) addr() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) }

func (c *config) replicaID() string {
	return c.addr() + "/" + strconv.FormatUint(uint64(c.serverID), 10)
}

// connect opens a client connection that speaks UTC and utf8mb4, so that
// the text of timestamps and strings reads one way.
func (c *config) connect(ctx context.Context) (*client.Conn, error) {
	conn, err := client.ConnectWithContext(ctx, c.addr(), c.User, c.Password, "", 5*time.Second)
	if err != nil {
		return nil, c.upstreamError(err)
	}
	for _, q := range []string{"SET NAMES utf8mb4", "SET SESSION time_zone = '+00:00'"} {
		if _, err := conn.Execute(q); err != nil {
			conn.Close()
			return nil, c.upstreamError(err)
		}
	}
	return conn, nil
}

// upstreamError gives err (from the upstream) a SQLSTATE and a hint:
// the matching PostgreSQL code for what the upstream refused, 08006 for a
// lost connection.
func (c *config) upstreamError(err error) error {
	var pe *pgerror.Error
	if errors.As(err, &pe) {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	where := fmt.Sprintf("mysql-cdc source %s (%s)", c.Name, c.addr())
	var my *mysql.MyError
	if errors.As(err, &my) {
		code := pgcode.Code(pgcode.Internal)
		hint := ""
		switch my.Code {
		case mysql.ER_ACCESS_DENIED_ERROR, mysql.ER_DBACCESS_DENIED_ERROR:
			code, hint = "28P01", "check the source's username and password"
		case mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR, mysql.ER_TABLEACCESS_DENIED_ERROR, mysql.ER_COLUMNACCESS_DENIED_ERROR:
			code, hint = "42501", "the user needs SELECT on the table and the REPLICATION SLAVE and REPLICATION CLIENT privileges (and RELOAD on MySQL)"
		case mysql.ER_BAD_DB_ERROR:
			code, hint = "3D000", "check database.name"
		case mysql.ER_NO_SUCH_TABLE:
			code, hint = "42P01", "check database.name and table.name"
		case mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG:
			code, hint = pgcode.ObjectNotInPrerequisiteState, "the binlog this source must read from was purged upstream: drop the source and create it again (it takes a new snapshot), and keep binlogs longer (binlog_expire_logs_seconds)"
		case mysql.ER_CON_COUNT_ERROR, mysql.ER_SERVER_SHUTDOWN, mysql.ER_QUERY_INTERRUPTED:
			code = connectionFailure
		}
		e := pgerror.New(code, "%s: upstream: %s (MySQL error %d)", where, my.Message, my.Code)
		if hint != "" {
			e = e.WithHint("%s", hint)
		}
		return e
	}
	return pgerror.New(connectionFailure, "%s: %v", where, err).
		WithHint("the source retries until the upstream answers")
}

// transient reports whether retrying may cure err: a lost or refused
// connection, an upstream shutting down or starting.
func transient(err error) bool {
	var pe *pgerror.Error
	if errors.As(err, &pe) {
		return strings.HasPrefix(string(pe.Code), "08") || pe.Code == "55006"
	}
	return !errors.Is(err, context.Canceled)
}

// connectionFailure is SQLSTATE 08006 (connection_failure).
const connectionFailure pgcode.Code = "08006"

// upColumn is one column of the upstream table.
type upColumn struct {
	name       string
	dataType   string // information_schema DATA_TYPE: int, varchar, …
	columnType string // COLUMN_TYPE: int(10) unsigned, …
	unsigned   bool
	charset    string
	// labels are an ENUM's or SET's values in declaration order (the
	// binlog carries an ENUM as its 1-based index, a SET as a bitmask).
	labels []string
}

// upstreamTable is what probe learns of the upstream table.
type upstreamTable struct {
	flavor string     // mysql.MySQLFlavor or mysql.MariaDBFlavor
	gtid   bool       // positions name MariaDB GTIDs (else binlog file and offset)
	cols   []upColumn // in ordinal order: the binlog's row order
	at     []int      // declared column i → upstream ordinal
}

func quoteString(s string) string { return "'" + mysql.Escape(s) + "'" }

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

func (c *config) qualified() string { return quoteIdent(c.Database) + "." + quoteIdent(c.Table) }

// str reads column i of row r of res as a string ("" for NULL).
func str(res *mysql.Result, r, i int) string {
	v, _ := res.GetString(r, i)
	return v
}

// probe connects and checks what retrying cannot cure: the binlog
// settings, that the table exists with a primary key that is the declared
// one, and the declared columns and their types.
func probe(ctx context.Context, c *config) (*upstreamTable, error) {
	conn, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	res, err := conn.Execute("SELECT @@log_bin, @@binlog_format, @@binlog_row_image, @@version")
	if err != nil {
		return nil, c.upstreamError(err)
	}
	logBin, format, image := str(res, 0, 0), str(res, 0, 1), str(res, 0, 2)
	t := &upstreamTable{flavor: mysql.MySQLFlavor}
	if strings.Contains(strings.ToLower(str(res, 0, 3)), "mariadb") {
		t.flavor = mysql.MariaDBFlavor
	}
	// MariaDB always logs GTIDs; MySQL's GTIDs (gtid_mode) are not
	// implemented: no MySQL server was at hand to test them.
	switch {
	case t.flavor == mysql.MariaDBFlavor:
		t.gtid = c.gtid != gtidOff
	case c.gtid == gtidOn:
		return nil, pgerror.New(pgcode.FeatureNotSupported, "mysql-cdc source %s: GTID positions are implemented for MariaDB only, and the upstream is MySQL %s", c.Name, str(res, 0, 3)).
			WithHint("leave gtid.enable out (or set it to 'false'): the source keeps binlog file positions")
	}
	if logBin != "1" && !strings.EqualFold(logBin, "ON") {
		return nil, pgerror.New(pgcode.ObjectNotInPrerequisiteState, "mysql-cdc source %s: the upstream's binary log is off (log_bin = OFF)", c.Name).
			WithHint("start the upstream with log_bin, binlog_format = ROW and a server_id, and restart it")
	}
	if !strings.EqualFold(format, "ROW") {
		return nil, pgerror.New(pgcode.ObjectNotInPrerequisiteState, "mysql-cdc source %s: the upstream's binlog_format is %s, not ROW", c.Name, format).
			WithHint("SET GLOBAL binlog_format = 'ROW' upstream (and in its configuration file)")
	}
	if !strings.EqualFold(image, "FULL") {
		return nil, pgerror.New(pgcode.ObjectNotInPrerequisiteState, "mysql-cdc source %s: the upstream's binlog_row_image is %s, not FULL", c.Name, image).
			WithHint("SET GLOBAL binlog_row_image = 'FULL' upstream: updates and deletes must carry whole rows")
	}
	res, err = conn.Execute(`SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, COALESCE(CHARACTER_SET_NAME, '') FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = ` + quoteString(c.Database) + ` AND TABLE_NAME = ` + quoteString(c.Table) + ` ORDER BY ORDINAL_POSITION`)
	if err != nil {
		return nil, c.upstreamError(err)
	}
	if res.RowNumber() == 0 {
		return nil, pgerror.New(pgcode.UndefinedTable, "mysql-cdc source %s: upstream table %s does not exist", c.Name, c.qualified()).
			WithHint("check database.name and table.name (and that the user may see the table)")
	}
	byName := map[string]int{}
	for r := range res.RowNumber() {
		col := upColumn{name: str(res, r, 0), dataType: strings.ToLower(str(res, r, 1)), columnType: strings.ToLower(str(res, r, 2)), charset: strings.ToLower(str(res, r, 3))}
		col.unsigned = strings.Contains(col.columnType, "unsigned")
		if col.dataType == "enum" || col.dataType == "set" {
			col.labels = enumLabels(str(res, r, 2))
		}
		byName[strings.ToLower(col.name)] = len(t.cols)
		t.cols = append(t.cols, col)
	}
	res, err = conn.Execute(`SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE
		WHERE TABLE_SCHEMA = ` + quoteString(c.Database) + ` AND TABLE_NAME = ` + quoteString(c.Table) + ` AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION`)
	if err != nil {
		return nil, c.upstreamError(err)
	}
	var pk []string
	for r := range res.RowNumber() {
		pk = append(pk, strings.ToLower(str(res, r, 0)))
	}
	if len(pk) == 0 {
		return nil, pgerror.New(pgcode.ObjectNotInPrerequisiteState, "mysql-cdc source %s: upstream table %s has no primary key", c.Name, c.qualified()).
			WithHint("add a primary key upstream (ALTER TABLE … ADD PRIMARY KEY): updates and deletes are keyed by it")
	}
	t.at = make([]int, len(c.Cols))
	for i, col := range c.Cols {
		j, ok := byName[strings.ToLower(col.Name)]
		if !ok {
			return nil, pgerror.New(pgcode.UndefinedColumn, "mysql-cdc source %s: column %s does not exist in upstream table %s", c.Name, col.Name, c.qualified())
		}
		t.at[i] = j
		up := t.cols[j]
		if err := checkType(c.Name, col, up); err != nil {
			return nil, err
		}
	}
	declared := c.KeyNames()
	for i := range declared {
		declared[i] = strings.ToLower(declared[i])
	}
	if !cdc.SameSet(declared, pk) {
		return nil, pgerror.New(pgcode.InvalidObjectDefinition, "mysql-cdc source %s: the declared PRIMARY KEY (%s) is not the upstream key (%s)",
			c.Name, strings.Join(declared, ", "), strings.Join(pk, ", ")).
			WithHint("declare PRIMARY KEY (%s)", strings.Join(pk, ", "))
	}
	return t, nil
}

// enumLabels parses the values of an ENUM or SET COLUMN_TYPE:
// enum('a','b') → a, b (a doubled quote inside a value is one quote).
func enumLabels(ct string) []string {
	i := strings.IndexByte(ct, '(')
	if i < 0 {
		return nil
	}
	var out []string
	var sb strings.Builder
	in := false
	for j := i + 1; j < len(ct); j++ {
		c := ct[j]
		switch {
		case !in && c == '\'':
			in = true
			sb.Reset()
		case in && c == '\'' && j+1 < len(ct) && ct[j+1] == '\'':
			sb.WriteByte('\'')
			j++
		case in && c == '\\' && j+1 < len(ct):
			sb.WriteByte(ct[j+1])
			j++
		case in && c == '\'':
			in = false
			out = append(out, sb.String())
		case in:
			sb.WriteByte(c)
		}
	}
	return out
}
