package types

import (
	"math"
	"strconv"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// appendInterval appends an interval as PostgreSQL prints it with
// IntervalStyle postgres: "1 year 2 mons 3 days 04:05:06.5".
func appendInterval(b []byte, d Datum) []byte {
	year := int64(d.M) / 12
	mon := int64(d.M) % 12
	mday := int64(d.X)
	isZero, isBefore := true, false
	addPart := func(v int64, unit string) {
		if v == 0 {
			return
		}
		if !isZero {
			b = append(b, ' ')
		}
		if isBefore && v > 0 {
			b = append(b, '+')
		}
		b = strconv.AppendInt(b, v, 10)
		b = append(b, ' ')
		b = append(b, unit...)
		if v != 1 {
			b = append(b, 's')
		}
		isBefore = v < 0
		isZero = false
	}
	addPart(year, "year")
	addPart(mon, "mon")
	addPart(mday, "day")
	t := d.I
	hour := t / usPerHour
	t -= hour * usPerHour
	mins := t / usPerMin
	t -= mins * usPerMin
	sec := t / usPerSec
	fsec := t - sec*usPerSec
	if isZero || hour != 0 || mins != 0 || sec != 0 || fsec != 0 {
		minus := hour < 0 || mins < 0 || sec < 0 || fsec < 0
		if !isZero {
			b = append(b, ' ')
		}
		if minus {
			b = append(b, '-')
		} else if isBefore {
			b = append(b, '+')
		}
		b = appendPad(b, absInt64(hour), 2)
		b = append(b, ':')
		b = appendPad(b, absInt64(mins), 2)
		b = append(b, ':')
		b = appendPad(b, absInt64(sec), 2)
		b = appendFraction(b, absInt64(fsec))
	}
	return b
}

func absInt64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// Interval units.
type ivUnit uint8

const (
	ivNone ivUnit = iota
	ivMicro
	ivMilli
	ivSecond
	ivMinute
	ivHour
	ivDay
	ivWeek
	ivMonth
	ivYear
	ivDecade
	ivCentury
	ivMillennium
	ivAgo
)

// ivUnits maps the unit words of PostgreSQL's deltatktbl.
var ivUnits = map[string]ivUnit{
	"microsecond": ivMicro, "microseconds": ivMicro, "microsecon": ivMicro, "us": ivMicro,
	"usec": ivMicro, "usecs": ivMicro, "usecond": ivMicro, "useconds": ivMicro,
	"millisecond": ivMilli, "milliseconds": ivMilli, "millisecon": ivMilli, "ms": ivMilli,
	"msec": ivMilli, "msecs": ivMilli, "msecond": ivMilli, "mseconds": ivMilli,
	"second": ivSecond, "seconds": ivSecond, "s": ivSecond, "sec": ivSecond, "secs": ivSecond,
	"minute": ivMinute, "minutes": ivMinute, "m": ivMinute, "min": ivMinute, "mins": ivMinute,
	"hour": ivHour, "hours": ivHour, "h": ivHour, "hr": ivHour, "hrs": ivHour,
	"day": ivDay, "days": ivDay, "d": ivDay,
	"week": ivWeek, "weeks": ivWeek, "w": ivWeek,
	"month": ivMonth, "months": ivMonth, "mon": ivMonth, "mons": ivMonth,
	"year": ivYear, "years": ivYear, "y": ivYear, "yr": ivYear, "yrs": ivYear,
	"decade": ivDecade, "decades": ivDecade, "dec": ivDecade, "decs": ivDecade,
	"century": ivCentury, "centuries": ivCentury, "c": ivCentury, "cent": ivCentury,
	"millennium": ivMillennium, "millennia": ivMillennium, "mil": ivMillennium, "mils": ivMillennium,
	"ago": ivAgo,
}

// ivAcc accumulates interval fields as PostgreSQL's pg_itm_in does.
type ivAcc struct {
	years, months, days int64
	usec                int64
	ovf                 bool
}

func (a *ivAcc) addUsec(v int64) {
	r := a.usec + v
	if (v > 0 && r < a.usec) || (v < 0 && r > a.usec) {
		a.ovf = true
	}
	a.usec = r
}

// mulAdd adds val*scale microseconds.
func (a *ivAcc) mulAdd(val, scale int64) {
	if val != 0 && (val > math.MaxInt64/scale || val < math.MinInt64/scale) {
		a.ovf = true
		return
	}
	a.addUsec(val * scale)
}

// fractUsec is AdjustFractMicroseconds.
func (a *ivAcc) fractUsec(frac float64, scale int64) {
	if frac == 0 {
		return
	}
	frac *= float64(scale)
	u := int64(frac)
	frac -= float64(u)
	if frac > 0.5 {
		u++
	} else if frac < -0.5 {
		u--
	}
	a.addUsec(u)
}

// fractDays is AdjustFractDays.
func (a *ivAcc) fractDays(frac float64, scale int64) {
	if frac == 0 {
		return
	}
	frac *= float64(scale)
	extra := int64(frac)
	a.days += extra
	frac -= float64(extra)
	a.fractUsec(frac, usPerDay)
}

// fractYears is AdjustFractYears.
func (a *ivAcc) fractYears(frac float64, scale int64) {
	a.months += int64(math.RoundToEven(frac * float64(scale) * 12))
}

func (a *ivAcc) clampCheck(v int64) {
	if v > math.MaxInt32*1000 || v < math.MinInt32*1000 {
		a.ovf = true
	}
}

// apply adds val+fval of unit u.
func (a *ivAcc) apply(u ivUnit, val int64, fval float64) {
	switch u {
	case ivMicro:
		a.mulAdd(val, 1)
		a.fractUsec(fval, 1)
	case ivMilli:
		a.mulAdd(val, 1000)
		a.fractUsec(fval, 1000)
	case ivSecond:
		a.mulAdd(val, usPerSec)
		a.fractUsec(fval, usPerSec)
	case ivMinute:
		a.mulAdd(val, usPerMin)
		a.fractUsec(fval, usPerMin)
	case ivHour:
		a.mulAdd(val, usPerHour)
		a.fractUsec(fval, usPerHour)
	case ivDay:
		a.clampCheck(val)
		a.days += val
		a.fractUsec(fval, usPerDay)
	case ivWeek:
		a.clampCheck(val)
		a.days += val * 7
		a.fractDays(fval, 7)
	case ivMonth:
		a.clampCheck(val)
		a.months += val
		a.fractDays(fval, 30)
	case ivYear, ivDecade, ivCentury, ivMillennium:
		scale := int64(1)
		switch u {
		case ivDecade:
			scale = 10
		case ivCentury:
			scale = 100
		case ivMillennium:
			scale = 1000
		}
		a.clampCheck(val)
		a.years += val * scale
		a.fractYears(fval, scale)
	}
}

// result returns the interval, or false on overflow.
func (a *ivAcc) result(neg bool) (Datum, bool) {
	months := a.years*12 + a.months
	days := a.days
	us := a.usec
	if a.ovf || months > math.MaxInt32 || months < math.MinInt32 || days > math.MaxInt32 || days < math.MinInt32 ||
		a.years > math.MaxInt32 || a.years < math.MinInt32 {
		return Datum{}, false
	}
	if neg {
		if us == math.MinInt64 {
			return Datum{}, false
		}
		months, days, us = -months, -days, -us
		if months > math.MaxInt32 || days > math.MaxInt32 {
			return Datum{}, false
		}
	}
	return NewInterval(int32(months), int32(days), us), true
}

// ivToken is one field of an interval string.
type ivToken struct {
	kind byte // 'n' number, 't' time, 'w' word
	text string
}

// tokenizeInterval splits an interval string into numbers, times and words.
func tokenizeInterval(t string) ([]ivToken, bool) {
	toks := make([]ivToken, 0, 8)
	i := 0
	for i < len(t) {
		c := t[i]
		switch {
		case isSpace(c):
			i++
		case c == '@' && len(toks) == 0:
			i++
		case isDigit(c) || c == '.' || c == '+' || c == '-':
			start := i
			if c == '+' || c == '-' {
				i++
			}
			kind := byte('n')
			for i < len(t) && (isDigit(t[i]) || t[i] == '.' || t[i] == ':') {
				if t[i] == ':' {
					kind = 't'
				}
				i++
			}
			if i == start+1 && (c == '+' || c == '-') {
				return nil, false
			}
			toks = append(toks, ivToken{kind, t[start:i]})
		case isAlpha(c):
			start := i
			for i < len(t) && isAlpha(t[i]) {
				i++
			}
			toks = append(toks, ivToken{'w', t[start:i]})
		default:
			return nil, false
		}
	}
	return toks, true
}

// parseIvNumber splits a signed decimal number into its integer part and
// signed fraction; ovf reports an integer part beyond int64.
func parseIvNumber(s string) (val int64, fval float64, ok, ovf bool) {
	neg := false
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		if val > (math.MaxInt64-9)/10 {
			ovf = true
			i++
			continue
		}
		val = val*10 + int64(s[i]-'0')
		i++
	}
	nInt := i - start
	if i < len(s) && s[i] == '.' {
		fs := i
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if nInt == 0 && i == fs+1 {
			return 0, 0, false, false
		}
		if i > fs+1 {
			f, err := strconv.ParseFloat(s[fs:i], 64)
			if err != nil {
				return 0, 0, false, false
			}
			fval = f
		}
	} else if nInt == 0 {
		return 0, 0, false, false
	}
	if i != len(s) {
		return 0, 0, false, false
	}
	if neg {
		val, fval = -val, -fval
	}
	return val, fval, true, ovf
}

