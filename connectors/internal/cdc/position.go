package cdc

// The framing of a CDC source's position in a checkpoint: a version
// byte, the phase, the connector's own fields (uvarints and strings), and
// last the key of the last snapshot row emitted.

import (
	"encoding/binary"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// Phase is where a CDC source is in its life.
type Phase uint8

const (
	Fresh    Phase = iota // nothing read yet: take the snapshot
	Snapshot              // reading the snapshot
	Stream                // streaming the changes after it
)

// maxKeyColumns bounds the key columns a position may hold (PostgreSQL's
// column limit), so that foreign bytes cannot ask for a huge allocation.
const maxKeyColumns = 1600

// AppendHeader starts an encoded position: the version, then the phase.
func AppendHeader(version byte, ph Phase) []byte { return []byte{version, byte(ph)} }

// AppendUvarint appends v.
func AppendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

// AppendString appends s: its length, then its bytes.
func AppendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendKey appends the text values of a key: 0 for none (nil), else the
// count+1 and then each value as its length+1 and its bytes (0 for NULL).
func AppendKey(b []byte, key []*string) []byte {
	if key == nil {
		return binary.AppendUvarint(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(key))+1)
	for _, k := range key {
		if k == nil {
			b = binary.AppendUvarint(b, 0)
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(*k))+1)
		b = append(b, *k...)
	}
	return b
}

// Decoder reads an encoded position. Its reads return zero values once
// one failed; End reports whether every read succeeded and nothing is
// left.
type Decoder struct {
	b  []byte
	ok bool
}

// NewDecoder reads the header of b: a version from 1 to maxVersion and a
// phase. ok is false when b is not a position of those versions.
func NewDecoder(b []byte, maxVersion byte) (d *Decoder, version byte, ph Phase, ok bool) {
	if len(b) < 2 || b[0] < 1 || b[0] > maxVersion || b[1] > byte(Stream) {
		return &Decoder{}, 0, 0, false
	}
	return &Decoder{b: b[2:], ok: true}, b[0], Phase(b[1]), true
}

// Uvarint reads a uvarint.
func (d *Decoder) Uvarint() uint64 {
	if !d.ok {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.ok = false
		return 0
	}
	d.b = d.b[n:]
	return v
}

// String reads what AppendString wrote.
func (d *Decoder) String() string {
	l := d.Uvarint()
	if !d.ok || l > uint64(len(d.b)) {
		d.ok = false
		return ""
	}
	s := string(d.b[:l])
	d.b = d.b[l:]
	return s
}

// Key reads what AppendKey wrote.
func (d *Decoder) Key() []*string {
	nk := d.Uvarint()
	if !d.ok || nk == 0 {
		return nil
	}
	if nk-1 > maxKeyColumns {
		d.ok = false
		return nil
	}
	key := make([]*string, nk-1)
	for i := range key {
		l := d.Uvarint()
		if !d.ok || l > uint64(len(d.b))+1 {
			d.ok = false
			return nil
		}
		if l == 0 {
			continue
		}
		s := string(d.b[:l-1])
		d.b = d.b[l-1:]
		key[i] = &s
	}
	return key
}

// End reports whether every read succeeded and the bytes are used up.
func (d *Decoder) End() bool { return d.ok && len(d.b) == 0 }

// BadPosition is the error of a position that does not decode.
func BadPosition(connector string) error {
	return pgerror.New(pgcode.DataCorrupted, "bad %s source position", connector)
}
