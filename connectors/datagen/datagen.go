// Package datagen is the built-in 'datagen' source connector: rows
// generated deterministically from their index, so the source is
// replayable (its position is the next index) and exact after recovery.
// Options follow RisingWave: fields.<col>.kind = 'sequence' (with .start,
// .end) or 'random' (with .min, .max, .seed, .length for text), and
// datagen.rows.per.second (0 = as fast as possible). A source whose
// sequence columns all have an end stops after the last row.
//
// It imports only exec/connector and the sql leaf packages.
package datagen

import (
	"context"
	"encoding/binary"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Factory is the datagen connector.
type Factory struct{}

func init() { connector.RegisterSource("datagen", Factory{}) }

type field struct {
	t        types.T
	sequence bool
	start    int64
	end      int64 // inclusive; math.MaxInt64 = unbounded
	min, max float64
	seed     uint64
	length   int
}

type config struct {
	fields []field
	rate   float64
	rows   int64 // total rows (bounded by sequence ends); -1 = unbounded
}

func parse(cfg connector.SourceConfig) (*config, error) {
	if len(cfg.Columns) == 0 {
		return nil, pgerror.New(pgcode.InvalidObjectDefinition, "a datagen source needs declared columns")
	}
	c := &config{rate: 10, rows: -1}
	get := func(k string) (string, bool) { v, ok := cfg.Options[k]; return v, ok }
	if v, ok := get("datagen.rows.per.second"); ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			return nil, connector.OptionError("datagen", "datagen.rows.per.second", "%q is not a non-negative number", v)
		}
		c.rate = f
	}
	known := map[string]bool{"connector": true, "datagen.rows.per.second": true, "datagen.split.num": true}
	bounded := false
	for i, col := range cfg.Columns {
		p := "fields." + col.Name + "."
		f := field{t: col.Type, end: math.MaxInt64, min: 0, max: 1000, seed: uint64(i + 1), length: 10}
		for _, k := range []string{"kind", "start", "end", "min", "max", "seed", "length", "max_past", "max_past_mode"} {
			known[p+k] = true
		}
		kind, _ := get(p + "kind")
		switch strings.ToLower(kind) {
		case "sequence":
			f.sequence = true
			if !col.Type.IsInteger() && col.Type.Fam != types.Numeric && col.Type.Fam != types.Float8 && col.Type.Fam != types.Float4 && !col.Type.IsString() {
				return nil, connector.OptionError("datagen", p+"kind", "sequence needs a numeric or text column, %s is %s", col.Name, col.Type)
			}
		case "", "random":
		default:
			return nil, connector.OptionError("datagen", p+"kind", "%q is not 'sequence' or 'random'", kind)
		}
		ints := map[string]*int64{"start": &f.start, "end": &f.end}
		for k, dst := range ints {
			if v, ok := get(p + k); ok {
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil {
					return nil, connector.OptionError("datagen", p+k, "%q is not an integer", v)
				}
				*dst = n
			}
		}
		floats := map[string]*float64{"min": &f.min, "max": &f.max}
		for k, dst := range floats {
			if v, ok := get(p + k); ok {
				n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					return nil, connector.OptionError("datagen", p+k, "%q is not a number", v)
				}
				*dst = n
			}
		}
		if v, ok := get(p + "seed"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return nil, connector.OptionError("datagen", p+"seed", "%q is not an integer", v)
			}
			f.seed = n
		}
		if v, ok := get(p + "length"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 || n > 1<<20 {
				return nil, connector.OptionError("datagen", p+"length", "%q is not a length", v)
			}
			f.length = n
		}
		if f.min > f.max {
			return nil, connector.OptionError("datagen", p+"min", "min %v is above max %v", f.min, f.max)
		}
		// Generated integers must fit the column: nothing downstream checks
		// them again (a smallint would wrap on the wire).
		if lo, hi, ok := intRange(col.Type.Fam); ok {
			switch {
			case f.sequence && (f.start < lo || f.start > hi):
				return nil, connector.OptionError("datagen", p+"start", "%d is out of range for type %s", f.start, col.Type)
			case f.sequence && f.end != math.MaxInt64 && f.end > hi:
				return nil, connector.OptionError("datagen", p+"end", "%d is out of range for type %s", f.end, col.Type)
			case !f.sequence && (f.min < float64(lo) || f.max > float64(hi)):
				return nil, connector.OptionError("datagen", p+"min", "[%v, %v] is out of range for type %s", f.min, f.max, col.Type)
			}
		}
		if f.sequence {
			if f.end < f.start {
				return nil, connector.OptionError("datagen", p+"end", "end %d is below start %d", f.end, f.start)
			}
			if f.end != math.MaxInt64 {
				n := f.end - f.start + 1
				if !bounded || n < c.rows {
					c.rows = n
				}
				bounded = true
			}
		}
		c.fields = append(c.fields, f)
	}
	for k := range cfg.Options {
		if !known[k] && k != "format" && k != "encode" {
			return nil, connector.OptionError("datagen", k, "unknown option")
		}
	}
	return c, nil
}

// Validate implements connector.SourceFactory.
func (Factory) Validate(cfg connector.SourceConfig) ([]types.Column, error) {
	if _, err := parse(cfg); err != nil {
		return nil, err
	}
	return cfg.Columns, nil
}

