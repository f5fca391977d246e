package types

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// Dates, timestamps and timestamptz use math.MaxInt64 for 'infinity' and
// math.MinInt64 for '-infinity' (PostgreSQL's DATEVAL_NOEND/NOBEGIN and
// DT_NOEND/DT_NOBEGIN).
const (
	// InfinityI is the I of an 'infinity' date, timestamp or timestamptz.
	InfinityI = math.MaxInt64
	// NegInfinityI is the I of a '-infinity' date, timestamp or timestamptz.
	NegInfinityI = math.MinInt64
)

// Time units in microseconds.
const (
	usPerSec  int64 = 1000000
	usPerMin        = 60 * usPerSec
	usPerHour       = 60 * usPerMin
	usPerDay        = 24 * usPerHour
)

// pgEpochDays is the number of days from 1970-01-01 to 2000-01-01, the
// PostgreSQL epoch of the binary date and timestamp formats.
const pgEpochDays = 10957

// pgEpochUs is pgEpochDays in microseconds.
const pgEpochUs = pgEpochDays * usPerDay

// The valid ranges: dates as PostgreSQL's, from 4714-11-24 BC (Julian day
// 0) to 5874897-12-31; timestamps from 4714-11-24 BC to 294246-12-31
// 23:59:59.999999 (PostgreSQL goes to 294276 AD, but int64 microseconds
// since 1970 end in 294247).
var (
	minDateDays = daysFromCivil(-4713, 11, 24)
	maxDateDays = daysFromCivil(5874897, 12, 31)
	minTsUs     = minDateDays * usPerDay
	maxTsDays   = daysFromCivil(294247, 1, 1) - 1 // 294246-12-31
	maxTsUs     = (maxTsDays+1)*usPerDay - 1
)

