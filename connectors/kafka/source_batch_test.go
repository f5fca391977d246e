package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// TestSourceBatches reads the record batches a real producer writes, in
// every compression codec, with headers, null keys and null values,
// through the raw batch reader and through the source; then corrupted,
// truncated and old-format batches.
func TestSourceBatches(t *testing.T) {
	addr := srcTestCluster(t, 1, "t")
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
	}{{"none", kgo.NoCompression()}, {"gzip", kgo.GzipCompression()}, {"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()}, {"zstd", kgo.ZstdCompression()}}
	type want struct {
		key, value string
		keyNull    bool
		ts         int64
	}
	var wants []want
	var rows []string
	id := 0
	for _, c := range codecs {
		cl := srcTestClient(t, addr, kgo.ProducerBatchCompression(c.codec), kgo.ProducerLinger(50*time.Millisecond))
		var recs []*kgo.Record
		for i := 0; i < 40; i++ {
			ts := time.UnixMilli(1_700_000_000_000 + int64(id)*1000)
			v := fmt.Sprintf(`{"id":%d,"v":"%s %d %s"}`, id, c.name, i, "padding padding padding padding padding")
			r := &kgo.Record{Topic: "t", Value: []byte(v), Timestamp: ts,
				Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("header value")}, {Key: "n"}}}
			w := want{value: v, keyNull: true, ts: ts.UnixMilli()}
			if i%3 != 0 {
				r.Key = []byte(fmt.Sprintf("k%d", id))
				w.key, w.keyNull = string(r.Key), false
			}
			recs = append(recs, r)
			wants = append(wants, w)
			rows = append(rows, fmt.Sprintf("+1:%d|%s %d %s", id, c.name, i, "padding padding padding padding padding"))
			id++
		}
		// One asynchronous burst, so that the producer batches it.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	// A tombstone (null value) and an empty value.
	cl := srcTestClient(t, addr)
	tomb := &kgo.Record{Topic: "t", Key: []byte("gone"), Timestamp: time.UnixMilli(1_800_000_000_000)}
	srcProduce(t, cl, tomb)
	wants = append(wants, want{key: "gone", ts: 1_800_000_000_000})

	// The raw batches of the partition.
	cfg, err := srcParse(connector.SourceConfig{Name: "s", Columns: srcTestCols, Options: srcOpts(addr, "t")})
	if err != nil {
		t.Fatal(err)
	}
	client := newSrcClient(cfg)
	defer client.close()
	ctx := context.Background()
	meta, err := client.metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	for from := int64(0); from < int64(len(wants)); {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = from, 1<<20
		res, err := client.fetch(ctx, meta.leaders[0], meta.id, []kmsg.FetchRequestTopicPartition{rp}, false)
		if err != nil {
			t.Fatal(err)
		}
		b := res.Topics[0].Partitions[0].RecordBatches
		if len(b) == 0 {
			t.Fatal("empty fetch")
		}
		raw = append(raw, b...)
		for rest := b; ; {
			batch, next, ok, err := nextBatch(rest)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			from, rest = batch.next(), next
		}
	}
	var got []srcRecord
	batches, codecsSeen := 0, map[int16]bool{}
	for rest := raw; len(rest) > 0; {
		batch, next, ok, err := nextBatch(rest)
		if err != nil || !ok {
			t.Fatalf("batch %d: ok=%v err=%v", batches, ok, err)
		}
		batches++
		codecsSeen[batch.attrs&batchCodecMask] = true
		if err := batchRecords(&batch, &batchDecompressor{}, func(r *srcRecord) bool {
			c := *r
			c.key, c.value = append([]byte(nil), r.key...), append([]byte(nil), r.value...)
			got = append(got, c)
			return true
		}); err != nil {
			t.Fatal(err)
		}
		rest = next
	}
	// Every compressed batch over the bound is refused, not decompressed.
	func() {
		defer func(old int) { srcMaxBatchBytes = old }(srcMaxBatchBytes)
		srcMaxBatchBytes = 1 << 10 // each batch of 40 records holds ~4 KiB
		refused := map[int16]bool{}
		for rest := raw; len(rest) > 0; {
			batch, next, _, _ := nextBatch(rest)
			rest = next
			codec := batch.attrs & batchCodecMask
			if codec == 0 || batch.count < 40 {
				continue
			}
			err := batchRecords(&batch, &batchDecompressor{}, func(*srcRecord) bool { return true })
			if !isCorrupt(err) || !strings.Contains(err.Error(), "more than") {
				t.Fatalf("codec %d over the bound: %v", codec, err)
			}
			refused[codec] = true
		}
		if len(refused) != 4 {
			t.Fatalf("refused codecs %v, want all four", refused)
		}
	}()
	if len(codecsSeen) != 5 {
		t.Fatalf("codecs in the batches: %v, want all five", codecsSeen)
	}
	if len(got) != len(wants) {
		t.Fatalf("%d records, want %d", len(got), len(wants))
	}
	for i, r := range got {
		w := wants[i]
		if r.off != int64(i) || string(r.key) != w.key || r.keyNull != w.keyNull || string(r.value) != w.value ||
			r.ts.UnixMilli() != w.ts || r.valueNull != (i == len(wants)-1) {
			t.Fatalf("record %d: off %d key %q/%v value %q/%v ts %d; want key %q/%v value %q ts %d",
				i, r.off, r.key, r.keyNull, r.value, r.valueNull, r.ts.UnixMilli(), w.key, w.keyNull, w.value, w.ts)
		}
	}

	// Through the source: every row once, in order (the tombstone is no row).
	r := srcOpen(t, srcTestCols, nil, srcOpts(addr, "t"))
	srcEqual(t, srcReadN(t, r, len(rows), 1000), rows)
	srcExpectQuiet(t, r, 200*time.Millisecond)

	// A flipped byte fails the checksum; another magic byte is refused;
	// a cut batch is no batch (a response may end with part of one).
	first, _, _, _ := nextBatch(raw)
	size := batchHeaderSize + len(first.records)
	bad := append([]byte(nil), raw[:size]...)
	bad[size-1] ^= 0x40
	if _, _, _, err := nextBatch(bad); !isCorrupt(err) {
		t.Fatalf("flipped byte: %v, want a data_corrupted error", err)
	}
	old := append([]byte(nil), raw[:size]...)
	old[16] = 1
	if _, _, _, err := nextBatch(old); !isCorrupt(err) {
		t.Fatalf("magic 1: %v, want a data_corrupted error", err)
	}
	for _, n := range []int{0, 10, 17, size - 1} {
		if _, _, ok, err := nextBatch(raw[:n]); ok || err != nil {
			t.Fatalf("batch cut to %d bytes: ok=%v err=%v", n, ok, err)
		}
	}
	// A record that claims more bytes than its batch holds.
	for _, cut := range []int{1, 5, 20} {
		b := first
		b.attrs &^= batchCodecMask
		b.records = append([]byte(nil), raw[batchHeaderSize:size-cut]...)
		if first.attrs&batchCodecMask != 0 {
			break // the first batch is uncompressed when the producers ran in this order
		}
		if err := batchRecords(&b, &batchDecompressor{}, func(*srcRecord) bool { return true }); !isCorrupt(err) {
			t.Fatalf("records cut by %d bytes: %v, want a data_corrupted error", cut, err)
		}
	}
}

