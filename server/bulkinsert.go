package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"sync/atomic"

	"sluice/exec/flow"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// The bulk insert path: a statement outside a transaction block that
// inserts at least bulkMin rows (a COPY, a long INSERT … VALUES) builds its
// storage batch directly instead of going row by row through the
// transaction's row map. Each row is encoded once, into its chunk's table
// log entry; the write-set value is a slice of that entry. The result is
// exactly the row path's (insertInto): the same constraint checks in the
// same order, the same first error, the same rows in the write set, the
// same changes in the table's log (in one entry per chunk of rows, at
// consecutive sequence numbers, rather than one per statement), committed
// durably in one synced batch and handed to the table's source in one
// epoch.

// bulkMin is the fewest rows that take the bulk path.
const bulkMin = 256

// bulkCommits counts the bulk inserts committed (tests check that a
// statement took the bulk path).
var bulkCommits atomic.Int64

// bulkChunkRows is the rows of one log entry of a bulk insert.
const bulkChunkRows = 4096

// bulkChunk is a run of rows encoded for the write set and the table log.
type bulkChunk struct {
	rows []types.Row
	// log is the chunk's log entry (job.EncodeLogBatch's format: diff and
	// encoded row, repeated), every row inserted; row i's encoding is
	// log[val[2i]:val[2i+1]].
	log []byte
	val []int
	// keys holds the rows' write-set keys back to back (tables with a
	// primary key; key i ends at kend[i]).
	keys []byte
	kend []int
}

func (c *bulkChunk) key(i int) []byte {
	start := 0
	if i > 0 {
		start = c.kend[i-1]
	}
	return c.keys[start:c.kend[i]]
}

// encodeBulk encodes rows (full-width) for tw. It runs on COPY's decode
// workers: it reads only tw's immutable fields.
func (tw *tableWriter) encodeBulk(rows []types.Row, scratch []byte) (*bulkChunk, []byte) {
	c := &bulkChunk{rows: rows, val: make([]int, 0, 2*len(rows))}
	c.log = binary.AppendUvarint(make([]byte, 0, 64*len(rows)), uint64(2*len(rows)))
	var prefix []byte
	if tw.key != nil {
		prefix = storage.Key(storage.SpaceWrite, tw.id)
		c.keys = make([]byte, 0, (len(prefix)+10)*len(rows))
		c.kend = make([]int, 0, len(rows))
	}
	one := types.NewInt(1)
	for _, r := range rows {
		scratch = types.EncodeRow(scratch[:0], r)
		c.log = types.AppendValue(c.log, one)
		c.log = types.AppendBytesValue(c.log, scratch)
		c.val = append(c.val, len(c.log)-len(scratch), len(c.log))
		if prefix != nil {
			c.keys = append(c.keys, prefix...)
			for _, k := range tw.key {
				c.keys = types.AppendKey(c.keys, r[k])
			}
			c.kend = append(c.kend, len(c.keys))
		}
	}
	return c, scratch
}

// bulkInsertRows inserts rows (full-width, in memory: INSERT's, or a
// binary COPY's) on the bulk path.
func (s *session) bulkInsertRows(ctx context.Context, tw *tableWriter, rows []types.Row) (int, error) {
	b := &bulkLoad{tw: tw}
	var scratch []byte
	for len(rows) > 0 {
		n := min(len(rows), bulkChunkRows)
		var c *bulkChunk
		c, scratch = tw.encodeBulk(rows[:n:n], scratch)
		b.add(c)
		rows = rows[n:]
	}
	return s.bulkInsert(ctx, b)
}

// bulkLoad is a bulk insert being assembled: its chunks, in order. The
// storage batch is built at commit, at its final size.
type bulkLoad struct {
	tw     *tableWriter
	chunks []*bulkChunk
	rows   int
	size   int // the bytes its storage batch will hold, about
}

// add appends a chunk.
func (b *bulkLoad) add(c *bulkChunk) {
	b.chunks = append(b.chunks, c)
	b.rows += len(c.rows)
	// write-set keys and values, the log entry, record headers
	b.size += len(c.keys) + 2*len(c.log) + 32*len(c.rows) + 64
}

func (c *bulkChunk) value(j int) []byte { return c.log[c.val[2*j]:c.val[2*j+1]] }

// row returns the i-th row of the load.
func (b *bulkLoad) row(i int) types.Row {
	for _, c := range b.chunks {
		if i < len(c.rows) {
			return c.rows[i]
		}
		i -= len(c.rows)
	}
	return nil
}

// allRows returns the load's rows in one slice.
func (b *bulkLoad) allRows() []types.Row {
	out := make([]types.Row, 0, b.rows)
	for _, c := range b.chunks {
		out = append(out, c.rows...)
	}
	return out
}

// insert inserts the load's rows into its table as one statement outside
// a transaction block. A row locked by a transaction block makes it wait
// for the block to end and try again, as the row path does.
func (s *session) bulkInsert(ctx context.Context, b *bulkLoad) (int, error) {
	for {
		epoch, wait, err := s.e.bulkCommit(ctx, b)
		if wait != nil {
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return 0, pgerror.New(pgcode.QueryCanceled, "canceling statement due to user request")
			}
		}
		if err != nil {
			return 0, err
		}
		return b.rows, s.noteWrite(ctx, epoch)
	}
}

