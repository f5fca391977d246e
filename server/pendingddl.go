package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"sluice/sql/parser"
	"sluice/storage"
)

// Background creations survive a crash. A CREATE MATERIALIZED VIEW or
// CREATE SINK run with background_ddl returns before the epoch that
// creates its object commits (jobs.go): that epoch carries the catalog
// entry and commits only once the backfill is read, so a crash before it
// would lose a creation the client was told about. So the statement first
// writes, durably and outside the epochs, a pending record (the SQL, its
// role and TimeZone) under m/<id>/creating; the creation epoch deletes it
// with the catalog entry's insertion (job.Runtime.OnCreated), a cancelled
// creation with the entry's removal (cancelledCatalog). At startup each
// record left is a creation cut off by the crash: nothing of it was
// committed (no catalog entry, no state), and the statement is run again
// in the background, its backfill restarting from the start.

// A foreground creation of a job that backfills outside the epochs
// (exec/job/detached.go) commits its catalog entry before the epoch that
// creates the job, so it writes a pending record too, marked Foreground,
// in the epoch that carries the entry. At startup an entry whose pending
// record is left was never created: it is removed with whatever of its
// job committed (dropUncreated); a foreground creation is not run again
// (its client saw the connection end, not a success), a background one is.

// pendingSuffix ends the key of a pending record.
var pendingSuffix = []byte("creating")

func pendingKey(id uint64) []byte { return storage.Key(storage.SpaceMeta, id, pendingSuffix) }

// pendingCreate is a pending record.
type pendingCreate struct {
	SQL  string `json:"sql"`
	Role string `json:"role"`
	Zone string `json:"zone"`
	// Foreground marks a creation whose statement waits for it: it is not
	// run again after a crash.
	Foreground bool `json:"foreground,omitempty"`
}

// markForeground writes, for a foreground creation of job id that
// backfills outside the epochs, a pending record in the epoch that carries
// its catalog entry (ddl closure).
func (e *Engine) markForeground(id uint64, opts createOpts) {
	if j := e.rt.Job(id); opts.background || j == nil || !j.Detached() {
		return
	}
	v, _ := json.Marshal(pendingCreate{Foreground: true}) //nolint:errchkjson // a plain struct
	e.coord.OnNextEpoch(func(w *storage.EpochWriter) { w.Set(pendingKey(id), v) })
}

// pendingRec is a pending record and its object's id.
type pendingRec struct {
	id uint64
	pc pendingCreate
}

// loadPending reads every pending record.
func loadPending(db *storage.DB) ([]pendingRec, error) {
	var recs []pendingRec
	prefix := []byte{storage.SpaceMeta, '/'}
	err := db.Scan(prefix, func(k, v []byte) error {
		if len(k) != len(prefix)+8+len(pendingSuffix) || !bytes.HasSuffix(k, pendingSuffix) {
			return nil
		}
		r := pendingRec{id: binary.BigEndian.Uint64(k[len(prefix):])}
		if err := json.Unmarshal(v, &r.pc); err != nil {
			return fmt.Errorf("pending creation %d: %w", r.id, err)
		}
		recs = append(recs, r)
		return nil
	})
	return recs, err
}

// splitUncreated removes from entries (the committed catalog) those that
// have a pending record: their creation never committed.
func splitUncreated(entries []*storage.CatalogEntry, recs []pendingRec) (kept []*storage.CatalogEntry, uncreated []pendingRec) {
	pending := map[uint64]pendingRec{}
	for _, r := range recs {
		pending[r.id] = r
	}
	for _, ent := range entries {
		if r, ok := pending[ent.ID]; ok {
			uncreated = append(uncreated, r)
			continue
		}
		kept = append(kept, ent)
	}
	return kept, uncreated
}

// dropUncreated removes, in one epoch it waits for, the catalog entries
// and state of creations a crash cut off (splitUncreated), and the
// pending records of the foreground ones.
func (e *Engine) dropUncreated(ctx context.Context, uncreated []pendingRec) error {
	if len(uncreated) == 0 {
		return nil
	}
	return e.ddl(ctx, func() error {
		for _, r := range uncreated {
			e.cfg.Logf("startup: object %d was being created when the server stopped: its catalog entry and state are removed", r.id)
			e.rt.DropState(r.id)
			id, fg := r.id, r.pc.Foreground
			e.coord.OnNextEpoch(func(w *storage.EpochWriter) {
				storage.DeleteCatalog(w, id)
				w.Delete(rowIDKey(id))
				w.Delete(seqKey(id))
				if fg {
					w.Delete(pendingKey(id))
				}
			})
		}
		return nil
	})
}

// persistPending writes the pending record of background creation id
// durably before the creation's epoch is injected.
func (e *Engine) persistPending(ctx context.Context, id uint64, sql string) error {
	v, err := json.Marshal(pendingCreate{SQL: sql, Role: roleOf(ctx), Zone: zoneOf(ctx)})
	if err != nil {
		return err
	}
	wb := e.db.NewWriteBatch()
	wb.Set(pendingKey(id), v)
	return e.db.WriteSync(wb)
}

// dropPending deletes pending record id at once (a creation that failed
// before its epoch was injected, or one resumed under a new id).
func (e *Engine) dropPending(id uint64) error {
	wb := e.db.NewWriteBatch()
	wb.Delete(pendingKey(id))
	return e.db.WriteSync(wb)
}

// createdPending deletes the pending record of job id in w, the epoch
// that creates it (job.Runtime.OnCreated).
func createdPending(id uint64, w *storage.EpochWriter) { w.Delete(pendingKey(id)) }

// resumePending runs again, in the background, each creation whose
// pending record a crash left behind. Called once the engine runs.
func (e *Engine) resumePending(ctx context.Context) error {
	recs, err := loadPending(e.db)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.pc.Foreground {
			// Its client was told nothing but that the connection ended.
			if err := e.dropPending(r.id); err != nil {
				return err
			}
			continue
		}
		if err := e.resumeOne(ctx, r.id, r.pc); err != nil {
			e.cfg.Logf("resuming the background creation cut off by a restart (%s): %v; it is dropped", r.pc.SQL, err)
		}
		if e.rt.Job(r.id) != nil {
			// Run again under the same id (ids not committed are
			// allocated again): its record is the new creation's.
			continue
		}
		if err := e.dropPending(r.id); err != nil {
			return err
		}
	}
	return nil
}

// resumeOne runs pending creation id again (under a new id).
func (e *Engine) resumeOne(ctx context.Context, id uint64, pc pendingCreate) error {
	if e.cat.byIDGet(id) != nil {
		return nil // created: its epoch committed (cannot happen: it deletes the record)
	}
	st, err := parser.ParseOne(pc.SQL)
	if err != nil {
		return err
	}
	ctx = withZone(withRole(ctx, pc.Role), pc.Zone)
	opts := createOpts{background: true}
	switch x := st.(type) {
	case *parser.CreateMaterializedView:
		e.cfg.Logf("resuming the background creation of materialized view %s cut off by a restart: its backfill starts again", x.Name)
		return e.createMView(ctx, x, opts)
	case *parser.CreateSink:
		e.cfg.Logf("resuming the background creation of sink %s cut off by a restart: its backfill starts again", x.Name)
		return e.createSink(ctx, x, opts)
	}
	return fmt.Errorf("not a CREATE MATERIALIZED VIEW or CREATE SINK")
}
