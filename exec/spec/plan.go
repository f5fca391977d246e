package spec

import (
	"fmt"
	"strings"
	"time"

	"sluice/sql/types"
)

// Kind is the kind of a dataflow node.
type Kind uint8

// Node kinds.
const (
	// Subscribe reads the change stream of a table or materialized view
	// (Rel), starting with its committed contents (backfill).
	Subscribe Kind = iota
	// SourceRead reads an external or generated source with its own
	// replayable reader.
	SourceRead
	// Values emits fixed rows once (a FROM-less SELECT or VALUES).
	Values
	Filter
	Project
	Agg
	Join
	Union
	// Materialize keeps the input's accumulated contents as relation Rel.
	Materialize
	// TopN sorts and limits (batch SELECTs only for now).
	TopN
	// TableFunc emits the rows of the set-returning function Func called
	// with Exprs (evaluated once, over no input row; batch SELECTs only).
	TableFunc
	// Sink writes the input's changes to an external system (Sink spec):
	// each epoch's changes go into the sink log with the checkpoint and
	// are delivered once the epoch is committed.
	Sink
	// UpsertKey turns the upsert stream of a FORMAT UPSERT source (+1:
	// replace the row with this key, -1: delete the key) into exact
	// retractions, keeping the current row per Key.
	UpsertKey
	// Window computes window functions (WinFuncs) over partitions
	// (PartitionBy) ordered by Order, appending one column per function;
	// with Limit >= 0 only rows whose LimitFunc value is <= Limit are
	// output (Top-N: ROW_NUMBER()/RANK() … WHERE rn <= N).
	Window
	// TimeWindow is TUMBLE or HOP in FROM: it appends window_start and
	// window_end to each input row (TimeWin), one row per window the row's
	// time column falls in.
	TimeWindow
	// TemporalFilter is a view's filter on the clock (WHERE ts > now() -
	// INTERVAL '1 hour'): it passes the input rows that satisfy every
	// TimeBound at the current time, and as time passes retracts the rows
	// that expire and emits those whose time comes.
	TemporalFilter
	// WindowMaxJoin joins an append-only input with its own maximum per
	// TUMBLE window (WinMax: Nexmark q7's "the bids at the window's highest
	// price"), planned for the self-join of a source with its windowed
	// MAX(col) GROUP BY window on col = max and a time bound.
	WindowMaxJoin
	// WindowTopCount emits, per TUMBLE or HOP window of an append-only
	// input, the keys with the most rows and their count, ties included
	// (WinTop: Nexmark q5's hot items), planned for the join of a count
	// per key and window with the maximum of those counts per window.
	WindowTopCount
)

var kindNames = [...]string{"Subscribe", "SourceRead", "Values", "Filter", "Project", "HashAgg", "HashJoin", "Union", "Materialize", "TopN", "TableFunc", "Sink", "UpsertKey", "Window", "TimeWindow", "TemporalFilter", "WindowMaxJoin", "WindowTopCount"}

func (k Kind) String() string { return kindNames[k] }

// JoinKind is the kind of join.
type JoinKind uint8

// Join kinds.
const (
	InnerJoin JoinKind = iota
	LeftJoin
	RightJoin
	FullJoin
	// SemiJoin outputs each left row that has a match on the right, once
	// (EXISTS, IN (SELECT …)); AntiJoin each left row that has none (NOT
	// EXISTS, NOT IN). Both output the left columns only (JoinOut).
	SemiJoin
	AntiJoin
)

var joinNames = [...]string{"inner", "left outer", "right outer", "full outer", "left semi", "left anti"}

func (k JoinKind) String() string { return joinNames[k] }

