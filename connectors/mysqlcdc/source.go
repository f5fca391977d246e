package mysqlcdc

import (
	"context"

	"sluice/connectors/internal/cdc"
	"sluice/exec/connector"
)

// reader is the source the engine reads: the shared CDC reader over a
// binlog worker.
type reader = cdc.Reader[position]

var (
	_ connector.Seekable = (*reader)(nil)
	_ connector.Statuser = (*reader)(nil)
)

func newReader(c *config) *reader {
	return cdc.NewReader(cdc.Config[position]{
		Session: func(ctx context.Context, cw *cdc.Worker[position]) error {
			return (&worker{Worker: cw, cfg: c}).session(ctx)
		},
		Transient: transient,
		Encode:    position.encode,
		Decode:    decodePosition,
		Release:   func() { replicas.Release(c.replicaID()) },
	})
}
