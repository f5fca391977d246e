package pgcdc

import (
	"github.com/jackc/pglogrepl"

	"sluice/connectors/internal/cdc"
)

type phase = cdc.Phase

const (
	phaseFresh    = cdc.Fresh    // nothing read yet: create the slot, take the snapshot
	phaseSnapshot = cdc.Snapshot // reading the snapshot taken at slotLSN
	phaseStream   = cdc.Stream   // streaming from lsn
)

// position is what a checkpoint keeps of a source.
type position struct {
	phase phase
	// slotLSN is the slot's consistent point: where the stream starts
	// after the snapshot.
	slotLSN pglogrepl.LSN
	// lastKey is the text of the key columns of the last snapshot row
	// emitted (nil: none yet).
	lastKey []*string
	// lsn is the end LSN of the last transaction emitted whole; skip is the
	// number of rows of the next transaction already emitted.
	lsn  pglogrepl.LSN
	skip uint64
}

const posVersion = 1

// encode is the cdc framing with the LSNs and skip as uvarints.
func (p position) encode() []byte {
	b := cdc.AppendHeader(posVersion, p.phase)
	b = cdc.AppendUvarint(b, uint64(p.slotLSN))
	b = cdc.AppendUvarint(b, uint64(p.lsn))
	b = cdc.AppendUvarint(b, p.skip)
	return cdc.AppendKey(b, p.lastKey)
}

func decodePosition(b []byte) (position, error) {
	d, _, ph, ok := cdc.NewDecoder(b, posVersion)
	if !ok {
		return position{}, cdc.BadPosition(Name)
	}
	p := position{phase: ph, slotLSN: pglogrepl.LSN(d.Uvarint()), lsn: pglogrepl.LSN(d.Uvarint()), skip: d.Uvarint(), lastKey: d.Key()}
	if !d.End() {
		return position{}, cdc.BadPosition(Name)
	}
	return p, nil
}
