package eval

import (
	"math"
	"strconv"
	"strings"
	"time"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file holds date/time arithmetic and functions: the calendar (ported
// from Postgres' datetime.c so that results agree to the day), operators
// on dates, times, timestamps and intervals, extract/date_part,
// date_trunc, age, make_*, now() and friends. The session time zone is
// UTC: timestamptz and timestamp share their arithmetic.

const (
	unixEpochJD = 2440588 // Julian day of 1970-01-01
	usPerSec    = 1000000
	usPerMinute = 60 * usPerSec
	usPerHour   = 60 * usPerMinute

	// Valid dates, in days since 1970-01-01: Julian day 0 up to
	// 5874897-12-31. Values outside are ±infinity.
	minDate = -unixEpochJD
	maxDate = 2147483494 - unixEpochJD - 1
	// Valid timestamps start at Julian day 0.
	minTimestamp = -unixEpochJD * int64(usPerDay)
)

// Dates from endTimestampDate on do not fit a timestamp: sql/types keeps
// timestamps up to 294246-12-31 23:59:59.999999 so that every value fits
// the int64 microseconds of both epochs. Values outside the valid ranges
// are ±infinity (math.MaxInt64 / math.MinInt64).
var (
	endTimestampDate = int64(date2j(294247, 1, 1) - unixEpochJD)
	maxTimestamp     = endTimestampDate*usPerDay - 1
)

func errDateRange() error { return pgerror.New(pgcode.DatetimeFieldOverflow, "date out of range") }

func errTimestampRange() error {
	return pgerror.New(pgcode.DatetimeFieldOverflow, "timestamp out of range")
}

func errIntervalRange() error {
	return pgerror.New(pgcode.DatetimeFieldOverflow, "interval out of range")
}

func dateFinite(d int64) bool { return d >= minDate && d <= maxDate }

func tsFinite(t int64) bool { return t >= minTimestamp && t <= maxTimestamp }

// dateToTimestamp converts days to microseconds; infinite dates give
// infinite timestamps.
func dateToTimestamp(days int64) (int64, error) {
	switch {
	case days < minDate:
		return math.MinInt64, nil
	case days > maxDate:
		return math.MaxInt64, nil
	case days >= endTimestampDate:
		return 0, pgerror.New(pgcode.DatetimeFieldOverflow, "date out of range for timestamp")
	}
	return days * usPerDay, nil
}

// date2j is Postgres' date2j: the Julian day of a (proleptic Gregorian,
// astronomical-year) date.
func date2j(y, m, d int) int {
	if m > 2 {
		m++
		y += 4800
	} else {
		m += 13
		y += 4799
	}
	century := y / 100
	julian := y*365 - 32167
	julian += y/4 - century + century/4
	julian += 7834*m/256 + d
	return julian
}

// j2date is Postgres' j2date.
func j2date(jd int) (y, m, d int) {
	julian := uint32(jd)
	julian += 32044
	quad := julian / 146097
	extra := (julian-quad*146097)*4 + 3
	julian += 60 + quad*3 + extra/146097
	quad = julian / 1461
	julian -= quad * 1461
	yy := int(julian * 4 / 1461)
	if yy != 0 {
		julian = (julian+305)%365 + 123
	} else {
		julian = (julian+306)%366 + 123
	}
	yy += int(quad * 4)
	y = yy - 4800
	quad = julian * 2141 / 65536
	d = int(julian - 7834*quad/256)
	m = int((quad+10)%12 + 1)
	return
}

// j2day returns the day of the week of a Julian day, 0 = Sunday.
func j2day(jd int) int {
	d := (jd + 1) % 7
	if d < 0 {
		d += 7
	}
	return d
}

func isLeap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

var dayTab = [2][12]int{
	{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31},
	{31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31},
}

func daysIn(y, m int) int {
	if isLeap(y) {
		return dayTab[1][m-1]
	}
	return dayTab[0][m-1]
}

// ptm is a broken-down time (Postgres' pg_tm plus fsec); year is
// astronomical (0 = 1 BC).
type ptm struct {
	year, mon, mday, hour, min, sec int
	fsec                            int64
}

func ts2tm(us int64) ptm {
	days := floorDiv(us, usPerDay)
	tod := us - days*usPerDay
	y, m, d := j2date(int(days) + unixEpochJD)
	return ptm{
		year: y, mon: m, mday: d,
		hour: int(tod / usPerHour), min: int(tod / usPerMinute % 60), sec: int(tod / usPerSec % 60),
		fsec: tod % usPerSec,
	}
}

func tm2ts(t ptm) (int64, error) {
	jd := int64(date2j(t.year, t.mon, t.mday)) - unixEpochJD
	if jd < minDate || jd >= endTimestampDate {
		return 0, errTimestampRange()
	}
	tod := int64(t.hour)*usPerHour + int64(t.min)*usPerMinute + int64(t.sec)*usPerSec + t.fsec
	r := jd*usPerDay + tod
	if !tsFinite(r) {
		return 0, errTimestampRange()
	}
	return r, nil
}

// tsPlusInterval is Postgres' timestamp_pl_interval: months first (with
// end-of-month clamping), then days, then microseconds.
func tsPlusInterval(t int64, months, days int32, us int64) (int64, error) {
	if !tsFinite(t) {
		return t, nil
	}
	if months != 0 {
		tm := ts2tm(t)
		mon := tm.mon + int(months)
		if mon > 12 {
			tm.year += (mon - 1) / 12
			tm.mon = (mon-1)%12 + 1
		} else if mon < 1 {
			tm.year += mon/12 - 1
			tm.mon = mon%12 + 12
		} else {
			tm.mon = mon
		}
		if dim := daysIn(tm.year, tm.mon); tm.mday > dim {
			tm.mday = dim
		}
		var err error
		if t, err = tm2ts(tm); err != nil {
			return 0, err
		}
	}
	if days != 0 {
		tm := ts2tm(t)
		jd := date2j(tm.year, tm.mon, tm.mday) + int(days)
		tm.year, tm.mon, tm.mday = j2date(jd)
		var err error
		if t, err = tm2ts(tm); err != nil {
			return 0, err
		}
	}
	r, ok := add64(t, us)
	if !ok || !tsFinite(r) {
		return 0, errTimestampRange()
	}
	return r, nil
}

// justifyHours moves whole days out of the time part (justify_hours).
func justifyHours(days int64, us int64) (int64, int64) {
	whole := us / usPerDay
	us -= whole * usPerDay
	days += whole
	if days > 0 && us < 0 {
		us += usPerDay
		days--
	} else if days < 0 && us > 0 {
		us -= usPerDay
		days++
	}
	return days, us
}

func interval(months, days int64, us int64) (types.Datum, error) {
	if months < math.MinInt32 || months > math.MaxInt32 || days < math.MinInt32 || days > math.MaxInt32 {
		return types.Null, errIntervalRange()
	}
	return types.NewInterval(int32(months), int32(days), us), nil
}

func intervalNeg(a types.Datum) (types.Datum, error) {
	if a.I == math.MinInt64 || a.M == math.MinInt32 || a.X == math.MinInt32 {
		return types.Null, errIntervalRange()
	}
	return types.NewInterval(-a.M, -a.X, -a.I), nil
}

func intervalAdd(a, c types.Datum, sign int64) (types.Datum, error) {
	us, ok := add64(a.I, sign*c.I)
	if !ok || (sign < 0 && c.I == math.MinInt64) {
		return types.Null, errIntervalRange()
	}
	return interval(int64(a.M)+sign*int64(c.M), int64(a.X)+sign*int64(c.X), us)
}

// tsRound is Postgres' TSROUND: round to microsecond precision.
func tsRound(x float64) float64 { return math.RoundToEven(x*1e6) / 1e6 }

// intervalMul is Postgres' interval_mul (and interval_div with 1/factor
// semantics handled by the caller passing div).
func intervalMul(span types.Datum, factor float64, div bool) (types.Datum, error) {
	if div && factor == 0 {
		return types.Null, errDivZero()
	}
	scale := func(v float64) float64 {
		if div {
			return v / factor
		}
		return v * factor
	}
	fits32 := func(v float64) bool { return !math.IsNaN(v) && v >= math.MinInt32 && v < math.MaxInt32+1.0 }
	rm := scale(float64(span.M))
	if !fits32(rm) {
		return types.Null, errIntervalRange()
	}
	month := int32(rm)
	rd := scale(float64(span.X))
	if !fits32(rd) {
		return types.Null, errIntervalRange()
	}
	day := int64(int32(rd))
	monthRemDays := tsRound((scale(float64(span.M)) - float64(month)) * 30)
	secRem := tsRound((scale(float64(span.X)) - float64(day) + monthRemDays - float64(int64(monthRemDays))) * 86400)
	if math.Abs(secRem) >= 86400 {
		day += int64(secRem / 86400)
		secRem -= float64(int64(secRem/86400)) * 86400
	}
	day += int64(monthRemDays)
	rt := math.RoundToEven(scale(float64(span.I)) + secRem*1e6)
	if math.IsNaN(rt) || rt < math.MinInt64 || rt >= math.MaxInt64 {
		return types.Null, errIntervalRange()
	}
	return interval(int64(month), day, int64(rt))
}

// dateTimeOps registers the date/time operators.
func dateTimeOps() {
	D, T, TS, TZ, IV, I4, F8 := types.Date, types.Time, types.Timestamp, types.TimestampTZ, types.Interval, types.Int4, types.Float8

	datePlusInt := func(d, n int64) (types.Datum, error) {
		if !dateFinite(d) {
			return types.NewDate(d), nil
		}
		r := d + n
		if !dateFinite(r) {
			return types.Null, errDateRange()
		}
		return types.NewDate(r), nil
	}
	reg("+", fams(D, I4), types.TDate, build2(func(a, c types.Datum) (types.Datum, error) { return datePlusInt(a.I, c.I) }))
	reg("+", fams(I4, D), types.TDate, build2(func(a, c types.Datum) (types.Datum, error) { return datePlusInt(c.I, a.I) }))
	reg("-", fams(D, I4), types.TDate, build2(func(a, c types.Datum) (types.Datum, error) { return datePlusInt(a.I, -c.I) }))
	reg("-", fams(D, D), types.TInt4, build2(func(a, c types.Datum) (types.Datum, error) {
		if !dateFinite(a.I) || !dateFinite(c.I) {
			return types.Null, pgerror.New(pgcode.DatetimeFieldOverflow, "cannot subtract infinite dates")
		}
		return intD(a.I - c.I), nil
	}))

	for _, p := range []struct {
		f   types.Family
		ret types.T
	}{{D, types.TTimestamp}, {TS, types.TTimestamp}, {TZ, types.TTimestampTZ}} {
		reg("+", fams(p.f, IV), p.ret, buildTsInterval(0, 1, 1))
		reg("+", fams(IV, p.f), p.ret, buildTsInterval(1, 0, 1))
		reg("-", fams(p.f, IV), p.ret, buildTsInterval(0, 1, -1))
	}
	swap := func(f func(a, c types.Datum) (types.Datum, error)) func(a, c types.Datum) (types.Datum, error) {
		return func(a, c types.Datum) (types.Datum, error) { return f(c, a) }
	}
	dateTime := func(d, t types.Datum) (types.Datum, error) {
		us, err := dateToTimestamp(d.I)
		if err != nil || !tsFinite(us) {
			return types.NewTimestamp(us), err
		}
		r, ok := add64(us, t.I)
		if !ok || !tsFinite(r) {
			return types.Null, errTimestampRange()
		}
		return types.NewTimestamp(r), nil
	}
	reg("+", fams(D, T), types.TTimestamp, build2(dateTime))
	reg("+", fams(T, D), types.TTimestamp, build2(swap(dateTime)))
	tsMinus := func(a, c types.Datum) (types.Datum, error) {
		if !tsFinite(a.I) || !tsFinite(c.I) {
			return types.Null, pgerror.New(pgcode.DatetimeFieldOverflow, "cannot subtract infinite timestamps")
		}
		d, ok := add64(a.I, -c.I)
		if !ok {
			return types.Null, errIntervalRange()
		}
		days, us := justifyHours(0, d)
		return interval(0, days, us)
	}
	reg("-", fams(TS, TS), types.TInterval, build2(tsMinus))
	reg("-", fams(TZ, TZ), types.TInterval, build2(tsMinus))
	timePlus := func(t, iv types.Datum, sign int64) (types.Datum, error) {
		r := (t.I + sign*(iv.I%usPerDay)) % usPerDay
		if r < 0 {
			r += usPerDay
		}
		return types.NewTime(r), nil
	}
	reg("+", fams(T, IV), types.TTime, build2(func(a, c types.Datum) (types.Datum, error) { return timePlus(a, c, 1) }))
	reg("+", fams(IV, T), types.TTime, build2(func(a, c types.Datum) (types.Datum, error) { return timePlus(c, a, 1) }))
	reg("-", fams(T, IV), types.TTime, build2(func(a, c types.Datum) (types.Datum, error) { return timePlus(a, c, -1) }))
	reg("-", fams(T, T), types.TInterval, build2(func(a, c types.Datum) (types.Datum, error) {
		return types.NewInterval(0, 0, a.I-c.I), nil
	}))
	reg("+", fams(IV, IV), types.TInterval, build2(func(a, c types.Datum) (types.Datum, error) { return intervalAdd(a, c, 1) }))
	reg("-", fams(IV, IV), types.TInterval, build2(func(a, c types.Datum) (types.Datum, error) { return intervalAdd(a, c, -1) }))
	reg("*", fams(IV, F8), types.TInterval, build2(func(a, c types.Datum) (types.Datum, error) { return intervalMul(a, c.Float(), false) }))
	reg("*", fams(F8, IV), types.TInterval, build2(func(a, c types.Datum) (types.Datum, error) { return intervalMul(c, a.Float(), false) }))
	reg("/", fams(IV, F8), types.TInterval, build2(func(a, c types.Datum) (types.Datum, error) { return intervalMul(a, c.Float(), true) }))
}

// buildTsInterval builds date/timestamp ± interval; ts and iv are the
// argument positions, sign is -1 for subtraction. It evaluates on int64
// microseconds, and with a constant interval of microseconds only (the
// usual "ts - INTERVAL '4' SECOND") it is one checked addition.
func buildTsInterval(ts, iv int, sign int64) builder {
	return func(b *bctx) (Fn, error) {
		isDate := b.args[ts].t.Fam == types.Date
		ctx := b.ctx
		plus := tsPlusInterval
		if b.args[ts].t.Fam == types.TimestampTZ {
			plus = func(t int64, months, days int32, us int64) (int64, error) {
				return tzPlusInterval(ctx.loc(), t, months, days, us)
			}
		}
		x := b.args[ts].ints()
		toTS := func(v int64) (int64, error) {
			if isDate {
				return dateToTimestamp(v)
			}
			return v, nil
		}
		if k, ok := b.konst(iv); ok && k.K != types.KNull {
			if sign < 0 {
				var err error
				if k, err = intervalNeg(k); err != nil {
					return nil, err
				}
			}
			months, days, us := k.M, k.X, k.I
			b.ifn = func(row types.Row) (int64, bool, error) {
				v, null, err := x(row)
				if err != nil || null {
					return 0, null, err
				}
				if v, err = toTS(v); err != nil {
					return 0, false, err
				}
				if months == 0 && days == 0 && tsFinite(v) {
					r, ok := add64(v, us)
					if !ok || !tsFinite(r) {
						return 0, false, errTimestampRange()
					}
					return r, false, nil
				}
				r, err := plus(v, months, days, us)
				return r, false, err
			}
			return nil, nil
		}
		y := b.fn(iv)
		b.ifn = func(row types.Row) (int64, bool, error) {
			v, null, err := x(row)
			if err != nil {
				return 0, false, err
			}
			d, err := y(row)
			if err != nil || null || d.K == types.KNull {
				return 0, null || d.K == types.KNull, err
			}
			if v, err = toTS(v); err != nil {
				return 0, false, err
			}
			if sign < 0 {
				if d, err = intervalNeg(d); err != nil {
					return 0, false, err
				}
			}
			r, err := plus(v, d.M, d.X, d.I)
			return r, false, err
		}
		return nil, nil
	}
}

// Units of extract, date_part and date_trunc.
type unit uint8

const (
	uInvalid unit = iota
	uMicrosecond
	uMillisecond
	uSecond
	uMinute
	uHour
	uDay
	uWeek
	uMonth
	uQuarter
	uYear
	uDecade
	uCentury
	uMillennium
	uEpoch
	uDow
	uIsodow
	uDoy
	uIsoyear
	uJulian
	uTimezone
	uTimezoneHour
	uTimezoneMinute
)

var unitNames = map[string]unit{
	"microsecond": uMicrosecond, "microseconds": uMicrosecond, "microsecon": uMicrosecond, "us": uMicrosecond,
	"usec": uMicrosecond, "usecs": uMicrosecond, "useconds": uMicrosecond,
	"millisecond": uMillisecond, "milliseconds": uMillisecond, "millisecon": uMillisecond, "ms": uMillisecond,
	"msec": uMillisecond, "msecs": uMillisecond, "mseconds": uMillisecond,
	"second": uSecond, "seconds": uSecond, "s": uSecond, "sec": uSecond, "secs": uSecond,
	"minute": uMinute, "minutes": uMinute, "m": uMinute, "min": uMinute, "mins": uMinute,
	"hour": uHour, "hours": uHour, "h": uHour, "hr": uHour, "hrs": uHour,
	"day": uDay, "days": uDay, "d": uDay,
	"week": uWeek, "weeks": uWeek, "w": uWeek,
	"month": uMonth, "months": uMonth, "mon": uMonth, "mons": uMonth,
	"quarter": uQuarter, "qtr": uQuarter,
	"year": uYear, "years": uYear, "y": uYear, "yr": uYear, "yrs": uYear,
	"decade": uDecade, "decades": uDecade, "dec": uDecade, "decs": uDecade,
	"century": uCentury, "centuries": uCentury, "c": uCentury, "cent": uCentury,
	"millennium": uMillennium, "millennia": uMillennium, "mil": uMillennium, "mils": uMillennium,
	"epoch": uEpoch, "dow": uDow, "isodow": uIsodow, "doy": uDoy, "isoyear": uIsoyear,
	"julian": uJulian, "j": uJulian,
	"timezone": uTimezone, "timezone_h": uTimezoneHour, "timezone_m": uTimezoneMinute,
	"timezone_hour": uTimezoneHour, "timezone_minute": uTimezoneMinute,
}

func parseUnit(s string, t types.T) (unit, error) {
	low := strings.ToLower(strings.TrimSpace(s))
	u, ok := unitNames[low]
	if !ok {
		return uInvalid, pgerror.New(pgcode.InvalidParameterValue, "unit \"%s\" not recognized for type %s", low, typeName(t))
	}
	return u, nil
}

func errUnitUnsupported(s string, t types.T) error {
	return pgerror.New(pgcode.FeatureNotSupported, "unit \"%s\" not supported for type %s", strings.ToLower(strings.TrimSpace(s)), typeName(t))
}

func date2isoweek(y, m, d int) int {
	dayn := date2j(y, m, d)
	day4 := date2j(y, 1, 4)
	day0 := j2day(day4 - 1)
	if dayn < day4-day0 {
		day4 = date2j(y-1, 1, 4)
		day0 = j2day(day4 - 1)
	}
	result := (dayn-(day4-day0))/7 + 1
	if result >= 52 {
		day4 = date2j(y+1, 1, 4)
		day0 = j2day(day4 - 1)
		if dayn >= day4-day0 {
			result = (dayn-(day4-day0))/7 + 1
		}
	}
	return result
}

func date2isoyear(y, m, d int) int {
	dayn := date2j(y, m, d)
	day4 := date2j(y, 1, 4)
	day0 := j2day(day4 - 1)
	if dayn < day4-day0 {
		day4 = date2j(y-1, 1, 4)
		day0 = j2day(day4 - 1)
		y--
	}
	result := (dayn-(day4-day0))/7 + 1
	if result >= 52 {
		day4 = date2j(y+1, 1, 4)
		day0 = j2day(day4 - 1)
		if dayn >= day4-day0 {
			y++
		}
	}
	return y
}

// date2isoyearday returns the ISO day of the year.
func date2isoyearday(y, m, d int) int {
	return date2j(y, m, d) - isoweek2j(date2isoyear(y, m, d), 1) + 1
}

// isoweek2j returns the Julian day of the Monday of ISO week woy of year.
func isoweek2j(year, woy int) int {
	day4 := date2j(year, 1, 4)
	day0 := j2day(day4 - 1)
	return (woy-1)*7 + (day4 - day0)
}

// extractResult is a numeric field value: coef * 10^-scale, and the double
// date_part returns.
type extractResult struct {
	coef  int64
	scale int32
	f     float64
	null  bool
	inf   int // ±1: ±Infinity (a monotonic unit of an infinite timestamp)
}

func intResult(i int64) extractResult { return extractResult{coef: i, f: float64(i)} }

func yearField(year int) int64 {
	if year > 0 {
		return int64(year)
	}
	return int64(year - 1)
}

func decadeField(year int) int64 {
	if year >= 0 {
		return int64(year / 10)
	}
	return -int64((8 - (year - 1)) / 10)
}

func centuryField(year int) int64 {
	if year > 0 {
		return int64((year + 99) / 100)
	}
	return -int64((99 - (year - 1)) / 100)
}

func millenniumField(year int) int64 {
	if year > 0 {
		return int64((year + 999) / 1000)
	}
	return -int64((999 - (year - 1)) / 1000)
}

// dateFields computes the date-only units.
func dateFields(u unit, y, m, d int) (int64, bool) {
	switch u {
	case uDay:
		return int64(d), true
	case uMonth:
		return int64(m), true
	case uQuarter:
		return int64((m-1)/3 + 1), true
	case uWeek:
		return int64(date2isoweek(y, m, d)), true
	case uYear:
		return yearField(y), true
	case uDecade:
		return decadeField(y), true
	case uCentury:
		return centuryField(y), true
	case uMillennium:
		return millenniumField(y), true
	case uIsoyear:
		iy := date2isoyear(y, m, d)
		if iy <= 0 {
			iy--
		}
		return int64(iy), true
	case uDow, uIsodow:
		dow := j2day(date2j(y, m, d))
		if u == uIsodow && dow == 0 {
			dow = 7
		}
		return int64(dow), true
	case uDoy:
		return int64(date2j(y, m, d) - date2j(y, 1, 1) + 1), true
	}
	return 0, false
}

// extractTimestamp is timestamp_part_common; tz adds the timezone units
// (off: the zone's offset east in seconds, us being the wall clock).
func extractTimestamp(u unit, us int64, tz bool, off int64) (extractResult, bool) {
	if !tsFinite(us) {
		switch u {
		case uEpoch, uYear, uDecade, uCentury, uMillennium, uJulian, uIsoyear:
			// PostgreSQL's NonFiniteTimestampTzPart: units that grow
			// with time are ±Infinity, the others NULL.
			if us < 0 {
				return extractResult{inf: -1}, true
			}
			return extractResult{inf: 1}, true
		}
		return extractResult{null: true}, true
	}
	tm := ts2tm(us)
	secUs := int64(tm.sec)*usPerSec + tm.fsec
	switch u {
	case uMicrosecond:
		return intResult(secUs), true
	case uMillisecond:
		return extractResult{coef: secUs, scale: 3, f: float64(tm.sec)*1000.0 + float64(tm.fsec)/1000.0}, true
	case uSecond:
		return extractResult{coef: secUs, scale: 6, f: float64(tm.sec) + float64(tm.fsec)/1000000.0}, true
	case uMinute:
		return intResult(int64(tm.min)), true
	case uHour:
		return intResult(int64(tm.hour)), true
	case uEpoch:
		us -= off * usPerSec
		return extractResult{coef: us, scale: 6, f: float64(us) / 1000000.0}, true
	case uJulian:
		jd := int64(date2j(tm.year, tm.mon, tm.mday))
		f := float64(jd) + ((float64((tm.hour*60+tm.min)*60)+float64(tm.sec))+float64(tm.fsec)/1000000.0)/86400.0
		return extractResult{coef: jd, scale: 0, f: f}, true
	case uTimezone, uTimezoneHour, uTimezoneMinute:
		if !tz {
			return extractResult{}, false
		}
		switch u {
		case uTimezoneHour:
			return intResult(off / 3600), true
		case uTimezoneMinute:
			return intResult(off / 60 % 60), true
		}
		return intResult(off), true
	}
	if v, ok := dateFields(u, tm.year, tm.mon, tm.mday); ok {
		return intResult(v), true
	}
	return extractResult{}, false
}

func extractDate(u unit, days int64) (extractResult, bool) {
	if !dateFinite(days) {
		return extractResult{null: true}, true
	}
	switch u {
	case uEpoch:
		return intResult(days * 86400), true
	case uJulian:
		return intResult(days + unixEpochJD), true
	}
	y, m, d := j2date(int(days) + unixEpochJD)
	if v, ok := dateFields(u, y, m, d); ok {
		return intResult(v), true
	}
	return extractResult{}, false
}

func extractTime(u unit, us int64) (extractResult, bool) {
	sec := us / usPerSec % 60
	fsec := us % usPerSec
	secUs := sec*usPerSec + fsec
	switch u {
	case uMicrosecond:
		return intResult(secUs), true
	case uMillisecond:
		return extractResult{coef: secUs, scale: 3, f: float64(sec)*1000.0 + float64(fsec)/1000.0}, true
	case uSecond:
		return extractResult{coef: secUs, scale: 6, f: float64(sec) + float64(fsec)/1000000.0}, true
	case uMinute:
		return intResult(us / usPerMinute % 60), true
	case uHour:
		return intResult(us / usPerHour), true
	case uEpoch:
		return extractResult{coef: us, scale: 6, f: float64(us) / 1000000.0}, true
	}
	return extractResult{}, false
}

func extractInterval(u unit, iv types.Datum) (extractResult, bool) {
	year := int64(iv.M / 12)
	mon := int64(iv.M % 12)
	t := iv.I
	hour := t / usPerHour
	t -= hour * usPerHour
	min := t / usPerMinute
	t -= min * usPerMinute
	sec := t / usPerSec
	usec := t - sec*usPerSec
	switch u {
	case uMicrosecond:
		return intResult(sec*usPerSec + usec), true
	case uMillisecond:
		return extractResult{coef: sec*usPerSec + usec, scale: 3, f: float64(sec)*1000.0 + float64(usec)/1000.0}, true
	case uSecond:
		return extractResult{coef: sec*usPerSec + usec, scale: 6, f: float64(sec) + float64(usec)/1000000.0}, true
	case uMinute:
		return intResult(min), true
	case uHour:
		return intResult(hour), true
	case uDay:
		return intResult(int64(iv.X)), true
	case uMonth:
		return intResult(mon), true
	case uQuarter:
		return intResult(mon/3 + 1), true
	case uYear:
		return intResult(year), true
	case uDecade:
		return intResult(year / 10), true
	case uCentury:
		return intResult(year / 100), true
	case uMillennium:
		return intResult(year / 1000), true
	case uEpoch:
		secs := (int64(4*365.25)*(int64(iv.M)/12) + int64(4*30)*(int64(iv.M)%12) + 4*int64(iv.X)) * (86400 / 4)
		f := float64(iv.I) / 1000000.0
		f += (365.25 * 86400) * float64(iv.M/12)
		f += (30.0 * 86400) * float64(iv.M%12)
		f += 86400.0 * float64(iv.X)
		v, ok := mul64(secs, usPerSec)
		if ok {
			v, ok = add64(v, iv.I)
		}
		if !ok {
			return extractResult{f: f, null: true}, true
		}
		return extractResult{coef: v, scale: 6, f: f}, true
	}
	return extractResult{}, false
}

// buildExtract builds "__pg_extract" (numeric) and date_part (double).
func buildExtract(b *bctx) (Fn, error) {
	numeric := b.name == "__pg_extract"
	st := b.args[1].t
	ctx := b.ctx
	fieldFn, src := b.fn(0), b.fn(1)
	compute := func(field string, d types.Datum) (types.Datum, error) {
		u, err := parseUnit(field, st)
		if err != nil {
			return types.Null, err
		}
		var r extractResult
		var ok bool
		switch st.Fam {
		case types.Date:
			r, ok = extractDate(u, d.I)
		case types.Time:
			r, ok = extractTime(u, d.I)
		case types.Interval:
			r, ok = extractInterval(u, d)
		case types.TimestampTZ:
			// The calendar fields of the wall clock in the zone; the
			// epoch of the instant.
			off := types.ZoneOffset(ctx.loc(), d.I)
			if tsFinite(d.I) {
				d.I += off * usPerSec
			}
			r, ok = extractTimestamp(u, d.I, true, off)
		default:
			r, ok = extractTimestamp(u, d.I, false, 0)
		}
		if !ok {
			return types.Null, errUnitUnsupported(field, st)
		}
		if r.null && !numeric && u == uEpoch && st.Fam == types.Interval {
			return types.NewFloat(r.f), nil
		}
		if r.null {
			return types.Null, nil
		}
		if r.inf != 0 {
			if numeric {
				return types.DecInf(r.inf < 0), nil
			}
			return types.NewFloat(math.Inf(r.inf)), nil
		}
		if !numeric {
			return types.NewFloat(r.f), nil
		}
		if u == uJulian && st.Fam != types.Date {
			// julian with a time of day: jd + tod/86400e6 in numeric
			// arithmetic, as Postgres computes it.
			tm := ts2tm(d.I)
			tod := ((int64(tm.hour)*60+int64(tm.min))*60+int64(tm.sec))*usPerSec + tm.fsec
			frac, err := types.DecDiv(types.DecFromInt(tod), types.DecFromInt(usPerDay))
			if err != nil {
				return types.Null, err
			}
			return types.DecAdd(types.DecFromInt(r.coef), frac)
		}
		return types.NewDecimal(r.coef, r.scale), nil
	}
	if fd, ok := b.konst(0); ok && fd.K != types.KNull {
		field := fd.S
		if _, err := parseUnit(field, st); err != nil {
			return nil, err
		}
		return strict1(src, func(d types.Datum) (types.Datum, error) { return compute(field, d) }), nil
	}
	return strict2(fieldFn, src, func(f, d types.Datum) (types.Datum, error) { return compute(f.S, d) }), nil
}

// truncTimestamp is timestamp_trunc.
func truncTimestamp(u unit, us int64, field string, t types.T) (int64, error) {
	if !tsFinite(us) {
		return us, nil
	}
	tm := ts2tm(us)
	switch u {
	case uWeek:
		woy := date2isoweek(tm.year, tm.mon, tm.mday)
		if woy >= 52 && tm.mon == 1 {
			tm.year--
		}
		if woy <= 1 && tm.mon == 12 {
			tm.year++
		}
		tm.year, tm.mon, tm.mday = j2date(isoweek2j(tm.year, woy))
		tm.hour, tm.min, tm.sec, tm.fsec = 0, 0, 0, 0
		return tm2ts(tm)
	case uMillisecond:
		tm.fsec = tm.fsec / 1000 * 1000
		return tm2ts(tm)
	case uMicrosecond:
		return us, nil
	}
	switch u {
	case uMillennium:
		if tm.year > 0 {
			tm.year = ((tm.year+999)/1000)*1000 - 999
		} else {
			tm.year = -((999-(tm.year-1))/1000)*1000 + 1
		}
	case uCentury:
		if tm.year > 0 {
			tm.year = ((tm.year+99)/100)*100 - 99
		} else {
			tm.year = -((99-(tm.year-1))/100)*100 + 1
		}
	case uDecade:
		if tm.year > 0 {
			tm.year = (tm.year / 10) * 10
		} else {
			tm.year = -((8 - (tm.year - 1)) / 10) * 10
		}
	}
	switch u {
	case uMillennium, uCentury, uDecade, uYear:
		tm.mon = 1
		fallthrough
	case uQuarter:
		tm.mon = 3*((tm.mon-1)/3) + 1
		fallthrough
	case uMonth:
		tm.mday = 1
		fallthrough
	case uDay:
		tm.hour = 0
		fallthrough
	case uHour:
		tm.min = 0
		fallthrough
	case uMinute:
		tm.sec = 0
		fallthrough
	case uSecond:
		tm.fsec = 0
	default:
		return 0, errUnitUnsupported(field, t)
	}
	return tm2ts(tm)
}

// truncInterval is interval_trunc.
func truncInterval(u unit, iv types.Datum, field string) (types.Datum, error) {
	year := int64(iv.M / 12)
	mon := int64(iv.M % 12)
	day := int64(iv.X)
	t := iv.I
	hour := t / usPerHour
	t -= hour * usPerHour
	min := t / usPerMinute
	t -= min * usPerMinute
	sec := t / usPerSec
	usec := t - sec*usPerSec
	switch u {
	case uMillennium:
		year = (year / 1000) * 1000
	case uCentury:
		year = (year / 100) * 100
	case uDecade:
		year = (year / 10) * 10
	}
	switch u {
	case uMillennium, uCentury, uDecade, uYear:
		mon = 0
		fallthrough
	case uQuarter:
		mon = 3 * (mon / 3)
		fallthrough
	case uMonth:
		day = 0
		fallthrough
	case uDay:
		hour = 0
		fallthrough
	case uHour:
		min = 0
		fallthrough
	case uMinute:
		sec = 0
		fallthrough
	case uSecond:
		usec = 0
	case uMillisecond:
		usec = (usec / 1000) * 1000
	case uMicrosecond:
	default:
		e := pgerror.New(pgcode.FeatureNotSupported, "unit \"%s\" not supported for type interval", strings.ToLower(field))
		if u == uWeek {
			e = e.WithDetail("Months usually have fractional weeks.")
		}
		return types.Null, e
	}
	return interval(year*12+mon, day, ((hour*60+min)*60+sec)*usPerSec+usec)
}

func buildDateTrunc(b *bctx) (Fn, error) {
	st := b.args[1].t
	ctx := b.ctx
	compute := func(field string, d types.Datum) (types.Datum, error) {
		u, err := parseTruncUnit(field, st)
		if err != nil {
			return types.Null, err
		}
		if st.Fam == types.Interval {
			return truncInterval(u, d, field)
		}
		if st.Fam == types.TimestampTZ {
			r, err := truncTimestampTZ(ctx.loc(), u, d.I, field, st)
			return types.Datum{K: d.K, I: r}, err
		}
		r, err := truncTimestamp(u, d.I, field, st)
		return types.Datum{K: d.K, I: r}, err
	}
	if fd, ok := b.konst(0); ok && fd.K != types.KNull {
		field := fd.S
		if _, err := parseTruncUnit(field, st); err != nil {
			return nil, err
		}
		return strict1(b.fn(1), func(d types.Datum) (types.Datum, error) { return compute(field, d) }), nil
	}
	return strict2(b.fn(0), b.fn(1), func(f, d types.Datum) (types.Datum, error) { return compute(f.S, d) }), nil
}

// parseTruncUnit parses a date_trunc unit: only the plain units (not
// epoch) are recognised there.
func parseTruncUnit(s string, t types.T) (unit, error) {
	u, err := parseUnit(s, t)
	if err == nil && u == uEpoch {
		return uInvalid, pgerror.New(pgcode.InvalidParameterValue, "unit \"%s\" not recognized for type %s", strings.ToLower(strings.TrimSpace(s)), typeName(t))
	}
	return u, err
}

// age is Postgres' timestamp_age: a symbolic difference in years, months
// and days.
func age(dt1, dt2 int64) (types.Datum, error) {
	if !tsFinite(dt1) || !tsFinite(dt2) {
		return types.Null, pgerror.New(pgcode.DatetimeFieldOverflow, "cannot subtract infinite timestamps")
	}
	t1, t2 := ts2tm(dt1), ts2tm(dt2)
	fsec := t1.fsec - t2.fsec
	sec := t1.sec - t2.sec
	min := t1.min - t2.min
	hour := t1.hour - t2.hour
	mday := t1.mday - t2.mday
	mon := t1.mon - t2.mon
	year := t1.year - t2.year
	neg := dt1 < dt2
	if neg {
		fsec, sec, min, hour, mday, mon, year = -fsec, -sec, -min, -hour, -mday, -mon, -year
	}
	for fsec < 0 {
		fsec += usPerSec
		sec--
	}
	for sec < 0 {
		sec += 60
		min--
	}
	for min < 0 {
		min += 60
		hour--
	}
	for hour < 0 {
		hour += 24
		mday--
	}
	for mday < 0 {
		if neg {
			mday += daysIn(t1.year, t1.mon)
		} else {
			mday += daysIn(t2.year, t2.mon)
		}
		mon--
	}
	for mon < 0 {
		mon += 12
		year--
	}
	if neg {
		fsec, sec, min, hour, mday, mon, year = -fsec, -sec, -min, -hour, -mday, -mon, -year
	}
	return interval(int64(year)*12+int64(mon), int64(mday), ((int64(hour)*60+int64(min))*60+int64(sec))*usPerSec+fsec)
}

func makeDate(y, m, d int64) (int64, error) {
	bad := func() error {
		return pgerror.New(pgcode.DatetimeFieldOverflow, "date field value out of range: %d-%02d-%02d", y, m, d)
	}
	if y == 0 || y < -4713 || y > 5874897 || m < 1 || m > 12 || d < 1 {
		return 0, bad()
	}
	yy := int(y)
	if yy < 0 {
		yy++
	}
	if int(d) > daysIn(yy, int(m)) {
		return 0, bad()
	}
	days := int64(date2j(yy, int(m), int(d))) - unixEpochJD
	if !dateFinite(days) {
		return 0, bad()
	}
	return days, nil
}

func makeTime(h, m int64, s float64) (int64, error) {
	if h < 0 || h > 24 || m < 0 || m > 59 || s < 0 || s > 60 || math.IsNaN(s) ||
		(h == 24 && (m != 0 || s != 0)) {
		return 0, pgerror.New(pgcode.DatetimeFieldOverflow, "time field value out of range: %d:%02d:%02s", h, m, formatFloatG(s))
	}
	return h*usPerHour + m*usPerMinute + int64(math.RoundToEven(s*1e6)), nil
}

// toTimestamp is Postgres' float8_timestamptz (to_timestamp(double)).
func toTimestamp(secs float64) (types.Datum, error) {
	switch {
	case math.IsNaN(secs):
		return types.Null, pgerror.New(pgcode.DatetimeFieldOverflow, "timestamp cannot be NaN")
	case math.IsInf(secs, 1):
		return types.NewTimestampTZ(math.MaxInt64), nil
	case math.IsInf(secs, -1):
		return types.NewTimestampTZ(math.MinInt64), nil
	}
	if secs < 86400.0*float64(-unixEpochJD) || secs >= 86400.0*float64(endTimestampDate) {
		return types.Null, pgerror.New(pgcode.DatetimeFieldOverflow, "timestamp out of range: \"%s\"", formatFloatG(secs))
	}
	const pgEpochSecs = 946684800
	r := int64(math.RoundToEven((secs-pgEpochSecs)*1e6)) + pgEpochSecs*usPerSec
	if !tsFinite(r) {
		return types.Null, errTimestampRange()
	}
	return types.NewTimestampTZ(r), nil
}

// justifyInterval is Postgres' justify_interval.
func justifyInterval(iv types.Datum) (types.Datum, error) {
	month, day, us := int64(iv.M), int64(iv.X), iv.I
	if (day > 0 && us > 0) || (day < 0 && us < 0) {
		month += day / 30
		day -= day / 30 * 30
	}
	whole := us / usPerDay
	us -= whole * usPerDay
	day += whole
	month += day / 30
	day -= day / 30 * 30
	if month > 0 && (day < 0 || (day == 0 && us < 0)) {
		day += 30
		month--
	} else if month < 0 && (day > 0 || (day == 0 && us > 0)) {
		day -= 30
		month++
	}
	if day > 0 && us < 0 {
		us += usPerDay
		day--
	} else if day < 0 && us > 0 {
		us -= usPerDay
		day++
	}
	return interval(month, day, us)
}

func justifyDays(iv types.Datum) (types.Datum, error) {
	m := int64(iv.M) + int64(iv.X)/30
	d := int64(iv.X) % 30
	if m > 0 && d < 0 {
		d += 30
		m--
	} else if m < 0 && d > 0 {
		d -= 30
		m++
	}
	return interval(m, d, iv.I)
}

func init() {
	dateTimeOps()
	D, T, TS, TZ, IV, TX, I4, F8 := types.Date, types.Time, types.Timestamp, types.TimestampTZ, types.Interval, types.Text, types.Int4, types.Float8
	for _, f := range []types.Family{D, T, TS, TZ, IV} {
		reg("__pg_extract", fams(TX, f), types.TNumeric, buildExtract)
	}
	for _, f := range []types.Family{T, TS, TZ, IV} {
		reg("date_part", fams(TX, f), types.TFloat8, buildExtract)
	}
	// date_part(text, date) is date_part(text, date::timestamp).
	reg("date_part", fams(TX, D), types.TFloat8, func(b *bctx) (Fn, error) {
		a, err := castArg(b.args[1], types.TTimestamp, castImplicit, b.ctx)
		if err != nil {
			return nil, err
		}
		b.args[1] = a
		return buildExtract(b)
	})
	reg("date_trunc", fams(TX, TS), types.TTimestamp, buildDateTrunc)
	reg("date_trunc", fams(TX, TZ), types.TTimestampTZ, buildDateTrunc)
	reg("date_trunc", fams(TX, IV), types.TInterval, buildDateTrunc)

	// now(), and the local date and time of day of the session's zone.
	now := func(kind types.Kind, f func(int64) int64) builder {
		return func(b *bctx) (Fn, error) {
			ctx := b.ctx
			return func(types.Row) (types.Datum, error) {
				v := ctx.Now
				if kind != types.KTimestampTZ {
					v = types.ToLocal(ctx.loc(), v)
				}
				return types.Datum{K: kind, I: f(v)}, nil
			}, nil
		}
	}
	id := func(v int64) int64 { return v }
	reg("now", nil, types.TTimestampTZ, now(types.KTimestampTZ, id)).volatile = true
	reg("localtimestamp", nil, types.TTimestamp, now(types.KTimestamp, id)).volatile = true
	// proctime(): the wall clock when the row is processed (q12's
	// processing-time column); in a view it is evaluated once per row.
	reg("proctime", nil, types.TTimestampTZ, func(*bctx) (Fn, error) {
		return func(types.Row) (types.Datum, error) {
			return types.Datum{K: types.KTimestampTZ, I: time.Now().UnixMicro()}, nil
		}, nil
	}).volatile = true
	reg("current_date", nil, types.TDate, now(types.KDate, func(v int64) int64 { return floorDiv(v, usPerDay) })).volatile = true
	reg("localtime", nil, types.TTime, now(types.KTime, func(v int64) int64 { return floorMod(v, usPerDay) })).volatile = true
	reg("current_time", nil, types.TTime, now(types.KTime, func(v int64) int64 { return floorMod(v, usPerDay) })).volatile = true

	reg("to_timestamp", fams(F8), types.TTimestampTZ, build1(func(a types.Datum) (types.Datum, error) { return toTimestamp(a.Float()) }))
	reg("make_date", fams(I4, I4, I4), types.TDate, build3(func(v0, v1, v2 types.Datum) (types.Datum, error) {
		d, err := makeDate(v0.I, v1.I, v2.I)
		return types.NewDate(d), err
	}))
	reg("make_time", fams(I4, I4, F8), types.TTime, build3(func(v0, v1, v2 types.Datum) (types.Datum, error) {
		t, err := makeTime(v0.I, v1.I, v2.Float())
		return types.NewTime(t), err
	}))
	makeTS := func(kind types.Kind) builder {
		return func(b *bctx) (Fn, error) {
			return strictN(argFns(b), func(v []types.Datum) (types.Datum, error) {
				d, err := makeDate(v[0].I, v[1].I, v[2].I)
				if err != nil {
					return types.Null, err
				}
				t, err := makeTime(v[3].I, v[4].I, v[5].Float())
				if err != nil {
					return types.Null, err
				}
				us, err := dateToTimestamp(d)
				if err != nil {
					return types.Null, err
				}
				r, ok := add64(us, t)
				if !ok || !tsFinite(r) {
					return types.Null, errTimestampRange()
				}
				return types.Datum{K: kind, I: r}, nil
			}), nil
		}
	}
	reg("make_timestamp", fams(I4, I4, I4, I4, I4, F8), types.TTimestamp, makeTS(types.KTimestamp))
	reg("make_timestamptz", fams(I4, I4, I4, I4, I4, F8), types.TTimestampTZ, makeTS(types.KTimestampTZ))
	ageFn := build2(func(a, c types.Datum) (types.Datum, error) { return age(a.I, c.I) })
	reg("age", fams(TS, TS), types.TInterval, ageFn)
	// age of timestamptz values counts on the wall clock of the zone.
	reg("age", fams(TZ, TZ), types.TInterval, func(b *bctx) (Fn, error) {
		ctx := b.ctx
		return strict2(b.fn(0), b.fn(1), func(a, c types.Datum) (types.Datum, error) {
			loc := ctx.loc()
			return age(types.ToLocal(loc, a.I), types.ToLocal(loc, c.I))
		}), nil
	})
	age1 := func(b *bctx) (Fn, error) {
		ctx := b.ctx
		tz := b.args[0].t.Fam == types.TimestampTZ
		return strict1(b.fn(0), func(a types.Datum) (types.Datum, error) {
			loc := ctx.loc()
			v := a.I
			if tz {
				v = types.ToLocal(loc, v)
			}
			return age(floorDiv(types.ToLocal(loc, ctx.Now), usPerDay)*usPerDay, v)
		}), nil
	}
	reg("age", fams(TS), types.TInterval, age1).volatile = true
	reg("age", fams(TZ), types.TInterval, age1).volatile = true
	reg("justify_hours", fams(IV), types.TInterval, build1(func(a types.Datum) (types.Datum, error) {
		d, us := justifyHours(int64(a.X), a.I)
		return interval(int64(a.M), d, us)
	}))
	reg("justify_days", fams(IV), types.TInterval, build1(justifyDays))
	reg("justify_interval", fams(IV), types.TInterval, build1(justifyInterval))
	reg("isfinite", fams(D), types.TBool, build1(func(a types.Datum) (types.Datum, error) { return boolD(dateFinite(a.I)), nil }))
	reg("isfinite", fams(TS), types.TBool, build1(func(a types.Datum) (types.Datum, error) { return boolD(tsFinite(a.I)), nil }))
	reg("isfinite", fams(TZ), types.TBool, build1(func(a types.Datum) (types.Datum, error) { return boolD(tsFinite(a.I)), nil }))
}

// formatFloatG formats like C's %g.
func formatFloatG(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }
