package job

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"sluice/exec/eval"
	"sluice/exec/flow"
	"sluice/exec/limit"
	"sluice/exec/ops"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// Shape is what a SELECT does with its plan's rows: ORDER BY, OFFSET,
// LIMIT, and the visible width (plans may carry hidden sort columns).
type Shape struct {
	Order  []spec.OrderItem
	Limit  int64 // -1: none
	Offset int64
	Width  int // rows longer than this are cut; 0: keep them whole
}

// Result is a batch plan being evaluated over a snapshot, its rows pulled
// with Next. Rows flow from the snapshot iterator to the caller with
// bounded memory when the plan is a chain of row-at-a-time operators over
// one input (a scan with filters and projections) and the query has no
// ORDER BY: the first rows are there at once, and a LIMIT stops the scan.
// ORDER BY … LIMIT n keeps a heap of OFFSET+n rows. Anything else (an
// ORDER BY without LIMIT, aggregates, joins, unions) is collected in
// memory first: the sort of a large result is not spilled.
//
// The snapshot must stay open until Close. A Result is used by one
// goroutine at a time; it may outlive the statement that opened it (a
// suspended portal, a cursor): its operators run under a context of their
// own, stopped by Close, and each Next call is cancelled by its own ctx.
type Result struct {
	plan   *spec.Plan
	snap   *storage.Snapshot
	ectx   *eval.Context
	base   context.Context // the opener's values, without its cancellation
	shape  Shape
	stream bool // rows pass through as they arrive

	run *run
	// guard is the statement's limits: it accounts the rows a collected
	// result holds (held is their total, given back at Close).
	guard *limit.Guard
	held  int64

	rows         []types.Row // collected result, sorted and cut
	at           int         // next row of rows
	materialized bool

	skipped, sent int64 // streaming: OFFSET rows skipped, rows returned
	done          bool
	buf           []types.Row
}

// run is one evaluation of the plan: its actors and their result channel.
type run struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	result chan flow.Msg

	mu  sync.Mutex
	err error // first operator error
}

// chunkRows bounds the rows one Next returns from a collected result.
const chunkRows = 1024

// Open starts evaluating plan over snap. Construction errors (an
// unsupported node, a bad table-function argument) are returned here;
// runtime errors come from Next.
func Open(parent context.Context, plan *spec.Plan, snap *storage.Snapshot, ectx *eval.Context, sh Shape) (*Result, error) {
	if ectx != nil && ectx.Guard == nil {
		// One memory account for the whole statement: the collected
		// result here and every run's operators (start derives their
		// guards from this one).
		c := *ectx
		c.Guard = limit.New(context.Background(), c.MemLimit)
		ectx = &c
	}
	r := &Result{plan: plan, snap: snap, ectx: ectx, base: context.WithoutCancel(parent), shape: sh, stream: chainPlan(plan)}
	if ectx != nil {
		r.guard = ectx.Guard
	}
	if sh.Limit == 0 {
		r.done = true // LIMIT 0: nothing to read
		return r, nil
	}
	if err := r.start(); err != nil {
		return nil, err
	}
	return r, nil
}

// Streams reports whether rows pass from the scan to the caller as they
// are read (no ORDER BY, and a plan of row-at-a-time operators).
func (r *Result) Streams() bool { return r.stream && len(r.shape.Order) == 0 }

