package server

import (
	"context"

	"sluice/server/pgwire"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// backup runs BACKUP TO 'dir': every write acknowledged before it is
// committed in an epoch (as FLUSH does), then the store is copied at that
// epoch into dir (storage.DB.Backup), which any sluice can start from.
// Like CREATE DATABASE in PostgreSQL it runs on its own, outside a
// transaction block; only a superuser may run it, since it copies
// everything, and writes files where the server runs.
func (s *session) backup(ctx context.Context, x *parser.Backup, w pgwire.ResultWriter) error {
	if s.tx != nil {
		return pgerror.New(pgcode.ActiveSQLTransaction, "BACKUP cannot run inside a transaction block")
	}
	if !s.e.superuser(s.role()) {
		return pgerror.New(pgcode.InsufficientPrivilege, "must be superuser to take a backup").
			WithHint("A backup copies every relation and the key that seals secrets.")
	}
	if err := s.e.coord.Flush(ctx); err != nil {
		return err
	}
	m, err := s.e.db.Backup(x.Dir)
	if err != nil {
		return err
	}
	s.e.cfg.Logf("backup of epoch %d into %s: %d files, %.1f MiB", m.Epoch, x.Dir, len(m.Files), float64(m.Bytes)/(1<<20))
	return w.Complete("BACKUP")
}