// AggCall is one aggregate of an Agg node.
type AggCall struct {
	Func     string // count, count_star, sum, avg, min, max, the aggstats.go ones; batch only: string_agg, array_agg, bool_and, bool_or
	Arg      int    // input column; -1 for count(*)
	Distinct bool
	Filter   int   // input column holding the FILTER condition; -1 if none
	Extra    []int // further argument columns (string_agg's delimiter)
	T        types.T
	// Order (batch-only aggregates: agg(x ORDER BY k)) sorts the inputs
	// first; Col indexes the call's argument values (0 the argument,
	// 1… Extra).
	Order []OrderItem
	// Frac is the fraction of percentile_cont / percentile_disc (in
	// [0, 1]; FracNull: the fraction is NULL, so is the result).
	Frac     float64 `json:",omitempty"`
	FracNull bool    `json:",omitempty"`
}

// WindowCall is one window function of a Window node.
type WindowCall struct {
	Func string // row_number, rank, dense_rank, lag, lead, first_value, last_value, nth_value, ntile, percent_rank, cume_dist, or an aggregate: count, count_star, sum, avg, min, max
	Arg  int    // input column of an aggregate or value function; -1 for none
	// Frame of an aggregate: ROWS BETWEEN Preceding PRECEDING AND CURRENT
	// ROW (Preceding -1: UNBOUNDED). Rows is false for the default frame
	// (RANGE UNBOUNDED PRECEDING: peers of the current row included; the
	// whole partition without ORDER BY).
	Rows      bool
	Preceding int64
	// Gap is the session gap (µs) of session_start / session_end, which
	// compute the bounds of the session of the row's time column Arg.
	Gap int64
	T   types.T
	// Args are further argument columns: lag/lead's offset and default,
	// nth_value's n, ntile's bucket count. Empty in plans written before
	// they existed (the fields below too, so those plans read the same).
	Args []int `json:",omitempty"`
	// Frame is an explicit frame (nil: the legacy fields Rows/Preceding,
	// or PostgreSQL's default frame).
	Frame *WindowFrame `json:",omitempty"`
}

// Backward reports whether the call's value for a row depends on no row
// after the row's peers in window order (its frame ends at the current
// row or before, and it needs neither the next rows nor the partition's
// size): what EMIT ON WINDOW CLOSE needs of a window.
func (f WindowCall) Backward() bool {
	switch f.Func {
	case "lead", "ntile", "percent_rank", "cume_dist", "session_start", "session_end":
		return false
	}
	if f.Frame == nil {
		return true // the default frame, or ROWS n PRECEDING (the legacy fields)
	}
	switch f.Frame.End.Kind {
	case BoundPreceding, BoundCurrentRow, BoundUnboundedPreceding:
		return true
	}
	return false
}

// Frame modes and bound kinds of a WindowFrame.
const (
	FrameRows = iota
	FrameRange
	FrameGroups
)

const (
	BoundUnboundedPreceding = iota
	BoundPreceding
	BoundCurrentRow
	BoundFollowing
	BoundUnboundedFollowing
)

// Frame exclusions (EXCLUDE …).
const (
	ExcludeNoOthers = iota
	ExcludeCurrentRow
	ExcludeGroup
	ExcludeTies
)

// WindowFrame is ROWS | RANGE | GROUPS BETWEEN Start AND End [EXCLUDE …].
type WindowFrame struct {
	Mode       int
	Start, End FrameBound
	Exclude    int
}

// FrameBound is one end of a frame. Offset is the ROWS/GROUPS count; of
// a RANGE offset bound, Col is the input column holding the bound's value
// for the current row (the order key minus or plus the offset, computed
// by the projection below the window).
type FrameBound struct {
	Kind   int
	Offset int64
	Col    int
}

// OrderItem is one ORDER BY key of a TopN.
type OrderItem struct {
	Col        int
	Desc       bool
	NullsFirst bool
}

// SetFunc is one set-returning function of a ProjectSet (Node.SetFuncs).
type SetFunc struct {
	Name string
	Args []Expr
	Cols int // the number of columns it returns
}

