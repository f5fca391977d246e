package pgcdc

// The worker goroutine: it owns the upstream connections, takes the
// snapshot, streams the changes and retries after lost connections.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

type worker struct {
	cfg    *config
	sh     *shared
	out    chan<- *chunk
	pos    position // after the last chunk sent
	cancel context.CancelFunc
	done   chan struct{}
}

func startWorker(c *config, pos position, sh *shared, out chan<- *chunk) *worker {
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{cfg: c, sh: sh, out: out, pos: pos, cancel: cancel, done: make(chan struct{})}
	go w.run(ctx)
	return w
}

// stop ends the worker and waits for it.
func (w *worker) stop() {
	w.cancel()
	<-w.done
}

const (
	backoffMin = 100 * time.Millisecond
	backoffMax = 3 * time.Second
)

func (w *worker) run(ctx context.Context) {
	defer close(w.done)
	backoff := backoffMin
	for {
		err := w.session(ctx)
		if ctx.Err() != nil {
			return
		}
		if !transient(err) {
			select {
			case w.out <- &chunk{err: err}:
			case <-ctx.Done():
			}
			return
		}
		msg := err.Error()
		w.sh.status.Store(&msg)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(2*backoff, backoffMax)
	}
}

// send hands a chunk to the reader and records its position.
func (w *worker) send(ctx context.Context, c *chunk) error {
	select {
	case w.out <- c:
		w.pos = c.pos
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func (c *config) qualified() string { return quoteIdent(c.schema) + "." + quoteIdent(c.table) }

// session connects and reads from w.pos until an error.
func (w *worker) session(ctx context.Context) error {
	c := w.cfg
	up, err := probe(ctx, c)
	if err != nil {
		return err
	}
	conn, err := c.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := w.ensurePublication(ctx, conn); err != nil {
		return err
	}
	repl, err := c.connectReplication(ctx)
	if err != nil {
		return err
	}
	defer repl.Close(context.WithoutCancel(ctx))
	var active *bool
	if err := conn.QueryRow(ctx, "SELECT active FROM pg_replication_slots WHERE slot_name = $1", c.slot).Scan(&active); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return c.upstreamError(err)
	}
	switch w.pos.phase {
	case phaseFresh:
		// Nothing was checkpointed: a slot left by an earlier start that
		// died before its first checkpoint holds nothing of ours.
		if active != nil {
			if *active {
				return pgerror.New("55006", "replication slot %q is active", c.slot)
			}
			if _, err := conn.Exec(ctx, "SELECT pg_drop_replication_slot($1)", c.slot); err != nil {
				return c.upstreamError(err)
			}
		}
		res, err := pglogrepl.CreateReplicationSlot(ctx, repl, c.slot, "pgoutput",
			pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: "EXPORT_SNAPSHOT"})
		if err != nil {
			return c.upstreamError(err)
		}
		lsn, err := pglogrepl.ParseLSN(res.ConsistentPoint)
		if err != nil {
			return pgerror.New(pgcode.Internal, "postgres-cdc: bad consistent point %q", res.ConsistentPoint)
		}
		if _, err := conn.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
			return c.upstreamError(err)
		}
		if _, err := conn.Exec(ctx, "SET TRANSACTION SNAPSHOT "+quoteLiteral(res.SnapshotName)); err != nil {
			return c.upstreamError(err)
		}
		if err := w.snapshot(ctx, conn, up, position{phase: phaseSnapshot, slotLSN: lsn}); err != nil {
			return err
		}
	case phaseSnapshot:
		if active == nil {
			return w.slotLost()
		}
		if _, err := conn.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
			return c.upstreamError(err)
		}
		if err := w.snapshot(ctx, conn, up, w.pos); err != nil {
			return err
		}
	default:
		if active == nil {
			return w.slotLost()
		}
	}
	return w.stream(ctx, repl)
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func (w *worker) slotLost() error {
	return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "postgres-cdc source %s: replication slot %q no longer exists upstream: the changes since the last checkpoint are gone", w.cfg.name, w.cfg.slot).
		WithHint("drop the source and create it again (it takes a new snapshot); never drop a slot a source reads")
}

