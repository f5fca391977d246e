package storage

import "sync/atomic"

type refcount struct{ n atomic.Int64 }

func (r *refcount) Add(d int64) int64 { return r.n.Add(d) }