// SourceSpec describes a SourceRead.
// ClockSeriesConnector is the connector of a SourceSpec the planner makes
// for generate_series(start, now() [± offset], step) in FROM of a view:
// the points start + k*step as the clock reaches each (exec/job), with
// options start, step and offset in microseconds. It is not in the
// connector registry: no CREATE SOURCE names it.
const ClockSeriesConnector = "sluice.generate_series"

type SourceSpec struct {
	SourceID  uint64
	Name      string
	Connector string
	Options   map[string]string
	Columns   []types.Column
	Key       []int // declared PRIMARY KEY
	// Watermark is the source's WATERMARK FOR clause; nil if none.
	Watermark *WatermarkSpec
}

// SinkSpec describes a Sink node: the sink's connector and its resolved
// configuration.
type SinkSpec struct {
	SinkID     uint64
	Name       string
	Connector  string
	Options    map[string]string // WITH options, keys lower-case
	Format     string
	Encode     string
	FormatOpts map[string]string
	WriteMode  string // resolved
	AppendOnly bool
	Discard    bool // the connector keeps nothing (blackhole): no sink log
}

// Node is one operator of a job.
type Node struct {
	Kind   Kind
	Inputs []int // indexes of input nodes in Plan.Nodes
	Cols   []types.Column
	// StateID names the node's state within its job (the operator id is
	// job<<16 | StateID): given once when the job is created
	// (Plan.AssignStateIDs) and stored with the plan, so that the state
	// stays the node's whatever its position in a later plan. 0: not
	// given (batch queries; the runtime uses position+1).
	StateID uint64

	Rel uint64 // Subscribe, Materialize
	// Lookup, on a Subscribe in a batch plan, pins the relation's unique
	// key to these values: the read is a point lookup, not a scan.
	Lookup  []Expr
	RelName string      // for EXPLAIN
	Source  *SourceSpec // SourceRead
	Sink    *SinkSpec   // Sink

	Rows []types.Row // Values

	Pred  Expr   // Filter
	Exprs []Expr // Project; TableFunc arguments
	Func  string // TableFunc: the function's name
	// SetFuncs, on a TableFunc with an input (set-returning functions in
	// a select list), lists the functions run in lockstep over each row,
	// PostgreSQL's ProjectSet; Func and Exprs are then unused.
	SetFuncs []SetFunc

	GroupBy []int     // Agg
	Aggs    []AggCall // Agg
	// EOWC (Agg, Window, Join) is EMIT ON WINDOW CLOSE: a group's row is emitted once,
	// final, when the watermark passes its window, never before.
	EOWC bool

	TimeWin *TimeWindowSpec // TimeWindow

	JoinKind  JoinKind // Join
	LeftKeys  []int    // Join: columns of the left input
	RightKeys []int    // Join: columns of the right input
	Cond      Expr     // Join residual condition over left++right columns; may be nil
	// JoinOut (Join) lists the output columns as indexes into the left
	// input's columns followed by the right input's; nil: all of them, in
	// that order. A projection picking columns of the join's result is
	// folded into it, so the join builds its rows in the projected order
	// instead of building them whole to be copied once more.
	JoinOut []int

	Key []int // Materialize: unique key columns (nil = a multiset of rows); Sink: primary_key; UpsertKey: the source's key

	Order []OrderItem // TopN, Window
	Limit int64       // TopN, Window; -1 = none

	PartitionBy []int        // Window
	WinFuncs    []WindowCall // Window
	LimitFunc   int          // Window: the function Limit applies to
	// InputAppendOnly (Window, Agg) says the input never retracts a row.
	InputAppendOnly bool
	// Temporal marks a Subscribe read as a lookup table (FOR SYSTEM_TIME
	// AS OF PROCTIME()) and a Join whose right side is one: the lookup
	// side's changes do not revise results already emitted.
	Temporal bool
	// AsOf marks a Join as ASOF [LEFT] JOIN (JoinKind inner or left): Cond
	// is then the one inequality between a left and a right column, and
	// each left row joins only the nearest right row satisfying it.
	AsOf bool `json:",omitempty"`
	// TimeBounds (TemporalFilter): a row passes at time now if each holds.
	TimeBounds []TimeBound `json:",omitempty"`
	Offset     int64       // TopN
	// WinMax describes a WindowMaxJoin.
	WinMax *WinMaxSpec `json:",omitempty"`
	// WinTop describes a WindowTopCount.
	WinTop *WinTopSpec `json:",omitempty"`
}

