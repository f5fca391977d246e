package server

import (
	"context"

	"sluice/exec/eval"
	"sluice/exec/spec"
	"sluice/planner"
	"sluice/sql/parser"
	"sluice/sql/types"
	"sluice/storage"
)

// insertValues builds the full-width rows of a planned INSERT: the
// VALUES rows or the query's rows in the target columns, every other
// column (and every DEFAULT) from the column's default, evaluated per row
// (nextval, now()). An explicit value for a GENERATED ALWAYS identity
// column is 428C9.
// The rows of INSERT … SELECT come from snap (nil: the latest committed
// snapshot).
func (e *Engine) insertValues(ctx context.Context, tw *tableWriter, ins *planner.Insert, ectx *eval.Context, snap *storage.Snapshot) ([]types.Row, error) {
	var rows []types.Row
	err := e.eachInsertRow(ctx, tw, ins, ectx, snap, func(r []types.Row) error {
		rows = append(rows, r...)
		return nil
	})
	return rows, err
}

// eachInsertRow calls f with the full-width rows of an INSERT, defaults
// filled, in order: an INSERT … SELECT's as its query gives them, so that
// they need not all be held at once.
func (e *Engine) eachInsertRow(ctx context.Context, tw *tableWriter, ins *planner.Insert, ectx *eval.Context, snap *storage.Snapshot, f func([]types.Row) error) error {
	tc := tw.constraints()
	width := len(ins.Table.Columns)
	defs, err := tc.defaultFns(ectx)
	if err != nil {
		return err
	}
	// alwaysErr refuses a value for a GENERATED ALWAYS column unless
	// OVERRIDING SYSTEM VALUE; with OVERRIDING USER VALUE, values for
	// identity columns are replaced by the sequence's.
	alwaysErr := func(c int) error {
		if tc.identity[c] == parser.IdentityAlways && ins.Overriding == "" {
			return tc.identityAlwaysErr(c, false)
		}
		return nil
	}
	// fill sets the columns no value was given for.
	fill := func(r types.Row, given []bool) error {
		for c := range r {
			if ins.Overriding == "user" && tc.identity[c] != "" {
				given[c] = false
			}
			if given[c] || defs[c] == nil {
				continue
			}
			d, err := defs[c](nil)
			if err != nil {
				return err
			}
			r[c] = d
		}
		return nil
	}
	if ins.Query != nil {
		for _, t := range ins.Targets {
			if err := alwaysErr(t); err != nil {
				return err
			}
		}
		given := make([]bool, width)
		for _, t := range ins.Targets {
			given[t] = true
		}
		// Each query row becomes its full-width row as it comes: the
		// query's rows are not all held beside the table's.
		return e.eachSelected(ctx, ins.Query, ectx, snap, func(src []types.Row) error {
			rows := make([]types.Row, len(src))
			for j, s := range src {
				r := make(types.Row, width)
				for i, t := range ins.Targets {
					r[t] = s[i]
				}
				if err := fill(r, given); err != nil {
					return err
				}
				rows[j] = r
			}
			return f(rows)
		})
	}
	var rows []types.Row
	for _, exprs := range ins.Rows {
		for i, x := range exprs {
			if x == nil {
				continue
			}
			if err := alwaysErr(ins.Targets[i]); err != nil {
				return err
			}
		}
	}
	for _, exprs := range ins.Rows {
		if err := ctx.Err(); err != nil {
			return err
		}
		r := make(types.Row, width)
		given := make([]bool, width)
		for i, x := range exprs {
			if x == nil {
				continue
			}
			given[ins.Targets[i]] = true
			if c, ok := x.(*spec.Const); ok {
				r[ins.Targets[i]] = c.D
				continue
			}
			fn, err := eval.Compile(x, ectx)
			if err != nil {
				return err
			}
			d, err := fn(nil)
			if err != nil {
				return err
			}
			r[ins.Targets[i]] = d
		}
		if err := fill(r, given); err != nil {
			return err
		}
		rows = append(rows, r)
	}
	return f(rows)
}

// returningRows evaluates a RETURNING list over the written rows.
func returningRows(ret *planner.Returning, rows []types.Row, ectx *eval.Context) ([]types.Row, error) {
	fns := make([]eval.Fn, len(ret.Exprs))
	for i, x := range ret.Exprs {
		fn, err := eval.Compile(x, ectx)
		if err != nil {
			return nil, err
		}
		fns[i] = fn
	}
	out := make([]types.Row, 0, len(rows))
	for _, r := range rows {
		o := make(types.Row, len(fns))
		for i, fn := range fns {
			d, err := fn(r)
			if err != nil {
				return nil, err
			}
			o[i] = d
		}
		out = append(out, o)
	}
	return out, nil
}

// copyDefaults reports whether a COPY into table tableID of the columns
// idx leaves out a column that has a default (which COPY must then fill).
func (s *session) copyDefaults(tableID uint64, idx []int) (bool, error) {
	tw, err := s.e.tableWriter(tableID)
	if err != nil {
		return false, err
	}
	tc := tw.constraints()
	given := make([]bool, len(tw.cols))
	for _, c := range idx {
		given[c] = true
	}
	for c, x := range tc.defaults {
		if x != nil && !given[c] {
			return true, nil
		}
	}
	return false, nil
}

// fillDefaults sets, in the full-width rows of table tableID that a
// COPY t (cols) FROM filled for the columns idx, every other column to
// its default, evaluated per row in row order (a serial column numbers
// the rows as they came), as PostgreSQL does. The rows then go to
// insertRows, which checks the constraints. (COPY writes the values it
// is given even to a GENERATED ALWAYS identity column, as PostgreSQL's
// COPY does.)
func (s *session) fillDefaults(tableID uint64, idx []int, rows []types.Row) error {
	tw, err := s.e.tableWriter(tableID)
	if err != nil {
		return err
	}
	tc := tw.constraints()
	given := make([]bool, len(tw.cols))
	for _, c := range idx {
		given[c] = true
	}
	defs, err := tc.defaultFns(s.evalCtx(nil))
	if err != nil {
		return err
	}
	for _, r := range rows {
		for c, fn := range defs {
			if !given[c] && fn != nil {
				if r[c], err = fn(nil); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
