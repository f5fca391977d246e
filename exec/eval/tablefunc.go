package eval

import (
	"strings"

	"sluice/exec/limit"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file holds the set-returning functions a batch query may call in
// FROM (spec.TableFunc): generate_series, unnest and pg_options_to_table.

// tableFunc is one overload of a set-returning function.
type tableFunc struct {
	params []types.Family
	cols   []types.Column
	run    func(args []types.Datum) ([]types.Row, error)
	// stream, when set, yields the rows one by one instead (functions
	// whose output is not bounded by their input: generate_series);
	// it checks g between rows.
	stream func(g *limit.Guard, args []types.Datum, emit func(types.Row) error) error
}

var tableFuncs = map[string][]tableFunc{}

func init() {
	I4, I8, TA := types.Int4, types.Int8, types.TextArray
	for _, f := range []struct {
		fam types.Family
		t   types.T
	}{{I4, types.TInt4}, {I8, types.TInt8}} {
		cols := []types.Column{{Name: "generate_series", Type: f.t}}
		tableFuncs["generate_series"] = append(tableFuncs["generate_series"],
			tableFunc{params: fams(f.fam, f.fam), cols: cols, stream: generateSeries},
			tableFunc{params: fams(f.fam, f.fam, f.fam), cols: cols, stream: generateSeries})
	}
	tableFuncs["unnest"] = []tableFunc{{params: fams(TA), cols: []types.Column{{Name: "unnest", Type: types.TText}},
		run: func(args []types.Datum) ([]types.Row, error) {
			if args[0].K == types.KNull {
				return nil, nil
			}
			var out []types.Row
			var walk func(a []types.Datum)
			walk = func(a []types.Datum) {
				for _, e := range a {
					if e.K == types.KArray {
						walk(e.Elems())
						continue
					}
					out = append(out, types.Row{e})
				}
			}
			walk(args[0].Elems())
			return out, nil
		}}}
	tableFuncs["pg_options_to_table"] = []tableFunc{{params: fams(TA),
		cols: []types.Column{{Name: "option_name", Type: types.TText}, {Name: "option_value", Type: types.TText}},
		run: func(args []types.Datum) ([]types.Row, error) {
			if args[0].K == types.KNull {
				return nil, nil
			}
			out := make([]types.Row, 0, len(args[0].Elems()))
			for _, e := range args[0].Elems() {
				if e.K != types.KString {
					continue
				}
				k, v, ok := strings.Cut(e.S, "=")
				if !ok {
					out = append(out, types.Row{str(k), types.Null})
					continue
				}
				out = append(out, types.Row{str(k), str(v)})
			}
			return out, nil
		}}}
}

// generateSeries is generate_series(start, stop[, step]) over integers.
func generateSeries(g *limit.Guard, args []types.Datum, emit func(types.Row) error) error {
	for _, a := range args {
		if a.K == types.KNull {
			return nil
		}
	}
	start, stop, step := args[0].I, args[1].I, int64(1)
	if len(args) > 2 {
		step = args[2].I
	}
	if step == 0 {
		return pgerror.New(pgcode.InvalidParameterValue, "step size cannot equal zero")
	}
	n := 0
	for v := start; (step > 0 && v <= stop) || (step < 0 && v >= stop); v += step {
		if n++; n%limit.CheckEvery == 0 {
			if err := g.Err(); err != nil {
				return err
			}
		}
		if err := emit(types.Row{types.NewInt(v)}); err != nil {
			return err
		}
		if (step > 0 && v > stop-step) || (step < 0 && v < stop-step) {
			break // the next value would pass stop (or overflow)
		}
	}
	return nil
}

// ResolveTableFunc chooses the overload of the set-returning function name
// for arguments of the given types, as ResolveFunc does for scalar
// functions. It returns the function's output columns and the type each
// argument must be cast to. Unknown functions are 42883.
func ResolveTableFunc(name string, args []types.T) (cols []types.Column, argCasts []types.T, err error) {
	name = normName(name)
	ovs := tableFuncs[name]
	if len(ovs) == 0 {
		if _, scalar := registry[name]; scalar {
			return nil, nil, pgerror.Unsupported("function %s in FROM", name)
		}
		return nil, nil, notFound(name, args)
	}
	cands := make([][]types.Family, len(ovs))
	for i, ov := range ovs {
		if len(ov.params) == len(args) {
			cands[i] = ov.params
		}
	}
	ci, ambiguous := selectCandidate(cands, args, false)
	if ci < 0 {
		if ambiguous {
			return nil, nil, notUnique(name, args)
		}
		return nil, nil, notFound(name, args)
	}
	casts := make([]types.T, len(args))
	for i, p := range ovs[ci].params {
		casts[i] = castTarget(args[i], p)
	}
	return ovs[ci].cols, casts, nil
}

// rowBytes is what one generated row is counted as against the
// statement's memory budget when a function's rows are collected.
const rowBytes = 64

// RunTableFunc evaluates the set-returning function name over argument
// values already cast as ResolveTableFunc asked, and collects its rows:
// past the statement's memory budget (g) that is 53200.
func RunTableFunc(g *limit.Guard, name string, args []types.Datum, argTypes []types.T) ([]types.Row, error) {
	ov, err := findTableFunc(name, args, argTypes)
	if err != nil {
		return nil, err
	}
	if ov.stream == nil {
		return ov.run(args)
	}
	var out []types.Row
	err = ov.stream(g, args, func(r types.Row) error {
		if len(out)%limit.CheckEvery == 0 {
			if err := g.Fits(int64(len(out)+limit.CheckEvery) * rowBytes); err != nil {
				return err
			}
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// StreamTableFunc evaluates the set-returning function name as
// RunTableFunc does, handing its rows to emit as they are made; it stops
// at emit's first error, or when g is cancelled.
func StreamTableFunc(g *limit.Guard, name string, args []types.Datum, argTypes []types.T, emit func(types.Row) error) error {
	ov, err := findTableFunc(name, args, argTypes)
	if err != nil {
		return err
	}
	if ov.stream != nil {
		return ov.stream(g, args, emit)
	}
	rows, err := ov.run(args)
	if err != nil {
		return err
	}
	for i, r := range rows {
		if i%limit.CheckEvery == limit.CheckEvery-1 {
			if err := g.Err(); err != nil {
				return err
			}
		}
		if err := emit(r); err != nil {
			return err
		}
	}
	return nil
}

func findTableFunc(name string, args []types.Datum, argTypes []types.T) (*tableFunc, error) {
	name = normName(name)
	ovs := tableFuncs[name]
	for i, ov := range ovs {
		if len(ov.params) != len(args) {
			continue
		}
		match := true
		for i, p := range ov.params {
			if castTarget(argTypes[i], p) != argTypes[i] {
				match = false
				break
			}
		}
		if match {
			return &ovs[i], nil
		}
	}
	return nil, notFound(name, argTypes)
}

// IsTableFunc reports whether name is a set-returning function (and not
// also a scalar one).
func IsTableFunc(name string) bool {
	name = normName(name)
	_, scalar := registry[name]
	return len(tableFuncs[name]) > 0 && !scalar
}

func init() {
	for _, f := range []types.Family{types.Timestamp, types.TimestampTZ} {
		cols := []types.Column{{Name: "generate_series", Type: typeOf(f)}}
		kind := types.KTimestamp
		if f == types.TimestampTZ {
			kind = types.KTimestampTZ
		}
		tableFuncs["generate_series"] = append(tableFuncs["generate_series"], tableFunc{
			params: fams(f, f, types.Interval), cols: cols,
			stream: func(g *limit.Guard, args []types.Datum, emit func(types.Row) error) error {
				return generateTimeSeries(g, args, kind, emit)
			},
		})
	}
}

// generateTimeSeries is generate_series(start, stop, step) over
// timestamps, stepping by an interval as timestamp + interval does.
func generateTimeSeries(g *limit.Guard, args []types.Datum, kind types.Kind, emit func(types.Row) error) error {
	for _, a := range args {
		if a.K == types.KNull {
			return nil
		}
	}
	start, stop, step := args[0].I, args[1].I, args[2]
	dir := types.Compare(step, types.NewInterval(0, 0, 0))
	if dir == 0 {
		return pgerror.New(pgcode.InvalidParameterValue, "step size cannot equal zero")
	}
	n := 0
	for v := start; (dir > 0 && v <= stop) || (dir < 0 && v >= stop); {
		if n++; n%limit.CheckEvery == 0 {
			if err := g.Err(); err != nil {
				return err
			}
		}
		if err := emit(types.Row{types.Datum{K: kind, I: v}}); err != nil {
			return err
		}
		next, err := tsPlusInterval(v, step.M, step.X, step.I)
		if err != nil || next == v {
			break
		}
		v = next
	}
	return nil
}
