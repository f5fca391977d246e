package pgcdc

import (
	"context"
	"sync/atomic"

	"sluice/connectors/internal/cdc"
	"sluice/exec/connector"
)

// reader is the source the engine reads: the shared CDC reader, and the
// Committer that lets the slot drop what a durable checkpoint covers.
type reader struct {
	*cdc.Reader[position]
	// confirm is the LSN a durable checkpoint covers (set by Committed):
	// the worker confirms it to the slot.
	confirm atomic.Uint64
}

var (
	_ connector.Seekable  = (*reader)(nil)
	_ connector.Committer = (*reader)(nil)
	_ connector.Statuser  = (*reader)(nil)
)

func newReader(c *config) *reader {
	r := &reader{}
	r.Reader = cdc.NewReader(cdc.Config[position]{
		Session: func(ctx context.Context, cw *cdc.Worker[position]) error {
			return (&worker{Worker: cw, cfg: c, confirm: &r.confirm}).session(ctx)
		},
		Transient: transient,
		Encode:    position.encode,
		Decode:    decodePosition,
		Release:   func() { slots.Release(c.slotID()) },
	})
	return r
}

// Committed implements connector.Committer: once the checkpoint holding
// pos is durable, the slot may drop the changes before it.
func (r *reader) Committed(pos []byte) {
	p, err := decodePosition(pos)
	if err != nil || p.phase != phaseStream {
		return
	}
	for {
		old := r.confirm.Load()
		if uint64(p.lsn) <= old || r.confirm.CompareAndSwap(old, uint64(p.lsn)) {
			return
		}
	}
}