// ensurePublication creates the publication when absent (or checks it when
// publication.create.enable is false) and checks that it holds the table.
func (w *worker) ensurePublication(ctx context.Context, conn *pgx.Conn) error {
	c := w.cfg
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_publication WHERE pubname = $1", c.publication).Scan(&n); err != nil {
		return c.upstreamError(err)
	}
	if n == 0 {
		if !c.createPub {
			return pgerror.New(pgcode.UndefinedObject, "postgres-cdc source %s: publication %q does not exist upstream", c.name, c.publication).
				WithHint("CREATE PUBLICATION %s FOR TABLE %s upstream, or set publication.create.enable = 'true'", c.publication, c.qualified())
		}
		_, err := conn.Exec(ctx, "CREATE PUBLICATION "+quoteIdent(c.publication)+" FOR TABLE "+c.qualified())
		var pg *pgconn.PgError
		if err != nil && !(errors.As(err, &pg) && pg.Code == "42710") { // created meanwhile
			return c.upstreamError(err)
		}
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_publication_tables WHERE pubname = $1 AND schemaname = $2 AND tablename = $3",
		c.publication, c.schema, c.table).Scan(&n); err != nil {
		return c.upstreamError(err)
	}
	if n == 0 {
		return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "postgres-cdc source %s: publication %q does not publish %s", c.name, c.publication, c.qualified()).
			WithHint("ALTER PUBLICATION %s ADD TABLE %s upstream, or name another publication.name", c.publication, c.qualified())
	}
	return nil
}

// snapshot reads the table in key order after pos.lastKey within the
// transaction open on conn, sends it in chunks, then moves to the stream
// at the slot's consistent point.
func (w *worker) snapshot(ctx context.Context, conn *pgx.Conn, up *upstreamTable, pos position) error {
	c := w.cfg
	var sel, order, cmp, args []string
	for _, col := range c.cols {
		sel = append(sel, quoteIdent(col.Name)+"::text")
	}
	var params []any
	for i, k := range c.key {
		name := c.cols[k].Name
		order = append(order, quoteIdent(name))
		if pos.lastKey != nil && i < len(pos.lastKey) {
			args = append(args, fmt.Sprintf("$%d::%s", i+1, quoteIdent(up.columns[name])))
			params = append(params, pos.lastKey[i])
		}
	}
	q := "SELECT " + strings.Join(sel, ", ") + " FROM " + c.qualified()
	if pos.lastKey != nil && len(pos.lastKey) == len(c.key) {
		cmp = append(cmp, "("+strings.Join(order, ", ")+") > ("+strings.Join(args, ", ")+")")
		q += " WHERE " + strings.Join(cmp, "")
	} else {
		params = nil
	}
	q += " ORDER BY " + strings.Join(order, ", ")
	if _, err := conn.Exec(ctx, "DECLARE sluice_snapshot NO SCROLL CURSOR FOR "+q, params...); err != nil {
		return c.upstreamError(err)
	}
	for {
		rows, err := conn.Query(ctx, "FETCH "+strconv.Itoa(chunkRows)+" FROM sluice_snapshot", pgx.QueryResultFormats{pgx.TextFormatCode})
		if err != nil {
			return c.upstreamError(err)
		}
		ch := &chunk{pos: pos}
		var last [][]byte
		for rows.Next() {
			raw := rows.RawValues()
			row := make(types.Row, len(c.cols))
			for i, col := range c.cols {
				d, err := parseValue(raw[i], raw[i] == nil, col.Type)
				if err != nil {
					rows.Close()
					return w.badValue(col.Name, err)
				}
				row[i] = d
			}
			ch.rows = append(ch.rows, row)
			ch.diffs = append(ch.diffs, 1)
			last = raw
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return c.upstreamError(err)
		}
		if len(ch.rows) == 0 {
			break
		}
		key := make([]*string, len(c.key))
		for i, k := range c.key {
			if last[k] != nil {
				s := string(last[k])
				key[i] = &s
			}
		}
		pos.lastKey = key
		ch.pos = pos
		if err := w.send(ctx, ch); err != nil {
			return err
		}
	}
	if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
		return c.upstreamError(err)
	}
	return w.send(ctx, &chunk{pos: position{phase: phaseStream, slotLSN: pos.slotLSN, lsn: pos.slotLSN}})
}

func (w *worker) badValue(col string, err error) error {
	return pgerror.Wrap(err, pgcode.InvalidTextRepresentation, "postgres-cdc source %s: column %s", w.cfg.name, col)
}

// statusInterval is how often the worker tells the upstream its confirmed
// position (and proves it is alive).
const statusInterval = time.Second

