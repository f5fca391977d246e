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

// pendingSuffix ends the key of a pending record.
var pendingSuffix = []byte("creating")

func pendingKey(id uint64) []byte { return storage.Key(storage.SpaceMeta, id, pendingSuffix) }

// pendingCreate is a pending record.
type pendingCreate struct {
	SQL  string `json:"sql"`
	Role string `json:"role"`
	Zone string `json:"zone"`
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
	type rec struct {
		id uint64
		pc pendingCreate
	}
	var recs []rec
	prefix := []byte{storage.SpaceMeta, '/'}
	if err := e.db.Scan(prefix, func(k, v []byte) error {
		if len(k) != len(prefix)+8+len(pendingSuffix) || !bytes.HasSuffix(k, pendingSuffix) {
			return nil
		}
		r := rec{id: binary.BigEndian.Uint64(k[len(prefix):])}
		if err := json.Unmarshal(v, &r.pc); err != nil {
			return fmt.Errorf("pending creation %d: %w", r.id, err)
		}
		recs = append(recs, r)
		return nil
	}); err != nil {
		return err
	}
	for _, r := range recs {
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
