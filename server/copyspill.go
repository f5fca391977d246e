package server

import (
	"bufio"
	"bytes"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"

	"sluice/exec/eval"
	"sluice/exec/flow"
	"sluice/planner"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// The spilled bulk insert: a COPY FROM outside a transaction block whose
// memory does not grow with its rows. As the decode pipeline hands over
// each chunk, its table log entry is written to an sstable of the log at
// the sequence numbers after the table's when the load began, and its
// write-set records (key, encoded row, row number) either go straight into
// sstables of rows, while every key is above the one before (a table with
// a primary key loaded in key order), or to runs, sorted scratch files of
// spillRunBytes; the first key out of order turns the rows written so far
// into runs. The rows themselves are dropped. At the end, under the
// table's lock, the runs are merged in key order into sstables (checking
// the keys against each other and the committed rows as bulkCommit does,
// with the same first error; rows in key order are checked against the
// committed ones only if the table has a key in their range or locked
// keys), the log's sstable is rewritten if the table's log moved on
// meanwhile, and storage ingests them all at once, durably. Then the
// chunks enter the dataflow in one epoch, as log sequence numbers that
// the table's source reads back one at a time. A crash before the
// ingestion leaves only scratch files, which storage removes when it
// opens.

// spillRunBytes is the key and row bytes of one sorted run (a variable:
// tests make many small runs). A run in the making is most of a COPY's
// live heap, and the collector lets the heap grow to four times that
// (cmd/sluice tuneGC): 8 MiB runs took a million-row COPY's peak RSS
// below 256 MiB, where 16 MiB ones left it near 300.
var spillRunBytes = 8 << 20

// spillFileBytes is the size of one ingested sstable of rows (a variable:
// tests make many small files).
var spillFileBytes uint64 = 64 << 20

var spillSeq atomic.Int64

var errStopSpill = errors.New("stop")

// copySpill is one spilled bulk insert being read.
type copySpill struct {
	e    *Engine
	tw   *tableWriter
	tag  string
	rows int
	// first holds the first chunk's rows: a COPY of fewer than bulkMin
	// rows takes the row path.
	first []types.Row
	// checkRow is the first row failing NOT NULL or CHECK (-1: none).
	checkRow int
	checkErr error
	err      error // a scratch file's I/O error
	// logSST holds the chunks' log entries at logBase+1, logBase+2, …
	// (logBase: the table's log sequence number when the load began).
	logSST   *storage.BulkFile
	logBase  uint64
	chunks   int
	ingested bool // the sstables are the store's now
	// sorted: every key so far is above the one before (a keyed table);
	// the rows 0, 1, … are in direct, in key order, firstKey to lastKey.
	sorted            bool
	direct            []*storage.BulkFile
	nDirect           int
	firstKey, lastKey []byte
	// the run being filled: records' keys and values back to back
	arena []byte
	recs  []spillRec
	runs  []string
	files []string // every scratch run, removed by cleanup
}

type spillRec struct {
	off, kl, vl int
	row         int
}

func (e *Engine) newCopySpill(tw *tableWriter) (*copySpill, error) {
	sp := &copySpill{e: e, tw: tw, checkRow: -1, sorted: tw.key != nil,
		tag: fmt.Sprintf("copy-%d-%d", os.Getpid(), spillSeq.Add(1))}
	tw.mu.Lock()
	sp.logBase = tw.seq
	tw.mu.Unlock()
	f, err := e.db.NewBulkFile(sp.tag + "-log.sst")
	if err != nil {
		return nil, err
	}
	sp.logSST = f
	return sp, nil
}

// cleanup removes the scratch files (and the sstables, unless ingested).
func (sp *copySpill) cleanup() {
	if !sp.ingested {
		sp.logSST.Remove()
		for _, f := range sp.direct {
			f.Remove()
		}
	}
	for _, p := range sp.files {
		os.Remove(p)
	}
}

// add takes the next chunk (decoded and encoded) in input order.
func (sp *copySpill) add(c *bulkChunk) {
	base := sp.rows
	sp.rows += len(c.rows)
	if base == 0 {
		sp.first = c.rows
	}
	if sp.err != nil || sp.checkRow >= 0 {
		return // nothing after the first failing row matters
	}
	limit := len(c.rows)
	for j, r := range c.rows {
		if err := sp.tw.check(r); err != nil {
			sp.checkRow, sp.checkErr, limit = base+j, err, j
			break
		}
	}
	sp.chunks++
	if err := sp.logSST.Set(storage.Key(storage.SpaceLog, sp.tw.id, flow.EncodeSeq(sp.logBase+uint64(sp.chunks))), c.log); err != nil {
		sp.err = err
		return
	}
	j := 0
	if sp.sorted {
		// Rows before this chunk are all in direct: row base+j is the
		// nDirect-th.
		for ; j < limit; j++ {
			k := c.key(j)
			if sp.nDirect > 0 && bytes.Compare(k, sp.lastKey) <= 0 {
				break
			}
			if err := sp.writeDirect(k, c.value(j)); err != nil {
				sp.err = err
				return
			}
			if sp.nDirect == 0 {
				sp.firstKey = bytes.Clone(k)
			}
			sp.lastKey = append(sp.lastKey[:0], k...)
			sp.nDirect++
		}
		if j < limit {
			sp.unsort()
			if sp.err != nil {
				return
			}
		}
	}
	for ; j < limit; j++ {
		var k []byte
		if sp.tw.key != nil {
			k = c.key(j)
		}
		sp.addRec(k, c.value(j), base+j)
	}
}

// addRec adds a record to the run being filled.
func (sp *copySpill) addRec(k, v []byte, row int) {
	off := len(sp.arena)
	sp.arena = append(append(sp.arena, k...), v...)
	sp.recs = append(sp.recs, spillRec{off: off, kl: len(k), vl: len(v), row: row})
	if len(sp.arena) >= spillRunBytes {
		sp.flushRun()
	}
}

// writeDirect appends a row, its key above every one before, to the
// sstables of rows in key order.
func (sp *copySpill) writeDirect(k, v []byte) error {
	n := len(sp.direct)
	if n == 0 || sp.direct[n-1].Size() >= spillFileBytes {
		if n > 0 {
			if err := sp.direct[n-1].Close(); err != nil {
				return err
			}
		}
		f, err := sp.e.db.NewBulkFile(fmt.Sprintf("%s-d-%d.sst", sp.tag, n))
		if err != nil {
			return err
		}
		sp.direct = append(sp.direct, f)
	}
	return sp.direct[len(sp.direct)-1].Set(k, v)
}

// unsort turns the rows written in key order into runs (a key has come
// out of order): the rest of the load goes to runs.
func (sp *copySpill) unsort() {
	sp.sorted = false
	row := 0
	for _, f := range sp.direct {
		err := f.Close()
		if err == nil {
			err = f.Scan(func(k, v []byte) error {
				sp.addRec(k, v, row)
				row++
				return sp.err
			})
		}
		if err != nil && sp.err == nil {
			sp.err = err
		}
		f.Remove()
	}
	sp.direct, sp.nDirect = nil, 0
}

func (sp *copySpill) recKey(r spillRec) []byte { return sp.arena[r.off : r.off+r.kl] }

// flushRun writes the current run, sorted by key then row.
func (sp *copySpill) flushRun() {
	if sp.err != nil || len(sp.recs) == 0 {
		return
	}
	if sp.tw.key != nil {
		slices.SortFunc(sp.recs, func(a, b spillRec) int {
			if c := bytes.Compare(sp.recKey(a), sp.recKey(b)); c != 0 {
				return c
			}
			return a.row - b.row
		})
	}
	path := filepath.Join(sp.e.db.BulkDir(), fmt.Sprintf("%s-run-%d", sp.tag, len(sp.runs)))
	sp.files = append(sp.files, path)
	f, err := os.Create(path)
	if err == nil {
		w := bufio.NewWriterSize(f, 1<<20)
		var buf []byte
		for _, r := range sp.recs {
			buf = binary.AppendUvarint(buf[:0], uint64(r.kl))
			buf = binary.AppendUvarint(buf, uint64(r.vl))
			buf = binary.AppendUvarint(buf, uint64(r.row))
			w.Write(buf)
			w.Write(sp.arena[r.off : r.off+r.kl+r.vl])
		}
		err = w.Flush()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		sp.err = pgerror.Wrap(err, pgcode.IOError, "write %s", path)
		return
	}
	sp.runs = append(sp.runs, path)
	sp.arena, sp.recs = sp.arena[:0], sp.recs[:0]
}

// runReader reads one run's records in order.
type runReader struct {
	r   *bufio.Reader
	f   *os.File
	buf []byte
	key []byte
	val []byte
	row int
}

func (rr *runReader) next() (bool, error) {
	kl, err := binary.ReadUvarint(rr.r)
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	vl, err := binary.ReadUvarint(rr.r)
	if err != nil {
		return false, err
	}
	row, err := binary.ReadUvarint(rr.r)
	if err != nil {
		return false, err
	}
	n := int(kl + vl)
	if cap(rr.buf) < n {
		rr.buf = make([]byte, n)
	}
	rr.buf = rr.buf[:n]
	if _, err := io.ReadFull(rr.r, rr.buf); err != nil {
		return false, err
	}
	rr.key, rr.val, rr.row = rr.buf[:kl], rr.buf[kl:], int(row)
	return true, nil
}

// RunKey and RunSeq place the run in a storage.RunHeap: by its current
// key, then by its row.
func (r *runReader) RunKey() []byte { return r.key }
func (r *runReader) RunSeq() int    { return r.row }

// finish ends the input: it flushes the scratch files.
func (sp *copySpill) finish() error {
	if sp.err == nil {
		sp.flushRun()
	}
	if sp.err == nil {
		sp.err = sp.logSST.Close()
	}
	if n := len(sp.direct); sp.err == nil && n > 0 {
		sp.err = sp.direct[n-1].Close()
	}
	return sp.err
}

// commit checks and ingests the load, then hands its chunks to the
// table's source in one epoch, which it returns. With a wait channel
// nothing was written (try again once it closes).
func (sp *copySpill) commit(ctx context.Context) (uint64, chan struct{}, error) {
	e, tw := sp.e, sp.tw
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if cur, err := e.tableWriter(tw.id); err != nil || cur != tw {
		return 0, nil, pgerror.New(pgcode.SerializationFailure, "table %q changed while the statement was writing it", tw.name).
			WithHint("Retry the statement.")
	}
	// out: the sstables made here (removed if the commit fails; the
	// load's own are removed by cleanup)
	var out []*storage.BulkFile
	ok := false
	defer func() {
		if !ok {
			for _, f := range out {
				f.Remove()
			}
		}
	}()
	limit := sp.rows
	if sp.checkRow >= 0 {
		limit = sp.checkRow
	}
	// The rows, merged in key order (keyless: in input order, under new
	// row ids).
	readers := make([]*runReader, 0, len(sp.runs))
	defer func() {
		for _, rr := range readers {
			rr.f.Close()
		}
	}()
	h := storage.RunHeap[*runReader]{}
	for _, p := range sp.runs {
		f, err := os.Open(p)
		if err != nil {
			return 0, nil, pgerror.Wrap(err, pgcode.IOError, "read %s", p)
		}
		rr := &runReader{f: f, r: bufio.NewReaderSize(f, 256<<10)}
		readers = append(readers, rr)
		more, err := rr.next()
		if err != nil {
			return 0, nil, pgerror.Wrap(err, pgcode.IOError, "read %s", p)
		}
		if more {
			h = append(h, rr)
		}
	}
	keyed := tw.key != nil
	if keyed {
		heap.Init(&h)
	}
	var sst *storage.BulkFile
	newFile := func() error {
		f, err := e.db.NewBulkFile(fmt.Sprintf("%s-w-%d.sst", sp.tag, len(out)))
		if err != nil {
			return err
		}
		sst = f
		out = append(out, f)
		return nil
	}
	dup, lock := limit, limit
	var lockDone chan struct{}
	var dupRow []byte
	// pending: keys (first occurrences, at parena[off:], value after)
	// waiting for the committed check
	type pend struct{ off, kl, vl, row int }
	var pending []pend
	var parena []byte
	var keys [][]byte
	checkPending := func() error {
		if len(pending) == 0 {
			return nil
		}
		keys = keys[:0]
		for _, p := range pending {
			keys = append(keys, parena[p.off:p.off+p.kl])
		}
		err := e.db.Existing(keys, func(i int) {
			if p := pending[i]; p.row < dup {
				dup, dupRow = p.row, bytes.Clone(parena[p.off+p.kl:p.off+p.kl+p.vl])
			}
		})
		pending, parena = pending[:0], parena[:0]
		return err
	}
	// noteKey takes the first occurrence of a key: a key locked by a
	// transaction, a key to check against the committed rows.
	noteKey := func(k, v []byte, row int) error {
		if len(tw.locks) > 0 && row < lock {
			if owner := tw.locks[string(k)]; owner != nil {
				lock, lockDone = row, owner.done
			}
		}
		off := len(parena)
		parena = append(append(parena, k...), v...)
		pending = append(pending, pend{off: off, kl: len(k), vl: len(v), row: row})
		if len(pending) == bulkChunkRows {
			return checkPending()
		}
		return nil
	}
	if sp.sorted && sp.nDirect > 0 {
		// The rows are in direct already, every key once: only the
		// committed rows and the locks can fail them.
		need := len(tw.locks) > 0
		if !need {
			err := e.db.ScanRange(sp.firstKey, append(bytes.Clone(sp.lastKey), 0), func(k, v []byte) error {
				need = true
				return errStopSpill
			})
			if err != nil && err != errStopSpill {
				return 0, nil, err
			}
		}
		row := 0
		for _, f := range sp.direct {
			if !need {
				break
			}
			if err := ctx.Err(); err != nil {
				return 0, nil, err
			}
			err := f.Scan(func(k, v []byte) error {
				row++
				return noteKey(k, v, row-1)
			})
			if err != nil {
				return 0, nil, err
			}
		}
	}
	rowID := tw.rowID
	var last []byte
	haveLast := false
	var kbuf []byte
	for n := 0; len(h) > 0; n++ {
		if n&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return 0, nil, err
			}
		}
		rr := h[0]
		k, v, row := rr.key, rr.val, rr.row
		if row < limit {
			if keyed && haveLast && bytes.Equal(k, last) {
				if row < dup {
					dup, dupRow = row, bytes.Clone(v)
				}
			} else {
				if keyed {
					last, haveLast = append(last[:0], k...), true
					if err := noteKey(k, v, row); err != nil {
						return 0, nil, err
					}
				} else {
					rowID++
					kbuf = storage.Key(storage.SpaceWrite, tw.id, flow.EncodeSeq(rowID))
					k = kbuf
				}
				if dup == limit && lock == limit {
					if sst == nil || sst.Size() >= spillFileBytes {
						if sst != nil {
							if err := sst.Close(); err != nil {
								return 0, nil, err
							}
						}
						if err := newFile(); err != nil {
							return 0, nil, err
						}
					}
					if err := sst.Set(k, v); err != nil {
						return 0, nil, err
					}
				}
			}
		}
		more, err := rr.next()
		if err != nil {
			return 0, nil, pgerror.Wrap(err, pgcode.IOError, "read %s", rr.f.Name())
		}
		switch {
		case !more && keyed:
			heap.Pop(&h)
		case !more:
			h = h[1:]
		case keyed:
			heap.Fix(&h, 0)
		}
	}
	if err := checkPending(); err != nil {
		return 0, nil, err
	}
	switch {
	case dup < limit && dup <= lock:
		r, err := types.DecodeRow(dupRow)
		if err != nil {
			return 0, nil, err
		}
		return 0, nil, dupKey(tw, r)
	case lock < limit:
		return 0, lockDone, nil
	case sp.checkErr != nil:
		return 0, nil, sp.checkErr
	}
	if sst != nil {
		if err := sst.Close(); err != nil {
			return 0, nil, err
		}
	}
	// The log entries at the table's next sequence numbers: rewritten if
	// other statements wrote the table during the load.
	if tw.seq != sp.logBase {
		if err := sp.rebaseLog(tw.seq); err != nil {
			return 0, nil, err
		}
	}
	if !keyed {
		f, err := e.db.NewBulkFile(sp.tag + "-rowid.sst")
		if err != nil {
			return 0, nil, err
		}
		out = append(out, f)
		if err := f.Set(rowIDKey(tw.id), binary.AppendUvarint(nil, rowID)); err != nil {
			return 0, nil, err
		}
		if err := f.Close(); err != nil {
			return 0, nil, err
		}
	}
	files := append(append(out, sp.direct...), sp.logSST)
	ok = true // IngestBulk removes the files if it fails
	sp.ingested = true
	if err := e.db.IngestBulk(files); err != nil {
		return 0, nil, err
	}
	tw.rowID = rowID
	bulkCommits.Add(1)
	// Durable from here on: the source gets the rows even if the client
	// has gone away.
	pctx := context.WithoutCancel(ctx)
	// The chunks go as sequence numbers: the source reads each from the
	// log when the dataflow takes it (flow.TableChunk).
	tw.src.AwaitRoom(ctx) // the dataflow's state is over its cache
	epoch, err := e.coord.Atomic(func() error {
		for range sp.chunks {
			tw.seq++
			if err := tw.src.Push(pctx, flow.TableChunk{Seq: tw.seq}); err != nil {
				return err
			}
		}
		return nil
	})
	return epoch, nil, err
}

