package types

import "encoding/binary"

// appendRecordBinary appends PostgreSQL's record_send form of a record of
// type t: the number of fields, then for each its type oid and its
// length-prefixed binary value (-1 for NULL). Fields of an anonymous
// record take the type of their datum's kind.
func appendRecordBinary(buf []byte, d Datum, t T) ([]byte, error) {
	fields := t.RecordFields()
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(d.Elems())))
	for i, f := range d.Elems() {
		ft := kindType(f.K)
		if i < len(fields) {
			ft = fields[i].Type
		}
		buf = binary.BigEndian.AppendUint32(buf, ft.OID())
		if f.K == KNull {
			buf = binary.BigEndian.AppendUint32(buf, 0xFFFFFFFF)
			continue
		}
		at := len(buf)
		buf = append(buf, 0, 0, 0, 0)
		var err error
		if buf, err = EncodeBinary(buf, f, ft); err != nil {
			return buf, err
		}
		binary.BigEndian.PutUint32(buf[at:], uint32(len(buf)-at-4))
	}
	return buf, nil
}
