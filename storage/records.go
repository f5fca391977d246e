package storage

import (
	"encoding/binary"
	"hash/crc32"
)

// Pebble's WAL and MANIFEST are record files in LevelDB's log format
// (pebble/record): 32 KiB blocks of chunks, each chunk a header — CRC-32C
// (masked) of type, log number and payload, payload length, type, and in
// the recyclable format the file's log number — and a payload. Pebble
// reads both leniently: the first chunk that fails its checksum ends the
// file, as a write torn by a crash would. That also ends the file at a
// flipped byte in its middle, silently dropping every acknowledged write
// after it (WAL) or every version edit after it (MANIFEST: the sstables
// those edits added then count as obsolete, and Pebble deletes them).
//
// checkRecords tells the two apart: a torn write is the end of what was
// written, so nothing valid of this file follows it; corruption is a bad
// chunk with valid chunks after it.

const (
	recBlockSize        = 32 << 10
	recLegacyHeader     = 7
	recRecyclableHeader = 11
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// maskedCRC is pebble/internal/crc's checksum: CRC-32C, rotated and offset
// as LevelDB masks it.
func maskedCRC(b []byte) uint32 {
	c := crc32.Update(0, crcTable, b)
	return (c>>15 | c<<17) + 0xa282ead8
}

// recordDamage describes where a record file stops being readable.
type recordDamage struct {
	offset  int64  // the first bad chunk
	reason  string // what is wrong with it
	goodEnd int64  // the end of the last whole record before it
	after   int64  // the offset of a valid chunk after it (corruption), or -1 (torn tail)
}

// chunkAt returns the size of the valid chunk of log logNum (0: a legacy,
// non-recyclable file) starting at off in data, or 0 and why not.
// stale is true when the chunk is a recyclable chunk of an earlier
// incarnation of the file (a recycled WAL): the end of this log's data.
func chunkAt(data []byte, off int, logNum uint32) (size int, typ byte, reason string, stale bool) {
	blockEnd := min((off/recBlockSize+1)*recBlockSize, len(data))
	if off+recLegacyHeader > blockEnd {
		return 0, 0, "truncated chunk header", false
	}
	sum := binary.LittleEndian.Uint32(data[off:])
	length := int(binary.LittleEndian.Uint16(data[off+4:]))
	typ = data[off+6]
	hs := recLegacyHeader
	switch {
	case typ >= 1 && typ <= 4:
	case typ >= 5 && typ <= 8:
		hs = recRecyclableHeader
		if off+hs > blockEnd {
			return 0, 0, "truncated chunk header", false
		}
		if binary.LittleEndian.Uint32(data[off+7:]) != logNum {
			return 0, 0, "chunk of an earlier use of the file", true
		}
		typ -= 4
	default:
		return 0, 0, "invalid chunk type", false
	}
	if off+hs+length > blockEnd {
		return 0, 0, "chunk runs past the end of its block", false
	}
	if maskedCRC(data[off+6:off+hs+length]) != sum {
		return 0, 0, "checksum mismatch", false
	}
	return hs + length, typ, "", false
}

func zeroHeader(data []byte, off int) bool {
	blockEnd := min((off/recBlockSize+1)*recBlockSize, len(data))
	for _, b := range data[off:min(off+recLegacyHeader, blockEnd)] {
		if b != 0 {
			return false
		}
	}
	return true
}

// checkRecords walks the chunks of a record file. It returns nil when the
// file reads cleanly to its end (or to the zeroed or stale space after its
// last record), else where it stops and whether valid chunks follow.
//
// With strictTail (the MANIFEST, which is neither preallocated nor
// recycled) a bad final chunk counts as torn only when the file ends
// inside it or its last bytes were never written (zero); a whole chunk
// that fails its checksum is damage. A WAL's final chunk cannot be judged
// so: a write torn by a crash leaves stale bytes of the file's previous
// use in a recycled WAL, so a bad final WAL chunk counts as torn, as in
// Pebble and PostgreSQL.
func checkRecords(data []byte, logNum uint32, strictTail bool) *recordDamage {
	off, goodEnd := 0, 0
	for off < len(data) {
		blockEnd := min((off/recBlockSize+1)*recBlockSize, len(data))
		if blockEnd-off < recLegacyHeader || (blockEnd-off < recRecyclableHeader && zeroHeader(data, off)) {
			off = blockEnd // block padding: a chunk header does not fit
			continue
		}
		if zeroHeader(data, off) {
			// Preallocated, never written space: the end of the data. In
			// a WAL that holds even when valid chunks follow: a flipped
			// byte cannot zero a header, but a power loss can persist a
			// later unsynced block and not the one before it.
			if !strictTail {
				return nil
			}
			if after := validAfter(data, off, logNum); after >= 0 {
				return &recordDamage{offset: int64(off), reason: "zeroed chunk", goodEnd: int64(goodEnd), after: after}
			}
			return nil
		}
		size, typ, reason, stale := chunkAt(data, off, logNum)
		if stale {
			if after := validAfter(data, off, logNum); after >= 0 {
				return &recordDamage{offset: int64(off), reason: reason, goodEnd: int64(goodEnd), after: after}
			}
			return nil
		}
		if size == 0 {
			d := &recordDamage{offset: int64(off), reason: reason, goodEnd: int64(goodEnd), after: validAfter(data, off, logNum)}
			if d.after < 0 && strictTail && !unwrittenTail(data, off) {
				d.after = int64(len(data)) // nothing follows, but the chunk was written whole
			}
			return d
		}
		off += size
		if typ == 1 || typ == 4 { // full or last chunk: a record ends here
			goodEnd = off
		}
	}
	if goodEnd < off {
		return &recordDamage{offset: int64(goodEnd), reason: "record cut short at the end of the file", goodEnd: int64(goodEnd), after: -1}
	}
	return nil
}

// validAfter returns the offset of a valid chunk of this file after the
// bad one at bad, or -1: it tries every offset in the rest of bad's block
// and the start of every later block (a chunk never spans blocks, so each
// block that holds data starts with a chunk).
func validAfter(data []byte, bad int, logNum uint32) int64 {
	blockEnd := min((bad/recBlockSize+1)*recBlockSize, len(data))
	for p := bad + 1; p+recLegacyHeader <= blockEnd; p++ {
		if t := data[p+6]; t == 0 || t > 8 {
			continue
		}
		if size, _, _, _ := chunkAt(data, p, logNum); size > 0 {
			return int64(p)
		}
	}
	for p := blockEnd; p < len(data); p += recBlockSize {
		if size, _, _, _ := chunkAt(data, p, logNum); size > 0 {
			return int64(p)
		}
	}
	return -1
}

// unwrittenTail reports whether the chunk at off looks cut short by a
// crash: its header or payload runs past the end of the file, or its last
// eight bytes are zero.
func unwrittenTail(data []byte, off int) bool {
	if off+recLegacyHeader > len(data) {
		return true
	}
	hs := recLegacyHeader
	if t := data[off+6]; t >= 5 && t <= 8 {
		hs = recRecyclableHeader
	}
	end := off + hs + int(binary.LittleEndian.Uint16(data[off+4:]))
	if end > len(data) {
		return true
	}
	for _, b := range data[max(off, end-8):end] {
		if b != 0 {
			return false
		}
	}
	return true
}
