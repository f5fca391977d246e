package eval

import (
	"time"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Time zones. A timestamptz is UTC microseconds; what depends on a zone
// (Context.Loc for the session's TimeZone, or the zone named in AT TIME
// ZONE) is done on the wall clock of that zone, as PostgreSQL does it:
// convert to local time, work on the timestamp, convert back (a wall
// clock that occurs twice takes the later offset, one that does not
// occur the earlier, see types.FromLocal).

// localToInstant is timestamp -> timestamptz in zone loc.
func localToInstant(loc *time.Location, local int64) (int64, error) {
	if !tsFinite(local) {
		return local, nil
	}
	r := types.FromLocal(loc, local)
	if !tsFinite(r) {
		return 0, errTimestampRange()
	}
	return r, nil
}

// instantToLocal is timestamptz -> timestamp in zone loc.
func instantToLocal(loc *time.Location, us int64) (int64, error) {
	if !tsFinite(us) {
		return us, nil
	}
	r := types.ToLocal(loc, us)
	if !tsFinite(r) {
		return 0, errTimestampRange()
	}
	return r, nil
}

// isUTC reports whether loc is UTC (nil included).
func isUTC(loc *time.Location) bool { return loc == nil || loc == time.UTC }

// tzPlusInterval is timestamptz + interval in zone loc: months, then
// days, on the wall clock (so a day across a DST change keeps the time of
// day), then the microseconds on the instant, as PostgreSQL's
// timestamptz_pl_interval.
func tzPlusInterval(loc *time.Location, t int64, months, days int32, us int64) (int64, error) {
	if isUTC(loc) || !tsFinite(t) || (months == 0 && days == 0) {
		return tsPlusInterval(t, months, days, us)
	}
	var err error
	for _, step := range [2][2]int32{{months, 0}, {0, days}} {
		if step[0] == 0 && step[1] == 0 {
			continue
		}
		local := types.ToLocal(loc, t)
		if local, err = tsPlusInterval(local, step[0], step[1], 0); err != nil {
			return 0, err
		}
		if t, err = localToInstant(loc, local); err != nil {
			return 0, err
		}
	}
	return tsPlusInterval(t, 0, 0, us)
}

// truncTimestampTZ is date_trunc on a timestamptz in zone loc: units of a
// day and more are truncated on the wall clock and read back in the zone;
// smaller units keep the value's offset (PostgreSQL's redotz).
func truncTimestampTZ(loc *time.Location, u unit, us int64, field string, t types.T) (int64, error) {
	if isUTC(loc) || !tsFinite(us) {
		return truncTimestamp(u, us, field, t)
	}
	off := types.ZoneOffset(loc, us) * usPerSec
	r, err := truncTimestamp(u, us+off, field, t)
	if err != nil {
		return 0, err
	}
	switch u {
	case uHour, uMinute, uSecond, uMillisecond, uMicrosecond:
		return r - off, nil
	}
	return localToInstant(loc, r)
}

// zoneArg compiles the zone argument of AT TIME ZONE / timezone(): a
// constant is read once. A text zone is a name, abbreviation or POSIX
// offset; an interval is hours east (no months or days).
func zoneArg(b *bctx, i int) func(types.Datum) (*time.Location, error) {
	read := func(d types.Datum) (*time.Location, error) {
		if d.K == types.KInterval {
			if d.M != 0 || d.X != 0 {
				return nil, pgerror.New(pgcode.InvalidParameterValue, "interval time zone \"%s\" must not include months or days", types.FormatText(d, types.TInterval))
			}
			loc, _ := types.FixedZoneISO(d.I / usPerSec)
			return loc, nil
		}
		return types.ParseAtZone(d.S)
	}
	if k, ok := b.konst(i); ok && k.K != types.KNull {
		loc, err := read(k)
		return func(types.Datum) (*time.Location, error) { return loc, err }
	}
	return read
}

// buildAtTimeZone builds timezone(zone, ts) (tz is the argument position
// of the zone; AT TIME ZONE's __pg_at_time_zone has it second): a
// timestamptz gives the wall clock in the zone, a timestamp the instant
// whose wall clock in the zone it is.
func buildAtTimeZone(zonePos, tsPos int) builder {
	return func(b *bctx) (Fn, error) {
		zone := zoneArg(b, zonePos)
		toLocal := b.args[tsPos].t.Fam == types.TimestampTZ
		return strict2(b.fn(zonePos), b.fn(tsPos), func(z, ts types.Datum) (types.Datum, error) {
			loc, err := zone(z)
			if err != nil {
				return types.Null, err
			}
			if toLocal {
				us, err := instantToLocal(loc, ts.I)
				return types.Datum{K: types.KTimestamp, I: us}, err
			}
			us, err := localToInstant(loc, ts.I)
			return types.Datum{K: types.KTimestampTZ, I: us}, err
		}), nil
	}
}

func init() {
	TX, TS, TZ, IV := types.Text, types.Timestamp, types.TimestampTZ, types.Interval
	for _, z := range []types.Family{TX, IV} {
		reg("timezone", fams(z, TZ), types.TTimestamp, buildAtTimeZone(0, 1))
		reg("timezone", fams(z, TS), types.TTimestampTZ, buildAtTimeZone(0, 1))
		reg("__pg_at_time_zone", fams(TZ, z), types.TTimestamp, buildAtTimeZone(1, 0))
		reg("__pg_at_time_zone", fams(TS, z), types.TTimestampTZ, buildAtTimeZone(1, 0))
	}
	// date_trunc(field, timestamptz, zone): truncated in the zone named.
	reg("date_trunc", fams(TX, TZ, TX), types.TTimestampTZ, func(b *bctx) (Fn, error) {
		zone := zoneArg(b, 2)
		st := b.args[1].t
		return strictN(argFns(b), func(v []types.Datum) (types.Datum, error) {
			f, ts, z := v[0], v[1], v[2]
			loc, err := zone(z)
			if err != nil {
				return types.Null, err
			}
			u, err := parseTruncUnit(f.S, st)
			if err != nil {
				return types.Null, err
			}
			r, err := truncTimestampTZ(loc, u, ts.I, f.S, st)
			return types.Datum{K: types.KTimestampTZ, I: r}, err
		}), nil
	})
}
