package decode

import "sluice/sql/types"

// fastTimestamp parses the common form YYYY-MM-DD[ T]HH:MM:SS[.ffffff]
// with an optional zone, Z or ±HH[[:]MM] (RFC 3339 and ISO 8601 as JSON
// producers write them), without the general PostgreSQL date/time parser.
// As in PostgreSQL, a TIMESTAMP ignores the zone and a TIMESTAMPTZ without
// one is in UTC (sessions run in UTC). It returns ok=false for anything
// else, which then takes the general path, so results are always those of
// types.ParseText.
func fastTimestamp(s []byte, tz bool) (types.Datum, bool) {
	s, offset, ok := cutZone(s) // offset: seconds east of UTC
	if !ok {
		return types.Null, false
	}
	if len(s) < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' || s[16] != ':' {
		return types.Null, false
	}
	year, ok1 := digits(s[0:4])
	month, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	hour, ok4 := digits(s[11:13])
	minute, ok5 := digits(s[14:16])
	sec, ok6 := digits(s[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || year == 0 || month < 1 || month > 12 || day < 1 ||
		day > daysIn(year, month) || hour > 23 || minute > 59 || sec > 59 {
		return types.Null, false
	}
	var frac int64
	if rest := s[19:]; len(rest) > 0 {
		if rest[0] != '.' || len(rest) < 2 || len(rest) > 7 {
			return types.Null, false
		}
		f, ok := digits(rest[1:])
		if !ok {
			return types.Null, false
		}
		for n := len(rest) - 1; n < 6; n++ {
			f *= 10
		}
		frac = f
	}
	days := daysFromCivil(year, month, day)
	us := days*86400000000 + ((hour*60+minute)*60+sec)*1000000 + frac
	if tz {
		return types.NewTimestampTZ(us - offset*1000000), true
	}
	return types.NewTimestamp(us), true
}

// cutZone splits a trailing zone off s: Z, or ±HH, ±HHMM, ±HH:MM after
// the seconds (position 19 on). ok is false for a zone it does not know
// (names, abbreviations, seconds in the offset, offsets past ±14:59).
func cutZone(s []byte) (rest []byte, offset int64, ok bool) {
	if len(s) <= 19 {
		return s, 0, true
	}
	if s[len(s)-1] == 'Z' {
		return s[:len(s)-1], 0, true
	}
	i := len(s) - 1
	for i >= 19 && (s[i] >= '0' && s[i] <= '9' || s[i] == ':') {
		i--
	}
	if i < 19 || (s[i] != '+' && s[i] != '-') {
		// No zone: the tail is the fraction (checked by the caller).
		return s, 0, i < 19 || s[i] == '.'
	}
	z := s[i+1:]
	var hh, mm int64
	var okH, okM bool
	switch {
	case len(z) == 2:
		hh, okH = digits(z)
		okM = true
	case len(z) == 4:
		hh, okH = digits(z[:2])
		mm, okM = digits(z[2:])
	case len(z) == 5 && z[2] == ':':
		hh, okH = digits(z[:2])
		mm, okM = digits(z[3:])
	}
	if !okH || !okM || hh > 14 || mm > 59 {
		return s, 0, false
	}
	offset = (hh*60 + mm) * 60
	if s[i] == '-' {
		offset = -offset
	}
	return s[:i], offset, true
}

// digits parses a run of ASCII digits.
func digits(b []byte) (int64, bool) {
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, len(b) > 0
}

func daysIn(year, month int64) int64 {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the days since 1970-01-01 of a proleptic
// Gregorian date (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}
