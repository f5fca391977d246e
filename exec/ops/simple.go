package ops

import (
	"sync/atomic"

	"sluice/exec/eval"
	"sluice/exec/flow"
	"sluice/exec/limit"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// ErrorSink counts runtime errors of a view (e.g. division by zero) that
// turned a value into NULL; Strict makes them errors instead (plain SELECT).
type ErrorSink struct {
	Strict bool
	Count  atomic.Int64
	Last   atomic.Value // string
}

func (s *ErrorSink) handle(err error) error {
	if s == nil || s.Strict {
		return err
	}
	s.Count.Add(1)
	s.Last.Store(err.Error())
	return nil
}

// Filter passes the rows for which Pred is true.
type Filter struct {
	pred  func(types.Row) (bool, error)
	errs  *ErrorSink
	guard *limit.Guard // the statement's, polled between rows (nil in views)
}

// rowsPerCheck is how many rows Filter and Project evaluate between two
// polls of the statement's cancellation: few enough that an expensive
// expression (numeric power, a big repeat) stops promptly.
const rowsPerCheck = 64

func guardOf(ctx *eval.Context) *limit.Guard {
	if ctx == nil {
		return nil
	}
	return ctx.Guard
}

// NewFilter compiles a filter.
func NewFilter(pred spec.Expr, ctx *eval.Context, errs *ErrorSink) (*Filter, error) {
	p, err := eval.CompilePredicate(pred, ctx)
	if err != nil {
		return nil, err
	}
	return &Filter{pred: p, errs: errs, guard: guardOf(ctx)}, nil
}

// Process implements flow.Operator.
func (f *Filter) Process(_ int, b *types.Batch, out *flow.Emitter) error {
	for i, r := range b.Rows {
		if i%rowsPerCheck == rowsPerCheck-1 {
			if err := f.guard.Err(); err != nil {
				return err
			}
		}
		ok, err := f.pred(r)
		if err != nil {
			if err := f.errs.handle(err); err != nil {
				return err
			}
			continue
		}
		if ok {
			if err := out.Emit(r, b.Diffs[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// Checkpoint implements flow.Operator.
func (f *Filter) Checkpoint(*flow.Barrier, *flow.Emitter) error { return nil }

// OnWatermark implements flow.WatermarkOp: a filter passes watermarks on.
func (f *Filter) OnWatermark(_ int, w flow.Watermark, _ *flow.Emitter) ([]flow.Watermark, error) {
	return []flow.Watermark{w}, nil
}

// Project computes new rows from expressions.
type Project struct {
	fns []eval.Fn
	// cols[j] ≥ 0: output column j is that input column as is, copied
	// without calling fns[j].
	cols []int
	errs *ErrorSink
	// passed maps an input column to the output columns that are that
	// column as is: where its watermarks go.
	passed map[int][]int
	// prefix: the output is the input's first len(fns) columns as they
	// are, so each output row is a slice of its input row (no copy).
	prefix bool
	guard  *limit.Guard // the statement's, polled between rows (nil in views)
	// Owned: no one else holds the input rows (a source's only reader,
	// directly or through filters: the job sets it), so an output row no
	// wider than its input row is written over it instead of being built
	// anew; scratch holds its values meanwhile (they read the input).
	Owned   bool
	scratch types.Row
}

// NewProject compiles a projection.
func NewProject(exprs []spec.Expr, ctx *eval.Context, errs *ErrorSink) (*Project, error) {
	p := &Project{errs: errs, passed: map[int][]int{}, prefix: true, guard: guardOf(ctx)}
	for i, e := range exprs {
		if r, ok := e.(*spec.ColRef); !ok || r.Idx != i {
			p.prefix = false
		}
		fn, err := eval.Compile(e, ctx)
		if err != nil {
			return nil, err
		}
		p.fns = append(p.fns, fn)
		col := -1
		if r, ok := e.(*spec.ColRef); ok {
			p.passed[r.Idx] = append(p.passed[r.Idx], i)
			col = r.Idx
		}
		p.cols = append(p.cols, col)
	}
	return p, nil
}

// OnWatermark implements flow.WatermarkOp: the watermark of an input
// column goes to every output column that passes it through, and is
// dropped if none does.
func (p *Project) OnWatermark(_ int, w flow.Watermark, _ *flow.Emitter) ([]flow.Watermark, error) {
	var out []flow.Watermark
	for _, c := range p.passed[w.Col] {
		out = append(out, flow.Watermark{Col: c, Ts: w.Ts})
	}
	return out, nil
}

// Process implements flow.Operator.
func (p *Project) Process(_ int, b *types.Batch, out *flow.Emitter) error {
	if n := len(p.fns); p.prefix {
		for i, r := range b.Rows {
			if len(r) < n {
				return pgerror.New(pgcode.Internal, "projection of %d columns over a row of %d", n, len(r))
			}
			if err := out.Emit(r[:n:n], b.Diffs[i]); err != nil {
				return err
			}
		}
		return nil
	}
	var alloc types.RowAlloc
	if p.Owned && p.scratch == nil {
		p.scratch = make(types.Row, len(p.fns))
	}
	for i, r := range b.Rows {
		if i%rowsPerCheck == rowsPerCheck-1 {
			if err := p.guard.Err(); err != nil {
				return err
			}
		}
		over := p.Owned && len(r) >= len(p.fns)
		var nr types.Row
		if over {
			nr = p.scratch
		} else {
			nr = alloc.Row(len(p.fns))
		}
		for j, fn := range p.fns {
			if c := p.cols[j]; c >= 0 && c < len(r) {
				nr[j] = r[c]
				continue
			}
			d, err := fn(r)
			if err != nil {
				if err := p.errs.handle(err); err != nil {
					return err
				}
				d = types.Null
			}
			nr[j] = d
		}
		if over {
			n := copy(r, nr)
			nr = r[:n:n]
		}
		if err := out.Emit(nr, b.Diffs[i]); err != nil {
			return err
		}
	}
	return nil
}

// Checkpoint implements flow.Operator.
func (p *Project) Checkpoint(*flow.Barrier, *flow.Emitter) error { return nil }

// Union passes every input through.
type Union struct {
	wm *flow.WatermarkMin
}

// NewUnion returns the union of n inputs.
func NewUnion(n int) Union { return Union{wm: flow.NewWatermarkMin(n)} }

// OnWatermark implements flow.WatermarkOp: a column's watermark is the
// minimum over the inputs.
func (u Union) OnWatermark(in int, w flow.Watermark, _ *flow.Emitter) ([]flow.Watermark, error) {
	if u.wm == nil {
		return nil, nil
	}
	if ts, ok := u.wm.Advance(in, w.Col, w.Ts); ok {
		return []flow.Watermark{{Col: w.Col, Ts: ts}}, nil
	}
	return nil, nil
}

// Process implements flow.Operator.
func (Union) Process(_ int, b *types.Batch, out *flow.Emitter) error {
	for i, r := range b.Rows {
		if err := out.Emit(r, b.Diffs[i]); err != nil {
			return err
		}
	}
	return nil
}

// Checkpoint implements flow.Operator.
func (Union) Checkpoint(*flow.Barrier, *flow.Emitter) error { return nil }

// Subscribe emits a relation's committed contents (the backfill) when it
// starts, then passes its input (the relation's changes) through.
type Subscribe struct {
	Backfill func(emit func(types.Row, int64) error) error
	// Width is the number of columns the job was planned with (0: any). A
	// table that gained columns since (ALTER TABLE ADD COLUMN) sends wider
	// rows; they are cut to the planned ones, which come first.
	Width int
}

// cut returns r limited to the planned columns.
func (s *Subscribe) cut(r types.Row) types.Row {
	if s.Width > 0 && len(r) > s.Width {
		return r[:s.Width:s.Width]
	}
	return r
}

// Start implements flow.Starter.
func (s *Subscribe) Start(out *flow.Emitter) error {
	if s.Backfill == nil {
		return nil
	}
	f := s.Backfill
	s.Backfill = nil
	return f(func(r types.Row, n int64) error { return out.Emit(s.cut(r), n) })
}

// Process implements flow.Operator.
func (s *Subscribe) Process(_ int, b *types.Batch, out *flow.Emitter) error {
	for i, r := range b.Rows {
		if err := out.Emit(s.cut(r), b.Diffs[i]); err != nil {
			return err
		}
	}
	return nil
}

// Checkpoint implements flow.Operator.
func (s *Subscribe) Checkpoint(*flow.Barrier, *flow.Emitter) error { return nil }

// OnWatermark implements flow.WatermarkOp: the relation's watermarks
// follow its backfill, which is emitted before any of them.
func (s *Subscribe) OnWatermark(_ int, w flow.Watermark, _ *flow.Emitter) ([]flow.Watermark, error) {
	return []flow.Watermark{w}, nil
}