// rebaseLog rewrites the log's sstable at the sequence numbers after base.
func (sp *copySpill) rebaseLog(base uint64) error {
	f, err := sp.e.db.NewBulkFile(fmt.Sprintf("%s-log-%d.sst", sp.tag, base))
	if err != nil {
		return err
	}
	seq := base
	err = sp.logSST.Scan(func(_, v []byte) error {
		seq++
		return f.Set(storage.Key(storage.SpaceLog, sp.tw.id, flow.EncodeSeq(seq)), v)
	})
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		f.Remove()
		return err
	}
	sp.logSST.Remove()
	sp.logSST, sp.logBase = f, base
	return nil
}

// copySpilled runs a COPY FROM's text or CSV input on the spilled bulk
// path (the caller has checked that it may).
func (s *session) copySpilled(ctx context.Context, d *copyDecoder, tw *tableWriter) (int, error) {
	sp, err := s.e.newCopySpill(tw)
	if err != nil {
		return 0, err
	}
	defer sp.cleanup()
	if err := d.pipeline(tw, func(c *copyChunk) { sp.add(c.enc) }); err != nil {
		return 0, err
	}
	if err := sp.finish(); err != nil {
		return 0, err
	}
	return s.commitSpill(ctx, sp)
}

// insertSelectSpilled runs an INSERT … SELECT on the spilled bulk path
// (the caller has checked that it may): each batch of the query's rows is
// encoded in chunks and spilled as COPY's are.
func (s *session) insertSelectSpilled(ctx context.Context, tw *tableWriter, ins *planner.Insert, ectx *eval.Context) (int, error) {
	sp, err := s.e.newCopySpill(tw)
	if err != nil {
		return 0, err
	}
	defer sp.cleanup()
	var pending []types.Row
	var scratch []byte
	flush := func() {
		var c *bulkChunk
		c, scratch = tw.encodeBulk(pending, scratch)
		sp.add(c)
		pending = nil
	}
	err = s.e.eachInsertRow(ctx, tw, ins, ectx, s.txSnapshot(), func(rows []types.Row) error {
		for len(rows) > 0 {
			n := min(len(rows), bulkChunkRows-len(pending))
			pending = append(pending, rows[:n]...)
			rows = rows[n:]
			if len(pending) == bulkChunkRows {
				flush()
			}
		}
		return sp.err
	})
	if err != nil {
		return 0, err
	}
	if len(pending) > 0 {
		flush()
	}
	if err := sp.finish(); err != nil {
		return 0, err
	}
	return s.commitSpill(ctx, sp)
}

// commitSpill commits a finished spilled insert (the row path takes one
// of fewer than bulkMin rows).
func (s *session) commitSpill(ctx context.Context, sp *copySpill) (int, error) {
	if sp.rows < bulkMin {
		return s.insertInto(ctx, sp.tw, sp.first)
	}
	for {
		epoch, wait, err := sp.commit(ctx)
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
		return sp.rows, s.noteWrite(ctx, epoch)
	}
}