// chainPlan reports whether plan is a chain of operators that pass each
// input row on independently (Filter, Project, TimeWindow) over one leaf
// (a scan, VALUES or a table function): its output needs no consolidation
// (no retractions) and comes in the same order on every run over the same
// snapshot, which lets a cursor rewind by running it again.
func chainPlan(plan *spec.Plan) bool {
	if len(plan.Nodes) == 0 {
		return false
	}
	for i, n := range plan.Nodes {
		switch n.Kind {
		case spec.Subscribe, spec.Values, spec.TableFunc:
			if i != 0 {
				return false
			}
		case spec.Filter, spec.Project, spec.TimeWindow:
			if len(n.Inputs) != 1 || n.Inputs[0] != i-1 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// start builds the plan's actors and starts them.
func (r *Result) start() error {
	ctx, cancel := context.WithCancel(r.base)
	ru := &run{ctx: ctx, cancel: cancel}
	ectx := withSubqueries(ctx, r.snap, r.ectx)
	errs := &ops.ErrorSink{Strict: true}
	plan := r.plan
	outs := make([]*flow.Output, len(plan.Nodes))
	var actors []*flow.Actor
	spans := seriesSpans(plan, ectx)
	for idx, n := range plan.Nodes {
		inputs := make([]chan flow.Msg, len(n.Inputs))
		for i, in := range n.Inputs {
			c := flow.NewChan()
			outs[in].Attach(c)
			inputs[i] = c
		}
		var op flow.Operator
		var err error
		switch n.Kind {
		case spec.Subscribe:
			inputs = []chan flow.Msg{closedChan()}
			if n.Lookup != nil {
				op, err = lookupOp(r.snap, n, ectx)
			} else if rows, ok := readRel(ectx, n.Rel, nil); ok {
				op = &ops.Subscribe{Backfill: rows}
			} else {
				op = &ops.Subscribe{Backfill: backfillFrom(r.snap, n.Rel)}
			}
		case spec.Values:
			inputs = []chan flow.Msg{closedChan()}
			rows := n.Rows
			op = &ops.Subscribe{Backfill: func(emit func(types.Row, int64) error) error {
				for _, r := range rows {
					if err := emit(r, 1); err != nil {
						return err
					}
				}
				return nil
			}}
		case spec.SourceRead:
			err = pgerror.Unsupported("cannot read source %q directly", n.Source.Name).
				WithHint("create a materialized view over it and query the view")
		case spec.TableFunc:
			if len(n.Inputs) > 0 { // a set-returning function in the select list
				op, err = ops.NewProjectSet(n, ectx, errs)
				break
			}
			inputs = []chan flow.Msg{closedChan()}
			sp, narrowed := spans[idx]
			op, err = tableFuncOp(n, ectx, sp, narrowed)
		case spec.TopN:
			op = ops.NewTopN(n)
		default:
			var ok bool
			if op, ok, err = newOp(plan, n, 0, nil, ectx, errs); !ok && err == nil {
				err = pgerror.Unsupported("%s in a query", n.Kind)
			}
			if err == nil && (n.Kind == spec.Join || n.Kind == spec.Window) {
				op = &heldInputs{op: op, guard: ectx.Guard}
			}
		}
		if err != nil {
			cancel()
			return err
		}
		a := &flow.Actor{Name: fmt.Sprintf("query/%d-%s", idx, n.Kind), Op: op, Inputs: inputs, Out: &flow.Output{}}
		outs[idx] = a.Out
		actors = append(actors, a)
	}
	ru.result = flow.NewChan()
	outs[len(outs)-1].Attach(ru.result)
	for _, a := range actors {
		a := a
		a.OnError = func(err error) {
			ru.mu.Lock()
			if ru.err == nil {
				ru.err = err
			}
			ru.mu.Unlock()
			cancel()
		}
		ru.wg.Add(1)
		go func() {
			defer ru.wg.Done()
			if err := a.Run(ctx); err != nil && ctx.Err() == nil {
				a.OnError(err)
			}
		}()
	}
	r.run = ru
	return nil
}

func closedChan() chan flow.Msg {
	c := make(chan flow.Msg)
	close(c)
	return c
}

// stop cancels the running actors and waits for them; it returns the
// first operator error.
func (ru *run) stop() error {
	ru.cancel()
	ru.wg.Wait()
	ru.mu.Lock()
	defer ru.mu.Unlock()
	if ru.err != nil {
		return unwrapActor(ru.err)
	}
	return nil
}

// recv returns the next data batch of the run, or nil at end of stream.
func (r *Result) recv(ctx context.Context) (*types.Batch, error) {
	ru := r.run
	for {
		select {
		case m := <-ru.result:
			switch m.Kind {
			case flow.MsgEOS:
				r.run = nil
				return nil, ru.stop()
			case flow.MsgData:
				return m.Batch, nil
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ru.ctx.Done():
			r.run = nil
			if err := ru.stop(); err != nil {
				return nil, err
			}
			return nil, pgerror.New(pgcode.Internal, "query stopped without a result")
		}
	}
}

// Next returns the next rows of the result, nil at its end. The slice is
// valid until the next call; the rows themselves are not reused. A
// cancelled ctx stops the call with ctx.Err(); after an error the Result
// is only good for Close (or Rewind).
func (r *Result) Next(ctx context.Context) ([]types.Row, error) {
	if r.done {
		return nil, nil
	}
	if !r.Streams() {
		if !r.materialized {
			if err := r.materialize(ctx); err != nil {
				return nil, err
			}
		}
		if r.at >= len(r.rows) {
			r.done = true
			return nil, nil
		}
		end := min(r.at+chunkRows, len(r.rows))
		out := r.rows[r.at:end]
		r.at = end
		return out, nil
	}
	for {
		b, err := r.recv(ctx)
		if err != nil {
			return nil, err
		}
		if b == nil {
			r.done = true
			return nil, nil
		}
		out := r.buf[:0]
		for i, row := range b.Rows {
			d := b.Diffs[i]
			if d < 0 {
				return nil, pgerror.New(pgcode.Internal, "negative multiplicity %d in a scan", d)
			}
			row = r.cut(row)
			for ; d > 0; d-- {
				if r.skipped < r.shape.Offset {
					r.skipped++
					continue
				}
				if r.shape.Limit >= 0 && r.sent >= r.shape.Limit {
					break
				}
				out = append(out, row)
				r.sent++
			}
		}
		r.buf = out
		if r.shape.Limit >= 0 && r.sent >= r.shape.Limit {
			// LIMIT reached: the scan stops here.
			r.done = true
			if r.run != nil {
				ru := r.run
				r.run = nil
				ru.stop()
			}
			if len(out) == 0 {
				return nil, nil
			}
		}
		if len(out) > 0 {
			return out, nil
		}
	}
}

func (r *Result) cut(row types.Row) types.Row {
	if w := r.shape.Width; w > 0 && len(row) > w {
		return row[:w]
	}
	return row
}

// materialize collects the whole result, then sorts and limits it.
func (r *Result) materialize(ctx context.Context) error {
	var rows []types.Row
	var err error
	switch {
	case !r.stream:
		rows, err = r.consolidate(ctx)
	case r.shape.Limit >= 0:
		rows, err = r.topK(ctx, r.shape.Offset+r.shape.Limit)
	default:
		rows, err = r.collect(ctx)
	}
	if err != nil {
		return err
	}
	if len(r.shape.Order) > 0 {
		if err := sortRows(ctx, rows, r.shape.Order); err != nil {
			return err
		}
	}
	if off := r.shape.Offset; off > 0 {
		if off >= int64(len(rows)) {
			rows = nil
		} else {
			rows = rows[off:]
		}
	}
	if l := r.shape.Limit; l >= 0 && l < int64(len(rows)) {
		rows = rows[:l]
	}
	for i, row := range rows {
		rows[i] = r.cut(row)
	}
	r.rows, r.at, r.materialized = rows, 0, true
	return nil
}

// consolidate sums the multiplicities of equal rows (plans with joins,
// aggregates and unions may send retractions) and expands them.
func (r *Result) consolidate(ctx context.Context) ([]types.Row, error) {
	acc := map[string]*rowCount{}
	var order []string
	var kbuf []byte
	for {
		b, err := r.recv(ctx)
		if err != nil {
			return nil, err
		}
		if b == nil {
			break
		}
		for i, row := range b.Rows {
			kbuf = types.EncodeRow(kbuf[:0], row)
			e := acc[string(kbuf)]
			if e == nil {
				if err := r.hold(limit.RowBytes(row) + int64(2*len(kbuf)) + 64); err != nil {
					return nil, err
				}
				e = &rowCount{row: row}
				acc[string(kbuf)] = e
				order = append(order, string(kbuf))
			}
			e.n += b.Diffs[i]
		}
	}
	var rows []types.Row
	for _, k := range order {
		e := acc[k]
		for i := int64(0); i < e.n; i++ {
			if len(rows)%limit.CheckEvery == limit.CheckEvery-1 {
				if err := r.hold(limit.CheckEvery * 24); err != nil {
					return nil, err
				}
			}
			rows = append(rows, e.row)
		}
	}
	return rows, nil
}

// collect gathers a chain plan's rows (ORDER BY without LIMIT: the sort
// needs them all).
func (r *Result) collect(ctx context.Context) ([]types.Row, error) {
	var rows []types.Row
	for {
		b, err := r.recv(ctx)
		if err != nil || b == nil {
			return rows, err
		}
		for i, row := range b.Rows {
			if err := r.hold(limit.RowBytes(row) * max(b.Diffs[i], 0)); err != nil {
				return nil, err
			}
			for d := b.Diffs[i]; d > 0; d-- {
				rows = append(rows, row)
			}
		}
	}
}

// topK keeps the first k rows in ORDER BY order of a chain plan's rows in
// a heap, so that ORDER BY … LIMIT n reads the whole input in bounded
// memory.
func (r *Result) topK(ctx context.Context, k int64) ([]types.Row, error) {
	h := &rowHeap{order: r.shape.Order}
	for {
		b, err := r.recv(ctx)
		if err != nil {
			return nil, err
		}
		if b == nil {
			break
		}
		for i, row := range b.Rows {
			for d := b.Diffs[i]; d > 0; d-- {
				switch {
				case int64(len(h.rows)) < k:
					if err := r.hold(limit.RowBytes(row)); err != nil {
						return nil, err
					}
					heap.Push(h, row)
				case ops.CompareOrder(row, h.rows[0], h.order) < 0:
					h.rows[0] = row
					heap.Fix(h, 0)
				}
			}
		}
	}
	return h.rows, nil
}

// rowHeap is a max-heap in ORDER BY order: its top is the row that leaves
// first when a better one comes.
type rowHeap struct {
	rows  []types.Row
	order []spec.OrderItem
}

func (h *rowHeap) Len() int           { return len(h.rows) }
func (h *rowHeap) Less(i, j int) bool { return ops.CompareOrder(h.rows[i], h.rows[j], h.order) > 0 }
func (h *rowHeap) Swap(i, j int)      { h.rows[i], h.rows[j] = h.rows[j], h.rows[i] }
func (h *rowHeap) Push(x any)         { h.rows = append(h.rows, x.(types.Row)) }
func (h *rowHeap) Pop() any {
	x := h.rows[len(h.rows)-1]
	h.rows = h.rows[:len(h.rows)-1]
	return x
}

// Rewind positions the result before its first row again, over the same
// snapshot: a collected result is read again from memory, a streamed one
// is evaluated again (a chain plan yields its rows in the same order).
func (r *Result) Rewind() error {
	if r.materialized {
		r.at, r.done = 0, false
		return nil
	}
	if r.shape.Limit == 0 {
		return nil
	}
	if r.run != nil {
		ru := r.run
		r.run = nil
		ru.stop()
	}
	r.skipped, r.sent, r.done = 0, 0, false
	return r.start()
}

// Close stops the evaluation. It does not release the snapshot, which
// belongs to the caller.
func (r *Result) Close() {
	if r.run != nil {
		ru := r.run
		r.run = nil
		ru.stop()
	}
	r.done = true
	r.rows = nil
	r.guard.Shrink(r.held)
	r.held = 0
}

// hold accounts n bytes of collected rows to the statement's budget.
func (r *Result) hold(n int64) error {
	if err := r.guard.Grow(n); err != nil {
		return err
	}
	r.held += n
	return nil
}

// sortRows sorts rows in ORDER BY order (stable, as ops.SortRows). A
// cancelled ctx is noticed between comparisons: the sort is abandoned
// (by a panic caught here, the one way out of slices.SortStableFunc) and
// the rows are left in some order.
func sortRows(ctx context.Context, rows []types.Row, order []spec.OrderItem) (err error) {
	done := ctx.Done()
	n := 0
	defer func() {
		if p := recover(); p != nil {
			if p != errSortCanceled {
				panic(p)
			}
			err = limit.ErrCanceled
		}
	}()
	slices.SortStableFunc(rows, func(a, b types.Row) int {
		if n++; n%limit.CheckEvery == 0 {
			select {
			case <-done:
				panic(errSortCanceled)
			default:
			}
		}
		return ops.CompareOrder(a, b, order)
	})
	return nil
}

var errSortCanceled = errors.New("sort canceled")