// parseIvTime parses [+-]h:m[:s[.f]] into microseconds; e is dtSyntax
// for junk and dtField when the value does not fit.
func parseIvTime(s string) (us int64, e dtErr) {
	us, ok, ovf := parseIvTimeParts(s)
	switch {
	case ovf:
		return 0, dtField
	case !ok:
		return 0, dtSyntax
	}
	return us, dtOK
}

func parseIvTimeParts(s string) (us int64, ok, ovf bool) {
	if s == "" {
		return 0, false, false
	}
	neg := false
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		s = s[1:]
	}
	var parts [3]string
	n := 0
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ':' {
			if n == 3 {
				return 0, false, false
			}
			parts[n] = s[start:i]
			n++
			start = i + 1
		}
	}
	if n < 2 {
		return 0, false, false
	}
	num := func(p string) (int64, bool) {
		if p == "" || len(p) > 18 {
			return 0, false
		}
		var v int64
		for k := 0; k < len(p); k++ {
			if !isDigit(p[k]) {
				return 0, false
			}
			v = v*10 + int64(p[k]-'0')
		}
		return v, true
	}
	h, ok1 := num(parts[0])
	m, ok2 := num(parts[1])
	if !ok1 || !ok2 || m > 59 {
		return 0, false, false
	}
	var sec, fsec int64
	if n == 3 {
		sp := parts[2]
		dot := len(sp)
		for k := 0; k < len(sp); k++ {
			if sp[k] == '.' {
				dot = k
				break
			}
		}
		var ok bool
		if sec, ok = num(sp[:dot]); !ok || sec > 60 {
			return 0, false, false
		}
		if dot < len(sp)-1 {
			f, err := strconv.ParseFloat(sp[dot:], 64)
			if err != nil {
				return 0, false, false
			}
			fsec = int64(math.RoundToEven(f * 1e6))
		}
	}
	// Sum the magnitude in uint64: -2562047788:00:54.775808 is valid.
	if uint64(h) > math.MaxUint64/uint64(usPerHour) {
		return 0, true, true
	}
	u := uint64(h)*uint64(usPerHour) + uint64(m*usPerMin+sec*usPerSec+fsec)
	if u < uint64(h)*uint64(usPerHour) {
		return 0, true, true
	}
	v, fits := fromMag(neg, u)
	return v, true, !fits
}

