package postgres

import (
	"context"
	"errors"
	"fmt"
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

// Staging tables live in the session's own temporary schema, so their
// fixed names never collide between sinks, and are emptied by every COMMIT
// or ROLLBACK.
var (
	stageRows = pgx.Identifier{"pg_temp", "sluice_stage_rows"}
	stageKeys = pgx.Identifier{"pg_temp", "sluice_stage_keys"}
)

// ddlLockKey serialises this connector's CREATE TABLE IF NOT EXISTS
// statements across sessions: two concurrent ones can otherwise fail on
// pg_type's unique index.
const ddlLockKey = 0x51_1C_E0_00

// sink writes to one PostgreSQL table. Write and Close are not called
// concurrently by the runtime; mu makes them safe anyway.
type sink struct {
	cfg *config

	// Statements, built once from the configuration.
	copyTarget   string // COPY target FROM STDIN (binary)
	copyStage    string // COPY stage rows
	copyKeys     string // COPY stage keys
	insertStaged string // INSERT INTO target SELECT FROM stage [ON CONFLICT …]
	deleteStaged string // DELETE FROM target USING stage keys
	allCols      []int
	keyCols      []int
	encTypes     []types.T // per column: encoding type
	keyTypes     []types.T // per key column

	// beforeCommit, when set (tests only), runs after the epoch's
	// statements and before COMMIT.
	beforeCommit func(ctx context.Context)

	mu struct {
		sync.Mutex
		conn *pgx.Conn // nil: reconnect on the next Write
		// direct is true when the target's column types are exactly the
		// ones the values are encoded as, so unkeyed rows are copied
		// straight into it instead of through the staging table.
		direct bool
		closed bool
	}
}

// txSink is a transactional sink: it also reports its progress row.
type txSink struct{ *sink }

var (
	_ connector.Sink     = (*sink)(nil)
	_ connector.Progress = txSink{}
)

// Open implements connector.SinkFactory. It connects, creates the target
// table (auto.create) and the progress table (transactional) if missing,
// and checks that the target has the sink's columns.
func (Factory) Open(ctx context.Context, cfg connector.SinkConfig) (connector.Sink, error) {
	c, err := parseConfig(cfg)
	if err != nil {
		return nil, err
	}
	s := newSink(c)
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	conn, err := s.connect(ctx)
	if err != nil {
		return nil, s.wrap(ctx, err, "connecting")
	}
	if err := s.setup(ctx, conn); err != nil {
		closeConn(conn)
		return nil, err
	}
	s.mu.conn = conn
	if c.mode == connector.ModeTransactional {
		return txSink{s}, nil
	}
	return s, nil
}

func newSink(c *config) *sink {
	s := &sink{cfg: c}
	names := make([]string, len(c.cols))
	for i, col := range c.cols {
		names[i] = pgx.Identifier{col.Name}.Sanitize()
		s.allCols = append(s.allCols, i)
		s.encTypes = append(s.encTypes, pgColumnType(col.Type).enc)
	}
	keyNames := make([]string, len(c.key))
	for i, k := range c.key {
		keyNames[i] = names[k]
		s.keyCols = append(s.keyCols, k)
		s.keyTypes = append(s.keyTypes, s.encTypes[k])
	}
	target := c.table.Sanitize()
	colList := strings.Join(names, ", ")
	s.copyTarget = "COPY " + target + " (" + colList + ") FROM STDIN (FORMAT binary)"
	s.copyStage = "COPY " + stageRows.Sanitize() + " (" + colList + ") FROM STDIN (FORMAT binary)"
	s.insertStaged = "INSERT INTO " + target + " (" + colList + ") SELECT " + colList + " FROM " + stageRows.Sanitize()
	if s.keyed() {
		s.copyKeys = "COPY " + stageKeys.Sanitize() + " (" + strings.Join(keyNames, ", ") + ") FROM STDIN (FORMAT binary)"
		isKey := map[int]bool{}
		for _, k := range c.key {
			isKey[k] = true
		}
		var set []string
		for i, n := range names {
			if !isKey[i] {
				set = append(set, n+" = EXCLUDED."+n)
			}
		}
		s.insertStaged += " ON CONFLICT (" + strings.Join(keyNames, ", ") + ") DO "
		if len(set) == 0 {
			s.insertStaged += "NOTHING"
		} else {
			s.insertStaged += "UPDATE SET " + strings.Join(set, ", ")
		}
		var on []string
		for _, n := range keyNames {
			on = append(on, "t."+n+" = k."+n)
		}
		s.deleteStaged = "DELETE FROM " + target + " AS t USING " + stageKeys.Sanitize() + " AS k WHERE " + strings.Join(on, " AND ")
	}
	return s
}

// keyed reports whether rows are written by key (upsert, or transactional
// with primary_key); otherwise every inserted row is appended.
func (s *sink) keyed() bool { return s.cfg.mode != connector.ModeAppend && len(s.cfg.key) > 0 }

// connect opens a connection with bounded connect and statement times.
func (s *sink) connect(ctx context.Context) (*pgx.Conn, error) {
	cc := s.cfg.connCfg.Copy()
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = defaultConnectTimeout
	}
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	ms := strconv.FormatInt(s.cfg.timeout.Milliseconds(), 10)
	for k, v := range map[string]string{
		"statement_timeout": ms,
		// A session that vanished inside a transaction must not keep the
		// progress row locked for long.
		"idle_in_transaction_session_timeout": ms,
		"application_name":                    "sluice sink " + s.cfg.name,
	} {
		if _, ok := cc.RuntimeParams[k]; !ok {
			cc.RuntimeParams[k] = v
		}
	}
	return pgx.ConnectConfig(ctx, cc)
}