// stream reads the changes from w.pos.lsn.
func (w *worker) stream(ctx context.Context, repl *pgconn.PgConn) error {
	c := w.cfg
	start := w.pos.lsn
	if err := pglogrepl.StartReplication(ctx, repl, c.slot, start, pglogrepl.StartReplicationOptions{
		Mode:       pglogrepl.LogicalReplication,
		PluginArgs: []string{"proto_version '1'", "publication_names " + quoteLiteral(c.publication)},
	}); err != nil {
		return c.upstreamError(err)
	}
	w.sh.status.Store(nil) // streaming: healthy
	confirmed := uint64(start)
	if v := w.sh.confirm.Load(); v > confirmed {
		confirmed = v
	}
	sendStatus := func() error {
		if v := w.sh.confirm.Load(); v > confirmed {
			confirmed = v
		}
		err := pglogrepl.SendStandbyStatusUpdate(ctx, repl, pglogrepl.StandbyStatusUpdate{WALWritePosition: pglogrepl.LSN(confirmed)})
		if err != nil {
			return c.upstreamError(err)
		}
		return nil
	}
	d := &decoder{cfg: c, rels: map[uint32]*relation{}}
	skip := w.pos.skip // rows of the first transaction already emitted
	first := true
	var emitted uint64 // rows of the current transaction so far
	inTxn := false
	lastCommit := w.pos.lsn
	cur := &chunk{}
	flush := func(p position) error {
		cur.pos = p
		err := w.send(ctx, cur)
		cur = &chunk{}
		return err
	}
	next := time.Now().Add(statusInterval)
	for {
		if time.Now().After(next) {
			if err := sendStatus(); err != nil {
				return err
			}
			next = time.Now().Add(statusInterval)
		}
		rctx, cancel := context.WithDeadline(ctx, next)
		raw, err := repl.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if pgconn.Timeout(err) {
				continue
			}
			return c.upstreamError(err)
		}
		switch m := raw.(type) {
		case *pgproto3.ErrorResponse:
			return c.upstreamError(pgconn.ErrorResponseToPgError(m))
		case *pgproto3.CopyData:
			if len(m.Data) == 0 {
				continue
			}
			switch m.Data[0] {
			case pglogrepl.PrimaryKeepaliveMessageByteID:
				pk, err := pglogrepl.ParsePrimaryKeepaliveMessage(m.Data[1:])
				if err != nil {
					return pgerror.Wrap(err, pgcode.ProtocolViolation, "postgres-cdc keepalive")
				}
				if pk.ReplyRequested {
					next = time.Time{}
				}
				// Between transactions, everything before the server's sent
				// position has reached us: a position there skips WAL of other
				// tables' writes, so the slot need not keep it.
				if !inTxn && !(first && skip > 0) && pk.ServerWALEnd > lastCommit && len(cur.rows) == 0 {
					lastCommit = pk.ServerWALEnd
					if err := flush(position{phase: phaseStream, slotLSN: w.pos.slotLSN, lsn: lastCommit}); err != nil {
						return err
					}
				}
			case pglogrepl.XLogDataByteID:
				xld, err := pglogrepl.ParseXLogData(m.Data[1:])
				if err != nil {
					return pgerror.Wrap(err, pgcode.ProtocolViolation, "postgres-cdc XLogData")
				}
				msg, err := pglogrepl.Parse(xld.WALData)
				if err != nil {
					return pgerror.Wrap(err, pgcode.ProtocolViolation, "postgres-cdc pgoutput message")
				}
				switch msg := msg.(type) {
				case *pglogrepl.BeginMessage:
					emitted, inTxn = 0, true
				case *pglogrepl.CommitMessage:
					lastCommit = msg.TransactionEndLSN
					first, skip, inTxn = false, 0, false
					if err := flush(position{phase: phaseStream, slotLSN: w.pos.slotLSN, lsn: lastCommit}); err != nil {
						return err
					}
				case *pglogrepl.RelationMessage:
					if err := d.relation(msg); err != nil {
						return err
					}
				case *pglogrepl.TruncateMessage:
					return pgerror.New(pgcode.FeatureNotSupported, "postgres-cdc source %s: upstream table %s was truncated", c.name, c.qualified()).
						WithHint("a truncate carries no keys to delete: drop the source and create it again (it takes a new snapshot)")
				case *pglogrepl.InsertMessage, *pglogrepl.UpdateMessage, *pglogrepl.DeleteMessage:
					rows, diffs, err := d.change(msg)
					if err != nil {
						return err
					}
					for i := range rows {
						emitted++
						if first && emitted <= skip {
							continue // emitted before the checkpoint we resumed from
						}
						cur.rows = append(cur.rows, rows[i])
						cur.diffs = append(cur.diffs, diffs[i])
						if len(cur.rows) >= chunkRows {
							if err := flush(position{phase: phaseStream, slotLSN: w.pos.slotLSN, lsn: lastCommit, skip: emitted}); err != nil {
								return err
							}
						}
					}
				}
			}
		}
	}
}