// parseInterval parses PostgreSQL interval input (postgres and ISO 8601
// formats; a bare number is seconds).
func parseInterval(s string) (Datum, error) {
	syntax := func() (Datum, error) {
		return Datum{}, pgerror.New(pgcode.InvalidDatetimeFormat, "invalid input syntax for type interval: \"%s\"", s)
	}
	overflow := func() (Datum, error) {
		return Datum{}, pgerror.New(pgcode.DatetimeFieldOverflow, "interval field value out of range: \"%s\"", s)
	}
	t := trimSpace(s)
	if t == "" {
		return syntax()
	}
	if t[0] == 'P' || t[0] == 'p' {
		d, e := parseISOInterval(t[1:])
		switch e {
		case dtSyntax:
			return syntax()
		case dtField:
			return overflow()
		}
		return d, nil
	}
	toks, ok := tokenizeInterval(t)
	if !ok || len(toks) == 0 {
		return syntax()
	}
	var acc ivAcc
	var seen uint32
	mark := func(bits uint32) bool {
		if seen&bits != 0 {
			return false
		}
		seen |= bits
		return true
	}
	const timeBits = 1<<ivHour | 1<<ivMinute | 1<<ivSecond
	ago := false
	typ := ivNone
	for i := len(toks) - 1; i >= 0; i-- {
		tk := toks[i]
		switch tk.kind {
		case 'w':
			if len(tk.text) > 16 {
				return syntax()
			}
			var lb [16]byte
			for k := 0; k < len(tk.text); k++ {
				c := tk.text[k]
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				lb[k] = c
			}
			u, found := ivUnits[string(lb[:len(tk.text)])]
			if !found {
				return syntax()
			}
			if u == ivAgo {
				// Only trailing (possibly repeated) "ago" words.
				for k := i + 1; k < len(toks); k++ {
					if !equalFold(toks[k].text, "ago") {
						return syntax()
					}
				}
				ago = true
				continue
			}
			if i == 0 || toks[i-1].kind != 'n' {
				return syntax()
			}
			typ = u
		case 't':
			us, e := parseIvTime(tk.text)
			switch e {
			case dtSyntax:
				return syntax()
			case dtField:
				return overflow()
			}
			if !mark(timeBits) {
				return syntax()
			}
			acc.addUsec(us)
			typ = ivDay
		case 'n':
			val, fval, ok, ovf := parseIvNumber(tk.text)
			if !ok {
				return syntax()
			}
			if ovf {
				return overflow()
			}
			if typ == ivNone {
				typ = ivSecond
			}
			bit := uint32(1) << typ
			if typ == ivSecond && fval != 0 {
				bit |= 1<<ivMilli | 1<<ivMicro
			}
			if !mark(bit) {
				return syntax()
			}
			acc.apply(typ, val, fval)
			if typ == ivHour {
				typ = ivDay
			}
		}
	}
	d, ok := acc.result(ago)
	if !ok {
		return overflow()
	}
	return d, nil
}

