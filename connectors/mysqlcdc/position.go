package mysqlcdc

import (
	"encoding/binary"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// phase is where a source is in its life.
type phase uint8

const (
	phaseFresh    phase = iota // nothing read yet: take the snapshot
	phaseSnapshot              // reading the snapshot taken at (snapFile, snapPos)
	phaseStream                // streaming from (file, pos)
)

// position is what a checkpoint keeps of a source.
type position struct {
	phase phase
	// snapFile and snapPos are the binlog position the snapshot stands
	// at: where the stream starts after it.
	snapFile string
	snapPos  uint64
	// lastKey is the text of the key columns of the last snapshot row
	// emitted (nil: none yet).
	lastKey []*string
	// file and pos are the binlog position after the last transaction
	// emitted whole; skip is the number of rows of the next transaction
	// already emitted.
	file string
	pos  uint64
	skip uint64
}

const posVersion = 1

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// encode is a version byte, the phase, the snapshot's file and offset,
// the stream's file, offset and skip, then the key's text values (each
// its length+1 then its bytes; 0 for NULL).
func (p *position) encode() []byte {
	b := []byte{posVersion, byte(p.phase)}
	b = appendString(b, p.snapFile)
	b = binary.AppendUvarint(b, p.snapPos)
	b = appendString(b, p.file)
	b = binary.AppendUvarint(b, p.pos)
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
	bad := pgerror.New(pgcode.DataCorrupted, "bad mysql-cdc source position")
	var p position
	if len(b) < 2 || b[0] != posVersion || b[1] > byte(phaseStream) {
		return p, bad
	}
	p.phase = phase(b[1])
	b = b[2:]
	ok := true
	next := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			ok = false
			return 0
		}
		b = b[n:]
		return v
	}
	nextString := func() string {
		l := next()
		if !ok || l > uint64(len(b)) {
			ok = false
			return ""
		}
		s := string(b[:l])
		b = b[l:]
		return s
	}
	p.snapFile = nextString()
	p.snapPos = next()
	p.file = nextString()
	p.pos = next()
	p.skip = next()
	nk := next()
	if !ok || nk > 1025 {
		return p, bad
	}
	if nk > 0 {
		p.lastKey = make([]*string, nk-1)
		for i := range p.lastKey {
			l := next()
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
