package server

import (
	"bufio"
	"bytes"
	"container/heap"
	"context"
	"encoding/binary"
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
// each chunk, its table log entry is appended to a scratch file and its
// write-set records (key, encoded row, row number) to runs, sorted
// scratch files of spillRunBytes; the rows themselves are dropped. At the
// end, under the table's lock, the runs are merged in key order into
// sstables (checking the keys against each other and the committed rows
// as bulkCommit does, with the same first error), the log entries become
// one more sstable, and storage ingests them all at once, durably. Then
// the chunks enter the dataflow in one epoch, as log sequence numbers
// that the table's source reads back one at a time. A crash before the
// ingestion leaves only scratch files, which storage removes when it
// opens.

// spillRunBytes is the key and row bytes of one sorted run (a variable:
// tests make many small runs). A run in the making is most of a COPY's
// live heap, and the collector lets the heap grow to four times that
// (cmd/sluice tuneGC): 8 MiB runs took a million-row COPY's peak RSS
// below 256 MiB, where 16 MiB ones left it near 300.
var spillRunBytes = 8 << 20

// spillFileBytes is the size of one ingested sstable of rows.
const spillFileBytes = 64 << 20

var spillSeq atomic.Int64

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
	logPath  string
	logf     *os.File
	logw     *bufio.Writer
	chunks   int
	// the run being filled: records' keys and values back to back
	arena []byte
	recs  []spillRec
	runs  []string
	files []string // every scratch file, removed by cleanup
}

type spillRec struct {
	off, kl, vl int
	row         int
}

func (e *Engine) newCopySpill(tw *tableWriter) (*copySpill, error) {
	sp := &copySpill{e: e, tw: tw, checkRow: -1, tag: fmt.Sprintf("copy-%d-%d", os.Getpid(), spillSeq.Add(1))}
	sp.logPath = filepath.Join(e.db.BulkDir(), sp.tag+"-log")
	f, err := os.Create(sp.logPath)
	if err != nil {
		return nil, pgerror.Wrap(err, pgcode.IOError, "create %s", sp.logPath)
	}
	sp.files = append(sp.files, sp.logPath)
	sp.logf, sp.logw = f, bufio.NewWriterSize(f, 1<<20)
	return sp, nil
}

// cleanup removes the scratch files.
func (sp *copySpill) cleanup() {
	if sp.logf != nil {
		sp.logf.Close()
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
	var hdr [binary.MaxVarintLen64]byte
	sp.logw.Write(hdr[:binary.PutUvarint(hdr[:], uint64(len(c.log)))])
	if _, err := sp.logw.Write(c.log); err != nil {
		sp.err = pgerror.Wrap(err, pgcode.IOError, "write %s", sp.logPath)
		return
	}
	sp.chunks++
	for j := range limit {
		var k []byte
		if sp.tw.key != nil {
			k = c.key(j)
		}
		v := c.value(j)
		off := len(sp.arena)
		sp.arena = append(append(sp.arena, k...), v...)
		sp.recs = append(sp.recs, spillRec{off: off, kl: len(k), vl: len(v), row: base + j})
	}
	if len(sp.arena) >= spillRunBytes {
		sp.flushRun()
	}
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
		if err := sp.logw.Flush(); err != nil {
			sp.err = pgerror.Wrap(err, pgcode.IOError, "write %s", sp.logPath)
		}
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
	// pending: keys (first occurrences) waiting for the committed check
	type pend struct {
		k, v []byte
		row  int
	}
	var pending []pend
	var parena []byte
	checkPending := func() error {
		if len(pending) == 0 {
			return nil
		}
		keys := make([][]byte, len(pending))
		for i, p := range pending {
			keys[i] = p.k
		}
		err := e.db.Existing(keys, func(i int) {
			if pending[i].row < dup {
				dup, dupRow = pending[i].row, bytes.Clone(pending[i].v)
			}
		})
		pending, parena = pending[:0], parena[:0]
		return err
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
					if len(tw.locks) > 0 && row < lock {
						if owner := tw.locks[string(k)]; owner != nil {
							lock, lockDone = row, owner.done
						}
					}
					off := len(parena)
					parena = append(append(parena, k...), v...)
					pending = append(pending, pend{row: row})
					pending[len(pending)-1].k = parena[off : off+len(k)]
					pending[len(pending)-1].v = parena[off+len(k):]
					if len(pending) == bulkChunkRows {
						// parena may have moved: re-slice
						p := 0
						for i := range pending {
							kl, vl := len(pending[i].k), len(pending[i].v)
							pending[i].k, pending[i].v = parena[p:p+kl], parena[p+kl:p+kl+vl]
							p += kl + vl
						}
						if err := checkPending(); err != nil {
							return 0, nil, err
						}
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
	if keyed && len(pending) > 0 {
		p := 0
		for i := range pending {
			kl, vl := len(pending[i].k), len(pending[i].v)
			pending[i].k, pending[i].v = parena[p:p+kl], parena[p+kl:p+kl+vl]
			p += kl + vl
		}
		if err := checkPending(); err != nil {
			return 0, nil, err
		}
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
	// The log entries, at the next sequence numbers, and the row id.
	lf, err := e.db.NewBulkFile(sp.tag + "-log.sst")
	if err != nil {
		return 0, nil, err
	}
	out = append(out, lf)
	seq := tw.seq
	err = sp.readLog(func(entry []byte) error {
		seq++
		return lf.Set(storage.Key(storage.SpaceLog, tw.id, flow.EncodeSeq(seq)), entry)
	})
	if err == nil && !keyed {
		err = lf.Set(rowIDKey(tw.id), binary.AppendUvarint(nil, rowID))
	}
	if err == nil {
		err = lf.Close()
	}
	if err != nil {
		return 0, nil, err
	}
	ok = true // IngestBulk removes the files if it fails
	if err := e.db.IngestBulk(out); err != nil {
		return 0, nil, err
	}
	tw.rowID = rowID
	bulkCommits.Add(1)
	// Durable from here on: the source gets the rows even if the client
	// has gone away.
	pctx := context.WithoutCancel(ctx)
	// The chunks go as sequence numbers: the source reads each from the
	// log when the dataflow takes it (flow.TableChunk).
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

// readLog calls f with each chunk's log entry, in order.
func (sp *copySpill) readLog(f func(entry []byte) error) error {
	file, err := os.Open(sp.logPath)
	if err != nil {
		return pgerror.Wrap(err, pgcode.IOError, "read %s", sp.logPath)
	}
	defer file.Close()
	r := bufio.NewReaderSize(file, 1<<20)
	for range sp.chunks {
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return pgerror.Wrap(err, pgcode.IOError, "read %s", sp.logPath)
		}
		entry := make([]byte, n)
		if _, err := io.ReadFull(r, entry); err != nil {
			return pgerror.Wrap(err, pgcode.IOError, "read %s", sp.logPath)
		}
		if err := f(entry); err != nil {
			return err
		}
	}
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
