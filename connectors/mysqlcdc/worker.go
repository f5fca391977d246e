package mysqlcdc

// The worker goroutine: it owns the upstream connections, takes the
// snapshot, streams the binlog and retries after lost connections.

import (
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"sluice/connectors/internal/cdc"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// worker is a session's view of the shared CDC worker.
type worker struct {
	*cdc.Worker[position]
	cfg *config
}

// session connects and reads from w.pos until an error.
func (w *worker) session(ctx context.Context) error {
	c := w.cfg
	up, err := probe(ctx, c)
	if err != nil {
		return err
	}
	switch w.Pos().phase {
	case phaseFresh, phaseSnapshot:
		conn, err := c.connect(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		pos := w.Pos()
		if pos.phase == phaseFresh {
			file, off, err := w.consistentSnapshot(conn)
			if err != nil {
				return err
			}
			pos = position{phase: phaseSnapshot, snapFile: file, snapPos: off, byGTID: up.gtid}
			if up.gtid {
				if pos.snapGTID, err = w.gtidAt(conn, file, off); err != nil {
					return err
				}
			}
		} else if _, err := conn.Execute("START TRANSACTION"); err != nil {
			// A resumed snapshot reads the table as it is now; the
			// stream replays from the first snapshot's position over it.
			return c.upstreamError(err)
		}
		if err := w.snapshot(ctx, conn, up, pos); err != nil {
			return err
		}
	}
	return w.stream(ctx, up)
}

// consistentSnapshot opens a transaction WITH CONSISTENT SNAPSHOT on conn
// and returns the binlog position it stands at: MariaDB reports it for
// the transaction (binlog_snapshot_file/position) without a lock; MySQL
// needs FLUSH TABLES WITH READ LOCK around the start and SHOW MASTER
// STATUS.
func (w *worker) consistentSnapshot(conn *client.Conn) (string, uint64, error) {
	c := w.cfg
	for _, q := range []string{"SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ", "START TRANSACTION WITH CONSISTENT SNAPSHOT"} {
		if _, err := conn.Execute(q); err != nil {
			return "", 0, c.upstreamError(err)
		}
	}
	res, err := conn.Execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
	if err != nil {
		return "", 0, c.upstreamError(err)
	}
	var file, off string
	for r := range res.RowNumber() {
		switch strings.ToLower(str(res, r, 0)) {
		case "binlog_snapshot_file":
			file = str(res, r, 1)
		case "binlog_snapshot_position":
			off = str(res, r, 1)
		}
	}
	if file == "" {
		// MySQL: lock, start the snapshot, read the position, unlock.
		for _, q := range []string{"ROLLBACK", "FLUSH TABLES WITH READ LOCK", "START TRANSACTION WITH CONSISTENT SNAPSHOT"} {
			if _, err := conn.Execute(q); err != nil {
				return "", 0, c.upstreamError(err)
			}
		}
		res, err = conn.Execute("SHOW MASTER STATUS")
		if err != nil {
			res, err = conn.Execute("SHOW BINARY LOG STATUS") // MySQL 8.4
		}
		if err != nil {
			return "", 0, c.upstreamError(err)
		}
		if res.RowNumber() > 0 {
			file, off = str(res, 0, 0), str(res, 0, 1)
		}
		if _, err := conn.Execute("UNLOCK TABLES"); err != nil {
			return "", 0, c.upstreamError(err)
		}
	}
	n, err := strconv.ParseUint(off, 10, 32)
	if file == "" || err != nil {
		return "", 0, pgerror.New(pgcode.ObjectNotInPrerequisiteState, "mysql-cdc source %s: the upstream reports no binlog position", c.Name).
			WithHint("start the upstream with log_bin and binlog_format = ROW")
	}
	return file, n, nil
}

// gtidAt returns MariaDB's GTID position at a binlog file and offset.
func (w *worker) gtidAt(conn *client.Conn, file string, off uint64) (string, error) {
	c := w.cfg
	res, err := conn.Execute("SELECT BINLOG_GTID_POS(" + quoteString(file) + ", " + strconv.FormatUint(off, 10) + ")")
	if err != nil {
		return "", c.upstreamError(err)
	}
	if res.RowNumber() == 0 || res.Values[0][0].Value() == nil {
		return "", pgerror.New(pgcode.ObjectNotInPrerequisiteState, "mysql-cdc source %s: the upstream has no GTID position for binlog %s at %d", c.Name, file, off).
			WithHint("set gtid.enable = 'false' to keep binlog file positions")
	}
	g := str(res, 0, 0)
	if _, err := parseGTIDPos(g); err != nil {
		return "", pgerror.Wrap(err, pgcode.ProtocolViolation, "mysql-cdc source %s: GTID position %q", c.Name, g)
	}
	return g, nil
}

// snapshotPage bounds the rows one snapshot query reads.
const snapshotPage = cdc.ChunkRows

// keyLiteral quotes the text of a key value for a comparison with
// upstream column up: binary columns as hex, the rest as strings (which
// MySQL converts to the column's type).
func keyLiteral(s string, up upColumn) string {
	if blobTypes[up.dataType] {
		return "X'" + hex.EncodeToString([]byte(s)) + "'"
	}
	return quoteString(s)
}

// snapshot reads the table in key order after pos.lastKey within the
// transaction open on conn, a page at a time, sends it in chunks, then
// moves to the stream at the snapshot's binlog position.
func (w *worker) snapshot(ctx context.Context, conn *client.Conn, up *upstreamTable, pos position) error {
	c := w.cfg
	var sel, order []string
	for i := range c.Cols {
		sel = append(sel, selectExpr(up.cols[up.at[i]]))
	}
	for _, k := range c.Key {
		order = append(order, quoteIdent(up.cols[up.at[k]].name))
	}
	base := "SELECT " + strings.Join(sel, ", ") + " FROM " + c.qualified()
	tail := " ORDER BY " + strings.Join(order, ", ") + " LIMIT " + strconv.Itoa(snapshotPage)
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		q := base
		if len(pos.lastKey) == len(c.Key) {
			var lits []string
			for i, k := range c.Key {
				if pos.lastKey[i] == nil {
					lits = append(lits, "NULL")
					continue
				}
				lits = append(lits, keyLiteral(*pos.lastKey[i], up.cols[up.at[k]]))
			}
			q += " WHERE (" + strings.Join(order, ", ") + ") > (" + strings.Join(lits, ", ") + ")"
		}
		res, err := conn.Execute(q + tail)
		if err != nil {
			return c.upstreamError(err)
		}
		n := res.RowNumber()
		if n == 0 {
			break
		}
		ch := &cdc.Chunk[position]{Rows: make([]types.Row, 0, n), Diffs: make([]int64, 0, n)}
		for r := range n {
			vals := res.Values[r]
			row := make(types.Row, len(c.Cols))
			for i, col := range c.Cols {
				d, err := toDatum(vals[i].Value(), col.Type, up.cols[up.at[i]])
				if err != nil {
					return w.badValue(col.Name, vals[i].Value(), err)
				}
				row[i] = d
			}
			ch.Rows = append(ch.Rows, row)
			ch.Diffs = append(ch.Diffs, 1)
		}
		last := res.Values[n-1]
		key := make([]*string, len(c.Key))
		for i, k := range c.Key {
			if v := last[k].Value(); v != nil {
				s := keyText(v)
				key[i] = &s
			}
		}
		pos.lastKey = key
		ch.Pos = pos
		if err := w.Send(ctx, ch); err != nil {
			return err
		}
		if n < snapshotPage {
			break
		}
	}
	if _, err := conn.Execute("COMMIT"); err != nil {
		return c.upstreamError(err)
	}
	return w.Send(ctx, &cdc.Chunk[position]{Pos: position{phase: phaseStream, snapFile: pos.snapFile, snapPos: pos.snapPos, snapGTID: pos.snapGTID,
		file: pos.snapFile, pos: pos.snapPos, gtid: pos.snapGTID, byGTID: pos.byGTID}})
}

// keyText is the text of a key value read by the text protocol.
func keyText(v any) string {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case []byte:
		return string(x)
	}
	return describe(v)
}

