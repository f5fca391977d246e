package pgcdc

import (
	"encoding/binary"

	"github.com/jackc/pglogrepl"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// phase is where a source is in its life.
type phase uint8

const (
	phaseFresh    phase = iota // nothing read yet: create the slot, take the snapshot
	phaseSnapshot              // reading the snapshot taken at slotLSN
	phaseStream                // streaming from lsn
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

// encode is a version byte, the phase, the LSNs and skip as varints, then
// the key's text values (a 0 length byte for NULL never occurs: keys are
// NOT NULL; each value is its length+1 then its bytes).
func (p *position) encode() []byte {
	b := []byte{posVersion, byte(p.phase)}
	b = binary.AppendUvarint(b, uint64(p.slotLSN))
	b = binary.AppendUvarint(b, uint64(p.lsn))
	b = binary.AppendUvarint(b, p.skip)
	if p.lastKey == nil {
		return binary.AppendUvarint(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(p.lastKey))+1)
	for _, k := range p.lastKey {
		if k == nil {
			b = binary.AppendUvarint(b, 0)
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(*k))+1)
		b = append(b, *k...)
	}
	return b
}

func decodePosition(b []byte) (position, error) {
	bad := pgerror.New(pgcode.DataCorrupted, "bad postgres-cdc source position")
	var p position
	if len(b) < 2 || b[0] != posVersion || b[1] > byte(phaseStream) {
		return p, bad
	}
	p.phase = phase(b[1])
	b = b[2:]
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	var vals [4]uint64
	for i := range vals {
		v, ok := next()
		if !ok {
			return p, bad
		}
		vals[i] = v
	}
	p.slotLSN, p.lsn, p.skip = pglogrepl.LSN(vals[0]), pglogrepl.LSN(vals[1]), vals[2]
	if vals[3] > 0 {
		n := vals[3] - 1
		if n > 1600 {
			return p, bad
		}
		p.lastKey = make([]*string, n)
		for i := range p.lastKey {
			l, ok := next()
			if !ok || l > uint64(len(b))+1 {
				return p, bad
			}
			if l == 0 {
				continue
			}
			s := string(b[:l-1])
			b = b[l-1:]
			p.lastKey[i] = &s
		}
	}
	if len(b) != 0 {
		return p, bad
	}
	return p, nil
}
