package types

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// A time zone is a *time.Location; nil means UTC. Timestamptz values are
// UTC microseconds whatever the zone: a zone only changes how they are
// printed, how text without an offset is read, and the calendar that
// casts to timestamp/date, date_trunc, extract, to_char and interval
// arithmetic use (PostgreSQL's session TimeZone).

// ParseZone reads a time zone as PostgreSQL's TimeZone setting and AT TIME
// ZONE take it: an IANA name (case-insensitive, e.g. 'Europe/Berlin'),
// 'UTC', or a POSIX-style fixed offset ('+05:30', 'UTC+3', '<-03>+3'),
// whose sign POSIX inverts: '+05:30' is 5:30 hours west of Greenwich. It
// returns the zone and its canonical name (what SHOW TimeZone prints).
// An unknown zone is 22023.
func ParseZone(s string) (*time.Location, string, bool) {
	if s == "" {
		return nil, "", false
	}
	if strings.EqualFold(s, "utc") || strings.EqualFold(s, "z") || strings.EqualFold(s, "zulu") {
		return time.UTC, "UTC", true
	}
	if abbr, off, ok := posixOffset(s); ok {
		return time.FixedZone(abbr, int(off)), s, true
	}
	if loc, name, ok := loadZoneFold(s); ok {
		return loc, name, true
	}
	return nil, "", false
}

// ParseAtZone reads the zone of AT TIME ZONE / timezone(text, …): a
// fixed-offset abbreviation ('EST', 'CEST') first, then what ParseZone
// reads. A leading digit is refused as PostgreSQL refuses it (22023).
func ParseAtZone(s string) (*time.Location, error) {
	if s != "" && isDigit(s[0]) {
		return nil, pgerror.New(pgcode.InvalidParameterValue, "invalid input syntax for type numeric time zone: \"%s\"", s).
			WithHint("Numeric time zones must have \"-\" or \"+\" as first character.")
	}
	if off, ok := zoneAbbrevOffset(s); ok && !strings.EqualFold(s, "utc") {
		return time.FixedZone(strings.ToUpper(s), int(off)), nil
	}
	loc, _, ok := ParseZone(s)
	if !ok {
		return nil, pgerror.New(pgcode.InvalidParameterValue, "time zone \"%s\" not recognized", s)
	}
	return loc, nil
}

// FixedZoneISO is the zone of SET TIME ZONE with a number or an interval:
// hours east of Greenwich as ISO 8601 counts them, named as PostgreSQL
// names it ("<-07>+07" for -7).
func FixedZoneISO(secsEast int64) (*time.Location, string) {
	abbr := appendOffset(nil, secsEast)
	posix := appendOffset(nil, -secsEast)
	name := "<" + string(abbr) + ">" + string(posix)
	return time.FixedZone(string(abbr), int(secsEast)), name
}

// posixOffset parses a POSIX zone without daylight rules: an optional
// abbreviation (3+ letters, or <…>) then [+-]hh[:mm[:ss]] (the sign is
// required without an abbreviation). It returns seconds east of
// Greenwich, POSIX's sign inverted, and the abbreviation (what to_char's
// TZ prints: empty without one, as in PostgreSQL).
func posixOffset(s string) (string, int64, bool) {
	i := 0
	abbr := ""
	switch {
	case s[0] == '<':
		j := strings.IndexByte(s, '>')
		if j < 2 {
			return "", 0, false
		}
		i = j + 1
		abbr = s[1:j]
	case isAlpha(s[0]):
		for i < len(s) && isAlpha(s[i]) {
			i++
		}
		if i < 3 {
			return "", 0, false
		}
		abbr = s[:i]
	}
	if i == len(s) {
		return "", 0, false
	}
	neg := false
	switch s[i] {
	case '+':
		i++
	case '-':
		neg = true
		i++
	default:
		if i == 0 {
			return "", 0, false
		}
	}
	parts := strings.Split(s[i:], ":")
	if len(parts) > 3 {
		return "", 0, false
	}
	var secs int64
	for k, p := range parts {
		if p == "" || len(p) > 2 && k > 0 || len(p) > 3 {
			return "", 0, false
		}
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || v < 0 || (k > 0 && v > 59) {
			return "", 0, false
		}
		secs = secs*60 + v
	}
	for k := len(parts); k < 3; k++ {
		secs *= 60
	}
	if secs > 24*3600 {
		return "", 0, false
	}
	if neg {
		return abbr, secs, true // POSIX: "-" is east
	}
	return abbr, -secs, true
}

// zoneNames maps lower-cased IANA names to their spelling, read once
// from the system's zoneinfo directory (empty when there is none: names
// are then matched exactly, from Go's embedded tzdata).
var zoneNames = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	root := "/usr/share/zoneinfo"
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, rerr := filepath.Rel(root, p)
		if rerr != nil || strings.HasPrefix(rel, "posix") || strings.HasPrefix(rel, "right") || strings.Contains(rel, ".") {
			return nil
		}
		if fi, serr := os.Stat(p); serr == nil && fi.Size() > 0 {
			m[strings.ToLower(rel)] = rel
		}
		return nil
	})
	return m
})

