package storage

import (
	"encoding/binary"
	"testing"
)

// BenchmarkEpochShare measures what writing an epoch through a job's share
// (then Absorb) costs over writing into the epoch directly: 10,000 state
// writes of 64-byte values per epoch, committed. Compare the two with
// interleaved runs (-run '^$' -bench EpochShare/direct, then /share).
func BenchmarkEpochShare(b *testing.B) {
	for _, mode := range []string{"direct", "share"} {
		b.Run(mode, func(b *testing.B) {
			db, err := Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			val := make([]byte, 64)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				w := db.NewEpochWriter()
				dst := w
				if mode == "share" {
					dst = db.NewShareWriter()
				}
				for k := 0; k < 10000; k++ {
					dst.Set(Key(SpaceState, uint64(k%64), binary.BigEndian.AppendUint64(nil, uint64(k))), val)
				}
				if mode == "share" {
					if err := w.Absorb(dst); err != nil {
						b.Fatal(err)
					}
				}
				if err := db.Commit(w, uint64(i+1)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10000, "ns/write")
		})
	}
}