// parseISOInterval parses the part of an ISO 8601 duration after the P:
// designators (1Y2M3W4DT5H6M7.5S) or the alternative format
// (0001-02-03T04:05:06).
func parseISOInterval(t string) (Datum, dtErr) {
	if t == "" {
		return Datum{}, dtSyntax
	}
	var acc ivAcc
	// Alternative format: yyyy-mm-dd[Thh:mm:ss].
	if len(t) >= 5 && isDigit(t[0]) {
		j := 0
		for j < len(t) && isDigit(t[j]) {
			j++
		}
		if j < len(t) && t[j] == '-' {
			l := &dtLexer{s: t}
			y, _, ok := l.digits()
			if !ok || l.peek() != '-' {
				return Datum{}, dtSyntax
			}
			l.i++
			m, _, ok1 := l.digits()
			if !ok1 || l.peek() != '-' {
				return Datum{}, dtSyntax
			}
			l.i++
			d, _, ok2 := l.digits()
			if !ok2 {
				return Datum{}, dtSyntax
			}
			acc.years, acc.months, acc.days = y, m, d
			if !l.eof() {
				if c := l.peek(); c != 'T' && c != 't' {
					return Datum{}, dtSyntax
				}
				us, e := parseIvTime(l.s[l.i+1:])
				if e != dtOK {
					return Datum{}, e
				}
				acc.usec = us
			}
			r, ok := acc.result(false)
			if !ok {
				return Datum{}, dtField
			}
			return r, dtOK
		}
	}
	inTime := false
	i := 0
	any := false
	for i < len(t) {
		if t[i] == 'T' || t[i] == 't' {
			if inTime {
				return Datum{}, dtSyntax
			}
			inTime = true
			any = true
			i++
			continue
		}
		start := i
		if t[i] == '+' || t[i] == '-' {
			i++
		}
		for i < len(t) && (isDigit(t[i]) || t[i] == '.') {
			i++
		}
		val, fval, ok, ovf := parseIvNumber(t[start:i])
		if !ok || i == len(t) {
			return Datum{}, dtSyntax
		}
		if ovf {
			return Datum{}, dtField
		}
		des := t[i]
		if 'a' <= des && des <= 'z' {
			des -= 'a' - 'A'
		}
		i++
		if !inTime {
			switch des {
			case 'Y':
				acc.apply(ivYear, val, fval)
			case 'M':
				acc.apply(ivMonth, val, fval)
			case 'W':
				acc.apply(ivWeek, val, fval)
			case 'D':
				acc.apply(ivDay, val, fval)
			default:
				return Datum{}, dtSyntax
			}
		} else {
			switch des {
			case 'H':
				acc.apply(ivHour, val, fval)
			case 'M':
				acc.apply(ivMinute, val, fval)
			case 'S':
				acc.apply(ivSecond, val, fval)
			default:
				return Datum{}, dtSyntax
			}
		}
		any = true
	}
	if !any {
		return Datum{}, dtSyntax
	}
	r, ok := acc.result(false)
	if !ok {
		return Datum{}, dtField
	}
	return r, dtOK
}