// loadZoneFold loads an IANA zone by name, ignoring case as PostgreSQL
// does, and returns its canonical spelling.
func loadZoneFold(s string) (*time.Location, string, bool) {
	if strings.HasPrefix(s, "/") || strings.Contains(s, "..") || strings.ContainsAny(s, "\x00\\") {
		return nil, "", false
	}
	if loc, ok := loadZone(s); ok {
		return loc, s, true
	}
	if name, ok := zoneNames()[strings.ToLower(s)]; ok {
		if loc, ok := loadZone(name); ok {
			return loc, name, true
		}
	}
	return nil, "", false
}

// ZoneOffset returns the offset east of UTC, in seconds, of zone loc at
// the instant us (UTC microseconds).
func ZoneOffset(loc *time.Location, us int64) int64 {
	if loc == nil || loc == time.UTC {
		return 0
	}
	_, off := time.Unix(floorDiv(us, usPerSec), 0).In(loc).Zone()
	return int64(off)
}

// ZoneAbbrev returns the abbreviation of zone loc at the instant us.
func ZoneAbbrev(loc *time.Location, us int64) string {
	if loc == nil || loc == time.UTC {
		return "UTC"
	}
	name, _ := time.Unix(floorDiv(us, usPerSec), 0).In(loc).Zone()
	return name
}

// ToLocal converts the instant us (a timestamptz) to the wall clock of
// loc (a timestamp). Infinities stay infinite.
func ToLocal(loc *time.Location, us int64) int64 {
	if us == InfinityI || us == NegInfinityI {
		return us
	}
	return us + ZoneOffset(loc, us)*usPerSec
}

// FromLocal converts the wall-clock time local in zone loc (a timestamp)
// to an instant, as PostgreSQL does: a time that occurs twice (a
// backward transition) takes the offset in force after it, a time that
// does not occur (a forward transition) the offset in force before it.
func FromLocal(loc *time.Location, local int64) int64 {
	if local == InfinityI || local == NegInfinityI {
		return local
	}
	return local - LocalOffset(loc, local)*usPerSec
}

// LocalOffset returns the offset (seconds east) FromLocal applies to the
// wall-clock time local in zone loc.
func LocalOffset(loc *time.Location, local int64) int64 {
	if loc == nil || loc == time.UTC {
		return 0
	}
	// The offsets in force a day before and after bracket any transition
	// near local (zones do not change twice within two days).
	before := ZoneOffset(loc, local-usPerDay)
	after := ZoneOffset(loc, local+usPerDay)
	best, found := int64(0), false
	for _, o := range [2]int64{before, after} {
		if ZoneOffset(loc, local-o*usPerSec) == o {
			// Valid: of two, the later instant (the offset after a
			// backward transition).
			if !found || local-o*usPerSec > local-best*usPerSec {
				best, found = o, true
			}
		}
	}
	if found {
		return best
	}
	// In a gap: the offset before the transition.
	return before
}

// appendOffset appends a UTC offset as PostgreSQL prints it: +hh, and
// :mm and :ss when not zero.
func appendOffset(b []byte, secs int64) []byte {
	if secs < 0 {
		b = append(b, '-')
		secs = -secs
	} else {
		b = append(b, '+')
	}
	b = appendPad(b, secs/3600, 2)
	if m, s := secs/60%60, secs%60; m != 0 || s != 0 {
		b = append(b, ':')
		b = appendPad(b, m, 2)
		if s != 0 {
			b = append(b, ':')
			b = appendPad(b, s, 2)
		}
	}
	return b
}

// AppendTimestampTZ appends the timestamptz us as PostgreSQL prints it in
// zone loc ("2026-03-29 03:30:00+02").
func AppendTimestampTZ(b []byte, us int64, loc *time.Location) []byte {
	if loc == nil || loc == time.UTC || us == InfinityI || us == NegInfinityI {
		return appendTimestamp(b, us, true)
	}
	off := ZoneOffset(loc, us)
	local := us + off*usPerSec
	days := floorDiv(local, usPerDay)
	b, bc := appendYMD(b, days)
	b = append(b, ' ')
	b = appendClock(b, floorMod(local, usPerDay))
	b = appendOffset(b, off)
	if bc {
		b = append(b, " BC"...)
	}
	return b
}

// AppendTextIn is AppendText with timestamptz values printed in zone loc.
func AppendTextIn(b []byte, d Datum, t T, loc *time.Location) []byte {
	if d.K == KTimestampTZ {
		return AppendTimestampTZ(b, d.I, loc)
	}
	if d.K == KArray && t.Fam == TimestampTZArray && loc != nil && loc != time.UTC {
		return appendArrayText(b, tstzLeavesIn(d.Elems(), loc), TUnknown)
	}
	return AppendText(b, d, t)
}

// FormatTextIn is FormatText with timestamptz values printed in zone loc.
func FormatTextIn(d Datum, t T, loc *time.Location) string {
	var buf [64]byte
	return string(AppendTextIn(buf[:0], d, t, loc))
}

// ParseTextIn is ParseText with timestamptz input that names no zone read
// in zone loc.
func ParseTextIn(s string, t T, loc *time.Location) (Datum, error) {
	if t.Fam == TimestampTZ && loc != nil && loc != time.UTC {
		return parseTimestampIn(s, loc)
	}
	if t.Fam == TimestampTZArray && loc != nil && loc != time.UTC {
		return parseTstzArrayIn(s, loc)
	}
	return ParseText(s, t)
}
