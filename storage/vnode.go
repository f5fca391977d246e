package storage

import "encoding/binary"

// VNodes is the number of virtual nodes keyed state is spread over. A
// parallel or multi-node runtime can later own buckets of virtual nodes
// and move them between workers without rewriting state: every key of
// one vnode lies in one contiguous range per operator.
const VNodes = 256

// StateKeyHeader is the length of a keyed state key before the
// operator's own key: 's', '/', the operator id (8 bytes) and the vnode
// (2 bytes).
const StateKeyHeader = 2 + 8 + 2

// VNode returns the virtual node of key: FNV-1a of its bytes mod VNodes.
func VNode(key []byte) uint16 {
	h := uint32(2166136261)
	for _, c := range key {
		h ^= uint32(c)
		h *= 16777619
	}
	return uint16(h % VNodes)
}

// AppendStateKey appends the state key of operator op's key to dst:
// s/<op:8><vnode:2><key>, vnode = VNode(key). Every operator builds its
// keyed state keys through it; one that stores several entries per key
// (a group's header and its multiset entries) passes the distribution
// key here and appends the rest after it, so that all of them share a
// vnode. StatePrefix(op) is the prefix of all of op's state.
func AppendStateKey(dst []byte, op uint64, key []byte) []byte {
	dst = append(dst, SpaceState, '/')
	dst = binary.BigEndian.AppendUint64(dst, op)
	dst = binary.BigEndian.AppendUint16(dst, VNode(key))
	return append(dst, key...)
}

// StatePrefix returns the prefix of every state key of operator op.
func StatePrefix(op uint64) []byte { return Key(SpaceState, op) }

// StateUserKey returns the operator's key of state key k (what follows
// the vnode), or nil if k is too short to be one.
func StateUserKey(k []byte) []byte {
	if len(k) < StateKeyHeader {
		return nil
	}
	return k[StateKeyHeader:]
}

// AppendStateKeyLen is AppendStateKey(dst, op, uvarint(len(k)) k): the
// state key of distribution key k, length-prefixed so that the operator
// can append more after it (a join's side and row, a group's entries).
func AppendStateKeyLen(dst []byte, op uint64, k string) []byte {
	dst = append(dst, SpaceState, '/')
	dst = binary.BigEndian.AppendUint64(dst, op)
	dst = binary.BigEndian.AppendUint16(dst, VNodeLen(k))
	dst = binary.AppendUvarint(dst, uint64(len(k)))
	return append(dst, k...)
}

// VNodeLen is VNode(uvarint(len(k)) k), without building it.
func VNodeLen(k string) uint16 {
	var lp [binary.MaxVarintLen64]byte
	h := uint32(2166136261)
	for _, c := range lp[:binary.PutUvarint(lp[:], uint64(len(k)))] {
		h ^= uint32(c)
		h *= 16777619
	}
	for i := 0; i < len(k); i++ {
		h ^= uint32(k[i])
		h *= 16777619
	}
	return uint16(h % VNodes)
}

// SplitStateKeyLen splits the operator's key of a state key written by
// AppendStateKeyLen (StateUserKey(k)) into the distribution key and what
// follows it; ok is false if it is not one.
func SplitStateKeyLen(user []byte) (k, rest []byte, ok bool) {
	n, m := binary.Uvarint(user)
	if m <= 0 || uint64(len(user)-m) < n {
		return nil, nil, false
	}
	return user[m : m+int(n)], user[m+int(n):], true
}