// WinTopSpec describes a WindowTopCount: the windows of Win over input
// column Time, the key column Key (an integer), and the output columns,
// each one of TopKey, TopCount, TopStart and TopEnd.
type WinTopSpec struct {
	Win       TimeWindowSpec
	Time, Key int
	Out       []int
}

// The output columns of a WindowTopCount.
const (
	TopKey   = iota // the key
	TopCount        // its count, the window's largest
	TopStart        // window_start
	TopEnd          // window_end
)

// WinMaxSpec describes a WindowMaxJoin: an input row r joins the window of
// TUMBLE(Col = Time, Size, Offset) ending at e when r[Val] equals the
// largest non-NULL Val of the rows in that window and Lo <= r[Time] - e <=
// Hi (-Size <= Lo <= Hi <= 0: the row's own window, and with Hi = 0 also
// the one that ends at the row's time). Out lists the output columns as
// indexes into the input row followed by three more: the maximum,
// window_start and window_end.
type WinMaxSpec struct {
	Time, Val    int
	Size, Offset int64
	Lo, Hi       int64
	Out          []int
}

// TimeBound is a condition of a TemporalFilter: input column Col Op
// now() + Offset microseconds (Op one of >, >=, <, <=).
type TimeBound struct {
	Col    int
	Op     string
	Offset int64
}

// Plan is a dataflow job: nodes in topological order, the root last.
type Plan struct {
	Nodes []*Node
	// TimeZone is the zone (a name types.ParseZone reads; "" is UTC) in
	// which the plan's timestamptz casts, date_trunc, extract and to_char
	// are evaluated: the TimeZone of the session that planned it. A
	// materialized view keeps the zone it was created in, so that its
	// result never depends on who reads it.
	TimeZone string
}

// Root returns the index of the root node.
func (p *Plan) Root() int { return len(p.Nodes) - 1 }

// Add appends n and returns its index.
func (p *Plan) Add(n *Node) int {
	p.Nodes = append(p.Nodes, n)
	return len(p.Nodes) - 1
}

// Uses returns how many consumers read each node's output.
func (p *Plan) Uses() []int {
	uses := make([]int, len(p.Nodes))
	for _, n := range p.Nodes {
		for _, in := range n.Inputs {
			uses[in]++
		}
	}
	return uses
}

// Explain prints the plan as an indented tree, root first. A node that
// feeds several consumers is printed in full once, tagged "(shared #i)",
// and as "Shared #i" where it is read again.
func (p *Plan) Explain() string {
	var b strings.Builder
	if len(p.Nodes) > 0 {
		p.explain(&b, p.Root(), 0, p.Uses(), make([]bool, len(p.Nodes)))
	}
	return b.String()
}

func (p *Plan) explain(b *strings.Builder, i, depth int, uses []int, shown []bool) {
	n := p.Nodes[i]
	b.WriteString(strings.Repeat("  ", depth))
	if depth > 0 {
		b.WriteString("└─ ")
	}
	if shown[i] {
		fmt.Fprintf(b, "Shared #%d\n", i)
		return
	}
	shown[i] = true
	b.WriteString(n.describe())
	if n.Kind == Join && n.JoinOut != nil {
		b.WriteString(p.joinOutput(n))
	}
	if uses[i] > 1 {
		fmt.Fprintf(b, " (shared #%d)", i)
	}
	b.WriteByte('\n')
	for _, in := range n.Inputs {
		p.explain(b, in, depth+1, uses, shown)
	}
}

