package ops

import "hash/maphash"

// keyFilter is an in-memory Bloom filter of strings that grows: a list of
// fixed filters, each twice the capacity of the one before, added to
// until full. It answers "maybe" for every key added and, for about 1% of
// the others, falsely; keys cannot be removed. A join side keeps one of
// the keys whose counts it forgot, at about 10 bits a key instead of a
// count's 70 bytes, so that a probe of a key never stored reads nothing.
type keyFilter struct {
	seed  maphash.Seed
	parts []filterPart
}

type filterPart struct {
	bits     []uint64
	n, limit int
}

const (
	filterBitsPerKey = 10
	filterProbes     = 7
	filterFirst      = 1 << 14 // keys of the first part
)

// add records key k.
func (f *keyFilter) add(k string) {
	if len(f.parts) == 0 {
		f.seed = maphash.MakeSeed()
	}
	if len(f.parts) == 0 || f.parts[len(f.parts)-1].n >= f.parts[len(f.parts)-1].limit {
		limit := filterFirst << len(f.parts)
		f.parts = append(f.parts, filterPart{bits: make([]uint64, limit*filterBitsPerKey/64), limit: limit})
	}
	p := &f.parts[len(f.parts)-1]
	h := maphash.String(f.seed, k)
	m := uint64(len(p.bits) * 64)
	for i := uint64(0); i < filterProbes; i++ {
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
parts:
	for i := range f.parts {
		p := &f.parts[i]
		m := uint64(len(p.bits) * 64)
		for j := uint64(0); j < filterProbes; j++ {
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