func isCorrupt(err error) bool {
	var pe *pgerror.Error
	return errors.As(err, &pe) && pe.Code == pgcode.DataCorrupted
}

// TestSourceLeadersMove: partitions led by three brokers are fetched from
// each leader (in parallel), and when every leader moves mid-stream the
// source finds the new ones and goes on: every record once, in order
// within its partition, in transactions and out.
func TestSourceLeadersMove(t *testing.T) {
	c, err := kfake.NewCluster(kfake.Ports(0, 0, 0), kfake.NumBrokers(3), kfake.SeedTopics(6, "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	leaders := map[int32]bool{}
	for p := int32(0); p < 6; p++ {
		leaders[c.LeaderFor("t", p)] = true
	}
	if len(leaders) < 2 {
		t.Fatalf("six partitions on %d leader(s): want several", len(leaders))
	}
	plain := srcTestClient(t, addr)
	txn := srcTestClient(t, addr, kgo.TransactionalID("sluice-move"))
	produce := func(from, to int, inTxn bool) []string {
		var recs []*kgo.Record
		var want []string
		for i := from; i < to; i++ {
			recs = append(recs, srcRec("t", int32(i%6), "", fmt.Sprintf(`{"id":%d,"v":"r%d"}`, i, i)))
			want = append(want, fmt.Sprintf("+1:%d|r%d", i, i))
		}
		cl := plain
		if inTxn {
			cl = txn
			if err := txn.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
		}
		srcProduce(t, cl, recs...)
		if inTxn {
			if err := txn.EndTransaction(context.Background(), kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
		}
		return want
	}
	want := append(produce(0, 300, false), produce(300, 600, true)...)
	r := srcOpen(t, srcTestCols, nil, srcOpts(addr, "t"))
	got := srcReadN(t, r, 400, 50)
	for p := int32(0); p < 6; p++ {
		if err := c.MoveTopicPartition("t", p, (c.LeaderFor("t", p)+1)%3); err != nil {
			t.Fatal(err)
		}
	}
	want = append(want, produce(600, 900, true)...)
	want = append(want, produce(900, 1200, false)...)
	got = append(got, srcReadN(t, r, 800, 50)...)
	srcEqual(t, got, want)
	last := map[int]int{}
	for _, g := range got {
		var id int
		fmt.Sscanf(g, "+1:%d|", &id)
		if prev, ok := last[id%6]; ok && prev > id {
			t.Fatalf("partition %d out of order: %d after %d", id%6, id, prev)
		}
		last[id%6] = id
	}
	srcExpectQuiet(t, r, 300*time.Millisecond)
}

// TestXerialSnappy: snappy in the Java client's xerial framing (blocks
// of a length and a raw snappy block) decodes to its input, a cut frame
// is an error, and blocks that claim more than the bound are refused.
func TestXerialSnappy(t *testing.T) {
	data := []byte(strings.Repeat("the quick brown fox jumps over the lazy dog; ", 3000))
	frame := append([]byte(nil), xerialPrefix...)
	frame = append(frame, 0, 0, 0, 1, 0, 0, 0, 1)
	for rest := data; len(rest) > 0; {
		n := min(len(rest), 32<<10)
		block := s2.EncodeSnappy(nil, rest[:n])
		frame = binary.BigEndian.AppendUint32(frame, uint32(len(block)))
		frame = append(frame, block...)
		rest = rest[n:]
	}
	var d batchDecompressor
	got, err := d.decompress(frame, 2)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("decoded %d bytes (%v), want %d", len(got), err, len(data))
	}
	if _, err := d.decompress(frame[:len(frame)-3], 2); err == nil {
		t.Fatal("a cut frame decoded")
	}
	defer func(old int) { srcMaxBatchBytes = old }(srcMaxBatchBytes)
	srcMaxBatchBytes = len(data) - 1
	if _, err := d.decompress(frame, 2); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("over the bound: %v", err)
	}
}