// daysFromCivil returns the days since 1970-01-01 of the proleptic Gregorian
// date y-m-d (astronomical year numbering: 1 BC is year 0).
func daysFromCivil(y int64, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := int64((m + 9) % 12)
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y int64, m, d int) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func isLeap(y int64) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysInMonth(y int64, m int) int {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// appendPad appends v in decimal, zero-padded to width digits.
func appendPad(b []byte, v int64, width int) []byte {
	// The common fields, without strconv: month, day, hour, minute,
	// second (2) and a year of four digits.
	switch {
	case width == 2 && v >= 0 && v < 100:
		return append(b, byte('0'+v/10), byte('0'+v%10))
	case width == 4 && v >= 0 && v < 10000:
		return append(b, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
	}
	var tmp [20]byte
	ds := strconv.AppendInt(tmp[:0], v, 10)
	for k := len(ds); k < width; k++ {
		b = append(b, '0')
	}
	return append(b, ds...)
}

// appendYMD appends yyyy-mm-dd of days since 1970 and reports whether the
// year is BC.
func appendYMD(b []byte, days int64) ([]byte, bool) {
	y, m, d := civilFromDays(days)
	bc := y <= 0
	if bc {
		y = 1 - y
	}
	b = appendPad(b, y, 4)
	b = append(b, '-')
	b = appendPad(b, int64(m), 2)
	b = append(b, '-')
	b = appendPad(b, int64(d), 2)
	return b, bc
}

// appendDate appends a date as PostgreSQL prints it with DateStyle ISO.
func appendDate(b []byte, days int64) []byte {
	switch days {
	case InfinityI:
		return append(b, "infinity"...)
	case NegInfinityI:
		return append(b, "-infinity"...)
	}
	b, bc := appendYMD(b, days)
	if bc {
		b = append(b, " BC"...)
	}
	return b
}

// appendClock appends hh:mm:ss[.ffffff] (trailing fraction zeros trimmed)
// for a non-negative number of microseconds; hours are not wrapped.
func appendClock(b []byte, us int64) []byte {
	h := us / usPerHour
	us -= h * usPerHour
	m := us / usPerMin
	us -= m * usPerMin
	s := us / usPerSec
	us -= s * usPerSec
	b = appendPad(b, h, 2)
	b = append(b, ':')
	b = appendPad(b, m, 2)
	b = append(b, ':')
	b = appendPad(b, s, 2)
	return appendFraction(b, us)
}

// appendFraction appends .ffffff with trailing zeros trimmed, or nothing
// for zero.
func appendFraction(b []byte, us int64) []byte {
	if us == 0 {
		return b
	}
	var tmp [6]byte
	for k := 5; k >= 0; k-- {
		tmp[k] = byte('0' + us%10)
		us /= 10
	}
	n := 6
	for n > 0 && tmp[n-1] == '0' {
		n--
	}
	b = append(b, '.')
	return append(b, tmp[:n]...)
}

// appendTimestamp appends a timestamp (tz adds the "+00" of TimeZone UTC).
func appendTimestamp(b []byte, us int64, tz bool) []byte {
	switch us {
	case InfinityI:
		return append(b, "infinity"...)
	case NegInfinityI:
		return append(b, "-infinity"...)
	}
	days := floorDiv(us, usPerDay)
	b, bc := appendYMD(b, days)
	b = append(b, ' ')
	b = appendClock(b, floorMod(us, usPerDay))
	if tz {
		b = append(b, "+00"...)
	}
	if bc {
		b = append(b, " BC"...)
	}
	return b
}

// dtErr classifies date/time input errors.
type dtErr uint8

const (
	dtOK        dtErr = iota
	dtSyntax          // 22007 invalid input syntax
	dtField           // 22008 date/time field value out of range
	dtTZRange         // time zone displacement out of range
	dtTZUnknown       // time zone not recognized
)

// dtFields is a parsed date/time string.
type dtFields struct {
	special int // +1 infinity, -1 -infinity, 2 epoch
	hasDate bool
	year    int64 // astronomical
	month   int
	day     int
	hasTime bool
	usec    int64 // time of day in microseconds (may be 24:00:00 or roll over from :60)
	hasTZ   bool
	tzOff   int64 // seconds east of UTC
	tzLoc   *time.Location
	tzName  string
}

// dtLexer scans a date/time string.
type dtLexer struct {
	s string
	i int
}

func (l *dtLexer) eof() bool { return l.i >= len(l.s) }

func (l *dtLexer) peek() byte {
	if l.i < len(l.s) {
		return l.s[l.i]
	}
	return 0
}

func (l *dtLexer) skipSpaces() bool {
	start := l.i
	for l.i < len(l.s) && isSpace(l.s[l.i]) {
		l.i++
	}
	return l.i > start
}

// digits scans a run of digits; ok is false when there is none or it is
// absurdly long.
func (l *dtLexer) digits() (v int64, n int, ok bool) {
	for l.i < len(l.s) && '0' <= l.s[l.i] && l.s[l.i] <= '9' {
		if n < 18 {
			v = v*10 + int64(l.s[l.i]-'0')
		}
		n++
		l.i++
	}
	return v, n, n > 0 && n <= 18
}

func isAlpha(c byte) bool { return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// word scans letters and the characters of zone names.
func (l *dtLexer) word() string {
	start := l.i
	for l.i < len(l.s) {
		c := l.s[l.i]
		if isAlpha(c) || c == '/' || c == '_' || (l.i > start && (isDigit(c) || c == '-' || c == '+')) {
			l.i++
			continue
		}
		break
	}
	return l.s[start:l.i]
}

// parseDateTime parses the date/time strings PostgreSQL accepts in ISO
// style: [date][(T| )time][ zone][ BC|AD], specials infinity/-infinity/
// epoch. wantDate says whether a date must be present (date, timestamp)
// or a time (time).
func parseDateTime(s string, wantDate bool) (dtFields, dtErr) {
	var f dtFields
	t := trimSpace(s)
	switch {
	case equalFold(t, "infinity"):
		f.special = 1
		return f, dtOK
	case equalFold(t, "-infinity"):
		f.special = -1
		return f, dtOK
	case equalFold(t, "epoch"):
		f.special = 2
		return f, dtOK
	}
	l := &dtLexer{s: t}
	// Date: y-m-d or yyyymmdd.
	if wantDate || looksLikeDate(t) {
		start := l.i
		y, n, ok := l.digits()
		if !ok {
			return f, dtSyntax
		}
		if l.peek() == '-' {
			l.i++
			m, _, ok1 := l.digits()
			if !ok1 || l.peek() != '-' {
				return f, dtSyntax
			}
			l.i++
			d, _, ok2 := l.digits()
			if !ok2 {
				return f, dtSyntax
			}
			if n < 3 {
				// PostgreSQL takes a leading field as the year of a
				// y-m-d date only when it has 3+ digits.
				return f, dtField
			}
			f.year, f.month, f.day = y, int(m), int(d)
		} else if n == 8 && (l.eof() || l.peek() == 'T' || l.peek() == 't' || isSpace(l.peek())) {
			f.year, f.month, f.day = y/10000, int(y/100%100), int(y%100)
		} else {
			if wantDate {
				return f, dtSyntax
			}
			l.i = start
		}
		f.hasDate = l.i > start
	}
	// Separator and time.
	if f.hasDate {
		if c := l.peek(); c == 'T' || c == 't' {
			l.i++
			if !isDigit(l.peek()) {
				return f, dtSyntax
			}
		} else {
			save := l.i
			l.skipSpaces()
			if !isDigit(l.peek()) {
				l.i = save
			}
		}
	}
	if isDigit(l.peek()) {
		us, e := l.clock()
		if e != dtOK {
			return f, e
		}
		f.hasTime = true
		f.usec = us
	} else if !f.hasDate {
		return f, dtSyntax
	}
	// Trailing words: AM/PM, zone, BC/AD.
	bc := false
	for {
		l.skipSpaces()
		if l.eof() {
			break
		}
		c := l.peek()
		switch {
		case (c == '+' || c == '-') && f.hasTime && !f.hasTZ:
			off, e := l.numericZone()
			if e != dtOK {
				return f, e
			}
			f.hasTZ, f.tzOff = true, off
		case isAlpha(c):
			w := l.word()
			switch {
			case equalFold(w, "bc"):
				bc = true
			case equalFold(w, "ad"):
			case (equalFold(w, "am") || equalFold(w, "pm")) && f.hasTime:
				h := f.usec / usPerHour
				if h > 12 || h == 0 {
					return f, dtField
				}
				if equalFold(w, "am") && h == 12 {
					f.usec -= 12 * usPerHour
				} else if equalFold(w, "pm") && h != 12 {
					f.usec += 12 * usPerHour
				}
			case f.hasTZ:
				return f, dtSyntax
			case !strings.Contains(w, "/"):
				off, ok := zoneAbbrevOffset(w)
				if !ok {
					return f, dtSyntax
				}
				f.hasTZ, f.tzOff = true, off
			default:
				loc, ok := loadZone(w)
				if !ok {
					f.tzName = w
					return f, dtTZUnknown
				}
				f.hasTZ, f.tzLoc = true, loc
			}
		default:
			return f, dtSyntax
		}
	}
	if f.hasDate {
		if f.year == 0 || f.month < 1 || f.month > 12 || f.day < 1 {
			return f, dtField
		}
		if bc {
			f.year = 1 - f.year
		}
		if f.day > daysInMonth(f.year, f.month) {
			return f, dtField
		}
	} else if bc {
		return f, dtSyntax
	}
	return f, dtOK
}

// zoneAbbrevs are the fixed-offset zone abbreviations accepted in input
// (seconds east of UTC), a subset of PostgreSQL's Default set.
var zoneAbbrevs = map[string]int64{
	"z": 0, "utc": 0, "gmt": 0, "ut": 0, "uct": 0, "zulu": 0, "wet": 0,
	"est": -5 * 3600, "edt": -4 * 3600, "cst": -6 * 3600, "cdt": -5 * 3600,
	"mst": -7 * 3600, "mdt": -6 * 3600, "pst": -8 * 3600, "pdt": -7 * 3600,
	"akst": -9 * 3600, "akdt": -8 * 3600, "hst": -10 * 3600,
	"bst": 3600, "cet": 3600, "met": 3600, "cest": 2 * 3600, "mest": 2 * 3600,
	"eet": 2 * 3600, "eest": 3 * 3600, "msk": 3 * 3600, "jst": 9 * 3600,
	"kst": 9 * 3600, "aest": 10 * 3600, "aedt": 11 * 3600, "nzst": 12 * 3600, "nzdt": 13 * 3600,
}

// zoneAbbrevOffset returns the offset of a zone abbreviation.
func zoneAbbrevOffset(w string) (int64, bool) {
	if len(w) > 8 {
		return 0, false
	}
	var lb [8]byte
	for i := 0; i < len(w); i++ {
		c := w[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lb[i] = c
	}
	off, ok := zoneAbbrevs[string(lb[:len(w)])]
	return off, ok
}

// zoneCache remembers time.LoadLocation results by name.
var zoneCache sync.Map // string -> *time.Location

// loadZone returns the IANA time zone named name.
func loadZone(name string) (*time.Location, bool) {
	if v, ok := zoneCache.Load(name); ok {
		return v.(*time.Location), true
	}
	var loc *time.Location
	if !strings.HasPrefix(name, "/") && !strings.Contains(name, "..") {
		if l, err := time.LoadLocation(name); err == nil {
			loc = l
		}
	}
	if loc == nil {
		return nil, false // unknown names are not cached: the map stays bounded
	}
	zoneCache.Store(name, loc)
	return loc, true
}

// looksLikeDate reports whether t starts with digits followed by '-' or is
// an 8-digit yyyymmdd group (used for time input, which may carry a date).
func looksLikeDate(t string) bool {
	i := 0
	for i < len(t) && isDigit(t[i]) {
		i++
	}
	if i == 0 {
		return false
	}
	if i < len(t) && t[i] == '-' {
		return true
	}
	return i == 8 && (i == len(t) || t[i] == 'T' || t[i] == 't' || isSpace(t[i]))
}

// clock scans h:m[:s[.frac]] and returns microseconds since midnight.
func (l *dtLexer) clock() (int64, dtErr) {
	h, _, ok := l.digits()
	if !ok || l.peek() != ':' {
		return 0, dtSyntax
	}
	l.i++
	m, _, ok := l.digits()
	if !ok {
		return 0, dtSyntax
	}
	var sec, fsec int64
	if l.peek() == ':' {
		l.i++
		sec, _, ok = l.digits()
		if !ok {
			return 0, dtSyntax
		}
		if l.peek() == '.' {
			var e dtErr
			fsec, e = l.fraction()
			if e != dtOK {
				return 0, e
			}
		}
	}
	if h > 24 || m > 59 || sec > 60 || (h == 24 && (m != 0 || sec != 0 || fsec != 0)) {
		return 0, dtField
	}
	return ((h*60+m)*60+sec)*usPerSec + fsec, dtOK
}

// fraction scans .ddd (at l.i == '.') and returns it in microseconds,
// rounded as PostgreSQL does (rint of the double).
func (l *dtLexer) fraction() (int64, dtErr) {
	start := l.i
	l.i++
	for l.i < len(l.s) && isDigit(l.s[l.i]) {
		l.i++
	}
	if l.i == start+1 {
		return 0, dtOK
	}
	v, err := strconv.ParseFloat(l.s[start:l.i], 64)
	if err != nil {
		return 0, dtSyntax
	}
	return int64(math.RoundToEven(v * 1e6)), dtOK
}

// numericZone scans +hh[:mm[:ss]] / +hhmm[ss] and returns seconds east of UTC.
func (l *dtLexer) numericZone() (int64, dtErr) {
	neg := l.s[l.i] == '-'
	l.i++
	v, n, ok := l.digits()
	if !ok {
		return 0, dtSyntax
	}
	var h, m, s int64
	switch {
	case n <= 2:
		h = v
		if l.peek() == ':' {
			l.i++
			if m, _, ok = l.digits(); !ok {
				return 0, dtSyntax
			}
			if l.peek() == ':' {
				l.i++
				if s, _, ok = l.digits(); !ok {
					return 0, dtSyntax
				}
			}
		}
	case n == 4:
		h, m = v/100, v%100
	case n == 6:
		h, m, s = v/10000, v/100%100, v%100
	default:
		return 0, dtSyntax
	}
	if m > 59 || s > 59 {
		return 0, dtField
	}
	if h > 15 {
		return 0, dtTZRange
	}
	off := h*3600 + m*60 + s
	if neg {
		off = -off
	}
	return off, dtOK
}

// dtError turns a dtErr into PostgreSQL's error for type name typ.
func dtError(e dtErr, s, typ string, f *dtFields) error {
	switch e {
	case dtField:
		return pgerror.New(pgcode.DatetimeFieldOverflow, "date/time field value out of range: \"%s\"", s)
	case dtTZRange:
		return pgerror.New(pgcode.DatetimeFieldOverflow, "time zone displacement out of range: \"%s\"", s)
	case dtTZUnknown:
		return pgerror.New(pgcode.InvalidParameterValue, "time zone \"%s\" not recognized", f.tzName)
	}
	return pgerror.New(pgcode.InvalidDatetimeFormat, "invalid input syntax for type %s: \"%s\"", typ, s)
}

// parseDate parses PostgreSQL date input.
func parseDate(s string) (Datum, error) {
	f, e := parseDateTime(s, true)
	if e != dtOK {
		return Datum{}, dtError(e, s, "date", &f)
	}
	switch f.special {
	case 1:
		return NewDate(InfinityI), nil
	case -1:
		return NewDate(NegInfinityI), nil
	case 2:
		return NewDate(0), nil
	}
	if f.year < -5000 || f.year > 6000000 {
		return Datum{}, pgerror.New(pgcode.DatetimeFieldOverflow, "date out of range: \"%s\"", s)
	}
	days := daysFromCivil(f.year, f.month, f.day)
	if days < minDateDays || days > maxDateDays {
		return Datum{}, pgerror.New(pgcode.DatetimeFieldOverflow, "date out of range: \"%s\"", s)
	}
	return NewDate(days), nil
}

// parseTimestamp parses PostgreSQL timestamp (tz false) or timestamptz
// input. Zones are ignored for timestamp and converted to UTC for
// timestamptz (no zone means UTC; parseTimestampIn reads it in a zone).
func parseTimestamp(s string, tz bool) (Datum, error) { return parseTimestampZone(s, tz, nil) }

// parseTimestampIn parses timestamptz input, reading a time that names no
// zone in zone loc.
func parseTimestampIn(s string, loc *time.Location) (Datum, error) {
	return parseTimestampZone(s, true, loc)
}

func parseTimestampZone(s string, tz bool, loc *time.Location) (Datum, error) {
	typ := "timestamp"
	mk := NewTimestamp
	if tz {
		typ = "timestamp with time zone"
		mk = NewTimestampTZ
	}
	f, e := parseDateTime(s, true)
	if e != dtOK {
		return Datum{}, dtError(e, s, typ, &f)
	}
	switch f.special {
	case 1:
		return mk(InfinityI), nil
	case -1:
		return mk(NegInfinityI), nil
	case 2:
		return mk(0), nil
	}
	outOfRange := func() (Datum, error) {
		return Datum{}, pgerror.New(pgcode.DatetimeFieldOverflow, "timestamp out of range: \"%s\"", s)
	}
	if f.year < -5000 || f.year > 300000 {
		return outOfRange()
	}
	days := daysFromCivil(f.year, f.month, f.day)
	if days < minDateDays-1 || days > maxTsDays+1 {
		return outOfRange()
	}
	us := days*usPerDay + f.usec
	if tz {
		switch {
		case f.tzLoc != nil:
			us = FromLocal(f.tzLoc, us)
		case f.hasTZ:
			us -= f.tzOff * usPerSec
		default:
			us = FromLocal(loc, us)
		}
	}
	if us < minTsUs || us > maxTsUs {
		return outOfRange()
	}
	return mk(us), nil
}

// parseTime parses PostgreSQL time input (a zone is accepted and ignored).
func parseTime(s string) (Datum, error) {
	f, e := parseDateTime(s, false)
	if e == dtOK && (f.special != 0 || !f.hasTime) {
		e = dtSyntax
	}
	if e != dtOK {
		return Datum{}, dtError(e, s, "time", &f)
	}
	return NewTime(f.usec), nil
}
