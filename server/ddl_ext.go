package server

import (
	"context"

	"sluice/server/pgwire"
	"sluice/sql/parser"
	"sluice/sql/pgerror"
)

// runDDLExt runs the everyday DDL beyond the streaming core: ALTER TABLE,
// TRUNCATE, CREATE INDEX, CREATE SEQUENCE, CREATE SCHEMA.
func (s *session) runDDLExt(ctx context.Context, st parser.Statement, w pgwire.ResultWriter) error {
	switch x := st.(type) {
	case *parser.AlterTable:
		if x.Source {
			if err := s.alterSource(ctx, x, w); err != nil {
				return err
			}
			return w.Complete("ALTER SOURCE")
		}
		if err := s.alterTable(ctx, x, w); err != nil {
			return err
		}
		return w.Complete("ALTER TABLE")
	case *parser.Truncate:
		if err := s.truncate(ctx, x); err != nil {
			return err
		}
		return w.Complete("TRUNCATE TABLE")
	case *parser.CreateIndex:
		if err := s.createIndex(ctx, x, w); err != nil {
			return err
		}
		return w.Complete("CREATE INDEX")
	case *parser.CreateSequence:
		if err := s.e.createSequence(ctx, x); err != nil {
			return err
		}
		return w.Complete("CREATE SEQUENCE")
	case *parser.CreateSchema:
		if err := s.e.createSchema(ctx, x, w); err != nil {
			return err
		}
		return w.Complete("CREATE SCHEMA")
	}
	return pgerror.Unsupported("statement %T is not supported yet", st)
}
