package kafka

// Record batches as a fetch response carries them (message format v2,
// Kafka 0.11 and later), read in place: a record's key and value are
// slices of the response (or of its decompressed batch), never copied.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// Batch attributes.
const (
	batchCodecMask     = 0x07
	batchLogAppendTime = 0x08
	batchTransactional = 0x10
	batchControl       = 0x20
)

// batchHeaderSize is the size of a v2 batch header, up to its records.
const batchHeaderSize = 61

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// srcBatch is one record batch of a fetched partition.
type srcBatch struct {
	base       int64 // the first record's offset
	lastDelta  int32 // the last record's offset - base
	firstTS    int64 // milliseconds
	maxTS      int64
	producerID int64
	attrs      int16
	count      int32
	records    []byte // compressed when attrs says so
}

func (b *srcBatch) transactional() bool { return b.attrs&batchTransactional != 0 }
func (b *srcBatch) control() bool       { return b.attrs&batchControl != 0 }

// next returns the offset after the batch's last record.
func (b *srcBatch) next() int64 { return b.base + int64(b.lastDelta) + 1 }

// errBatch is a batch that cannot be read: its bytes are corrupt, or it
// is in a format this reader does not know.
func errBatch(format string, args ...any) error {
	return pgerror.New(pgcode.DataCorrupted, "kafka record batch: %s", fmt.Sprintf(format, args...))
}

// nextBatch reads the batch at the start of b. ok is false when b holds
// no whole batch (a broker may end a response with part of one).
func nextBatch(b []byte) (batch srcBatch, rest []byte, ok bool, err error) {
	if len(b) < 17 {
		return batch, nil, false, nil
	}
	size := int64(int32(binary.BigEndian.Uint32(b[8:12])))
	if size < 0 {
		return batch, nil, false, errBatch("negative length %d", size)
	}
	if 12+size > int64(len(b)) {
		return batch, nil, false, nil
	}
	whole := b[:12+size]
	if magic := b[16]; magic != 2 {
		return batch, nil, false, errBatch("message format v%d at offset %d: only v2 (Kafka 0.11 and later) is read", magic, int64(binary.BigEndian.Uint64(b)))
	}
	if len(whole) < batchHeaderSize {
		return batch, nil, false, errBatch("batch of %d bytes is shorter than its header", len(whole))
	}
	if crc := binary.BigEndian.Uint32(whole[17:21]); crc32.Checksum(whole[21:], crc32c) != crc {
		return batch, nil, false, errBatch("checksum mismatch in the batch at offset %d", int64(binary.BigEndian.Uint64(b)))
	}
	batch = srcBatch{
		base:       int64(binary.BigEndian.Uint64(whole[0:8])),
		attrs:      int16(binary.BigEndian.Uint16(whole[21:23])),
		lastDelta:  int32(binary.BigEndian.Uint32(whole[23:27])),
		firstTS:    int64(binary.BigEndian.Uint64(whole[27:35])),
		maxTS:      int64(binary.BigEndian.Uint64(whole[35:43])),
		producerID: int64(binary.BigEndian.Uint64(whole[43:51])),
		count:      int32(binary.BigEndian.Uint32(whole[57:61])),
		records:    whole[batchHeaderSize:],
	}
	if batch.count < 0 {
		return batch, nil, false, errBatch("negative record count %d", batch.count)
	}
	return batch, b[len(whole):], true, nil
}

// srcRecord is one record of a batch; key and value alias the batch.
type srcRecord struct {
	off                int64
	ts                 time.Time
	key, value         []byte
	keyNull, valueNull bool
}

// batchRecords reads a batch's records: each is passed to fn in offset
// order until fn returns false. A compressed batch is decompressed
// first (into a new buffer the records then alias).
func batchRecords(b *srcBatch, dec *batchDecompressor, fn func(*srcRecord) bool) error {
	recs := b.records
	if codec := b.attrs & batchCodecMask; codec != 0 {
		var err error
		if recs, err = dec.decompress(recs, codec); err != nil {
			return errBatch("cannot decompress the batch at offset %d: %v", b.base, err)
		}
	}
	var r srcRecord
	for i := int32(0); i < b.count; i++ {
		n, k := binary.Varint(recs)
		if k <= 0 || n < 0 || int64(len(recs)-k) < n {
			return errBatch("truncated record %d of the batch at offset %d", i, b.base)
		}
		rec := recs[k : k+int(n)]
		recs = recs[k+int(n):]
		if len(rec) < 1 {
			return errBatch("empty record %d of the batch at offset %d", i, b.base)
		}
		p := rec[1:] // past the record's attributes
		tsDelta, k1 := binary.Varint(p)
		if k1 <= 0 {
			return errBatch("bad record %d of the batch at offset %d", i, b.base)
		}
		p = p[k1:]
		offDelta, k2 := binary.Varint(p)
		if k2 <= 0 {
			return errBatch("bad record %d of the batch at offset %d", i, b.base)
		}
		p = p[k2:]
		var ok bool
		if r.key, r.keyNull, p, ok = recordBytes(p); !ok {
			return errBatch("bad key in record %d of the batch at offset %d", i, b.base)
		}
		if r.value, r.valueNull, _, ok = recordBytes(p); !ok {
			return errBatch("bad value in record %d of the batch at offset %d", i, b.base)
		}
		// The headers follow; the record's length passes them.
		r.off = b.base + offDelta
		ts := b.firstTS + tsDelta
		if b.attrs&batchLogAppendTime != 0 {
			ts = b.maxTS
		}
		r.ts = time.UnixMilli(ts)
		if !fn(&r) {
			return nil
		}
	}
	return nil
}

