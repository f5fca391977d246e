package types

import (
	"crypto/rand"
	"encoding/hex"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// UUIDs: the family UUID (OID 2950, uuid[] 2951) holds values of kind
// KUUID whose S is the 16 bytes in network order. They compare, group
// and key bytewise (memcmp, as PostgreSQL's uuid_cmp), print lower-case
// with hyphens, and read every text form PostgreSQL's uuid_in accepts:
// 32 hex digits of either case, optionally in braces, with a hyphen
// allowed after any group of four digits.

// UUIDArrayOID is the OID of uuid[] (registered for the catalog; arrays of
// uuid are the array types' business).
const UUIDArrayOID = 2951

// NewUUID returns a uuid datum of the 16 bytes b.
func NewUUID(b [16]byte) Datum { return Datum{K: KUUID, S: string(b[:])} }

// NewRandomUUID returns a version 4 (random) uuid, as gen_random_uuid().
func NewRandomUUID() Datum {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return NewUUID(b)
}

// parseUUID implements PostgreSQL's uuid_in (string_to_uuid).
func parseUUID(s string) (Datum, error) {
	bad := func() (Datum, error) {
		return Datum{}, pgerror.New(pgcode.InvalidTextRepresentation, "invalid input syntax for type uuid: \"%s\"", s)
	}
	src := s
	braces := false
	if len(src) > 0 && src[0] == '{' {
		src = src[1:]
		braces = true
	}
	var out [16]byte
	for i := 0; i < 16; i++ {
		if len(src) < 2 {
			return bad()
		}
		hi, ok1 := unhex(src[0])
		lo, ok2 := unhex(src[1])
		if !ok1 || !ok2 {
			return bad()
		}
		out[i] = hi<<4 | lo
		src = src[2:]
		if len(src) > 0 && src[0] == '-' && i%2 == 1 && i < 15 {
			src = src[1:]
		}
	}
	if braces {
		if len(src) == 0 || src[0] != '}' {
			return bad()
		}
		src = src[1:]
	}
	if len(src) != 0 {
		return bad()
	}
	return NewUUID(out), nil
}

// appendUUID appends the canonical text of a uuid's 16 bytes.
func appendUUID(b []byte, s string) []byte {
	if len(s) != 16 {
		return appendByteaHex(b, s)
	}
	var buf [36]byte
	j := 0
	for i := 0; i < 16; i++ {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			buf[j] = '-'
			j++
		}
		hex.Encode(buf[j:j+2], []byte{s[i]})
		j += 2
	}
	return append(b, buf[:]...)
}

// decodeUUIDBinary reads uuid_recv's 16 bytes.
func decodeUUIDBinary(b []byte) (Datum, error) {
	if len(b) != 16 {
		return Datum{}, errBinaryLen(TUUID, 16, len(b))
	}
	return Datum{K: KUUID, S: string(b)}, nil
}
