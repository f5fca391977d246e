package ops

import (
	"sort"

	"sluice/exec/flow"
	"sluice/exec/spec"
	"sluice/sql/types"
)

// TopN sorts its whole input and emits rows Offset … Offset+Limit at end
// of stream. It serves batch queries (a subquery with ORDER BY … LIMIT);
// streaming Top-N is a different operator.
type TopN struct {
	order         []spec.OrderItem
	limit, offset int64
	rows          map[string]*jrow
}

// NewTopN creates the Top-N of node n.
func NewTopN(n *spec.Node) *TopN {
	return &TopN{order: n.Order, limit: n.Limit, offset: n.Offset, rows: map[string]*jrow{}}
}

// Process implements flow.Operator.
func (t *TopN) Process(_ int, b *types.Batch, _ *flow.Emitter) error {
	for i, r := range b.Rows {
		k := string(types.EncodeRow(nil, r))
		e := t.rows[k]
		if e == nil {
			e = &jrow{row: r}
			t.rows[k] = e
		}
		e.n += b.Diffs[i]
	}
	return nil
}

// Checkpoint implements flow.Operator.
func (t *TopN) Checkpoint(*flow.Barrier, *flow.Emitter) error { return nil }

// Finish implements flow.Finisher.
func (t *TopN) Finish(out *flow.Emitter) error {
	var all []types.Row
	for _, e := range t.rows {
		for i := int64(0); i < e.n; i++ {
			all = append(all, e.row)
		}
	}
	SortRows(all, t.order)
	if t.offset >= int64(len(all)) {
		return nil
	}
	all = all[t.offset:]
	if t.limit >= 0 && t.limit < int64(len(all)) {
		all = all[:t.limit]
	}
	for _, r := range all {
		if err := out.Emit(r, 1); err != nil {
			return err
		}
	}
	return nil
}

// SortRows sorts rows by order, as Postgres does: NULLs are larger than
// any value unless NullsFirst.
func SortRows(rows []types.Row, order []spec.OrderItem) {
	sort.SliceStable(rows, func(i, j int) bool { return compareOrder(rows[i], rows[j], order) < 0 })
}

// CompareOrder compares two rows by order as SortRows sorts them (< 0: a
// comes first). Batch queries keep a bounded heap of ORDER BY … LIMIT
// rows with it.
func CompareOrder(a, b types.Row, order []spec.OrderItem) int { return compareOrder(a, b, order) }
