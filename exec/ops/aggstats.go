package ops

import (
	"math"
	"math/big"
	"sort"
	"strconv"

	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// The statistical, bitwise and ordered-set aggregates, all maintained
// under insertions and retractions:
//
//   - stddev_samp, stddev_pop, var_samp, var_pop keep the count, the sum
//     and the sum of squares as exact decimals (acc.d, acc.d2), whatever
//     the input type, so a retraction subtracts exactly. Integer and
//     numeric inputs give numeric results computed as PostgreSQL's
//     numeric_stddev_internal does (same scales, same rounding); for that
//     the display scale of the sum must be the largest scale among the
//     current inputs, so acc.ext counts the inputs per scale. Float
//     inputs give the double nearest to the exact variance (PostgreSQL's
//     Youngs-Cramer sums depend on the input order, which a view does not
//     have; results agree to the last bit or two). acc.i counts NaN and
//     infinite inputs, which make the result NaN.
//   - bit_and, bit_or keep, per bit, how many inputs have it set
//     (acc.ext, 64 counts): bit_or has the bits of nonzero count, bit_and
//     those whose count is the number of inputs. bit_xor is its own
//     inverse (acc.i).
//   - percentile_cont, percentile_disc and mode keep the multiset of their
//     ordering argument, as min and max with retractions do (so large
//     multisets are stored entry by entry and spill like theirs), and read
//     it in order when the group changes.

// isStatsAgg reports whether f is one of the variance aggregates.
func isStatsAgg(f string) bool {
	switch f {
	case "stddev_samp", "stddev_pop", "var_samp", "var_pop":
		return true
	}
	return false
}

// isBitAgg reports whether f is bit_and, bit_or or bit_xor.
func isBitAgg(f string) bool {
	return f == "bit_and" || f == "bit_or" || f == "bit_xor"
}

// IsOrderedSetAgg reports whether f is an ordered-set aggregate (WITHIN
// GROUP (ORDER BY x)); each keeps the multiset of x.
func IsOrderedSetAgg(f string) bool {
	return f == "percentile_cont" || f == "percentile_disc" || f == "mode"
}

// hasExtState reports whether aggregate f's accumulator stores d2 and ext
// besides the common fields.
func hasExtState(f string) bool { return isStatsAgg(f) || f == "bit_and" || f == "bit_or" }

// floatDec is the exact decimal of the shortest text of a finite float.
func floatDec(f float64) (types.Datum, error) {
	return types.DecFromString(strconv.FormatFloat(f, 'g', -1, 64))
}

// updateStats applies diff copies of the non-null input v of a variance
// aggregate.
func updateStats(ac *acc, v types.Datum, diff int64) error {
	var x types.Datum
	switch v.K {
	case types.KInt:
		x = types.DecFromInt(v.I)
	case types.KFloat:
		if math.IsNaN(v.Float()) || math.IsInf(v.Float(), 0) {
			ac.i += diff
			return nil
		}
		var err error
		if x, err = floatDec(v.Float()); err != nil {
			return err
		}
	case types.KDecimal:
		if !types.DecIsFinite(v) {
			ac.i += diff
			return nil
		}
		x = v
		s, xs := int(v.X), ac.stats()
		if s >= len(xs.ext) {
			xs.ext = append(xs.ext, make([]int64, s+1-len(xs.ext))...)
		}
		xs.ext[s] += diff
	default:
		return pgerror.New(pgcode.DatatypeMismatch, "cannot compute the variance of values of this type")
	}
	x2, err := types.DecMul(x, x)
	if err != nil {
		return err
	}
	dd := types.DecFromInt(diff)
	if diff != 1 {
		if x, err = types.DecMul(x, dd); err != nil {
			return err
		}
		if x2, err = types.DecMul(x2, dd); err != nil {
			return err
		}
	}
	xs := ac.stats()
	if ac.dp == nil || ac.dp.K != types.KDecimal {
		ac.setD(types.NewDecimal(0, 0))
		xs.d2 = types.NewDecimal(0, 0)
	}
	sum, err := types.DecAdd(*ac.dp, x)
	if err != nil {
		return err
	}
	*ac.dp = sum
	xs.d2, err = types.DecAdd(xs.d2, x2)
	return err
}

// statsResult computes variance aggregate ag from its accumulator.
func statsResult(ac *acc, ag *spec.AggCall) (types.Datum, error) {
	sample := ag.Func == "stddev_samp" || ag.Func == "var_samp"
	root := ag.Func == "stddev_samp" || ag.Func == "stddev_pop"
	n := ac.n
	float := ag.T.Fam == types.Float8
	if n == 0 || (float && sample && n == 1) {
		return types.Null, nil
	}
	if ac.i > 0 {
		if float {
			return types.NewFloat(math.NaN()), nil
		}
		return types.DecNaN(), nil
	}
	if sample && n == 1 {
		return types.Null, nil
	}
	// The sums at the scale PostgreSQL's would have: the largest scale of
	// the inputs.
	scale := int32(0)
	for ext, s := ac.ext(), len(ac.ext())-1; s > 0; s-- {
		if ext[s] > 0 {
			scale = int32(s)
			break
		}
	}
	sumX, sumX2 := ac.d(), ac.d2()
	var err error
	if !float {
		if sumX, err = types.DecRound(sumX, scale); err != nil {
			return types.Null, err
		}
		if sumX2, err = types.DecRound(sumX2, 2*scale); err != nil {
			return types.Null, err
		}
	}
	N := types.DecFromInt(n)
	a, err := types.DecMul(N, sumX2)
	if err != nil {
		return types.Null, err
	}
	b, err := types.DecMul(sumX, sumX)
	if err != nil {
		return types.Null, err
	}
	num, err := types.DecSub(a, b)
	if err != nil {
		return types.Null, err
	}
	den := n * n
	if sample {
		den = n * (n - 1)
	}
	if float {
		if num.I <= 0 {
			return types.NewFloat(0), nil
		}
		q := new(big.Rat).SetFrac(types.DecCoef(num), new(big.Int).Mul(big.NewInt(den), pow10(int(num.X))))
		v, _ := q.Float64()
		if root {
			v = math.Sqrt(v)
		}
		return types.NewFloat(v), nil
	}
	if num.I <= 0 {
		// As PostgreSQL: a zero (or, by rounding, negative) numerator is 0.
		return types.NewDecimal(0, 0), nil
	}
	v, err := types.DecDiv(num, types.DecFromInt(den))
	if err != nil || !root {
		return v, err
	}
	return sqrtAtScale(v)
}

func pow10(k int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil) }