// setup prepares the server at Open: target and progress tables, then the
// per-connection state.
func (s *sink) setup(ctx context.Context, conn *pgx.Conn) error {
	c := s.cfg
	if c.autoCreate {
		if err := s.createIfMissing(ctx, conn, s.createTargetSQL()); err != nil {
			return s.wrap(ctx, err, "creating table %s", c.table.Sanitize())
		}
	}
	if c.mode == connector.ModeTransactional {
		ddl := "CREATE TABLE IF NOT EXISTS " + c.progress.Sanitize() + ` (
	sink_id BIGINT PRIMARY KEY,
	sink_name TEXT NOT NULL,
	epoch BIGINT NOT NULL,
	updated_at TIMESTAMPTZ NOT NULL DEFAULT now())`
		if err := s.createIfMissing(ctx, conn, ddl); err != nil {
			return s.wrap(ctx, err, "creating progress table %s", c.progress.Sanitize())
		}
	}
	// The target must have every column of the sink; its types decide
	// whether rows can be copied straight in.
	sd, err := conn.Prepare(ctx, "", "SELECT "+strings.Join(s.colNames(), ", ")+" FROM "+c.table.Sanitize())
	if err != nil {
		e := s.wrap(ctx, err, "checking table %s", c.table.Sanitize())
		if e.Code == pgcode.UndefinedTable && !c.autoCreate {
			e = e.WithHint("create the table, or set auto.create = 'true'")
		}
		return e
	}
	direct := true
	for i, f := range sd.Fields {
		if f.DataTypeOID != pgColumnType(c.cols[i].Type).oid {
			direct = false
		}
	}
	s.mu.direct = direct
	if err := s.prepareSession(ctx, conn); err != nil {
		return err
	}
	if s.keyed() {
		// Planning the upsert finds a target without a unique index on
		// the key now rather than at the first write.
		if _, err := conn.Exec(ctx, "EXPLAIN "+s.insertStaged); err != nil {
			e := s.wrap(ctx, err, "checking table %s", c.table.Sanitize())
			if e.Code == pgcode.InvalidColumnReference {
				e = e.WithHint("the table needs a primary key or unique index on exactly the primary_key columns")
			}
			return e
		}
	}
	return nil
}

