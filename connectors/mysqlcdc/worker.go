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

// session connects and reads from w.pos until an error.
func (w *worker) session(ctx context.Context) error {
	c := w.cfg
	up, err := probe(ctx, c)
	if err != nil {
		return err
	}
	switch w.pos.phase {
	case phaseFresh, phaseSnapshot:
		conn, err := c.connect(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		pos := w.pos
		if pos.phase == phaseFresh {
			file, off, err := w.consistentSnapshot(conn)
			if err != nil {
				return err
			}
			pos = position{phase: phaseSnapshot, snapFile: file, snapPos: off}
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
		return "", 0, pgerror.New(pgcode.ObjectNotInPrerequisiteState, "mysql-cdc source %s: the upstream reports no binlog position", c.name).
			WithHint("start the upstream with log_bin and binlog_format = ROW")
	}
	return file, n, nil
}

// snapshotPage bounds the rows one snapshot query reads.
const snapshotPage = chunkRows

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
	for i := range c.cols {
		sel = append(sel, selectExpr(up.cols[up.at[i]]))
	}
	for _, k := range c.key {
		order = append(order, quoteIdent(up.cols[up.at[k]].name))
	}
	base := "SELECT " + strings.Join(sel, ", ") + " FROM " + c.qualified()
	tail := " ORDER BY " + strings.Join(order, ", ") + " LIMIT " + strconv.Itoa(snapshotPage)
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		q := base
		if len(pos.lastKey) == len(c.key) {
			var lits []string
			for i, k := range c.key {
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
		ch := &chunk{rows: make([]types.Row, 0, n), diffs: make([]int64, 0, n)}
		for r := range n {
			vals := res.Values[r]
			row := make(types.Row, len(c.cols))
			for i, col := range c.cols {
				d, err := toDatum(vals[i].Value(), col.Type, up.cols[up.at[i]])
				if err != nil {
					return w.badValue(col.Name, vals[i].Value(), err)
				}
				row[i] = d
			}
			ch.rows = append(ch.rows, row)
			ch.diffs = append(ch.diffs, 1)
		}
		last := res.Values[n-1]
		key := make([]*string, len(c.key))
		for i, k := range c.key {
			if v := last[k].Value(); v != nil {
				s := keyText(v)
				key[i] = &s
			}
		}
		pos.lastKey = key
		ch.pos = pos
		if err := w.send(ctx, ch); err != nil {
			return err
		}
		if n < snapshotPage {
			break
		}
	}
	if _, err := conn.Execute("COMMIT"); err != nil {
		return c.upstreamError(err)
	}
	return w.send(ctx, &chunk{pos: position{phase: phaseStream, snapFile: pos.snapFile, snapPos: pos.snapPos, file: pos.snapFile, pos: pos.snapPos}})
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
	return pgerror.Wrap(err, pgcode.InvalidTextRepresentation, "mysql-cdc source %s: column %s value %s", w.cfg.name, col, describe(v))
}

// heartbeat is how often an idle upstream sends a heartbeat event, so a
// dead connection is noticed within readTimeout.
const (
	heartbeat   = time.Second
	readTimeout = 10 * time.Second
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// stream reads the binlog from w.pos.
func (w *worker) stream(ctx context.Context, up *upstreamTable) error {
	c := w.cfg
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID: c.serverID, Flavor: up.flavor, Host: c.host, Port: uint16(c.port), User: c.user, Password: c.password,
		Charset: "utf8mb4", TimestampStringLocation: time.UTC, HeartbeatPeriod: heartbeat, ReadTimeout: readTimeout,
		DisableRetrySync: true, MaxReconnectAttempts: 1, Logger: quiet,
	})
	defer syncer.Close()
	streamer, err := syncer.StartSync(mysql.Position{Name: w.pos.file, Pos: uint32(w.pos.pos)})
	if err != nil {
		return c.upstreamError(err)
	}
	d := &decoder{cfg: c, up: up}
	skip := w.pos.skip // rows of the first transaction already emitted
	first := true
	var emitted uint64 // rows of the current transaction so far
	inTxn, healthy := false, false
	file, lastFile, lastPos := w.pos.file, w.pos.file, w.pos.pos
	cur := &chunk{}
	flush := func(p position) error {
		cur.pos = p
		err := w.send(ctx, cur)
		cur = &chunk{}
		return err
	}
	at := func(skip uint64) position {
		return position{phase: phaseStream, snapFile: w.pos.snapFile, snapPos: w.pos.snapPos, file: lastFile, pos: lastPos, skip: skip}
	}
	commit := func(end uint32) error {
		lastFile, lastPos = file, uint64(end)
		first, skip, inTxn, emitted = false, 0, false, 0
		return flush(at(0))
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
			w.sh.status.Store(nil) // streaming: healthy
		}
		switch e := ev.Event.(type) {
		case *replication.RotateEvent:
			file = string(e.NextLogName)
			if !inTxn && !(first && skip > 0) && (file != lastFile || e.Position != lastPos) {
				lastFile, lastPos = file, e.Position
				if err := flush(at(0)); err != nil {
					return err
				}
			}
		case *replication.MariadbGTIDEvent:
			inTxn, emitted = !e.IsStandalone(), 0
		case *replication.QueryEvent:
			q := strings.ToUpper(strings.TrimSpace(string(e.Query)))
			switch {
			case q == "BEGIN" || strings.HasPrefix(q, "XA START"):
				inTxn, emitted = true, 0
			case q == "COMMIT" || q == "ROLLBACK" || strings.HasPrefix(q, "XA COMMIT") || strings.HasPrefix(q, "XA ROLLBACK"):
				if err := commit(ev.Header.LogPos); err != nil {
					return err
				}
			case inTxn:
				// SAVEPOINT and the like inside a transaction.
			default:
				// DDL: a transaction of its own.
				if d.truncates(string(e.Schema), q) {
					return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "mysql-cdc source %s: upstream table %s was truncated", c.name, c.qualified()).
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
			for i := range rows {
				emitted++
				if first && emitted <= skip {
					continue // emitted before the checkpoint we resumed from
				}
				cur.rows = append(cur.rows, rows[i])
				cur.diffs = append(cur.diffs, diffs[i])
				if len(cur.rows) >= chunkRows {
					if err := flush(at(emitted)); err != nil {
						return err
					}
				}
			}
		}
	}
}