// firstFailure finds the row at which the row path would stop: the first
// row (in order) that fails NOT NULL or CHECK, duplicates a committed key
// or an earlier row's, or meets a key locked by a transaction block; for
// one row the checks come in that order. It returns the error, or the
// lock's channel to wait on. The caller holds tw.mu.
func (e *Engine) firstFailure(b *bulkLoad) (error, chan struct{}) {
	i := 0
	for _, c := range b.chunks {
		for _, r := range c.rows {
			if err := b.tw.check(r); err != nil {
				return e.keyFailure(b, i, err)
			}
			i++
		}
	}
	return e.keyFailure(b, i, nil)
}

// keyFailure is firstFailure's key checks over the rows before limit; at
// limit itself the row's check error (checkErr) comes first.
func (e *Engine) keyFailure(b *bulkLoad, limit int, checkErr error) (error, chan struct{}) {
	tw := b.tw
	if tw.key == nil || limit == 0 {
		return checkErr, nil
	}
	type kref struct {
		k []byte
		i int
	}
	keys := make([]kref, 0, limit)
	for _, c := range b.chunks {
		for j := range c.rows {
			if len(keys) == limit {
				break
			}
			keys = append(keys, kref{c.key(j), len(keys)})
		}
	}
	// Sorted by key, then by row: an equal key's later rows duplicate its
	// first; its first duplicates a committed row.
	slices.SortFunc(keys, func(a, b kref) int {
		if c := bytes.Compare(a.k, b.k); c != 0 {
			return c
		}
		return a.i - b.i
	})
	dup, lock := limit, limit
	var lockDone chan struct{}
	sorted := make([][]byte, len(keys))
	for j, x := range keys {
		sorted[j] = x.k
		if j > 0 && bytes.Equal(keys[j-1].k, x.k) && x.i < dup {
			dup = x.i
		}
		if len(tw.locks) > 0 && x.i < lock {
			if owner := tw.locks[string(x.k)]; owner != nil {
				lock, lockDone = x.i, owner.done
			}
		}
	}
	err := e.db.Existing(sorted, func(j int) {
		dup = min(dup, keys[j].i)
	})
	if err != nil {
		return err, nil
	}
	switch {
	case dup < limit && dup <= lock:
		return dupKey(tw, b.row(dup)), nil
	case lock < limit:
		return nil, lockDone
	}
	return checkErr, nil
}

// bulkCommit checks and writes a bulk insert: one synced batch with the
// write-set rows, one log entry per chunk and the row-id counter, then the
// chunks to the table's source under Coordinator.Atomic (one epoch, which
// it returns). With a wait channel nothing was written (try again after
// it closes).
func (e *Engine) bulkCommit(ctx context.Context, b *bulkLoad) (uint64, chan struct{}, error) {
	tw := b.tw
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if cur, err := e.tableWriter(tw.id); err != nil || cur != tw {
		return 0, nil, pgerror.New(pgcode.SerializationFailure, "table %q changed while the statement was writing it", tw.name).
			WithHint("Retry the statement.")
	}
	if tw.cons != nil && len(tw.cons.uniques) > 0 {
		if err := e.checkUniques(e.newTxn(false), tw, nil, b.allRows()); err != nil {
			return 0, nil, err
		}
	}
	if err, wait := e.firstFailure(b); err != nil || wait != nil {
		return 0, wait, err
	}
	wb := e.db.NewWriteBatchSize(b.size)
	rowID := tw.rowID
	var seqs []uint64
	seq := tw.seq
	for _, c := range b.chunks {
		if len(c.rows) == 0 {
			continue
		}
		for j := range c.rows {
			if tw.key == nil {
				rowID++
				wb.Set(storage.Key(storage.SpaceWrite, tw.id, flow.EncodeSeq(rowID)), c.value(j))
			} else {
				wb.Set(c.key(j), c.value(j))
			}
		}
		seq++
		seqs = append(seqs, seq)
		wb.Set(storage.Key(storage.SpaceLog, tw.id, flow.EncodeSeq(seq)), c.log)
	}
	if tw.key == nil {
		wb.Set(rowIDKey(tw.id), binary.AppendUvarint(nil, rowID))
	}
	if err := e.db.WriteSync(wb); err != nil {
		return 0, nil, err
	}
	tw.rowID = rowID
	bulkCommits.Add(1)
	batches := make([]*types.Batch, 0, len(seqs))
	for _, c := range b.chunks {
		if len(c.rows) == 0 {
			continue
		}
		bt := &types.Batch{Rows: c.rows, Diffs: make([]int64, len(c.rows))}
		for j := range bt.Diffs {
			bt.Diffs[j] = 1
		}
		tw.noteCommitted(bt)
		batches = append(batches, bt)
	}
	// Durable from here on: the source gets the rows even if the client
	// has gone away.
	pctx := context.WithoutCancel(ctx)
	tw.src.AwaitRoom(ctx) // the dataflow's state is over its cache
	epoch, err := e.coord.Atomic(func() error {
		for i, bt := range batches {
			tw.seq = seqs[i]
			if err := tw.src.Push(pctx, flow.TableChunk{Seq: seqs[i], Batch: bt}); err != nil {
				return err
			}
		}
		return nil
	})
	return epoch, nil, err
}