// isDirect reports whether unkeyed rows are copied straight into the target.
func (s *sink) isDirect() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.direct
}

// createTargetSQL is the CREATE TABLE IF NOT EXISTS of auto.create.
func (s *sink) createTargetSQL() string {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS ")
	b.WriteString(s.cfg.table.Sanitize())
	b.WriteString(" (")
	for i, col := range s.cfg.cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(pgx.Identifier{col.Name}.Sanitize())
		b.WriteString(" ")
		b.WriteString(pgColumnType(col.Type).sql)
	}
	// Append mode repeats rows after a crash: a primary key would turn
	// that into an error the sink could never get past.
	if s.keyed() {
		b.WriteString(", PRIMARY KEY (")
		for i, k := range s.cfg.key {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(pgx.Identifier{s.cfg.cols[k].Name}.Sanitize())
		}
		b.WriteString(")")
	}
	b.WriteString(")")
	return b.String()
}

func (s *sink) colNames() []string {
	names := make([]string, len(s.cfg.cols))
	for i, col := range s.cfg.cols {
		names[i] = pgx.Identifier{col.Name}.Sanitize()
	}
	return names
}

// createIfMissing runs a CREATE TABLE IF NOT EXISTS under a transaction
// advisory lock.
func (s *sink) createIfMissing(ctx context.Context, conn *pgx.Conn, ddl string) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(ddlLockKey)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, ddl)
		return err
	})
}

// prepareSession creates the staging tables of a new connection.
func (s *sink) prepareSession(ctx context.Context, conn *pgx.Conn) error {
	if !s.keyed() && s.mu.direct {
		return nil
	}
	var b strings.Builder
	stage := func(name pgx.Identifier, cols []int) {
		b.WriteString("CREATE TEMP TABLE IF NOT EXISTS " + name[1] + " (")
		for i, k := range cols {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(pgx.Identifier{s.cfg.cols[k].Name}.Sanitize() + " " + pgColumnType(s.cfg.cols[k].Type).sql)
		}
		b.WriteString(") ON COMMIT DELETE ROWS;\n")
	}
	stage(stageRows, s.allCols)
	if s.keyed() {
		stage(stageKeys, s.keyCols)
	}
	// Simple protocol: several statements in one round trip.
	if err := conn.PgConn().Exec(ctx, b.String()).Close(); err != nil {
		return s.wrap(ctx, err, "creating staging tables")
	}
	return nil
}

// Write implements connector.Sink.
func (s *sink) Write(ctx context.Context, epoch uint64, changes []connector.Change) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "postgres sink %s is closed", s.cfg.name)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
	defer cancel()
	if s.mu.conn == nil {
		conn, err := s.connect(ctx)
		if err != nil {
			return s.wrap(ctx, err, "connecting")
		}
		if err := s.prepareSession(ctx, conn); err != nil {
			closeConn(conn)
			return err
		}
		s.mu.conn = conn
	}
	if err := s.write(ctx, s.mu.conn, epoch, changes); err != nil {
		// The connection may be mid-transaction or broken: start afresh.
		closeConn(s.mu.conn)
		s.mu.conn = nil
		return s.wrap(ctx, err, "writing epoch %d to %s", epoch, s.cfg.table.Sanitize())
	}
	return nil
}

// batch is the rows of one epoch, sorted by what to do with them.
type batch struct {
	upserts []types.Row // rows to insert (or, keyed, to insert or update)
	deletes []types.Row // keyed: rows whose key to delete
}