func (w *worker) badValue(col string, v any, err error) error {
	return pgerror.Wrap(err, pgcode.InvalidTextRepresentation, "mysql-cdc source %s: column %s value %s", w.cfg.Name, col, describe(v))
}

// heartbeat is how often an idle upstream sends a heartbeat event, so a
// dead connection is noticed within readTimeout.
const (
	heartbeat   = time.Second
	readTimeout = 10 * time.Second
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// stream reads the binlog from w.Pos(): from its GTID position when it
// has one, else from its file and offset.
func (w *worker) stream(ctx context.Context, up *upstreamTable) error {
	c := w.cfg
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID: c.serverID, Flavor: up.flavor, Host: c.Host, Port: uint16(c.Port), User: c.User, Password: c.Password,
		Charset: "utf8mb4", TimestampStringLocation: time.UTC, HeartbeatPeriod: heartbeat, ReadTimeout: readTimeout,
		DisableRetrySync: true, MaxReconnectAttempts: 1, Logger: quiet,
	})
	defer syncer.Close()
	start := w.Pos()
	gtids, err := parseGTIDPos(start.gtid)
	if err != nil {
		return pgerror.Wrap(err, pgcode.DataCorrupted, "mysql-cdc source %s: GTID position %q", c.Name, start.gtid)
	}
	var streamer *replication.BinlogStreamer
	if start.byGTID {
		set, perr := mysql.ParseMariadbGTIDSet(start.gtid)
		if perr != nil {
			return pgerror.Wrap(perr, pgcode.DataCorrupted, "mysql-cdc source %s: GTID position %q", c.Name, start.gtid)
		}
		streamer, err = syncer.StartSyncGTID(set)
	} else {
		streamer, err = syncer.StartSync(mysql.Position{Name: start.file, Pos: uint32(start.pos)})
	}
	if err != nil {
		return c.upstreamError(err)
	}
	d := &decoder{cfg: c, up: up}
	txn := cdc.NewTxn(w.Worker, start.skip)
	inTxn, healthy := false, false
	file, lastFile, lastPos, lastGTID := start.file, start.file, start.pos, start.gtid
	var txnGTID *mysql.MariadbGTID // of the transaction being read
	at := func(skip uint64) position {
		return position{phase: phaseStream, snapFile: start.snapFile, snapPos: start.snapPos, snapGTID: start.snapGTID,
			file: lastFile, pos: lastPos, gtid: lastGTID, byGTID: start.byGTID, skip: skip}
	}
	commit := func(end uint32) error {
		lastFile, lastPos = file, uint64(end)
		if txnGTID != nil && start.byGTID {
			gtids.add(*txnGTID)
			lastGTID = gtids.String()
		}
		inTxn, txnGTID = false, nil
		return txn.Commit(ctx, at(0))
	}
	for {
		ev, err := streamer.GetEvent(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return c.upstreamError(err)
		}
		if !healthy {
			healthy = true
			w.Healthy() // streaming: healthy
		}
		switch e := ev.Event.(type) {
		case *replication.RotateEvent:
			file = string(e.NextLogName)
			if !inTxn && !txn.Resuming() && (file != lastFile || e.Position != lastPos) {
				lastFile, lastPos = file, e.Position
				if err := txn.Flush(ctx, at(0)); err != nil {
					return err
				}
			}
		case *replication.MariadbGTIDEvent:
			id := e.GTID
			inTxn, txnGTID = !e.IsStandalone(), &id
			txn.Begin()
		case *replication.QueryEvent:
			q := strings.ToUpper(strings.TrimSpace(string(e.Query)))
			switch {
			case q == "BEGIN" || strings.HasPrefix(q, "XA START"):
				inTxn = true
				txn.Begin()
			case q == "COMMIT" || q == "ROLLBACK" || strings.HasPrefix(q, "XA COMMIT") || strings.HasPrefix(q, "XA ROLLBACK"):
				if err := commit(ev.Header.LogPos); err != nil {
					return err
				}
			case inTxn:
				// SAVEPOINT and the like inside a transaction.
			default:
				// DDL: a transaction of its own.
				if d.truncates(string(e.Schema), q) {
					return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "mysql-cdc source %s: upstream table %s was truncated", c.Name, c.qualified()).
						WithHint("a truncate carries no rows to delete: drop the source and create it again (it takes a new snapshot)")
				}
				if err := commit(ev.Header.LogPos); err != nil {
					return err
				}
			}
		case *replication.XIDEvent:
			if err := commit(ev.Header.LogPos); err != nil {
				return err
			}
		case *replication.RowsEvent:
			if !d.ours(e.Table) {
				continue
			}
			rows, diffs, err := d.change(ctx, e)
			if err != nil {
				return err
			}
			if err := txn.Add(ctx, rows, diffs, at); err != nil {
				return err
			}
		}
	}
}