// recordBytes reads a varint-prefixed byte string (-1: null).
func recordBytes(p []byte) (v []byte, null bool, rest []byte, ok bool) {
	n, k := binary.Varint(p)
	if k <= 0 || n < -1 || int64(len(p)-k) < n {
		return nil, false, nil, false
	}
	p = p[k:]
	if n == -1 {
		return nil, true, p, true
	}
	return p[:n:n], false, p[n:], true
}

// srcMaxBatchBytes bounds what one compressed batch may decompress to: a
// batch crafted to expand without end (a compression bomb) fails the
// source with XX001 instead of taking the server's memory. Producers'
// batches are bounded by the broker's message.max.bytes (1 MiB by
// default) before compression.
var srcMaxBatchBytes = 64 << 20

// errBatchTooLarge is the error of a batch past srcMaxBatchBytes.
func errBatchTooLarge() error {
	return fmt.Errorf("it decompresses to more than %d bytes, the most a batch may hold", srcMaxBatchBytes)
}

// batchDecompressor decompresses batches of the four Kafka codecs within
// srcMaxBatchBytes. It belongs to the fetching goroutine.
type batchDecompressor struct {
	zstd *zstd.Decoder
}

func (d *batchDecompressor) decompress(src []byte, codec int16) ([]byte, error) {
	max := srcMaxBatchBytes
	switch codec {
	case 1: // gzip
		r, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, err
		}
		return readBounded(r, max)
	case 2: // snappy: a raw block, or the Java client's xerial framing
		if len(src) > 16 && bytes.HasPrefix(src, xerialPrefix) {
			return xerialDecode(src[16:], max)
		}
		n, err := s2.DecodedLen(src)
		if err != nil {
			return nil, err
		}
		if n > max {
			return nil, errBatchTooLarge()
		}
		return s2.Decode(nil, src)
	case 3: // lz4 frames
		return readBounded(lz4.NewReader(bytes.NewReader(src)), max)
	case 4: // zstd
		if d.zstd == nil {
			z, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxMemory(uint64(max)))
			if err != nil {
				return nil, err
			}
			d.zstd = z
		}
		out, err := d.zstd.DecodeAll(src, nil)
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
			return nil, errBatchTooLarge()
		}
		return out, err
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

// close releases the zstd decoder's goroutines and buffers.
func (d *batchDecompressor) close() {
	if d.zstd != nil {
		d.zstd.Close()
		d.zstd = nil
	}
}

// readBounded reads r to its end, failing past max bytes.
func readBounded(r io.Reader, max int) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > max {
		return nil, errBatchTooLarge()
	}
	return b, nil
}

var xerialPrefix = []byte{130, 83, 78, 65, 80, 80, 89, 0}

// xerialDecode decodes xerial-framed snappy (after its 16-byte header):
// blocks of a big-endian length and a raw snappy block, whose claimed
// sizes are summed against max before anything is allocated.
func xerialDecode(src []byte, max int) ([]byte, error) {
	total := 0
	for rem := src; len(rem) > 0; {
		if len(rem) < 4 {
			return nil, errors.New("malformed xerial framing")
		}
		size := int(int32(binary.BigEndian.Uint32(rem)))
		rem = rem[4:]
		if size < 0 || size > len(rem) {
			return nil, errors.New("malformed xerial framing")
		}
		n, err := s2.DecodedLen(rem[:size])
		if err != nil {
			return nil, err
		}
		if total += n; total > max {
			return nil, errBatchTooLarge()
		}
		rem = rem[size:]
	}
	// Each block decodes straight into its place in out.
	out := make([]byte, total)
	at := 0
	for len(src) > 0 {
		size := int(binary.BigEndian.Uint32(src))
		block := src[4 : 4+size]
		n, _ := s2.DecodedLen(block) // checked above
		if _, err := s2.Decode(out[at:at+n], block); err != nil {
			return nil, err
		}
		at += n
		src = src[4+size:]
	}
	return out, nil
}
