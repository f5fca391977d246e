package ops

import (
	"encoding/binary"
	"sort"
	"strings"

	"sluice/exec/flow"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// AsOfJoin is ASOF [LEFT] JOIN (spec.Node.AsOf): each left row is joined
// with the one right row of its equality key whose inequality column is
// nearest to the left row's while satisfying the inequality (for
// l.t >= r.t the right row with the greatest t not after l.t). Right rows
// of equal t are ordered by their encoded row, so the choice is
// deterministic. A left row without such a row is dropped, or NULL-extended
// by ASOF LEFT JOIN.
//
// State: per equality key, both sides' rows sorted by (t, row) with their
// counts, held whole in memory and saved at each barrier under
// s/<op>/<len(key)><side><key><row> = count (only the rows that changed).
// A left change emits its own row; a right change at time t re-emits only
// the left rows whose match can depend on the right rows at t (those
// between t and the neighbouring right time), comparing their match before
// and after.
type AsOfJoin struct {
	outer  bool // ASOF LEFT JOIN
	keys   [2][]int
	tcol   [2]int
	widths [2]int
	// op relates the left time to the right one: ">=", ">", "<=" or "<".
	op     string
	out    []int // spec.Node.JoinOut; nil: left++right
	opID   uint64
	db     *storage.DB // nil: a batch query
	groups map[string]*asofGroup
	// dirty holds the state keys of the rows whose count changed since the
	// last barrier, with their entry (count 0: the row left).
	dirty map[string]*asofEntry
	kbuf  []byte
}

type asofGroup struct {
	side [2][]*asofEntry // sorted by (t, enc); NULL t first
}

type asofEntry struct {
	r   types.Row
	enc string // the encoded row: tie-break and state key suffix
	n   int64
}

// NewAsOfJoin creates the operator of join node n (n.AsOf set; n.Cond is
// the inequality between a left and a right column) over inputs of lw and
// rw columns; db nil: a batch query. Saved state is read back.
func NewAsOfJoin(n *spec.Node, lw, rw int, opID uint64, db *storage.DB) (*AsOfJoin, error) {
	f, ok := n.Cond.(*spec.Func)
	var l, r *spec.ColRef
	if ok && len(f.Args) == 2 {
		l, _ = f.Args[0].(*spec.ColRef)
		r, _ = f.Args[1].(*spec.ColRef)
	}
	if l == nil || r == nil || l.Idx >= lw || r.Idx < lw || !asofOps[f.Name] {
		return nil, pgerror.New(pgcode.Internal, "ASOF join without a left-to-right inequality of columns")
	}
	j := &AsOfJoin{outer: n.JoinKind == spec.LeftJoin, keys: [2][]int{n.LeftKeys, n.RightKeys},
		tcol: [2]int{l.Idx, r.Idx - lw}, widths: [2]int{lw, rw}, op: f.Name, out: n.JoinOut,
		opID: opID, db: db, groups: map[string]*asofGroup{}, dirty: map[string]*asofEntry{}}
	if db == nil {
		return j, nil
	}
	err := db.Scan(storage.StatePrefix(opID), func(k, v []byte) error {
		pk, rowb, ok := storage.SplitStateKeyLen(storage.StateUserKey(k))
		cnt, m := binary.Varint(v)
		if !ok || len(pk) == 0 || pk[0] > 1 || m <= 0 || cnt <= 0 {
			return pgerror.New(pgcode.DataCorrupted, "corrupt ASOF join state")
		}
		row, err := types.DecodeRow(rowb)
		if err != nil {
			return err
		}
		g := j.group(string(pk[1:]))
		side := int(pk[0])
		g.side[side] = append(g.side[side], &asofEntry{r: row, enc: string(rowb), n: cnt})
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, g := range j.groups {
		for s := range g.side {
			es := g.side[s]
			sort.Slice(es, func(a, b int) bool { return j.less(s, es[a], es[b]) })
		}
	}
	return j, nil
}

var asofOps = map[string]bool{">=": true, ">": true, "<=": true, "<": true}

func (j *AsOfJoin) group(jk string) *asofGroup {
	g := j.groups[jk]
	if g == nil {
		g = &asofGroup{}
		j.groups[jk] = g
	}
	return g
}

// cmpT compares the time columns of two rows of one side; NULL first.
func (j *AsOfJoin) cmpT(side int, a, b types.Row) int {
	x, y := a[j.tcol[side]], b[j.tcol[side]]
	switch {
	case x.IsNull() && y.IsNull():
		return 0
	case x.IsNull():
		return -1
	case y.IsNull():
		return 1
	}
	return types.Compare(x, y)
}

func (j *AsOfJoin) less(side int, a, b *asofEntry) bool {
	if c := j.cmpT(side, a.r, b.r); c != 0 {
		return c < 0
	}
	return a.enc < b.enc
}

// Process implements flow.Operator.
func (j *AsOfJoin) Process(side int, b *types.Batch, out *flow.Emitter) error {
	for i, r := range b.Rows {
		d := b.Diffs[i]
		jk, null := j.joinKey(side, r)
		if null {
			if side == 0 && j.outer {
				if err := out.Emit(j.combine(r, nil), d); err != nil {
					return err
				}
			}
			continue // a NULL key matches nothing
		}
		if side == 1 && r[j.tcol[1]].IsNull() {
			continue // nor does a right row without time
		}
		var err error
		if side == 0 {
			err = j.leftChange(jk, r, d, out)
		} else {
			err = j.rightChange(jk, r, d, out)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (j *AsOfJoin) joinKey(side int, r types.Row) (string, bool) {
	j.kbuf = j.kbuf[:0]
	for _, c := range j.keys[side] {
		if r[c].IsNull() {
			return "", true
		}
		j.kbuf = types.AppendKey(j.kbuf, r[c])
	}
	return string(j.kbuf), false
}

// leftChange adds d copies of left row r and emits them joined with their
// match.
func (j *AsOfJoin) leftChange(jk string, r types.Row, d int64, out *flow.Emitter) error {
	g := j.group(jk)
	if err := j.apply(g, 0, jk, r, d); err != nil {
		return err
	}
	if m := j.match(g, r); m != nil || j.outer {
		if err := out.Emit(j.combine(r, m), d); err != nil {
			return err
		}
	}
	j.dropEmpty(jk, g)
	return nil
}

// rightChange adds d copies of right row r and re-emits the left rows whose
// match changes.
func (j *AsOfJoin) rightChange(jk string, r types.Row, d int64, out *flow.Emitter) error {
	g := j.group(jk)
	lo, hi := j.affected(g, r)
	left := g.side[0][lo:hi]
	old := make([]types.Row, len(left))
	for i, e := range left {
		old[i] = j.match(g, e.r)
	}
	if err := j.apply(g, 1, jk, r, d); err != nil {
		return err
	}
	for i, e := range left {
		now := j.match(g, e.r)
		if sameRow(old[i], now) {
			continue
		}
		if old[i] != nil || j.outer {
			if err := out.Emit(j.combine(e.r, old[i]), -e.n); err != nil {
				return err
			}
		}
		if now != nil || j.outer {
			if err := out.Emit(j.combine(e.r, now), e.n); err != nil {
				return err
			}
		}
	}
	j.dropEmpty(jk, g)
	return nil
}

// sameRow reports whether a and b are the same stored row (or both none).
func sameRow(a, b types.Row) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return &a[0] == &b[0]
}

// affected returns the range of g's left rows whose match may be a right
// row at r's time: those from that time up to the next right time (for
// >= and >), or down to the previous one (<= and <).
func (j *AsOfJoin) affected(g *asofGroup, r types.Row) (lo, hi int) {
	rights, lefts := g.side[1], g.side[0]
	t := r[j.tcol[1]]
	cmp := func(e *asofEntry) int { return types.Compare(e.r[j.tcol[0]], t) } // left time vs t
	nonNull := sort.Search(len(lefts), func(i int) bool { return !lefts[i].r[j.tcol[0]].IsNull() })
	lefts = lefts[nonNull:]
	search := func(f func(*asofEntry) bool) int {
		return sort.Search(len(lefts), func(i int) bool { return f(lefts[i]) })
	}
	switch j.op {
	case ">=", ">":
		// Next right time after t bounds the range from above.
		k := sort.Search(len(rights), func(i int) bool { return types.Compare(rights[i].r[j.tcol[1]], t) > 0 })
		if j.op == ">=" {
			lo = search(func(e *asofEntry) bool { return cmp(e) >= 0 })
		} else {
			lo = search(func(e *asofEntry) bool { return cmp(e) > 0 })
		}
		hi = len(lefts)
		if k < len(rights) {
			nt := rights[k].r[j.tcol[1]]
			hi = search(func(e *asofEntry) bool {
				c := types.Compare(e.r[j.tcol[0]], nt)
				return c > 0 || c == 0 && j.op == ">="
			})
		}
	default:
		// Previous right time before t bounds the range from below.
		k := sort.Search(len(rights), func(i int) bool { return types.Compare(rights[i].r[j.tcol[1]], t) >= 0 }) - 1
		if j.op == "<=" {
			hi = search(func(e *asofEntry) bool { return cmp(e) > 0 })
		} else {
			hi = search(func(e *asofEntry) bool { return cmp(e) >= 0 })
		}
		lo = 0
		if k >= 0 {
			pt := rights[k].r[j.tcol[1]]
			lo = search(func(e *asofEntry) bool {
				c := types.Compare(e.r[j.tcol[0]], pt)
				return c > 0 || c == 0 && j.op == "<"
			})
		}
	}
	return nonNull + lo, nonNull + max(lo, hi)
}

// match returns the right row left row l joins with, or nil.
func (j *AsOfJoin) match(g *asofGroup, l types.Row) types.Row {
	t := l[j.tcol[0]]
	if t.IsNull() {
		return nil
	}
	rights := g.side[1]
	var i int
	switch j.op {
	case ">=": // the last right row with time <= t
		i = sort.Search(len(rights), func(i int) bool { return types.Compare(rights[i].r[j.tcol[1]], t) > 0 }) - 1
	case ">":
		i = sort.Search(len(rights), func(i int) bool { return types.Compare(rights[i].r[j.tcol[1]], t) >= 0 }) - 1
	case "<=": // the first right row with time >= t
		i = sort.Search(len(rights), func(i int) bool { return types.Compare(rights[i].r[j.tcol[1]], t) >= 0 })
	case "<":
		i = sort.Search(len(rights), func(i int) bool { return types.Compare(rights[i].r[j.tcol[1]], t) > 0 })
	}
	if i < 0 || i >= len(rights) {
		return nil
	}
	return rights[i].r
}

// apply adds d copies of row r to side of group g (key jk).
func (j *AsOfJoin) apply(g *asofGroup, side int, jk string, r types.Row, d int64) error {
	enc := string(types.EncodeRow(nil, r))
	probe := &asofEntry{r: r, enc: enc}
	es := g.side[side]
	i := sort.Search(len(es), func(i int) bool { return !j.less(side, es[i], probe) })
	var e *asofEntry
	if i < len(es) && es[i].enc == enc {
		e = es[i]
	} else {
		if d < 0 {
			return pgerror.New(pgcode.Internal, "ASOF join: retraction of a row it does not hold")
		}
		e = probe
		es = append(es, nil)
		copy(es[i+1:], es[i:])
		es[i] = e
	}
	e.n += d
	if e.n < 0 {
		return pgerror.New(pgcode.Internal, "ASOF join: retraction of a row it does not hold")
	}
	if e.n == 0 {
		es = append(es[:i], es[i+1:]...)
	}
	g.side[side] = es
	if j.db != nil {
		j.dirty[string(j.stateKey(side, jk, enc))] = e
	}
	return nil
}

func (j *AsOfJoin) dropEmpty(jk string, g *asofGroup) {
	if len(g.side[0]) == 0 && len(g.side[1]) == 0 {
		delete(j.groups, jk)
	}
}

func (j *AsOfJoin) stateKey(side int, jk, enc string) []byte {
	var pk strings.Builder
	pk.Grow(1 + len(jk))
	pk.WriteByte(byte(side))
	pk.WriteString(jk)
	return append(storage.AppendStateKeyLen(nil, j.opID, pk.String()), enc...)
}

// combine builds the output row of left row l and right row r (nil: NULLs).
func (j *AsOfJoin) combine(l, r types.Row) types.Row {
	at := func(c int) types.Datum {
		if c < j.widths[0] {
			return l[c]
		}
		if r == nil {
			return types.Null
		}
		return r[c-j.widths[0]]
	}
	if j.out == nil {
		row := make(types.Row, j.widths[0]+j.widths[1])
		for c := range row {
			row[c] = at(c)
		}
		return row
	}
	row := make(types.Row, len(j.out))
	for i, c := range j.out {
		row[i] = at(c)
	}
	return row
}

// Checkpoint implements flow.Operator: the rows whose counts changed since
// the last barrier are written (or deleted when gone).
func (j *AsOfJoin) Checkpoint(b *flow.Barrier, _ *flow.Emitter) error {
	if j.db == nil {
		return nil
	}
	var v []byte
	for k, e := range j.dirty {
		if e.n == 0 {
			b.W.Delete([]byte(k))
			continue
		}
		v = binary.AppendVarint(v[:0], e.n)
		b.W.Set([]byte(k), v)
	}
	clear(j.dirty)
	return nil
}
