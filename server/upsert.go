package server

import (
	"context"
	"sort"

	"sluice/exec/eval"
	"sluice/exec/flow"
	"sluice/planner"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// This file runs INSERT ... ON CONFLICT. Each proposed row is checked
// (NOT NULL, CHECK) and looked up on the arbiter constraints: without a
// conflict it is inserted; with one, DO NOTHING skips it and DO UPDATE
// turns it into an update of the existing row (with EXCLUDED = the
// proposed row), as PostgreSQL does. The whole statement is one change,
// written like any other.

// arbiter is a unique constraint ON CONFLICT may resolve: the primary key
// (pk) or a UNIQUE constraint.
type arbiter struct {
	name string
	cols []int
	pk   bool
}

// arbiters resolves the conflict target to the constraints it names.
func (tw *tableWriter) arbiters(oc *planner.OnConflict) ([]arbiter, error) {
	tc := tw.constraints()
	var all []arbiter
	if tw.key != nil {
		all = append(all, arbiter{name: tw.name + "_pkey", cols: tw.key, pk: true})
	}
	for _, u := range tc.uniques {
		all = append(all, arbiter{name: u.name, cols: u.cols})
	}
	switch {
	case oc.Constraint != "":
		for _, a := range all {
			if a.name == oc.Constraint {
				return []arbiter{a}, nil
			}
		}
		return nil, pgerror.New(pgcode.UndefinedObject, "constraint %q for table %q does not exist", oc.Constraint, tw.name)
	case len(oc.Target) > 0:
		want := append([]int(nil), oc.Target...)
		sort.Ints(want)
		for _, a := range all {
			got := append([]int(nil), a.cols...)
			sort.Ints(got)
			if equalInts(got, want) {
				return []arbiter{a}, nil
			}
		}
		return nil, pgerror.New(pgcode.InvalidColumnReference, "there is no unique or exclusion constraint matching the ON CONFLICT specification")
	}
	return all, nil
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// upsert inserts rows with ON CONFLICT oc; it returns the number of rows
// inserted or updated and those rows (for RETURNING), in order.
func (s *session) upsert(ctx context.Context, tw *tableWriter, oc *planner.OnConflict, rows []types.Row, ectx *eval.Context) (int, []types.Row, error) {
	arbs, err := tw.arbiters(oc)
	if err != nil {
		return 0, nil, err
	}
	var sets map[int]eval.Fn
	var where func(types.Row) (bool, error)
	if !oc.DoNothing {
		if sets, err = tw.updateSets(oc.Sets, ectx); err != nil {
			return 0, nil, err
		}
		if oc.Where != nil {
			if where, err = eval.CompilePredicate(oc.Where, ectx); err != nil {
				return 0, nil, err
			}
		}
	}
	var written []types.Row
	n, err := s.dml(ctx, tw, func(tx *txn) (int, error) {
		var err error
		written, err = s.upsertRows(ctx, tx, tw, oc, rows, arbs, sets, where)
		return len(written), err
	})
	return n, written, err
}

// upsertRows is upsert's work in transaction tx; the caller holds tw.mu.
func (s *session) upsertRows(ctx context.Context, tx *txn, tw *tableWriter, oc *planner.OnConflict, rows []types.Row,
	arbs []arbiter, sets map[int]eval.Fn, where func(types.Row) (bool, error)) ([]types.Row, error) {
	e := s.e
	width := len(tw.cols)
	// overlay holds the rows this statement wrote, by write-set key (nil:
	// deleted); affected the keys of rows it inserted or updated.
	overlay := map[string]types.Row{}
	affected := map[string]bool{}
	current := func(k string) (types.Row, error) {
		if r, ok := overlay[k]; ok {
			return r, nil
		}
		return tx.get(tw, []byte(k))
	}
	// uniq maps, per non-primary-key arbiter, a key to the write-set key
	// of the row holding it.
	uniq := make([]map[string]string, len(arbs))
	needScan := false
	for i, a := range arbs {
		if !a.pk {
			uniq[i] = map[string]string{}
			needScan = true
		}
	}
	if needScan {
		err := tx.scan(tw, nil, nil, func(k []byte, r types.Row) error {
			for i, a := range arbs {
				if uniq[i] == nil {
					continue
				}
				if uk, ok := uniqueKey(r, a.cols); ok {
					uniq[i][uk] = string(k)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	index := func(k string, old, new types.Row) {
		for i, a := range arbs {
			if uniq[i] == nil {
				continue
			}
			if old != nil {
				if uk, ok := uniqueKey(old, a.cols); ok && uniq[i][uk] == k {
					delete(uniq[i], uk)
				}
			}
			if new != nil {
				if uk, ok := uniqueKey(new, a.cols); ok {
					uniq[i][uk] = k
				}
			}
		}
	}
	// conflict finds the row a proposed row conflicts with on an arbiter.
	conflict := func(r types.Row) (string, types.Row, error) {
		for i, a := range arbs {
			if a.pk {
				k := string(tw.wkey(r))
				cur, err := current(k)
				if err != nil || cur != nil {
					return k, cur, err
				}
				continue
			}
			uk, ok := uniqueKey(r, a.cols)
			if !ok {
				continue
			}
			if k, ok := uniq[i][uk]; ok {
				cur, err := current(k)
				if err != nil || cur != nil {
					return k, cur, err
				}
			}
		}
		return "", nil, nil
	}

	var written []types.Row
	for _, r := range rows {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := tw.check(r); err != nil {
			return nil, err
		}
		k, cur, err := conflict(r)
		if err != nil {
			return nil, err
		}
		if cur == nil {
			var nk string
			if tw.key == nil {
				tw.rowID++
				nk = string(storage.Key(storage.SpaceWrite, tw.id, flow.EncodeSeq(tw.rowID)))
			} else {
				nk = string(tw.wkey(r))
				if old, err := current(nk); err != nil {
					return nil, err
				} else if old != nil {
					return nil, dupKey(tw, r)
				}
			}
			overlay[nk] = r
			affected[nk] = true
			index(nk, nil, r)
			written = append(written, r)
			continue
		}
		if oc.DoNothing {
			continue
		}
		if affected[k] {
			return nil, pgerror.New(pgcode.CardinalityViolation, "ON CONFLICT DO UPDATE command cannot affect row a second time").
				WithHint("Ensure that no rows proposed for insertion within the same command have duplicate constrained values.")
		}
		both := make(types.Row, 0, 2*width)
		both = append(append(both, cur...), r...)
		if where != nil {
			ok, err := where(both)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		nr := cur.Copy()
		for c, fn := range sets {
			d, err := fn(both)
			if err != nil {
				return nil, err
			}
			nr[c] = d
		}
		if err := tw.check(nr); err != nil {
			return nil, err
		}
		nk := k
		if tw.key != nil {
			nk = string(tw.wkey(nr))
			if nk != k {
				if old, err := current(nk); err != nil {
					return nil, err
				} else if old != nil {
					return nil, dupKey(tw, nr)
				}
				overlay[k] = nil
			}
		}
		overlay[nk] = nr
		affected[nk] = true
		index(nk, cur, nr)
		written = append(written, nr)
	}
	// Every unique constraint, arbiter or not, holds over the result.
	var olds, news []types.Row
	for k, r := range overlay {
		old, err := tx.get(tw, []byte(k))
		if err != nil {
			return nil, err
		}
		olds, news = append(olds, old), append(news, r)
	}
	if err := e.checkUniques(tx, tw, olds, news); err != nil {
		return nil, err
	}
	for k, r := range overlay {
		if err := tx.put(tw, []byte(k), r); err != nil {
			return nil, err
		}
	}
	return written, nil
}