// joinOutput describes join n's output columns: " output [c, d AS e]",
// named after the input columns (left then right) they are taken from.
func (p *Plan) joinOutput(n *Node) string {
	in := append(append([]types.Column(nil), p.Nodes[n.Inputs[0]].Cols...), p.Nodes[n.Inputs[1]].Cols...)
	s := make([]string, len(n.JoinOut))
	for i, c := range n.JoinOut {
		s[i] = colNames(in, []int{c})
		if i < len(n.Cols) && n.Cols[i].Name != "" && n.Cols[i].Name != s[i] {
			s[i] += " AS " + n.Cols[i].Name
		}
	}
	return " output [" + strings.Join(s, ", ") + "]"
}

func colNames(cols []types.Column, idx []int) string {
	s := make([]string, len(idx))
	for i, c := range idx {
		if c >= 0 && c < len(cols) && cols[c].Name != "" {
			s[i] = cols[c].Name
		} else {
			s[i] = fmt.Sprintf("$%d", c)
		}
	}
	return strings.Join(s, ", ")
}

func (n *Node) describe() string {
	switch n.Kind {
	case Subscribe:
		if n.Lookup != nil {
			k := make([]string, len(n.Lookup))
			for i, e := range n.Lookup {
				k[i] = e.String()
			}
			return fmt.Sprintf("Lookup %s key (%s)", n.RelName, strings.Join(k, ", "))
		}
		return fmt.Sprintf("Subscribe %s", n.RelName)
	case SourceRead:
		if w := n.Source.Watermark; w != nil {
			return fmt.Sprintf("SourceRead %s [%s] (connector: %s, watermark: %s)", n.Source.Name, allColNames(n.Cols), n.Source.Connector, w.describe(n.Cols))
		}
		return fmt.Sprintf("SourceRead %s [%s] (connector: %s)", n.Source.Name, allColNames(n.Cols), n.Source.Connector)
	case Values:
		return fmt.Sprintf("Values (%d rows)", len(n.Rows))
	case Filter:
		return "Filter " + n.Pred.String()
	case Project:
		s := make([]string, len(n.Exprs))
		for i, e := range n.Exprs {
			s[i] = e.String()
			if i < len(n.Cols) && n.Cols[i].Name != "" && n.Cols[i].Name != s[i] {
				s[i] += " AS " + n.Cols[i].Name
			}
		}
		return "Project " + strings.Join(s, ", ")
	case Agg:
		a := make([]string, len(n.Aggs))
		for i, ag := range n.Aggs {
			arg := "*"
			if ag.Arg >= 0 {
				arg = fmt.Sprintf("$%d", ag.Arg)
			}
			if ag.Distinct {
				arg = "DISTINCT " + arg
			}
			f := ag.Func
			if f == "count_star" {
				f = "count"
			}
			a[i] = fmt.Sprintf("%s(%s)", f, arg)
			switch f {
			case "percentile_cont", "percentile_disc", "mode":
				frac := ""
				switch {
				case f == "mode":
				case ag.FracNull:
					frac = "NULL"
				default:
					frac = fmt.Sprint(ag.Frac)
				}
				dir := ""
				if len(ag.Order) > 0 && ag.Order[0].Desc {
					dir = " DESC"
				}
				a[i] = fmt.Sprintf("%s(%s) WITHIN GROUP (ORDER BY %s%s)", f, frac, arg, dir)
			}
			if ag.Filter >= 0 {
				a[i] += fmt.Sprintf(" FILTER ($%d)", ag.Filter)
			}
		}
		d := fmt.Sprintf("HashAgg group by [%s] aggs [%s]", groupStr(n.GroupBy), strings.Join(a, ", "))
		if n.EOWC {
			d += " emit on window close"
		}
		return d
	case Join:
		s := fmt.Sprintf("HashJoin %s on left[%s] = right[%s]", n.JoinKind, groupStr(n.LeftKeys), groupStr(n.RightKeys))
		if n.AsOf {
			kind := "inner"
			if n.JoinKind == LeftJoin {
				kind = "left outer"
			}
			return fmt.Sprintf("AsOfJoin %s on left[%s] = right[%s] nearest %s", kind, groupStr(n.LeftKeys), groupStr(n.RightKeys), n.Cond)
		}
		if n.Cond != nil {
			s += " cond " + n.Cond.String()
		}
		if n.Temporal {
			s += " (lookup: right side as of processing time)"
		}
		if n.EOWC {
			s += " emit on window close"
		}
		return s
	case TemporalFilter:
		b := make([]string, len(n.TimeBounds))
		for i, t := range n.TimeBounds {
			b[i] = fmt.Sprintf("%s %s now()", colNames(n.Cols, []int{t.Col}), t.Op)
			switch {
			case t.Offset > 0:
				b[i] += " + " + time.Duration(t.Offset*1000).String()
			case t.Offset < 0:
				b[i] += " - " + time.Duration(-t.Offset*1000).String()
			}
		}
		return "TemporalFilter " + strings.Join(b, " AND ")
	case WindowMaxJoin:
		w := n.WinMax
		d := fmt.Sprintf("WindowMaxJoin $%d = max($%d) per tumble($%d, %s", w.Val, w.Val, w.Time, micros(w.Size))
		if w.Offset != 0 {
			d += ", offset " + micros(w.Offset)
		}
		return d + fmt.Sprintf(") where $%d - window_end in [%s, %s] output [%s]", w.Time, micros(w.Lo), micros(w.Hi), allColNames(n.Cols))
	case WindowTopCount:
		w := n.WinTop
		return fmt.Sprintf("WindowTopCount the most count(*) per [$%d] in each %s output [%s]", w.Key,
			w.Win.describe(nil), allColNames(n.Cols))
	case Union:
		return "Union all"
	case Materialize:
		if n.Key == nil {
			return fmt.Sprintf("Materialize %s", n.RelName)
		}
		return fmt.Sprintf("Materialize %s key [%s]", n.RelName, colNames(n.Cols, n.Key))
	case Sink:
		d := fmt.Sprintf("Sink %s (connector: %s, write_mode: %s", n.RelName, n.Sink.Connector, n.Sink.WriteMode)
		if n.Key != nil {
			d += ", primary_key: " + colNames(n.Cols, n.Key)
		}
		return d + ")"
	case UpsertKey:
		return fmt.Sprintf("UpsertKey key [%s]", colNames(n.Cols, n.Key))
	case TableFunc:
		if len(n.SetFuncs) > 0 {
			fs := make([]string, len(n.SetFuncs))
			for i, f := range n.SetFuncs {
				a := make([]string, len(f.Args))
				for j, e := range f.Args {
					a[j] = e.String()
				}
				fs[i] = fmt.Sprintf("%s(%s)", f.Name, strings.Join(a, ", "))
			}
			return "ProjectSet " + strings.Join(fs, ", ")
		}
		a := make([]string, len(n.Exprs))
		for i, e := range n.Exprs {
			a[i] = e.String()
		}
		return fmt.Sprintf("TableFunc %s(%s)", n.Func, strings.Join(a, ", "))
	case Window:
		o := make([]string, len(n.Order))
		for i, it := range n.Order {
			o[i] = fmt.Sprintf("$%d", it.Col)
			if it.Desc {
				o[i] += " desc"
			}
		}
		f := make([]string, len(n.WinFuncs))
		for i, w := range n.WinFuncs {
			f[i] = w.Func + "()"
			if cs := w.InputCols(); w.Arg >= 0 || len(w.Args) > 0 {
				a := make([]string, 0, len(cs))
				for _, c := range append([]int{w.Arg}, w.Args...) {
					if c >= 0 {
						a = append(a, fmt.Sprintf("$%d", c))
					}
				}
				f[i] = fmt.Sprintf("%s(%s)", w.Func, strings.Join(a, ", "))
			}
			if w.Frame != nil {
				f[i] += " " + w.Frame.describe()
			}
			if w.Rows {
				if w.Preceding < 0 {
					f[i] += " rows unbounded preceding"
				} else {
					f[i] += fmt.Sprintf(" rows %d preceding", w.Preceding)
				}
			}
		}
		d := fmt.Sprintf("Window %s partition [%s] order [%s]", strings.Join(f, ", "), colNames(n.Cols, n.PartitionBy), strings.Join(o, ", "))
		if n.Limit >= 0 {
			d += fmt.Sprintf(" keep %s <= %d", n.WinFuncs[n.LimitFunc].Func, n.Limit)
		}
		if n.EOWC {
			d += " emit on window close"
		}
		return d
	case TimeWindow:
		return n.TimeWin.describe(n.Cols)
	case TopN:
		o := make([]string, len(n.Order))
		for i, it := range n.Order {
			o[i] = fmt.Sprintf("$%d", it.Col)
			if it.Desc {
				o[i] += " desc"
			}
		}
		return fmt.Sprintf("TopN order [%s] limit %d offset %d", strings.Join(o, ", "), n.Limit, n.Offset)
	}
	return n.Kind.String()
}