// split turns the changes of an epoch into rows to write. Keyed, the last
// change of a key wins (a batch may not touch a key twice: ON CONFLICT
// cannot update one row twice in a statement). Unkeyed, every After row is
// appended and a Before-only change (which an append-only input never
// has) is ignored.
func (s *sink) split(changes []connector.Change) (batch, error) {
	var b batch
	n := len(s.cfg.cols)
	check := func(r types.Row) error {
		if len(r) != n {
			return pgerror.New(pgcode.Internal, "postgres sink %s: row has %d values, want %d", s.cfg.name, len(r), n)
		}
		return nil
	}
	if !s.keyed() {
		b.upserts = make([]types.Row, 0, len(changes))
		for _, c := range changes {
			if c.After != nil {
				if err := check(c.After); err != nil {
					return b, err
				}
				b.upserts = append(b.upserts, c.After)
			}
		}
		return b, nil
	}
	last := make(map[string]int, len(changes))
	var key []byte
	dups := false
	for i, c := range changes {
		row := c.After
		if row == nil {
			row = c.Before
		}
		if row == nil {
			continue
		}
		if err := check(row); err != nil {
			return b, err
		}
		key = key[:0]
		for _, k := range s.cfg.key {
			key = types.AppendKey(key, row[k])
		}
		if _, ok := last[string(key)]; ok {
			dups = true
		}
		last[string(key)] = i
	}
	for i, c := range changes {
		if c.After == nil && c.Before == nil {
			continue
		}
		if dups {
			row := c.After
			if row == nil {
				row = c.Before
			}
			key = key[:0]
			for _, k := range s.cfg.key {
				key = types.AppendKey(key, row[k])
			}
			if last[string(key)] != i {
				continue
			}
		}
		if c.After != nil {
			b.upserts = append(b.upserts, c.After)
		} else {
			b.deletes = append(b.deletes, c.Before)
		}
	}
	return b, nil
}

// write applies one epoch on conn.
func (s *sink) write(ctx context.Context, conn *pgx.Conn, epoch uint64, changes []connector.Change) error {
	b, err := s.split(changes)
	if err != nil {
		return err
	}
	tx := s.cfg.mode == connector.ModeTransactional
	if !tx && len(b.upserts) == 0 && len(b.deletes) == 0 {
		return nil
	}
	// The one write that needs no transaction: a binary COPY straight
	// into the target is atomic by itself.
	if s.cfg.mode == connector.ModeAppend && s.mu.direct {
		return copyFrom(ctx, conn, s.copyTarget, b.upserts, s.allCols, s.encTypes)
	}

	if tx {
		br := conn.SendBatch(ctx, &pgx.Batch{QueuedQueries: []*pgx.QueuedQuery{
			{SQL: "BEGIN"},
			{SQL: "INSERT INTO " + s.cfg.progress.Sanitize() + " (sink_id, sink_name, epoch) VALUES ($1, $2, 0) ON CONFLICT (sink_id) DO NOTHING",
				Arguments: []any{s.cfg.id, s.cfg.name}},
			{SQL: "SELECT epoch FROM " + s.cfg.progress.Sanitize() + " WHERE sink_id = $1 FOR UPDATE", Arguments: []any{s.cfg.id}},
		}})
		var stored int64
		_, err1 := br.Exec()
		_, err2 := br.Exec()
		err3 := br.QueryRow().Scan(&stored)
		if err := errors.Join(err1, err2, err3, br.Close()); err != nil {
			return err
		}
		if stored < 0 || epoch <= uint64(stored) {
			// Applied before (a retry after a lost confirmation, or a
			// replay after recovery): nothing to do.
			_, err := conn.Exec(ctx, "ROLLBACK")
			return err
		}
	} else if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		return err
	}

	var final []*pgx.QueuedQuery
	if len(b.upserts) > 0 {
		if !s.keyed() && s.mu.direct {
			if err := copyFrom(ctx, conn, s.copyTarget, b.upserts, s.allCols, s.encTypes); err != nil {
				return err
			}
		} else {
			if err := copyFrom(ctx, conn, s.copyStage, b.upserts, s.allCols, s.encTypes); err != nil {
				return err
			}
			final = append(final, &pgx.QueuedQuery{SQL: s.insertStaged})
		}
	}
	if len(b.deletes) > 0 {
		if err := copyFrom(ctx, conn, s.copyKeys, b.deletes, s.keyCols, s.keyTypes); err != nil {
			return err
		}
		final = append(final, &pgx.QueuedQuery{SQL: s.deleteStaged})
	}
	if tx {
		final = append(final, &pgx.QueuedQuery{
			SQL:       "UPDATE " + s.cfg.progress.Sanitize() + " SET epoch = $2, updated_at = now() WHERE sink_id = $1",
			Arguments: []any{s.cfg.id, int64(epoch)},
		})
	}
	if s.beforeCommit != nil {
		s.beforeCommit(ctx)
	}
	connector.Crashpoint("sink-before-commit")
	final = append(final, &pgx.QueuedQuery{SQL: "COMMIT"})
	br := conn.SendBatch(ctx, &pgx.Batch{QueuedQueries: final})
	var errs []error
	for range final {
		_, err := br.Exec()
		errs = append(errs, err)
	}
	errs = append(errs, br.Close())
	return errors.Join(errs...)
}