// Open implements connector.SourceFactory.
func (Factory) Open(_ context.Context, cfg connector.SourceConfig) (connector.Source, error) {
	c, err := parse(cfg)
	if err != nil {
		return nil, err
	}
	return &reader{cfg: c, started: time.Now()}, nil
}

type reader struct {
	cfg     *config
	next    int64 // index of the next row
	started time.Time
	base    int64 // index at started
}

// Read implements connector.Source.
func (r *reader) Read(_ context.Context, b *types.Batch, max int) (int, error) {
	if r.cfg.rows >= 0 && r.next >= r.cfg.rows {
		return 0, io.EOF
	}
	n := int64(max)
	if r.cfg.rate > 0 {
		allowed := r.base + int64(time.Since(r.started).Seconds()*r.cfg.rate) + 1
		if allowed-r.next < n {
			n = allowed - r.next
		}
	}
	if r.cfg.rows >= 0 && r.cfg.rows-r.next < n {
		n = r.cfg.rows - r.next
	}
	if n <= 0 {
		return 0, nil
	}
	for i := int64(0); i < n; i++ {
		b.Add(r.row(r.next), 1)
		r.next++
	}
	return int(n), nil
}

// Meter implements connector.Metered: the lag is the rows due by now (at
// the configured rate, within the row count) not yet generated.
func (r *reader) Meter() connector.SourceMeter {
	due := int64(-1)
	if r.cfg.rate > 0 {
		due = r.base + int64(time.Since(r.started).Seconds()*r.cfg.rate) + 1
	}
	if r.cfg.rows >= 0 && (due < 0 || due > r.cfg.rows) {
		due = r.cfg.rows
	}
	if due < 0 {
		return connector.SourceMeter{Bytes: -1} // unbounded, no rate: never behind
	}
	return connector.SourceMeter{Bytes: -1, Lag: []connector.PartitionLag{{Behind: max(0, due-r.next)}}}
}

// Row returns row idx of a datagen source (for tests and tools).
func (r *reader) row(idx int64) types.Row {
	row := make(types.Row, len(r.cfg.fields))
	for i := range r.cfg.fields {
		row[i] = r.cfg.fields[i].value(idx)
	}
	return row
}

func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

const baseMicros = 1704067200000000 // 2024-01-01 00:00:00 UTC

func (f *field) value(idx int64) types.Datum {
	if f.sequence {
		v := f.start + idx
		switch {
		case f.t.IsInteger():
			return types.NewInt(v)
		case f.t.Fam == types.Numeric:
			return types.DecFromInt(v)
		case f.t.IsString():
			return types.NewString(strconv.FormatInt(v, 10))
		default:
			return types.NewFloat(float64(v))
		}
	}
	h := mix(f.seed*0x100000001b3 ^ uint64(idx))
	u := float64(h>>11) / float64(1<<53) // [0,1)
	switch f.t.Fam {
	case types.Bool:
		return types.NewBool(h&1 == 1)
	case types.Int2, types.Int4, types.Int8:
		lo, hi := toInt(f.min), toInt(f.max)
		span := uint64(hi-lo) + 1
		if span == 0 { // the whole int64 range
			return types.NewInt(int64(h))
		}
		return types.NewInt(lo + int64(h%span))
	case types.Float4, types.Float8:
		return types.NewFloat(f.min + u*(f.max-f.min))
	case types.Numeric:
		d, _ := types.DecRound(types.NewDecimal(int64((f.min+u*(f.max-f.min))*100), 2), 2)
		return d
	case types.Text, types.Varchar:
		const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		b := make([]byte, f.length)
		x := h
		for i := range b {
			if i%10 == 9 {
				x = mix(x)
			}
			b[i] = letters[x%uint64(len(letters))]
			x /= uint64(len(letters))
		}
		return types.NewString(string(b))
	case types.Timestamp:
		return types.NewTimestamp(baseMicros + idx*1000000)
	case types.TimestampTZ:
		return types.NewTimestampTZ(baseMicros + idx*1000000)
	case types.Date:
		return types.NewDate(baseMicros/86400000000 + int64(h%3650))
	}
	return types.Null
}

// Position implements connector.Seekable.
func (r *reader) Position() []byte { return binary.BigEndian.AppendUint64(nil, uint64(r.next)) }

// Seek implements connector.Seekable.
func (r *reader) Seek(pos []byte) error {
	if len(pos) != 8 {
		return pgerror.New(pgcode.DataCorrupted, "bad datagen position")
	}
	r.next = int64(binary.BigEndian.Uint64(pos))
	r.base = r.next
	r.started = time.Now()
	return nil
}

// Close implements connector.Source.
func (r *reader) Close() error { return nil }

// intRange returns the range of the integer family f.
func intRange(f types.Family) (lo, hi int64, ok bool) {
	switch f {
	case types.Int2:
		return math.MinInt16, math.MaxInt16, true
	case types.Int4:
		return math.MinInt32, math.MaxInt32, true
	case types.Int8:
		return math.MinInt64, math.MaxInt64, true
	}
	return 0, 0, false
}

// toInt converts a bound to int64, saturating: float64 cannot hold
// math.MaxInt64, so '9223372036854775807' parses as 2^63.
func toInt(f float64) int64 {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}
