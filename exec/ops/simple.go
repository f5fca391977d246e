package ops

import (
	"sync/atomic"

	"sluice/exec/eval"
	"sluice/exec/flow"
	"sluice/exec/spec"
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
	pred func(types.Row) (bool, error)
	errs *ErrorSink
}

// NewFilter compiles a filter.
func NewFilter(pred spec.Expr, ctx *eval.Context, errs *ErrorSink) (*Filter, error) {
	p, err := eval.CompilePredicate(pred, ctx)
	if err != nil {
		return nil, err
	}
	return &Filter{pred: p, errs: errs}, nil
}

// Process implements flow.Operator.
func (f *Filter) Process(_ int, b *types.Batch, out *flow.Emitter) error {
	for i, r := range b.Rows {
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

// Project computes new rows from expressions.
type Project struct {
	fns  []eval.Fn
	errs *ErrorSink
}

// NewProject compiles a projection.
func NewProject(exprs []spec.Expr, ctx *eval.Context, errs *ErrorSink) (*Project, error) {
	p := &Project{errs: errs}
	for _, e := range exprs {
		fn, err := eval.Compile(e, ctx)
		if err != nil {
			return nil, err
		}
		p.fns = append(p.fns, fn)
	}
	return p, nil
}

// Process implements flow.Operator.
func (p *Project) Process(_ int, b *types.Batch, out *flow.Emitter) error {
	for i, r := range b.Rows {
		nr := make(types.Row, len(p.fns))
		for j, fn := range p.fns {
			d, err := fn(r)
			if err != nil {
				if err := p.errs.handle(err); err != nil {
					return err
				}
				d = types.Null
			}
			nr[j] = d
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
type Union struct{}

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
}

// Start implements flow.Starter.
func (s *Subscribe) Start(out *flow.Emitter) error {
	if s.Backfill == nil {
		return nil
	}
	f := s.Backfill
	s.Backfill = nil
	return f(out.Emit)
}

// Process implements flow.Operator.
func (s *Subscribe) Process(in int, b *types.Batch, out *flow.Emitter) error {
	return Union{}.Process(in, b, out)
}

// Checkpoint implements flow.Operator.
func (s *Subscribe) Checkpoint(*flow.Barrier, *flow.Emitter) error { return nil }