// LastEpoch implements connector.Progress: the epoch in the progress row
// (0 if there is none yet).
func (s txSink) LastEpoch(ctx context.Context) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
	defer cancel()
	if s.mu.conn == nil {
		conn, err := s.connect(ctx)
		if err != nil {
			return 0, s.wrap(ctx, err, "connecting")
		}
		if err := s.prepareSession(ctx, conn); err != nil {
			closeConn(conn)
			return 0, err
		}
		s.mu.conn = conn
	}
	var epoch int64
	err := s.mu.conn.QueryRow(ctx, "SELECT epoch FROM "+s.cfg.progress.Sanitize()+" WHERE sink_id = $1", s.cfg.id).Scan(&epoch)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, nil
	case err != nil:
		closeConn(s.mu.conn)
		s.mu.conn = nil
		return 0, s.wrap(ctx, err, "reading progress from %s", s.cfg.progress.Sanitize())
	}
	return uint64(epoch), nil
}

// Close implements connector.Sink.
func (s *sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.closed = true
	if s.mu.conn != nil {
		closeConn(s.mu.conn)
		s.mu.conn = nil
	}
	return nil
}

// closeConn closes conn, waiting at most a second for a polite goodbye.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

// wrap gives err a SQLSTATE: the server's own code for an error the
// server reported, 57014 when the caller cancelled, and 08000 for a
// connection that failed or a server that did not answer in time.
func (s *sink) wrap(ctx context.Context, err error, format string, args ...any) *pgerror.Error {
	what := fmt.Sprintf(format, args...)
	var pgErr *pgconn.PgError
	var sErr *pgerror.Error
	switch {
	case errors.As(err, &pgErr):
		e := pgerror.Wrap(err, pgcode.Code(pgErr.Code), "postgres sink %s: %s", s.cfg.name, what)
		if pgErr.Detail != "" {
			e = e.WithDetail("%s", pgErr.Detail)
		}
		if pgErr.Hint != "" {
			e = e.WithHint("%s", pgErr.Hint)
		}
		return e
	case errors.As(err, &sErr):
		return pgerror.Wrap(err, sErr.Code, "postgres sink %s: %s", s.cfg.name, what)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return pgerror.Wrap(err, pgcode.ConnectionException,
			"postgres sink %s: %s: no answer from %s within write.timeout %s",
			s.cfg.name, what, s.cfg.connCfg.Host, s.cfg.timeout)
	case ctx.Err() != nil:
		return pgerror.Wrap(err, pgcode.QueryCanceled, "postgres sink %s: %s", s.cfg.name, what)
	}
	return pgerror.Wrap(err, pgcode.ConnectionException, "postgres sink %s: %s", s.cfg.name, what)
}