func groupStr(idx []int) string {
	s := make([]string, len(idx))
	for i, c := range idx {
		s[i] = fmt.Sprintf("$%d", c)
	}
	return strings.Join(s, ", ")
}

// allColNames lists every column's name, comma-separated.
func allColNames(cols []types.Column) string {
	idx := make([]int, len(cols))
	for i := range idx {
		idx[i] = i
	}
	return colNames(cols, idx)
}

// InputCols returns the input columns call f reads (its argument, further
// arguments and RANGE bound columns).
func (f *WindowCall) InputCols() []int {
	var cs []int
	if f.Arg >= 0 {
		cs = append(cs, f.Arg)
	}
	cs = append(cs, f.Args...)
	if fr := f.Frame; fr != nil && fr.Mode == FrameRange {
		for _, b := range []FrameBound{fr.Start, fr.End} {
			if b.Kind == BoundPreceding || b.Kind == BoundFollowing {
				cs = append(cs, b.Col)
			}
		}
	}
	return cs
}

// MapCols renumbers the input columns call f reads through m.
func (f *WindowCall) MapCols(m func(int) int) {
	if f.Arg >= 0 {
		f.Arg = m(f.Arg)
	}
	for i := range f.Args {
		f.Args[i] = m(f.Args[i])
	}
	if fr := f.Frame; fr != nil && fr.Mode == FrameRange {
		for _, b := range []*FrameBound{&fr.Start, &fr.End} {
			if b.Kind == BoundPreceding || b.Kind == BoundFollowing {
				b.Col = m(b.Col)
			}
		}
	}
}

// describe prints an explicit frame for EXPLAIN.
func (fr *WindowFrame) describe() string {
	bound := func(b FrameBound) string {
		switch b.Kind {
		case BoundUnboundedPreceding:
			return "unbounded preceding"
		case BoundCurrentRow:
			return "current row"
		case BoundUnboundedFollowing:
			return "unbounded following"
		}
		dir := " preceding"
		if b.Kind == BoundFollowing {
			dir = " following"
		}
		if fr.Mode == FrameRange {
			return fmt.Sprintf("$%d%s", b.Col, dir)
		}
		return fmt.Sprintf("%d%s", b.Offset, dir)
	}
	s := [...]string{"rows", "range", "groups"}[fr.Mode] + " between " + bound(fr.Start) + " and " + bound(fr.End)
	if fr.Exclude != ExcludeNoOthers {
		s += " exclude " + [...]string{"", "current row", "group", "ties"}[fr.Exclude]
	}
	return s
}