// sqrtAtScale is the square root of the positive decimal v at v's scale,
// rounded half away from zero (PostgreSQL's sqrt_var at rscale).
func sqrtAtScale(v types.Datum) (types.Datum, error) {
	// round(sqrt(c * 10^-s) * 10^s) = round(sqrt(c * 10^s)).
	m := new(big.Int).Mul(types.DecCoef(v), pow10(int(v.X)))
	q := new(big.Int).Sqrt(m)
	// Round up when m - q² > q (m integer: m ≥ (q+½)² ⇔ m > q² + q).
	r := new(big.Int).Sub(m, new(big.Int).Mul(q, q))
	if r.Cmp(q) > 0 {
		q.Add(q, big.NewInt(1))
	}
	return types.DecFromBig(q, int(v.X))
}

// updateBits applies diff copies of the non-null input v of bit_and,
// bit_or or bit_xor.
func updateBits(ac *acc, f string, v types.Datum, diff int64) {
	if f == "bit_xor" {
		if diff%2 != 0 {
			ac.i ^= v.I
		}
		return
	}
	xs := ac.stats()
	if len(xs.ext) < 64 {
		xs.ext = append(xs.ext, make([]int64, 64-len(xs.ext))...)
	}
	u := uint64(v.I)
	for b := 0; u != 0; b++ {
		if u&1 != 0 {
			xs.ext[b] += diff
		}
		u >>= 1
	}
}

// bitsResult computes bit_and, bit_or or bit_xor from its accumulator.
func bitsResult(ac *acc, f string) types.Datum {
	if ac.n == 0 {
		return types.Null
	}
	if f == "bit_xor" {
		return types.NewInt(ac.i)
	}
	var u uint64
	ext := ac.ext()
	for b := 0; b < len(ext) && b < 64; b++ {
		if (f == "bit_or" && ext[b] > 0) || (f == "bit_and" && ext[b] == ac.n) {
			u |= 1 << b
		}
	}
	return types.NewInt(int64(u))
}

// distinctAcc folds slot slot of multiset vs, each value once, into a
// fresh accumulator of a variance or bitwise aggregate.
func distinctAcc(ag *spec.AggCall, vs *vset, slot int) (acc, error) {
	var ac acc
	for _, e := range vs.m {
		if e.n[slot] == 0 {
			continue
		}
		ac.n++
		if isBitAgg(ag.Func) {
			updateBits(&ac, ag.Func, e.v, 1)
		} else if err := updateStats(&ac, e.v, 1); err != nil {
			return ac, err
		}
	}
	return ac, nil
}

// orderedSetResult computes percentile_cont, percentile_disc or mode from
// slot slot of the multiset of its ordering argument.
func orderedSetResult(ag *spec.AggCall, vs *vset, slot int) (types.Datum, error) {
	if ag.FracNull {
		return types.Null, nil
	}
	entries := make([]*setEntry, 0, len(vs.m))
	var total int64
	for _, e := range vs.m {
		if e.n[slot] > 0 {
			entries = append(entries, e)
			total += e.n[slot]
		}
	}
	if total == 0 {
		return types.Null, nil
	}
	desc := len(ag.Order) > 0 && ag.Order[0].Desc
	sort.Slice(entries, func(i, j int) bool {
		c := types.Compare(entries[i].v, entries[j].v)
		if desc {
			return c > 0
		}
		return c < 0
	})
	// at returns the value of 0-based row r of the sorted input.
	at := func(r int64) types.Datum {
		for _, e := range entries {
			if r < e.n[slot] {
				return e.v
			}
			r -= e.n[slot]
		}
		return entries[len(entries)-1].v
	}
	switch ag.Func {
	case "mode":
		// The first most frequent value in sort order, as PostgreSQL's
		// mode_final (a later value must be strictly more frequent).
		best := entries[0]
		for _, e := range entries[1:] {
			if e.n[slot] > best.n[slot] {
				best = e
			}
		}
		return best.v, nil
	case "percentile_disc":
		row := int64(math.Ceil(ag.Frac * float64(total)))
		if row < 1 {
			row = 1
		}
		return at(row - 1), nil
	}
	// percentile_cont: linear interpolation between the neighbouring rows.
	pos := ag.Frac * float64(total-1)
	first, second := int64(math.Floor(pos)), int64(math.Ceil(pos))
	lo := at(first)
	if first == second {
		return types.NewFloat(lo.Float()), nil
	}
	hi := at(second)
	return types.NewFloat(lo.Float() + (hi.Float()-lo.Float())*(pos-float64(first))), nil
}
