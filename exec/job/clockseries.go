package job

import (
	"context"
	"encoding/binary"
	"math"
	"strconv"
	"time"

	"sluice/exec/connector"
	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// clockSeries is the source of generate_series(start, now() [± off],
// step) in FROM of a view (spec.ClockSeriesConnector): the points start +
// k*step for k = 0, 1, …, each read once the clock reaches it (point <=
// now() + off), so the view's series grows as time passes, as the query
// evaluated again would. Its position is the next k, saved with each
// checkpoint like any replayable source's, so after a restart or a
// kill -9 the points come again from the last committed one: none lost,
// none doubled.
type clockSeries struct {
	start, step, off int64 // microseconds
	kind             types.Kind
	next             int64
	clock            func() int64
}

// newClockSeries reads the options the planner wrote (planner/tablefunc.go).
func newClockSeries(s *spec.SourceSpec, clock func() int64) (*clockSeries, error) {
	get := func(k string) (int64, error) {
		v, err := strconv.ParseInt(s.Options[k], 10, 64)
		if err != nil {
			return 0, pgerror.New(pgcode.Internal, "generate_series source: option %s %q", k, s.Options[k])
		}
		return v, nil
	}
	c := &clockSeries{kind: types.KTimestampTZ, clock: clock}
	var err error
	if c.start, err = get("start"); err != nil {
		return nil, err
	}
	if c.step, err = get("step"); err != nil {
		return nil, err
	}
	if c.off, err = get("offset"); err != nil {
		return nil, err
	}
	if c.step <= 0 {
		return nil, pgerror.New(pgcode.Internal, "generate_series source: step %d", c.step)
	}
	if len(s.Columns) == 1 && s.Columns[0].Type.Fam == types.Timestamp {
		c.kind = types.KTimestamp
	}
	if c.clock == nil {
		c.clock = func() int64 { return time.Now().UnixMicro() }
	}
	return c, nil
}

// point returns point k; ok is false past the last representable time.
func (c *clockSeries) point(k int64) (int64, bool) {
	if k > math.MaxInt64/c.step {
		return 0, false
	}
	ks := k * c.step
	if c.start > 0 && ks >= math.MaxInt64-c.start {
		return 0, false
	}
	return c.start + ks, true
}

// Read implements connector.Source: the points due by now, up to max.
func (c *clockSeries) Read(_ context.Context, b *types.Batch, max int) (int, error) {
	bound := c.clock()
	if c.off > 0 && bound > math.MaxInt64-c.off {
		bound = math.MaxInt64
	} else {
		bound += c.off
	}
	n := 0
	for n < max {
		p, ok := c.point(c.next)
		if !ok || p > bound {
			break
		}
		b.Add(types.Row{{K: c.kind, I: p}}, 1)
		c.next++
		n++
	}
	return n, nil
}

// Meter implements connector.Metered: the points due and not yet read.
func (c *clockSeries) Meter() connector.SourceMeter {
	due := c.clock() + c.off
	behind := int64(0)
	if p, ok := c.point(c.next); ok && p <= due {
		behind = (due-p)/c.step + 1
	}
	return connector.SourceMeter{Bytes: -1, Lag: []connector.PartitionLag{{Behind: behind}}}
}

// Close implements connector.Source.
func (c *clockSeries) Close() error { return nil }

// Position implements connector.Seekable.
func (c *clockSeries) Position() []byte { return binary.BigEndian.AppendUint64(nil, uint64(c.next)) }

// Seek implements connector.Seekable.
func (c *clockSeries) Seek(pos []byte) error {
	if len(pos) != 8 {
		return pgerror.New(pgcode.DataCorrupted, "corrupt generate_series position")
	}
	c.next = int64(binary.BigEndian.Uint64(pos))
	return nil
}
