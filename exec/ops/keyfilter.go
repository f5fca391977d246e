package ops

import "hash/maphash"

// keyFilter is an in-memory Bloom filter of strings that grows: a list of
// fixed filters, each twice the capacity of the one before, added to
// until full. It answers "maybe" for every key added and, for about 1% of
// the others, falsely; keys cannot be removed. A join side keeps one of
// the keys whose counts it forgot, at about 10 bits a key instead of a
// count's 70 bytes, so that a probe of a key never stored reads nothing.
//
// A filter answers for all its parts, so its false positives add up over
// them: sparse sets it to 16 bits a key and 11 probes (about 0.05% a full
// part instead of 1%), for a filter whose false positives each cost a read
// of the store, at 2 bytes a key.
type keyFilter struct {
	seed   maphash.Seed
	parts  []filterPart
	sparse bool
}

type filterPart struct {
	bits     []uint64
	n, limit int
}

const (
	filterBitsPerKey = 10
	filterProbes     = 7
	sparseBitsPerKey = 16
	sparseProbes     = 11
	filterFirst      = 1 << 14 // keys of the first part
)

// shape returns the filter's bits a key and probes.
func (f *keyFilter) shape() (bitsPerKey int, probes uint64) {
	if f.sparse {
		return sparseBitsPerKey, sparseProbes
	}
	return filterBitsPerKey, filterProbes
}

// add records key k.
func (f *keyFilter) add(k string) {
	if len(f.parts) == 0 {
		f.seed = maphash.MakeSeed()
	}
	if len(f.parts) == 0 || f.parts[len(f.parts)-1].n >= f.parts[len(f.parts)-1].limit {
		limit := filterFirst << len(f.parts)
		bpk, _ := f.shape()
		f.parts = append(f.parts, filterPart{bits: make([]uint64, limit*bpk/64), limit: limit})
	}
	p := &f.parts[len(f.parts)-1]
	h := maphash.String(f.seed, k)
	m := uint64(len(p.bits) * 64)
	_, probes := f.shape()
	for i := uint64(0); i < probes; i++ {
		b := (h + i*(h>>32|1)) % m
		p.bits[b/64] |= 1 << (b % 64)
	}
	p.n++
}

// has reports whether k may have been added.
func (f *keyFilter) has(k string) bool {
	if len(f.parts) == 0 {
		return false
	}
	h := maphash.String(f.seed, k)
	_, probes := f.shape()
parts:
	for i := range f.parts {
		p := &f.parts[i]
		m := uint64(len(p.bits) * 64)
		for j := uint64(0); j < probes; j++ {
			b := (h + j*(h>>32|1)) % m
			if p.bits[b/64]&(1<<(b%64)) == 0 {
				continue parts
			}
		}
		return true
	}
	return false
}

// bytes returns the filter's memory.
func (f *keyFilter) bytes() int64 {
	var n int64
	for _, p := range f.parts {
		n += int64(len(p.bits)) * 8
	}
	return n
}
