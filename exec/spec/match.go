package spec

import (
	"crypto/sha256"
	"encoding/hex"

	"sluice/sql/types"
)

// Changing a view in place (ALTER MATERIALIZED VIEW … AS, CREATE OR
// REPLACE MATERIALIZED VIEW): the new query's plan is matched against the
// stored plan, bottom-up, and every sub-plan both share keeps its state.

// Match is how a new plan of a job relates to its stored old plan.
type Match struct {
	// Kept marks the new plan's nodes that are the old plan's (same
	// operator, same parameters, same inputs): they carry the old node's
	// StateID and run from its state.
	Kept []bool
	// Replay marks kept nodes whose consumer is new: at start they emit
	// their current contents (an aggregation its groups' rows, a
	// subscription its relation's committed rows) so the new part is built
	// without reading the sources again.
	Replay []bool
	// Unused lists the StateIDs of old nodes the new plan no longer has:
	// their state is deleted when the change commits.
	Unused []uint64
	// Same: the plans compute the same thing (only names or the query's
	// text changed); the job need not change.
	Same bool
}

// Signature returns the canonical encoding of node i of p with its whole
// sub-plan: its stored form without its StateID, its input positions and
// its display names, followed by its inputs' signatures. Two nodes with
// the same signature compute the same rows in the same state layout.
func Signature(p *Plan, i int, memo map[int]string) string {
	if s, ok := memo[i]; ok {
		return s
	}
	n := *p.Nodes[i]
	n.StateID, n.Inputs, n.RelName = 0, nil, ""
	n.Cols = append([]types.Column(nil), n.Cols...)
	for c := range n.Cols {
		n.Cols[c].Name = ""
	}
	b, err := encode(&Plan{Nodes: []*Node{&n}})
	h := sha256.New()
	if err != nil {
		// Not encodable: unique, so it matches nothing.
		h.Write([]byte(err.Error()))
		h.Write([]byte{byte(i), byte(i >> 8)})
	}
	h.Write(b)
	for _, in := range p.Nodes[i].Inputs {
		h.Write([]byte(Signature(p, in, memo)))
	}
	s := hex.EncodeToString(h.Sum(nil))
	memo[i] = s
	return s
}

// MatchPlans gives the nodes of nw that old has too their old StateIDs,
// and the others new StateIDs above every id of both plans (a state range
// being deleted is never reused in the same epoch). The roots (the
// Materialize of the view) always share their StateID. canReplay tells
// which kept nodes can emit their current contents; a kept node whose
// consumer is new and that cannot (or that feeds several consumers) is
// built again, and the rule moves down to its inputs.
func MatchPlans(old, nw *Plan, canReplay func(*Node) bool) *Match {
	m := &Match{Kept: make([]bool, len(nw.Nodes)), Replay: make([]bool, len(nw.Nodes))}
	oldMemo, newMemo := map[int]string{}, map[int]string{}
	avail := map[string][]int{}
	oldRoot, newRoot := old.Root(), nw.Root()
	for i := range old.Nodes {
		if i == oldRoot {
			continue
		}
		s := Signature(old, i, oldMemo)
		avail[s] = append(avail[s], i)
	}
	m.Same = Signature(old, oldRoot, oldMemo) == Signature(nw, newRoot, newMemo)
	for _, n := range nw.Nodes {
		n.StateID = 0
	}
	for i, n := range nw.Nodes {
		if i == newRoot {
			continue
		}
		ok := true
		for _, in := range n.Inputs {
			ok = ok && m.Kept[in]
		}
		s := Signature(nw, i, newMemo)
		if q := avail[s]; ok && len(q) > 0 {
			n.StateID = old.Nodes[q[0]].StateID
			avail[s] = q[1:]
			m.Kept[i] = true
		}
	}
	consumers := make([][]int, len(nw.Nodes))
	for i, n := range nw.Nodes {
		for _, in := range n.Inputs {
			consumers[in] = append(consumers[in], i)
		}
	}
	// Top-down (inputs precede their consumers): a node's consumers are
	// settled before the node. The root takes new rows unless the plans
	// are the same.
	m.Kept[newRoot] = m.Same
	for i := len(nw.Nodes) - 1; i >= 0; i-- {
		if !m.Kept[i] || i == newRoot {
			continue
		}
		newConsumer := false
		for _, c := range consumers[i] {
			if !m.Kept[c] {
				newConsumer = true
			}
		}
		if !newConsumer {
			continue
		}
		if len(consumers[i]) == 1 && canReplay(nw.Nodes[i]) {
			m.Replay[i] = true
			continue
		}
		m.Kept[i] = false
		nw.Nodes[i].StateID = 0
	}
	used := map[uint64]bool{}
	for i, n := range nw.Nodes {
		if m.Kept[i] && i != newRoot {
			used[n.StateID] = true
		}
	}
	next := uint64(1)
	for i, n := range old.Nodes {
		next = max(next, n.StateID+1)
		if i != oldRoot && n.StateID != 0 && !used[n.StateID] {
			m.Unused = append(m.Unused, n.StateID)
		}
	}
	nw.Nodes[newRoot].StateID = old.Nodes[oldRoot].StateID
	for _, n := range nw.Nodes {
		if n.StateID == 0 {
			n.StateID = next
			next++
		}
	}
	return m
}
