// Helpers shared by the operator tests: a readable multiset of rows, an
// Emitter that collects what an operator emits, expression builders and a
// checkpoint helper that commits an operator's state into a real store.
package ops_test

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"sluice/exec/flow"
	"sluice/exec/spec"
	"sluice/sql/types"
	"sluice/storage"
)

// fmtDatum prints d with its kind visible: 3 (int), n3.5 (decimal, trailing
// zeros dropped), f3.5 (float), 'x' (text), t/f, NULL.
func fmtDatum(d types.Datum) string {
	switch d.K {
	case types.KNull:
		return "NULL"
	case types.KInt:
		return strconv.FormatInt(d.I, 10)
	case types.KFloat:
		return "f" + strconv.FormatFloat(d.Float(), 'g', -1, 64)
	case types.KDecimal:
		s := types.DecString(d)
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		return "n" + s
	case types.KString:
		return "'" + d.S + "'"
	case types.KBool:
		if d.Bool() {
			return "t"
		}
		return "f"
	}
	return fmt.Sprintf("%v", d)
}

func fmtRow(r types.Row) string {
	s := make([]string, len(r))
	for i, d := range r {
		s[i] = fmtDatum(d)
	}
	return "(" + strings.Join(s, ",") + ")"
}

// bag is a multiset of rows keyed by their printed form.
type bag map[string]int64

func (b bag) add(r types.Row, n int64) {
	k := fmtRow(r)
	b[k] += n
	if b[k] == 0 {
		delete(b, k)
	}
}

func (b bag) addBatch(bt *types.Batch) {
	for i, r := range bt.Rows {
		b.add(r, bt.Diffs[i])
	}
}

func (b bag) String() string {
	keys := make([]string, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var s strings.Builder
	s.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			s.WriteString(" ")
		}
		if b[k] != 1 {
			fmt.Fprintf(&s, "%d×", b[k])
		}
		s.WriteString(k)
	}
	s.WriteString("}")
	return s.String()
}

func (b bag) equal(o bag) bool {
	if len(b) != len(o) {
		return false
	}
	for k, v := range b {
		if o[k] != v {
			return false
		}
	}
	return true
}

// bagOf builds a bag from printed rows, each added once ("2×(…)" twice).
func bagOf(rows ...string) bag {
	b := bag{}
	for _, r := range rows {
		n := int64(1)
		if i := strings.Index(r, "×"); i > 0 {
			n, _ = strconv.ParseInt(r[:i], 10, 64)
			r = r[i+len("×"):]
		}
		if strings.HasPrefix(r, "-") {
			n, r = -n, r[1:]
		}
		b[r] += n
		if b[r] == 0 {
			delete(b, r)
		}
	}
	return b
}

// collector gathers an operator's output: the changes of the last step and
// their running sum.
type collector struct {
	em    *flow.Emitter
	delta bag
	total bag
	// signed: the input itself retracts rows never inserted (stateless
	// operators), so the output may too.
	signed bool
}

func newCollector() *collector {
	c := &collector{delta: bag{}, total: bag{}}
	c.em = flow.NewEmitter(func(b *types.Batch) error {
		c.delta.addBatch(b)
		c.total.addBatch(b)
		return nil
	})
	return c
}

// step runs f against the emitter and flushes it, as an actor does after
// every call.
func (c *collector) step(t *testing.T, f func(out *flow.Emitter) error) {
	t.Helper()
	c.delta = bag{}
	if err := f(c.em); err != nil {
		t.Fatal(err)
	}
	if err := c.em.Flush(); err != nil {
		t.Fatal(err)
	}
	for k, n := range c.total {
		if n < 0 && !c.signed {
			t.Fatalf("output retracts %s more often than it was emitted (%d)", k, n)
		}
	}
}

func (c *collector) wantDelta(t *testing.T, want bag) {
	t.Helper()
	if !c.delta.equal(want) {
		t.Fatalf("step emitted %v, want %v", c.delta, want)
	}
}

func (c *collector) wantTotal(t *testing.T, want bag) {
	t.Helper()
	if !c.total.equal(want) {
		t.Fatalf("output is %v, want %v", c.total, want)
	}
}

func batchOf(changes ...change) *types.Batch {
	b := types.NewBatch(len(changes))
	for _, c := range changes {
		b.Add(c.row, c.diff)
	}
	return b
}

type change struct {
	row  types.Row
	diff int64
}

func ins(r types.Row) change { return change{r, 1} }
func del(r types.Row) change { return change{r, -1} }

func row(ds ...any) types.Row {
	r := make(types.Row, len(ds))
	for i, d := range ds {
		switch x := d.(type) {
		case nil:
			r[i] = types.Null
		case int:
			r[i] = types.NewInt(int64(x))
		case int64:
			r[i] = types.NewInt(x)
		case float64:
			r[i] = types.NewFloat(x)
		case string:
			r[i] = types.NewString(x)
		case bool:
			r[i] = types.NewBool(x)
		case types.Datum:
			r[i] = x
		default:
			panic(fmt.Sprintf("row: %T", d))
		}
	}
	return r
}

func dec(s string) types.Datum {
	d, err := types.DecFromString(s)
	if err != nil {
		panic(err)
	}
	return d
}

func col(i int, t types.T) spec.Expr { return &spec.ColRef{Idx: i, T: t} }

func intConst(v int64) spec.Expr { return &spec.Const{D: types.NewInt(v), T: types.TInt8} }

func fn(name string, t types.T, args ...spec.Expr) spec.Expr {
	return &spec.Func{Name: name, Args: args, T: t}
}

// checkpointer commits operators' state into a real store, one epoch per
// call.
type checkpointer struct {
	db    *storage.DB
	epoch uint64
}

func newCheckpointer(t *testing.T) *checkpointer {
	t.Helper()
	db, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &checkpointer{db: db}
}

// checkpoint runs Checkpoint of every operator against one epoch (through
// its collector, so that what a barrier emits is counted) and commits it.
func (c *checkpointer) checkpoint(t *testing.T, ops []flow.Operator, cols []*collector) {
	t.Helper()
	c.begin(t, ops, cols)()
}

// begin runs Checkpoint of every operator against the next epoch and
// returns the commit of that epoch, to be called later (as the
// coordinator does once every operator has checkpointed).
func (c *checkpointer) begin(t *testing.T, ops []flow.Operator, cols []*collector) (commit func()) {
	t.Helper()
	c.epoch++
	e := c.epoch
	b := &flow.Barrier{Epoch: e, W: c.db.NewEpochWriter()}
	for i, op := range ops {
		cols[i].step(t, func(out *flow.Emitter) error { return op.Checkpoint(b, out) })
	}
	return func() {
		t.Helper()
		if err := c.db.Commit(b.W, e); err != nil {
			t.Fatal(err)
		}
	}
}

// stateCounts returns operator opID's stored state: each key, less the
// operator's prefix, with the count it holds.
func stateCounts(t *testing.T, db *storage.DB, opID uint64) map[string]int64 {
	t.Helper()
	prefix := storage.Key(storage.SpaceState, opID)
	got := map[string]int64{}
	err := db.Scan(prefix, func(k, v []byte) error {
		c, _ := binary.Varint(v)
		got[string(storage.StateUserKey(k))] = c
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
