package decode

import (
	"fmt"
	"unicode/utf8"

	"sluice/sql/types"
)

// decodeCSV decodes one CSV record (one message or line; a trailing
// newline is dropped) into the columns not skipped, in declared order.
func (d *Decoder) decodeCSV(msg []byte, row types.Row) error {
	if !utf8.Valid(msg) {
		for i := 0; i < len(msg); {
			r, n := utf8.DecodeRune(msg[i:])
			if r == utf8.RuneError && n <= 1 {
				return fmt.Errorf("invalid UTF-8 at byte %d", i)
			}
			i += n
		}
	}
	if n := len(msg); n > 0 && msg[n-1] == '\n' {
		msg = msg[:n-1]
		if n := len(msg); n > 0 && msg[n-1] == '\r' {
			msg = msg[:n-1]
		}
	}
	if len(msg) == 0 && d.ncsv > 1 {
		return errEmpty
	}
	col := 0
	field := 0
	i := 0
	for {
		for col < len(d.cols) && d.skip[col] {
			col++
		}
		// Read one field starting at i.
		var s []byte
		quoted := false
		if i < len(msg) && msg[i] == '"' {
			quoted = true
			i++
			d.vbuf = d.vbuf[:0]
			closed := false
			for i < len(msg) {
				c := msg[i]
				if c == '"' {
					if i+1 < len(msg) && msg[i+1] == '"' {
						d.vbuf = append(d.vbuf, '"')
						i += 2
						continue
					}
					i++
					closed = true
					break
				}
				d.vbuf = append(d.vbuf, c)
				i++
			}
			if !closed {
				return fmt.Errorf("invalid CSV: unterminated quoted field %d", field+1)
			}
			if i < len(msg) && msg[i] != ',' {
				return fmt.Errorf("invalid CSV at byte %d: unexpected %q after a quoted field", i, msg[i])
			}
			s = d.vbuf
		} else {
			start := i
			for i < len(msg) && msg[i] != ',' {
				if msg[i] == '"' {
					return fmt.Errorf("invalid CSV at byte %d: quote in an unquoted field", i)
				}
				i++
			}
			s = msg[start:i]
		}
		field++
		if col < len(d.cols) {
			if len(s) == 0 && !quoted {
				row[col] = types.Null
			} else {
				if err := d.csvValue(col, s, &row[col]); err != nil {
					return err
				}
			}
			col++
		}
		if i >= len(msg) {
			break
		}
		i++ // ','
	}
	if field != d.ncsv {
		return fmt.Errorf("invalid CSV: expected %d fields, got %d", d.ncsv, field)
	}
	return nil
}

// csvValue converts field s for column col into *dst.
func (d *Decoder) csvValue(col int, s []byte, dst *types.Datum) error {
	if d.cols[col].Type.Fam == types.JSONB {
		v, err := types.ParseText(string(s), d.cols[col].Type)
		if err != nil {
			return d.colErr(col, "invalid JSON %s", quoteShort(s))
		}
		*dst = v
		return nil
	}
	return d.text(col, s, true, dst)
}
