package storage

import "bytes"

// MergeRun is a sorted run being merged: its current record's key, and its
// place among the runs (or the record's), which breaks ties so that a
// merge is stable.
type MergeRun interface {
	RunKey() []byte
	RunSeq() int
}

// RunHeap is a container/heap of runs ordered by their current key, then
// by their place: the k-way merge of sorted runs that spilled COPYs and
// Materializes share.
type RunHeap[R MergeRun] []R

func (h RunHeap[R]) Len() int { return len(h) }
func (h RunHeap[R]) Less(i, j int) bool {
	if c := bytes.Compare(h[i].RunKey(), h[j].RunKey()); c != 0 {
		return c < 0
	}
	return h[i].RunSeq() < h[j].RunSeq()
}
func (h RunHeap[R]) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *RunHeap[R]) Push(x any)   { *h = append(*h, x.(R)) }
func (h *RunHeap[R]) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
