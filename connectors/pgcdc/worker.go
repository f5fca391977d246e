package pgcdc

// The worker goroutine: it owns the upstream connections, takes the
// snapshot, streams the changes and retries after lost connections.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"sluice/connectors/internal/cdc"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// worker is a session's view of the shared CDC worker.
type worker struct {
	*cdc.Worker[position]
	cfg     *config
	confirm *atomic.Uint64 // the reader's: what a durable checkpoint covers
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func (c *config) qualified() string { return quoteIdent(c.schema) + "." + quoteIdent(c.Table) }

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
	switch w.Pos().phase {
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
		if err := w.snapshot(ctx, conn, up, w.Pos()); err != nil {
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
	return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "postgres-cdc source %s: replication slot %q no longer exists upstream: the changes since the last checkpoint are gone", w.cfg.Name, w.cfg.slot).
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
			return pgerror.New(pgcode.UndefinedObject, "postgres-cdc source %s: publication %q does not exist upstream", c.Name, c.publication).
				WithHint("CREATE PUBLICATION %s FOR TABLE %s upstream, or set publication.create.enable = 'true'", c.publication, c.qualified())
		}
		_, err := conn.Exec(ctx, "CREATE PUBLICATION "+quoteIdent(c.publication)+" FOR TABLE "+c.qualified())
		var pg *pgconn.PgError
		if err != nil && !(errors.As(err, &pg) && pg.Code == "42710") { // created meanwhile
			return c.upstreamError(err)
		}
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_publication_tables WHERE pubname = $1 AND schemaname = $2 AND tablename = $3",
		c.publication, c.schema, c.Table).Scan(&n); err != nil {
		return c.upstreamError(err)
	}
	if n == 0 {
		return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "postgres-cdc source %s: publication %q does not publish %s", c.Name, c.publication, c.qualified()).
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
	for _, col := range c.Cols {
		sel = append(sel, quoteIdent(col.Name)+"::text")
	}
	var params []any
	for i, k := range c.Key {
		name := c.Cols[k].Name
		order = append(order, quoteIdent(name))
		if pos.lastKey != nil && i < len(pos.lastKey) {
			args = append(args, fmt.Sprintf("$%d::%s", i+1, quoteIdent(up.columns[name])))
			params = append(params, pos.lastKey[i])
		}
	}
	q := "SELECT " + strings.Join(sel, ", ") + " FROM " + c.qualified()
	if pos.lastKey != nil && len(pos.lastKey) == len(c.Key) {
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
		rows, err := conn.Query(ctx, "FETCH "+strconv.Itoa(cdc.ChunkRows)+" FROM sluice_snapshot", pgx.QueryResultFormats{pgx.TextFormatCode})
		if err != nil {
			return c.upstreamError(err)
		}
		ch := &cdc.Chunk[position]{Pos: pos}
		var last [][]byte
		for rows.Next() {
			raw := rows.RawValues()
			row := make(types.Row, len(c.Cols))
			for i, col := range c.Cols {
				d, err := parseValue(raw[i], raw[i] == nil, col.Type)
				if err != nil {
					rows.Close()
					return w.badValue(col.Name, err)
				}
				row[i] = d
			}
			ch.Rows = append(ch.Rows, row)
			ch.Diffs = append(ch.Diffs, 1)
			last = raw
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return c.upstreamError(err)
		}
		if len(ch.Rows) == 0 {
			break
		}
		key := make([]*string, len(c.Key))
		for i, k := range c.Key {
			if last[k] != nil {
				s := string(last[k])
				key[i] = &s
			}
		}
		pos.lastKey = key
		ch.Pos = pos
		if err := w.Send(ctx, ch); err != nil {
			return err
		}
	}
	if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
		return c.upstreamError(err)
	}
	return w.Send(ctx, &cdc.Chunk[position]{Pos: position{phase: phaseStream, slotLSN: pos.slotLSN, lsn: pos.slotLSN}})
}

func (w *worker) badValue(col string, err error) error {
	return pgerror.Wrap(err, pgcode.InvalidTextRepresentation, "postgres-cdc source %s: column %s", w.cfg.Name, col)
}

// statusInterval is how often the worker tells the upstream its confirmed
// position (and proves it is alive).
const statusInterval = time.Second

// stream reads the changes from w.pos.lsn.
func (w *worker) stream(ctx context.Context, repl *pgconn.PgConn) error {
	c := w.cfg
	start := w.Pos().lsn
	if err := pglogrepl.StartReplication(ctx, repl, c.slot, start, pglogrepl.StartReplicationOptions{
		Mode:       pglogrepl.LogicalReplication,
		PluginArgs: []string{"proto_version '1'", "publication_names " + quoteLiteral(c.publication)},
	}); err != nil {
		return c.upstreamError(err)
	}
	w.Healthy() // streaming: healthy
	confirmed := uint64(start)
	if v := w.confirm.Load(); v > confirmed {
		confirmed = v
	}
	sendStatus := func() error {
		if v := w.confirm.Load(); v > confirmed {
			confirmed = v
		}
		err := pglogrepl.SendStandbyStatusUpdate(ctx, repl, pglogrepl.StandbyStatusUpdate{WALWritePosition: pglogrepl.LSN(confirmed)})
		if err != nil {
			return c.upstreamError(err)
		}
		return nil
	}
	d := &decoder{cfg: c, rels: map[uint32]*relation{}}
	slotLSN := w.Pos().slotLSN
	txn := cdc.NewTxn(w.Worker, w.Pos().skip)
	inTxn := false
	lastCommit := w.Pos().lsn
	at := func(skip uint64) position {
		return position{phase: phaseStream, slotLSN: slotLSN, lsn: lastCommit, skip: skip}
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
				if !inTxn && !txn.Resuming() && pk.ServerWALEnd > lastCommit && txn.Pending() == 0 {
					lastCommit = pk.ServerWALEnd
					if err := txn.Flush(ctx, at(0)); err != nil {
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
					txn.Begin()
					inTxn = true
				case *pglogrepl.CommitMessage:
					lastCommit = msg.TransactionEndLSN
					inTxn = false
					if err := txn.Commit(ctx, at(0)); err != nil {
						return err
					}
				case *pglogrepl.RelationMessage:
					if err := d.relation(msg); err != nil {
						return err
					}
				case *pglogrepl.TruncateMessage:
					return pgerror.New(pgcode.FeatureNotSupported, "postgres-cdc source %s: upstream table %s was truncated", c.Name, c.qualified()).
						WithHint("a truncate carries no keys to delete: drop the source and create it again (it takes a new snapshot)")
				case *pglogrepl.InsertMessage, *pglogrepl.UpdateMessage, *pglogrepl.DeleteMessage:
					rows, diffs, err := d.change(msg)
					if err != nil {
						return err
					}
					if err := txn.Add(ctx, rows, diffs, at); err != nil {
						return err
					}
				}
			}
		}
	}
}
